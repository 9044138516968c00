// Command cluster-manager runs the Cluster controller with the simulated cluster provider: the
// manager a cluster provider's own main.go would build, for local runs, tests and benchmarks. Run
// it next to machine-manager, which makes the Machines of the Clusters' worker pools.
package main

import (
	"machineapi.dev/machine-api/manager/process/command"

	"machineapi.dev/cluster-api/manager"
	"machineapi.dev/cluster-api/provider"
	"machineapi.dev/cluster-api/provider/sim"
)

// Set at link time by the release build (docs/releasing.md).
var version, commit, date = "dev", "none", "unknown"

func main() {
	command.Manager("cluster-manager", command.Build{Version: version, Commit: commit, Date: date},
		manager.DefaultOptions(), sim.Options{}, newProvider, manager.Run)
}

// newProvider is sim.New, returning the interface manager.Run takes.
func newProvider(o sim.Options) (provider.Provider, error) { return sim.New(o) }
