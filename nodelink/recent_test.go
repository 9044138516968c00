package nodelink

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var now = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func nodeAt(rv string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", ResourceVersion: rv}}
}

// TestRecentWrites protects read-your-writes: a reconcile that runs before the cache shows
// nodelink's last write reads that write, and the cache wins again as soon as it caught up.
func TestRecentWrites(t *testing.T) {
	tests := map[string]struct {
		writes  [][2]string // before, after
		observe []string    // resourceVersions of watch events, in order
		cached  string
		want    string
	}{
		"nothing written: the cache":             {cached: "1", want: "1"},
		"stale cache: the write":                 {writes: [][2]string{{"1", "2"}}, cached: "1", want: "2"},
		"cache caught up":                        {writes: [][2]string{{"1", "2"}}, cached: "2", want: "2"},
		"someone wrote after us: the cache":      {writes: [][2]string{{"1", "2"}}, cached: "3", want: "3"},
		"two writes, cache at the first base":    {writes: [][2]string{{"1", "2"}, {"2", "3"}}, cached: "1", want: "3"},
		"two writes, cache at the first write":   {writes: [][2]string{{"1", "2"}, {"2", "3"}}, cached: "2", want: "3"},
		"event showed the write: forgotten":      {writes: [][2]string{{"1", "2"}}, observe: []string{"2"}, cached: "1", want: "1"},
		"event of an older version: remembered":  {writes: [][2]string{{"1", "2"}, {"2", "3"}}, observe: []string{"2"}, cached: "2", want: "3"},
		"a write on another base starts anew":    {writes: [][2]string{{"1", "2"}, {"5", "6"}}, cached: "1", want: "1"},
		"a write on another base, its own stale": {writes: [][2]string{{"1", "2"}, {"5", "6"}}, cached: "5", want: "6"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var w recentWrites
			for _, wr := range tc.writes {
				w.record(wr[0], nodeAt(wr[1]))
			}
			for _, rv := range tc.observe {
				w.observe(nodeAt(rv), false, now)
			}
			if got := w.latest(nodeAt(tc.cached), now).GetResourceVersion(); got != tc.want {
				t.Errorf("latest() has resourceVersion %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("a deleted object is forgotten", func(t *testing.T) {
		var w recentWrites
		w.record("1", nodeAt("2"))
		w.observe(nodeAt("2"), true, now)
		if len(w.m) != 0 {
			t.Errorf("%d entries left", len(w.m))
		}
	})
	t.Run("latest returns a copy", func(t *testing.T) {
		var w recentWrites
		w.record("1", nodeAt("2"))
		got := w.latest(nodeAt("1"), now)
		got.SetLabels(map[string]string{"changed": "by the caller"})
		if w.latest(nodeAt("1"), now).GetLabels() != nil {
			t.Error("a caller's change leaked into the remembered write")
		}
	})
}

// TestRecentApplies protects read-your-writes for a write without precondition: other
// controllers' writes may land between the version nodelink read and its apply, so the cache may
// show one of them, newer than the version read but older than the apply.
func TestRecentApplies(t *testing.T) {
	linked := func(rv, node string) *corev1.Node {
		n := nodeAt(rv)
		if node != "" {
			n.Labels = map[string]string{"linked-to": node}
		}
		return n
	}
	shows := func(c client.Object) bool { return c.GetLabels()["linked-to"] == "n1" }
	tests := map[string]struct {
		cached *corev1.Node
		after  time.Duration
		want   string
	}{
		"cache at another writer's version before the apply: the apply": {cached: linked("2", ""), want: "3"},
		"cache shows the apply":                        {cached: linked("3", "n1"), want: "3"},
		"cache at a later version, which carries it":   {cached: linked("4", "n1"), want: "4"},
		"someone removed the fields long after: cache": {cached: linked("5", ""), after: appliedTimeout, want: "5"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var w recentWrites
			w.recordApplied(linked("3", "n1"), shows, now)
			if got := w.latest(tc.cached, now.Add(tc.after)).GetResourceVersion(); got != tc.want {
				t.Errorf("latest() has resourceVersion %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("an event showing the apply forgets it", func(t *testing.T) {
		var w recentWrites
		w.recordApplied(linked("3", "n1"), shows, now)
		w.observe(linked("2", ""), false, now)
		if len(w.m) != 1 {
			t.Fatalf("an older version's event forgot the apply")
		}
		w.observe(linked("3", "n1"), false, now)
		if len(w.m) != 0 {
			t.Errorf("%d entries left", len(w.m))
		}
	})
}
