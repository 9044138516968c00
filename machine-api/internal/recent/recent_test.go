package recent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func obj(rv, label string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv, Labels: map[string]string{"v": label}}}
}

func TestLatest(t *testing.T) {
	tests := map[string]struct {
		writes [][2]string // {based on rv, wrote rv}
		cached string
		want   string // resourceVersion Latest returns
	}{
		"nothing written: the cache is used":               {cached: "5", want: "5"},
		"cache older than the write: the write is used":    {writes: [][2]string{{"5", "6"}}, cached: "5", want: "6"},
		"cache caught up: the cache is used":               {writes: [][2]string{{"5", "6"}}, cached: "6", want: "6"},
		"someone wrote after us: the cache is used":        {writes: [][2]string{{"5", "6"}}, cached: "7", want: "7"},
		"two writes in a row, cache at the first base":     {writes: [][2]string{{"5", "6"}, {"6", "7"}}, cached: "5", want: "7"},
		"two writes in a row, cache at the middle version": {writes: [][2]string{{"5", "6"}, {"6", "7"}}, cached: "6", want: "7"},
		"a write based on someone else's version restarts": {writes: [][2]string{{"5", "6"}, {"8", "9"}}, cached: "5", want: "5"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var w Writes
			for _, wr := range tc.writes {
				w.Record(wr[0], obj(wr[1], wr[1]))
			}
			if got := w.Latest(obj(tc.cached, "cached")).GetResourceVersion(); got != tc.want {
				t.Fatalf("Latest = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEntriesAreForgottenOnceTheCacheCatchesUp(t *testing.T) {
	var w Writes
	w.Record("1", obj("2", "x"))
	w.Latest(obj("2", "x"))
	if w.Len() != 0 {
		t.Fatalf("%d entries left after the cache caught up", w.Len())
	}
	w.Record("2", obj("3", "x"))
	w.Forget("u1")
	if w.Len() != 0 {
		t.Fatalf("Forget left %d entries", w.Len())
	}
}
