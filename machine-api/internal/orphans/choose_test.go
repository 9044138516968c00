package orphans

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"machineapi.dev/machine-api/provider"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func inst(uid string, age time.Duration) provider.Instance {
	created := time.Time{}
	if age > 0 {
		created = t0.Add(-age)
	}
	return provider.Instance{ProviderID: "sim:///" + uid, MachineUID: types.UID(uid), MachineNamespace: "ns", MachineName: "m-" + uid, Created: created}
}

func uids(insts []provider.Instance) []string {
	var out []string
	for _, i := range insts {
		out = append(out, string(i.MachineUID))
	}
	return out
}

// TestChoose protects what a pass of the orphan collector decides: only instances without their
// Machine are orphans; each is new once; none is deleted before it has been an orphan, and
// existed, for the grace period, nor one of unknown age; the policy report deletes nothing; and a
// pass deletes at most MaxPerPass and MaxFraction of the instances listed (at least one), oldest
// first.
func TestChoose(t *testing.T) {
	o := Options{Policy: PolicyDelete, Grace: 30 * time.Minute, MaxPerPass: 10, MaxFraction: 0.5}
	tests := map[string]struct {
		insts     []provider.Instance
		live      []string
		firstSeen map[string]time.Duration // ago
		opts      *Options
		orphans   []string
		new       []string
		delete    []string
		remember  []string // firstSeen afterwards
	}{
		"every instance has its Machine: nothing": {
			insts: []provider.Instance{inst("a", time.Hour), inst("b", time.Hour)}, live: []string{"a", "b"},
		},
		"an orphan seen for the first time is reported, not deleted": {
			insts: []provider.Instance{inst("a", time.Hour), inst("b", time.Hour)}, live: []string{"a"},
			orphans: []string{"b"}, new: []string{"b"}, remember: []string{"b"},
		},
		"an orphan past the grace period, and old enough, is deleted": {
			insts: []provider.Instance{inst("a", time.Hour), inst("b", time.Hour)}, live: []string{"a"}, firstSeen: map[string]time.Duration{"b": 30 * time.Minute},
			orphans: []string{"b"}, delete: []string{"b"}, remember: []string{"b"},
		},
		"an orphan seen long enough but younger than the grace period is kept": {
			insts: []provider.Instance{inst("a", time.Hour), inst("b", 29*time.Minute)}, live: []string{"a"}, firstSeen: map[string]time.Duration{"b": time.Hour},
			orphans: []string{"b"}, remember: []string{"b"},
		},
		"an orphan of unknown age is never deleted": {
			insts: []provider.Instance{inst("a", time.Hour), inst("b", 0)}, live: []string{"a"}, firstSeen: map[string]time.Duration{"b": time.Hour},
			orphans: []string{"b"}, remember: []string{"b"},
		},
		"report only": {
			insts: []provider.Instance{inst("a", time.Hour), inst("b", time.Hour)}, firstSeen: map[string]time.Duration{"a": time.Hour, "b": time.Hour},
			opts:    &Options{Policy: PolicyReport, Grace: 30 * time.Minute, MaxPerPass: 10, MaxFraction: 1},
			orphans: []string{"a", "b"}, remember: []string{"a", "b"},
		},
		"a Machine that came back makes its instance no orphan, and forgets it": {
			insts: []provider.Instance{inst("a", time.Hour)}, live: []string{"a"}, firstSeen: map[string]time.Duration{"a": time.Hour},
		},
		"an orphan no longer listed is forgotten": {
			insts: []provider.Instance{inst("a", time.Hour)}, live: []string{"a"}, firstSeen: map[string]time.Duration{"gone": time.Hour},
		},
		"bounded by the fraction of the instances listed, oldest first": {
			insts:     []provider.Instance{inst("a", 3*time.Hour), inst("b", 5*time.Hour), inst("c", 4*time.Hour), inst("d", 2*time.Hour)},
			firstSeen: map[string]time.Duration{"a": time.Hour, "b": time.Hour, "c": time.Hour, "d": time.Hour},
			orphans:   []string{"a", "b", "c", "d"}, delete: []string{"b", "c"}, remember: []string{"a", "b", "c", "d"},
		},
		"a fraction below one instance still deletes one": {
			insts:     []provider.Instance{inst("a", time.Hour), inst("b", time.Hour), inst("c", time.Hour)},
			live:      []string{"a", "b"},
			firstSeen: map[string]time.Duration{"c": time.Hour},
			opts:      &Options{Policy: PolicyDelete, Grace: 30 * time.Minute, MaxPerPass: 10, MaxFraction: 0.1},
			orphans:   []string{"c"}, delete: []string{"c"}, remember: []string{"c"},
		},
		"bounded by MaxPerPass": {
			insts:     []provider.Instance{inst("a", time.Hour), inst("b", 2*time.Hour)},
			firstSeen: map[string]time.Duration{"a": time.Hour, "b": time.Hour},
			opts:      &Options{Policy: PolicyDelete, Grace: 30 * time.Minute, MaxPerPass: 1, MaxFraction: 1},
			orphans:   []string{"a", "b"}, delete: []string{"b"}, remember: []string{"a", "b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			live := map[types.UID]bool{}
			for _, u := range tc.live {
				live[types.UID(u)] = true
			}
			first := map[types.UID]time.Time{}
			for u, ago := range tc.firstSeen {
				first[types.UID(u)] = t0.Add(-ago)
			}
			opts := o
			if tc.opts != nil {
				opts = *tc.opts
			}
			out := choose(tc.insts, live, first, t0, opts)
			if got := uids(out.Orphans); !slices.Equal(got, tc.orphans) {
				t.Errorf("orphans %v, want %v", got, tc.orphans)
			}
			if got := uids(out.New); !slices.Equal(got, tc.new) {
				t.Errorf("new %v, want %v", got, tc.new)
			}
			if got := uids(out.Delete); !slices.Equal(got, tc.delete) {
				t.Errorf("delete %v, want %v", got, tc.delete)
			}
			var remembered []string
			for u := range first {
				remembered = append(remembered, string(u))
			}
			slices.Sort(remembered)
			if !slices.Equal(remembered, tc.remember) {
				t.Errorf("firstSeen %v, want %v", remembered, tc.remember)
			}
		})
	}
}
