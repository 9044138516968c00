package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func newDrainPlanCommand(e *env) *cobra.Command {
	var opts drain.Options
	cmd := &cobra.Command{
		Use:   "drain-plan MACHINE",
		Short: "Show what draining a Machine's Node would do right now: pods to evict, skipped and why, blocked by which PodDisruptionBudget (changes nothing)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return drainPlan(cmd.Context(), e, args[0], opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DeleteEmptyDirData, "delete-emptydir-data", true, "plan as a manager that evicts pods using emptyDir volumes (its default)")
	return cmd
}

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
	node := m.Status.NodeRef.Name
	plan, err := d.Plan(ctx, node)
	if errors.Is(err, drain.ErrNodeNotFound) {
		return fmt.Errorf("Node %s of machine %s/%s no longer exists: deleting the machine would skip the drain", node, m.Namespace, m.Name)
	}
	if err != nil {
		return err
	}
	w := e.streams.Out
	fmt.Fprintf(w, "Draining Node %s (machine %s/%s) now would:\n", node, m.Namespace, m.Name)
	if _, ok := m.Annotations[v1beta1.ExcludeNodeDrainingAnnotation]; ok {
		fmt.Fprintf(w, "  (nothing on deletion: the machine has the %s annotation, so its deletion skips the drain)\n", v1beta1.ExcludeNodeDrainingAnnotation)
	}
	if plan.Cordoned {
		fmt.Fprintln(w, "  keep the Node cordoned (it already is)")
	} else {
		fmt.Fprintln(w, "  cordon the Node")
	}
	if plan.Unreachable {
		fmt.Fprintln(w, "  treat the Node as unreachable (Ready=Unknown): evict with a 1s grace period and stop waiting for pods stuck terminating")
	}
	list(w, "evict", plan.Evict, func(p types.NamespacedName) string { return p.String() })
	list(w, "wait for, already terminating,", plan.Terminating, func(p types.NamespacedName) string { return p.String() })
	list(w, "be blocked on", plan.Blocked, func(b drain.BlockedPod) string { return b.Pod.String() + ": " + b.Reason })
	list(w, "leave on the Node", plan.Skipped, func(s drain.SkippedPod) string { return s.Pod.String() + ": " + s.Reason })
	if len(plan.Evict)+len(plan.Terminating)+len(plan.Blocked) == 0 {
		fmt.Fprintln(w, "  finish at once: no pod has to go")
	}
	return nil
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
