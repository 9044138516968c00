package membership

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

var (
	// ErrNoCluster: the object carries no cluster-name label, so it belongs to no Cluster.
	ErrNoCluster = errors.New("belongs to no cluster")
	// ErrClusterNotFound: the object's cluster-name label names a Cluster that does not exist
	// (yet, or any more) in its namespace.
	ErrClusterNotFound = errors.New("cluster not found")
)

// ClusterName returns the name of the Cluster obj belongs to, and false when it belongs to none.
func ClusterName(obj client.Object) (string, bool) {
	name, ok := obj.GetLabels()[v1beta1.ClusterNameLabel]
	return name, ok && name != ""
}

// ClusterOf returns the Cluster obj (a Machine, MachineSet or MachineDeployment) belongs to. The
// error wraps ErrNoCluster when obj has no cluster-name label, and ErrClusterNotFound when the
// Cluster it names does not exist in obj's namespace.
func ClusterOf(ctx context.Context, r client.Reader, obj client.Object) (*v1beta1.Cluster, error) {
	name, ok := ClusterName(obj)
	if !ok {
		return nil, fmt.Errorf("%s/%s has no %s label: %w", obj.GetNamespace(), obj.GetName(), v1beta1.ClusterNameLabel, ErrNoCluster)
	}
	cl := &v1beta1.Cluster{}
	err := r.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, cl)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s/%s names cluster %q in its %s label: %w", obj.GetNamespace(), obj.GetName(), name, v1beta1.ClusterNameLabel, ErrClusterNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("getting cluster %s/%s of %s: %w", obj.GetNamespace(), name, obj.GetName(), err)
	}
	return cl, nil
}

// Labels returns the labels that make an object a member of the named Cluster.
func Labels(clusterName string) map[string]string {
	return map[string]string{v1beta1.ClusterNameLabel: clusterName}
}
