/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package nodelink_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
)

var capiGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}

// capiPaths are the field paths of Cluster API's v1beta1 Machine, as cmd/nodelink's flags would
// give them.
func capiPaths() nodelink.FieldPaths {
	return nodelink.FieldPaths{
		ProviderID:    "spec.providerID",
		Addresses:     "status.addresses",
		NodeRef:       "status.nodeRef",
		NodeRefFields: []string{"apiVersion", "kind", "name", "uid"},
		Conditions:    "status.conditions",
		Labels:        "metadata.labels",
		LabelPrefixes: []string{"node-role.kubernetes.io/", "node-restriction.kubernetes.io/", "node.cluster.x-k8s.io/"},
	}
}

var _ = Describe("Linking Cluster API shaped Machines unchanged (unstructured adapter)", func() {
	It("links by providerID, writes a Cluster API nodeRef and condition, keeps Cluster API's conditions", func() {
		ns, name, node, id := newNamespace(), unique("capi"), unique("node"), "aws:///"+unique("i")
		create(builder.CAPIMachine(ns, name, "c1").WithProviderID(id).WithInternalIP(uniqueIP()).
			WithLabel("node-role.kubernetes.io/worker", "").WithLabel("not-for-the-node", "x").
			WithCondition("BootstrapReady", "False", "Warning", "WaitingForDataSecret").Build())
		create(builder.Node(node).WithProviderID(id).Build())

		get := func(g Gomega) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(capiGVK)
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
			return u
		}
		uid := string(getNode(node)(Default).UID)
		Eventually(func(g Gomega) map[string]any {
			ref, _, _ := unstructured.NestedMap(get(g).Object, "status", "nodeRef")
			return ref
		}).Should(Equal(map[string]any{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}))

		conds, _, _ := unstructured.NestedSlice(get(Default).Object, "status", "conditions")
		Expect(conds).To(ConsistOf(
			And(HaveKeyWithValue("type", "BootstrapReady"), HaveKeyWithValue("severity", "Warning"), HaveKeyWithValue("reason", "WaitingForDataSecret")),
			And(HaveKeyWithValue("type", nodelink.ConditionNodeLinked), HaveKeyWithValue("status", string(metav1.ConditionTrue)),
				HaveKeyWithValue("reason", nodelink.ReasonLinked), HaveKey("lastTransitionTime")),
		))
		Eventually(getNode(node)).Should(And(
			HaveField("Annotations", And(HaveKeyWithValue("cluster.x-k8s.io/machine", name), HaveKeyWithValue("cluster.x-k8s.io/cluster-namespace", ns),
				HaveKeyWithValue("cluster.x-k8s.io/labels-from-machine", "node-role.kubernetes.io/worker"))),
			HaveField("Labels", And(HaveKey("node-role.kubernetes.io/worker"), Not(HaveKey("not-for-the-node"))))))
	})

	It("reports a conflict by InternalIP with Cluster API's condition shape", func() {
		ns, m1, m2, node, ip := newNamespace(), unique("capi"), unique("capi"), unique("node"), uniqueIP()
		create(builder.CAPIMachine(ns, m1, "c1").WithInternalIP(ip).Build())
		create(builder.CAPIMachine(ns, m2, "c1").WithInternalIP(ip).Build())
		create(builder.Node(node).WithInternalIP(ip).Build())
		for _, name := range []string{m1, m2} {
			Eventually(func(g Gomega) []any {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(capiGVK)
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				return conds
			}).Should(ContainElement(And(HaveKeyWithValue("type", nodelink.ConditionNodeLinked),
				HaveKeyWithValue("reason", nodelink.ReasonMultipleMachinesMatch))))
		}
	})
})
