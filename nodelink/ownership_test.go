package nodelink

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestApplyMachine protects what nodelink writes on a linked Node: the machine's metadata, owned
// and recorded, every other key left alone, and the initialization taint removed in the same
// change.
func TestApplyMachine(t *testing.T) {
	k := keysFor("machine.machineapi.dev", DefaultInitializationTaintKey)
	m1 := types.NamespacedName{Namespace: "ns", Name: "m1"}
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	linkedAnnotations := func(extra map[string]string) map[string]string {
		a := map[string]string{k.Machine: "m1", k.ClusterNamespace: "ns"}
		for key, v := range extra {
			a[key] = v
		}
		return a
	}
	noSchedule := func(key, value string) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
	}
	tests := map[string]struct {
		cur  nodeMeta
		want NodeMetadata
		out  nodeMeta
	}{
		"a bare Node gets the machine annotations only": {
			cur: nodeMeta{},
			out: nodeMeta{Annotations: linkedAnnotations(nil)},
		},
		"labels, annotations and taints are added and recorded as owned": {
			cur: nodeMeta{Labels: map[string]string{"kubernetes.io/hostname": "n1"}},
			want: NodeMetadata{
				Labels:      map[string]string{"node-role.kubernetes.io/worker": "", "pool": "a"},
				Annotations: map[string]string{"team": "x"},
				Taints:      []corev1.Taint{noSchedule("dedicated", "gpu")},
			},
			out: nodeMeta{
				Labels: map[string]string{"kubernetes.io/hostname": "n1", "node-role.kubernetes.io/worker": "", "pool": "a"},
				Annotations: linkedAnnotations(map[string]string{
					"team": "x", k.OwnedLabels: "node-role.kubernetes.io/worker,pool", k.OwnedAnnotations: "team", k.OwnedTaints: "dedicated:NoSchedule",
				}),
				Taints: []corev1.Taint{noSchedule("dedicated", "gpu")},
			},
		},
		"a changed value follows the machine": {
			cur: nodeMeta{
				Labels:      map[string]string{"pool": "a"},
				Annotations: linkedAnnotations(map[string]string{k.OwnedLabels: "pool", k.OwnedTaints: "dedicated:NoSchedule"}),
				Taints:      []corev1.Taint{noSchedule("dedicated", "gpu")},
			},
			want: NodeMetadata{Labels: map[string]string{"pool": "b"}, Taints: []corev1.Taint{noSchedule("dedicated", "cpu")}},
			out: nodeMeta{
				Labels:      map[string]string{"pool": "b"},
				Annotations: linkedAnnotations(map[string]string{k.OwnedLabels: "pool", k.OwnedTaints: "dedicated:NoSchedule"}),
				Taints:      []corev1.Taint{noSchedule("dedicated", "cpu")},
			},
		},
		"owned keys the machine dropped are removed; foreign keys stay": {
			cur: nodeMeta{
				Labels: map[string]string{"pool": "a", "foreign": "yes"},
				Annotations: linkedAnnotations(map[string]string{
					"team": "x", "foreign": "yes", k.OwnedLabels: "pool", k.OwnedAnnotations: "team", k.OwnedTaints: "dedicated:NoSchedule",
				}),
				Taints: []corev1.Taint{noSchedule("foreign", ""), noSchedule("dedicated", "gpu")},
			},
			want: NodeMetadata{},
			out: nodeMeta{
				Labels:      map[string]string{"foreign": "yes"},
				Annotations: linkedAnnotations(map[string]string{"foreign": "yes"}),
				Taints:      []corev1.Taint{noSchedule("foreign", "")},
			},
		},
		"a foreign key the machine asks for: the machine's value wins and the key becomes owned": {
			cur:  nodeMeta{Labels: map[string]string{"pool": "set-by-admin"}},
			want: NodeMetadata{Labels: map[string]string{"pool": "a"}},
			out: nodeMeta{
				Labels:      map[string]string{"pool": "a"},
				Annotations: linkedAnnotations(map[string]string{k.OwnedLabels: "pool"}),
			},
		},
		"taints are identified by key and effect": {
			cur: nodeMeta{
				Annotations: linkedAnnotations(map[string]string{k.OwnedTaints: "dedicated:NoSchedule"}),
				Taints: []corev1.Taint{
					noSchedule("dedicated", "gpu"),
					{Key: "dedicated", Value: "foreign", Effect: corev1.TaintEffectPreferNoSchedule},
				},
			},
			want: NodeMetadata{Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}}},
			out: nodeMeta{
				Annotations: linkedAnnotations(map[string]string{k.OwnedTaints: "dedicated:NoExecute"}),
				Taints: []corev1.Taint{
					{Key: "dedicated", Value: "foreign", Effect: corev1.TaintEffectPreferNoSchedule},
					{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute, TimeAdded: &now},
				},
			},
		},
		"duplicate desired taints: the first wins": {
			want: NodeMetadata{Taints: []corev1.Taint{noSchedule("a", "1"), noSchedule("a", "2")}},
			out: nodeMeta{
				Annotations: linkedAnnotations(map[string]string{k.OwnedTaints: "a:NoSchedule"}),
				Taints:      []corev1.Taint{noSchedule("a", "1")},
			},
		},
		"the machine cannot set nodelink's bookkeeping annotations": {
			want: NodeMetadata{Annotations: map[string]string{k.Machine: "evil", k.OwnedLabels: "kubernetes.io/hostname", "ok": "1"}},
			out:  nodeMeta{Annotations: linkedAnnotations(map[string]string{"ok": "1", k.OwnedAnnotations: "ok"})},
		},
		"the initialization taint goes in the same change that brings the machine's labels and taints": {
			cur: nodeMeta{
				Labels: map[string]string{"kubernetes.io/hostname": "n1"},
				Taints: []corev1.Taint{noSchedule("foreign", ""), noSchedule(DefaultInitializationTaintKey, "")},
			},
			want: NodeMetadata{Labels: map[string]string{"node-role.kubernetes.io/db": ""}, Taints: []corev1.Taint{noSchedule("dedicated", "db")}},
			out: nodeMeta{
				Labels: map[string]string{"kubernetes.io/hostname": "n1", "node-role.kubernetes.io/db": ""},
				Annotations: linkedAnnotations(map[string]string{
					k.OwnedLabels: "node-role.kubernetes.io/db", k.OwnedTaints: "dedicated:NoSchedule",
				}),
				Taints: []corev1.Taint{noSchedule("foreign", ""), noSchedule("dedicated", "db")},
			},
		},
		"the initialization taint goes whatever its effect, also for a machine that asks for nothing": {
			cur: nodeMeta{Taints: []corev1.Taint{{Key: DefaultInitializationTaintKey, Effect: corev1.TaintEffectNoExecute}}},
			out: nodeMeta{Annotations: linkedAnnotations(nil), Taints: []corev1.Taint{}},
		},
		"initialization taints come with the patch that removes the initialization taint, unowned": {
			cur:  nodeMeta{Taints: []corev1.Taint{noSchedule(DefaultInitializationTaintKey, "")}},
			want: NodeMetadata{InitializationTaints: []corev1.Taint{noSchedule("warming-up", "")}},
			out:  nodeMeta{Annotations: linkedAnnotations(nil), Taints: []corev1.Taint{noSchedule("warming-up", "")}},
		},
		"initialization taints come at the first link of a Node registered without the initialization taint": {
			cur:  nodeMeta{},
			want: NodeMetadata{InitializationTaints: []corev1.Taint{noSchedule("warming-up", "")}},
			out:  nodeMeta{Annotations: linkedAnnotations(nil), Taints: []corev1.Taint{noSchedule("warming-up", "")}},
		},
		"initialization taints are not put back on an initialized Node that lost them": {
			cur:  nodeMeta{Annotations: linkedAnnotations(nil)},
			want: NodeMetadata{InitializationTaints: []corev1.Taint{noSchedule("warming-up", "")}},
			out:  nodeMeta{Annotations: linkedAnnotations(nil)},
		},
		"a Node in sync is unchanged": {
			cur: nodeMeta{
				Labels:      map[string]string{"pool": "a"},
				Annotations: linkedAnnotations(map[string]string{k.OwnedLabels: "pool"}),
			},
			want: NodeMetadata{Labels: map[string]string{"pool": "a"}},
			out: nodeMeta{
				Labels:      map[string]string{"pool": "a"},
				Annotations: linkedAnnotations(map[string]string{k.OwnedLabels: "pool"}),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := *deepCopyMeta(tc.cur)
			got := applyMachine(tc.cur, tc.want, m1, k, now)
			if !equality.Semantic.DeepEqual(got, tc.out) {
				t.Errorf("applyMachine() =\n%+v\nwant\n%+v", got, tc.out)
			}
			if !equality.Semantic.DeepEqual(tc.cur, before) {
				t.Errorf("applyMachine modified its input: %+v, was %+v", tc.cur, before)
			}
		})
	}
}

func TestReleaseMachine(t *testing.T) {
	k := keysFor("cluster.x-k8s.io", DefaultInitializationTaintKey)
	cur := nodeMeta{
		Labels: map[string]string{"pool": "a", "foreign": "yes"},
		Annotations: map[string]string{
			k.Machine: "m1", k.ClusterNamespace: "ns", "team": "x", "foreign": "yes",
			k.OwnedLabels: "pool", k.OwnedAnnotations: "team", k.OwnedTaints: "dedicated:NoSchedule",
		},
		Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}, {Key: "foreign", Effect: corev1.TaintEffectNoSchedule},
			{Key: DefaultInitializationTaintKey, Effect: corev1.TaintEffectNoSchedule}},
	}
	want := nodeMeta{
		Labels:      map[string]string{"foreign": "yes"},
		Annotations: map[string]string{"foreign": "yes"},
		// A release is no initialization: a Node still gated stays gated.
		Taints: []corev1.Taint{{Key: "foreign", Effect: corev1.TaintEffectNoSchedule}, {Key: DefaultInitializationTaintKey, Effect: corev1.TaintEffectNoSchedule}},
	}
	if got := releaseMachine(cur, k); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("releaseMachine() =\n%+v\nwant\n%+v", got, want)
	}
}

func deepCopyMeta(m nodeMeta) *nodeMeta {
	out := nodeMeta{}
	if m.Labels != nil {
		out.Labels = map[string]string{}
		for k, v := range m.Labels {
			out.Labels[k] = v
		}
	}
	if m.Annotations != nil {
		out.Annotations = map[string]string{}
		for k, v := range m.Annotations {
			out.Annotations[k] = v
		}
	}
	for _, t := range m.Taints {
		out.Taints = append(out.Taints, *t.DeepCopy())
	}
	return &out
}
