// Command machine-manager runs the machine-api controllers with the simulated provider: the
// manager a provider's own main.go would build, for local runs, tests and benchmarks.
package main

import (
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/manager/process/command"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/provider/sim"
)

// Set at link time by the release build (docs/releasing.md).
var version, commit, date = "dev", "none", "unknown"

func main() {
	command.Manager("machine-manager", command.Build{Version: version, Commit: commit, Date: date},
		manager.DefaultOptions(), sim.Options{}, newProvider, manager.Run)
}

// newProvider is sim.New, returning the interface manager.Run takes.
func newProvider(o sim.Options) (provider.Provider, error) { return sim.New(o) }
