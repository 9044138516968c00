package process

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Run starts the manager newManager builds from the client configuration of --kubeconfig (or the
// in-cluster one), with the options' memory limit, and blocks until ctx is cancelled. name and
// keysAndValues are logged when it starts.
func (o Options) Run(ctx context.Context, name string, newManager func(context.Context, *rest.Config) (ctrl.Manager, error), keysAndValues ...any) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the API server configuration (pass --kubeconfig or run in a cluster): %w", err)
	}
	if err := applyMemoryLimit(o.MemoryLimit); err != nil {
		return err
	}
	mgr, err := newManager(ctx, cfg)
	if err != nil {
		return err
	}
	kv := append([]any{"leaderElection", o.LeaderElection, "qps", o.QPS, "burst", o.Burst}, keysAndValues...)
	ctrl.Log.WithName(name).Info("starting", kv...)
	return mgr.Start(ctx)
}
