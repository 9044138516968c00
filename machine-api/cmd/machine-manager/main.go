// Command machine-manager runs the machine-api controllers with the simulated provider: the
// manager a provider's own main.go would build, for local runs, tests and benchmarks.
package main

import (
	"context"
	"flag"

	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/manager/process/command"
	"machineapi.dev/machine-api/provider/sim"
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
	command.Main("machine-manager", command.Build{Version: version, Commit: commit, Date: date}, func(ctx context.Context) error {
		p, err := sim.New(simOpts)
		if err != nil {
			return command.UsageError(err)
		}
		return manager.Run(ctx, p, opts)
	})
}
