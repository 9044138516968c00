package manager

import (
	"flag"
	"time"

	"k8s.io/utils/clock"
)

// Options configure the manager. Start from DefaultOptions.
type Options struct {
	// MetricsBindAddress serves /metrics ("0" turns it off).
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz.
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
	// Namespace, when set, limits the controllers to objects in that namespace.
	Namespace string
	// MachineSelector, when set, limits the controllers to Machines (and sets, deployments) whose
	// labels match this label selector.
	MachineSelector string
	// NodeLinkSelector, when set, limits the in-process node linker to the Machines whose labels
	// match, on top of MachineSelector. Machines whose Nodes live in another cluster are linked by
	// another linker (cluster-manager links the Machines of Clusters with their own kubeconfig, which
	// carry cluster.machineapi.dev/remote-nodes=true): exclude them here so that two linkers never
	// claim one Machine.
	NodeLinkSelector string
	// QPS and Burst bound the client's request rate to the API server.
	QPS   float32
	Burst int
	// MachineConcurrency is the number of Machines reconciled in parallel; the node linker uses
	// the same.
	MachineConcurrency int
	// SetConcurrency is the number of MachineSets, MachineDeployments and MachineHealthChecks
	// reconciled in parallel.
	SetConcurrency int
	// DrainGracePeriodSeconds overrides pods' termination grace period when draining (-1: the pods' own).
	DrainGracePeriodSeconds int64
	// DrainDeleteEmptyDirData lets a drain evict pods using emptyDir volumes.
	DrainDeleteEmptyDirData bool
	// MemoryLimit, when set (for example "400Mi"), is the Go runtime's soft memory limit
	// (GOMEMLIMIT): the garbage collector works harder as the heap nears it, which bounds the
	// process's peak memory well below the default heap goal of twice the live heap. Set it to
	// about 80% of the container's memory limit.
	MemoryLimit string
	// GracefulShutdownTimeout bounds how long the manager waits for controllers on shutdown.
	GracefulShutdownTimeout time.Duration
	// Clock is the time source of every controller (tests pass a fake clock).
	Clock clock.WithTicker
	// SkipControllerNameValidation allows several managers in one process (tests only).
	SkipControllerNameValidation bool
}

// DefaultOptions returns the options the flags default to.
func DefaultOptions() Options {
	return Options{
		MetricsBindAddress:      ":8080",
		HealthProbeBindAddress:  ":8081",
		LeaderElectionID:        "machine-manager.machine.machineapi.dev",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		QPS:                     1000,
		Burst:                   2000,
		MachineConcurrency:      50,
		SetConcurrency:          10,
		DrainGracePeriodSeconds: -1,
		DrainDeleteEmptyDirData: true,
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
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "only manage objects in this namespace (empty: all namespaces)")
	fs.StringVar(&o.MachineSelector, "machine-selector", o.MachineSelector, "only manage Machines, MachineSets and MachineDeployments whose labels match this selector")
	fs.StringVar(&o.NodeLinkSelector, "node-link-selector", o.NodeLinkSelector, "only link the Machines matching this label selector to Nodes of this cluster (e.g. '!cluster.machineapi.dev/remote-nodes')")
	fs.Func("kube-api-qps", "requests per second to the API server (default 1000; the API server's priority and fairness protects it)", func(s string) error { return parseFloat32(s, &o.QPS) })
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of requests to the API server")
	fs.IntVar(&o.MachineConcurrency, "machine-concurrency", o.MachineConcurrency, "Machines reconciled (and linked) in parallel")
	fs.IntVar(&o.SetConcurrency, "set-concurrency", o.SetConcurrency, "MachineSets, MachineDeployments and MachineHealthChecks reconciled in parallel")
	fs.Int64Var(&o.DrainGracePeriodSeconds, "drain-grace-period-seconds", o.DrainGracePeriodSeconds, "termination grace period for evicted pods (-1: each pod's own)")
	fs.BoolVar(&o.DrainDeleteEmptyDirData, "drain-delete-emptydir-data", o.DrainDeleteEmptyDirData, "evict pods that use emptyDir volumes (their data is lost)")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit, "the Go runtime's soft memory limit, e.g. 400Mi (about 80% of the container's limit); empty: GOMEMLIMIT or none")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "how long to wait for controllers to stop on shutdown")
}
