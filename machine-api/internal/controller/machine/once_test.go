package machine_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machine"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
	"machineapi.dev/machine-api/internal/test/scrape"
	"machineapi.dev/machine-api/provider/sim"
)

// onceFixture is the reconcile-once level's setup: the Reconciler built by hand with a fake
// clock and a client straight to the API server, and no manager. Each Reconcile call is one step
// the test asserts on; the clock only moves when the test steps it, so timeouts are stepped, not
// waited. Nothing plays the kubelet: a test finishes terminating pods itself.
type onceFixture struct {
	ns       string
	clock    *testclock.FakeClock
	cloud    *sim.Provider
	r        *machine.Reconciler
	recorder *events.FakeRecorder
}

// newOnceFixture makes a namespace and a Reconciler whose clock starts at t0.
func newOnceFixture(t0 time.Time) *onceFixture {
	GinkgoHelper()
	f := &onceFixture{ns: newNamespace(), clock: testclock.NewFakeClock(t0), recorder: events.NewFakeRecorder(1000)}
	var err error
	f.cloud, err = sim.New(sim.Options{Clock: f.clock, HeartbeatInterval: -1, Seed: 1})
	Expect(err).NotTo(HaveOccurred())
	f.cloud.WithClient(k8s) // its kubelet registers each instance's Node at once; nothing else runs
	clientset, err := kubernetes.NewForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	drainer, err := drain.New(clientset, drain.Options{Clock: f.clock})
	Expect(err).NotTo(HaveOccurred())
	f.r = &machine.Reconciler{Client: k8s, Provider: f.cloud, Drainer: drainer, Recorder: f.recorder, Clock: f.clock}
	return f
}

// conditionOf reads the Machine again and returns its condition of type t.
func (f *onceFixture) conditionOf(m *v1beta1.Machine, t string) metav1.Condition {
	GinkgoHelper()
	c := meta.FindStatusCondition(expect.Fetched(ctx, k8s, m).Status.Conditions, t)
	Expect(c).NotTo(BeNil(), "condition %s", t)
	return *c
}

// linkNode does what the node linker would: status.nodeRef pointing at the Node the sim's
// kubelet registered, Ready, for the Machine's instance.
func (f *onceFixture) linkNode(m *v1beta1.Machine) *corev1.Node {
	GinkgoHelper()
	expect.Fetched(ctx, k8s, m)
	nodes := &corev1.NodeList{}
	Expect(k8s.List(ctx, nodes)).To(Succeed())
	var node *corev1.Node
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == m.Spec.ProviderID {
			node = &nodes.Items[i]
		}
	}
	Expect(node).NotTo(BeNil(), "the sim registered the Node of instance %s", m.Spec.ProviderID)
	m.Status.NodeRef = &v1beta1.NodeReference{Kind: "Node", Name: node.Name, UID: node.UID}
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionTrue, Reason: "Linked"})
	Expect(k8s.Status().Update(ctx, m)).To(Succeed())
	return node
}

// running takes a new Machine through the create path, one reconcile per step.
func (f *onceFixture) running(b *builder.MachineBuilder) (*v1beta1.Machine, *corev1.Node) {
	GinkgoHelper()
	m := b.Build()
	Expect(k8s.Create(ctx, m)).To(Succeed())
	for range 2 { // the finalizer; then Provisioning, stored, and Create
		expect.Reconciled(ctx, f.r, m)
	}
	node := f.linkNode(m)
	expect.Reconciled(ctx, f.r, m)
	Expect(expect.Fetched(ctx, k8s, m).Status.Phase).To(Equal(v1beta1.MachinePhaseRunning))
	return m, node
}

// series returns the series of metric name that the Reconciler's collector exports now for the
// fixture's namespace, keyed by their labels (see scrape.Series).
func (f *onceFixture) series(name string) map[string]float64 {
	GinkgoHelper()
	return scrape.Series(scrape.Of(f.r.Collector(k8s, nil)), name, map[string]string{"namespace": f.ns},
		func(err error) { Expect(err).NotTo(HaveOccurred()) })
}

// labels is the key of a series of f's namespace in series' answer: labels given as name, value
// pairs (in label name order, after namespace).
func (f *onceFixture) labels(pairs ...string) string {
	key := `namespace="` + f.ns + `"`
	for i := 0; i+1 < len(pairs); i += 2 {
		key += "," + pairs[i] + `="` + pairs[i+1] + `"`
	}
	return key
}

// events returns the events recorded since the last call, as "Type Reason Message".
func (f *onceFixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
