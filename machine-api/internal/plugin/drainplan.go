package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinedrain"
)

func newDrainPlanCommand(e *env) *cobra.Command {
	var opts drain.Options
	cmd := &cobra.Command{
		Use: "drain-plan MACHINE",
		Short: "Show what draining a Machine's Node would do right now: per pod its MachineDrainRule (or label), behaviour, " +
			"order group and what blocks it; pods to evict or delete, skipped and why, blocked by which PodDisruptionBudget (changes nothing)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return drainPlan(cmd.Context(), e, args[0], opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DeleteEmptyDirData, "delete-emptydir-data", true, "plan as a manager that evicts pods using emptyDir volumes (its default)")
	return cmd
}

// drainPlan prints the plan of the next drain step of the Machine's Node, with the Machine's
// MachineDrainRules and pod deadline: counted from status.deletion.nodeDrainStartTime when
// machine-manager has begun draining, else as if draining began now.
func drainPlan(ctx context.Context, e *env, name string, opts drain.Options) error {
	m := &v1beta1.Machine{}
	if err := e.client.Get(ctx, types.NamespacedName{Namespace: e.namespace, Name: name}, m); err != nil {
		return fmt.Errorf("getting machine %s/%s: %w", e.namespace, name, err)
	}
	if m.Status.NodeRef == nil {
		return fmt.Errorf("machine %s/%s has no Node yet: there is nothing to drain", m.Namespace, m.Name)
	}
	d, err := drain.New(e.clientset, opts)
	if err != nil {
		return err
	}
	rules, err := machinedrain.ReadRules(ctx, e.client, m)
	if err != nil {
		return fmt.Errorf("a drain of machine %s/%s waits until this is fixed: %w", m.Namespace, m.Name, err)
	}
	decision := drain.DecideNode(machinedrain.LocalRequest(m, time.Now()))
	node := m.Status.NodeRef.Name
	plan, err := d.Plan(ctx, node, decision.Step(rules))
	if errors.Is(err, drain.ErrNodeNotFound) {
		return fmt.Errorf("the Node %s of machine %s/%s no longer exists: deleting the machine would skip the drain", node, m.Namespace, m.Name)
	}
	if err != nil {
		return err
	}
	w := e.streams.Out
	fmt.Fprintf(w, "Draining Node %s (machine %s/%s) now would:\n", node, m.Namespace, m.Name)
	if v, ok := m.Annotations[v1beta1.DoNotDisruptAnnotation]; ok {
		fmt.Fprintf(w, "  (its set does not delete it on purpose while the %s annotation (%q) holds: a drain starts on a direct deletion, or once the hold ends)\n",
			v1beta1.DoNotDisruptAnnotation, v)
	}
	switch decision.Action {
	case drain.NodeSkip:
		fmt.Fprintf(w, "  (nothing on deletion: %s)\n", machinedrain.LocalRequest(m, time.Now()).Skip)
	case drain.NodeWait:
		fmt.Fprintln(w, "  (on deletion, only once the machine's preDrain hooks are removed)")
	}
	if plan.Cordoned {
		fmt.Fprintln(w, "  keep the Node cordoned (it already is)")
	} else {
		fmt.Fprintln(w, "  cordon the Node")
	}
	switch {
	case plan.DeletingUnreachable:
		fmt.Fprintf(w, "  treat the Node as unreachable (Ready=Unknown since %s, longer than %s): delete the pods that have to leave, with a 1s grace period, instead of evicting them\n",
			plan.UnreachableSince.UTC().Format(time.RFC3339), plan.UnreachableDeleteAt.Sub(plan.UnreachableSince))
	case plan.Unreachable:
		fmt.Fprintln(w, "  treat the Node as unreachable (Ready=Unknown): evict with a 1s grace period and stop waiting for pods stuck terminating")
		if !plan.UnreachableDeleteAt.IsZero() {
			fmt.Fprintf(w, "  from %s on (unreachable since %s), delete the pods that have to leave instead of evicting them\n",
				plan.UnreachableDeleteAt.UTC().Format(time.RFC3339), plan.UnreachableSince.UTC().Format(time.RFC3339))
		}
	}
	if !plan.PodDeadline.IsZero() {
		fmt.Fprintf(w, "  delete each pod still holding the drain its grace period before the pod deadline %s (spec.deletion.drainDeadlineSeconds)\n",
			plan.PodDeadline.UTC().Format(time.RFC3339))
	}
	list(w, "evict", plan.Evict, func(p types.NamespacedName) string { return p.String() })
	list(w, "delete, instead of evicting,", plan.Delete, func(d drain.DeletedPod) string { return d.Pod.String() + ": " + d.Reason })
	list(w, "wait for, already terminating,", plan.Terminating, func(p types.NamespacedName) string { return p.String() })
	list(w, "be blocked on", plan.Blocked, func(b drain.BlockedPod) string { return b.Pod.String() + ": " + b.Reason })
	list(w, "leave on the Node", plan.Skipped, func(s drain.SkippedPod) string { return s.Pod.String() + ": " + s.Reason })
	if len(plan.Evict)+len(plan.Delete)+len(plan.Terminating)+len(plan.Blocked) == 0 {
		fmt.Fprintln(w, "  finish at once: no pod has to go")
	}
	podTable(w, plan.Pods)
	return nil
}

// podTable prints, per pod, how the rules treat it and what the step does with it now.
func podTable(w io.Writer, verdicts []drain.PodVerdict) {
	if len(verdicts) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPods:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  POD\tBEHAVIOR\tORDER\tRULE\tNOW")
	for _, v := range verdicts {
		order := "-"
		if v.Behavior == drain.BehaviorDrain {
			order = fmt.Sprint(v.Order)
		}
		rule := v.Rule
		if rule == "" {
			rule = "(none)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", v.Pod, v.Behavior, order, rule, now(v))
	}
	_ = tw.Flush()
}

// now says what the step does with a pod, and why when it does not simply evict it.
func now(v drain.PodVerdict) string {
	switch {
	case v.Action == drain.PodEvict:
		return "evict"
	case v.Action == drain.PodDelete:
		return fmt.Sprintf("delete (grace period %ds): %s", v.GracePeriodSeconds, v.Reason)
	case v.Action == drain.PodSkip:
		return "leave: " + v.Reason
	case v.Blocked != nil:
		return fmt.Sprintf("wait (%s): %s", v.Blocked.Cause, strings.TrimPrefix(v.Reason, "not evicted: "))
	}
	return "wait: already terminating"
}

func list[T any](w io.Writer, verb string, items []T, show func(T) string) {
	if len(items) == 0 {
		return
	}
	noun := "pods"
	if len(items) == 1 {
		noun = "pod"
	}
	fmt.Fprintf(w, "  %s %d %s:\n", verb, len(items), noun)
	lines := make([]string, 0, len(items))
	for _, it := range items {
		lines = append(lines, "    "+show(it))
	}
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}
