package membership_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/membership"
)

func reader(objs ...client.Object) client.Reader {
	s := runtime.NewScheme()
	if err := v1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func machineIn(ns, cluster string) *machinev1.Machine {
	m := &machinev1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"}}
	if cluster != "" {
		m.Labels = membership.Labels(cluster)
	}
	return m
}

// A machine provider asks for its Machine's Cluster and must be able to tell "none" from "broken".
func TestClusterOf(t *testing.T) {
	prod := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod"}}
	cases := map[string]struct {
		machine *machinev1.Machine
		want    string
		wantErr error
	}{
		"member of a Cluster in its namespace":        {machine: machineIn("team-a", "prod"), want: "prod"},
		"no label: belongs to no cluster":             {machine: machineIn("team-a", ""), wantErr: membership.ErrNoCluster},
		"the named Cluster does not exist":            {machine: machineIn("team-a", "staging"), wantErr: membership.ErrClusterNotFound},
		"a Cluster of that name in another namespace": {machine: machineIn("team-b", "prod"), wantErr: membership.ErrClusterNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := membership.ClusterOf(context.Background(), reader(prod), tc.machine)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.want != "" && got.Name != tc.want {
				t.Errorf("cluster = %s, want %s", got.Name, tc.want)
			}
		})
	}
}

func ExampleClusterOf() {
	prod := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod"}}
	r := reader(prod)
	for _, m := range []*machinev1.Machine{machineIn("team-a", "prod"), machineIn("team-a", "")} {
		cl, err := membership.ClusterOf(context.Background(), r, m)
		switch {
		case errors.Is(err, membership.ErrNoCluster):
			fmt.Println("standalone machine:", err)
		case err != nil:
			fmt.Println("error:", err)
		default:
			fmt.Println("cluster:", cl.Name)
		}
	}
	// Output:
	// cluster: prod
	// standalone machine: team-a/m1 has no cluster.machineapi.dev/cluster-name label: belongs to no cluster
}
