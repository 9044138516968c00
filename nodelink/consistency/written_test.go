package consistency

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func copyAt(rv string, uid types.UID, deleting bool) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: uid, ResourceVersion: rv}}
	if deleting {
		cm.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)}
		cm.Finalizers = []string{"f"}
	}
	return cm
}

// TestShownBy protects the one decision of the guard: whether a cached copy shows a write.
func TestShownBy(t *testing.T) {
	unsure := written{created: true, unsure: true, checkAt: time.Date(2026, 5, 4, 12, 1, 0, 0, time.UTC)}
	tests := map[string]struct {
		w      written
		cached client.Object // nil: not in the cache
		want   bool
	}{
		"update, cache at the version written":            {w: written{rv: "10"}, cached: copyAt("10", "u", false), want: true},
		"update, cache at a later version":                {w: written{rv: "10"}, cached: copyAt("12", "u", false), want: true},
		"update, cache at an older version":               {w: written{rv: "10"}, cached: copyAt("9", "u", false), want: false},
		"update, versions compared as numbers, not text":  {w: written{rv: "10"}, cached: copyAt("9999", "u", false), want: true},
		"update, object deleted since":                    {w: written{rv: "10"}, want: true},
		"create, not listed yet":                          {w: written{rv: "10", created: true}, want: false},
		"create, listed at an older version (re-created)": {w: written{rv: "10", created: true}, cached: copyAt("8", "u", false), want: false},
		"create, listed":                                  {w: written{rv: "10", created: true}, cached: copyAt("10", "u", false), want: true},
		"delete, still listed":                            {w: written{deleted: true, uid: "u"}, cached: copyAt("10", "u", false), want: false},
		"delete, listed being deleted":                    {w: written{deleted: true, uid: "u"}, cached: copyAt("11", "u", true), want: true},
		"delete, gone":                                    {w: written{deleted: true, uid: "u"}, want: true},
		"delete, another object under the name":           {w: written{deleted: true, uid: "u"}, cached: copyAt("20", "v", false), want: true},
		"delete of unknown UID, an object under the name": {w: written{deleted: true}, cached: copyAt("20", "v", false), want: false},
		"unsure create, not listed":                       {w: unsure, want: false},
		"unsure create, listed":                           {w: unsure, cached: copyAt("3", "u", false), want: true},
		"versions that do not compare: the cache wins":    {w: written{rv: "abc"}, cached: copyAt("xyz", "u", false), want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.w.shownBy(tc.cached); got != tc.want {
				t.Errorf("shownBy = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestThen: a later write of the same object decides what the cache must show, but an object
// created and then updated must still be listed.
func TestThen(t *testing.T) {
	tests := map[string]struct {
		first, next, want written
	}{
		"created, then updated: listed at the update's version": {
			first: written{rv: "5", created: true}, next: written{rv: "6"}, want: written{rv: "6", created: true}},
		"updated twice: the later version":    {first: written{rv: "5"}, next: written{rv: "6"}, want: written{rv: "6"}},
		"created, then deleted: gone":         {first: written{rv: "5", created: true}, next: written{deleted: true, uid: "u"}, want: written{deleted: true, uid: "u"}},
		"deleted, then created again: listed": {first: written{deleted: true, uid: "u"}, next: written{rv: "9", created: true}, want: written{rv: "9", created: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.first.then(tc.next); got != tc.want {
				t.Errorf("then = %+v, want %+v", got, tc.want)
			}
		})
	}
}
