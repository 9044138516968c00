package libvirtprovider

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestAllocateIndex(t *testing.T) {
	const uid = types.UID("3f2a9c1e-7b4d-4c8e-9a1f-0123456789ab")
	first, ok := allocateIndex(nil, uid)
	if !ok || first < firstIndex || first > lastIndex {
		t.Fatalf("first index %d, %v", first, ok)
	}
	all := func(except ...int32) map[int32]bool {
		used := map[int32]bool{}
		for i := int32(firstIndex); i <= lastIndex; i++ {
			used[i] = true
		}
		for _, e := range except {
			delete(used, e)
		}
		return used
	}
	next := first%lastIndex + 1 // the one after first, wrapping from 254 to 1
	tests := map[string]struct {
		used map[int32]bool
		want int32
		ok   bool
	}{
		"nothing used: the UID's own index":     {used: map[int32]bool{}, want: first, ok: true},
		"the same answer again (deterministic)": {used: nil, want: first, ok: true},
		"its own taken: the next one":           {used: map[int32]bool{first: true}, want: next, ok: true},
		"one left anywhere: that one":           {used: all(42), want: 42, ok: true},
		"none left":                             {used: all(), ok: false},
		"indexes out of range do not matter":    {used: map[int32]bool{0: true, 255: true, 1000: true}, want: first, ok: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := allocateIndex(tc.used, uid)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("= %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
			if ok && tc.used[got] {
				t.Fatalf("handed out %d, which is in use", got)
			}
		})
	}
}

// TestAllocateIndexSpreads protects the reason allocation starts from the UID: Machines created
// one after the other do not all get the lowest free subnet, so a freed one is seldom reused at once.
func TestAllocateIndexSpreads(t *testing.T) {
	seen := map[int32]bool{}
	for _, uid := range []types.UID{"a0", "b1", "c2", "d3", "e4", "f5", "a6", "b7"} {
		i, _ := allocateIndex(nil, uid)
		seen[i] = true
	}
	if len(seen) < 6 {
		t.Errorf("8 UIDs started at only %d distinct indexes", len(seen))
	}
}
