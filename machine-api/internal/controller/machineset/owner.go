package machineset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// readOwner reads the MachineDeployment controlling the set, if any, for the two things a set takes
// from it: its surge (the Frozen bound) and whether the set must hold its replacements (an old set
// of an OnDelete rollout).
func (r *Reconciler) readOwner(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	ref := metav1.GetControllerOf(s.set)
	if ref == nil || ref.Kind != "MachineDeployment" || ref.APIVersion != v1beta1.GroupVersion.String() {
		return reconcile.Result{}, true, nil
	}
	md := &v1beta1.MachineDeployment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.set.Namespace, Name: ref.Name}, md)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, true, nil
	case err != nil:
		return reconcile.Result{}, false, fmt.Errorf("getting MachineDeployment %s, the owner of MachineSet %s: %w", ref.Name, s.set.Name, err)
	case md.UID != ref.UID:
		return reconcile.Result{}, true, nil
	}
	s.owner = ownerOf(md, s.set)
	return reconcile.Result{}, true, nil
}

// ownerOf derives what set takes from its deployment md.
func ownerOf(md *v1beta1.MachineDeployment, set *v1beta1.MachineSet) *ownerInfo {
	o := &ownerInfo{name: md.Name, uid: md.UID, inPlace: md.InPlace(), maxUnavailable: -1}
	replicas := int32(1)
	if md.Spec.Replicas != nil {
		replicas = *md.Spec.Replicas
	}
	switch md.Spec.Strategy.Type {
	case v1beta1.OnDeleteStrategy:
		current := md.Annotations[v1beta1.RevisionAnnotation]
		if current != "" && set.Annotations[v1beta1.RevisionAnnotation] != current {
			o.holdCreates = fmt.Sprintf("an old MachineSet of MachineDeployment %s, which rolls out OnDelete: "+
				"a deleted Machine is replaced by the current MachineSet (revision %s), not by this one", md.Name, current)
		}
		o.inPlace = v1beta1.InPlaceNever
	case v1beta1.RecreateStrategy:
	default:
		unavailable := intstr.FromInt32(0)
		if ru := md.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
		if v, err := intstr.GetScaledValueFromIntOrPercent(&unavailable, int(replicas), false); err == nil {
			o.maxUnavailable = max(int32(v), 1) // an update in place cannot surge: one at a time at least
		}
		surge := intstr.FromInt32(1)
		if ru := md.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if v, err := intstr.GetScaledValueFromIntOrPercent(&surge, int(replicas), true); err == nil {
			o.surge = int32(v)
		}
	}
	return o
}
