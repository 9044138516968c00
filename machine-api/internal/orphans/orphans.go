package orphans

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// Policies of Options.Policy.
const (
	// PolicyDelete reports orphans and deletes those past the grace period (the default).
	PolicyDelete = "delete"
	// PolicyReport only reports them.
	PolicyReport = "report"
)

// EventOrphanInstance (Warning, regarding the Machine the instance was created for, which is gone,
// in its namespace): an instance whose Machine no longer exists, reported when first seen and
// again when deleted.
const EventOrphanInstance = "OrphanInstance"

// Options configure the collector.
type Options struct {
	// Policy is PolicyDelete or PolicyReport.
	Policy string
	// Interval is the time between two passes.
	Interval time.Duration
	// Grace is how long an instance must have been an orphan, and have existed, before it is
	// deleted.
	Grace time.Duration
	// MaxPerPass bounds the deletions of one pass.
	MaxPerPass int
	// MaxFraction bounds the deletions of one pass to this fraction of the instances listed (at
	// least one).
	MaxFraction float64
}

// DefaultOptions are the manager's defaults.
func DefaultOptions() Options {
	return Options{Policy: PolicyDelete, Interval: 5 * time.Minute, Grace: 30 * time.Minute, MaxPerPass: 10, MaxFraction: 0.1}
}

// Validate says what is wrong with o, in terms of the manager's flags.
func (o Options) Validate() error {
	switch {
	case o.Policy != PolicyDelete && o.Policy != PolicyReport:
		return fmt.Errorf("--orphan-policy %q: use %s or %s", o.Policy, PolicyDelete, PolicyReport)
	case o.Interval <= 0:
		return fmt.Errorf("--orphan-interval %s must be positive", o.Interval)
	case o.Grace < 0:
		return fmt.Errorf("--orphan-grace-period %s must not be negative", o.Grace)
	case o.MaxPerPass < 0:
		return fmt.Errorf("--orphan-max-per-pass %d must not be negative", o.MaxPerPass)
	case o.MaxFraction < 0 || o.MaxFraction > 1:
		return fmt.Errorf("--orphan-max-fraction %g must be between 0 and 1", o.MaxFraction)
	}
	return nil
}

var (
	found = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machineapi_orphan_instances_found_total",
		Help: "Instances found without their Machine, counted once when first seen.",
	})
	deleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "machineapi_orphan_instances_deleted_total",
		Help: "Orphan instances the collector deleted.",
	})
	passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machineapi_orphan_passes_total",
		Help: "Passes of the orphan collector, by outcome: ok, frozen (the Machines could not be read from the API server: nothing deleted), list_failed (the provider could not list its instances: nothing deleted).",
	}, []string{"outcome"})
)

func init() { metrics.Registry.MustRegister(found, deleted, passes) }

// Collector finds and collects orphan instances (see the package doc). It is a manager Runnable
// that runs on the elected replica only.
type Collector struct {
	Lister    provider.Lister
	APIReader client.Reader // the API server, not the cache
	Recorder  events.EventRecorder
	Clock     clock.WithTicker
	Log       logr.Logger
	Options   Options
	// Namespace, when set, limits the collector to the instances of Machines of that namespace
	// (a manager scoped to one namespace reads only its Machines).
	Namespace string

	mu        sync.Mutex
	firstSeen map[types.UID]time.Time // orphans, since when this process saw them so
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader collects.
func (c *Collector) NeedLeaderElection() bool { return true }

// Start runs a pass every Options.Interval until ctx ends.
func (c *Collector) Start(ctx context.Context) error {
	t := c.Clock.NewTicker(c.Options.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			c.Pass(ctx)
		}
	}
}

// Pass runs one pass and returns what it did.
func (c *Collector) Pass(ctx context.Context) Outcome {
	insts, err := c.Lister.List(ctx)
	if c.Namespace != "" {
		insts = slices.DeleteFunc(insts, func(i provider.Instance) bool { return i.MachineNamespace != c.Namespace })
	}
	if err != nil {
		passes.WithLabelValues("list_failed").Inc()
		c.Log.Info("orphan collection: the provider could not list its instances; nothing is collected this pass", "error", err.Error())
		return Outcome{Skipped: "list_failed"}
	}
	live, err := c.machineUIDs(ctx)
	if err != nil {
		passes.WithLabelValues("frozen").Inc()
		c.Log.Info("orphan collection frozen: the Machines cannot be read from the API server, so no instance can be told an orphan; nothing is deleted",
			"error", err.Error())
		return Outcome{Skipped: "frozen"}
	}
	now := c.Clock.Now()
	c.mu.Lock()
	if c.firstSeen == nil {
		c.firstSeen = map[types.UID]time.Time{}
	}
	out := choose(insts, live, c.firstSeen, now, c.Options)
	c.mu.Unlock()
	passes.WithLabelValues("ok").Inc()

	for _, inst := range out.New {
		found.Inc()
		c.Log.Info("found an instance whose Machine no longer exists", "providerID", inst.ProviderID,
			"machine", inst.MachineNamespace+"/"+inst.MachineName, "machineUID", inst.MachineUID, "policy", c.Options.Policy)
		c.event(inst, "Report", "instance %s was created for Machine %s (UID %s), which no longer exists; %s", inst.ProviderID, inst.MachineName, inst.MachineUID, c.fate())
	}
	for _, inst := range out.Delete {
		if err := c.Lister.DeleteInstance(ctx, inst); err != nil {
			c.Log.Error(err, "deleting an orphan instance failed; trying again next pass", "providerID", inst.ProviderID)
			continue
		}
		deleted.Inc()
		c.mu.Lock()
		delete(c.firstSeen, inst.MachineUID)
		c.mu.Unlock()
		c.Log.Info("deleted an orphan instance", "providerID", inst.ProviderID, "machine", inst.MachineNamespace+"/"+inst.MachineName, "machineUID", inst.MachineUID)
		c.event(inst, "Delete", "deleted instance %s, an orphan of Machine %s (UID %s) for %s", inst.ProviderID, inst.MachineName, inst.MachineUID, c.Options.Grace)
	}
	return out
}

func (c *Collector) fate() string {
	if c.Options.Policy == PolicyReport {
		return "reported only (--orphan-policy=report): delete it yourself, or recreate its Machine"
	}
	return fmt.Sprintf("it is deleted once it has been an orphan for %s (--orphan-grace-period), unless its Machine comes back", c.Options.Grace)
}

// event records an OrphanInstance event regarding the Machine the instance was created for (gone:
// the reference names it by namespace, name and UID), so that it is listed with the events of
// that Machine's namespace.
// The action (Report, Delete) tells the two events apart: the recorder folds events with the same
// regarding object, reason and action into one series, which keeps the first note.
func (c *Collector) event(inst provider.Instance, action, format string, args ...any) {
	ns := inst.MachineNamespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	gone := &v1beta1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: inst.MachineName, UID: inst.MachineUID},
	}
	c.Recorder.Eventf(gone, nil, corev1.EventTypeWarning, EventOrphanInstance, action, format, args...)
}

// machineUIDs reads the UIDs of every Machine from the API server, page by page.
func (c *Collector) machineUIDs(ctx context.Context) (map[types.UID]bool, error) {
	uids := map[types.UID]bool{}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("MachineList"))
	for {
		opts := []client.ListOption{client.Limit(500), client.Continue(list.Continue)}
		if c.Namespace != "" {
			opts = append(opts, client.InNamespace(c.Namespace))
		}
		if err := c.APIReader.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			uids[list.Items[i].UID] = true
		}
		if list.Continue == "" {
			return uids, nil
		}
	}
}

// Outcome is what a pass decided.
type Outcome struct {
	// Skipped says why the pass did nothing ("frozen", "list_failed"); "" when it ran.
	Skipped string
	// New are the orphans seen for the first time; Orphans all of them; Delete those to delete.
	New, Orphans, Delete []provider.Instance
}

// choose decides a pass: which listed instances are orphans (no Machine with their UID in live),
// which of them are new (updating firstSeen, and forgetting instances that are no orphans any
// more), and which to delete under o. It is pure but for firstSeen.
func choose(insts []provider.Instance, live map[types.UID]bool, firstSeen map[types.UID]time.Time, now time.Time, o Options) Outcome {
	var out Outcome
	listed := make(map[types.UID]bool, len(insts))
	for _, inst := range insts {
		listed[inst.MachineUID] = true
		if live[inst.MachineUID] {
			delete(firstSeen, inst.MachineUID)
			continue
		}
		out.Orphans = append(out.Orphans, inst)
		if _, seen := firstSeen[inst.MachineUID]; !seen {
			firstSeen[inst.MachineUID] = now
			out.New = append(out.New, inst)
		}
	}
	for uid := range firstSeen {
		if !listed[uid] {
			delete(firstSeen, uid) // gone: deleted by someone, or by an earlier pass
		}
	}
	if o.Policy != PolicyDelete {
		return out
	}
	budget := min(o.MaxPerPass, max(1, int(o.MaxFraction*float64(len(insts)))))
	eligible := slices.Clone(out.Orphans)
	slices.SortFunc(eligible, func(a, b provider.Instance) int { return a.Created.Compare(b.Created) }) // oldest first
	for _, inst := range eligible {
		if len(out.Delete) >= budget {
			break
		}
		if inst.Created.IsZero() || now.Sub(inst.Created) < o.Grace || now.Sub(firstSeen[inst.MachineUID]) < o.Grace {
			continue
		}
		out.Delete = append(out.Delete, inst)
	}
	return out
}
