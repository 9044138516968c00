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

// Manager is Main for a binary that runs a manager around a provider, both configured on the
// command line (machine-manager and cluster-manager): it binds the flags of the manager's options
// opts and of the provider's options providerOpts, each holding its defaults, to flag.CommandLine;
// once Main has parsed them, it builds the provider with newProvider (an error there is the
// command line's: exit 2) and runs the manager around it with run until a signal. newProvider
// returns the interface run takes (provider.Provider of the manager's module).
func Manager[O, PO, P any, OF flagged[O], POF flagged[PO]](name string, b Build, opts O, providerOpts PO,
	newProvider func(PO) (P, error), run func(context.Context, P, O) error) {
	Main(name, b, bindManager[O, PO, P, OF, POF](flag.CommandLine, &opts, &providerOpts, newProvider, run))
}

// flagged is a pointer to options that bind themselves to flags, as every options type of this
// repository does (AddFlags, with the current values as defaults).
type flagged[T any] interface {
	*T
	AddFlags(fs *flag.FlagSet)
}

// bindManager binds the flags of opts and providerOpts to fs and returns what runs the manager
// once fs is parsed (see Manager).
func bindManager[O, PO, P any, OF flagged[O], POF flagged[PO]](fs *flag.FlagSet, opts *O, providerOpts *PO,
	newProvider func(PO) (P, error), run func(context.Context, P, O) error) func(context.Context) error {
	OF(opts).AddFlags(fs)
	POF(providerOpts).AddFlags(fs)
	return func(ctx context.Context) error {
		p, err := newProvider(*providerOpts)
		if err != nil {
			return UsageError(err)
		}
		return run(ctx, p, *opts)
	}
}

// UsageError marks err as the command line's fault (flag values no component accepts): Main
// exits with 2 for it, as for a flag it cannot parse.
func UsageError(err error) error { return usageError{err} }

type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }
