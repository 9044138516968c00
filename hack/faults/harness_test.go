package faults_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Scenario is one row of the matrix: a namespace of its own, a simulated cloud of its own (the
// sim state folder) and the managers it runs. Its invariants are checked by Verify, which every
// scenario runs in its AfterEach.
type Scenario struct {
	Name    string
	NS      string
	Dir     string
	SimDir  string
	History *faults.InstanceHistory
	// Managers are every machine-manager the scenario started (all are checked for panics;
	// the running ones for goroutine leaks).
	Managers []*faults.Component
	// Others are the other components (cluster-manager).
	Others []*faults.Component
	Expect faults.Expectations

	baselines map[*faults.Component]int
	cancel    context.CancelFunc
}

// NewScenario creates the namespace and the folders of a scenario and starts sampling its sim
// state folder. Nothing runs yet.
func NewScenario(name string) *Scenario {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	// The API server's ServiceAccount admission refuses pods until kube-controller-manager has
	// made the namespace's default service account, as in any cluster.
	Eventually(func() error {
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(Succeed(), "the default service account of %s", ns.Name)
	dir := filepath.Join(stateDir, ns.Name)
	s := &Scenario{Name: name, NS: ns.Name, Dir: dir, SimDir: filepath.Join(dir, "sim"), baselines: map[*faults.Component]int{}}
	Expect(os.MkdirAll(s.SimDir, 0o755)).To(Succeed())
	Expect(os.MkdirAll(filepath.Join(dir, "logs"), 0o755)).To(Succeed())
	var sctx context.Context
	sctx, s.cancel = context.WithCancel(ctx)
	s.History = faults.WatchInstances(sctx, s.SimDir)
	s.Expect = faults.Expectations{ExemptNodes: map[string]string{}, InstanceMissing: map[string]bool{}, NotReadySets: map[string]bool{}, BoundEarly: map[string]string{}}
	GinkgoWriter.Printf("scenario %s: namespace %s, state in %s\n", name, s.NS, dir)
	return s
}

// MachineManager returns a machine-manager for this scenario (not started): scoped to its
// namespace, its sim instances in its folder, Nodes booting within a second, their Leases renewed
// every 10s (the node lifecycle controller of kube-controller-manager marks Nodes without them
// unreachable) and the not-ready/unreachable taints left to that controller.
func (s *Scenario) MachineManager(extra ...string) *faults.Component {
	args := []string{
		"--kubeconfig=" + plane.Kubeconfig,
		"--namespace=" + s.NS,
		"--sim-state-dir=" + s.SimDir,
		"--sim-boot-delay=500ms",
		"--sim-leave-condition-taints",
		"--leader-election-namespace=" + s.NS,
	}
	c := &faults.Component{
		Name:   fmt.Sprintf("machine-manager-%d", len(s.Managers)+1),
		Binary: binaries["machine-manager"],
		Args:   append(args, extra...),
		LogDir: filepath.Join(s.Dir, "logs"),
	}
	s.Managers = append(s.Managers, c)
	return c
}

// Start starts (or restarts) a component, waits until it serves, and records its goroutine
// baseline once it has settled.
func (s *Scenario) Start(c *faults.Component) {
	GinkgoHelper()
	Expect(c.Start()).To(Succeed())
	Expect(c.WaitServing(ctx, 60*time.Second)).To(Succeed())
	// Caches sync and controllers start within a few seconds; the baseline is the most seen
	// over the next three.
	time.Sleep(2 * time.Second)
	n := 0
	for range 6 {
		got, err := c.Goroutines(ctx)
		Expect(err).NotTo(HaveOccurred())
		n = max(n, got)
		time.Sleep(500 * time.Millisecond)
	}
	s.baselines[c] = n
	GinkgoWriter.Printf("%s started (pid %d, %d goroutines), log %s\n", c.Name, c.Pid(), n, c.CurrentLog())
}

// Subject is what the invariant checks look at.
func (s *Scenario) Subject() faults.Subject {
	return faults.Subject{Client: k8s, Namespace: s.NS, SimDir: s.SimDir, History: s.History, Tracker: tracker, Expect: s.Expect}
}

// Verify checks every invariant: first with the scenario's Machines in place (after letting its
// sets converge), then after deleting everything the scenario made, so that every deletion is
// judged too; then the managers' logs and goroutines. It always cleans up, even when a check
// fails, so the next scenario starts clean.
func (s *Scenario) Verify() {
	GinkgoHelper()
	defer s.teardown()
	defer func() {
		_ = os.WriteFile(filepath.Join(s.Dir, "machines.txt"), []byte(tracker.Dump(s.NS)), 0o644)
		if CurrentSpecReport().Failed() {
			// What the sets and deployments showed when the scenario failed, with their events:
			// the controllers' decisions, for the post-mortem (the namespace goes with teardown).
			_ = os.WriteFile(filepath.Join(s.Dir, "sets.txt"), []byte(dumpSets(s.NS)), 0o644)
		}
	}()
	var bad []string
	note := func(what string, v []string) {
		for _, x := range v {
			bad = append(bad, what+": "+x)
		}
	}
	sub := s.Subject()

	var converged []string
	Eventually(func() []string {
		converged = faults.CheckConverged(ctx, sub)
		return converged
	}).WithTimeout(3*time.Minute).Should(BeEmpty(), "replicas converge")
	note("instances", faults.CheckInstances(ctx, sub))
	note("disruption budget", faults.CheckDisruption(ctx, sub))
	note("links", faults.CheckLinks(sub, false))
	note("drain", faults.CheckDrain(ctx, sub))
	note("remediation", faults.CheckRemediations(ctx, sub))
	note("initialization", faults.CheckInitialization(sub))

	s.deleteEverything()
	note("instances after deleting everything", faults.CheckInstances(ctx, sub))
	if left, _ := faults.ReadInstances(s.SimDir); len(left) > 0 {
		note("instances after deleting everything", []string{fmt.Sprintf("%d instances left running", len(left))})
	}
	note("drain", faults.CheckDrain(ctx, sub))
	note("remediation", faults.CheckRemediations(ctx, sub))
	note("initialization", faults.CheckInitialization(sub))

	for _, c := range append(append([]*faults.Component(nil), s.Managers...), s.Others...) {
		if err := c.Exited(); err != nil {
			note("crash", []string{err.Error()})
		}
		note("panic", c.Panics())
	}
	for _, c := range s.Managers {
		if c.Running() {
			note("goroutines", s.goroutineLeak(c))
		}
	}
	// Checked before and after deleting everything: a finding that holds both times is one.
	slices.Sort(bad)
	Expect(slices.Compact(bad)).To(BeEmpty(), "invariants of scenario %s (state in %s)", s.Name, s.Dir)
}

// goroutineLeak waits up to 30s for the manager's goroutines to come back near their baseline.
// The margin covers informers started on first use and idle HTTP/2 connections (a manager ends
// its scenarios about 10 above its baseline); a leak per Machine or per reconcile shows as
// hundreds.
func (s *Scenario) goroutineLeak(c *faults.Component) []string {
	base := s.baselines[c]
	limit := base + 50 + base/20
	var n int
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		n, err = c.Goroutines(ctx)
		if err != nil {
			return []string{fmt.Sprintf("%s: reading go_goroutines: %v", c.Name, err)}
		}
		if n <= limit || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	GinkgoWriter.Printf("%s: %d goroutines at the end, %d at the start (limit %d)\n", c.Name, n, base, limit)
	if n > limit {
		return []string{fmt.Sprintf("%s has %d goroutines after its Machines are gone, %d when it started (limit %d)", c.Name, n, base, limit)}
	}
	return nil
}

// deleteEverything deletes the scenario's Clusters, deployments, sets, health checks and
// Machines, as a user would, and waits until every Machine is gone.
func (s *Scenario) deleteEverything() {
	GinkgoHelper()
	in := client.InNamespace(s.NS)
	// A budget left blocking would hold the last drains forever, as it should.
	Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, in))).To(Succeed())
	for _, obj := range []client.Object{&clusterv1.Cluster{}, &v1beta1.MachineHealthCheck{}, &v1beta1.MachineDeployment{}, &v1beta1.MachineSet{}, &v1beta1.Machine{}} {
		Expect(client.IgnoreNotFound(k8s.DeleteAllOf(ctx, obj, in))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		for _, l := range []client.ObjectList{&clusterv1.ClusterList{}, &v1beta1.MachineDeploymentList{}, &v1beta1.MachineSetList{}, &v1beta1.MachineList{}} {
			g.Expect(k8s.List(ctx, l, in)).To(Succeed())
			g.Expect(meta.LenList(l)).To(BeZero(), "%T left: %s", l, stuck(l))
		}
	}).WithTimeout(3 * time.Minute).Should(Succeed())
}

// stuck describes the objects of a list that are still there.
func stuck(l client.ObjectList) string {
	var parts []string
	_ = meta.EachListItem(l, func(o runtime.Object) error {
		if m, ok := o.(*v1beta1.Machine); ok {
			parts = append(parts, fmt.Sprintf("%s (%s)", m.Name, conditionLine(m.Status.Conditions, v1beta1.DeletingCondition)))
			return nil
		}
		if a, err := meta.Accessor(o); err == nil {
			parts = append(parts, a.GetName())
		}
		return nil
	})
	if len(parts) > 10 {
		parts = append(parts[:10], fmt.Sprintf("and %d more", len(parts)-10))
	}
	return strings.Join(parts, ", ")
}

func conditionLine(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return typ + " not set"
	}
	return fmt.Sprintf("%s=%s %s: %s", typ, c.Status, c.Reason, c.Message)
}

// teardown stops the managers and, if Machines are left (a failed scenario), strips their
// finalizers and deletes their Nodes so the next scenario starts clean.
func (s *Scenario) teardown() {
	for _, c := range append(append([]*faults.Component(nil), s.Managers...), s.Others...) {
		c.Stop(10 * time.Second)
	}
	s.cancel()
	machines := &v1beta1.MachineList{}
	if err := k8s.List(ctx, machines, client.InNamespace(s.NS)); err == nil {
		for i := range machines.Items {
			m := &machines.Items[i]
			if len(m.Finalizers) > 0 {
				_ = k8s.Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			}
			_ = k8s.Delete(ctx, m)
		}
	}
	for _, l := range []client.ObjectList{&v1beta1.MachineSetList{}, &v1beta1.MachineDeploymentList{}, &clusterv1.ClusterList{}} {
		if err := k8s.List(ctx, l, client.InNamespace(s.NS)); err != nil {
			continue
		}
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			obj := o.(client.Object)
			if len(obj.GetFinalizers()) > 0 {
				_ = k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			}
			_ = k8s.Delete(ctx, obj)
			return nil
		})
	}
	// Nodes of this scenario's instances (left by a failure, or by remote Machines).
	uids := map[string]bool{}
	for _, r := range tracker.Machines(s.NS) {
		uids[string(r.UID)] = true
	}
	nodes := &corev1.NodeList{}
	if err := k8s.List(ctx, nodes); err == nil {
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if uids[n.Labels["sim.machineapi.dev/instance"]] || n.Labels[scenarioNodeLabel] == s.NS {
				_ = k8s.Delete(ctx, n)
			}
		}
	}
	_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.NS}})
}

// logf writes a timestamped progress line to the spec's output.
func logf(format string, args ...any) {
	GinkgoWriter.Printf(time.Now().Format("15:04:05.000 ")+format+"\n", args...)
}

// scenarioNodeLabel marks Nodes a scenario created by hand, so teardown deletes them.
const scenarioNodeLabel = "faults.machineapi.dev/scenario"

// Scale sets a deployment's or set's replicas with a merge patch, as kubectl scale would.
func Scale(obj client.Object, replicas int) {
	GinkgoHelper()
	Expect(k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)))).To(Succeed())
}

// Annotate merges annotations into an object (a nil value removes the key).
func Annotate(obj client.Object, kv map[string]*string) {
	GinkgoHelper()
	parts := make([]string, 0, len(kv))
	for k, v := range kv {
		if v == nil {
			parts = append(parts, fmt.Sprintf("%q:null", k))
		} else {
			parts = append(parts, fmt.Sprintf("%q:%q", k, *v))
		}
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%s}}}`, strings.Join(parts, ","))
	Expect(k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// RunningMachines returns the scenario's Machines that are Running with a Node, by name.
func (s *Scenario) RunningMachines(pool string) []v1beta1.Machine {
	GinkgoHelper()
	list := &v1beta1.MachineList{}
	opts := []client.ListOption{client.InNamespace(s.NS)}
	if pool != "" {
		opts = append(opts, client.MatchingLabels{faults.PoolLabel: pool})
	}
	Expect(k8s.List(ctx, list, opts...)).To(Succeed())
	var out []v1beta1.Machine
	for _, m := range list.Items {
		if m.DeletionTimestamp == nil && m.Status.Phase == v1beta1.MachinePhaseRunning && m.Status.NodeRef != nil {
			out = append(out, m)
		}
	}
	return out
}

// WaitRunning waits until pool has n Running Machines and returns them.
func (s *Scenario) WaitRunning(pool string, n int, timeout time.Duration) []v1beta1.Machine {
	GinkgoHelper()
	var got []v1beta1.Machine
	Eventually(func() int {
		got = s.RunningMachines(pool)
		return len(got)
	}).WithTimeout(timeout).WithPolling(time.Second).Should(BeNumerically(">=", n), "Running Machines of pool %s", pool)
	return got
}

// PlaceProbes puts a probe pod (with the given labels) on the Node of each Machine, and waits
// until the simulated kubelet runs them.
func (s *Scenario) PlaceProbes(machines []v1beta1.Machine, labels map[string]string) []*corev1.Pod {
	GinkgoHelper()
	var pods []*corev1.Pod
	for _, m := range machines {
		p := faults.ProbePod(s.NS, m.Status.NodeRef.Name, 0, labels)
		Expect(k8s.Create(ctx, p)).To(Succeed())
		pods = append(pods, p)
	}
	Eventually(func(g Gomega) {
		for _, p := range pods {
			got := &corev1.Pod{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
		}
	}).Should(Succeed())
	return pods
}

// BudgetAllows succeeds once kube-controller-manager's disruption controller has observed the
// budget's generation and allows that many disruptions; for Eventually.
func BudgetAllows(pdb *policyv1.PodDisruptionBudget, allowed int32) func(Gomega) {
	return func(g Gomega) {
		got := &policyv1.PodDisruptionBudget{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), "observed generation of %s", pdb.Name)
		g.Expect(got.Status.DisruptionsAllowed).To(Equal(allowed), "disruptions allowed by %s (%d healthy, %d desired)",
			pdb.Name, got.Status.CurrentHealthy, got.Status.DesiredHealthy)
	}
}

// Gone reports whether an object no longer exists.
func Gone(obj client.Object) func() bool {
	return func() bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err)
	}
}

// dumpSets describes the MachineDeployments and MachineSets of ns (replicas, pause, the
// deployment's annotations on a set, status and conditions) and the namespace's events in time
// order.
func dumpSets(ns string) string {
	var b strings.Builder
	mds := &v1beta1.MachineDeploymentList{}
	_ = k8s.List(ctx, mds, client.InNamespace(ns))
	for _, md := range mds.Items {
		fmt.Fprintf(&b, "MachineDeployment %s gen=%d replicas=%d paused=%v annotations=%v\n    status=%+v\n",
			md.Name, md.Generation, ptr.Deref(md.Spec.Replicas, -1), md.Spec.Paused, md.Annotations, md.Status)
	}
	sets := &v1beta1.MachineSetList{}
	_ = k8s.List(ctx, sets, client.InNamespace(ns))
	for _, set := range sets.Items {
		fmt.Fprintf(&b, "MachineSet %s gen=%d replicas=%d annotations=%v\n    status=%+v\n",
			set.Name, set.Generation, ptr.Deref(set.Spec.Replicas, -1), set.Annotations, set.Status)
	}
	events := &corev1.EventList{}
	_ = k8s.List(ctx, events, client.InNamespace(ns))
	sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp) })
	for _, e := range events.Items {
		fmt.Fprintf(&b, "%s %s %s/%s %s: %s\n", e.LastTimestamp.Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}

// startAPIServerAgain starts the killed API server and waits until the suite's own watches (the
// tracker) are back: a Machine created in the default namespace, where no manager looks, must be
// seen within 20 seconds, and its deletion too. Until then the invariants would be blind to what
// the managers do in the minute after a restart (faults.PatientTransport says why they could be).
// About 5 seconds is usual: the restarted API server answers watches of custom resources with
// 503 and Retry-After: 5 until it serves them again.
func startAPIServerAgain() {
	GinkgoHelper()
	Expect(plane.StartAPIServer(ctx)).To(Succeed())
	back := time.Now()
	m := faults.Machine(metav1.NamespaceDefault, "")
	m.GenerateName = "watch-probe-"
	Expect(k8s.Create(ctx, m)).To(Succeed())
	seen := func(gone bool) func() bool {
		return func() bool {
			for _, r := range tracker.Machines(metav1.NamespaceDefault) {
				if r.UID == m.UID {
					return !gone || !r.Gone.IsZero()
				}
			}
			return false
		}
	}
	Expect(tracker.WaitFor(ctx, 20*time.Second, seen(false))).To(Succeed(),
		"the suite's watch sees a Machine created right after the API server came back")
	Expect(k8s.Delete(ctx, m)).To(Succeed())
	Expect(tracker.WaitFor(ctx, 20*time.Second, seen(true))).To(Succeed(),
		"the suite's watch sees that Machine's deletion")
	logf("kube-apiserver back; the suite's watches saw a change %s later", time.Since(back).Round(time.Millisecond))
}
