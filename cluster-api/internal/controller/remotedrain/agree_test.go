package remotedrain

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"machineapi.dev/drain"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinedrain"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// TestLocalAndRemoteDrainAgree protects the one drain policy: for the same pods, preDrain hooks,
// timeout, pod deadline, MachineDrainRules and start of draining, machine-manager draining a Node
// of its own cluster and this controller draining a Node of a workload cluster decide the same
// (wait, skip, give up or drain), with the same deadlines and the same verdict on every pod.
//
// Each side is given the inputs in its own form. Local: the Machine's preDrain hooks and
// status.deletion.nodeDrainStartTime, read as the machine controller's drainNode reads them
// (machinedrain.LocalRequest, then drain.DecideNode; its Node is in reach here). Remote: the same Machine with
// this controller's drain-workload-node hook as well, and the start of draining in its
// WorkloadNodeDrained condition, read by decide. The pods are then stepped through
// Drainer.DecidePods, which both Drainer.Drain calls consult, with the drain options both managers
// use by default.
func TestLocalAndRemoteDrainAgree(t *testing.T) {
	now := t0.Add(time.Hour)
	ago := func(d time.Duration) *time.Time { return ptr.To(now.Add(-d)) }
	pods := []drain.ObservedPod{
		{Pod: agreePod("api-0", nil), Kubectl: drain.KubectlVerdict{Evict: true}},
		{Pod: agreePod("web-0", map[string]string{"app": "web"}), Kubectl: drain.KubectlVerdict{Evict: true}},
		{Pod: agreePod("agent-x", nil), Kubectl: drain.KubectlVerdict{Warning: "ignoring DaemonSet-managed Pods"}},
		{Pod: agreePod("keep", map[string]string{drain.DefaultSkipLabelKey: drain.DefaultSkipLabelValue}), Kubectl: drain.KubectlVerdict{}},
		{Pod: agreePod("cache-0", map[string]string{"app": "cache"}), Kubectl: drain.KubectlVerdict{Evict: true}},
		{Pod: agreePod("job-0", map[string]string{"app": "job", drain.DefaultSkipLabelKey: "wait-completed"}), Kubectl: drain.KubectlVerdict{Evict: true}},
	}
	// The MachineDrainRules of the Machines' namespace, which both drains read (the remote one from
	// the management cluster, whatever cluster the Node is in).
	rules := []machinev1.MachineDrainRule{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "keep-cache"}, Spec: machinev1.MachineDrainRuleSpec{
			Drain: machinev1.MachineDrainRuleDrain{Behavior: machinev1.DrainBehaviorSkip},
			Pods:  []machinev1.MachineDrainRulePods{{Selector: machinev1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-last"}, Spec: machinev1.MachineDrainRuleSpec{
			Drain: machinev1.MachineDrainRuleDrain{Behavior: machinev1.DrainBehaviorDrain, Order: ptr.To[int32](1)},
			Pods:  []machinev1.MachineDrainRulePods{{Selector: machinev1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		}},
	}
	drainedPods := []string{
		"default/agent-x Skip: ignoring DaemonSet-managed Pods",
		"default/api-0 Evict",
		"default/cache-0 Skip: skipped by MachineDrainRule ns/keep-cache",
		"default/job-0 Wait: not evicted: waits until it completes (label machine.machineapi.dev/drain=wait-completed)",
		"default/keep Skip: has label machine.machineapi.dev/drain=skip",
		"default/web-0 Wait: waits for order group 0 to finish first (1 pod left); its own group is 1 (Drain by MachineDrainRule ns/web-last)",
	}
	tests := map[string]struct {
		hooks     []machinev1.LifecycleHook // preDrain hooks of others
		timeout   *int32
		deadline  *int32        // drainDeadlineSeconds
		deleted   time.Duration // how long ago the Machine was deleted
		startedAt *time.Time    // when draining began; nil: it has not
		excluded  bool
		want      drain.NodeDecision
		wantPods  []string
	}{
		"nothing holds it: both start draining now, without a bound": {
			deleted:  time.Minute,
			want:     drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now, Started: true},
			wantPods: drainedPods,
		},
		"another preDrain hook holds it: both wait, past what would be the deadline from the deletion": {
			hooks: []machinev1.LifecycleHook{{Name: "backup", Owner: "ops"}}, timeout: ptr.To[int32](60), deleted: 10 * time.Minute,
			want: drain.NodeDecision{Action: drain.NodeWait},
		},
		"the hook is gone long after the deletion: the timeout counts from now, when draining starts": {
			timeout: ptr.To[int32](60), deleted: 10 * time.Minute,
			want:     drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now, Started: true, Deadline: now.Add(time.Minute)},
			wantPods: drainedPods,
		},
		"draining for 30s of 60: both go on, with the same deadline": {
			timeout: ptr.To[int32](60), deleted: 10 * time.Minute, startedAt: ago(30 * time.Second),
			want:     drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-30 * time.Second), Deadline: now.Add(30 * time.Second)},
			wantPods: drainedPods,
		},
		"draining for the whole timeout: both give up": {
			timeout: ptr.To[int32](60), deleted: 10 * time.Minute, startedAt: ago(time.Minute),
			want: drain.NodeDecision{Action: drain.NodeGiveUp, StartedAt: now.Add(-time.Minute), Deadline: now},
		},
		"no timeout: both drain however long it takes": {
			deleted: 24 * time.Hour, startedAt: ago(23 * time.Hour),
			want:     drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-23 * time.Hour)},
			wantPods: drainedPods,
		},
		"drainDeadlineSeconds: both delete the pods holding the drain its grace period before the same deadline": {
			timeout: ptr.To[int32](600), deadline: ptr.To[int32](60), deleted: 10 * time.Minute, startedAt: ago(30 * time.Second),
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-30 * time.Second), Deadline: now.Add(570 * time.Second), PodDeadline: now.Add(30 * time.Second)},
			wantPods: []string{
				"default/agent-x Skip: ignoring DaemonSet-managed Pods",
				"default/api-0 Evict",
				"default/cache-0 Skip: skipped by MachineDrainRule ns/keep-cache",
				"default/job-0 Delete: deleted, not evicted, with its 30s grace period, to be gone by the pod deadline 2030-01-02T04:04:35Z; until then it waits until it completes (label machine.machineapi.dev/drain=wait-completed)",
				"default/keep Skip: has label machine.machineapi.dev/drain=skip",
				"default/web-0 Delete: deleted, not evicted, with its 30s grace period, to be gone by the pod deadline 2030-01-02T04:04:35Z; until then it waits for order group 0 to finish first (1 pod left); its own group is 1 (Drain by MachineDrainRule ns/web-last)",
			},
		},
		"exclude-node-draining: both skip": {
			excluded: true, timeout: ptr.To[int32](60), deleted: time.Minute,
			want: drain.NodeDecision{Action: drain.NodeSkip},
		},
	}
	cluster := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	d, err := drain.New(nil, drain.Options{DeleteEmptyDirData: true}) // machine-manager's and cluster-manager's default
	if err != nil {
		t.Fatal(err)
	}
	obs := drain.Observation{
		Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		Now:  now,
		Pods: pods,
		PodDisruptionBudgets: []policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			base := machine(func(m *machinev1.Machine) {
				m.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-tc.deleted)))
				m.Spec.LifecycleHooks.PreDrain = slices.Clone(tc.hooks)
				m.Spec.Deletion = &machinev1.MachineDeletionSpec{NodeDrainTimeoutSeconds: tc.timeout, DrainDeadlineSeconds: tc.deadline}
				if tc.excluded {
					m.Annotations = map[string]string{machinev1.ExcludeNodeDrainingAnnotation: ""}
				}
			})

			local := base.DeepCopy()
			if tc.startedAt != nil {
				local.Status.Deletion = &machinev1.MachineDeletionStatus{NodeDrainStartTime: ptr.To(metav1.NewTime(*tc.startedAt))}
			}
			localDecision := drain.DecideNode(machinedrain.LocalRequest(local, now))

			remote := base.DeepCopy()
			hooked(remote)
			switch {
			case tc.startedAt != nil:
				drainCondition(metav1.ConditionFalse, *tc.startedAt)(remote)
			case len(tc.hooks) > 0:
				drainCondition(metav1.ConditionUnknown, now.Add(-tc.deleted))(remote) // as written while waiting
			}
			remoteDecision := decide(remote, cluster, now).decision

			if localDecision != tc.want || remoteDecision != tc.want {
				t.Errorf("decisions:\n local  %+v\n remote %+v\n want   %+v", localDecision, remoteDecision, tc.want)
			}
			localRules, err := machinedrain.Rules(local, rules)
			if err != nil {
				t.Fatal(err)
			}
			remoteRules, err := machinedrain.Rules(remote, rules)
			if err != nil {
				t.Fatal(err)
			}
			localPods, remotePods := stepVerdicts(t, d, localDecision.Step(localRules), localDecision, obs), stepVerdicts(t, d, remoteDecision.Step(remoteRules), remoteDecision, obs)
			if !slices.Equal(localPods, tc.wantPods) || !slices.Equal(remotePods, tc.wantPods) {
				t.Errorf("pod verdicts:\n local  %q\n remote %q\n want   %q", localPods, remotePods, tc.wantPods)
			}
		})
	}
}

// stepVerdicts is the verdict on every pod of the step the decision allows, or none when it
// allows no step.
func stepVerdicts(t *testing.T, d *drain.Drainer, step drain.Step, decision drain.NodeDecision, obs drain.Observation) []string {
	t.Helper()
	if decision.Action != drain.NodeDrain {
		return nil
	}
	plan, err := d.DecidePods(step, obs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range plan.Pods {
		s := fmt.Sprintf("%s %s", v.Pod, v.Action)
		if v.Reason != "" {
			s += ": " + v.Reason
		}
		out = append(out, s)
	}
	return out
}

// agreePod is a running, ready pod of a ReplicaSet on node n1.
func agreePod(name string, labels map[string]string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}
