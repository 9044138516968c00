/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package nodelink

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
				w.observe(nodeAt(rv), false)
			}
			if got := w.latest(nodeAt(tc.cached)).GetResourceVersion(); got != tc.want {
				t.Errorf("latest() has resourceVersion %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("a deleted object is forgotten", func(t *testing.T) {
		var w recentWrites
		w.record("1", nodeAt("2"))
		w.observe(nodeAt("2"), true)
		if len(w.m) != 0 {
			t.Errorf("%d entries left", len(w.m))
		}
	})
	t.Run("latest returns a copy", func(t *testing.T) {
		var w recentWrites
		w.record("1", nodeAt("2"))
		got := w.latest(nodeAt("1")).(client.Object)
		got.SetLabels(map[string]string{"changed": "by the caller"})
		if w.latest(nodeAt("1")).GetLabels() != nil {
			t.Error("a caller's change leaked into the remembered write")
		}
	})
}
