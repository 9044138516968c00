package machinehealthcheck

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestNewRequest protects the shape of an external remediation request: kind minus Template,
// named after and owned by the Machine, spec and metadata from spec.template.
func TestNewRequest(t *testing.T) {
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "remediation.example.com/v1",
		"kind":       "RebootTemplate",
		"metadata":   map[string]any{"name": "reboot", "namespace": "ns"},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "infra"}},
			"spec":     map[string]any{"strategy": "hard", "retries": int64(3)},
		}},
	}}
	m := healthyTarget("web-1").machine
	req, err := newRequest(tmpl, m)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetKind() != "Reboot" || req.GetAPIVersion() != "remediation.example.com/v1" ||
		req.GetName() != "web-1" || req.GetNamespace() != "ns" || req.GetLabels()["team"] != "infra" {
		t.Errorf("request metadata: %v", req.Object)
	}
	spec, _, _ := unstructured.NestedMap(req.Object, "spec")
	if !equality.Semantic.DeepEqual(spec, map[string]any{"strategy": "hard", "retries": int64(3)}) {
		t.Errorf("spec = %v", spec)
	}
	owners := req.GetOwnerReferences()
	if len(owners) != 1 || owners[0].Kind != "Machine" || owners[0].UID != m.UID || owners[0].APIVersion != v1beta1.GroupVersion.String() {
		t.Errorf("owners = %+v", owners)
	}
}

// TestRequestGVK protects the template kind rule: it must end in Template.
func TestRequestGVK(t *testing.T) {
	tests := map[string]struct {
		ref     v1beta1.RemediationTemplateReference
		kind    string
		wantErr bool
	}{
		"Template suffix removed": {ref: v1beta1.RemediationTemplateReference{APIVersion: "x.io/v1", Kind: "RebootTemplate"}, kind: "Reboot"},
		"no Template suffix":      {ref: v1beta1.RemediationTemplateReference{APIVersion: "x.io/v1", Kind: "Reboot"}, wantErr: true},
		"only Template":           {ref: v1beta1.RemediationTemplateReference{APIVersion: "x.io/v1", Kind: "Template"}, wantErr: true},
		"a malformed apiVersion":  {ref: v1beta1.RemediationTemplateReference{APIVersion: "a/b/c", Kind: "RebootTemplate"}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gvk, err := requestGVK(&tc.ref)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %t", err, tc.wantErr)
			}
			if err == nil && gvk.Kind != tc.kind {
				t.Errorf("kind = %s, want %s", gvk.Kind, tc.kind)
			}
		})
	}
}
