package machineset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

const (
	// maxBurst bounds the Machines created or deleted by one reconcile; the next reconcile goes on
	// once the cache shows them.
	maxBurst = 500
	// maxParallel bounds the concurrent API calls of one reconcile.
	maxParallel = 64
	// maxStarting bounds the set's Machines on their way to Running (see starting): a scale-up
	// of thousands creates them as earlier ones get there, so that each waits less behind the
	// others in the machine controller's queue, and the last is Running no later.
	maxStarting = 200
	// startingFor is how long a Machine not yet Running counts as on its way: one stuck longer
	// (a Node that never joins) no longer holds the others back.
	startingFor = 5 * time.Minute
)

// scale creates or deletes Machines until the set has spec.replicas of them. It counts from a
// cache that shows every Machine this process created, adopted, deleted or released for the set
// before (the consistency guard runs the reconcile only then): acting on a stale count is how
// controllers overshoot.
func (r *Reconciler) scale(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	have := int32(len(s.active()) + s.created)
	s.frozen = isFrozen(s.set, have, s.surge())
	s.acted = true
	want := replicasOf(s.set)
	switch {
	case have < want && s.frozen:
		return reconcile.Result{}, true, nil
	case have < want && s.owner != nil && s.owner.holdCreates != "":
		return reconcile.Result{}, true, nil
	case have < want:
		on, next := starting(s)
		n := min(int(want-have), maxBurst, maxStarting-on)
		if n <= 0 {
			// A Machine reaching Running brings the set back, or the first to stop counting.
			return reconcile.Result{RequeueAfter: next}, true, nil
		}
		return reconcile.Result{}, true, r.createMachines(ctx, s, n)
	case have > want:
		active, err := r.withMarksNow(ctx, s)
		if err != nil {
			return reconcile.Result{}, false, err
		}
		victims := pickForDeletion(active, int(min(have-want, maxBurst)), s.set.Spec.DeletePolicy)
		return reconcile.Result{}, true, r.deleteMachines(ctx, s, victims, EventDeleted, "deleting %d Machines")
	}
	return reconcile.Result{}, true, nil
}

// starting counts the set's active Machines on their way to Running (not Running, not Failed,
// created less than startingFor ago), and says how soon the first of them stops counting.
func starting(s *scope) (n int, next time.Duration) {
	for _, m := range s.active() {
		left := startingFor - s.now.Sub(m.CreationTimestamp.Time)
		switch {
		case m.Status.Phase == v1beta1.MachinePhaseRunning, m.Status.Phase == v1beta1.MachinePhaseFailed, left <= 0:
		default:
			n++
			if next == 0 || left < next {
				next = left
			}
		}
	}
	return n + s.created, next
}

// withMarksNow returns the set's active Machines with v1beta1.DeleteMachineAnnotation as the API
// server has it now, not the cache (see withMarks). It reads the set's Machines once, only when
// the set shrinks.
func (r *Reconciler) withMarksNow(ctx context.Context, s *scope) ([]*v1beta1.Machine, error) {
	list := &v1beta1.MachineList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(s.set.Namespace), client.MatchingLabels{v1beta1.SetNameLabel: s.set.Name}); err != nil {
		return nil, fmt.Errorf("listing the Machines of MachineSet %s marked for deletion: %w", s.set.Name, err)
	}
	return withMarks(s.active(), list.Items), nil
}

// createMachines creates n Machines in slow-start batches (1, 2, 4, ... up to maxParallel at a
// time), so that a systematic failure (quota, a bad template) costs one call, not n. It stops at
// the first batch with a failure.
func (r *Reconciler) createMachines(ctx context.Context, s *scope, n int) error {
	var names []string
	for batch := 1; n > 0; batch = min(2*batch, maxParallel) {
		size := min(batch, n)
		machines := make([]*v1beta1.Machine, size)
		for i := range machines {
			machines[i] = newMachine(s.set)
			s.bequeath(machines[i])
		}
		// A create that failed without saying whether it was stored (a broken connection, an API
		// server timeout) is awaited by the guard like the others, until the cache lists the
		// Machine or the API server says it does not exist: the set creates no other Machine for
		// that gap meanwhile.
		errs := parallel(size, func(i int) error {
			if err := r.Client.Create(ctx, machines[i]); err != nil {
				return fmt.Errorf("creating machine %s: %w", machines[i].Name, err)
			}
			return nil
		})
		for i, err := range errs {
			if err == nil {
				s.created++
				s.bequeathed(machines[i])
				names = append(names, machines[i].Name)
			}
		}
		if err := errors.Join(errs...); err != nil {
			s.createErr = firstError(errs)
			r.recordCreated(s, names)
			return err
		}
		n -= size
	}
	r.recordCreated(s, names)
	return nil
}

func (r *Reconciler) recordCreated(s *scope, names []string) {
	if len(names) > 0 {
		r.Recorder.Eventf(s.set, nil, "Normal", EventCreated, "Create", "created %d Machines: %s", len(names), preview(names))
	}
}

// newMachine returns a Machine of set, ready to create: a random name, the set as its controller,
// the finalizer already present (saving the machine controller a write), and the template's
// metadata and spec.
func newMachine(set *v1beta1.MachineSet) *v1beta1.Machine {
	m := &v1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       set.Namespace,
			Name:            fmt.Sprintf("%s-%s", set.Name, utilrand.String(5)),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, v1beta1.GroupVersion.WithKind("MachineSet"))},
			Finalizers:      []string{v1beta1.MachineFinalizer},
		},
		Spec: *set.Spec.Template.Spec.DeepCopy(),
	}
	m.Spec.ProviderID = ""
	applyTemplate(set, m)
	return m
}

// deleteMachines deletes victims; the machine controller drains each and removes its instance.
// The event (reason, and a message with the count) lists the Machines whose deletion was requested;
// an empty reason leaves the events to the caller.
// Victims the pool's disruption budgets hold are not deleted (see disruption.go).
func (r *Reconciler) deleteMachines(ctx context.Context, s *scope, victims []*v1beta1.Machine, reason, message string) error {
	return r.withinBudget(ctx, s, victims, func(victims []*v1beta1.Machine) error {
		return r.deleteNow(ctx, s, victims, reason, message)
	})
}

// deleteNow deletes victims, as deleteMachines says.
//
// A victim without a Node is deleted only as the cache shows it (a resourceVersion
// precondition): having no Node is why it was chosen first and why no budget held it, and a
// Machine linked to its Node a moment ago may not be in the cache yet. When it changed, its
// deletion is left to the reconcile its update event brings, which sees the Node.
func (r *Reconciler) deleteNow(ctx context.Context, s *scope, victims []*v1beta1.Machine, reason, message string) error {
	changed := make([]bool, len(victims))
	errs := parallel(len(victims), func(i int) error {
		m := victims[i]
		pre := client.Preconditions{UID: &m.UID}
		if m.Status.NodeRef == nil && s.set.DeletionTimestamp.IsZero() {
			pre.ResourceVersion = &m.ResourceVersion
		}
		err := r.Client.Delete(ctx, m, pre)
		switch {
		case pre.ResourceVersion != nil && apierrors.IsConflict(err):
			changed[i] = true
			log.FromContext(ctx).V(1).Info("not deleting a Machine that changed since the cache showed it without a Node; looking again", "machine", m.Name)
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("deleting machine %s: %w", m.Name, err)
		}
		return nil
	})
	var names []string
	for i, err := range errs {
		if err == nil && !changed[i] {
			names = append(names, victims[i].Name)
		}
	}
	s.deleted = append(s.deleted, names...)
	if len(names) > 0 && reason != "" {
		r.Recorder.Eventf(s.set, nil, "Normal", reason, "Delete", message+": %s", len(names), preview(names))
	}
	if err := errors.Join(errs...); err != nil {
		s.deleteErr = firstError(errs)
		return err
	}
	return nil
}

// parallel runs fn(0..n-1) with at most maxParallel calls at a time and returns their errors,
// indexed like the calls.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errs
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
