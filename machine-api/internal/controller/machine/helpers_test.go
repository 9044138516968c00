package machine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider"
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

// blockingPDB creates a budget that allows no disruption and writes its status by hand: no
// kube-controller-manager (whose disruption controller would) runs in the test API server.
func blockingPDB(ns, name string, selector map[string]string) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptrTo(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: selector},
		},
	}
	Expect(k8s.Create(ctx, pdb)).To(Succeed())
	setDisruptionsAllowed(pdb, 0)
	return pdb
}

func setDisruptionsAllowed(pdb *policyv1.PodDisruptionBudget, n int32) {
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb)).To(Succeed())
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: n, CurrentHealthy: 1, DesiredHealthy: 1 - n, ExpectedPods: 1,
		DisruptedPods: map[string]metav1.Time{},
	}
	Expect(k8s.Status().Update(ctx, pdb)).To(Succeed())
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
