package drain

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubectldrain "k8s.io/kubectl/pkg/drain"
)

// Drainer drains nodes one bounded step at a time. It keeps no state between calls: everything a
// step needs is read from the API server, so any number of controllers or workers may share one,
// and a restarted controller simply carries on. It is cheap to build; build one per call when the
// options differ per node.
type Drainer struct {
	client kubernetes.Interface
	opts   Options
	// keep selects the pods without the skip label.
	keep string
}

// New returns a Drainer that talks to the API server through client. It fails only when opts are
// invalid, and the error names the option.
func New(client kubernetes.Interface, opts Options) (*Drainer, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	keep, err := opts.keepSelector()
	if err != nil {
		return nil, err
	}
	return &Drainer{client: client, opts: opts, keep: keep}, nil
}

// Drain runs one drain step on the node and returns at the latest after Options.StepTimeout: it
// cordons the node if it is schedulable, evicts through the Eviction API the pods it may evict now
// and deletes those the pod deadline or the unreachable bound say to delete (exactly those Plan
// would list), and reports what is left. It never waits for pods to go: call it again, for
// example after a requeue (by Result.NextDeletion at the latest), until Result.Done.
//
// step carries the drain's rules, its pod deadline and when draining this node began (for
// Result.Elapsed), normally NodeDecision.Step of the DecideNode decision that allowed this step;
// the zero Step drains every pod in one group, without a deadline. Drain does not consult
// DecideNode itself: what holds a drain and when it gives up are the caller's to ask. Per-pod
// problems (a budget, a failed eviction) are in Result.Blocked, not in the error; the error is
// for a step that could not look at the node at all or a rule it cannot use, and wraps
// ErrNodeNotFound when the Node does not exist.
func (d *Drainer) Drain(ctx context.Context, nodeName string, step Step) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StepTimeout)
	defer cancel()
	node, err := d.begin(ctx, nodeName, step)
	if err != nil {
		return nil, err
	}
	res := &Result{Node: nodeName}
	h := newHelper(ctx, d.client, d.opts, d.keep, nil)
	if !node.Spec.Unschedulable {
		if err := kubectldrain.RunCordonOrUncordon(h, node, true); err != nil {
			return nil, fmt.Errorf("cordoning node %s (the drainer needs permission to patch nodes): %w", nodeName, notFound(err))
		}
		res.Cordoned = true
	}
	obs, err := d.observe(ctx, h, node, step.Rules)
	if err != nil {
		return nil, err
	}
	plan := decidePods(d.opts, step, obs)
	h = newHelper(ctx, d.client, d.opts, d.keep, plan.GracePeriodSeconds)
	outcomes := d.removeAll(ctx, h, plan, obs.PodDisruptionBudgets)

	res.record(plan, outcomes)
	if !step.StartedAt.IsZero() {
		res.Elapsed = d.opts.Clock.Since(step.StartedAt)
	}
	return res, nil
}

// Plan answers "what would a drain step do to this node right now" and changes nothing: it does
// not cordon and sends no eviction or deletion, not even a dry run. It reads the same objects a
// step reads and decides with the same code, so Drain called right after it, with the same step,
// evicts exactly Plan.Evict, deletes Plan.Delete and reports the same Blocked and Skipped pods,
// unless the cluster changed in between (or the Eviction API refuses an eviction the budgets'
// status allowed).
func (d *Drainer) Plan(ctx context.Context, nodeName string, step Step) (*Plan, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StepTimeout)
	defer cancel()
	node, err := d.begin(ctx, nodeName, step)
	if err != nil {
		return nil, err
	}
	obs, err := d.observe(ctx, newHelper(ctx, d.client, d.opts, d.keep, nil), node, step.Rules)
	if err != nil {
		return nil, err
	}
	return decidePods(d.opts, step, obs), nil
}

// begin is what a step and its plan start with: the step's rules checked, the Node read.
func (d *Drainer) begin(ctx context.Context, nodeName string, step Step) (*corev1.Node, error) {
	if err := validateRules(step.Rules); err != nil {
		return nil, err
	}
	return d.getNode(ctx, nodeName)
}

// Uncordon makes the node schedulable again, for example when a drain is abandoned. It does
// nothing if the node is schedulable, and wraps ErrNodeNotFound when the Node does not exist.
func (d *Drainer) Uncordon(ctx context.Context, nodeName string) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StepTimeout)
	defer cancel()
	node, err := d.getNode(ctx, nodeName)
	if err != nil {
		return err
	}
	if err := kubectldrain.RunCordonOrUncordon(newHelper(ctx, d.client, d.opts, d.keep, nil), node, false); err != nil {
		return fmt.Errorf("uncordoning node %s (the drainer needs permission to patch nodes): %w", nodeName, notFound(err))
	}
	return nil
}

func (d *Drainer) getNode(ctx context.Context, name string) (*corev1.Node, error) {
	node, err := d.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting node %s: %w", name, notFound(err))
	}
	return node, nil
}

// notFound adds ErrNodeNotFound to an error that says the node is gone, keeping the original.
func notFound(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: %w", ErrNodeNotFound, err)
	}
	return err
}
