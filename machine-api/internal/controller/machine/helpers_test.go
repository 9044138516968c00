package machine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/scrape"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/provider/sim"
)

func getMachine(key types.NamespacedName) func() *v1beta1.Machine {
	return func() *v1beta1.Machine {
		m := &v1beta1.Machine{}
		if err := k8s.Get(ctx, key, m); err != nil {
			return nil
		}
		return m
	}
}

// updateMachine changes a Machine as a user would: read it, change it, update it, and again when
// the update conflicts with the controllers' own writes.
func updateMachine(key types.NamespacedName, change func(*v1beta1.Machine)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := &v1beta1.Machine{}
		if err := k8s.Get(ctx, key, m); err != nil {
			return err
		}
		change(m)
		return k8s.Update(ctx, m)
	})
}

func phaseOf(key types.NamespacedName) func() v1beta1.MachinePhase {
	return func() v1beta1.MachinePhase {
		if m := getMachine(key)(); m != nil {
			return m.Status.Phase
		}
		return ""
	}
}

// condition returns "Status/Reason: Message" of a Machine condition, for readable assertions.
func condition(key types.NamespacedName, t string) func() string {
	return func() string {
		m := getMachine(key)()
		if m == nil {
			return "<machine gone>"
		}
		c := meta.FindStatusCondition(m.Status.Conditions, t)
		if c == nil {
			return "<no condition>"
		}
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}
}

func gone(obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
	}
}

func nodeOf(key types.NamespacedName) *corev1.Node {
	var name string
	Eventually(func() string {
		if m := getMachine(key)(); m != nil && m.Status.NodeRef != nil {
			name = m.Status.NodeRef.Name
		}
		return name
	}).ShouldNot(BeEmpty(), "the machine gets a nodeRef")
	node := &corev1.Node{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: name}, node)).To(Succeed())
	return node
}

// runPod binds a pod to node, as the scheduler would.
func runPod(ns, name, node string, labels map[string]string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	return pod
}

// blockingPDB creates a budget that needs every one of the pods it selects (the test's pods have
// no controller, so the budget counts them by minAvailable) and waits until kube-controller-manager's
// disruption controller has computed that it allows no disruption.
func blockingPDB(ns, name string, selector map[string]string, pods int32) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptrTo(intstr.FromInt32(pods)),
			Selector:     &metav1.LabelSelector{MatchLabels: selector},
		},
	}
	Expect(k8s.Create(ctx, pdb)).To(Succeed())
	Eventually(budgetAllows(pdb, 0)).Should(Succeed())
	return pdb
}

// relaxPDB lowers the budget's minAvailable. It does not wait for the disruption controller's new
// status: the drain may use the disruption it allows at once (the Eviction API takes it from
// status.disruptionsAllowed), so the test watches the pods instead.
func relaxPDB(pdb *policyv1.PodDisruptionBudget, minAvailable int32) {
	patch := fmt.Appendf(nil, `{"spec":{"minAvailable":%d}}`, minAvailable)
	Expect(k8s.Patch(ctx, pdb, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// budgetAllows succeeds once the disruption controller has observed the budget's generation and
// allows that many disruptions.
func budgetAllows(pdb *policyv1.PodDisruptionBudget, allowed int32) func(Gomega) {
	return func(g Gomega) {
		got := &policyv1.PodDisruptionBudget{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.DisruptionsAllowed).To(Equal(allowed))
	}
}

func ptrTo[T any](v T) *T { return &v }

// flakyProvider fails the first creates with a transient error, then delegates.
type flakyProvider struct {
	provider.Provider
	mu       sync.Mutex
	failures int
	calls    int
}

func (f *flakyProvider) Create(ctx context.Context, m *v1beta1.Machine) error {
	f.mu.Lock()
	f.calls++
	fail := f.calls <= f.failures
	f.mu.Unlock()
	if fail {
		return errors.New("cloud API unavailable (injected)")
	}
	return f.Provider.Create(ctx, m)
}

// setupProvider passes the manager on to a wrapped provider that needs it (the sim's kubelet).
func setupProvider(p provider.Provider, mgr ctrl.Manager) error {
	if s, ok := p.(manager.ManagerSetup); ok {
		return s.SetupWithManager(mgr)
	}
	return nil
}

func (f *flakyProvider) SetupWithManager(mgr ctrl.Manager) error {
	return setupProvider(f.Provider, mgr)
}

func (c *crashingProvider) SetupWithManager(mgr ctrl.Manager) error {
	return setupProvider(c.Provider, mgr)
}

// crashingProvider creates the instance, then never returns: like a process that dies between
// Create and recording its result.
type crashingProvider struct {
	provider.Provider
	created chan struct{}
	once    sync.Once
}

func (c *crashingProvider) Create(ctx context.Context, m *v1beta1.Machine) error {
	if err := c.Provider.Create(ctx, m); err != nil {
		return err
	}
	c.once.Do(func() { close(c.created) })
	<-ctx.Done()
	return ctx.Err()
}

// phaseAtCreate records, at each Create, the phase the API server has stored for the Machine.
type phaseAtCreate struct {
	provider.Provider
	k8s    client.Client
	phases []v1beta1.MachinePhase
}

func (p *phaseAtCreate) Create(ctx context.Context, m *v1beta1.Machine) error {
	stored := &v1beta1.Machine{}
	if err := p.k8s.Get(ctx, client.ObjectKeyFromObject(m), stored); err != nil {
		return err
	}
	p.phases = append(p.phases, stored.Status.Phase)
	return p.Provider.Create(ctx, m)
}

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

// staleMachines is a client whose Get of one Machine returns stale, a copy older than the stored
// Machine, as a cache that has not caught up would; nil stale reads through.
type staleMachines struct {
	client.Client
	stale *v1beta1.Machine
}

func (s *staleMachines) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if m, ok := obj.(*v1beta1.Machine); ok && s.stale != nil && key == client.ObjectKeyFromObject(s.stale) {
		s.stale.DeepCopyInto(m)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// instancesIn returns the sim's instances of Machines in namespace ns: the stack's manager watches
// every namespace and provisions the Machines other specs left behind, so a spec counts its own.
func instancesIn(st *stack.Stack, ns string) []sim.Instance {
	var out []sim.Instance
	for _, inst := range st.Sim.Instances() {
		if inst.Namespace == ns {
			out = append(out, inst)
		}
	}
	return out
}

// provisioningObservations is how many times machineapi_machine_provisioning_duration_seconds has
// been observed in this process.
func provisioningObservations() float64 {
	GinkgoHelper()
	return scrape.Series(metrics.Registry, "machineapi_machine_provisioning_duration_seconds", nil,
		func(err error) { Expect(err).NotTo(HaveOccurred()) })[""]
}
