package machinelink

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Adapter is the nodelink.Adapter of v1beta1.Machine.
type Adapter struct{}

var _ nodelink.Adapter[*v1beta1.Machine] = Adapter{}

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

// NodeMetadata implements nodelink.Adapter: spec.metadata and spec.taints.
func (Adapter) NodeMetadata(m *v1beta1.Machine) nodelink.NodeMetadata {
	return nodelink.NodeMetadata{
		Labels:      m.Spec.Metadata.Labels,
		Annotations: m.Spec.Metadata.Annotations,
		Taints:      m.Spec.Taints,
	}
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
	m.Status.NodeRef = &v1beta1.NodeReference{Kind: "Node", Name: ref.Name, UID: ref.UID}
}

// LinkCondition implements nodelink.Adapter.
func (Adapter) LinkCondition(m *v1beta1.Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked)
}

// SetLinkCondition implements nodelink.Adapter.
func (Adapter) SetLinkCondition(m *v1beta1.Machine, c metav1.Condition) {
	meta.SetStatusCondition(&m.Status.Conditions, c)
}

// Options scope the linker Setup starts.
type Options struct {
	// Namespace restricts linking to Machines in this namespace ("" for all).
	Namespace string
	// Selector restricts linking to Machines whose labels match (nil for all).
	Selector labels.Selector
	// MaxConcurrentReconciles is the number of Machines linked in parallel.
	MaxConcurrentReconciles int
}

// The node linker's permissions (nodelink has none of its own markers: it is a library).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup adds a linker for the manager's Machines and the Nodes of nodes (the manager itself when
// Nodes live in the same cluster) to mgr.
func Setup(ctx context.Context, mgr manager.Manager, nodes cluster.Cluster, o Options) error {
	return nodelink.Setup[*v1beta1.Machine](ctx, mgr, nodes, Adapter{}, nodelink.Options{
		AnnotationPrefix:        v1beta1.GroupVersion.Group,
		Namespace:               o.Namespace,
		Selector:                o.Selector,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		Paused:                  func(m client.Object) bool { return v1beta1.IsPaused(m.GetAnnotations()) },
	})
}
