package plugin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/plugin"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/envtest"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/manager"
)

var (
	env        *envtest.Environment
	st         *stack.Stack
	k8s        client.Client
	kubeconfig string
	ctx        = context.Background()
)

func TestPlugin(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	RunSpecs(t, "kubectl-machine against a real API server")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	user, err := env.AddUser(ctrlenvtest.User{Name: "plugin-user", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	data, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, data, 0o600)).To(Succeed())
	st, err = stack.Start(env.Config, stack.Options{})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if st != nil {
		Expect(st.Stop()).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// kubectlMachine runs the plugin as `kubectl machine ARGS...` would.
func kubectlMachine(args ...string) (string, error) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	cmd := plugin.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String() + errOut.String(), err
}

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func runningMachine(ns, name string) (*v1beta1.Machine, string) {
	m := builder.Machine(ns, name).Build()
	Expect(k8s.Create(ctx, m)).To(Succeed())
	Eventually(func() string {
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(m), m)
		if m.Status.Phase != v1beta1.MachinePhaseRunning || m.Status.NodeRef == nil {
			return ""
		}
		return m.Status.NodeRef.Name
	}).ShouldNot(BeEmpty())
	return m, m.Status.NodeRef.Name
}

var _ = Describe("kubectl machine why", func() {
	It("shows phase, Node, owner, health check verdict, conditions and events on one screen", func() {
		ns := newNamespace()
		_, node := runningMachine(ns, "web-1")
		Eventually(func() (string, error) { return kubectlMachine("-n", ns, "why", "web-1") }).Should(ContainSubstring("InstanceCreated"))
		out, err := kubectlMachine("-n", ns, "why", "web-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Machine " + ns + "/web-1: Running"))
		Expect(out).To(ContainSubstring("Node: " + node + " (Ready=True)"))
		Expect(out).To(ContainSubstring("Owner: none (a standalone Machine: nothing replaces it if it is deleted)"))
		Expect(out).To(ContainSubstring("Health check: no MachineHealthCheck selects this machine"))
		Expect(out).To(MatchRegexp(`Ready\s+True\s+NodeReady`))
		Expect(out).To(MatchRegexp(`NodeLinked\s+True`))
		Expect(out).To(ContainSubstring("Recent events:"))
	})

	It("says which health check selects the machine", func() {
		ns := newNamespace()
		m := builder.Machine(ns, "checked").WithLabels(map[string]string{"pool": "a"}).Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		mhc := &v1beta1.MachineHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool-a"},
			Spec:       v1beta1.MachineHealthCheckSpec{Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}},
		}
		Expect(k8s.Create(ctx, mhc)).To(Succeed())
		out, err := kubectlMachine("-n", ns, "why", "checked")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Health check: pool-a: "))
	})

	It("fails with a hint when the machine does not exist", func() {
		ns := newNamespace()
		_, err := kubectlMachine("-n", ns, "why", "ghost")
		Expect(err).To(MatchError(ContainSubstring("machine " + ns + "/ghost not found (use -n to pick its namespace)")))
	})
})

var _ = Describe("kubectl machine drain-plan", func() {
	It("lists the pods a drain would evict, leave and be blocked on, and changes nothing", func() {
		ns := newNamespace()
		_, node := runningMachine(ns, "db-1")
		pod := func(name string, labels map[string]string, owner *metav1.OwnerReference) {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
				Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
			}
			if owner != nil {
				p.OwnerReferences = []metav1.OwnerReference{*owner}
			}
			Expect(k8s.Create(ctx, p)).To(Succeed())
		}
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}},
			},
		}
		Expect(k8s.Create(ctx, ds)).To(Succeed())
		pod("cache", map[string]string{"app": "cache"}, nil)
		pod("db", map[string]string{"app": "db"}, nil)
		pod("agent-x", map[string]string{"app": "agent"}, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: ds.UID, Controller: ptr(true)})
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		}
		Expect(k8s.Create(ctx, pdb)).To(Succeed())
		// No disruption controller runs here: write the budget's status as it would.
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
		Expect(k8s.Status().Update(ctx, pdb)).To(Succeed())

		out, err := kubectlMachine("-n", ns, "drain-plan", "db-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Draining Node " + node + " (machine " + ns + "/db-1) now would:"))
		Expect(out).To(ContainSubstring("  cordon the Node"))
		Expect(out).To(ContainSubstring("  evict 1 pod:\n    " + ns + "/cache"))
		Expect(out).To(ContainSubstring("  be blocked on 1 pod:\n    " + ns + "/db: "))
		Expect(out).To(ContainSubstring("PodDisruptionBudget " + ns + "/db"))
		Expect(out).To(MatchRegexp(`leave on the Node 1 pod:\n    ` + ns + `/agent-x: .*DaemonSet`))

		n := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
		Expect(n.Spec.Unschedulable).To(BeFalse(), "a plan does not cordon")
	})
})

func ptr[T any](v T) *T { return &v }

var _ = Describe("kubectl machine rollout", func() {
	It("lists a deployment's revisions and rolls back to the previous one", func() {
		ns := newNamespace()
		md := builder.MachineDeployment(ns, "web", 2).WithInstanceType("small").Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(func() string { out, _ := kubectlMachine("-n", ns, "rollout", "history", "web"); return out }).
			Should(MatchRegexp(`1 \(current\)\s+web-\S+\s+2\s`))

		// A providerSpec change is a new revision.
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"providerSpec":{"value":{"instanceType":"medium"}}}}}}`)))).To(Succeed())
		Eventually(func() string { out, _ := kubectlMachine("-n", ns, "rollout", "history", "web"); return out }).
			Should(And(MatchRegexp(`(?m)^1\s`), MatchRegexp(`2 \(current\)\s+web-\S+\s+\d+\s+\S+\s+\{"instanceType":"medium"\}`)))

		out, err := kubectlMachine("-n", ns, "rollout", "undo", "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`MachineDeployment ` + ns + `/web rolled back to revision 1 \(MachineSet web-\S+\)`))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(md), md)).To(Succeed())
		Expect(string(md.Spec.Template.Spec.ProviderSpec.Value.Raw)).To(MatchJSON(`{"instanceType":"small"}`))
		// The old set is brought back as the newest revision; no third MachineSet is made.
		Eventually(func() string { out, _ := kubectlMachine("-n", ns, "rollout", "history", "web"); return out }).
			Should(And(MatchRegexp(`3 \(current\)\s+web-\S+\s+\d+\s+\S+\s+\{"instanceType":"small"\}`), Not(MatchRegexp(`(?m)^1\s`))))

		_, err = kubectlMachine("-n", ns, "rollout", "undo", "web", "--to-revision", "9")
		Expect(err).To(MatchError(ContainSubstring("has no revision 9")))
	})
})
