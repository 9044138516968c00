package nodelink

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestNodeSight protects when unlinked machines may be told "no Node matches": not while the Node
// side's API server does not answer, and after an outage not before the Node cache has caught up
// with the server (its resourceVersion has reached the one the server reported when it came back).
func TestNodeSight(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	up := func(s int) Reachability {
		return Reachability{Reachable: true, Since: t0.Add(time.Duration(s) * time.Second), LastProbe: t0.Add(time.Duration(s) * time.Second)}
	}
	down := func(s int) Reachability {
		return Reachability{Since: t0.Add(time.Duration(s) * time.Second), LastProbe: t0.Add(time.Duration(s) * time.Second), Err: errors.New("connection refused")}
	}
	// step is one probe: what it found, the Node cache's resourceVersion then ("-": the cache
	// cannot tell), and what the linker must conclude.
	type step struct {
		probe   Reachability
		cacheRV string
		unseen  string // a substring of the message; "" when the Nodes can be seen
		changed bool   // the machines waiting for a Node must be reconciled
	}
	tests := map[string]struct {
		serverRV  []string // what the API server reports, one per read ("err": the read fails)
		steps     []step
		serverRVs int // how many reads
	}{
		"reachable from the start: Nodes seen at once, no catch-up": {
			steps: []step{{probe: up(0), cacheRV: "10", changed: true}, {probe: up(0), cacheRV: "10"}},
		},
		"an outage hides the Nodes until the cache has caught up with the server": {
			serverRV: []string{"120"},
			steps: []step{
				{probe: up(0), cacheRV: "100", changed: true},
				{probe: down(10), cacheRV: "100", unseen: "has not answered since 2026-01-01T12:00:10Z (connection refused)", changed: true},
				{probe: down(10), cacheRV: "100", unseen: "has not answered"},
				{probe: up(30), cacheRV: "100", unseen: "answers again since 2026-01-01T12:00:30Z, but the Node cache has not caught up", changed: true},
				{probe: up(30), cacheRV: "119", unseen: "has not caught up"},
				{probe: up(30), cacheRV: "120", changed: true},
				{probe: up(30), cacheRV: "121"},
			},
			serverRVs: 1,
		},
		"resourceVersions compare as numbers, not strings": {
			serverRV: []string{"99"},
			steps: []step{
				{probe: down(0), cacheRV: "98", unseen: "has not answered", changed: true},
				{probe: up(5), cacheRV: "100", changed: true},
			},
			serverRVs: 1,
		},
		"a second outage during the catch-up reads the server's resourceVersion again": {
			serverRV: []string{"50", "60"},
			steps: []step{
				{probe: down(0), cacheRV: "40", unseen: "has not answered", changed: true},
				{probe: up(5), cacheRV: "40", unseen: "has not caught up", changed: true},
				{probe: down(6), cacheRV: "40", unseen: "has not answered", changed: true},
				{probe: up(9), cacheRV: "55", unseen: "has not caught up", changed: true},
				{probe: up(9), cacheRV: "60", changed: true},
			},
			serverRVs: 2,
		},
		"the server's resourceVersion cannot be read: still out of sight, tried again next probe": {
			serverRV: []string{"err", "70"},
			steps: []step{
				{probe: down(0), cacheRV: "70", unseen: "has not answered", changed: true},
				{probe: up(5), cacheRV: "70", unseen: "has not caught up", changed: true},
				{probe: up(5), cacheRV: "70", changed: true},
			},
			serverRVs: 2,
		},
		"a cache that has not listed Nodes yet has not caught up": {
			serverRV: []string{"5"},
			steps: []step{
				{probe: down(0), cacheRV: "", unseen: "has not answered", changed: true},
				{probe: up(1), cacheRV: "", unseen: "has not caught up", changed: true},
				{probe: up(1), cacheRV: "7", changed: true},
			},
			serverRVs: 1,
		},
		"a cache that cannot tell is taken as caught up, not waited on forever": {
			serverRV: []string{"5"},
			steps: []step{
				{probe: down(0), cacheRV: "-", unseen: "has not answered", changed: true},
				{probe: up(1), cacheRV: "-", changed: true},
			},
			serverRVs: 1,
		},
		"resourceVersions that are not integers are taken as caught up": {
			serverRV: []string{"abc"},
			steps: []step{
				{probe: down(0), cacheRV: "xyz", unseen: "has not answered", changed: true},
				{probe: up(1), cacheRV: "xyz", changed: true},
			},
			serverRVs: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var cacheRV string
			reads, changes := 0, 0
			s := &nodeSight{
				host: "https://workload:6443",
				cacheRV: func(context.Context) (string, bool) {
					return cacheRV, cacheRV != "-"
				},
				serverRV: func(context.Context) (string, error) {
					rv := tc.serverRV[reads]
					reads++
					if rv == "err" {
						return "", errors.New("timeout")
					}
					return rv, nil
				},
				changed: func() { changes++ },
				log:     logr.Discard(),
			}
			for i, st := range tc.steps {
				cacheRV = st.cacheRV
				before := changes
				s.observe(context.Background(), st.probe)
				msg, unseen := s.unseen()
				if unseen != (st.unseen != "") || !strings.Contains(msg, st.unseen) {
					t.Errorf("step %d: unseen() = %q, %t; want a message with %q", i, msg, unseen, st.unseen)
				}
				if unseen && !strings.Contains(msg, "https://workload:6443") {
					t.Errorf("step %d: the message %q does not name the API server", i, msg)
				}
				if got := changes > before; got != st.changed {
					t.Errorf("step %d: changed = %t, want %t", i, got, st.changed)
				}
			}
			if reads != tc.serverRVs {
				t.Errorf("the server's resourceVersion was read %d times, want %d", reads, tc.serverRVs)
			}
		})
	}
	var local *nodeSight
	if msg, unseen := local.unseen(); unseen {
		t.Errorf("a linker whose Nodes are in the machines' cluster reports them unseen: %q", msg)
	}
}
