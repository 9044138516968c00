package manager

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"k8s.io/utils/clock"
)

// Options configure the manager. Start from DefaultOptions.
type Options struct {
	// MetricsBindAddress serves /metrics ("0" turns it off).
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz ("0" turns them off).
	HealthProbeBindAddress string
	// LeaderElection makes only one replica act at a time.
	LeaderElection bool
	// LeaderElectionID names the Lease used for leader election.
	LeaderElectionID string
	// LeaderElectionNamespace holds that Lease (default: the pod's namespace, or default).
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Namespace, when set, limits the controller to Clusters (and their members) in that namespace.
	Namespace string
	// QPS and Burst bound the client's request rate to the management API server.
	QPS   float32
	Burst int
	// WorkloadQPS and WorkloadBurst bound each remote node linker's rate to its workload API server.
	WorkloadQPS   float32
	WorkloadBurst int
	// ClusterConcurrency is the number of Clusters reconciled in parallel.
	ClusterConcurrency int
	// LinkConcurrency is the number of Machines each remote node linker links in parallel.
	LinkConcurrency int
	// KubeconfigPollInterval is how often a Cluster's kubeconfig Secret is read again.
	KubeconfigPollInterval time.Duration
	// WorkloadProbeInterval is how often each workload API server is probed for reachability.
	WorkloadProbeInterval time.Duration
	// LinkerRestartDelay is the least time before a remote node linker that exited is restarted.
	LinkerRestartDelay time.Duration
	// LinkerCacheSyncTimeout bounds how long a remote linker waits for its Node cache.
	LinkerCacheSyncTimeout time.Duration
	// GracefulShutdownTimeout bounds how long the manager waits for controllers on shutdown.
	GracefulShutdownTimeout time.Duration
	// Clock is the time source of the controller and the linkers (tests pass a fake clock).
	Clock clock.Clock
	// SkipControllerNameValidation allows several managers in one process (tests only).
	SkipControllerNameValidation bool
}

// DefaultOptions returns the options the flags default to.
func DefaultOptions() Options {
	return Options{
		MetricsBindAddress:      ":8082",
		HealthProbeBindAddress:  ":8083",
		LeaderElectionID:        "cluster-manager.cluster.machineapi.dev",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		QPS:                     50,
		Burst:                   100,
		WorkloadQPS:             20,
		WorkloadBurst:           40,
		ClusterConcurrency:      10,
		LinkConcurrency:         10,
		KubeconfigPollInterval:  time.Minute,
		WorkloadProbeInterval:   10 * time.Second,
		LinkerRestartDelay:      10 * time.Second,
		LinkerCacheSyncTimeout:  2 * time.Minute,
		GracefulShutdownTimeout: 30 * time.Second,
	}
}

// AddFlags binds the options to flags on fs, with the current values as defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "address of the Prometheus /metrics endpoint (0 turns it off)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "address of the /healthz and /readyz endpoints")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "elect a leader so that only one replica acts at a time")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "name of the leader election Lease")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "namespace of the leader election Lease (default: the pod's own, or default)")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "how long a leader's Lease is valid without renewal")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "how often candidates try to acquire or renew the Lease")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "only manage Clusters in this namespace (empty: all namespaces)")
	fs.Func("kube-api-qps", fmt.Sprintf("requests per second to the management API server (default %v)", o.QPS), positiveFloat(&o.QPS))
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of requests to the management API server")
	fs.Func("workload-api-qps", fmt.Sprintf("requests per second from each remote node linker to its workload API server (default %v)", o.WorkloadQPS), positiveFloat(&o.WorkloadQPS))
	fs.IntVar(&o.WorkloadBurst, "workload-api-burst", o.WorkloadBurst, "burst of requests from each remote node linker to its workload API server")
	fs.IntVar(&o.ClusterConcurrency, "cluster-concurrency", o.ClusterConcurrency, "Clusters reconciled in parallel")
	fs.IntVar(&o.LinkConcurrency, "link-concurrency", o.LinkConcurrency, "Machines each remote node linker links in parallel")
	fs.DurationVar(&o.KubeconfigPollInterval, "kubeconfig-poll-interval", o.KubeconfigPollInterval, "how often a Cluster's kubeconfig Secret is read again to pick up a new kubeconfig")
	fs.DurationVar(&o.WorkloadProbeInterval, "workload-probe-interval", o.WorkloadProbeInterval, "how often each workload API server is probed for reachability")
	fs.DurationVar(&o.LinkerRestartDelay, "linker-restart-delay", o.LinkerRestartDelay, "least time before a remote node linker that stopped on its own is restarted")
	fs.DurationVar(&o.LinkerCacheSyncTimeout, "linker-cache-sync-timeout", o.LinkerCacheSyncTimeout, "how long a remote node linker waits for the workload cluster's Nodes to be listed")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "how long to wait for controllers to stop on shutdown")
}

func positiveFloat(into *float32) func(string) error {
	return func(s string) error {
		f, err := strconv.ParseFloat(s, 32)
		if err != nil || f <= 0 {
			return fmt.Errorf("want a positive number, got %q", s)
		}
		*into = float32(f)
		return nil
	}
}
