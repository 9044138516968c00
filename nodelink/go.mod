module machineapi.dev/nodelink

go 1.26.0
