module machineapi.dev/machine-api

go 1.26.0
