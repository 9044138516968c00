package index

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

func labelled(kv ...string) metav1.ObjectMeta {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return metav1.ObjectMeta{Labels: l}
}

func TestIndexValues(t *testing.T) {
	tests := map[string]struct {
		f    client.IndexerFunc
		obj  client.Object
		want []string
	}{
		"a member by its cluster": {ClusterName,
			&machinev1.MachineSet{ObjectMeta: labelled(v1beta1.ClusterNameLabel, "c1")}, []string{"c1"}},
		"an object of no cluster is not indexed": {ClusterName, &machinev1.Machine{}, nil},
		"an empty cluster name is none":          {ClusterName, &machinev1.Machine{ObjectMeta: labelled(v1beta1.ClusterNameLabel, "")}, nil},
		"a remote Machine by its cluster": {remoteCluster,
			&machinev1.Machine{ObjectMeta: labelled(v1beta1.ClusterNameLabel, "c1", v1beta1.RemoteNodesLabel, "true")}, []string{"c1"}},
		"a Machine whose Node is local is not indexed as remote": {remoteCluster,
			&machinev1.Machine{ObjectMeta: labelled(v1beta1.ClusterNameLabel, "c1")}, nil},
		"remote-nodes other than true is not remote": {remoteCluster,
			&machinev1.Machine{ObjectMeta: labelled(v1beta1.ClusterNameLabel, "c1", v1beta1.RemoteNodesLabel, "false")}, nil},
		"remote-nodes without a cluster is not remote": {remoteCluster,
			&machinev1.Machine{ObjectMeta: labelled(v1beta1.RemoteNodesLabel, "true")}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.f(tc.obj); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
