package process

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options configure a manager process. Start from DefaultOptions.
type Options struct {
	// MetricsBindAddress serves /metrics ("0" turns it off).
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz ("0" turns them off).
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's pprof handlers when set (off by default).
	PprofBindAddress string
	// LeaderElection makes only one replica act at a time.
	LeaderElection bool
	// LeaderElectionID names the Lease used for leader election.
	LeaderElectionID string
	// LeaderElectionNamespace holds that Lease (default: the pod's namespace, or default).
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// QPS and Burst bound the client's request rate to the API server.
	QPS   float32
	Burst int
	// MemoryLimit, when set (for example "400Mi"), is the Go runtime's soft memory limit
	// (GOMEMLIMIT): the garbage collector works harder as the heap nears it, which bounds the
	// process's peak memory well below the default heap goal of twice the live heap. Set it to
	// about 80% of the container's memory limit.
	MemoryLimit string
	// GracefulShutdownTimeout bounds how long the manager waits for controllers on shutdown.
	GracefulShutdownTimeout time.Duration
	// SkipControllerNameValidation allows several managers in one process (tests only).
	SkipControllerNameValidation bool
}

// DefaultOptions returns the defaults every manager shares: client-go's leader election timings
// and a 30 s graceful shutdown. A manager sets its own endpoints, Lease name and client rate.
func DefaultOptions() Options {
	return Options{
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		GracefulShutdownTimeout: 30 * time.Second,
	}
}

// AddFlags binds the options to flags on fs, with the current values as defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "address of the Prometheus /metrics endpoint (0 turns it off)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "address of the /healthz and /readyz endpoints")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "address of Go's pprof handlers (empty: off)")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "elect a leader so that only one replica acts at a time")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "name of the leader election Lease")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "namespace of the leader election Lease (default: the pod's own, or default)")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "how long a leader's Lease is valid without renewal")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "how often candidates try to acquire or renew the Lease")
	fs.Func("kube-api-qps", fmt.Sprintf("requests per second to the API server (default %v; the API server's priority and fairness protects it)", o.QPS), PositiveFloat(&o.QPS))
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of requests to the API server")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit, "the Go runtime's soft memory limit, e.g. 400Mi (about 80% of the container's limit); empty: GOMEMLIMIT or none")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "how long to wait for controllers to stop on shutdown")
}

// PositiveFloat parses a flag's value into into, refusing anything but a positive number.
func PositiveFloat(into *float32) func(string) error {
	return func(s string) error {
		f, err := strconv.ParseFloat(s, 32)
		if err != nil || f <= 0 {
			return fmt.Errorf("want a positive number, got %q", s)
		}
		*into = float32(f)
		return nil
	}
}

// RESTConfig returns a copy of cfg with the options' client rate limits.
func (o Options) RESTConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	return cfg
}

// NewManager builds a controller-runtime manager for cfg (see RESTConfig) from mo, the caller's
// scheme, cache and client options, with the options' endpoints, leader election and graceful
// shutdown, and adds its /healthz (the process answers) and /readyz (its caches have synced)
// checks. Leaving leadership ends the process quickly, so that a new leader takes over at once.
func (o Options) NewManager(cfg *rest.Config, mo ctrl.Options) (ctrl.Manager, error) {
	mo.Metrics = metricsserver.Options{BindAddress: o.MetricsBindAddress}
	mo.HealthProbeBindAddress = o.HealthProbeBindAddress
	mo.PprofBindAddress = o.PprofBindAddress
	mo.LeaderElection = o.LeaderElection
	mo.LeaderElectionID = o.LeaderElectionID
	mo.LeaderElectionNamespace = o.LeaderElectionNamespace
	mo.LeaseDuration, mo.RenewDeadline, mo.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
	mo.LeaderElectionReleaseOnCancel = true
	mo.GracefulShutdownTimeout = ptr.To(o.GracefulShutdownTimeout)
	mo.Controller = config.Controller{SkipNameValidation: ptr.To(o.SkipControllerNameValidation)}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error { return readyCheck(mgr, req) }); err != nil {
		return nil, err
	}
	return mgr, nil
}

// readyCheck reports ready once the manager's caches have synced.
func readyCheck(mgr ctrl.Manager, req *http.Request) error {
	ctx, cancel := context.WithTimeout(req.Context(), time.Second)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("caches have not synced yet")
	}
	return nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit from a quantity such as "400Mi".
func applyMemoryLimit(limit string) error {
	if limit == "" {
		return nil
	}
	q, err := resource.ParseQuantity(limit)
	if err != nil || q.Value() <= 0 {
		return fmt.Errorf("--memory-limit %q is not a positive quantity such as 400Mi", limit)
	}
	debug.SetMemoryLimit(q.Value())
	return nil
}
