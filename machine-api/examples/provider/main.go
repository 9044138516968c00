// Command provider is the whole main.go of a machine provider: flags, the provider, the manager.
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"machineapi.dev/machine-api/manager"
)

func main() {
	opts := manager.DefaultOptions()
	opts.AddFlags(flag.CommandLine)
	flag.Parse()
	if err := manager.Run(ctrl.SetupSignalHandler(), newProvider(), opts); err != nil {
		os.Exit(1)
	}
}
