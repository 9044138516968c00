package nodelink

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// annotationKeys are the Node annotations nodelink writes, all under one prefix.
type annotationKeys struct {
	// Machine and ClusterNamespace name the linked machine (cluster-autoscaler reads them).
	Machine          string
	ClusterNamespace string
	// OwnedLabels, OwnedAnnotations and OwnedTaints record, comma-separated and sorted, the keys
	// that came from the machine (taints as key:Effect).
	OwnedLabels      string
	OwnedAnnotations string
	OwnedTaints      string
	// Gate is the initialization taint's key (Options.InitializationTaintKey).
	Gate string
}

func keysFor(prefix, gate string) annotationKeys {
	return annotationKeys{
		Machine:          prefix + "/machine",
		ClusterNamespace: prefix + "/cluster-namespace",
		OwnedLabels:      prefix + "/labels-from-machine",
		OwnedAnnotations: prefix + "/annotations-from-machine",
		OwnedTaints:      prefix + "/taints-from-machine",
		Gate:             gate,
	}
}

// reserved reports whether key is one of nodelink's bookkeeping annotations, which a machine
// cannot set through its desired annotations.
func (k annotationKeys) reserved(key string) bool {
	switch key {
	case k.Machine, k.ClusterNamespace, k.OwnedLabels, k.OwnedAnnotations, k.OwnedTaints:
		return true
	}
	return false
}

// claimedBy returns the machine a Node's annotations name, zero when they name none.
func (k annotationKeys) claimedBy(annotations map[string]string) types.NamespacedName {
	name := annotations[k.Machine]
	if name == "" {
		return types.NamespacedName{}
	}
	return types.NamespacedName{Namespace: annotations[k.ClusterNamespace], Name: name}
}

// nodeMeta is the part of a Node nodelink writes.
type nodeMeta struct {
	Labels      map[string]string
	Annotations map[string]string
	Taints      []corev1.Taint
}

// applyMachine returns cur changed so that it carries what machine wants and records it as owned:
// desired keys are set (the machine's value wins over a value already there, and the key becomes
// owned), keys recorded as owned that the machine no longer wants are removed, and every other key
// is left alone. Taints are identified by key and effect; a NoExecute taint the Node did not have
// gets TimeAdded = now unless the machine gives one. When the change initializes the Node (see
// initializing), it also adds the machine's initialization taints, unowned, and removes the
// initialization taint (k.Gate): the Node may take workloads from then on, with the machine's
// metadata in force. A release (machine zero) initializes nothing. cur is not modified.
func applyMachine(cur nodeMeta, want NodeMetadata, machine types.NamespacedName, k annotationKeys, now metav1.Time) nodeMeta {
	out := nodeMeta{
		Labels:      maps.Clone(cur.Labels),
		Annotations: maps.Clone(cur.Annotations),
		Taints:      slices.Clone(cur.Taints),
	}
	wantAnnotations := maps.Clone(want.Annotations)
	maps.DeleteFunc(wantAnnotations, func(key, _ string) bool { return k.reserved(key) })

	out.Labels = applyOwnedMap(out.Labels, splitList(cur.Annotations[k.OwnedLabels]), want.Labels)
	out.Annotations = applyOwnedMap(out.Annotations, splitList(cur.Annotations[k.OwnedAnnotations]), wantAnnotations)
	wantTaints := uniqueTaints(want.Taints)
	out.Taints = applyOwnedTaints(out.Taints, splitList(cur.Annotations[k.OwnedTaints]), wantTaints, now)
	if machine.Name != "" && initializing(cur, machine, k) {
		out.Taints = addTaints(out.Taints, uniqueTaints(want.InitializationTaints), now)
		if k.Gate != "" && !slices.ContainsFunc(wantTaints, func(t corev1.Taint) bool { return t.Key == k.Gate }) {
			out.Taints = slices.DeleteFunc(out.Taints, func(t corev1.Taint) bool { return t.Key == k.Gate })
		}
	}

	out.Annotations = setOrDelete(out.Annotations, k.Machine, machine.Name)
	out.Annotations = setOrDelete(out.Annotations, k.ClusterNamespace, machine.Namespace)
	out.Annotations = setOrDelete(out.Annotations, k.OwnedLabels, joinList(slices.Collect(maps.Keys(want.Labels))))
	out.Annotations = setOrDelete(out.Annotations, k.OwnedAnnotations, joinList(slices.Collect(maps.Keys(wantAnnotations))))
	taintKeys := make([]string, 0, len(wantTaints))
	for _, t := range wantTaints {
		taintKeys = append(taintKeys, taintID(t))
	}
	out.Annotations = setOrDelete(out.Annotations, k.OwnedTaints, joinList(taintKeys))
	return out
}

// initializing reports whether a change of cur for machine initializes the Node: it still carries
// the initialization taint, or it registered without one and machine has not claimed it yet.
func initializing(cur nodeMeta, machine types.NamespacedName, k annotationKeys) bool {
	if k.Gate != "" && slices.ContainsFunc(cur.Taints, func(t corev1.Taint) bool { return t.Key == k.Gate }) {
		return true
	}
	return k.claimedBy(cur.Annotations) != machine
}

// releaseMachine returns cur without anything a machine owned and without the annotations naming
// it: what a Node keeps when its machine is deleted. cur is not modified.
func releaseMachine(cur nodeMeta, k annotationKeys) nodeMeta {
	return applyMachine(cur, NodeMetadata{}, types.NamespacedName{}, k, metav1.Time{})
}

// applyOwnedMap removes the owned keys want no longer has and sets every key of want.
func applyOwnedMap(m map[string]string, owned []string, want map[string]string) map[string]string {
	for _, key := range owned {
		if _, ok := want[key]; !ok {
			delete(m, key)
		}
	}
	for key, v := range want {
		if old, ok := m[key]; !ok || old != v {
			if m == nil {
				m = map[string]string{}
			}
			m[key] = v
		}
	}
	return m
}

// applyOwnedTaints removes the owned taints want no longer has and adds or updates every taint of
// want, keeping the order of the taints already there.
func applyOwnedTaints(taints []corev1.Taint, owned []string, want []corev1.Taint, now metav1.Time) []corev1.Taint {
	taints = slices.DeleteFunc(taints, func(t corev1.Taint) bool {
		id := taintID(t)
		return slices.Contains(owned, id) && !slices.ContainsFunc(want, func(w corev1.Taint) bool { return taintID(w) == id })
	})
	return addTaints(taints, want, now)
}

// addTaints adds each taint of want to taints, or sets the value of the one with its key and
// effect, keeping the order of the taints already there. A NoExecute taint added gets TimeAdded =
// now unless it has one.
func addTaints(taints []corev1.Taint, want []corev1.Taint, now metav1.Time) []corev1.Taint {
	for _, w := range want {
		i := slices.IndexFunc(taints, func(t corev1.Taint) bool { return t.Key == w.Key && t.Effect == w.Effect })
		if i >= 0 {
			taints[i].Value = w.Value
			continue
		}
		if w.Effect == corev1.TaintEffectNoExecute && w.TimeAdded == nil && !now.IsZero() {
			w.TimeAdded = &now
		}
		taints = append(taints, w)
	}
	return taints
}

// uniqueTaints returns taints without later duplicates of the same key and effect.
func uniqueTaints(taints []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if !slices.ContainsFunc(out, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect }) {
			out = append(out, *t.DeepCopy())
		}
	}
	return out
}

// taintID identifies a taint in the <prefix>/taints-from-machine annotation.
func taintID(t corev1.Taint) string { return t.Key + ":" + string(t.Effect) }

func setOrDelete(m map[string]string, key, value string) map[string]string {
	if value == "" {
		delete(m, key)
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func joinList(keys []string) string {
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
