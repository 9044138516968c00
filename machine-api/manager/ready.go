package manager

import (
	"context"
	"errors"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// readyCheck reports ready once the manager's caches have synced.
func readyCheck(mgr ctrl.Manager, req *http.Request) error {
	ctx, cancel := context.WithTimeout(req.Context(), time.Second)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("caches have not synced yet")
	}
	return nil
}
