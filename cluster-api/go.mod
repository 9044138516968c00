module machineapi.dev/cluster-api

go 1.26.0
