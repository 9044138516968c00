package machinelink

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/reconcile/conditions"
)

// Adapter is the nodelink.Adapter of v1beta1.Machine: spec.providerID, InternalIPs from
// status.addresses, Node metadata from spec.metadata and spec.taints, status.nodeRef and the
// NodeLinked condition. machine-manager's linker and cluster-manager's remote linkers use it
// alike, so a Machine's link is recorded the same whichever linker made it: by a server-side apply
// of those two fields under the linker's field manager (nodelink.LinkApplier), which the Machine's
// schema makes safe (its conditions are a map-list keyed by type, and no other controller writes
// status.nodeRef), so the link never conflicts with the machine controller's status writes.
type Adapter struct{}

var (
	_ nodelink.Adapter[*v1beta1.Machine]     = Adapter{}
	_ nodelink.LinkApplier[*v1beta1.Machine] = Adapter{}
)

// New implements nodelink.Adapter.
func (Adapter) New() *v1beta1.Machine { return &v1beta1.Machine{} }

// NewList implements nodelink.Adapter.
func (Adapter) NewList() client.ObjectList { return &v1beta1.MachineList{} }

// ProviderID implements nodelink.Adapter.
func (Adapter) ProviderID(m *v1beta1.Machine) string { return m.Spec.ProviderID }

// InternalIPs implements nodelink.Adapter.
func (Adapter) InternalIPs(m *v1beta1.Machine) []string {
	var ips []string
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			ips = append(ips, a.Address)
		}
	}
	return ips
}

// NodeMetadata implements nodelink.Adapter: spec.metadata, and spec.taints by propagation (Always
// taints kept in sync, OnInitialization taints put on when the Node is initialized).
func (Adapter) NodeMetadata(m *v1beta1.Machine) nodelink.NodeMetadata {
	md := nodelink.NodeMetadata{Labels: m.Spec.Metadata.Labels, Annotations: m.Spec.Metadata.Annotations}
	for _, t := range m.Spec.Taints {
		if t.Propagation == v1beta1.TaintPropagationOnInitialization {
			md.InitializationTaints = append(md.InitializationTaints, t.Taint())
		} else {
			md.Taints = append(md.Taints, t.Taint())
		}
	}
	return md
}

// NodeRef implements nodelink.Adapter.
func (Adapter) NodeRef(m *v1beta1.Machine) *nodelink.NodeRef {
	if m.Status.NodeRef == nil {
		return nil
	}
	return &nodelink.NodeRef{Name: m.Status.NodeRef.Name, UID: m.Status.NodeRef.UID}
}

// SetNodeRef implements nodelink.Adapter.
func (Adapter) SetNodeRef(m *v1beta1.Machine, ref nodelink.NodeRef) {
	m.Status.NodeRef = nodeReference(ref)
}

func nodeReference(ref nodelink.NodeRef) *v1beta1.NodeReference {
	return &v1beta1.NodeReference{Kind: "Node", Name: ref.Name, UID: ref.UID}
}

// LinkCondition implements nodelink.Adapter.
func (Adapter) LinkCondition(m *v1beta1.Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked)
}

// SetLinkCondition implements nodelink.Adapter.
func (Adapter) SetLinkCondition(m *v1beta1.Machine, c metav1.Condition) {
	meta.SetStatusCondition(&m.Status.Conditions, c)
}

// Record records link on st as the adapter does on a Machine: status.nodeRef (when the link has
// one) and the NodeLinked condition. It is how a nodelink.LinkRecorder of Machines (machine-api's
// machine controller) records what nodelink.Linker.Link returned.
func Record(st *v1beta1.MachineStatus, link *nodelink.Link) {
	if link.NodeRef != nil {
		st.NodeRef = nodeReference(*link.NodeRef)
	}
	meta.SetStatusCondition(&st.Conditions, link.Condition)
}

// NodeRefApplyConfiguration returns the apply configuration of a Machine's status.nodeRef.
func NodeRefApplyConfiguration(ref v1beta1.NodeReference) *acv1beta1.NodeReferenceApplyConfiguration {
	ac := acv1beta1.NodeReference().WithKind("Node").WithName(ref.Name)
	if ref.UID != "" {
		ac.WithUID(ref.UID)
	}
	return ac
}

// LinkApplyConfiguration implements nodelink.LinkApplier: status.nodeRef and the NodeLinked
// condition of m, and its UID.
func (Adapter) LinkApplyConfiguration(m *v1beta1.Machine, ref *nodelink.NodeRef, c metav1.Condition) runtime.ApplyConfiguration {
	status := acv1beta1.MachineStatus().WithConditions(conditions.ApplyConfiguration(c))
	if ref != nil {
		status.WithNodeRef(NodeRefApplyConfiguration(*nodeReference(*ref)))
	}
	return acv1beta1.Machine(m.Name, m.Namespace).WithUID(m.UID).WithStatus(status)
}

// Options scope the linker Setup starts.
type Options struct {
	// Namespace restricts linking to Machines in this namespace ("" for all).
	Namespace string
	// Selector restricts linking to Machines whose labels match (nil for all).
	Selector labels.Selector
	// MaxConcurrentReconciles is the number of Machines linked in parallel.
	MaxConcurrentReconciles int
	// Recorder, when set, records the links on the Machines instead of the linker
	// (nodelink.Options.Recorder): machine-manager's machine controller, which records each link
	// in its own status write.
	Recorder nodelink.LinkRecorder
}

// The node linker's permissions (nodelink has none of its own markers: it is a library).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup adds a linker for the manager's Machines and the Nodes of nodes (the manager itself when
// Nodes live in the same cluster) to mgr, and returns it (for o.Recorder to call).
func Setup(ctx context.Context, mgr manager.Manager, nodes cluster.Cluster, o Options) (*nodelink.Linker[*v1beta1.Machine], error) {
	l, err := nodelink.NewLinker[*v1beta1.Machine](ctx, mgr, nodes, Adapter{}, LinkerOptions(nodelink.Options{
		Namespace:               o.Namespace,
		Selector:                o.Selector,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		Recorder:                o.Recorder,
	}))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(l); err != nil {
		return nil, fmt.Errorf("adding the node linker to the manager: %w", err)
	}
	return l, nil
}

// NewRemoteLinker builds a linker for the Machines of machines (typically the manager) and the
// Nodes of the API server nodes points to, typically a workload cluster:
// nodelink.NewRemoteLinker with Adapter and LinkerOptions(o). Building it needs no answer from
// that API server. The caller scopes it (o.Namespace, o.Selector), names it, and starts and
// stops it; the linker needs, in the machines cluster, the Machine permissions Setup's markers
// list, and on the Node side get, list, watch and patch on nodes.
func NewRemoteLinker(ctx context.Context, machines cluster.Cluster, nodes *rest.Config, o nodelink.Options) (*nodelink.Linker[*v1beta1.Machine], error) {
	return nodelink.NewRemoteLinker[*v1beta1.Machine](ctx, machines, nodes, Adapter{}, LinkerOptions(o))
}

// LinkerOptions returns o with what every linker of machine-api's Machines shares: the
// machine.machineapi.dev annotation prefix on Nodes, and Machines with the paused annotation left
// alone.
func LinkerOptions(o nodelink.Options) nodelink.Options {
	o.AnnotationPrefix = v1beta1.GroupVersion.Group
	o.Paused = func(m client.Object) bool { return v1beta1.IsPaused(m.GetAnnotations()) }
	return o
}
