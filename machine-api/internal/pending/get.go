package pending

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Get is how a reconcile reads the object it reconciles: it reads the object named key with c
// into obj and returns it as this controller last wrote it (written.Latest). When the object is
// gone it returns the zero value (nil) and no error, and written and each of also drop everything
// they remember with it as owner (Reset), so an object re-created under the name inherits nothing.
func Get[T client.Object](ctx context.Context, c client.Reader, key types.NamespacedName, obj T, written *Writes, also ...*Writes) (T, error) {
	var none T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			for _, w := range append([]*Writes{written}, also...) {
				w.Reset(key)
			}
			return none, nil
		}
		return none, err
	}
	return written.Latest(obj).(T), nil
}
