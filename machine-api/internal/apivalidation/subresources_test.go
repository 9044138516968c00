package apivalidation

import (
	"encoding/json"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// scales returns the client kubectl scale and the cluster-autoscaler use.
func scales(ns string) scale.ScaleInterface {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	sc, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	Expect(err).NotTo(HaveOccurred())
	return sc.Scales(ns)
}

var _ = Describe("The scale subresource", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	for _, tc := range []struct{ kind, resource string }{{"MachineSet", "machinesets"}, {"MachineDeployment", "machinedeployments"}} {
		It("scales a "+tc.kind+" like kubectl scale and like a merge patch of the scale object", func() {
			o := newObject(tc.kind, ns, "pool")
			Expect(k8s.Create(ctx, o)).To(Succeed())
			// The controller publishes the selector in string form; do it by hand here.
			Expect(k8s.Status().Patch(ctx, o, client.RawPatch(types.MergePatchType,
				[]byte(`{"status":{"replicas":1,"selector":"pool=workers"}}`)))).To(Succeed())

			gr := schema.GroupResource{Group: v1beta1.GroupVersion.Group, Resource: tc.resource}
			s, err := scales(ns).Get(ctx, gr, "pool", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Spec.Replicas).To(Equal(int32(1)))
			Expect(s.Status.Replicas).To(Equal(int32(1)))
			Expect(s.Status.Selector).To(Equal("pool=workers"))

			// kubectl scale --replicas=3 updates the scale object.
			s.Spec.Replicas = 3
			_, err = scales(ns).Update(ctx, gr, s, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(replicasOf(tc.kind, ns, "pool")).To(Equal(int32(3)))

			// Others merge-patch it.
			_, err = scales(ns).Patch(ctx, v1beta1.GroupVersion.WithResource(tc.resource), "pool", types.MergePatchType,
				[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(replicasOf(tc.kind, ns, "pool")).To(Equal(int32(5)))

			// Scaling below zero is refused by the same schema.
			s, err = scales(ns).Get(ctx, gr, "pool", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			s.Spec.Replicas = -1
			_, err = scales(ns).Update(ctx, gr, s, metav1.UpdateOptions{})
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("spec.replicas"))
		})
	}
})

func replicasOf(kind, ns, name string) int32 {
	key := types.NamespacedName{Namespace: ns, Name: name}
	if kind == "MachineSet" {
		ms := &v1beta1.MachineSet{}
		Expect(k8s.Get(ctx, key, ms)).To(Succeed())
		return *ms.Spec.Replicas
	}
	md := &v1beta1.MachineDeployment{}
	Expect(k8s.Get(ctx, key, md)).To(Succeed())
	return *md.Spec.Replicas
}

var _ = Describe("kubectl get", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// table asks the API server for the Table kubectl prints.
	table := func(resource string, wide bool) *metav1.Table {
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		req := cs.RESTClient().Get().AbsPath("/apis/machine.machineapi.dev/v1beta1/namespaces/"+ns+"/"+resource).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if wide {
			req = req.Param("includeObject", "None")
		}
		raw, err := req.DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		t := &metav1.Table{}
		Expect(json.Unmarshal(raw, t)).To(Succeed())
		return t
	}
	columns := func(t *metav1.Table, maxPriority int32) []string {
		var names []string
		for _, c := range t.ColumnDefinitions {
			if c.Priority <= maxPriority {
				names = append(names, c.Name)
			}
		}
		return names
	}

	It("shows a Machine's phase, provider ID, node and version, and its IP and failure reason with -o wide", func() {
		m := newObject("Machine", ns, "web-1")
		set(m.Object, "spec.providerID", "sim:///web-1")
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Expect(k8s.Status().Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Running",
			"nodeRef":{"kind":"Node","name":"node-a"},
			"addresses":[{"type":"Hostname","address":"web-1"},{"type":"InternalIP","address":"10.1.2.3"}]}}`)))).To(Succeed())

		t := table("machines", false)
		Expect(columns(t, 0)).To(Equal([]string{"Name", "Phase", "ProviderID", "Node", "Version", "Age"}))
		Expect(columns(t, 1)).To(ContainElements("InternalIP", "Reason", "UpToDate"))
		Expect(t.Rows).To(HaveLen(1))
		cells := t.Rows[0].Cells
		Expect(cells[0:5]).To(Equal([]any{"web-1", "Running", "sim:///web-1", "node-a", "v1.37.2"}))
		Expect(cells).To(ContainElement("10.1.2.3"), "the wide InternalIP column picks the InternalIP address")
	})

	It("shows desired, current, ready and available for sets and deployments, and updated for deployments", func() {
		Expect(k8s.Create(ctx, newObject("MachineSet", ns, "s"))).To(Succeed())
		Expect(k8s.Create(ctx, newObject("MachineDeployment", ns, "d"))).To(Succeed())
		Expect(columns(table("machinesets", false), 0)).To(Equal([]string{"Name", "Desired", "Current", "Ready", "Available", "Age"}))
		Expect(columns(table("machinedeployments", false), 0)).To(Equal([]string{"Name", "Desired", "Current", "Ready", "Updated", "Available", "Age"}))
	})

	It("shows upToDateReplicas of sets and deployments, and a Machine's UpToDate condition, with -o wide", func() {
		s := newObject("MachineSet", ns, "s")
		d := newObject("MachineDeployment", ns, "d")
		m := newObject("Machine", ns, "m")
		for _, o := range []*unstructured.Unstructured{s, d, m} {
			Expect(k8s.Create(ctx, o)).To(Succeed())
		}
		Expect(k8s.Status().Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(`{"status":{"replicas":3,"upToDateReplicas":2}}`)))).To(Succeed())
		Expect(k8s.Status().Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"status":{"replicas":3,"upToDateReplicas":1}}`)))).To(Succeed())
		Expect(k8s.Status().Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"status":{"conditions":[
			{"type":"UpToDate","status":"False","reason":"TemplateChanged","message":"m","lastTransitionTime":"2026-05-04T12:00:00Z"}]}}`)))).To(Succeed())
		for resource, want := range map[string]any{"machinesets": int64(2), "machinedeployments": int64(1), "machines": "False"} {
			t := table(resource, true)
			Expect(columns(t, 0)).NotTo(ContainElement("UpToDate"), "%s: only with -o wide", resource)
			i := slices.IndexFunc(t.ColumnDefinitions, func(c metav1.TableColumnDefinition) bool { return c.Name == "UpToDate" })
			Expect(i).To(BeNumerically(">=", 0), resource)
			Expect(t.Rows[0].Cells[i]).To(BeEquivalentTo(want), resource)
		}
	})

	It("shows expected, healthy and allowed remediations for health checks", func() {
		Expect(k8s.Create(ctx, newObject("MachineHealthCheck", ns, "h"))).To(Succeed())
		Expect(columns(table("machinehealthchecks", false), 0)).To(Equal([]string{"Name", "Expected", "Healthy", "RemediationsAllowed", "Age"}))
	})

	It("shows behavior and order for drain rules, and the selectors with -o wide", func() {
		Expect(k8s.Create(ctx, newObject("MachineDrainRule", ns, "r"))).To(Succeed())
		t := table("machinedrainrules", false)
		Expect(columns(t, 0)).To(Equal([]string{"Name", "Behavior", "Order", "Age"}))
		Expect(columns(t, 1)).To(Equal([]string{"Name", "Behavior", "Order", "Age", "Machines", "Pods"}))
		Expect(t.Rows).To(HaveLen(1))
		Expect(t.Rows[0].Cells[0:3]).To(Equal([]any{"r", "Drain", float64(10)}))
		Expect(t.Rows[0].Cells[4:6]).To(Equal([]any{`{"matchLabels":{"pool":"workers"}}`, `{"matchLabels":{"app":"db"}}`}))
	})

	It("lists every kind under kubectl get machineapi, with its short name", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		list, err := dc.ServerResourcesForGroupVersion("machine.machineapi.dev/v1beta1")
		Expect(err).NotTo(HaveOccurred())
		shortNames := map[string][]string{}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") { // skip subresources such as machines/status
				Expect(r.Categories).To(ContainElement("machineapi"), r.Name)
				shortNames[r.Name] = r.ShortNames
			}
		}
		Expect(shortNames).To(Equal(map[string][]string{
			"machines": {"ma"}, "machinesets": {"ms"}, "machinedeployments": {"md"},
			"machinehealthchecks": {"mhc"}, "machineclasses": {"mclass"}, "machinedrainrules": {"mdr"},
		}))
	})
})
