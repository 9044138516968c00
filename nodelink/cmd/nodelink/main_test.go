package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"machineapi.dev/nodelink/internal/test/builder"
	"machineapi.dev/nodelink/internal/test/envtest"
)

func TestParseFlags(t *testing.T) {
	tests := map[string]struct {
		args  []string
		check func(t *testing.T, c config)
		err   bool
	}{
		"defaults link machine-api's Machines with its annotations": {
			check: func(t *testing.T, c config) {
				if c.gvk != "machine.machineapi.dev/v1beta1/Machine" || c.annotationPrefix != "machine.machineapi.dev" ||
					c.paths.Labels != "spec.metadata.labels" || c.paths.Taints != "spec.taints" || c.leaderElectionID != "nodelink.machine.machineapi.dev" ||
					c.pausedAnnotation != "machine.machineapi.dev/paused" {
					t.Errorf("unexpected defaults: %+v", c)
				}
			},
		},
		"Cluster API's Machines": {
			args: []string{
				"--machine-gvk=cluster.x-k8s.io/v1beta1/Machine", "--node-ref-fields=apiVersion,kind,name,uid",
				"--labels-path=metadata.labels", "--label-prefixes=node-role.kubernetes.io/,node.cluster.x-k8s.io/",
				"--annotations-path=", "--taints-path=", "--node-kubeconfig=/tmp/workload.kubeconfig",
			},
			check: func(t *testing.T, c config) {
				if c.annotationPrefix != "cluster.x-k8s.io" || c.pausedAnnotation != "cluster.x-k8s.io/paused" || c.paths.Annotations != "" || c.paths.Taints != "" ||
					!slices.Equal(c.paths.LabelPrefixes, []string{"node-role.kubernetes.io/", "node.cluster.x-k8s.io/"}) ||
					!slices.Equal(c.paths.NodeRefFields, []string{"apiVersion", "kind", "name", "uid"}) || c.nodeKubeconfig == "" {
					t.Errorf("unexpected config: %+v", c)
				}
			},
		},
		"no paused annotation": {
			args: []string{"--machine-gvk=machine.openshift.io/v1beta1/Machine", "--paused-annotation=-"},
			check: func(t *testing.T, c config) {
				if c.pausedAnnotation != "" || c.annotationPrefix != "machine.openshift.io" {
					t.Errorf("unexpected config: %+v", c)
				}
			},
		},
		"bad GVK":      {args: []string{"--machine-gvk=Machine"}, err: true},
		"bad selector": {args: []string{"--machine-selector=a in (b"}, err: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("nodelink", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c, err := parseFlags(fs, tc.args)
			if (err != nil) != tc.err {
				t.Fatalf("parseFlags() error = %v, want error %v", err, tc.err)
			}
			if tc.check != nil && err == nil {
				tc.check(t, c)
			}
		})
	}
}

// TestRunLinksClusterAPIMachines runs the binary's wiring against a real API server with a Cluster
// API shaped Machine CRD, Nodes read through --node-kubeconfig: the Machine is linked unchanged.
func TestRunLinksClusterAPIMachines(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)

	fs := flag.NewFlagSet("nodelink", flag.ContinueOnError)
	c, err := parseFlags(fs, []string{
		"--machine-gvk=cluster.x-k8s.io/v1beta1/Machine", "--node-ref-fields=apiVersion,kind,name,uid",
		"--labels-path=metadata.labels", "--label-prefixes=node-role.kubernetes.io/",
		"--annotations-path=", "--taints-path=", "--node-kubeconfig=" + kubeconfig,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, c) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run() = %v after cancel, want nil", err)
		}
	})

	cl, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "capi"}}
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	machine := builder.CAPIMachine("capi", "m1", "c1").WithProviderID("aws:///i-1").WithLabel("node-role.kubernetes.io/worker", "").Build()
	if err := envtest.CreateWithStatus(ctx, cl, machine); err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, builder.Node("n1").WithProviderID("aws:///i-1").Build()); err != nil {
		t.Fatal(err)
	}
	g := gomega.NewWithT(t)
	g.Eventually(func(g gomega.Gomega) string {
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(machine), machine)).To(gomega.Succeed())
		name, _, _ := unstructured.NestedString(machine.Object, "status", "nodeRef", "name")
		return name
	}, 30*time.Second, 100*time.Millisecond).Should(gomega.Equal("n1"))
	g.Eventually(func(g gomega.Gomega) map[string]string {
		var n corev1.Node
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: "n1"}, &n)).To(gomega.Succeed())
		return n.Labels
	}, 30*time.Second, 100*time.Millisecond).Should(gomega.HaveKey("node-role.kubernetes.io/worker"))
}
