package manager

import (
	"flag"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"machineapi.dev/machine-api/manager/process"
)

// Options configure the manager. Start from DefaultOptions.
type Options struct {
	// Options are the process's: endpoints, leader election, the client rate to the management
	// API server, memory limit and graceful shutdown.
	process.Options
	// Namespace, when set, limits the controller to Clusters (and their members) in that namespace.
	Namespace string
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
	// Clock is the time source of the controller and the linkers (tests pass a fake clock).
	Clock clock.Clock
}

// DefaultOptions returns the options the flags default to.
func DefaultOptions() Options {
	p := process.DefaultOptions()
	p.MetricsBindAddress, p.HealthProbeBindAddress = ":8082", ":8083"
	p.LeaderElectionID = "cluster-manager.cluster.machineapi.dev"
	p.QPS, p.Burst = 50, 100
	return Options{
		Options:                p,
		WorkloadQPS:            20,
		WorkloadBurst:          40,
		ClusterConcurrency:     10,
		LinkConcurrency:        10,
		KubeconfigPollInterval: time.Minute,
		WorkloadProbeInterval:  10 * time.Second,
		LinkerRestartDelay:     10 * time.Second,
		LinkerCacheSyncTimeout: 2 * time.Minute,
	}
}

// AddFlags binds the options to flags on fs, with the current values as defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	o.Options.AddFlags(fs)
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "only manage Clusters in this namespace (empty: all namespaces)")
	fs.Func("workload-api-qps", fmt.Sprintf("requests per second from each remote node linker to its workload API server (default %v)", o.WorkloadQPS), process.PositiveFloat(&o.WorkloadQPS))
	fs.IntVar(&o.WorkloadBurst, "workload-api-burst", o.WorkloadBurst, "burst of requests from each remote node linker to its workload API server")
	fs.IntVar(&o.ClusterConcurrency, "cluster-concurrency", o.ClusterConcurrency, "Clusters reconciled in parallel")
	fs.IntVar(&o.LinkConcurrency, "link-concurrency", o.LinkConcurrency, "Machines each remote node linker links in parallel")
	fs.DurationVar(&o.KubeconfigPollInterval, "kubeconfig-poll-interval", o.KubeconfigPollInterval, "how often a Cluster's kubeconfig Secret is read again to pick up a new kubeconfig")
	fs.DurationVar(&o.WorkloadProbeInterval, "workload-probe-interval", o.WorkloadProbeInterval, "how often each workload API server is probed for reachability")
	fs.DurationVar(&o.LinkerRestartDelay, "linker-restart-delay", o.LinkerRestartDelay, "least time before a remote node linker that stopped on its own is restarted")
	fs.DurationVar(&o.LinkerCacheSyncTimeout, "linker-cache-sync-timeout", o.LinkerCacheSyncTimeout, "how long a remote node linker waits for the workload cluster's Nodes to be listed")
}
