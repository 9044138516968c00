package machinedeployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/availability"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/uptodate"
)

// replaceMark is the value of the delete-machine annotation the deployment puts on a Machine of its
// current set that it replaces: the set deletes annotated Machines first when it scales down. The
// deployment removes only marks with this value (the cluster-autoscaler's stay).
const replaceMark = "machinedeployment: replaced by spec.rollout or a MachineClass edit"

// findStale lists the Machines of the new set and decides, by the policy of package uptodate,
// which ones the deployment replaces although their template is current: instances created before
// spec.rollout.after once it has passed, older than spec.rollout.machineMaxAgeSeconds, or created
// from a MachineClass edited since (unless spec.rollout.machineClassChanges is Ignore). It asks to
// come back when the next Machine becomes due, and takes its mark off a Machine no longer due.
func (r *Reconciler) findStale(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	if s.newSet == nil {
		return reconcile.Result{}, true, nil
	}
	// Every Machine of the set, on every reconcile: read from the cache without copies, and
	// never modified (setMark patches a copy).
	list := &v1beta1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.md.Namespace), client.MatchingFields{index.MachineBySet: string(s.newSet.UID)},
		client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, false, fmt.Errorf("listing the Machines of MachineSet %s: %w", s.newSet.Name, err)
	}
	class, err := r.templateClass(ctx, s.md)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	decider := uptodate.NewDecider(uptodate.ForDeployment(s.md), class)
	// A Machine kept by an earlier reconcile, unchanged since, under the same deployment spec and
	// class, with nothing that falls due, is kept.
	pass := r.kept.Pass(client.ObjectKeyFromObject(s.md), deciderKey(s.md, class))
	defer pass.Done()
	minReady := time.Duration(ptr.Deref(s.md.Spec.MinReadySeconds, 0)) * time.Second
	available := func(m *v1beta1.Machine) bool {
		_, ok, _ := availability.Of(m, minReady, s.now)
		return ok
	}
	s.staleWhy = map[string]string{}
	var due time.Time
	for i := range list.Items {
		m := &list.Items[i]
		if !m.DeletionTimestamp.IsZero() {
			s.newDeleting++
			continue
		}
		if rec := m.Status.InPlaceUpdate; rec != nil && rec.TemplateHash == s.hash {
			s.inPlacePending++ // to be, or being, updated in place to the template
		}
		if pass.InLine(m) {
			continue
		}
		dec := decider.Replacement(m, s.now)
		if replace, why := dec.Replace(); replace {
			s.stale = append(s.stale, m)
			s.staleWhy[m.Name] = why
			if available(m) {
				s.staleAvailable++
			}
		} else if m.Annotations[v1beta1.DeleteMachineAnnotation] == replaceMark {
			if err := r.setMark(ctx, m, false); err != nil {
				return reconcile.Result{}, false, err
			}
		} else if dec.Due.IsZero() {
			pass.Found(m) // kept, and nothing will fall due: the same until m or the key changes
		}
		if !dec.Due.IsZero() && (due.IsZero() || dec.Due.Before(due)) {
			due = dec.Due
		}
	}
	uptodate.SortForReplacement(s.stale, available)
	s.ordered = orderedRemovals(s.stale, ptr.Deref(s.newSet.Spec.Replicas, 1), int32(len(list.Items)-s.newDeleting), available)
	if due.IsZero() {
		return reconcile.Result{}, true, nil
	}
	// Past the instant, so that the Machine counts as due.
	return reconcile.Result{RequeueAfter: max(due.Sub(s.now), 0) + time.Second/10}, true, nil
}

// orderedRemovals moves to the front of stale (keeping the replacement order otherwise) the
// Machines that carry the deployment's mark, and returns how many of those, and how many of them
// available, the set was already told to delete: as many as the set has Machines (live, not
// deleting) above its replicas, since it deletes marked Machines first. They are held by a
// disruption budget; the rolling arithmetic counts them as going (see nextRollingStep).
func orderedRemovals(stale []*v1beta1.Machine, replicas, live int32, available func(*v1beta1.Machine) bool) staleState {
	marked := func(m *v1beta1.Machine) bool { return m.Annotations[v1beta1.DeleteMachineAnnotation] == replaceMark }
	slices.SortStableFunc(stale, func(a, b *v1beta1.Machine) int {
		switch ma, mb := marked(a), marked(b); {
		case ma && !mb:
			return -1
		case mb && !ma:
			return 1
		}
		return 0
	})
	var out staleState
	for _, m := range stale {
		if out.count >= live-replicas || !marked(m) {
			break
		}
		out.count++
		if available(m) {
			out.available++
		}
	}
	return out
}

// deciderKey is everything a Decider for md reads besides the Machine and the time: the
// deployment's identity and spec (its generation moves with every spec change), and the class's
// identity and version.
func deciderKey(md *v1beta1.MachineDeployment, class *v1beta1.MachineClass) string {
	if class == nil {
		return fmt.Sprintf("%s/%d", md.UID, md.Generation)
	}
	return fmt.Sprintf("%s/%d/%s/%s", md.UID, md.Generation, class.UID, class.ResourceVersion)
}

// templateClass reads the MachineClass the deployment's template names (nil for an inline
// providerSpec or a class that does not exist).
func (r *Reconciler) templateClass(ctx context.Context, md *v1beta1.MachineDeployment) (*v1beta1.MachineClass, error) {
	ref := md.Spec.Template.Spec.ProviderSpec.MachineClass
	if ref == nil {
		return nil, nil
	}
	class := &v1beta1.MachineClass{}
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: md.Namespace, Name: ref.Name}, class); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting MachineClass %s/%s: %w", md.Namespace, ref.Name, err)
	}
	return class, nil
}

// replaceStale removes the first n of candidates (stale Machines of the new set, in replacement
// order): it marks them with the delete-machine annotation, and, once the cache shows every mark
// (so the set, which reads the same cache, deletes those and no other), lowers the new set's
// replicas to replicas. It reports whether the set was scaled.
func (r *Reconciler) replaceStale(ctx context.Context, s *scope, candidates []*v1beta1.Machine, n int32, replicas int32) (bool, error) {
	victims := candidates[:min(int(n), len(candidates))]
	marking := 0
	for _, m := range victims {
		if _, marked := m.Annotations[v1beta1.DeleteMachineAnnotation]; marked {
			continue
		}
		if err := r.setMark(ctx, m, true); err != nil {
			return false, err
		}
		marking++
	}
	if marking > 0 {
		// The marks' events bring the deployment back.
		s.waiting = fmt.Sprintf("marking %d Machines of MachineSet %s for replacement", marking, s.newSet.Name)
		return false, nil
	}
	if err := r.scaleSet(ctx, s, s.newSet, replicas); err != nil {
		return false, err
	}
	names := make([]string, len(victims))
	for i, m := range victims {
		names[i] = m.Name
		log.FromContext(ctx).Info("replacing a Machine of the current MachineSet", "machine", m.Name, "machineSet", s.newSet.Name, "why", s.staleWhy[m.Name])
	}
	r.Recorder.Eventf(s.md, s.newSet, "Normal", EventReplacing, "Rollout", "replacing Machines %s of MachineSet %s: %s",
		strings.Join(names, ", "), s.newSet.Name, s.staleWhy[victims[0].Name])
	return true, nil
}

// setMark adds (or removes) the deployment's delete-machine mark on m, with a merge patch of that
// annotation alone.
func (r *Reconciler) setMark(ctx context.Context, m *v1beta1.Machine, on bool) error {
	value := "null"
	if on {
		value = fmt.Sprintf("%q", replaceMark)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, v1beta1.DeleteMachineAnnotation, value)
	if err := r.Client.Patch(ctx, m.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking Machine %s for replacement (%t): %w", m.Name, on, err)
	}
	return nil
}

// staleMessage says which Machines of the new set wait to be replaced, and why.
func staleMessage(s *scope) string {
	if len(s.stale) == 0 {
		return ""
	}
	return fmt.Sprintf("%d Machines of MachineSet %s to replace (%s: %s)", len(s.stale), s.newSet.Name, s.stale[0].Name, s.staleWhy[s.stale[0].Name])
}
