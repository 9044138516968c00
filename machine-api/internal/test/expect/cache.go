package expect

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CachedClient returns a client that reads from an informer cache of its own, as a controller's
// client does (writes go to the API server), with the field indexes register adds, for a
// reconcile-once spec of a controller that looks objects up by index. The cache runs until ctx
// ends. opts scope it (cache.Options.ByObject, DefaultNamespaces); its scheme is scheme.
//
// A cache shows a write only once its watch has delivered it: a spec that reconciles again after
// a write waits (Eventually) until the cache shows what it needs, as a controller would be woken
// by the event.
func CachedClient(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts cache.Options,
	register func(context.Context, client.FieldIndexer) error) (client.Client, error) {
	opts.Scheme = scheme
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building the cache: %w", err)
	}
	if register != nil {
		if err := register(ctx, c); err != nil {
			return nil, fmt.Errorf("registering the field indexes: %w", err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the cache did not sync")
	}
	return client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
}
