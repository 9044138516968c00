package remotelink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"machineapi.dev/nodelink"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinelink"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// The remote linkers' permissions on the management cluster (nodelink has no markers: it is a
// library). Nodes are read and patched in the workload cluster with the kubeconfig's credentials.
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Defaults of Options.
const (
	// DefaultRestartDelay is the least time between a linker exiting on its own and its restart.
	DefaultRestartDelay = 10 * time.Second
)

// ErrNotStarted is returned by Ensure before the manager has started the registry (it starts
// with the leader-elected controllers; the caller retries).
var ErrNotStarted = errors.New("the remote node linkers have not started yet")

// Options configure the linkers a Registry runs.
type Options struct {
	// ProbeInterval is how often each workload API server is probed; default
	// nodelink.DefaultProbeInterval.
	ProbeInterval time.Duration
	// CacheSyncTimeout bounds how long a linker waits for its caches before it exits with an
	// error; default controller-runtime's (2 minutes).
	CacheSyncTimeout time.Duration
	// RestartDelay is the least time between a linker exiting on its own and Ensure starting it
	// again; default DefaultRestartDelay.
	RestartDelay time.Duration
	// MaxConcurrentReconciles is the number of Machines each linker links in parallel.
	MaxConcurrentReconciles int
	// Clock gives condition times and paces the probes; default the real clock.
	Clock clock.Clock
}

// Status is what the registry knows of one Cluster's linker.
type Status struct {
	// Running is true while the linker runs.
	Running bool
	// Fingerprint identifies the kubeconfig the linker was started with.
	Fingerprint string
	// Host is the workload API server the linker reaches.
	Host string
	// Reachability is the linker's last probe of the workload API server; zero before the first.
	Reachability nodelink.Reachability
	// Err is why the linker exited on its own, when it is not Running.
	Err error
	// ExitedAt is when it exited; zero while Running.
	ExitedAt time.Time
}

// Registry runs one linker per Cluster. Create it with New and add it to the manager.
type Registry struct {
	machines cluster.Cluster
	opts     Options
	notify   func(types.NamespacedName)

	mu      sync.Mutex
	ctx     context.Context // the manager's, once started
	linkers map[types.NamespacedName]*entry
	wg      sync.WaitGroup
}

type entry struct {
	fingerprint string
	host        string
	linker      *nodelink.Linker[*machinev1.Machine]
	cancel      context.CancelFunc
	done        chan struct{}
	// previous is the last probe of the linker this one replaced for the same API server, reported
	// until this one's first probe, so a restart does not turn a known state into an unknown one.
	previous nodelink.Reachability
	// Set by the linker's goroutine before done is closed.
	err      error
	exitedAt time.Time
}

var (
	_ manager.Runnable               = &Registry{}
	_ manager.LeaderElectionRunnable = &Registry{}
)

// New returns a registry whose linkers link the Machines of the machines cluster (the manager).
// notify is called, from the linkers' goroutines and without blocking, with the Cluster whose
// workload API server changed reachability or whose linker exited on its own.
func New(machines cluster.Cluster, opts Options, notify func(types.NamespacedName)) *Registry {
	if opts.RestartDelay <= 0 {
		opts.RestartDelay = DefaultRestartDelay
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Registry{machines: machines, opts: opts, notify: notify, linkers: map[types.NamespacedName]*entry{}}
}

// Start makes the registry usable and, when ctx is cancelled, stops every linker and waits for them.
func (r *Registry) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	for key, e := range r.linkers {
		e.cancel()
		delete(r.linkers, key)
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

// NeedLeaderElection is true: only the leader links.
func (r *Registry) NeedLeaderElection() bool { return true }

// Selector selects the Machines a Cluster's linker links: the Cluster's members that carry
// remote-nodes=true.
func Selector(clusterName string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1beta1.ClusterNameLabel: clusterName, v1beta1.RemoteNodesLabel: "true"})
}

// Ensure makes sure the Cluster key has a linker running against cfg, identified by fingerprint:
// it starts one, replaces one started with another fingerprint, or restarts one that exited on
// its own once Options.RestartDelay has passed. It returns the linker's status afterwards.
func (r *Registry) Ensure(key types.NamespacedName, cfg *rest.Config, fingerprint string) (Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil {
		return Status{}, ErrNotStarted
	}
	if r.ctx.Err() != nil {
		return Status{}, fmt.Errorf("the remote node linkers are stopping: %w", r.ctx.Err())
	}
	var previous nodelink.Reachability
	if e, ok := r.linkers[key]; ok {
		st := e.status()
		if e.fingerprint == fingerprint && (st.Running || r.opts.Clock.Since(st.ExitedAt) < r.opts.RestartDelay) {
			return st, nil
		}
		if e.host == cfg.Host {
			previous = st.Reachability
		}
		r.stopLocked(key, e)
	}
	e, err := r.start(key, cfg, fingerprint)
	if err != nil {
		return Status{}, err
	}
	e.previous = previous
	r.linkers[key] = e
	return e.status(), nil
}

// Status returns the status of the Cluster's linker, and false when it has none.
func (r *Registry) Status(key types.NamespacedName) (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.linkers[key]
	if !ok {
		return Status{}, false
	}
	return e.status(), true
}

// Stop stops the Cluster's linker, if it has one, waits for it to exit and reports whether it had one.
func (r *Registry) Stop(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.linkers[key]
	if ok {
		r.stopLocked(key, e)
	}
	return ok
}

func (r *Registry) stopLocked(key types.NamespacedName, e *entry) {
	e.cancel()
	<-e.done
	delete(r.linkers, key)
}

func (r *Registry) start(key types.NamespacedName, cfg *rest.Config, fingerprint string) (*entry, error) {
	name := "nodelink-" + key.Namespace + "-" + key.Name
	l, err := machinelink.NewRemoteLinker(r.ctx, r.machines, cfg, nodelink.Options{
		Name:                    name,
		Namespace:               key.Namespace,
		Selector:                Selector(key.Name),
		MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles,
		CacheSyncTimeout:        r.opts.CacheSyncTimeout,
		Clock:                   r.opts.Clock,
		ProbeInterval:           r.opts.ProbeInterval,
		OnReachabilityChange:    func(nodelink.Reachability) { r.notify(key) },
		Logger:                  ctrllog.Log.WithName(name),
	})
	if err != nil {
		return nil, fmt.Errorf("building the node linker for cluster %s: %w", key, err)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	e := &entry{fingerprint: fingerprint, host: cfg.Host, linker: l, cancel: cancel, done: make(chan struct{})}
	r.wg.Go(func() {
		err := l.Start(ctx)         // runs the linker's Node cache too, and stops it
		stopped := ctx.Err() != nil // Stop, or the manager stopping
		if err == nil && !stopped {
			err = errors.New("the linker stopped unexpectedly")
		}
		e.err, e.exitedAt = err, r.opts.Clock.Now()
		close(e.done)
		if !stopped {
			ctrllog.Log.WithName(name).Error(err, "remote node linker exited; it is restarted on the Cluster's next reconcile")
			r.notify(key)
		}
	})
	return e, nil
}

func (e *entry) status() Status {
	st := Status{Fingerprint: e.fingerprint, Host: e.host, Reachability: e.linker.Reachability()}
	if st.Reachability.LastProbe.IsZero() {
		st.Reachability = e.previous
	}
	select {
	case <-e.done:
		st.Err, st.ExitedAt = e.err, e.exitedAt
	default:
		st.Running = true
	}
	return st
}
