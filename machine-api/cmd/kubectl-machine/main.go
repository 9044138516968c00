// Command kubectl-machine is a kubectl plugin for machine.machineapi.dev objects; put it on your
// PATH and run `kubectl machine why <machine>`. See package plugin for its commands.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"machineapi.dev/machine-api/internal/plugin"
)

// Set at link time by the release build (docs/releasing.md).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	cmd := plugin.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.Version = fmt.Sprintf("%s (commit %s, built %s)", version, commit, date)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
