package uptodate

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestClassChanges(t *testing.T) {
	withNodeTemplate := func(c *v1beta1.MachineClass, labels map[string]string) *v1beta1.MachineClass {
		c.Spec.NodeTemplate = &v1beta1.NodeTemplate{Labels: labels,
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
		return c
	}
	manyKeys := func(n int, changed string) string {
		var parts []string
		for i := range n {
			v := "1"
			if fmt.Sprintf("k%02d", i) == changed {
				v = "2"
			}
			parts = append(parts, fmt.Sprintf(`"k%02d":{"deep":{"v":%s}}`, i, v))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	cases := map[string]struct {
		before, after *v1beta1.MachineClass
		want          string
	}{
		"unchanged": {
			before: machineClass("c", `{"image":"v1","instanceType":"small"}`),
			after:  machineClass("c", `{"instanceType": "small", "image": "v1"}`),
		},
		"a changed field": {
			before: machineClass("c", `{"image":"v1","instanceType":"small"}`),
			after:  machineClass("c", `{"image":"v2","instanceType":"small"}`),
			want:   "spec.providerSpec.image",
		},
		"an added and a removed field": {
			before: machineClass("c", `{"image":"v1","zone":"a"}`),
			after:  machineClass("c", `{"image":"v1","subnet":"s"}`),
			want:   "spec.providerSpec.subnet, spec.providerSpec.zone",
		},
		"a nested change": {
			before: machineClass("c", `{"disk":{"size":10,"type":"ssd"}}`),
			after:  machineClass("c", `{"disk":{"size":20,"type":"ssd"}}`),
			want:   "spec.providerSpec.disk.size",
		},
		"a node label whose key is not an identifier": {
			before: withNodeTemplate(machineClass("c", `{}`), map[string]string{"node-role.kubernetes.io/worker": ""}),
			after:  withNodeTemplate(machineClass("c", `{}`), map[string]string{"node-role.kubernetes.io/worker": "", "example.com/gpu": "true"}),
			want:   `spec.nodeTemplate.labels["example.com/gpu"]`,
		},
		"a nodeTemplate added": {
			before: machineClass("c", `{}`),
			after:  withNodeTemplate(machineClass("c", `{}`), nil),
			want:   "spec.nodeTemplate",
		},
		"a change deeper than recorded is named by its deepest recorded ancestor": {
			before: machineClass("c", manyKeys(40, "")),
			after:  machineClass("c", manyKeys(40, "k07")),
			want:   "spec.providerSpec",
		},
		"fewer keys keep a deeper record": {
			before: machineClass("c", manyKeys(10, "")),
			after:  machineClass("c", manyKeys(10, "k07")),
			want:   "spec.providerSpec.k07.deep.v",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := RecordClass(tc.before)
			if len(rec.Fields) > maxFields {
				t.Fatalf("%d fields recorded, more than %d", len(rec.Fields), maxFields)
			}
			if got := strings.Join(ClassChanges(rec, tc.after), ", "); got != tc.want {
				t.Fatalf("changes %q, want %q (recorded %+v)", got, tc.want, rec.Fields)
			}
		})
	}
}

// TestRecordClassIsBounded: however large the class, the record holds at most maxFields fields of
// paths at most maxPath bytes, and still tells an edit.
func TestRecordClassIsBounded(t *testing.T) {
	long := strings.Repeat("k", 400)
	class := machineClass("c", fmt.Sprintf(`{%q:{%q:1}}`, long, long))
	rec := RecordClass(class)
	for _, f := range rec.Fields {
		if len(f.Path) > maxPath {
			t.Fatalf("path of %d bytes recorded: %s", len(f.Path), f.Path)
		}
	}
	edited := machineClass("c", fmt.Sprintf(`{%q:{%q:2}}`, long, long))
	if got := ClassChanges(rec, edited); len(got) != 1 || len(got[0]) > maxPath {
		t.Fatalf("changes %v", got)
	}
	var many []string
	for i := range 500 {
		many = append(many, fmt.Sprintf(`"k%03d":%d`, i, i))
	}
	rec = RecordClass(machineClass("c", "{"+strings.Join(many, ",")+"}"))
	if len(rec.Fields) > maxFields || len(rec.Fields) == 0 {
		t.Fatalf("%d fields recorded for a providerSpec of 500 keys", len(rec.Fields))
	}
}
