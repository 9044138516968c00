// Command cluster-manager runs the Cluster controller with the simulated cluster provider: the
// manager a cluster provider's own main.go would build, for local runs, tests and benchmarks. Run
// it next to machine-manager, which makes the Machines of the Clusters' worker pools.
package main

import (
	"context"
	"flag"

	"machineapi.dev/machine-api/manager/process/command"

	"machineapi.dev/cluster-api/manager"
	"machineapi.dev/cluster-api/provider/sim"
)

// Set at link time by the release build (docs/releasing.md).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	opts := manager.DefaultOptions()
	opts.AddFlags(flag.CommandLine)
	var simOpts sim.Options
	simOpts.AddFlags(flag.CommandLine)
	command.Main("cluster-manager", command.Build{Version: version, Commit: commit, Date: date}, func(ctx context.Context) error {
		p, err := sim.New(simOpts)
		if err != nil {
			return command.UsageError(err)
		}
		return manager.Run(ctx, p, opts)
	})
}
