package nodelink

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldPaths locate the fields of a machine-like CRD, as dot-separated paths from the object's
// root ("spec.providerID"). An empty path means the kind has no such field: nodelink neither reads
// nor writes it.
type FieldPaths struct {
	// ProviderID is a string.
	ProviderID string
	// Addresses is a list of {type, address}, as in a Node's status.addresses; entries of type
	// InternalIP are matched.
	Addresses string
	// NodeRef is an object nodelink writes the Node reference to, with NodeRefFields.
	NodeRef string
	// NodeRefFields are the fields of NodeRef that nodelink writes, among apiVersion ("v1"), kind
	// ("Node"), name and uid; they must all exist in the CRD's schema. Default: kind, name, uid.
	NodeRefFields []string
	// Conditions is a list of conditions ({type, status, reason, message, lastTransitionTime}),
	// either a map-list keyed by type or an atomic list: nodelink changes only its own entry and
	// keeps every other entry, and every field of its own it does not know (e.g. severity), as
	// it is. observedGeneration is not written, since not every condition schema has it.
	Conditions string
	// Labels is a string map of labels for the Node.
	Labels string
	// LabelPrefixes, when set, restricts Labels to keys starting with one of them; e.g. Cluster
	// API copies only node-role.kubernetes.io/, node-restriction.kubernetes.io/ and
	// node.cluster.x-k8s.io/ labels from a Machine's metadata.labels.
	LabelPrefixes []string
	// Annotations is a string map of annotations for the Node.
	Annotations string
	// Taints is a list of {key, value, effect} for the Node.
	Taints string
}

// MachineAPIFieldPaths are the field paths of machine-api's Machine
// (machine.machineapi.dev/v1beta1).
func MachineAPIFieldPaths() FieldPaths {
	return FieldPaths{
		ProviderID:    "spec.providerID",
		Addresses:     "status.addresses",
		NodeRef:       "status.nodeRef",
		NodeRefFields: []string{"kind", "name", "uid"},
		Conditions:    "status.conditions",
		Labels:        "spec.metadata.labels",
		Annotations:   "spec.metadata.annotations",
		Taints:        "spec.taints",
	}
}

// ParseGVK parses "group/version/Kind" (or "version/Kind" for the core group).
func ParseGVK(s string) (schema.GroupVersionKind, error) {
	parts := strings.Split(s, "/")
	var gvk schema.GroupVersionKind
	switch len(parts) {
	case 3:
		gvk = schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}
	case 2:
		gvk = schema.GroupVersionKind{Version: parts[0], Kind: parts[1]}
	default:
		return gvk, fmt.Errorf("%q is not group/version/Kind", s)
	}
	if gvk.Version == "" || gvk.Kind == "" {
		return gvk, fmt.Errorf("%q is not group/version/Kind", s)
	}
	return gvk, nil
}

// NewUnstructuredAdapter returns an Adapter for the machine-like CRD gvk, whose fields are at
// paths. It lets nodelink link any machine kind unchanged: Cluster API's cluster.x-k8s.io
// Machines, OpenShift's machine.openshift.io Machines, ...
func NewUnstructuredAdapter(gvk schema.GroupVersionKind, paths FieldPaths) (Adapter[*unstructured.Unstructured], error) {
	a := &unstructuredAdapter{gvk: gvk, refFields: paths.NodeRefFields, labelPrefixes: paths.LabelPrefixes}
	if len(a.refFields) == 0 {
		a.refFields = []string{"kind", "name", "uid"}
	}
	for _, f := range a.refFields {
		if !slices.Contains([]string{"apiVersion", "kind", "name", "uid"}, f) {
			return nil, fmt.Errorf("node reference field %q is not one of apiVersion, kind, name, uid", f)
		}
	}
	if !slices.Contains(a.refFields, "name") {
		return nil, fmt.Errorf("node reference fields %v must include name", a.refFields)
	}
	for _, p := range []struct {
		path string
		dst  *[]string
	}{
		{paths.ProviderID, &a.providerID}, {paths.Addresses, &a.addresses}, {paths.NodeRef, &a.nodeRef},
		{paths.Conditions, &a.conditions}, {paths.Labels, &a.labels}, {paths.Annotations, &a.annotations},
		{paths.Taints, &a.taints},
	} {
		if p.path == "" {
			continue
		}
		fields := strings.Split(p.path, ".")
		if slices.Contains(fields, "") {
			return nil, fmt.Errorf("field path %q has an empty segment", p.path)
		}
		*p.dst = fields
	}
	if a.nodeRef == nil {
		return nil, fmt.Errorf("a node reference path is required: nodelink records the link there")
	}
	if a.providerID == nil && a.addresses == nil {
		return nil, fmt.Errorf("a providerID or an addresses path is required: nodelink matches Nodes by them")
	}
	return a, nil
}

type unstructuredAdapter struct {
	gvk                                                                     schema.GroupVersionKind
	providerID, addresses, nodeRef, conditions, labels, annotations, taints []string
	refFields                                                               []string
	labelPrefixes                                                           []string
}

func (a *unstructuredAdapter) New() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(a.gvk)
	return u
}

func (a *unstructuredAdapter) NewList() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(a.gvk.GroupVersion().WithKind(a.gvk.Kind + "List"))
	return l
}

func (a *unstructuredAdapter) ProviderID(m *unstructured.Unstructured) string {
	if a.providerID == nil {
		return ""
	}
	s, _, _ := unstructured.NestedString(m.Object, a.providerID...)
	return s
}

func (a *unstructuredAdapter) InternalIPs(m *unstructured.Unstructured) []string {
	if a.addresses == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(m.Object, a.addresses...)
	var ips []string
	for _, e := range list {
		entry, ok := e.(map[string]any)
		if !ok || entry["type"] != string(corev1.NodeInternalIP) {
			continue
		}
		if ip, ok := entry["address"].(string); ok && ip != "" {
			ips = append(ips, ip)
		}
	}
	return ips
}

func (a *unstructuredAdapter) NodeMetadata(m *unstructured.Unstructured) NodeMetadata {
	var md NodeMetadata
	if a.labels != nil {
		md.Labels, _, _ = unstructured.NestedStringMap(m.Object, a.labels...)
		if len(a.labelPrefixes) > 0 {
			for k := range md.Labels {
				if !slices.ContainsFunc(a.labelPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
					delete(md.Labels, k)
				}
			}
		}
	}
	if a.annotations != nil {
		md.Annotations, _, _ = unstructured.NestedStringMap(m.Object, a.annotations...)
	}
	if a.taints != nil {
		list, _, _ := unstructured.NestedSlice(m.Object, a.taints...)
		for _, e := range list {
			entry, ok := e.(map[string]any)
			if !ok {
				continue
			}
			t := corev1.Taint{Key: str(entry["key"]), Value: str(entry["value"]), Effect: corev1.TaintEffect(str(entry["effect"]))}
			if ts, err := time.Parse(time.RFC3339, str(entry["timeAdded"])); err == nil {
				t.TimeAdded = &metav1.Time{Time: ts}
			}
			if t.Key != "" && t.Effect != "" {
				md.Taints = append(md.Taints, t)
			}
		}
	}
	return md
}

func (a *unstructuredAdapter) NodeRef(m *unstructured.Unstructured) *NodeRef {
	ref, found, _ := unstructured.NestedMap(m.Object, a.nodeRef...)
	if !found || str(ref["name"]) == "" {
		return nil
	}
	return &NodeRef{Name: str(ref["name"]), UID: types.UID(str(ref["uid"]))}
}

func (a *unstructuredAdapter) SetNodeRef(m *unstructured.Unstructured, ref NodeRef) {
	values := map[string]string{"apiVersion": "v1", "kind": "Node", "name": ref.Name, "uid": string(ref.UID)}
	out, _, _ := unstructured.NestedMap(m.Object, a.nodeRef...)
	if out == nil {
		out = map[string]any{}
	}
	for _, f := range a.refFields {
		if values[f] == "" {
			delete(out, f)
			continue
		}
		out[f] = values[f]
	}
	_ = unstructured.SetNestedMap(m.Object, out, a.nodeRef...)
}

func (a *unstructuredAdapter) LinkCondition(m *unstructured.Unstructured) *metav1.Condition {
	if a.conditions == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(m.Object, a.conditions...)
	for _, e := range list {
		entry, ok := e.(map[string]any)
		if !ok || entry["type"] != ConditionNodeLinked {
			continue
		}
		c := &metav1.Condition{
			Type:    ConditionNodeLinked,
			Status:  metav1.ConditionStatus(str(entry["status"])),
			Reason:  str(entry["reason"]),
			Message: str(entry["message"]),
		}
		if ts, err := time.Parse(time.RFC3339, str(entry["lastTransitionTime"])); err == nil {
			c.LastTransitionTime = metav1.Time{Time: ts}
		}
		return c
	}
	return nil
}

// SetLinkCondition updates nodelink's entry in place — status, reason, message, and the
// transition time when the status changes — and appends one when there is none. Every other
// entry, and every other field of its own entry, is kept.
func (a *unstructuredAdapter) SetLinkCondition(m *unstructured.Unstructured, c metav1.Condition) {
	if a.conditions == nil {
		return
	}
	list, _, _ := unstructured.NestedSlice(m.Object, a.conditions...)
	i := slices.IndexFunc(list, func(e any) bool {
		entry, ok := e.(map[string]any)
		return ok && entry["type"] == ConditionNodeLinked
	})
	if i < 0 {
		list = append(list, map[string]any{"type": ConditionNodeLinked})
		i = len(list) - 1
	}
	entry := list[i].(map[string]any)
	if entry["status"] != string(c.Status) || str(entry["lastTransitionTime"]) == "" {
		entry["lastTransitionTime"] = c.LastTransitionTime.UTC().Format(time.RFC3339)
	}
	entry["status"], entry["reason"], entry["message"] = string(c.Status), c.Reason, c.Message
	_ = unstructured.SetNestedSlice(m.Object, list, a.conditions...)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
