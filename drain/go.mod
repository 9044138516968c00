module machineapi.dev/drain

go 1.26.0
