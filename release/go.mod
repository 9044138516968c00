module machineapi.dev/release

go 1.26.0
