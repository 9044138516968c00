package drain_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"machineapi.dev/drain"
	"machineapi.dev/drain/internal/test"
)

// TestPlanUsesKubectlFilters protects the split of a node's pods into evict, wait, blocked and
// skipped, with kubectl's filters deciding which pods stay and their messages saying why.
func TestPlanUsesKubectlFilters(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	agent := test.DaemonSet("kube-system", "agent")
	objects := []runtime.Object{
		test.Node("n1").Ready(corev1.ConditionTrue).Build(),
		agent,
		test.Pod("kube-system", "agent-x").OnNode("n1").OwnedByDaemonSet(agent).Running().Build(),
		test.Pod("kube-system", "etcd-n1").OnNode("n1").Mirror().Running().Build(),
		test.Pod("default", "api-0").OnNode("n1").Running().Build(),
		test.Pod("default", "done").OnNode("n1").Phase(corev1.PodSucceeded).Build(),
		test.Pod("default", "orphan").OnNode("n1").Unmanaged().Running().Build(),
		test.Pod("default", "keep").OnNode("n1").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).EmptyDir().Running().Build(),
		test.Pod("default", "leaving").OnNode("n1").Running().Terminating(now.Add(-time.Minute), 30).Build(),
		test.Pod("default", "scratch").OnNode("n1").EmptyDir().Running().Build(),
		test.Pod("default", "web-0").OnNode("n1").Label("app", "web").Running().Build(),
		test.PDB("default", "web").Allows(0).Build(),
		test.Pod("default", "elsewhere").OnNode("n2").Running().Build(),
	}
	tests := map[string]struct {
		opts        drain.Options
		wantEvict   []string
		wantBlocked []string
	}{
		"emptyDir data is kept by default: its pod blocks the drain": {
			wantEvict: []string{"default/api-0", "default/done", "default/orphan"},
			wantBlocked: []string{
				"default/scratch DrainFilter: not evicted: kubectl's drain filters refuse Pods with local storage (set Options.DeleteEmptyDirData to evict it and lose that data)",
				"default/web-0 PodDisruptionBudget: blocked by PodDisruptionBudget default/web (allows 0 disruptions)",
			},
		},
		"DeleteEmptyDirData lets its pod be evicted": {
			opts:      drain.Options{DeleteEmptyDirData: true},
			wantEvict: []string{"default/api-0", "default/done", "default/orphan", "default/scratch"},
			wantBlocked: []string{
				"default/web-0 PodDisruptionBudget: blocked by PodDisruptionBudget default/web (allows 0 disruptions)",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(objects...)
			tc.opts.Clock = clocktesting.NewFakePassiveClock(now)
			d, err := drain.New(client, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := d.Plan(context.Background(), "n1", drain.Step{})
			if err != nil {
				t.Fatal(err)
			}
			check(t, "Evict", keys(plan.Evict), tc.wantEvict)
			check(t, "Terminating", keys(plan.Terminating), []string{"default/leaving"})
			check(t, "Blocked", blocked(plan.Blocked), tc.wantBlocked)
			check(t, "Skipped", skipped(plan.Skipped), []string{
				"default/keep: has label machine.machineapi.dev/drain=skip",
				"kube-system/agent-x: ignoring DaemonSet-managed Pods",
				"kube-system/etcd-n1: mirror pod: the kubelet runs it from a static manifest",
			})
			if plan.Cordoned || plan.Unreachable || plan.GracePeriodSeconds != nil {
				t.Errorf("plan: Cordoned=%v Unreachable=%v GracePeriodSeconds=%v, want a schedulable, reachable node and the pods' own grace periods",
					plan.Cordoned, plan.Unreachable, plan.GracePeriodSeconds)
			}
		})
	}
}

func keys(in []types.NamespacedName) []string {
	out := make([]string, 0, len(in))
	for _, k := range in {
		out = append(out, k.String())
	}
	return out
}

func blocked(in []drain.BlockedPod) []string {
	out := make([]string, 0, len(in))
	for _, b := range in {
		out = append(out, fmt.Sprintf("%s %s: %s", b.Pod, b.Cause, b.Reason))
	}
	return out
}

func skipped(in []drain.SkippedPod) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, fmt.Sprintf("%s: %s", s.Pod, s.Reason))
	}
	return out
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}
