package apivalidation

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/test/envtest"
)

// TestCRDNames protects the Cluster CRD's group, kind, plural, scope, short name and category.
func TestCRDNames(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "cluster.machineapi.dev_clusters.yaml"))
	if err != nil {
		t.Fatalf("the Cluster CRD must exist (run make generate): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	n := crd.Spec.Names
	if crd.Spec.Group != "cluster.machineapi.dev" || n.Kind != "Cluster" || n.Plural != "clusters" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("got %s %s/%s %s", crd.Spec.Group, n.Kind, n.Plural, crd.Spec.Scope)
	}
	if !slices.Contains(n.Categories, "machineapi") || !slices.Contains(n.ShortNames, "cl") {
		t.Errorf("categories %v, short names %v: want machineapi and cl", n.Categories, n.ShortNames)
	}
}

var (
	env *envtest.Environment
	k8s client.Client
	ctx = context.Background()
)

func TestClusterValidation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cluster.machineapi.dev API validation on a real API server")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtest.StartManagement()
	Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1beta1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

func validCluster(ns string) map[string]any {
	return map[string]any{
		"apiVersion": "cluster.machineapi.dev/v1beta1", "kind": "Cluster",
		"metadata": map[string]any{"name": "prod", "namespace": ns},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": "prod.example.com", "port": int64(6443)},
			"kubeconfigSecretRef":  map[string]any{"name": "prod-kubeconfig"},
			"workerPools": []any{map[string]any{
				"name":         "workers",
				"machineClass": map[string]any{"name": "small"},
			}},
		},
	}
}

func set(obj map[string]any, path string, value any) {
	parts := strings.Split(path, ".")
	cur := obj
	for _, p := range parts[:len(parts)-1] {
		switch next := cur[p].(type) {
		case map[string]any:
			cur = next
		case []any:
			cur = next[0].(map[string]any)
		default:
			m := map[string]any{}
			cur[p] = m
			cur = m
		}
	}
	cur[parts[len(parts)-1]] = value
}

var _ = Describe("A Cluster", func() {
	var ns string
	BeforeEach(func() {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-validation-"}}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		ns = n.Name
	})

	It("round-trips with its defaults: kubeconfig key value, pool replicas 1", func() {
		Expect(k8s.Create(ctx, &unstructured.Unstructured{Object: validCluster(ns)})).To(Succeed())
		got := &v1beta1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, got)).To(Succeed())
		Expect(got.Spec.KubeconfigSecretRef.Key).To(Equal("value"))
		Expect(*got.Spec.WorkerPools[0].Replicas).To(Equal(int32(1)))
		Expect(got.Spec.ControlPlaneEndpoint.Port).To(Equal(int32(6443)))
	})

	DescribeTable("is rejected, with the field named, and not stored",
		func(path string, value any, field, message string) {
			obj := validCluster(ns)
			set(obj, path, value)
			err := k8s.Create(ctx, &unstructured.Unstructured{Object: obj})
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(err.Error()).To(ContainSubstring(message))
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, &v1beta1.Cluster{}))).To(BeTrue())
		},
		Entry("a port out of range", "spec.controlPlaneEndpoint.port", int64(70000), "spec.controlPlaneEndpoint.port", "less than or equal to 65535"),
		Entry("an endpoint without host", "spec.controlPlaneEndpoint.host", "", "spec.controlPlaneEndpoint.host", "at least 1 chars long"),
		Entry("a kubeconfig reference without name", "spec.kubeconfigSecretRef.name", "", "spec.kubeconfigSecretRef.name", "at least 1 chars long"),
		Entry("a pool with both template and machineClass", "spec.workerPools.template",
			map[string]any{"spec": map[string]any{"providerSpec": map[string]any{"value": map[string]any{}}}},
			"spec.workerPools[0]", "set exactly one of template or machineClass"),
		Entry("a pool name that is not a DNS label", "spec.workerPools.name", "Workers_1", "spec.workerPools[0].name", "should match"),
		Entry("a negative pool size", "spec.workerPools.replicas", int64(-1), "spec.workerPools[0].replicas", "greater than or equal to 0"),
		Entry("a name too long for the labels and names it becomes", "metadata.name", strings.Repeat("c", 31), "metadata.name", "at most 30 characters"),
		Entry("a providerSpec that is not an object", "spec.providerSpec", "vpc=default", "spec.providerSpec", "must be of type object"),
	)
})
