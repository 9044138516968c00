package steps

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Load reads into obj the object req names and says whether a reconcile has anything to do with
// it. It has not when the object is gone (gone, when not nil, is called, for the controller to
// forget what it kept about the object) or carries v1beta1.PausedAnnotation (logged at V(1)).
func Load(ctx context.Context, c client.Reader, req reconcile.Request, obj client.Object, gone func()) (bool, error) {
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		if gone != nil {
			gone()
		}
		return false, nil
	}
	if v1beta1.IsPaused(obj.GetAnnotations()) {
		log.FromContext(ctx).V(1).Info("paused; leaving it alone", "annotation", v1beta1.PausedBy(obj.GetAnnotations()))
		return false, nil
	}
	return true, nil
}
