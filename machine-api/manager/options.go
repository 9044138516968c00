package manager

import (
	"flag"

	"k8s.io/utils/clock"

	"machineapi.dev/machine-api/internal/orphans"
	"machineapi.dev/machine-api/manager/process"
)

// Options configure the manager. Start from DefaultOptions.
type Options struct {
	// Options are the process's: endpoints, leader election, client rate, memory limit and
	// graceful shutdown.
	process.Options
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
	// Orphans configure the orphan collector, which runs when the provider implements
	// provider.Lister.
	Orphans OrphanOptions
	// Clock is the time source of every controller (tests pass a fake clock).
	Clock clock.WithTicker
}

// OrphanOptions configure the orphan collector: see package orphans (policy delete or report,
// interval, grace period, the bounds of one pass).
type OrphanOptions = orphans.Options

// DefaultOptions returns the options the flags default to.
func DefaultOptions() Options {
	p := process.DefaultOptions()
	p.MetricsBindAddress, p.HealthProbeBindAddress = ":8080", ":8081"
	p.LeaderElectionID = "machine-manager.machine.machineapi.dev"
	p.QPS, p.Burst = 1000, 2000
	return Options{
		Options:                 p,
		MachineConcurrency:      50,
		SetConcurrency:          10,
		DrainGracePeriodSeconds: -1,
		DrainDeleteEmptyDirData: true,
		Orphans:                 orphans.DefaultOptions(),
	}
}

// AddFlags binds the options to flags on fs, with the current values as defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	o.Options.AddFlags(fs)
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "only manage objects in this namespace (empty: all namespaces)")
	fs.StringVar(&o.MachineSelector, "machine-selector", o.MachineSelector, "only manage Machines, MachineSets and MachineDeployments whose labels match this selector")
	fs.StringVar(&o.NodeLinkSelector, "node-link-selector", o.NodeLinkSelector, "only link the Machines matching this label selector to Nodes of this cluster (e.g. '!cluster.machineapi.dev/remote-nodes')")
	fs.IntVar(&o.MachineConcurrency, "machine-concurrency", o.MachineConcurrency, "Machines reconciled (and linked) in parallel")
	fs.IntVar(&o.SetConcurrency, "set-concurrency", o.SetConcurrency, "MachineSets, MachineDeployments and MachineHealthChecks reconciled in parallel")
	fs.Int64Var(&o.DrainGracePeriodSeconds, "drain-grace-period-seconds", o.DrainGracePeriodSeconds, "termination grace period for evicted pods (-1: each pod's own)")
	fs.StringVar(&o.Orphans.Policy, "orphan-policy", o.Orphans.Policy, "what to do with an instance whose Machine is gone: delete (once it has been an orphan, and existed, for --orphan-grace-period) or report")
	fs.DurationVar(&o.Orphans.Grace, "orphan-grace-period", o.Orphans.Grace, "how long an instance must have been without its Machine, and have existed, before it is deleted")
	fs.DurationVar(&o.Orphans.Interval, "orphan-interval", o.Orphans.Interval, "time between two passes of the orphan collector")
	fs.IntVar(&o.Orphans.MaxPerPass, "orphan-max-per-pass", o.Orphans.MaxPerPass, "most orphan instances one pass deletes")
	fs.Float64Var(&o.Orphans.MaxFraction, "orphan-max-fraction", o.Orphans.MaxFraction, "most orphan instances one pass deletes, as a fraction of the instances listed (at least one)")
	fs.BoolVar(&o.DrainDeleteEmptyDirData, "drain-delete-emptydir-data", o.DrainDeleteEmptyDirData, "evict pods that use emptyDir volumes (their data is lost)")
}
