package drain_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"machineapi.dev/drain"
)

// A controller calls Drain on every reconcile and requeues until the node is drained. Here a fake
// clientset stands in for the API server, and evicted pods vanish at once, as if a kubelet had
// stopped them.
func ExampleDrainer_Drain() {
	client := fake.NewClientset(node("n1"), replicaPod("api-0", nil), replicaPod("api-1", nil), daemonSet("agent"), daemonPod("agent-x", "agent"))
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		eviction := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), eviction.Namespace, eviction.Name)
	})
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	d, err := drain.New(client, drain.Options{Clock: clock})
	if err != nil {
		panic(err)
	}

	startedAt := clock.Now()
	for step := 1; step <= 10; step++ {
		res, err := d.Drain(context.Background(), "n1", drain.Step{StartedAt: startedAt})
		if err != nil {
			panic(err)
		}
		fmt.Printf("step %d: %s\n", step, res.Summary())
		if res.Done {
			break
		}
		clock.Step(10 * time.Second) // the caller's requeue
	}
	// Output:
	// step 1: draining node n1: 2 pods remaining (2 evicted in this step)
	// step 2: drained node n1 in 10s; 1 pod left in place
}

// Plan previews a drain step without changing anything: here a PodDisruptionBudget that allows
// no disruption holds web-0 back, and the DaemonSet pod stays on the node.
func ExampleDrainer_Plan() {
	client := fake.NewClientset(node("n1"),
		replicaPod("api-0", nil),
		replicaPod("web-0", map[string]string{"app": "web"}),
		pdb("web"),
		daemonSet("agent"), daemonPod("agent-x", "agent"))
	d, err := drain.New(client, drain.Options{})
	if err != nil {
		panic(err)
	}

	plan, err := d.Plan(context.Background(), "n1", drain.Step{})
	if err != nil {
		panic(err)
	}
	fmt.Println("already cordoned:", plan.Cordoned)
	fmt.Println("evict:", plan.Evict)
	for _, b := range plan.Blocked {
		fmt.Printf("blocked: pod %s %s\n", b.Pod, b.Reason)
	}
	for _, s := range plan.Skipped {
		fmt.Printf("skipped: pod %s: %s\n", s.Pod, s.Reason)
	}
	// Output:
	// already cordoned: false
	// evict: [default/api-0]
	// blocked: pod default/web-0 blocked by PodDisruptionBudget default/web (allows 0 disruptions)
	// skipped: pod default/agent-x: ignoring DaemonSet-managed Pods
}

// A Step's rules give pods a behaviour and an order group: here the databases are drained only
// once the other pods are gone, a batch job is waited for until it completes, and a pod's own
// label overrides the rules.
func ExamplePodRule() {
	client := fake.NewClientset(node("n1"),
		replicaPod("api-0", nil),
		replicaPod("db-0", map[string]string{"app": "db"}),
		replicaPod("db-1", map[string]string{"app": "db", drain.DefaultSkipLabelKey: "skip"}),
		replicaPod("job-0", map[string]string{"workload": "batch"}))
	d, err := drain.New(client, drain.Options{})
	if err != nil {
		panic(err)
	}
	step := drain.Step{Rules: []drain.PodRule{
		{Name: "databases-last", Behavior: drain.BehaviorDrain, Order: 100, Pods: []drain.PodSelector{{Labels: labels.SelectorFromSet(labels.Set{"app": "db"})}}},
		{Name: "batch-jobs-finish", Behavior: drain.BehaviorWaitCompleted, Pods: []drain.PodSelector{{Labels: labels.SelectorFromSet(labels.Set{"workload": "batch"})}}},
	}}

	plan, err := d.Plan(context.Background(), "n1", step)
	if err != nil {
		panic(err)
	}
	for _, v := range plan.Pods {
		fmt.Printf("%s: %s, group %d (%s): %s", v.Pod.Name, v.Behavior, v.Order, v.Rule, v.Action)
		if v.Reason != "" {
			fmt.Printf(": %s", v.Reason)
		}
		fmt.Println()
	}
	// Output:
	// api-0: Drain, group 0 (): Evict
	// db-0: Drain, group 100 (databases-last): Wait: waits for order group 0 to finish first (1 pod left); its own group is 100 (Drain by databases-last)
	// db-1: Skip, group 0 (label machine.machineapi.dev/drain=skip): Skip: has label machine.machineapi.dev/drain=skip
	// job-0: WaitCompleted, group 0 (batch-jobs-finish): Wait: not evicted: waits until it completes (WaitCompleted by batch-jobs-finish)
}

// Summary is meant for a condition message: it names what holds the drain back.
func ExampleResult_Summary() {
	res := drain.Result{
		Node:      "n1",
		Remaining: []types.NamespacedName{{Namespace: "default", Name: "api-0"}, {Namespace: "default", Name: "api-1"}, {Namespace: "default", Name: "web-0"}},
		Blocked: []drain.BlockedPod{{
			Pod:    types.NamespacedName{Namespace: "default", Name: "web-0"},
			Cause:  drain.CausePodDisruptionBudget,
			Reason: "blocked by PodDisruptionBudget default/web (allows 0 disruptions)",
		}},
		Elapsed: 3 * time.Minute,
	}
	fmt.Println(res.Summary())
	// Output:
	// draining node n1 for 3m0s: 3 pods remaining; pod default/web-0 blocked by PodDisruptionBudget default/web (allows 0 disruptions)
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// replicaPod is a running, ready pod of a ReplicaSet on node n1.
func replicaPod(name string, labels map[string]string) *corev1.Pod {
	controller := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: &controller}}},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func daemonSet(name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)}}
}

func daemonPod(name, daemonSet string) *corev1.Pod {
	pod := replicaPod(name, nil)
	pod.OwnerReferences[0].Kind, pod.OwnerReferences[0].Name, pod.OwnerReferences[0].UID = "DaemonSet", daemonSet, types.UID(daemonSet)
	return pod
}

// pdb is a budget for pods labelled app=<name> that allows no disruption: maxUnavailable 0, and a
// status of zero disruptions allowed (the fake clientset runs no disruption controller; its status
// is the zero value).
func pdb(name string) *policyv1.PodDisruptionBudget {
	maxUnavailable := intstr.FromInt32(0)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &maxUnavailable,
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
}
