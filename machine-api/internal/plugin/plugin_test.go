package plugin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"machineapi.dev/drain/testplane"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/plugin"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/envtest"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider/sim"
	"machineapi.dev/machine-api/reconcile/conditions"
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
	env, err = envtest.StartWith(envtest.Options{Controllers: testplane.DisruptionControllers})
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
	return m, runningFrom(m)
}

// runningFrom creates m and waits until it runs, returning its Node's name.
func runningFrom(m *v1beta1.Machine) string {
	Expect(k8s.Create(ctx, m)).To(Succeed())
	Eventually(func() string {
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(m), m)
		if m.Status.Phase != v1beta1.MachinePhaseRunning || m.Status.NodeRef == nil {
			return ""
		}
		return m.Status.NodeRef.Name
	}).ShouldNot(BeEmpty())
	return m.Status.NodeRef.Name
}

var _ = Describe("kubectl machine why", func() {
	It("shows phase, Node, owner, health check verdict, conditions and events on one screen", func() {
		ns := newNamespace()
		m, node := runningMachine(ns, "web-1")
		// The way to Running emits no event; another controller's warning about the machine is
		// what a person would look for.
		Expect(k8s.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "web-1.backup"},
			InvolvedObject: corev1.ObjectReference{Kind: "Machine", APIVersion: v1beta1.GroupVersion.String(), Namespace: ns, Name: "web-1", UID: m.UID},
			Type:           corev1.EventTypeWarning, Reason: "BackupFailed", Message: "the nightly backup of web-1 failed",
			Source: corev1.EventSource{Component: "backup-operator"}, LastTimestamp: metav1.Now(),
		})).To(Succeed())
		Eventually(func() (string, error) { return kubectlMachine("-n", ns, "why", "web-1") }).Should(ContainSubstring("BackupFailed"))
		out, err := kubectlMachine("-n", ns, "why", "web-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Machine " + ns + "/web-1: Running"))
		Expect(out).To(ContainSubstring("Node: " + node + " (Ready=True)"))
		Expect(out).To(ContainSubstring("Owner: none (a standalone Machine: nothing replaces it if it is deleted)"))
		Expect(out).To(ContainSubstring("Health check: no MachineHealthCheck selects this machine"))
		Expect(out).To(MatchRegexp(`Ready\s+True\s+NodeReady`))
		Expect(out).To(MatchRegexp(`NodeLinked\s+True`))
		Expect(out).To(MatchRegexp(`InstanceProvisioned\s+True\s+InstanceExists`))
		Expect(out).To(MatchRegexp(`Recent events:\n.*Warning\s+BackupFailed\s+the nightly backup of web-1 failed`))
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

	It("shows a Node kept from workloads by the initialization taint while it waits for its link", func() {
		ns := newNamespace()
		// A paused Machine is left alone by the controllers and the node linker: its Node, once
		// registered, waits as it would while the linker is down.
		m := builder.Machine(ns, "waiting").Build()
		m.Annotations = map[string]string{v1beta1.PausedAnnotation: ""}
		m.Spec.ProviderID = "test:///" + ns + "/waiting"
		Expect(k8s.Create(ctx, m)).To(Succeed())
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "waiting-"}, Spec: corev1.NodeSpec{
			ProviderID: m.Spec.ProviderID, Taints: []corev1.Taint{{Key: v1beta1.NodeUninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule}},
		}}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		out, err := kubectlMachine("-n", ns, "why", "waiting")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Node: not linked yet; Node " + node.Name + " registered with this providerID and waits for the link, tainted " +
			v1beta1.NodeUninitializedTaintKey + ": no pod lands on it until the Machine's labels and taints are applied"))
	})

	It("shows a Node linked but still kept from workloads by the initialization taint", func() {
		ns := newNamespace()
		// Paused: the controllers and the node linker leave the Machine and its Node as the test
		// makes them, as they would be between the link and a refused metadata patch.
		m := builder.Machine(ns, "gated").Build()
		m.Annotations = map[string]string{v1beta1.PausedAnnotation: ""}
		m.Spec.ProviderID = "test:///" + ns + "/gated"
		Expect(k8s.Create(ctx, m)).To(Succeed())
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "gated-"}, Spec: corev1.NodeSpec{
			ProviderID: m.Spec.ProviderID, Taints: []corev1.Taint{{Key: v1beta1.NodeUninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule}},
		}}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		ac := acv1beta1.Machine(m.Name, ns).WithStatus(acv1beta1.MachineStatus().WithNodeRef(acv1beta1.NodeReference().WithKind("Node").WithName(node.Name).WithUID(node.UID)))
		Expect(k8s.Status().Apply(ctx, ac, client.FieldOwner("test-linker"))).To(Succeed())
		out, err := kubectlMachine("-n", ns, "why", "gated")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Node: " + node.Name + " (linked, still tainted " + v1beta1.NodeUninitializedTaintKey +
			": waiting for the Machine's labels and taints to be applied (see the events below); no pod lands on it until then)"))
	})

	It("says when do-not-disrupt or a disruption budget holds the machine's deletion", func() {
		ns := newNamespace()
		m := builder.Machine(ns, "kept").Build()
		m.Annotations = map[string]string{v1beta1.PausedAnnotation: "", v1beta1.DoNotDisruptAnnotation: "2h"}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		// The hold as a MachineSet writes it.
		hold := metav1.Condition{Type: v1beta1.DeletingCondition, Status: metav1.ConditionFalse, Reason: "DoNotDisrupt",
			Message: "not deleted yet (ScaleDown): the annotation holds it for 2h0m0s", LastTransitionTime: metav1.Now()}
		ac := acv1beta1.Machine(m.Name, ns).WithStatus(acv1beta1.MachineStatus().WithConditions(conditions.ApplyConfiguration(hold)))
		Expect(k8s.Status().Apply(ctx, ac, client.FieldOwner("machineset-controller"))).To(Succeed())
		out, err := kubectlMachine("-n", ns, "why", "kept")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(`Do not disrupt: the ` + v1beta1.DoNotDisruptAnnotation + ` annotation ("2h") keeps its set from deleting it`))
		Expect(out).To(ContainSubstring("Held: its set would delete it, but not deleted yet (ScaleDown): the annotation holds it for 2h0m0s (DoNotDisrupt, for "))
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
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		}
		Expect(k8s.Create(ctx, pdb)).To(Succeed())
		// kube-controller-manager's disruption controller computes the status: db is healthy and
		// needed.
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb)).To(Succeed())
			g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
			g.Expect(pdb.Status.CurrentHealthy).To(Equal(int32(1)))
			g.Expect(pdb.Status.DisruptionsAllowed).To(BeZero())
		}).Should(Succeed())

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

	It("shows per pod the rule or label that decides its behaviour and order group, and what holds it now", func() {
		ns := newNamespace()
		_, node := runningMachine(ns, "rules-1")
		for _, r := range []*v1beta1.MachineDrainRule{
			builder.DrainRule(ns, "keep-db").Behavior(v1beta1.DrainBehaviorSkip).Pods(map[string]string{"app": "db"}).Build(),
			builder.DrainRule(ns, "jobs").Behavior(v1beta1.DrainBehaviorWaitCompleted).Pods(map[string]string{"app": "job"}).Build(),
			builder.DrainRule(ns, "cache-last").Order(5).Pods(map[string]string{"app": "cache"}).Build(),
		} {
			Expect(k8s.Create(ctx, r)).To(Succeed())
		}
		runPod(ns, "api-0", node, nil)
		runPod(ns, "cache-0", node, map[string]string{"app": "cache"})
		runPod(ns, "db-0", node, map[string]string{"app": "db"})
		runPod(ns, "db-1", node, map[string]string{"app": "db", v1beta1.DrainLabel: "order-0"})
		runPod(ns, "job-0", node, map[string]string{"app": "job"})

		out, err := kubectlMachine("-n", ns, "drain-plan", "rules-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("  evict 2 pods:\n    " + ns + "/api-0\n    " + ns + "/db-1\n"))
		Expect(out).To(MatchRegexp(`POD\s+BEHAVIOR\s+ORDER\s+RULE\s+NOW`))
		Expect(out).To(MatchRegexp(ns + `/api-0\s+Drain\s+0\s+\(none\)\s+evict\n`))
		Expect(out).To(MatchRegexp(ns + `/cache-0\s+Drain\s+5\s+MachineDrainRule ` + ns + `/cache-last\s+wait \(DrainOrder\): waits for order group 0 to finish first \(2 pods left\)`))
		Expect(out).To(MatchRegexp(ns + `/db-0\s+Skip\s+-\s+MachineDrainRule ` + ns + `/keep-db\s+leave: skipped by MachineDrainRule ` + ns + `/keep-db\n`))
		Expect(out).To(MatchRegexp(ns + `/db-1\s+Drain\s+0\s+label machine.machineapi.dev/drain=order-0\s+evict\n`))
		Expect(out).To(MatchRegexp(ns + `/job-0\s+WaitCompleted\s+-\s+MachineDrainRule ` + ns + `/jobs\s+wait \(WaitCompleted\): waits until it completes`))
	})

	It("shows when a pod its budget blocks will be deleted under drainDeadlineSeconds", func() {
		ns := newNamespace()
		m := builder.Machine(ns, "deadline-1").WithDeletion(v1beta1.MachineDeletionSpec{DrainDeadlineSeconds: ptr[int32](600)}).Build()
		node := runningFrom(m)
		runPod(ns, "db-0", node, map[string]string{"app": "db"})
		blockingPDB(ns, "db")

		before := time.Now().Truncate(time.Second)
		out, err := kubectlMachine("-n", ns, "drain-plan", "deadline-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`  delete each pod still holding the drain its grace period before the pod deadline (\S+) \(spec.deletion.drainDeadlineSeconds\)`))
		at := regexp.MustCompile(`deleted at (\S+) unless gone before \(pod deadline (\S+) minus its 30s grace period\)`).FindStringSubmatch(out)
		Expect(at).NotTo(BeNil(), out)
		deleteAt, err := time.Parse(time.RFC3339, at[1])
		Expect(err).NotTo(HaveOccurred())
		Expect(deleteAt).To(BeTemporally(">=", before.Add(570*time.Second)), "as if draining began now: 600s minus the pod's 30s grace period")
		Expect(out).To(MatchRegexp(ns + `/db-0\s+Drain\s+0\s+\(none\)\s+wait \(PodDisruptionBudget\): blocked by PodDisruptionBudget ` + ns + `/db \(allows 0 disruptions\); deleted at`))
	})

	It("says that do-not-disrupt keeps the set from deleting the machine", func() {
		ns := newNamespace()
		m := builder.Machine(ns, "kept-1").Build()
		m.Annotations = map[string]string{v1beta1.DoNotDisruptAnnotation: "true"}
		runningFrom(m)
		out, err := kubectlMachine("-n", ns, "drain-plan", "kept-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(`(its set does not delete it on purpose while the ` + v1beta1.DoNotDisruptAnnotation + ` annotation ("true") holds`))
	})

	It("says when the pods of an unreachable Node will be deleted instead of evicted", func() {
		ns := newNamespace()
		m, node := runningMachine(ns, "lost-1")
		runPod(ns, "db-0", node, map[string]string{"app": "db"})
		blockingPDB(ns, "db")
		Expect(k8s.Patch(ctx, m, client.RawPatch(apitypes.MergePatchType, []byte(`{"metadata":{"annotations":{"`+sim.UnreachableAnnotation+`":""}}}`)))).To(Succeed())
		Eventually(func() (string, error) { return kubectlMachine("-n", ns, "drain-plan", "lost-1") }).Should(ContainSubstring("treat the Node as unreachable"))

		out, err := kubectlMachine("-n", ns, "drain-plan", "lost-1")
		Expect(err).NotTo(HaveOccurred())
		at := regexp.MustCompile(`  from (\S+) on \(unreachable since (\S+)\), delete the pods that have to leave instead of evicting them`).FindStringSubmatch(out)
		Expect(at).NotTo(BeNil(), out)
		deleteAt, err := time.Parse(time.RFC3339, at[1])
		Expect(err).NotTo(HaveOccurred())
		since, err := time.Parse(time.RFC3339, at[2])
		Expect(err).NotTo(HaveOccurred())
		Expect(deleteAt.Sub(since)).To(Equal(5*time.Minute), "the drain module's bound")
		Expect(out).To(MatchRegexp(ns + `/db-0\s+Drain\s+0\s+\(none\)\s+wait \(PodDisruptionBudget\): blocked by PodDisruptionBudget ` + ns + `/db`))
	})
})

// runPod creates a pod bound to node; the simulated kubelet runs it.
func runPod(ns, name, node string, labels map[string]string) {
	GinkgoHelper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
	}
	Expect(k8s.Create(ctx, p)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
	}).Should(Succeed(), "the simulated kubelet runs %s", name)
}

// blockingPDB creates a budget needing the one pod labelled app=<name>, and waits until the
// disruption controller allows no disruption.
func blockingPDB(ns, name string) {
	GinkgoHelper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
	}
	Expect(k8s.Create(ctx, pdb)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb)).To(Succeed())
		g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
		g.Expect(pdb.Status.CurrentHealthy).To(Equal(int32(1)))
		g.Expect(pdb.Status.DisruptionsAllowed).To(BeZero())
	}).Should(Succeed())
}

func ptr[T any](v T) *T { return &v }

var _ = Describe("kubectl machine rollout", func() {
	It("lists a deployment's revisions and rolls back to the previous one", func() {
		ns := newNamespace()
		md := builder.MachineDeployment(ns, "web", 2).WithInstanceType("small").Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(func() string { out, _ := kubectlMachine("-n", ns, "rollout", "history", "web"); return out }).
			Should(MatchRegexp(`1 \(current\)\s+web-\S+\s+2\s`))

		// A providerSpec change is a new revision.
		Expect(k8s.Patch(ctx, md, client.RawPatch(apitypes.MergePatchType,
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

var _ = Describe("kubectl machine rollout plan", func() {
	// manifest writes md's spec, changed by change, to a file as a user would keep it.
	manifest := func(md *v1beta1.MachineDeployment, change func(*v1beta1.MachineDeployment)) string {
		GinkgoHelper()
		changed := &v1beta1.MachineDeployment{TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "MachineDeployment"}}
		changed.Name, changed.Namespace = md.Name, md.Namespace
		current := &v1beta1.MachineDeployment{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(md), current)).To(Succeed())
		changed.Spec = *current.Spec.DeepCopy()
		change(changed)
		data, err := yaml.Marshal(changed)
		Expect(err).NotTo(HaveOccurred())
		path := filepath.Join(GinkgoT().TempDir(), "changed.yaml")
		Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
		return path
	}
	plan := func(ns string, args ...string) string {
		GinkgoHelper()
		out, err := kubectlMachine(append([]string{"-n", ns, "rollout", "plan", "web"}, args...)...)
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	// row matches a Machine's line of the plan.
	row := func(name, action, what string) types.GomegaMatcher {
		return MatchRegexp(`(?m)^` + regexp.QuoteMeta(name) + `\s+web-\S+\s+` + regexp.QuoteMeta(action) + `\s+` + regexp.QuoteMeta(what) + `$`)
	}

	It("shows the disruption budgets that pace the replacements, what each allows now and when that changes", func() {
		ns := newNamespace()
		md := builder.MachineDeployment(ns, "web", 2).Build()
		md.Spec.Disruption = &v1beta1.Disruption{Budgets: []v1beta1.DisruptionBudget{
			{Name: "one", Nodes: intstr.FromInt32(1)},
			{Name: "new-year", Nodes: intstr.FromInt32(0), Reasons: []v1beta1.DisruptionReason{v1beta1.DisruptionRollout},
				Schedule: "0 0 1 1 *", DurationSeconds: ptr(int32(3600))},
		}}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(func() []v1beta1.Machine {
			list := &v1beta1.MachineList{}
			Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			return list.Items
		}).Should(HaveLen(2))
		out := plan(ns, "-f", manifest(md, func(d *v1beta1.MachineDeployment) {
			d.Spec.Template.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"instanceType":"large"}`)}
		}))
		Expect(out).To(ContainSubstring("Paced by its disruption budgets too (the most restrictive in force wins; pool of 2 Machines):"))
		Expect(out).To(ContainSubstring("  - one (every reason): disruption budget one allows 1 Machines disrupted at once for Rollout; 0 are being disrupted\n"))
		Expect(out).To(MatchRegexp(`  - new-year \(Rollout\): not in force now; changes at \d{4}-01-01T00:00:00Z`))
	})

	It("shows a metadata change and a timeout change in place, a providerSpec change replacing every Machine in the controller's order, and changes nothing", func() {
		ns := newNamespace()
		md := builder.MachineDeployment(ns, "web", 3).WithDeletion(v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr(int32(60))}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		var names []string
		Eventually(func(g Gomega) {
			list := &v1beta1.MachineList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			names = nil
			for _, m := range list.Items {
				g.Expect(m.Status.Phase).To(Equal(v1beta1.MachinePhaseRunning))
				names = append(names, m.Name)
			}
			g.Expect(names).To(HaveLen(3))
		}).Should(Succeed())
		before := &v1beta1.MachineDeployment{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(md), before)).To(Succeed())

		By("the live spec: every Machine is kept")
		out := plan(ns)
		Expect(out).To(ContainSubstring("Rollout plan for MachineDeployment " + ns + "/web with its live spec (nothing is changed):"))
		for _, n := range names {
			Expect(out).To(row(n, "keep", ""))
		}
		Expect(out).To(ContainSubstring("No Machine is replaced."))

		By("a metadata-only change: every Machine in place")
		out = plan(ns, "-f", manifest(md, func(d *v1beta1.MachineDeployment) {
			d.Spec.Template.Metadata.Labels["tier"] = "gold"
			d.Spec.Template.Spec.Metadata.Labels = map[string]string{"example.com/role": "db"}
		}))
		for _, n := range names {
			Expect(out).To(row(n, "update in place", `metadata.labels.tier: (none) → "gold", spec.metadata.labels["example.com/role"]: (none) → "db"`))
		}
		Expect(out).To(ContainSubstring("the template is MachineSet web-"))
		Expect(out).To(ContainSubstring("No Machine is replaced."))

		By("a drain timeout change: every Machine in place")
		out = plan(ns, "-f", manifest(md, func(d *v1beta1.MachineDeployment) {
			d.Spec.Template.Spec.Deletion.NodeDrainTimeoutSeconds = ptr(int32(600))
		}))
		for _, n := range names {
			Expect(out).To(row(n, "update in place", "spec.deletion.nodeDrainTimeoutSeconds: 60 → 600"))
		}
		Expect(out).To(ContainSubstring("No Machine is replaced."))

		By("a providerSpec change: every Machine replaced, in order")
		large := manifest(md, func(d *v1beta1.MachineDeployment) {
			d.Spec.Template.Spec.ProviderSpec.Value.Raw = []byte(`{"instanceType":"large"}`)
		})
		out = plan(ns, "-f", large)
		Expect(out).To(ContainSubstring("the template needs new Machines: a new MachineSet is created and every Machine is replaced"))
		for _, n := range names {
			Expect(out).To(row(n, "replace", `differs from the template of MachineDeployment web: spec.providerSpec.value.instanceType: "small" → "large"`))
		}
		Expect(out).To(ContainSubstring("RollingUpdate, in this order: at most 4 Machines at a time (replicas 3 + maxSurge 1), never fewer than 3 available (maxUnavailable 0):"))
		order := regexp.MustCompile(`(?m)^  \d\. (\S+)$`).FindAllStringSubmatch(out, -1)
		Expect(order).To(HaveLen(3))
		var planned []string
		for _, o := range order {
			planned = append(planned, o[1])
		}
		Expect(planned).To(ConsistOf(names))

		By("nothing was changed")
		after := &v1beta1.MachineDeployment{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(md), after)).To(Succeed())
		Expect(after.Generation).To(Equal(before.Generation))
		Expect(after.Spec).To(Equal(before.Spec))
		sets := &v1beta1.MachineSetList{}
		Expect(k8s.List(ctx, sets, client.InNamespace(ns))).To(Succeed())
		Expect(sets.Items).To(HaveLen(1))

		By("applied, the change replaces the Machines in the planned order")
		deleted := deletionOrder(ns)
		changed := &v1beta1.MachineDeployment{}
		data, err := os.ReadFile(large)
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.UnmarshalStrict(data, changed)).To(Succeed())
		base := after.DeepCopy()
		after.Spec = changed.Spec
		// As kubectl apply would: a patch, which a status write of the controller meanwhile does
		// not make conflict.
		Expect(k8s.Patch(ctx, after, client.MergeFrom(base))).To(Succeed())
		Eventually(deleted).Should(Equal(planned))
	})

	It("previews an in-place update from the provider's plans, and the rollout does what it showed", func() {
		ns := newNamespace()
		md := builder.MachineDeployment(ns, "web", 3).WithRollingUpdate("1", "1").
			WithRollout(v1beta1.MachineDeploymentRollout{InPlace: v1beta1.InPlacePrefer}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		machines := func(g Gomega) []v1beta1.Machine {
			list := &v1beta1.MachineList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			return list.Items
		}
		uids := map[string]apitypes.UID{}
		Eventually(func(g Gomega) {
			ms := machines(g)
			g.Expect(ms).To(HaveLen(3))
			for _, m := range ms {
				g.Expect(m.Status.Phase).To(Equal(v1beta1.MachinePhaseRunning))
				uids[m.Name] = m.UID
			}
		}).Should(Succeed())

		By("applied while paused, the change gets each Machine's plan from the provider, and the plan shows it")
		Expect(k8s.Patch(ctx, md, client.RawPatch(apitypes.MergePatchType,
			[]byte(`{"spec":{"paused":true,"template":{"spec":{"providerSpec":{"value":{"instanceType":"medium"}}}}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			for _, m := range machines(g) {
				g.Expect(m.Status.InPlaceUpdate).NotTo(BeNil())
			}
		}).Should(Succeed())
		out := plan(ns)
		Expect(out).To(MatchRegexp(`the template is updated in place \(spec.rollout.inPlace Prefer\): MachineSet web-\S+ takes it`))
		planned := map[string]string{}
		for _, r := range regexp.MustCompile(`(?m)^(web-\S+)\s+web-\S+\s+(keep|update in place|replace)\s+(.*)$`).FindAllStringSubmatch(out, -1) {
			planned[r[1]] = r[2]
			Expect(r[3]).To(Equal("spec.providerSpec.value.instanceType (by the provider, drained and rebooted)"))
		}
		Expect(planned).To(HaveLen(3), out)
		Expect(out).To(ContainSubstring("No Machine is replaced."))

		By("resumed, the rollout does what the plan showed")
		Expect(k8s.Patch(ctx, md, client.RawPatch(apitypes.MergePatchType, []byte(`{"spec":{"paused":false}}`)))).To(Succeed())
		outcome := map[string]string{}
		Eventually(func(g Gomega) {
			for _, m := range machines(g) {
				g.Expect(m.Status.InPlaceUpdate).To(BeNil())
				g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, v1beta1.UpToDateCondition)).To(BeTrue())
			}
		}, "90s").Should(Succeed())
		now := machines(Default)
		for name, uid := range uids {
			outcome[name] = "replace"
			for _, m := range now {
				c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.UpdatingCondition)
				if m.Name == name && m.UID == uid && c != nil && c.Reason == "InPlaceUpdated" {
					outcome[name] = "update in place"
				}
			}
		}
		Expect(outcome).To(Equal(planned))
	})

	It("refuses a manifest the API server refuses, naming the field", func() {
		ns := newNamespace()
		md := builder.MachineDeployment(ns, "web", 1).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		out, err := kubectlMachine("-n", ns, "rollout", "plan", "web", "-f", manifest(md, func(d *v1beta1.MachineDeployment) {
			d.Spec.Rollout = &v1beta1.MachineDeploymentRollout{MachineMaxAgeSeconds: ptr(int32(-1))}
		}))
		Expect(err).To(MatchError(ContainSubstring("the API server refuses the spec in")), out)
		Expect(err).To(MatchError(ContainSubstring("spec.rollout.machineMaxAgeSeconds")))
	})
})

// deletionOrder watches the Machines of ns and returns, as they are seen, the names of those that
// start deleting, in the order the API server records it.
func deletionOrder(ns string) func() []string {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &v1beta1.MachineList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var mu sync.Mutex
	var order []string
	go func() {
		for ev := range w.ResultChan() {
			m, ok := ev.Object.(*v1beta1.Machine)
			if !ok || m.DeletionTimestamp.IsZero() {
				continue
			}
			mu.Lock()
			if !slices.Contains(order, m.Name) {
				order = append(order, m.Name)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(order)
	}
}
