package nodelink_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"machineapi.dev/nodelink"
)

// An unstructured adapter reads any machine-like CRD by field paths; here Cluster API's Machine,
// whose Node labels come from the Machine's own labels with node-role prefixes.
func ExampleNewUnstructuredAdapter() {
	gvk, _ := nodelink.ParseGVK("cluster.x-k8s.io/v1beta1/Machine")
	adapter, err := nodelink.NewUnstructuredAdapter(gvk, nodelink.FieldPaths{
		ProviderID:    "spec.providerID",
		Addresses:     "status.addresses",
		NodeRef:       "status.nodeRef",
		Conditions:    "status.conditions",
		Labels:        "metadata.labels",
		LabelPrefixes: []string{"node-role.kubernetes.io/"},
	})
	if err != nil {
		panic(err)
	}
	m := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "m1", "labels": map[string]any{
			"node-role.kubernetes.io/worker": "", "cluster.x-k8s.io/cluster-name": "prod",
		}},
		"spec":   map[string]any{"providerID": "aws:///us-east-1a/i-0123"},
		"status": map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": "10.0.0.7"}}},
	}}
	fmt.Println(adapter.ProviderID(m))
	fmt.Println(adapter.InternalIPs(m))
	fmt.Println(adapter.NodeMetadata(m).Labels)

	adapter.SetNodeRef(m, nodelink.NodeRef{Name: "ip-10-0-0-7", UID: "0f1e"})
	ref, _, _ := unstructured.NestedMap(m.Object, "status", "nodeRef")
	fmt.Println(ref)
	// Output:
	// aws:///us-east-1a/i-0123
	// [10.0.0.7]
	// map[node-role.kubernetes.io/worker:]
	// map[kind:Node name:ip-10-0-0-7 uid:0f1e]
}
