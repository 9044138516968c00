package pending

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

const timeout = 5 * time.Minute

// obj is a cached or written object: a ConfigMap stands in for any kind.
func obj(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

func deleting(o *corev1.ConfigMap) *corev1.ConfigMap {
	o.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	return o
}

var set = obj("set", "1")

func cache(objs ...*corev1.ConfigMap) Lookup {
	m := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		m[o.Name] = o
	}
	return In(m)
}

// TestOutstanding: what the cache must show for each kind of write.
func TestOutstanding(t *testing.T) {
	tests := map[string]struct {
		record func(w *Writes)
		cached Lookup
		want   []string // awaited
	}{
		"a create is awaited until listed": {
			record: func(w *Writes) { w.Created(set, "a") }, cached: cache(), want: []string{"a"}},
		"a listed create is met": {
			record: func(w *Writes) { w.Created(set, "a") }, cached: cache(obj("a", "5"))},
		"a delete is awaited while listed": {
			record: func(w *Writes) { w.Deleted(set, "a", "uid-a") }, cached: cache(obj("a", "5")), want: []string{"a"}},
		"a delete is met once the object is being deleted": {
			record: func(w *Writes) { w.Deleted(set, "a", "uid-a") }, cached: cache(deleting(obj("a", "6")))},
		"a delete is met once the object is gone": {
			record: func(w *Writes) { w.Deleted(set, "a", "uid-a") }, cached: cache()},
		"a delete is met by another object of that name": {
			record: func(w *Writes) { w.Deleted(set, "a", "uid-old") }, cached: cache(obj("a", "9"))},
		"an update is awaited while cached at the version it replaced": {
			record: func(w *Writes) { w.Updated(set, "a", "5", nil) }, cached: cache(obj("a", "5")), want: []string{"a"}},
		"an update is met by any other version": {
			record: func(w *Writes) { w.Updated(set, "a", "5", nil) }, cached: cache(obj("a", "6"))},
		"an object only updated, deleted since, is not awaited": {
			record: func(w *Writes) { w.Updated(set, "a", "5", nil) }, cached: cache()},
		"a create then an update wait for the update": {
			record: func(w *Writes) { w.Created(set, "a"); w.Updated(set, "a", "5", nil) }, cached: cache(obj("a", "5")), want: []string{"a"}},
		"a forgotten write is not awaited": {
			record: func(w *Writes) { w.Created(set, "a"); w.Forget(set, "a") }, cached: cache()},
		"a re-created owner inherits nothing": {
			record: func(w *Writes) {
				old := obj("set", "1")
				old.UID = "uid-old-set"
				w.Created(old, "a")
			}, cached: cache()},
		"several writes, sorted": {
			record: func(w *Writes) { w.Created(set, "c"); w.Deleted(set, "b", ""); w.Updated(set, "a", "1", nil) },
			cached: cache(obj("a", "1"), obj("b", "1")), want: []string{"a", "b", "c"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := New(clocktesting.NewFakePassiveClock(t0), timeout)
			tc.record(w)
			p := w.Outstanding(set, tc.cached)
			if got := p.Names(); !slices.Equal(got, tc.want) {
				t.Fatalf("awaited %v, want %v", got, tc.want)
			}
			if tc.want == nil && (!p.Deadline.IsZero() || w.Len() != 0) {
				t.Errorf("nothing awaited, yet deadline %s and %d owners remembered", p.Deadline, w.Len())
			}
			if tc.want != nil && !p.Deadline.Equal(t0.Add(timeout)) {
				t.Errorf("deadline %s, want the timeout %s", p.Deadline, t0.Add(timeout))
			}
		})
	}
}

func TestKindsAreReportedApart(t *testing.T) {
	w := New(clocktesting.NewFakePassiveClock(t0), timeout)
	w.Created(set, "new")
	w.Deleted(set, "old", "uid-old")
	w.Updated(set, "changed", "3", nil)
	p := w.Outstanding(set, cache(obj("old", "2"), obj("changed", "3")))
	if !p.Appear["new"] || !p.Gone["old"] || !p.Updated["changed"] || p.Len() != 3 {
		t.Fatalf("pending %+v: want new to appear, old to go, changed to be updated", p)
	}
}

// TestTimeout: a lost watch event never blocks an owner for longer than the timeout.
func TestTimeout(t *testing.T) {
	c := clocktesting.NewFakePassiveClock(t0)
	w := New(c, timeout)
	w.Created(set, "lost")
	c.SetTime(t0.Add(timeout - time.Second))
	if p := w.Outstanding(set, cache()); !p.Appear["lost"] {
		t.Fatalf("before the timeout: %+v, want lost awaited", p)
	}
	c.SetTime(t0.Add(timeout))
	if p := w.Outstanding(set, cache()); p.Len() != 0 || w.Len() != 0 {
		t.Fatalf("at the timeout: %+v and %d owners remembered, want nothing", p, w.Len())
	}
}

// TestSweep: owners nobody asks about again are dropped after the timeout.
func TestSweep(t *testing.T) {
	c := clocktesting.NewFakePassiveClock(t0)
	w := New(c, timeout)
	w.Created(obj("gone-owner", "1"), "a")
	c.SetTime(t0.Add(2 * timeout))
	w.Created(set, "b")
	if w.Len() != 1 {
		t.Fatalf("%d owners remembered, want only the one written to since the timeout", w.Len())
	}
}

// TestUnsure: a create whose outcome is unknown stays awaited, and is reported for a check with
// the API server once due (the deadline comes back for it), until the cache lists it or it is
// forgotten.
func TestUnsure(t *testing.T) {
	const check = 70 * time.Second
	c := clocktesting.NewFakePassiveClock(t0)
	w := New(c, timeout)
	w.Created(set, "maybe")
	w.Unsure(set, "maybe", check)

	p := w.Outstanding(set, cache())
	if !p.Appear["maybe"] || len(p.Check) != 0 {
		t.Fatalf("right after the failed create: %+v; want it awaited, not checked yet", p)
	}
	if want := t0.Add(check); !p.Deadline.Equal(want) {
		t.Fatalf("come back at %s, want %s (when it is due to be checked)", p.Deadline, want)
	}
	c.SetTime(t0.Add(check))
	if p := w.Outstanding(set, cache()); !p.Appear["maybe"] || !p.Check["maybe"] {
		t.Fatalf("once due: %+v; want it still awaited and due to be checked", p)
	}
	if p := w.Outstanding(set, cache(obj("maybe", "1"))); p.Len()+len(p.Check) != 0 {
		t.Fatalf("the cache shows it: %+v; want nothing awaited", p)
	}

	w.Unsure(set, "never-created", check)
	if w.Len() != 0 {
		t.Error("Unsure of a create never recorded made an expectation")
	}
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
			w := New(clocktesting.NewFakePassiveClock(t0), timeout)
			for _, wr := range tc.writes {
				w.Wrote(wr[0], obj("m", wr[1]))
			}
			if got := w.Latest(obj("m", tc.cached)).GetResourceVersion(); got != tc.want {
				t.Fatalf("Latest = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLatestForgetsOnceTheCacheCatchesUp(t *testing.T) {
	c := clocktesting.NewFakePassiveClock(t0)
	w := New(c, timeout)
	w.Wrote("1", obj("m", "2"))
	w.Latest(obj("m", "2"))
	if w.Len() != 0 {
		t.Fatalf("%d owners left after the cache caught up", w.Len())
	}
	w.Wrote("2", obj("m", "3"))
	w.Reset(types.NamespacedName{Namespace: "ns", Name: "m"})
	if w.Len() != 0 {
		t.Fatalf("Reset left %d owners", w.Len())
	}
	w.Wrote("3", obj("m", "4"))
	c.SetTime(t0.Add(timeout))
	if got := w.Latest(obj("m", "3")).GetResourceVersion(); got != "3" {
		t.Fatalf("after the timeout Latest = %s, want the cached 3", got)
	}
}

func TestLatestDoesNotServeAnotherObject(t *testing.T) {
	w := New(clocktesting.NewFakePassiveClock(t0), timeout)
	w.Wrote("1", obj("m", "2"))
	recreated := obj("m", "1")
	recreated.UID = "uid-recreated"
	if got := w.Latest(recreated); got.GetUID() != "uid-recreated" {
		t.Fatalf("Latest served the write to an object of another UID")
	}
}
