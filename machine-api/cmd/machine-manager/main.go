// Command machine-manager runs the machine-api controllers with the simulated provider: the
// manager a provider's own main.go would build, for local runs, tests and benchmarks.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"machineapi.dev/machine-api/manager"
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
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	ctrl.Log.WithName("machine-manager").Info("version", "version", version, "commit", commit, "built", date)

	p, err := sim.New(simOpts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "machine-manager:", err)
		os.Exit(2)
	}
	if err := manager.Run(ctrl.SetupSignalHandler(), p, opts); err != nil {
		fmt.Fprintln(os.Stderr, "machine-manager:", err)
		os.Exit(1)
	}
}
