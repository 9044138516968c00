package nodelink

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStaleNodes protects the retry after a refused Node patch: the machines come back on the
// first version of the Node newer than the one their patch was based on, or on its deletion,
// and only once.
func TestStaleNodes(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	node := func(rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv}}
	}
	cases := map[string]struct {
		refused []types.NamespacedName // machines whose patch of n1 at "5" was refused
		event   *corev1.Node           // the Node's next version as the cache shows it (nil: deleted)
		want    []types.NamespacedName
	}{
		"nothing refused":                 {event: node("6")},
		"the same version: still waiting": {refused: []types.NamespacedName{a}, event: node("5")},
		"a newer version brings it back":  {refused: []types.NamespacedName{a}, event: node("6"), want: []types.NamespacedName{a}},
		"every machine that waits":        {refused: []types.NamespacedName{a, b, a}, event: node("6"), want: []types.NamespacedName{a, b}},
		"the Node deleted":                {refused: []types.NamespacedName{b}, want: []types.NamespacedName{b}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var s staleNodes
			for _, m := range tc.refused {
				s.add(node("5"), m)
			}
			got := s.take("n1", tc.event)
			if len(got) != len(tc.want) || len(tc.want) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1]) {
				t.Fatalf("take = %v, want %v", got, tc.want)
			}
			if len(tc.want) > 0 && len(s.take("n1", node("7"))) != 0 {
				t.Fatal("machines brought back twice")
			}
		})
	}

	t.Run("each machine waits for a version after its own", func(t *testing.T) {
		var s staleNodes
		s.add(node("5"), a)
		s.add(node("6"), b) // b read 6 before the event 5 -> 6 reached mapNode
		if got := s.take("n1", node("6")); len(got) != 1 || got[0] != a {
			t.Fatalf("take at 6 = %v, want [a]: b waits for a version after 6", got)
		}
		if got := s.take("n1", node("7")); len(got) != 1 || got[0] != b {
			t.Fatalf("take at 7 = %v, want [b]", got)
		}
	})

	t.Run("drop forgets one machine once the cache is newer", func(t *testing.T) {
		var s staleNodes
		s.add(node("5"), a)
		s.add(node("5"), b)
		if s.drop("n1", node("5"), a) {
			t.Fatal("dropped at the refused version")
		}
		if !s.drop("n1", node("6"), a) {
			t.Fatal("not dropped at a newer version")
		}
		if got := s.take("n1", node("6")); len(got) != 1 || got[0] != b {
			t.Fatalf("take = %v, want [b]", got)
		}
	})
}
