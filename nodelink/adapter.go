package nodelink

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Adapter tells nodelink how to read and record the fields it needs on one kind of machine-like
// object M. The creation time and labels come from M's object metadata.
//
// nodelink calls an Adapter from many goroutines at once, so it must keep no state between calls.
// Read methods must not modify m. Set methods change m in memory only: nodelink computes the patch
// and writes it, and writes nothing if the Set methods left m unchanged — so they must be
// deterministic (setting the same value twice leaves m as it was).
type Adapter[M client.Object] interface {
	// New returns an empty M; for unstructured objects, one with its GroupVersionKind set.
	// nodelink gets, watches and indexes machines of this kind.
	New() M

	// NewList returns an empty list of M; for unstructured objects, one with the list kind set.
	NewList() client.ObjectList

	// ProviderID returns m's provider ID (typically spec.providerID), "" while it is not known.
	ProviderID(m M) string

	// InternalIPs returns the addresses of type InternalIP that m reports (typically from
	// status.addresses), in any order, nil when there are none.
	InternalIPs(m M) []string

	// NodeMetadata returns the labels, annotations and taints the linked Node must carry.
	// nodelink does not modify the returned maps and slice.
	NodeMetadata(m M) NodeMetadata

	// NodeRef returns the Node reference recorded on m (typically status.nodeRef), nil when none.
	// A reference without UID is accepted and matched by name.
	NodeRef(m M) *NodeRef

	// SetNodeRef records ref on m (a Node reference with kind "Node", name and UID).
	SetNodeRef(m M, ref NodeRef)

	// LinkCondition returns the condition of type ConditionNodeLinked recorded on m, nil when none.
	LinkCondition(m M) *metav1.Condition

	// SetLinkCondition records c, whose Type is ConditionNodeLinked, on m: it replaces an earlier
	// condition of that type and leaves every other condition as it is. c always carries its
	// LastTransitionTime; for typed []metav1.Condition lists meta.SetStatusCondition does exactly
	// this.
	SetLinkCondition(m M, c metav1.Condition)
}

// LinkApplier is an optional interface of an Adapter. An adapter that implements it has nodelink
// record a link with one server-side apply of only the fields nodelink owns, under the field manager
// Options.Name, instead of a JSON merge patch guarded by the machine's resourceVersion: the API
// server merges it with what other controllers write, so it is never refused for their writes
// (409 Conflict), and no fresh read and second write follow.
//
// Implement it only when the machine CRD's schema makes that merge safe: the conditions a map-list
// keyed by type (x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [type], which
// metav1.Condition lists with +listType=map and +listMapKey=type declare), and the node reference
// a field of the status that no other controller writes. On an atomic conditions list an apply
// would replace every other controller's conditions; there the merge patch, which carries them
// over, is the only safe write, and it is what nodelink does for adapters without this interface
// (NewUnstructuredAdapter's among them).
type LinkApplier[M client.Object] interface {
	// LinkApplyConfiguration returns the apply configuration of m's status subresource holding
	// m's name, namespace and UID (so that the write fails rather than land on a machine
	// re-created under the same name), the node reference ref (left out when nil: none recorded
	// yet) and the condition c, and nothing else: a field nodelink owns and leaves out is removed.
	LinkApplyConfiguration(m M, ref *NodeRef, c metav1.Condition) runtime.ApplyConfiguration
}

// NodeRef identifies the Node a machine is linked to.
type NodeRef struct {
	// Name is the Node's name.
	Name string
	// UID is the Node's UID; it tells a Node apart from a later one with the same name.
	UID types.UID
}

// NodeMetadata is what a machine asks its Node to carry.
type NodeMetadata struct {
	// Labels are set on the Node and owned by the machine.
	Labels map[string]string
	// Annotations are set on the Node and owned by the machine. Keys that nodelink uses for its
	// own bookkeeping (<prefix>/machine, ...) are ignored.
	Annotations map[string]string
	// Taints are set on the Node and owned by the machine; a taint is identified by key and
	// effect, and its value follows the machine.
	Taints []corev1.Taint
	// InitializationTaints are put on the Node once, in the patch that initializes it (the one
	// that removes the initialization taint, or that first links a Node registered without it),
	// and never owned: afterwards they are the Node's, whoever removes or changes them.
	InitializationTaints []corev1.Taint
}
