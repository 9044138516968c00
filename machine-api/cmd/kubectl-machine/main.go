// Command kubectl-machine is a kubectl plugin for machine.machineapi.dev objects; put it on your
// PATH and run `kubectl machine why <machine>`. See package plugin for its commands.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"machineapi.dev/machine-api/internal/plugin"
)

func main() {
	cmd := plugin.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
