package nodelink

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultAnnotationPrefix is the annotation prefix of machine-api's machine.machineapi.dev
// Machines: Nodes get machine.machineapi.dev/machine, machine.machineapi.dev/cluster-namespace,
// and so on.
const DefaultAnnotationPrefix = "machine.machineapi.dev"

// DefaultInitializationTaintKey is the taint a machine's Node registers with (the kubelet's
// --register-with-taints, or registerWithTaints in its configuration) so that it takes no pods
// until nodelink has given it the machine's labels and taints: nodelink removes it in the same
// patch that first applies them, and never before.
const DefaultInitializationTaintKey = "node.machineapi.dev/uninitialized"

// Defaults of Options.
const (
	// DefaultName names a linker's controller when Options.Name is empty.
	DefaultName = "nodelink"
	// DefaultMaxConcurrentReconciles is the number of machines reconciled in parallel.
	DefaultMaxConcurrentReconciles = 10
	// DefaultProbeInterval is how often the Node side's API server is probed for reachability.
	DefaultProbeInterval = 10 * time.Second
	// probeTimeout bounds one reachability probe.
	probeTimeout = 5 * time.Second
)

// Options configure a Linker. The zero value is valid: it links every machine of the adapter's
// kind with the machine.machineapi.dev annotations.
type Options struct {
	// Name names the linker's controller in logs, metrics and events (as reporting controller).
	// Linkers that run at the same time need different names, e.g. "nodelink-<ns>-<cluster>".
	// Defaults to DefaultName.
	Name string

	// AnnotationPrefix is the prefix of the annotations nodelink writes on Nodes: <prefix>/machine,
	// <prefix>/cluster-namespace, <prefix>/labels-from-machine, <prefix>/annotations-from-machine
	// and <prefix>/taints-from-machine. Use the machine kind's API group (cluster-autoscaler
	// looks for <group>/machine). Defaults to DefaultAnnotationPrefix.
	AnnotationPrefix string

	// InitializationTaintKey is the key of the taint (any effect) that keeps a Node from taking
	// workloads until its machine's metadata is on it: nodelink removes it from a linked Node in
	// the patch that applies the machine's labels, annotations and taints, never earlier, and a
	// Node whose patch fails keeps it. Defaults to DefaultInitializationTaintKey.
	InitializationTaintKey string

	// Namespace, when set, restricts the linker to machines in this namespace.
	Namespace string

	// Selector, when set, restricts the linker to machines whose labels match, e.g.
	// cluster.machineapi.dev/cluster-name=prod for one workload cluster. Machines outside the
	// selector are still seen as competitors for a Node (a conflict is a conflict), but never
	// linked, and their Nodes are never cleaned up by this linker.
	Selector labels.Selector

	// Paused, when set, reports machines to leave alone for now (e.g. machine-api's
	// machine.machineapi.dev/paused annotation): neither they nor their Nodes are written until it
	// reports false again. A deleted machine's Node is still released.
	Paused func(client.Object) bool

	// MaxConcurrentReconciles is the number of machines reconciled in parallel. Defaults to
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int

	// CacheSyncTimeout bounds how long Start waits for the machine and Node caches to sync before
	// it returns an error. Defaults to controller-runtime's default (2 minutes).
	CacheSyncTimeout time.Duration

	// Clock gives the time of condition transitions and paces the reachability probe. Defaults to
	// the real clock.
	Clock clock.Clock

	// ProbeInterval is how often the Node side's API server is probed (GET /readyz). After an
	// outage of a Node side behind another API server, it also paces the check that the Node
	// cache has caught up (see ReasonNodesUnreachable). Defaults to DefaultProbeInterval.
	ProbeInterval time.Duration

	// OnReachabilityChange, when set, is called after the first probe and every time the Node
	// side's reachability changes. It runs on the probe's goroutine and must not block.
	OnReachabilityChange func(Reachability)

	// Recorder, when set, records the links instead of the linker: the linker decides them, and
	// the Recorder's reconciles write the Node side (through Linker.Link) and the machines' status
	// (see LinkRecorder).
	Recorder LinkRecorder

	// Logger is the linker's logger. Defaults to controller-runtime's global logger, named after
	// the linker.
	Logger logr.Logger
}

// withDefaults returns o with every unset field defaulted, or an error naming the invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.AnnotationPrefix == "" {
		o.AnnotationPrefix = DefaultAnnotationPrefix
	}
	if errs := validation.IsDNS1123Subdomain(o.AnnotationPrefix); len(errs) > 0 {
		return o, fmt.Errorf("Options.AnnotationPrefix %q must be a DNS subdomain: %v", o.AnnotationPrefix, errs)
	}
	if o.InitializationTaintKey == "" {
		o.InitializationTaintKey = DefaultInitializationTaintKey
	}
	if errs := validation.IsQualifiedName(o.InitializationTaintKey); len(errs) > 0 {
		return o, fmt.Errorf("Options.InitializationTaintKey %q must be a qualified name: %v", o.InitializationTaintKey, errs)
	}
	if o.Selector == nil {
		o.Selector = labels.Everything()
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	return o, nil
}
