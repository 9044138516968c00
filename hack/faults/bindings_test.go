package faults

import (
	"strings"
	"testing"
	"time"
)

func TestBoundBeforeInitialization(t *testing.T) {
	gated := NodeRecord{Name: "db-1", UID: "n1", FirstRV: "100", GatedRV: "100", InitializedRV: "200"}
	stillGated := NodeRecord{Name: "db-2", UID: "n2", FirstRV: "110", GatedRV: "110"}
	ungated := NodeRecord{Name: "web-1", UID: "n3", FirstRV: "120"}
	// db-3 registered twice: gated and initialized at 300, deleted, then gated again at 500.
	first := NodeRecord{Name: "db-3", UID: "n4", FirstRV: "250", GatedRV: "250", InitializedRV: "300", Gone: time.Now()}
	second := NodeRecord{Name: "db-3", UID: "n5", FirstRV: "500", GatedRV: "500"}
	ours := []NodeRecord{gated, stillGated, ungated, first, second}
	all := append([]NodeRecord{{Name: "other", UID: "n6", FirstRV: "10", GatedRV: "10"}}, ours...)
	bind := func(name, node, rv string) Binding { return Binding{Namespace: "ns", Name: name, Node: node, RV: rv} }

	for name, tc := range map[string]struct {
		binding Binding
		exempt  map[string]string
		want    string // a substring of the one finding; "" for none
	}{
		"after initialization":                      {binding: bind("p", "db-1", "201")},
		"before initialization":                     {binding: bind("p", "db-1", "199"), want: "removed at resourceVersion 200"},
		"more digits is later":                      {binding: bind("p", "db-1", "1000")},
		"to a Node still gated":                     {binding: bind("p", "db-2", "900"), want: "still carries it"},
		"to a Node registered without the taint":    {binding: bind("p", "web-1", "121")},
		"to a Node not of the scenario":             {binding: bind("p", "other", "11")},
		"to a name no Node had yet, then gated":     {binding: bind("p", "db-1", "50"), want: "before its initialization"},
		"exempt":                                    {binding: bind("p", "db-1", "150"), exempt: map[string]string{"ns/p": "on purpose"}},
		"to the first of two Nodes, after its init": {binding: bind("p", "db-3", "400")},
		"to the second of two Nodes, still gated":   {binding: bind("p", "db-3", "600"), want: "still carries it"},
		"to the first of two Nodes, before init":    {binding: bind("p", "db-3", "260"), want: "was removed at resourceVersion 300"},
		"not a resourceVersion":                     {binding: bind("p", "db-1", "x1"), want: "comparing resourceVersions"},
	} {
		t.Run(name, func(t *testing.T) {
			got := BoundBeforeInitialization(ours, all, []Binding{tc.binding}, tc.exempt)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("findings %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("findings %q, want one with %q", got, tc.want)
			}
		})
	}
}
