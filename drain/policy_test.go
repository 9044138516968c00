package drain_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"

	"machineapi.dev/drain"
	"machineapi.dev/drain/internal/test"
)

// TestDecideNode protects the drain policy for a drain as a whole: what holds it comes first, then
// a reason to skip it, and the timeout counts from the start of draining, never from earlier.
func TestDecideNode(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		req  drain.NodeRequest
		want drain.NodeDecision
	}{
		"held by a hook: waits and does not start, whatever the timeout": {
			req:  drain.NodeRequest{Now: now, HeldBy: []string{"backup"}, Timeout: time.Second},
			want: drain.NodeDecision{Action: drain.NodeWait},
		},
		"held and nothing to drain: waits first": {
			req:  drain.NodeRequest{Now: now, HeldBy: []string{"backup"}, Skip: "no Node"},
			want: drain.NodeDecision{Action: drain.NodeWait},
		},
		"nothing to drain: skips, and does not start": {
			req:  drain.NodeRequest{Now: now, Skip: "no Node", Timeout: time.Minute},
			want: drain.NodeDecision{Action: drain.NodeSkip},
		},
		"the first step starts draining now; the deadline is a timeout away": {
			req:  drain.NodeRequest{Now: now, Timeout: time.Minute},
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now, Started: true, Deadline: now.Add(time.Minute)},
		},
		"a later step keeps the recorded start and its deadline": {
			req:  drain.NodeRequest{Now: now, StartedAt: now.Add(-50 * time.Second), Timeout: time.Minute},
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-50 * time.Second), Deadline: now.Add(10 * time.Second)},
		},
		"at the deadline: gives up": {
			req:  drain.NodeRequest{Now: now, StartedAt: now.Add(-time.Minute), Timeout: time.Minute},
			want: drain.NodeDecision{Action: drain.NodeGiveUp, StartedAt: now.Add(-time.Minute), Deadline: now},
		},
		"past the deadline: gives up": {
			req:  drain.NodeRequest{Now: now, StartedAt: now.Add(-time.Hour), Timeout: time.Minute},
			want: drain.NodeDecision{Action: drain.NodeGiveUp, StartedAt: now.Add(-time.Hour), Deadline: now.Add(-59 * time.Minute)},
		},
		"no timeout: no deadline, drains however long it has run": {
			req:  drain.NodeRequest{Now: now, StartedAt: now.Add(-24 * time.Hour)},
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-24 * time.Hour)},
		},
		"a pod deadline counts from the start of draining, like the timeout": {
			req:  drain.NodeRequest{Now: now, StartedAt: now.Add(-10 * time.Second), Timeout: time.Hour, PodDeadline: time.Minute},
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-10 * time.Second), Deadline: now.Add(59*time.Minute + 50*time.Second), PodDeadline: now.Add(50 * time.Second)},
		},
		"a pod deadline of the first step is a deadline away from now": {
			req:  drain.NodeRequest{Now: now, PodDeadline: time.Minute},
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now, Started: true, PodDeadline: now.Add(time.Minute)},
		},
		"a negative timeout is no bound either": {
			req:  drain.NodeRequest{Now: now, StartedAt: now.Add(-time.Hour), Timeout: -time.Second},
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-time.Hour)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := drain.DecideNode(tc.req); got != tc.want {
				t.Errorf("DecideNode = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDecidePods protects the drain policy for the pods of a node, from pure inputs: each rule
// gives its verdict, in the order the policy documents, and the plan's lists agree with the
// verdicts.
func TestDecidePods(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	running := func(name string) *test.PodBuilder { return test.Pod("default", name).OnNode("n1").Running() }
	evictable := drain.KubectlVerdict{Evict: true}
	web := func(name string) drain.ObservedPod {
		return drain.ObservedPod{Pod: *running(name).Label("app", "web").Build(), Kubectl: evictable}
	}
	tests := map[string]struct {
		node     *corev1.Node
		opts     drain.Options
		step     drain.Step
		pods     []drain.ObservedPod
		pdbs     []*policyv1.PodDisruptionBudget
		want     []string
		wantNext time.Time
	}{
		"a pod kubectl would evict and no budget protects is evicted": {
			pods: []drain.ObservedPod{{Pod: *running("api-0").Build(), Kubectl: evictable}},
			want: []string{"default/api-0 Evict"},
		},
		"the skip label wins over kubectl's verdict": {
			pods: []drain.ObservedPod{{Pod: *running("keep").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).Build(), Kubectl: evictable}},
			want: []string{"default/keep Skip: has label machine.machineapi.dev/drain=skip"},
		},
		"a configured skip label": {
			opts: drain.Options{SkipLabelKey: "example.com/keep", SkipLabelValue: "yes"},
			pods: []drain.ObservedPod{
				{Pod: *running("a").Label("example.com/keep", "yes").Build(), Kubectl: evictable},
				{Pod: *running("b").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).Build(), Kubectl: evictable},
			},
			want: []string{"default/a Skip: has label example.com/keep=yes", "default/b Evict"},
		},
		"kubectl leaves a pod alone: skipped with kubectl's warning, or as a mirror pod": {
			pods: []drain.ObservedPod{
				{Pod: *running("agent-x").Build(), Kubectl: drain.KubectlVerdict{Warning: "ignoring DaemonSet-managed Pods"}},
				{Pod: *running("etcd-n1").Mirror().Build()},
				{Pod: *running("other").Build()},
			},
			want: []string{
				"default/agent-x Skip: ignoring DaemonSet-managed Pods",
				"default/etcd-n1 Skip: mirror pod: the kubelet runs it from a static manifest",
				"default/other Skip: left alone by kubectl's drain filters",
			},
		},
		"kubectl refuses a pod: it waits, blocked by the drain filters": {
			pods: []drain.ObservedPod{{Pod: *running("scratch").EmptyDir().Build(), Kubectl: drain.KubectlVerdict{Refusal: "Pods with local storage"}}},
			want: []string{"default/scratch Wait DrainFilter: not evicted: kubectl's drain filters refuse Pods with local storage"},
		},
		"a terminating pod on a reachable node is waited for, not evicted again": {
			pods: []drain.ObservedPod{{Pod: *running("leaving").Terminating(now.Add(-time.Hour), 30).Build(), Kubectl: evictable}},
			want: []string{"default/leaving Wait"},
		},
		"unreachable node: a pod with a long grace period is evicted again, an overdue one skipped": {
			node: test.Node("n1").Ready(corev1.ConditionUnknown).Build(),
			pods: []drain.ObservedPod{
				{Pod: *running("long").Terminating(now.Add(-10*time.Second), 3600).Build(), Kubectl: evictable},
				{Pod: *running("stuck").Terminating(now.Add(-time.Minute), 1).Build(), Kubectl: evictable},
			},
			want: []string{
				"default/long Evict",
				"default/stuck Skip: terminating for 59s past its deletion time on an unreachable node: not waited for",
			},
		},
		"a budget that allows one disruption admits one pod per step, in name order": {
			pods: []drain.ObservedPod{web("web-1"), web("web-0")},
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(1).Build()},
			want: []string{
				"default/web-0 Evict",
				"default/web-1 Wait PodDisruptionBudget: blocked by PodDisruptionBudget default/web (allows 1 disruption, taken in this step by default/web-0)",
			},
		},
		"a budget whose status is out of date blocks": {
			pods: []drain.ObservedPod{web("web-0")},
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(1).Stale().Build()},
			want: []string{"default/web-0 Wait PodDisruptionBudget: blocked by PodDisruptionBudget default/web (its status is out of date: observedGeneration 1 < generation 2; the disruption controller of kube-controller-manager updates it)"},
		},
		"pods bound to another node are not the node's": {
			pods: []drain.ObservedPod{{Pod: *test.Pod("default", "elsewhere").OnNode("n2").Running().Build(), Kubectl: evictable}},
		},

		// Rules and the override label.
		"a Skip rule leaves the pods it selects, and only those": {
			step: drain.Step{Rules: []drain.PodRule{{Name: "rule keep", Behavior: drain.BehaviorSkip, Pods: []drain.PodSelector{{Labels: selector("app=db")}}}}},
			pods: []drain.ObservedPod{
				{Pod: *running("db-0").Label("app", "db").Build(), Kubectl: evictable},
				{Pod: *running("api-0").Build(), Kubectl: evictable},
			},
			want: []string{"default/api-0 Evict", "default/db-0 Skip: skipped by rule keep"},
		},
		"a WaitCompleted pod is never evicted: it waits while it runs, and is not waited for once completed": {
			step: drain.Step{Rules: []drain.PodRule{{Name: "rule jobs", Behavior: drain.BehaviorWaitCompleted, Pods: []drain.PodSelector{{Labels: selector("app=job")}}}}},
			pods: []drain.ObservedPod{
				{Pod: *running("job-0").Label("app", "job").Build(), Kubectl: evictable},
				{Pod: *running("job-1").Label("app", "job").Phase(corev1.PodSucceeded).Build(), Kubectl: evictable},
				{Pod: *running("job-2").Label("app", "job").Phase(corev1.PodFailed).Build(), Kubectl: evictable},
			},
			want: []string{
				"default/job-0 Wait WaitCompleted: not evicted: waits until it completes (WaitCompleted by rule jobs)",
				"default/job-1 Skip: completed (Succeeded): not waited for (WaitCompleted by rule jobs)",
				"default/job-2 Skip: completed (Failed): not waited for (WaitCompleted by rule jobs)",
			},
		},
		"rules select by the labels of the pod's namespace": {
			step: drain.Step{Rules: []drain.PodRule{{Name: "rule prod", Behavior: drain.BehaviorSkip, Pods: []drain.PodSelector{{Namespaces: selector("tier=prod")}}}}},
			pods: []drain.ObservedPod{
				{Pod: *test.Pod("shop", "cart").OnNode("n1").Running().Build(), Kubectl: evictable},
				{Pod: *test.Pod("lab", "toy").OnNode("n1").Running().Build(), Kubectl: evictable},
			},
			want: []string{"lab/toy Evict", "shop/cart Skip: skipped by rule prod"},
		},
		"the pod label overrides every rule": {
			step: drain.Step{Rules: []drain.PodRule{{Name: "rule all", Behavior: drain.BehaviorSkip}}},
			pods: []drain.ObservedPod{
				{Pod: *running("a").Label(drain.DefaultSkipLabelKey, "wait-completed").Build(), Kubectl: evictable},
				{Pod: *running("b").Label(drain.DefaultSkipLabelKey, "order-0").Build(), Kubectl: evictable},
				{Pod: *running("c").Build(), Kubectl: evictable},
			},
			want: []string{
				"default/a Wait WaitCompleted: not evicted: waits until it completes (label machine.machineapi.dev/drain=wait-completed)",
				"default/b Evict",
				"default/c Skip: skipped by rule all",
			},
		},
		"order groups drain lowest first: a later group waits while a pod of an earlier one is left, terminating or blocked": {
			step: drain.Step{Rules: []drain.PodRule{
				{Name: "rule db", Behavior: drain.BehaviorDrain, Order: 10, Pods: []drain.PodSelector{{Labels: selector("app=db")}}},
			}},
			pods: []drain.ObservedPod{
				{Pod: *running("api-0").Terminating(now, 30).Build(), Kubectl: evictable},
				{Pod: *running("db-0").Label("app", "db").Build(), Kubectl: evictable},
				{Pod: *running("web-0").Label(drain.DefaultSkipLabelKey, "order-5").Build(), Kubectl: evictable},
			},
			want: []string{
				"default/api-0 Wait",
				"default/db-0 Wait DrainOrder: waits for order group 0 to finish first (1 pod left); its own group is 10 (Drain by rule db)",
				"default/web-0 Wait DrainOrder: waits for order group 0 to finish first (1 pod left); its own group is 5 (label machine.machineapi.dev/drain=order-5)",
			},
		},
		"once a group's pods are gone the next group drains; skipped, DaemonSet and WaitCompleted pods hold no group": {
			step: drain.Step{Rules: []drain.PodRule{
				{Name: "rule db", Behavior: drain.BehaviorDrain, Order: 10, Pods: []drain.PodSelector{{Labels: selector("app=db")}}},
				{Name: "rule jobs", Behavior: drain.BehaviorWaitCompleted, Pods: []drain.PodSelector{{Labels: selector("app=job")}}},
			}},
			pods: []drain.ObservedPod{
				{Pod: *running("agent-x").Build(), Kubectl: drain.KubectlVerdict{Warning: "ignoring DaemonSet-managed Pods"}},
				{Pod: *running("db-0").Label("app", "db").Build(), Kubectl: evictable},
				{Pod: *running("db-1").Label("app", "db").Build(), Kubectl: evictable},
				{Pod: *running("job-0").Label("app", "job").Build(), Kubectl: evictable},
				{Pod: *running("keep").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).Build()},
			},
			want: []string{
				"default/agent-x Skip: ignoring DaemonSet-managed Pods",
				"default/db-0 Evict",
				"default/db-1 Evict",
				"default/job-0 Wait WaitCompleted: not evicted: waits until it completes (WaitCompleted by rule jobs)",
				"default/keep Skip: has label machine.machineapi.dev/drain=skip",
			},
		},

		// The pod deadline.
		"before its grace period's worth of the pod deadline, a blocked pod waits and says when it will be deleted": {
			step: drain.Step{PodDeadline: now.Add(40 * time.Second)},
			pods: []drain.ObservedPod{web("web-0")},
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Build()},
			want: []string{
				"default/web-0 Wait PodDisruptionBudget: blocked by PodDisruptionBudget default/web (allows 0 disruptions); deleted at 2026-01-01T12:00:10Z unless gone before (pod deadline 2026-01-01T12:00:40Z minus its 30s grace period)",
			},
			wantNext: now.Add(10 * time.Second),
		},
		"from the pod deadline minus its grace period, a pod that would wait is deleted over its budget; one that can be evicted is evicted": {
			step: drain.Step{PodDeadline: now.Add(30 * time.Second)},
			pods: []drain.ObservedPod{web("web-0"), {Pod: *running("api-0").Build(), Kubectl: evictable}},
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Build()},
			want: []string{
				"default/api-0 Evict",
				"default/web-0 Delete 30s [default/web]: deleted, not evicted, with its 30s grace period, to be gone by the pod deadline 2026-01-01T12:00:30Z; until then it was blocked by PodDisruptionBudget default/web (allows 0 disruptions)",
			},
		},
		"past the pod deadline, WaitCompleted pods and later order groups are deleted too, each by its own grace period; kubectl's refusals never": {
			step: drain.Step{PodDeadline: now.Add(10 * time.Second), Rules: []drain.PodRule{
				{Name: "rule db", Behavior: drain.BehaviorDrain, Order: 1, Pods: []drain.PodSelector{{Labels: selector("app=db")}}},
			}},
			pods: []drain.ObservedPod{
				{Pod: *running("db-0").Label("app", "db").GracePeriod(10).Build(), Kubectl: evictable},
				{Pod: *running("job-0").Label(drain.DefaultSkipLabelKey, "wait-completed").GracePeriod(5).Build(), Kubectl: evictable},
				{Pod: *running("scratch").EmptyDir().GracePeriod(0).Build(), Kubectl: drain.KubectlVerdict{Refusal: "Pods with local storage"}},
				{Pod: *running("slow").Label(drain.DefaultSkipLabelKey, "wait-completed").GracePeriod(60).Build(), Kubectl: evictable},
			},
			want: []string{
				"default/db-0 Delete 10s: deleted, not evicted, with its 10s grace period, to be gone by the pod deadline 2026-01-01T12:00:10Z; until then it waits for order group 0 to finish first (1 pod left); its own group is 1 (Drain by rule db)",
				"default/job-0 Wait WaitCompleted: not evicted: waits until it completes (label machine.machineapi.dev/drain=wait-completed); deleted at 2026-01-01T12:00:05Z unless gone before (pod deadline 2026-01-01T12:00:10Z minus its 5s grace period)",
				"default/scratch Wait DrainFilter: not evicted: kubectl's drain filters refuse Pods with local storage",
				"default/slow Delete 60s: deleted, not evicted, with its 60s grace period, to be gone by the pod deadline 2026-01-01T12:00:10Z; until then it waits until it completes (label machine.machineapi.dev/drain=wait-completed)",
			},
			wantNext: now.Add(5 * time.Second),
		},

		// An unreachable node.
		"unreachable for less than the bound: a budget still holds its pod, until the bound": {
			node: test.Node("n1").ReadySince(corev1.ConditionUnknown, now.Add(-time.Minute)).Build(),
			pods: []drain.ObservedPod{web("web-0")},
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Build()},
			want: []string{
				"default/web-0 Wait PodDisruptionBudget: blocked by PodDisruptionBudget default/web (allows 0 disruptions)",
			},
			wantNext: now.Add(4 * time.Minute),
		},
		"unreachable for longer than the bound: every pod that has to leave is deleted, whatever its budget or group": {
			node: test.Node("n1").ReadySince(corev1.ConditionUnknown, now.Add(-5*time.Minute)).Build(),
			step: drain.Step{Rules: []drain.PodRule{{Name: "rule db", Behavior: drain.BehaviorDrain, Order: 3, Pods: []drain.PodSelector{{Labels: selector("app=db")}}}}},
			pods: []drain.ObservedPod{
				web("web-0"),
				{Pod: *running("db-0").Label("app", "db").Build(), Kubectl: evictable},
				{Pod: *running("keep").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).Build()},
			},
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Build()},
			want: []string{
				"default/db-0 Delete 1s: deleted, not evicted: the node has been unreachable since 2026-01-01T11:55:00Z, longer than 5m0s, so the pod cannot be serving",
				"default/keep Skip: has label machine.machineapi.dev/drain=skip",
				"default/web-0 Delete 1s [default/web]: deleted, not evicted: the node has been unreachable since 2026-01-01T11:55:00Z, longer than 5m0s, so the pod cannot be serving",
			},
		},
		"the bound is an option": {
			node: test.Node("n1").ReadySince(corev1.ConditionUnknown, now.Add(-time.Minute)).Build(),
			opts: drain.Options{UnreachableDeleteAfter: 30 * time.Second},
			pods: []drain.ObservedPod{{Pod: *running("api-0").Build(), Kubectl: evictable}},
			want: []string{"default/api-0 Delete 1s: deleted, not evicted: the node has been unreachable since 2026-01-01T11:59:00Z, longer than 30s, so the pod cannot be serving"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, err := drain.New(nil, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			node := tc.node
			if node == nil {
				node = test.Node("n1").Ready(corev1.ConditionTrue).Build()
			}
			obs := drain.Observation{Node: node, Now: now, Pods: tc.pods, NamespaceLabels: map[string]map[string]string{
				"shop": {"tier": "prod"}, "lab": {"tier": "dev"},
			}}
			for _, pdb := range tc.pdbs {
				obs.PodDisruptionBudgets = append(obs.PodDisruptionBudgets, *pdb)
			}
			plan, err := d.DecidePods(tc.step, obs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range plan.Pods {
				got = append(got, verdict(v))
			}
			check(t, "verdicts", got, tc.want)
			checkListsAgree(t, plan)
			if !plan.NextDeletion.Equal(tc.wantNext) {
				t.Errorf("NextDeletion = %s, want %s", plan.NextDeletion, tc.wantNext)
			}
		})
	}
}

// TestPodTreatment protects how the rules and the override label decide a pod's behaviour, order
// group and the rule named for it: the label first, then the most protective rule (Skip, then
// WaitCompleted, then the Drain rule with the highest order, then the first name), then Drain in
// group 0.
func TestPodTreatment(t *testing.T) {
	rule := func(name string, b drain.PodBehavior, order int32, sel string) drain.PodRule {
		r := drain.PodRule{Name: name, Behavior: b, Order: order}
		if sel != "" {
			r.Pods = []drain.PodSelector{{Labels: selector(sel)}}
		}
		return r
	}
	tests := map[string]struct {
		rules  []drain.PodRule
		labels map[string]string
		want   string // "Behavior order rule"
	}{
		"no rule: Drain in group 0":           {want: "Drain 0 "},
		"a rule that does not select the pod": {rules: []drain.PodRule{rule("a", drain.BehaviorSkip, 0, "app=db")}, want: "Drain 0 "},
		"an empty pod list selects every pod": {rules: []drain.PodRule{rule("a", drain.BehaviorDrain, 4, "")}, want: "Drain 4 a"},
		"Skip wins over WaitCompleted and Drain, whatever the names": {
			rules: []drain.PodRule{rule("a", drain.BehaviorDrain, 9, ""), rule("b", drain.BehaviorWaitCompleted, 0, ""), rule("z", drain.BehaviorSkip, 0, "")},
			want:  "Skip 0 z",
		},
		"WaitCompleted wins over Drain": {
			rules: []drain.PodRule{rule("a", drain.BehaviorDrain, 9, ""), rule("b", drain.BehaviorWaitCompleted, 0, "")},
			want:  "WaitCompleted 0 b",
		},
		"among Drain rules the highest order wins (drained last)": {
			rules: []drain.PodRule{rule("a", drain.BehaviorDrain, 1, ""), rule("b", drain.BehaviorDrain, 7, ""), rule("c", drain.BehaviorDrain, 3, "")},
			want:  "Drain 7 b",
		},
		"a tie goes to the first name": {
			rules: []drain.PodRule{rule("m", drain.BehaviorSkip, 0, ""), rule("k", drain.BehaviorSkip, 0, "")},
			want:  "Skip 0 k",
		},
		"the label skip overrides the rules": {
			rules: []drain.PodRule{rule("a", drain.BehaviorDrain, 1, "")}, labels: map[string]string{drain.DefaultSkipLabelKey: "skip"},
			want: "Skip 0 label machine.machineapi.dev/drain=skip",
		},
		"the label order-<n> overrides a Skip rule": {
			rules: []drain.PodRule{rule("a", drain.BehaviorSkip, 0, "")}, labels: map[string]string{drain.DefaultSkipLabelKey: "order-12"},
			want: "Drain 12 label machine.machineapi.dev/drain=order-12",
		},
		"an unknown label value is ignored, and said so": {
			rules: []drain.PodRule{rule("a", drain.BehaviorWaitCompleted, 0, "")}, labels: map[string]string{drain.DefaultSkipLabelKey: "wait-complete"},
			want: "WaitCompleted 0 label machine.machineapi.dev/drain=wait-complete ignored (use skip, wait-completed or order-<n>); a",
		},
		"a negative order in the label is not understood": {
			labels: map[string]string{drain.DefaultSkipLabelKey: "order--1"},
			want:   "Drain 0 label machine.machineapi.dev/drain=order--1 ignored (use skip, wait-completed or order-<n>)",
		},
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, err := drain.New(nil, drain.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pod := test.Pod("default", "p").OnNode("n1").Running().Build()
			for k, v := range tc.labels {
				pod.Labels[k] = v
			}
			plan, err := d.DecidePods(drain.Step{Rules: tc.rules}, drain.Observation{
				Node: test.Node("n1").Build(), Now: now, Pods: []drain.ObservedPod{{Pod: *pod, Kubectl: drain.KubectlVerdict{Evict: true}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			v := plan.Pods[0]
			if got := fmt.Sprintf("%s %d %s", v.Behavior, v.Order, v.Rule); got != tc.want {
				t.Errorf("treatment = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDecidePodsRefusesBadRules protects that a rule the policy cannot use fails the step, naming
// the rule, instead of being read as Drain.
func TestDecidePodsRefusesBadRules(t *testing.T) {
	d, err := drain.New(nil, drain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs := drain.Observation{Node: test.Node("n1").Build()}
	for name, r := range map[string]drain.PodRule{
		`unknown behavior "Evict"`: {Name: "bad", Behavior: "Evict"},
		"order -1 is negative":     {Name: "bad", Behavior: drain.BehaviorDrain, Order: -1},
	} {
		_, err := d.DecidePods(drain.Step{Rules: []drain.PodRule{r}}, obs)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), `"bad"`) {
			t.Errorf("got %v, want an error naming the rule and saying %s", err, name)
		}
	}
}

func selector(s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// verdict is "ns/name Action[ Cause][ grace [budgets]][: reason]".
func verdict(v drain.PodVerdict) string {
	s := fmt.Sprintf("%s %s", v.Pod, v.Action)
	if v.Blocked != nil {
		s += " " + string(v.Blocked.Cause)
	}
	if v.Action == drain.PodDelete {
		s += fmt.Sprintf(" %ds", v.GracePeriodSeconds)
		if len(v.PodDisruptionBudgets) > 0 {
			var names []string
			for _, b := range v.PodDisruptionBudgets {
				names = append(names, b.String())
			}
			s += " [" + strings.Join(names, ",") + "]"
		}
	}
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	return s
}

// checkListsAgree checks that Evict, Terminating, Blocked and Skipped group exactly plan.Pods.
func checkListsAgree(t *testing.T, plan *drain.Plan) {
	t.Helper()
	var evict, deleted, terminating, blockedPods, skippedPods []string
	for _, v := range plan.Pods {
		switch {
		case v.Action == drain.PodEvict:
			evict = append(evict, v.Pod.String())
		case v.Action == drain.PodDelete:
			deleted = append(deleted, fmt.Sprintf("%s %ds: %s", v.Pod, v.GracePeriodSeconds, v.Reason))
		case v.Action == drain.PodWait && v.Blocked != nil:
			blockedPods = append(blockedPods, fmt.Sprintf("%s %s: %s", v.Pod, v.Blocked.Cause, v.Reason))
		case v.Action == drain.PodWait:
			terminating = append(terminating, v.Pod.String())
		case v.Action == drain.PodSkip:
			skippedPods = append(skippedPods, fmt.Sprintf("%s: %s", v.Pod, v.Reason))
		}
	}
	check(t, "Evict", keys(plan.Evict), evict)
	var planDeleted []string
	for _, d := range plan.Delete {
		planDeleted = append(planDeleted, fmt.Sprintf("%s %ds: %s", d.Pod, d.GracePeriodSeconds, d.Reason))
	}
	check(t, "Delete", planDeleted, deleted)
	check(t, "Terminating", keys(plan.Terminating), terminating)
	check(t, "Blocked", blocked(plan.Blocked), blockedPods)
	check(t, "Skipped", skipped(plan.Skipped), skippedPods)
}
