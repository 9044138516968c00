package drain

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"machineapi.dev/drain/internal/test"
)

// TestBudgetsAdmit protects the prediction of the Eviction API's decision: which pods a budget
// blocks, that each admitted pod spends a disruption, and that the reason names the budget.
func TestBudgetsAdmit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := func(name string) *test.PodBuilder { return test.Pod("default", name).Label("app", "web").OnNode("n1") }
	tests := map[string]struct {
		pdbs []*policyv1.PodDisruptionBudget
		pods []*corev1.Pod
		// want maps each pod to its reason; "" means admitted.
		want map[string]string
	}{
		"a pod no budget selects is admitted": {
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": ""},
		},
		"a budget allowing 0 disruptions blocks a ready pod and is named": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(0).Build()},
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": "blocked by PodDisruptionBudget default/web (allows 0 disruptions)"},
		},
		"each admitted pod spends a disruption, the next pod is blocked by the taker": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(1).Build()},
			pods: []*corev1.Pod{web("web-0").Running().Build(), web("web-1").Running().Build()},
			want: map[string]string{
				"web-0": "",
				"web-1": "blocked by PodDisruptionBudget default/web (allows 1 disruption, taken in this step by default/web-0)",
			},
		},
		"a budget allowing 2 admits 2 pods": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(2).Build()},
			pods: []*corev1.Pod{web("web-0").Running().Build(), web("web-1").Running().Build()},
			want: map[string]string{"web-0": "", "web-1": ""},
		},
		"pending, finished and terminating pods are not protected by budgets": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(0).Build()},
			pods: []*corev1.Pod{
				web("pending").Phase(corev1.PodPending).Build(),
				web("succeeded").Phase(corev1.PodSucceeded).Build(),
				web("failed").Phase(corev1.PodFailed).Build(),
				web("terminating").Running().Terminating(now, 30).Build(),
			},
			want: map[string]string{"pending": "", "succeeded": "", "failed": "", "terminating": ""},
		},
		"an unready pod is admitted under AlwaysAllow": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(0).AlwaysAllowUnhealthy().Build()},
			pods: []*corev1.Pod{web("web-0").Unready().Build()},
			want: map[string]string{"web-0": ""},
		},
		"an unready pod is admitted when the budget is otherwise healthy": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(0).Healthy(3, 3).Build()},
			pods: []*corev1.Pod{web("web-0").Unready().Build()},
			want: map[string]string{"web-0": ""},
		},
		"an unready pod is blocked when the budget lacks healthy pods": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(0).Healthy(2, 3).Build()},
			pods: []*corev1.Pod{web("web-0").Unready().Build()},
			want: map[string]string{"web-0": "blocked by PodDisruptionBudget default/web (allows 0 disruptions)"},
		},
		"a budget whose status is not observed yet blocks even with disruptions allowed": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(5).Stale().Build()},
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": "blocked by PodDisruptionBudget default/web (its status is out of date: observedGeneration 1 < generation 2; the disruption controller of kube-controller-manager updates it)"},
		},
		"a negative disruptions allowed blocks": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("default", "web").Allows(-1).Build()},
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": "blocked by PodDisruptionBudget default/web (allows -1 disruptions)"},
		},
		"a pod selected by two budgets is blocked, both named": {
			pdbs: []*policyv1.PodDisruptionBudget{
				test.PDB("default", "web").Allows(5).Build(),
				test.PDB("default", "all-web").Selecting(map[string]string{"app": "web"}).Allows(5).Build(),
			},
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": "blocked by PodDisruptionBudgets default/web, default/all-web: the Eviction API refuses pods selected by more than one budget; delete one or narrow its selector"},
		},
		"a budget in another namespace does not apply": {
			pdbs: []*policyv1.PodDisruptionBudget{test.PDB("other", "web").Allows(0).Build()},
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": ""},
		},
		"an empty selector selects every pod of the namespace": {
			pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
				pdb := test.PDB("default", "everything").Allows(0).Build()
				pdb.Spec.Selector = &metav1.LabelSelector{}
				return pdb
			}()},
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": "blocked by PodDisruptionBudget default/everything (allows 0 disruptions)"},
		},
		"a budget without selector or with an invalid one selects nothing": {
			pdbs: []*policyv1.PodDisruptionBudget{
				func() *policyv1.PodDisruptionBudget {
					pdb := test.PDB("default", "none").Allows(0).Build()
					pdb.Spec.Selector = nil
					return pdb
				}(),
				func() *policyv1.PodDisruptionBudget {
					pdb := test.PDB("default", "bad").Allows(0).Build()
					pdb.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
					return pdb
				}(),
			},
			pods: []*corev1.Pod{web("web-0").Running().Build()},
			want: map[string]string{"web-0": ""},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var pdbs []policyv1.PodDisruptionBudget
			for _, pdb := range tc.pdbs {
				pdbs = append(pdbs, *pdb)
			}
			b := newBudgets(pdbs)
			for _, pod := range tc.pods {
				got := ""
				if blocked := b.admit(pod); blocked != nil {
					got = blocked.Reason
					if blocked.Cause != CausePodDisruptionBudget || len(blocked.PodDisruptionBudgets) == 0 {
						t.Errorf("pod %s: blocked with cause %q and budgets %v, want cause %q and the budgets named", pod.Name, blocked.Cause, blocked.PodDisruptionBudgets, CausePodDisruptionBudget)
					}
				}
				if want := tc.want[pod.Name]; got != want {
					t.Errorf("pod %s:\n got %q\nwant %q", pod.Name, got, want)
				}
			}
		})
	}
}

// TestDescribeRefusal protects the reason reported when the Eviction API answers 429 for a pod
// the prediction admitted: a budget is named when one selects the pod, otherwise it is throttling.
func TestDescribeRefusal(t *testing.T) {
	pod := test.Pod("default", "web-0").Label("app", "web").Running().Build()
	tests := map[string]struct {
		pdbs      []policyv1.PodDisruptionBudget
		wantCause Cause
		wantText  string
	}{
		"the budget read after the refusal allows nothing": {
			pdbs:      []policyv1.PodDisruptionBudget{*test.PDB("default", "web").Allows(0).Build()},
			wantCause: CausePodDisruptionBudget,
			wantText:  "blocked by PodDisruptionBudget default/web (allows 0 disruptions)",
		},
		"the budget changed since the API decided": {
			pdbs:      []policyv1.PodDisruptionBudget{*test.PDB("default", "web").Allows(1).Build()},
			wantCause: CausePodDisruptionBudget,
			wantText:  "blocked by PodDisruptionBudget default/web (the Eviction API refused: The disruption budget web needs 1 healthy pods and has 1 currently)",
		},
		"no budget selects the pod: the server throttled": {
			wantCause: CauseEvictionError,
			wantText:  "not evicted: the API server throttled the eviction request (429: The disruption budget web needs 1 healthy pods and has 1 currently); the next step retries",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := describeRefusal(tc.pdbs, pod, "The disruption budget web needs 1 healthy pods and has 1 currently")
			if got.Cause != tc.wantCause || got.Reason != tc.wantText {
				t.Errorf("got %s %q\nwant %s %q", got.Cause, got.Reason, tc.wantCause, tc.wantText)
			}
		})
	}
}
