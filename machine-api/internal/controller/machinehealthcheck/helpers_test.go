package machinehealthcheck_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/scrape"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/manager"
)

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mhc-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// managedNamespace creates a namespace and starts the whole manager (every controller and the
// simulated provider) scoped to it, until the spec ends.
func managedNamespace() string {
	GinkgoHelper()
	ns := newNamespace()
	mo := manager.DefaultOptions()
	mo.Namespace = ns
	st, err := stack.Start(env.Config, stack.Options{Manager: &mo})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(st.Stop)
	return ns
}

// pausedSet creates a MachineSet of replicas Machines labelled lbls, paused so that a MachineSet
// controller (when the manager runs one) neither creates nor deletes Machines while the spec
// creates its own; unpause it to let the set replace what the health check deletes.
func pausedSet(ns, name string, replicas int32, lbls map[string]string) *v1beta1.MachineSet {
	set := &v1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{v1beta1.PausedAnnotation: ""}},
		Spec: v1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: v1beta1.LabelSelector{MatchLabels: lbls},
			Template: v1beta1.MachineTemplateSpec{
				Metadata: v1beta1.ObjectMeta{Labels: lbls},
				Spec: v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{
					Value: &runtime.RawExtension{Raw: []byte(`{"instanceType":"small"}`)},
				}},
			},
		},
	}
	Expect(k8s.Create(ctx, set)).To(Succeed())
	return set
}

func unpause(set *v1beta1.MachineSet) {
	Eventually(func() error {
		cur := &v1beta1.MachineSet{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(set), cur); err != nil {
			return err
		}
		delete(cur.Annotations, v1beta1.PausedAnnotation)
		return k8s.Update(ctx, cur)
	}).Should(Succeed())
}

// machines creates n Machines named <prefix>-0..n-1 with lbls and annotations, controlled by set
// when it is not nil.
func machines(ns, prefix string, n int, set *v1beta1.MachineSet, lbls, annotations map[string]string) []types.NamespacedName {
	var keys []types.NamespacedName
	for i := range n {
		m := builder.Machine(ns, fmt.Sprintf("%s-%d", prefix, i)).WithLabels(lbls).WithAnnotations(annotations).Build()
		if set != nil {
			m.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: v1beta1.GroupVersion.String(), Kind: "MachineSet", Name: set.Name, UID: set.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}}
		}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(m))
	}
	return keys
}

func getMachine(key types.NamespacedName) *v1beta1.Machine {
	m := &v1beta1.Machine{}
	if err := k8s.Get(ctx, key, m); err != nil {
		return nil
	}
	return m
}

// healthCheck returns "Status/Reason: Message" of a Machine's HealthCheckSucceeded condition.
func healthCheck(key types.NamespacedName) func() string {
	return func() string {
		m := getMachine(key)
		if m == nil {
			return "<machine gone>"
		}
		c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition)
		if c == nil {
			return "<no condition>"
		}
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}
}

func phase(key types.NamespacedName) func() v1beta1.MachinePhase {
	return func() v1beta1.MachinePhase {
		if m := getMachine(key); m != nil {
			return m.Status.Phase
		}
		return "<gone>"
	}
}

// removed reports whether the Machine is gone or being deleted: remediation has started.
func removed(key types.NamespacedName) func() bool {
	return func() bool {
		m := &v1beta1.Machine{}
		err := k8s.Get(ctx, key, m)
		return apierrors.IsNotFound(err) || (err == nil && !m.DeletionTimestamp.IsZero())
	}
}

// removedEach is removed for each of keys, in order.
func removedEach(keys []types.NamespacedName) func() []bool {
	return func() []bool {
		var r []bool
		for _, k := range keys {
			r = append(r, removed(k)())
		}
		return r
	}
}

func gone(key types.NamespacedName) func() bool {
	return func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key, &v1beta1.Machine{})) }
}

func allRunning(keys []types.NamespacedName) {
	for _, k := range keys {
		Eventually(phase(k)).Should(Equal(v1beta1.MachinePhaseRunning), "machine %s runs", k.Name)
	}
}

// allNotReady waits until each Machine is linked to a Node whose Ready condition is False.
func allNotReady(keys []types.NamespacedName) {
	GinkgoHelper()
	for _, k := range keys {
		Eventually(func() (corev1.ConditionStatus, error) {
			m := getMachine(k)
			if m == nil || m.Status.NodeRef == nil {
				return "", nil
			}
			n := &corev1.Node{}
			if err := k8s.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, n); err != nil {
				return "", err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status, nil
				}
			}
			return "", nil
		}).Should(Equal(corev1.ConditionFalse), func() string { return "the Node of machine " + k.Name + " is NotReady; " + linkState(k) })
	}
}

// setAnnotation sets (value non-nil) or removes an annotation on a Machine.
func setAnnotation(key types.NamespacedName, name string, value *string) {
	Eventually(func() error {
		m := getMachine(key)
		if m == nil {
			return fmt.Errorf("machine %s not found", key)
		}
		before := m.DeepCopy()
		if value == nil {
			delete(m.Annotations, name)
		} else {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations[name] = *value
		}
		return k8s.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	}).Should(Succeed())
}

func getCheck(key types.NamespacedName) func() *v1beta1.MachineHealthCheck {
	return func() *v1beta1.MachineHealthCheck {
		c := &v1beta1.MachineHealthCheck{}
		Expect(k8s.Get(ctx, key, c)).To(Succeed())
		return c
	}
}

// remediationAllowed returns "Status/Reason: Message" of a health check's RemediationAllowed.
func remediationAllowed(key types.NamespacedName) func() string {
	return func() string {
		c := meta.FindStatusCondition(getCheck(key)().Status.Conditions, v1beta1.RemediationAllowedCondition)
		if c == nil {
			return "<no condition>"
		}
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}
}

// events returns "type reason: note" of the events regarding the object named name in ns.
func events(ns, name string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Note))
			}
		}
		return out
	}
}

func machinesOwnedBy(set *v1beta1.MachineSet) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: v1beta1.GroupVersion.String(), Kind: "MachineSet", Name: set.Name, UID: set.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
}

// releaseHook removes a Machine's pre-drain hooks, letting its deletion go on.
func releaseHook(key types.NamespacedName) {
	Eventually(func() error {
		m := getMachine(key)
		if m == nil {
			return nil
		}
		before := m.DeepCopy()
		m.Spec.LifecycleHooks.PreDrain = nil
		return k8s.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	}).Should(Succeed())
}

// testGroupVersion is the group of the stand-in remediation kinds in testdata/crd.
const testGroupVersion = "remediation.test.machineapi.dev/v1alpha1"

func remediationTemplate(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": testGroupVersion,
		"kind":       "TestRemediationTemplate",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"remediator": "test"}},
			"spec":     map[string]any{"action": "reboot"},
		}},
	}}
}

// request returns the TestRemediation named name as a map, nil when there is none.
func request(ns, name string) func() map[string]any {
	return func() map[string]any {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(testGroupVersion)
		u.SetKind("TestRemediation")
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
		if apierrors.IsNotFound(err) {
			return nil
		}
		Expect(err).NotTo(HaveOccurred())
		return u.Object
	}
}

// expectReplacement checks that the unpaused set brings its Machines back to replicas, all
// Running: the suite's manager runs the MachineSet controller, which replaces what the health
// check deletes.
func expectReplacement(ns string, lbls map[string]string, replicas int) {
	Eventually(func() []v1beta1.MachinePhase {
		var list v1beta1.MachineList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(lbls))).To(Succeed())
		var phases []v1beta1.MachinePhase
		for _, m := range list.Items {
			if m.DeletionTimestamp.IsZero() {
				phases = append(phases, m.Status.Phase)
			}
		}
		return phases
	}).Should(And(HaveLen(replicas), HaveEach(v1beta1.MachinePhaseRunning)), "the set replaces the remediated machine")
}

// linkState describes a Machine's phase, providerID and NodeLinked condition, and the Nodes with
// its providerID, for failure messages.
func linkState(key types.NamespacedName) string {
	m := getMachine(key)
	if m == nil {
		return "no machine"
	}
	out := fmt.Sprintf("machine %s: phase %q, providerID %q", m.Name, m.Status.Phase, m.Spec.ProviderID)
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition); c != nil {
		out += fmt.Sprintf(", NodeLinked=%s/%s: %s", c.Status, c.Reason, c.Message)
	}
	var nodes corev1.NodeList
	if err := k8s.List(ctx, &nodes); err != nil {
		return out + "; listing Nodes: " + err.Error()
	}
	for _, n := range nodes.Items {
		if m.Spec.ProviderID != "" && n.Spec.ProviderID == m.Spec.ProviderID {
			out += fmt.Sprintf("; Node %s (resourceVersion %s) annotations %v taints %v", n.Name, n.ResourceVersion, n.Annotations, n.Spec.Taints)
			for _, c := range n.Status.Conditions {
				out += fmt.Sprintf(" %s=%s", c.Type, c.Status)
			}
		}
	}
	return out
}

// nodeConditions describes the conditions of a Machine's Node, for failure messages.
func nodeConditions(key types.NamespacedName) string {
	m := getMachine(key)
	if m == nil || m.Status.NodeRef == nil {
		return "no node"
	}
	n := &corev1.Node{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, n); err != nil {
		return err.Error()
	}
	out := "Node " + n.Name + ":"
	for _, c := range n.Status.Conditions {
		out += fmt.Sprintf(" %s=%s since %s", c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	return out
}

// checkMetric returns the series of metric name the process exports for the health check key,
// keyed by their other labels (`reason="X"`, or "" for none): what a dashboard of that check shows.
func checkMetric(key types.NamespacedName, name string) func() map[string]float64 {
	return func() map[string]float64 {
		out := map[string]float64{}
		prefix := fmt.Sprintf(`machinehealthcheck="%s",namespace="%s"`, key.Name, key.Namespace)
		for labels, v := range scrape.Series(metrics.Registry, name, map[string]string{"namespace": key.Namespace, "machinehealthcheck": key.Name},
			func(err error) { Expect(err).NotTo(HaveOccurred()) }) {
			rest := labels[len(prefix):]
			if rest != "" {
				rest = rest[1:]
			}
			out[rest] = v
		}
		return out
	}
}
