package uptodate

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Change is one field that differs between what a Machine has and what it should have.
type Change struct {
	// Path of the field, for example spec.providerSpec.value.instanceType.
	Path string
	// Old and New are the values as compact JSON (shortened to maxValue runes); "" when the field
	// is absent on that side, or unknown (a MachineClass change: only the path is known).
	Old, New string
}

// String renders the change as `path: old → new`, or the path alone when neither value is known.
func (c Change) String() string {
	if c.Old == "" && c.New == "" {
		return c.Path
	}
	return fmt.Sprintf("%s: %s → %s", c.Path, orNone(c.Old), orNone(c.New))
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// maxValue bounds a value shown in a Change.
const maxValue = 48

// diff returns the leaves in which a and b (any two values that marshal to JSON objects) differ,
// by path under prefix, sorted by path. Objects are compared key by key; lists and scalars whole.
func diff(prefix string, a, b any) []Change {
	var out []Change
	diffValues(prefix, decode(a), decode(b), &out)
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// decode turns v into its generic JSON form (maps, slices, strings, float64, bools, nil).
func decode(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return prune(out)
}

// prune drops empty objects and lists and null values, so that an omitted field and an empty one
// compare equal (the API server does not tell them apart either for the fields compared here).
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p := prune(e); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		if len(t) == 0 {
			return nil
		}
		return t
	case []any:
		if len(t) == 0 {
			return nil
		}
		return t
	}
	return v
}

func diffValues(path string, a, b any, out *[]Change) {
	am, aObj := a.(map[string]any)
	bm, bObj := b.(map[string]any)
	// An object against an absent one is compared key by key too, so each leaf is named.
	if (aObj || a == nil) && (bObj || b == nil) && (aObj || bObj) {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			diffValues(join(path, k), am[k], bm[k], out)
		}
		return
	}
	if reflect.DeepEqual(a, b) {
		return
	}
	*out = append(*out, Change{Path: path, Old: render(a), New: render(b)})
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// join appends key to path: .key for an identifier, ["key"] otherwise (label keys with dots and
// slashes).
func join(path, key string) string {
	if identifier.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	q, _ := json.Marshal(key)
	return path + "[" + string(q) + "]"
}

// render is v as compact JSON, shortened to maxValue runes; "" for nil.
func render(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return shorten(string(b), maxValue)
}

// shorten cuts s to at most n runes, marking the cut with an ellipsis.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
