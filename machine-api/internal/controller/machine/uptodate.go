package machine

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/uptodate"
)

// upToDate decides the Machine's UpToDate condition by the policy of package uptodate, from what
// it should be (the template of its MachineDeployment, or of its MachineSet when no deployment owns
// the set) and the MachineClass resolveClass read. It asks to come back when the Machine becomes
// due for replacement by its deployment's spec.rollout, since no event says so.
func (r *Reconciler) upToDate(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	desired, err := r.desiredOf(ctx, s.machine)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	s.desired = desired
	dec := uptodate.Decide(s.machine, s.class, desired, s.now)
	c := uptodate.Condition(dec, desired, s.machine.Generation)
	s.upToDate = &c
	if dec.Due.IsZero() {
		return reconcile.Result{}, true, nil
	}
	// Past the instant, so that the Machine counts as due.
	return reconcile.Result{RequeueAfter: max(dec.Due.Sub(s.now), 0) + time.Second/10}, true, nil
}

// desiredOf returns what m should be: its controlling MachineSet's MachineDeployment's template and
// rollout settings, or the set's template, or nothing for a Machine no set controls.
func (r *Reconciler) desiredOf(ctx context.Context, m *v1beta1.Machine) (uptodate.Desired, error) {
	set := &v1beta1.MachineSet{}
	if ok, err := r.controller(ctx, m, "MachineSet", set); !ok || err != nil {
		return uptodate.Desired{}, err
	}
	md := &v1beta1.MachineDeployment{}
	if ok, err := r.controller(ctx, set, "MachineDeployment", md); !ok || err != nil {
		return uptodate.ForSet(set), err
	}
	return uptodate.ForDeployment(md), nil
}

// controller reads into out the controller of o if it is of kind (in this API group), and reports
// whether it found it.
func (r *Reconciler) controller(ctx context.Context, o client.Object, kind string, out client.Object) (bool, error) {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != kind || ref.APIVersion != v1beta1.GroupVersion.String() {
		return false, nil
	}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, out)
	switch {
	case kerrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("getting %s %s/%s, the controller of %s: %w", kind, o.GetNamespace(), ref.Name, o.GetName(), err)
	}
	return out.GetUID() == ref.UID, nil
}

// machinesOfSet maps a MachineSet to the Machines it controls.
func (r *Reconciler) machinesOfSet(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.MachineBySet: string(o.GetUID())})
}

// machinesOfDeployment maps a MachineDeployment to the Machines its sets label with its name.
func (r *Reconciler) machinesOfDeployment(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, client.InNamespace(o.GetNamespace()), client.MatchingLabels{v1beta1.DeploymentNameLabel: o.GetName()})
}

// desiredChanged passes the MachineSet and MachineDeployment updates that can change their
// Machines' UpToDate condition: a template change that needs new Machines (in-place fields do
// not count) and, for a deployment, a change of spec.rollout. Scaling wakes no Machine.
func desiredChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			switch a := e.ObjectOld.(type) {
			case *v1beta1.MachineSet:
				b, ok := e.ObjectNew.(*v1beta1.MachineSet)
				return !ok || uptodate.TemplateHash(&a.Spec.Template) != uptodate.TemplateHash(&b.Spec.Template)
			case *v1beta1.MachineDeployment:
				b, ok := e.ObjectNew.(*v1beta1.MachineDeployment)
				return !ok || uptodate.TemplateHash(&a.Spec.Template) != uptodate.TemplateHash(&b.Spec.Template) ||
					!equality.Semantic.DeepEqual(a.Spec.Rollout, b.Spec.Rollout)
			}
			return true
		},
	}
}
