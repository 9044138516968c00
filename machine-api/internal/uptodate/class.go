package uptodate

import (
	"maps"
	"slices"
	"strings"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Bounds of a MachineClassRecord: at most maxFields fields, each path at most maxPath bytes.
const (
	maxFields = 32
	maxPath   = 256
)

// node is one node of a JSON tree: its path, its parent's path, its depth (the root, spec, is 0)
// and the hash of its value.
type node struct {
	path, parent string
	depth        int
	hash         string
}

// tree returns every node of the class spec's JSON (objects are expanded, lists and scalars are
// leaves), parents before their children, children in key order.
func tree(spec *v1beta1.MachineClassSpec) []node {
	var out []node
	var walk func(path, parent string, depth int, v any)
	walk = func(path, parent string, depth int, v any) {
		out = append(out, node{path: path, parent: parent, depth: depth, hash: hashJSON(v)})
		if obj, ok := v.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				walk(boundedPath(join(path, k)), path, depth+1, obj[k])
			}
		}
	}
	walk("spec", "", 0, decode(spec))
	return out
}

// boundedPath keeps a path within maxPath bytes: a longer one is cut and ends with the hash of
// the whole path, so that two long paths stay apart.
func boundedPath(p string) string {
	if len(p) <= maxPath {
		return p
	}
	h := hashJSON(p)
	return strings.ToValidUTF8(p[:maxPath-len(h)-1], "") + "~" + h
}

// RecordClass returns the record of class a Machine keeps (status.machineClass): the spec's hash
// and the hashes of its nodes down to the deepest level at which there are at most maxFields of
// them. Deeper levels are covered by their ancestors' hashes: an edit there is named by the
// deepest recorded path above it.
func RecordClass(class *v1beta1.MachineClass) *v1beta1.MachineClassRecord {
	nodes := tree(&class.Spec)
	depth := 0
	for d := 1; ; d++ {
		n, deeper := 0, false
		for _, x := range nodes {
			if x.depth <= d {
				n++
			}
			if x.depth > d {
				deeper = true
			}
		}
		if n > maxFields {
			break
		}
		depth = d
		if !deeper {
			break
		}
	}
	rec := &v1beta1.MachineClassRecord{Name: class.Name, SpecHash: nodes[0].hash}
	for _, x := range nodes {
		if x.depth <= depth && x.depth > 0 {
			rec.Fields = append(rec.Fields, v1beta1.FieldHash{Path: x.path, Hash: x.hash})
		}
	}
	return rec
}

// ClassChanges returns the paths of class's spec that changed since rec was recorded, shallowest
// first: for a changed node whose children were recorded, the children that changed, were added
// or were removed; for one whose children were not recorded, the node itself. None when the spec
// hashes the same.
func ClassChanges(rec *v1beta1.MachineClassRecord, class *v1beta1.MachineClass) []string {
	if rec == nil || classSpecHash(class) == rec.SpecHash {
		return nil
	}
	nodes := tree(&class.Spec)
	recorded := make(map[string]string, len(rec.Fields)+1)
	for _, f := range rec.Fields {
		recorded[f.Path] = f.Hash
	}
	recorded["spec"] = rec.SpecHash
	current := make(map[string]bool, len(nodes))
	hasRecordedChild := map[string]bool{}
	for _, x := range nodes {
		current[x.path] = true
	}
	for _, f := range rec.Fields {
		hasRecordedChild[parentOf(f.Path, recorded)] = true
	}
	var out []string
	// descend marks the nodes whose children are examined: a recorded node that changed and has
	// recorded children.
	descend := map[string]bool{}
	for _, x := range nodes {
		if x.parent != "" && !descend[x.parent] {
			continue
		}
		h, ok := recorded[x.path]
		switch {
		case !ok:
			out = append(out, x.path) // added under a node whose children were recorded
		case h == x.hash:
		case hasRecordedChild[x.path] || x.parent == "":
			descend[x.path] = true // the root's children are always recorded (there are at most two)
		default:
			out = append(out, x.path)
		}
	}
	for _, f := range rec.Fields {
		if !current[f.Path] && descend[parentOf(f.Path, recorded)] {
			out = append(out, f.Path) // removed
		}
	}
	return out
}

// classSpecHash is the hash of class's spec, as a MachineClassRecord keeps it.
func classSpecHash(class *v1beta1.MachineClass) string { return hashJSON(decode(&class.Spec)) }

// parentOf returns the longest recorded path that is a proper prefix of p followed by . or [
// (spec when none is).
func parentOf(p string, recorded map[string]string) string {
	best := "spec"
	for q := range recorded {
		if len(q) > len(best) && len(q) < len(p) && strings.HasPrefix(p, q) && (p[len(q)] == '.' || p[len(q)] == '[') {
			best = q
		}
	}
	return best
}
