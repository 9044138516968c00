package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func newRolloutCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Inspect, plan and undo MachineDeployment rollouts",
	}
	history := &cobra.Command{
		Use:   "history MACHINEDEPLOYMENT",
		Short: "List a MachineDeployment's revisions: its MachineSets, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rolloutHistory(cmd.Context(), e, args[0])
		},
	}
	var toRevision int64
	undo := &cobra.Command{
		Use:   "undo MACHINEDEPLOYMENT",
		Short: "Roll back to the previous revision's template (or --to-revision)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rolloutUndo(cmd.Context(), e, args[0], toRevision)
		},
	}
	undo.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to (default: the one before the current)")
	var file string
	plan := &cobra.Command{
		Use:   "plan MACHINEDEPLOYMENT [-f CHANGED.yaml]",
		Short: "For each Machine: keep, update in place (which fields) or replace (why), and the order; changes nothing",
		Long: "Show what a MachineDeployment's rollout does to each of its Machines, for its live spec or, with -f, for a\n" +
			"changed manifest before it is applied (the whole new spec; the API server checks it in a dry run), and the\n" +
			"order in which its strategy replaces them. Nothing is changed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rolloutPlan(cmd.Context(), e, args[0], file)
		},
	}
	plan.Flags().StringVarP(&file, "filename", "f", "", "a manifest of the changed MachineDeployment (- for standard input)")
	cmd.AddCommand(history, undo, plan)
	return cmd
}

// revision is one MachineSet of a deployment.
type revision struct {
	number int64
	set    *v1beta1.MachineSet
}

// revisions returns the deployment and its MachineSets by revision, oldest first.
func revisions(ctx context.Context, e *env, name string) (*v1beta1.MachineDeployment, []revision, error) {
	md := &v1beta1.MachineDeployment{}
	if err := e.client.Get(ctx, types.NamespacedName{Namespace: e.namespace, Name: name}, md); err != nil {
		return nil, nil, fmt.Errorf("getting MachineDeployment %s/%s: %w", e.namespace, name, err)
	}
	sets := &v1beta1.MachineSetList{}
	if err := e.client.List(ctx, sets, client.InNamespace(md.Namespace)); err != nil {
		return nil, nil, err
	}
	var out []revision
	for i := range sets.Items {
		ms := &sets.Items[i]
		if ref := metav1.GetControllerOf(ms); ref == nil || ref.UID != md.UID {
			continue
		}
		n, _ := strconv.ParseInt(ms.Annotations[v1beta1.RevisionAnnotation], 10, 64)
		out = append(out, revision{number: n, set: ms})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	return md, out, nil
}

func rolloutHistory(ctx context.Context, e *env, name string) error {
	md, revs, err := revisions(ctx, e, name)
	if err != nil {
		return err
	}
	if len(revs) == 0 {
		fmt.Fprintf(e.streams.Out, "MachineDeployment %s/%s has no MachineSet yet\n", md.Namespace, md.Name)
		return nil
	}
	current := md.Annotations[v1beta1.RevisionAnnotation]
	tw := tabwriter.NewWriter(e.streams.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tMACHINESET\tREPLICAS\tAGE\tPROVIDERSPEC")
	for _, r := range revs {
		mark := ""
		if strconv.FormatInt(r.number, 10) == current {
			mark = " (current)"
		}
		fmt.Fprintf(tw, "%d%s\t%s\t%d\t%s\t%s\n", r.number, mark, r.set.Name, r.set.Status.Replicas,
			duration.HumanDuration(time.Since(r.set.CreationTimestamp.Time)), providerSpecSummary(r.set.Spec.Template.Spec.ProviderSpec))
	}
	return tw.Flush()
}

func providerSpecSummary(p v1beta1.ProviderSpec) string {
	switch {
	case p.MachineClass != nil:
		return "machineClass " + p.MachineClass.Name
	case p.Value != nil:
		s := string(p.Value.Raw)
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		return s
	}
	return "-"
}

// rolloutUndo restores an old revision's template spec: the documented rollback (a JSON patch, so
// that fields the old spec does not have are removed). The old MachineSet then matches the
// template again and becomes the newest revision; the strategy rolls the Machines back to it.
func rolloutUndo(ctx context.Context, e *env, name string, to int64) error {
	md, revs, err := revisions(ctx, e, name)
	if err != nil {
		return err
	}
	current, _ := strconv.ParseInt(md.Annotations[v1beta1.RevisionAnnotation], 10, 64)
	var target *revision
	for i := range revs {
		r := &revs[i]
		switch {
		case to != 0 && r.number == to:
			target = r
		case to == 0 && r.number < current:
			target = r // the highest revision below the current one, as revs is sorted
		}
	}
	if target == nil {
		if to != 0 {
			return fmt.Errorf("MachineDeployment %s/%s has no revision %d (see kubectl machine rollout history %s)", md.Namespace, md.Name, to, md.Name)
		}
		return fmt.Errorf("MachineDeployment %s/%s has no revision before %d to roll back to (old MachineSets are kept per spec.revisionHistoryLimit)", md.Namespace, md.Name, current)
	}
	if target.number == current {
		fmt.Fprintf(e.streams.Out, "MachineDeployment %s/%s is already at revision %d\n", md.Namespace, md.Name, current)
		return nil
	}
	value, err := json.Marshal(target.set.Spec.Template.Spec)
	if err != nil {
		return err
	}
	patch := fmt.Appendf(nil, `[{"op":"replace","path":"/spec/template/spec","value":%s}]`, value)
	if err := e.client.Patch(ctx, md, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("restoring revision %d's template: %w", target.number, err)
	}
	fmt.Fprintf(e.streams.Out, "MachineDeployment %s/%s rolled back to revision %d (MachineSet %s)\n", md.Namespace, md.Name, target.number, target.set.Name)
	return nil
}
