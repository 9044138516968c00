package apivalidation

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func readCRD(t *testing.T, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	path := filepath.Join("..", "..", "config", "crd", "bases", "machine.machineapi.dev_"+plural+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the CRD for %s must exist (run make generate): %v", plural, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// schemaHas reports whether a dotted field path exists in a version's schema.
func schemaHas(v apiextensionsv1.CustomResourceDefinitionVersion, path string) bool {
	s := v.Schema.OpenAPIV3Schema
	for _, part := range strings.Split(path, ".") {
		if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
			s = s.Items.Schema
		}
		next, ok := s.Properties[part]
		if !ok {
			return false
		}
		s = &next
	}
	return true
}

// TestAutoscalerContract protects what the unmodified cluster-autoscaler (clusterapi provider
// with CAPI_GROUP=machine.machineapi.dev) reads: kinds, plurals, the served version, field
// paths and the scale subresource of sets and deployments.
func TestAutoscalerContract(t *testing.T) {
	tests := map[string]struct {
		kind     string
		fields   []string
		scale    bool
		noStatus bool
	}{
		"machines": {
			kind: "Machine",
			fields: []string{
				"spec.providerID", "spec.providerSpec.value", "spec.providerSpec.machineClass.name",
				"spec.metadata.labels", "spec.metadata.annotations", "spec.taints",
				"spec.versions.kubelet", "spec.versions.controlPlane",
				"spec.lifecycleHooks.preDrain.name", "spec.lifecycleHooks.preDrain.owner",
				"spec.lifecycleHooks.preTerminate.name", "spec.lifecycleHooks.preTerminate.owner",
				"spec.deletion.nodeDrainTimeoutSeconds", "spec.deletion.nodeVolumeDetachTimeoutSeconds",
				"spec.deletion.nodeDeletionTimeoutSeconds",
				"status.phase", "status.nodeRef.kind", "status.nodeRef.name", "status.nodeRef.uid",
				"status.addresses.type", "status.addresses.address", "status.providerStatus",
				"status.versions.kubelet", "status.failureReason", "status.failureMessage",
				"status.conditions", "status.observedGeneration", "status.lastUpdated",
			},
		},
		"machinesets": {
			kind:  "MachineSet",
			scale: true,
			fields: []string{
				"spec.replicas", "spec.selector.matchLabels", "spec.selector.matchExpressions",
				"spec.deletePolicy", "spec.minReadySeconds", "spec.template.metadata.labels",
				"spec.template.spec.providerSpec", "spec.template.spec.metadata.labels",
				"status.replicas", "status.fullyLabeledReplicas", "status.readyReplicas",
				"status.availableReplicas", "status.observedGeneration", "status.selector", "status.conditions",
			},
		},
		"machinedeployments": {
			kind:  "MachineDeployment",
			scale: true,
			fields: []string{
				"spec.replicas", "spec.selector.matchLabels", "spec.template.spec.providerSpec",
				"spec.strategy.type", "spec.strategy.rollingUpdate.maxSurge",
				"spec.strategy.rollingUpdate.maxUnavailable", "spec.strategy.rollingUpdate.deletePolicy",
				"spec.minReadySeconds", "spec.revisionHistoryLimit", "spec.paused", "spec.progressDeadlineSeconds",
				"status.replicas", "status.updatedReplicas", "status.readyReplicas", "status.availableReplicas",
				"status.unavailableReplicas", "status.observedGeneration", "status.selector", "status.conditions",
			},
		},
		"machinehealthchecks": {
			kind: "MachineHealthCheck",
			fields: []string{
				"spec.selector", "spec.unhealthyConditions.type", "spec.unhealthyConditions.status",
				"spec.unhealthyConditions.timeoutSeconds", "spec.nodeStartupTimeoutSeconds",
				"spec.maxUnhealthy", "spec.unhealthyRange", "spec.maxInFlight", "spec.remediationTemplate",
				"status.expectedMachines", "status.currentHealthy", "status.remediationsAllowed",
				"status.targets", "status.conditions",
			},
		},
		"machineclasses": {
			kind:     "MachineClass",
			noStatus: true,
			fields:   []string{"spec.providerSpec", "spec.nodeTemplate.capacity", "spec.nodeTemplate.labels", "spec.nodeTemplate.taints"},
		},
	}
	for plural, tc := range tests {
		t.Run(plural, func(t *testing.T) {
			crd := readCRD(t, plural)
			if crd.Spec.Group != "machine.machineapi.dev" || crd.Spec.Names.Plural != plural || crd.Spec.Names.Kind != tc.kind {
				t.Fatalf("group/plural/kind = %s/%s/%s, want machine.machineapi.dev/%s/%s",
					crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Names.Kind, plural, tc.kind)
			}
			if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
				t.Errorf("scope = %s, want Namespaced", crd.Spec.Scope)
			}
			if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1beta1" || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
				t.Fatalf("want exactly v1beta1, served and stored; got %+v", crd.Spec.Versions)
			}
			v := crd.Spec.Versions[0]
			for _, f := range tc.fields {
				if !schemaHas(v, f) {
					t.Errorf("field %s is missing from the schema", f)
				}
			}
			if !slices.Contains(crd.Spec.Names.Categories, "machineapi") {
				t.Errorf("categories = %v, want machineapi", crd.Spec.Names.Categories)
			}
			if hasStatus := v.Subresources != nil && v.Subresources.Status != nil; hasStatus == tc.noStatus {
				t.Errorf("status subresource present = %v, want %v", hasStatus, !tc.noStatus)
			}
			scale := v.Subresources != nil && v.Subresources.Scale != nil
			if scale != tc.scale {
				t.Fatalf("scale subresource present = %v, want %v", scale, tc.scale)
			}
			if tc.scale {
				s := v.Subresources.Scale
				if s.SpecReplicasPath != ".spec.replicas" || s.StatusReplicasPath != ".status.replicas" ||
					s.LabelSelectorPath == nil || *s.LabelSelectorPath != ".status.selector" {
					t.Errorf("scale paths = %s %s %v, want .spec.replicas .status.replicas .status.selector",
						s.SpecReplicasPath, s.StatusReplicasPath, s.LabelSelectorPath)
				}
			}
		})
	}
}

func TestShortNames(t *testing.T) {
	want := map[string]string{
		"machines": "ma", "machinesets": "ms", "machinedeployments": "md",
		"machinehealthchecks": "mhc", "machineclasses": "mclass",
	}
	for plural, short := range want {
		if crd := readCRD(t, plural); !slices.Contains(crd.Spec.Names.ShortNames, short) {
			t.Errorf("%s: short names %v, want %s", plural, crd.Spec.Names.ShortNames, short)
		}
	}
}
