package plugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/availability"
	"machineapi.dev/machine-api/internal/controller/machinedeployment"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/disruption"
	"machineapi.dev/machine-api/internal/uptodate"
)

// The plan decides nothing of its own: which Machines are updated in place or replaced, and why,
// is uptodate.Decide, the policy the controllers follow; which set a template makes current and
// the strategy's bounds come from the MachineDeployment controller, the order within a set from
// the MachineSet controller's deletion order, and the order of Machines replaced within the
// current set from uptodate.SortForReplacement.

// planAction is what a rollout does to one Machine.
type planAction string

const (
	actionKeep     planAction = "keep"
	actionInPlace  planAction = "update in place"
	actionReplace  planAction = "replace"
	actionDeleting planAction = "being deleted"
)

// machinePlan is the plan for one Machine.
type machinePlan struct {
	machine *v1beta1.Machine
	set     *v1beta1.MachineSet
	action  planAction
	detail  string
	current bool // its set is the one the template makes current
}

func rolloutPlan(ctx context.Context, e *env, name, file string) error {
	live := &v1beta1.MachineDeployment{}
	if err := e.client.Get(ctx, types.NamespacedName{Namespace: e.namespace, Name: name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("MachineDeployment %s/%s not found (use -n to pick its namespace)", e.namespace, name)
		}
		return fmt.Errorf("getting MachineDeployment %s/%s: %w", e.namespace, name, err)
	}
	desired, source := live, "its live spec"
	if file != "" {
		var err error
		if desired, err = changedDeployment(ctx, e, live, file); err != nil {
			return err
		}
		source = "the spec in " + file
	}
	sets, machines, err := deploymentMachines(ctx, e, live)
	if err != nil {
		return err
	}
	classes, err := machineClasses(ctx, e, desired, machines)
	if err != nil {
		return err
	}
	now := time.Now()
	current := machinedeployment.CurrentSet(desired, sets)
	var route *machinedeployment.InPlaceDecision
	if current == nil && desired.InPlace() != v1beta1.InPlaceNever {
		d := machinedeployment.DecideInPlace(desired, sets, machines)
		route = &d
	}
	plans := planMachines(desired, current, sets, machines, classes, route, now)

	w := e.streams.Out
	fmt.Fprintf(w, "Rollout plan for MachineDeployment %s/%s with %s (nothing is changed):\n", desired.Namespace, desired.Name, source)
	switch {
	case route != nil && route.Route == machinedeployment.RouteInPlace:
		how := "without draining"
		if route.Disruptive {
			how = "draining and rebooting each Machine whose plan says so"
		}
		fmt.Fprintf(w, "  the template is updated in place (spec.rollout.inPlace %s): MachineSet %s takes it, and its Machines are updated by their provider %s\n",
			desired.InPlace(), route.Set.Name, how)
	case route != nil && route.Route == machinedeployment.RouteBlocked:
		fmt.Fprintf(w, "  the rollout stalls: %s\n", route.Message)
	case route != nil && route.Route == machinedeployment.RouteWait:
		fmt.Fprintf(w, "  in place or by replacement is not decided yet: %s (the machine controller asks the provider once the template is applied; apply it with spec.paused true to see the plan first)\n", route.Message)
	case current == nil:
		fmt.Fprintf(w, "  the template needs new Machines: a new MachineSet is created and every Machine is replaced\n")
		if route != nil {
			fmt.Fprintf(w, "  not in place: %s\n", route.Message)
		}
	default:
		fmt.Fprintf(w, "  the template is MachineSet %s's\n", current.Name)
	}
	if desired.Spec.Paused {
		fmt.Fprintf(w, "  spec.paused is true: nothing below happens until the deployment is resumed\n")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tMACHINESET\tACTION\tWHAT")
	for _, p := range plans {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.machine.Name, p.set.Name, p.action, p.detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(plans) == 0 {
		fmt.Fprintln(w, "  (no Machines)")
	}
	order := replacementOrder(desired, plans, sets, now)
	printOrder(w, desired, order)
	if len(order) > 0 {
		printBudgets(w, desired, int32(len(machines)), now)
	}
	return nil
}

// printBudgets says how the deployment's disruption budgets pace the replacements: each budget,
// what it allows of the pool now, and when that changes.
func printBudgets(w io.Writer, md *v1beta1.MachineDeployment, pool int32, now time.Time) {
	if md.Spec.Disruption == nil || len(md.Spec.Disruption.Budgets) == 0 {
		fmt.Fprintln(w, "No disruption budget paces it (spec.disruption).")
		return
	}
	fmt.Fprintf(w, "Paced by its disruption budgets too (the most restrictive in force wins; pool of %d Machines):\n", pool)
	for i, b := range md.Spec.Disruption.Budgets {
		reasons := "every reason"
		reason := v1beta1.DisruptionRollout
		if len(b.Reasons) > 0 {
			names := make([]string, len(b.Reasons))
			for j, r := range b.Reasons {
				names[j] = string(r)
			}
			reasons, reason = strings.Join(names, ", "), b.Reasons[0]
		}
		v := disruption.Decide(md.Spec.Disruption.Budgets[i:i+1], reason, pool, 0, now)
		state := v.Message
		if v.Allowed == disruption.Unlimited && v.Budget == "" {
			state = "not in force now"
		}
		if !v.Until.IsZero() {
			state += fmt.Sprintf("; changes at %s", v.Until.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "  - %s (%s): %s\n", disruption.Name(&b, i), reasons, state)
	}
}

// changedDeployment returns live with the spec of the manifest in file ("-": standard input) as
// the API server would store it: the update is sent as a dry run, so the server validates and
// defaults it and stores nothing. The manifest is the whole new spec, as kubectl replace takes it.
func changedDeployment(ctx context.Context, e *env, live *v1beta1.MachineDeployment, file string) (*v1beta1.MachineDeployment, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(e.streams.In)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	changed := &v1beta1.MachineDeployment{}
	if err := yaml.UnmarshalStrict(data, changed); err != nil {
		return nil, fmt.Errorf("reading %s as a MachineDeployment: %w", file, err)
	}
	switch {
	case changed.Kind != "" && changed.Kind != "MachineDeployment":
		return nil, fmt.Errorf("%s holds a %s, not a MachineDeployment", file, changed.Kind)
	case changed.Name != "" && changed.Name != live.Name:
		return nil, fmt.Errorf("%s holds MachineDeployment %s, not %s", file, changed.Name, live.Name)
	}
	desired := live.DeepCopy()
	// The controllers write the deployment too (its revision annotation): a dry run based on a
	// copy they have just replaced is sent again on a fresh one.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.client.Get(ctx, client.ObjectKeyFromObject(live), desired); err != nil {
			return err
		}
		desired.Spec = changed.Spec
		return e.client.Update(ctx, desired, client.DryRunAll)
	})
	if err != nil {
		return nil, fmt.Errorf("the API server refuses the spec in %s: %w", file, err)
	}
	return desired, nil
}

// deploymentMachines returns md's MachineSets (not deleting), oldest first, and their Machines.
func deploymentMachines(ctx context.Context, e *env, md *v1beta1.MachineDeployment) ([]*v1beta1.MachineSet, []*v1beta1.Machine, error) {
	setList := &v1beta1.MachineSetList{}
	if err := e.client.List(ctx, setList, client.InNamespace(md.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing MachineSets: %w", err)
	}
	var sets []*v1beta1.MachineSet
	bySet := map[types.UID]bool{}
	for i := range setList.Items {
		s := &setList.Items[i]
		if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != md.UID || !s.DeletionTimestamp.IsZero() {
			continue
		}
		sets = append(sets, s)
		bySet[s.UID] = true
	}
	slices.SortStableFunc(sets, func(a, b *v1beta1.MachineSet) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	machineList := &v1beta1.MachineList{}
	if err := e.client.List(ctx, machineList, client.InNamespace(md.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing Machines: %w", err)
	}
	var machines []*v1beta1.Machine
	for i := range machineList.Items {
		m := &machineList.Items[i]
		if ref := metav1.GetControllerOf(m); ref != nil && bySet[ref.UID] {
			machines = append(machines, m)
		}
	}
	return sets, machines, nil
}

// machineClasses reads the MachineClasses the Machines and the template name, by name.
func machineClasses(ctx context.Context, e *env, md *v1beta1.MachineDeployment, machines []*v1beta1.Machine) (map[string]*v1beta1.MachineClass, error) {
	out := map[string]*v1beta1.MachineClass{}
	names := []*v1beta1.MachineClassReference{md.Spec.Template.Spec.ProviderSpec.MachineClass}
	for _, m := range machines {
		names = append(names, m.Spec.ProviderSpec.MachineClass)
	}
	for _, ref := range names {
		if ref == nil || out[ref.Name] != nil {
			continue
		}
		class := &v1beta1.MachineClass{}
		switch err := e.client.Get(ctx, types.NamespacedName{Namespace: md.Namespace, Name: ref.Name}, class); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("getting MachineClass %s: %w", ref.Name, err)
		}
		out[ref.Name] = class
	}
	return out, nil
}

// planMachines decides, for each Machine, what the rollout to desired does to it (uptodate.Decide),
// in the order of the sets (oldest first), then by name.
func planMachines(desired *v1beta1.MachineDeployment, current *v1beta1.MachineSet, sets []*v1beta1.MachineSet,
	machines []*v1beta1.Machine, classes map[string]*v1beta1.MachineClass, route *machinedeployment.InPlaceDecision, now time.Time) []machinePlan {
	want := uptodate.ForDeployment(desired)
	var out []machinePlan
	for _, set := range sets {
		var ofSet []*v1beta1.Machine
		for _, m := range machines {
			if metav1.GetControllerOf(m).UID == set.UID {
				ofSet = append(ofSet, m)
			}
		}
		slices.SortFunc(ofSet, func(a, b *v1beta1.Machine) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range ofSet {
			var class *v1beta1.MachineClass
			if ref := m.Spec.ProviderSpec.MachineClass; ref != nil {
				class = classes[ref.Name]
			}
			dec := uptodate.Decide(m, class, want, now)
			p := machinePlan{machine: m, set: set, current: set == current}
			replace, why := dec.Replace()
			inPlace := changes(dec.InPlace)
			switch {
			case !m.DeletionTimestamp.IsZero():
				p.action, p.detail = actionDeleting, inPlace
			case route != nil && route.Route == machinedeployment.RouteInPlace && set == route.Set,
				current != nil && set == current && updatedInPlace(m, current):
				p.action, p.detail = actionInPlace, inPlaceDetail(m, inPlace)
			case route != nil && (route.Route == machinedeployment.RouteBlocked || route.Route == machinedeployment.RouteWait):
				p.action, p.detail = actionKeep, "until the rollout goes on: "+route.Message
			case replace:
				p.action, p.detail = actionReplace, why
			case len(dec.InPlace) > 0:
				p.action, p.detail = actionInPlace, inPlace
			default:
				p.action = actionKeep
				if !dec.UpToDate() {
					p.detail = uptodate.Condition(dec, want, m.Generation).Message
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// updatedInPlace reports whether m, of the current set, is yet to be (or being) updated in place
// to its set's template: it has a plan for that template.
func updatedInPlace(m *v1beta1.Machine, current *v1beta1.MachineSet) bool {
	rec := m.Status.InPlaceUpdate
	return rec != nil && len(rec.Unsupported) == 0 && rec.TemplateHash == uptodate.TemplateHash(&current.Spec.Template)
}

// inPlaceDetail says what m's provider updates in place, and how, with the in-place fields that
// change too.
func inPlaceDetail(m *v1beta1.Machine, fields string) string {
	var parts []string
	if rec := m.Status.InPlaceUpdate; rec != nil {
		how := "by the provider"
		if rec.Disruption == v1beta1.InPlaceDisruptionDrain {
			how = "by the provider, drained and rebooted"
		}
		if uptodate.SpecHash(&m.Spec) == rec.TemplateHash {
			how = "being updated " + how
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(rec.Paths, ", "), how))
	}
	if fields != "" {
		parts = append(parts, fields)
	}
	return strings.Join(parts, "; ")
}

func changes(cs []uptodate.Change) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return strings.Join(out, ", ")
}

// replacementOrder returns the Machines to replace in the order a RollingUpdate takes them: the
// Machines of sets other than the current one, unavailable ones first (they give no capacity),
// then set by set, oldest set first, each set in its own deletion order; then the current set's
// Machines to replace, in uptodate.SortForReplacement's order.
func replacementOrder(md *v1beta1.MachineDeployment, plans []machinePlan, sets []*v1beta1.MachineSet, now time.Time) []*v1beta1.Machine {
	minReady := time.Duration(ptr.Deref(md.Spec.MinReadySeconds, 0)) * time.Second
	available := func(m *v1beta1.Machine) bool {
		_, ok, _ := availability.Of(m, minReady, now)
		return ok
	}
	var unavailable, rest, stale []*v1beta1.Machine
	for _, set := range sets {
		var ofSet []*v1beta1.Machine
		for _, p := range plans {
			switch {
			case p.set != set || p.action != actionReplace:
			case p.current:
				stale = append(stale, p.machine)
			default:
				ofSet = append(ofSet, p.machine)
			}
		}
		for _, m := range machineset.DeletionOrder(ofSet, set.Spec.DeletePolicy) {
			if available(m) {
				rest = append(rest, m)
			} else {
				unavailable = append(unavailable, m)
			}
		}
	}
	uptodate.SortForReplacement(stale, available)
	return slices.Concat(unavailable, rest, stale)
}

func printOrder(w io.Writer, md *v1beta1.MachineDeployment, order []*v1beta1.Machine) {
	if len(order) == 0 {
		fmt.Fprintln(w, "No Machine is replaced.")
		return
	}
	replicas := ptr.Deref(md.Spec.Replicas, 1)
	switch md.Spec.Strategy.Type {
	case v1beta1.OnDeleteStrategy:
		fmt.Fprintf(w, "OnDelete: none of these %d Machines is replaced until you delete it; each one deleted is replaced by a Machine of the template:\n", len(order))
	case v1beta1.RecreateStrategy:
		fmt.Fprintf(w, "Recreate: these %d Machines are deleted together, and their replacements created once they are gone:\n", len(order))
	default:
		surge, unavailable := machinedeployment.Fenceposts(md)
		fmt.Fprintf(w, "RollingUpdate, in this order: at most %d Machines at a time (replicas %d + maxSurge %d), never fewer than %d available (maxUnavailable %d):\n",
			replicas+surge, replicas, surge, max(0, replicas-unavailable), unavailable)
	}
	for i, m := range order {
		fmt.Fprintf(w, "  %d. %s\n", i+1, m.Name)
	}
}
