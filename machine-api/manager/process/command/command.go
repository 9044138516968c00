package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Build identifies a binary; the release build sets its parts at link time (docs/releasing.md).
type Build struct {
	Version, Commit, Date string
}

// Main is the main function of a manager binary named name, once it has bound its own flags to
// flag.CommandLine: it adds the logging flags, parses the command line, sets up logging, logs
// the build, and calls run with a context cancelled on SIGTERM or SIGINT. When run fails it prints
// the error and exits with 1, or with 2 when the error is a UsageError.
func Main(name string, b Build, run func(context.Context) error) {
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	ctrl.Log.WithName(name).Info("version", "version", b.Version, "commit", b.Commit, "built", b.Date)
	if err := run(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		if errors.As(err, &usageError{}) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// UsageError marks err as the command line's fault (flag values no component accepts): Main
// exits with 2 for it, as for a flag it cannot parse.
func UsageError(err error) error { return usageError{err} }

type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }
