package remotelink

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// newNodeCluster returns a cache of a workload cluster's Nodes that can be built while that API
// server is down. nodelink.NewRemoteLinker builds the same cache but discovers the Node API from
// the server when the linker is built, so it fails for a workload cluster that is unreachable when
// the Cluster is reconciled (a cluster-manager restarting during an outage); here the only
// mapping it needs, v1 Nodes, is given. Like NewRemoteLinker's, the cache keeps no managed fields
// and no image lists.
func newNodeCluster(cfg *rest.Config, logName string) (cluster.Cluster, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			m := meta.NewDefaultRESTMapper(nil)
			m.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
			return m, nil
		}
		o.Cache.DefaultTransform = trimNode
		o.Logger = ctrllog.Log.WithName(logName)
	})
	if err != nil {
		return nil, fmt.Errorf("creating the Node cache of %s: %w", cfg.Host, err)
	}
	return c, nil
}

// trimNode drops what linking never reads from cached Nodes (managed fields, image lists).
func trimNode(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		o.SetManagedFields(nil)
	}
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
	}
	return obj, nil
}
