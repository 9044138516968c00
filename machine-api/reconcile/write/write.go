package write

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ConflictRetry is how soon a reconcile whose guarded write met a conflict runs again.
const ConflictRetry = 200 * time.Millisecond

// ApplyStatus writes the status fields of ac, owned by the field manager owner, with one
// server-side apply that forces ownership. On success written (a new object of ac's kind) holds
// the object as the API server stored it.
func ApplyStatus(ctx context.Context, c client.Client, ac runtime.ApplyConfiguration, owner string, written client.Object) error {
	if err := c.Status().Apply(ctx, ac, client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return err
	}
	// The client decoded the API server's answer, the whole object, into ac.
	data, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("reading the answer to a status apply: %w", err)
	}
	if err := json.Unmarshal(data, written); err != nil {
		return fmt.Errorf("reading the answer to a status apply: %w", err)
	}
	return nil
}

// WholeStatus returns the apply configuration of status holding every field status holds, for a
// controller that owns a kind's whole status. AC is the generated status apply configuration type
// of status's type (v1beta1.MachineHealthCheckStatusApplyConfiguration for a
// v1beta1.MachineHealthCheckStatus); apply configurations mirror the API types field for field, so
// the status converts through its JSON form, and a field added to the status is sent without
// anybody listing it. A field left out of the JSON (omitempty and zero) is not sent: applied, the
// field is removed, which reads the same.
func WholeStatus[AC any](status any) (*AC, error) {
	data, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding a status for apply: %w", err)
	}
	ac := new(AC)
	if err := json.Unmarshal(data, ac); err != nil {
		return nil, fmt.Errorf("decoding a status into %T: %w", ac, err)
	}
	return ac, nil
}

// RequeueOnConflict returns a requeue after ConflictRetry and no error when err is made only of
// conflicts (see the package documentation), res when err is nil, and err alone otherwise
// (controller-runtime ignores a result returned with an error, and warns about it).
func RequeueOnConflict(res ctrl.Result, err error) (ctrl.Result, error) {
	switch {
	case err == nil:
		return res, nil
	case onlyConflicts(err):
		return ctrl.Result{RequeueAfter: ConflictRetry}, nil
	}
	return ctrl.Result{}, err
}

// onlyConflicts reports whether err, with everything it wraps or joins, is a conflict.
func onlyConflicts(err error) bool {
	// A type switch, not errors.As: the walk goes through every error a join holds, where errors.As
	// would stop at the first API status it finds.
	switch e := err.(type) { //nolint:errorlint // see above
	case nil:
		return false
	case apierrors.APIStatus:
		return apierrors.IsConflict(err)
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, err := range errs {
			if !onlyConflicts(err) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		return onlyConflicts(e.Unwrap())
	}
	return false
}

// Status writes a status with ApplyStatus (ac: the fields owner owns). into is a new, empty
// object of the kind written; it is returned holding the object as stored, or the zero value
// (nil) and no error when the object is gone. Through a controller's guarded client (package
// machineapi.dev/nodelink/consistency) the write is awaited like any other: the next reconcile
// of the object runs once the cache shows it.
func Status[T client.Object](ctx context.Context, c client.Client, ac runtime.ApplyConfiguration, owner string, into T) (T, error) {
	var none T
	err := ApplyStatus(ctx, c, ac, owner, into)
	switch {
	case apierrors.IsNotFound(err):
		return none, nil
	case err != nil:
		return none, err
	}
	return into, nil
}

// AddFinalizer adds finalizer to obj with a merge patch guarded by obj's resourceVersion (a
// conflict means the copy is stale: requeue, see RequeueOnConflict). obj holds the stored object
// afterwards. It writes nothing when obj has the finalizer already.
func AddFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok || !controllerutil.AddFinalizer(obj, finalizer) {
		return nil
	}
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding the finalizer %s to %s %s: %w", finalizer, reflect.TypeOf(obj).Elem().Name(), client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
