package drain_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"machineapi.dev/drain"
	"machineapi.dev/drain/internal/test"
)

// TestNodeNotFound protects a caller's way to tell "there is no node" from other failures.
func TestNodeNotFound(t *testing.T) {
	d, err := drain.New(fake.NewClientset(), drain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, drainErr := d.Drain(ctx, "gone", drain.Step{})
	_, planErr := d.Plan(ctx, "gone", drain.Step{})
	uncordonErr := d.Uncordon(ctx, "gone")
	for name, err := range map[string]error{"Drain": drainErr, "Plan": planErr, "Uncordon": uncordonErr} {
		if !errors.Is(err, drain.ErrNodeNotFound) || !apierrors.IsNotFound(err) {
			t.Errorf("%s: got %v, want an error wrapping ErrNodeNotFound and the API's NotFound", name, err)
		}
	}
}

// TestNewRejectsInvalidOptions protects that a misconfiguration is reported at construction,
// naming the option, rather than at the first drain.
func TestNewRejectsInvalidOptions(t *testing.T) {
	tests := map[string]drain.Options{
		"StepTimeout":                   {StepTimeout: -1},
		"MaxConcurrentEvictions":        {MaxConcurrentEvictions: -1},
		"UnreachableTerminatingTimeout": {UnreachableTerminatingTimeout: -1},
		"GracePeriodSeconds":            {GracePeriodSeconds: ptr.To[int64](-1)},
		"SkipLabelKey":                  {SkipLabelKey: "not a label key!"},
	}
	for option, opts := range tests {
		t.Run(option, func(t *testing.T) {
			_, err := drain.New(fake.NewClientset(), opts)
			if err == nil || !strings.Contains(err.Error(), option) {
				t.Errorf("got %v, want an error naming %s", err, option)
			}
		})
	}
}

// TestDrainStopsEvictingWhenItsContextEnds protects the bound on a step: once its context is
// over, no further eviction is sent, the step still returns what it did, and it is not done.
func TestDrainStopsEvictingWhenItsContextEnds(t *testing.T) {
	client := fake.NewClientset(
		test.Node("n1").Build(),
		test.Pod("default", "a").OnNode("n1").Running().Build(),
		test.Pod("default", "b").OnNode("n1").Running().Build(),
		test.Pod("default", "c").OnNode("n1").Running().Build(),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sent []string
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		sent = append(sent, evictedName(action))
		cancel() // the step's time is up as soon as the first eviction is answered
		return true, nil, nil
	})
	d, err := drain.New(client, drain.Options{MaxConcurrentEvictions: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Drain(ctx, "n1", drain.Step{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "evictions sent", sent, []string{"a"})
	check(t, "Evicted", keys(res.Evicted), []string{"default/a"})
	check(t, "Remaining", keys(res.Remaining), []string{"default/a", "default/b", "default/c"})
	for _, b := range res.Blocked {
		if b.Cause != drain.CauseStepDeadline {
			t.Errorf("pod %s blocked with cause %s, want %s", b.Pod, b.Cause, drain.CauseStepDeadline)
		}
	}
	if res.Done || len(res.Blocked) != 2 {
		t.Errorf("Done=%v with %d blocked, want not done with b and c blocked by the deadline", res.Done, len(res.Blocked))
	}
}

// TestDrainReportsRefusedEvictionsAndCallsHooks protects that a 429 the prediction did not
// expect is reported as blocked by the budget, and that the progress hooks see every request.
func TestDrainReportsRefusedEvictionsAndCallsHooks(t *testing.T) {
	client := fake.NewClientset(
		test.Node("n1").Unschedulable().Build(),
		test.Pod("default", "api-0").OnNode("n1").Running().Build(),
		test.Pod("default", "web-0").OnNode("n1").Label("app", "web").Running().Build(),
		test.PDB("default", "web").Allows(1).Build(),
	)
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" || evictedName(action) != "web-0" {
			return false, nil, nil
		}
		// Another drain took the budget's last disruption between our read and our request.
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	})
	var mu sync.Mutex
	var events []string
	d, err := drain.New(client, drain.Options{
		OnPodDeletionOrEvictionStarted: func(pod *corev1.Pod, usingEviction bool) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, fmt.Sprintf("started %s eviction=%v", pod.Name, usingEviction))
		},
		OnPodDeletionOrEvictionFinished: func(pod *corev1.Pod, usingEviction bool, err error) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, fmt.Sprintf("finished %s eviction=%v refused=%v", pod.Name, usingEviction, apierrors.IsTooManyRequests(err)))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Drain(context.Background(), "n1", drain.Step{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Evicted", keys(res.Evicted), []string{"default/api-0"})
	check(t, "Blocked", blocked(res.Blocked), []string{
		"default/web-0 PodDisruptionBudget: blocked by PodDisruptionBudget default/web (the Eviction API refused: Cannot evict pod as it would violate the pod's disruption budget.)",
	})
	if res.Cordoned {
		t.Errorf("Cordoned=true for a node that already was")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{
		"started api-0 eviction=true", "finished api-0 eviction=true refused=false",
		"started web-0 eviction=true", "finished web-0 eviction=true refused=true",
	} {
		if !slices.Contains(events, want) {
			t.Errorf("hook calls %q lack %q", events, want)
		}
	}
}

// evictedName returns the pod an eviction request of a fake clientset is for.
func evictedName(action k8stesting.Action) string {
	return action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name
}

// TestDrainAsksForTheConfiguredGracePeriod protects the grace period evictions request: each
// pod's own by default, Options.GracePeriodSeconds when set, and 1s on an unreachable node.
func TestDrainAsksForTheConfiguredGracePeriod(t *testing.T) {
	tests := map[string]struct {
		node *corev1.Node
		opts drain.Options
		want *int64
	}{
		"the pod's own by default":          {node: test.Node("n1").Ready(corev1.ConditionTrue).Build(), want: nil},
		"Options.GracePeriodSeconds if set": {node: test.Node("n1").Ready(corev1.ConditionTrue).Build(), opts: drain.Options{GracePeriodSeconds: ptr.To[int64](7)}, want: ptr.To[int64](7)},
		"1s when the node is unreachable":   {node: test.Node("n1").Ready(corev1.ConditionUnknown).Build(), opts: drain.Options{GracePeriodSeconds: ptr.To[int64](7)}, want: ptr.To[int64](1)},
		"1s when unreachable is assumed":    {node: test.Node("n1").Ready(corev1.ConditionTrue).Build(), opts: drain.Options{AssumeUnreachable: true}, want: ptr.To[int64](1)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(tc.node, test.Pod("default", "a").OnNode("n1").Running().Build())
			var asked []*int64
			client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() == "eviction" {
					asked = append(asked, action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).DeleteOptions.GracePeriodSeconds)
				}
				return false, nil, nil
			})
			d, err := drain.New(client, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Drain(context.Background(), "n1", drain.Step{}); err != nil {
				t.Fatal(err)
			}
			if len(asked) != 1 || !ptr.Equal(asked[0], tc.want) {
				t.Errorf("eviction requests asked for grace periods %v, want one asking for %v", derefAll(asked), deref(tc.want))
			}
		})
	}
}

// TestSkipLabelIsConfigurable protects that callers choose the label that leaves a pod alone.
func TestSkipLabelIsConfigurable(t *testing.T) {
	client := fake.NewClientset(test.Node("n1").Build(),
		test.Pod("default", "custom").OnNode("n1").Label("example.com/drain", "never").Running().Build(),
		test.Pod("default", "default-label").OnNode("n1").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).Running().Build())
	d, err := drain.New(client, drain.Options{SkipLabelKey: "example.com/drain", SkipLabelValue: "never"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d.Plan(context.Background(), "n1", drain.Step{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "Evict", keys(plan.Evict), []string{"default/default-label"})
	check(t, "Skipped", skipped(plan.Skipped), []string{"default/custom: has label example.com/drain=never"})
}

func deref(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func derefAll(ps []*int64) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, deref(p))
	}
	return out
}
