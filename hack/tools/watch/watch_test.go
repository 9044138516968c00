package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestHandler(t *testing.T) {
	type call struct {
		name    string
		deleted bool
	}
	var got []call
	h := Handler(func(n *corev1.Node, deleted bool) { got = append(got, call{n.Name, deleted}) })
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

	h.OnAdd(node("a"), false)
	h.OnUpdate(node("a"), node("b"))
	h.OnDelete(node("c"))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "d", Obj: node("d")})
	h.OnAdd(&corev1.Pod{}, false)

	want := []call{{"a", false}, {"b", false}, {"c", true}, {"d", true}}
	if len(got) != len(want) {
		t.Fatalf("calls %v, want %v (a Pod is not a Node)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d = %v, want %v", i, got[i], want[i])
		}
	}
}
