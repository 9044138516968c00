package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/provider"
	"machineapi.dev/cluster-api/provider/sim"
)

func cluster(spec string) *v1beta1.Cluster {
	c := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "prod", UID: "uid-1"}}
	if spec != "" {
		c.Spec.ProviderSpec = &runtime.RawExtension{Raw: []byte(spec)}
	}
	return c
}

// The provider contract: ready after the provision delay, found again by UID, invalid
// configurations named, deletion idempotent and only complete after the delete delay.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p, err := sim.New(sim.Options{ProvisionDelay: 10 * time.Second, DeleteDelay: 5 * time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(`{"network":"10.1.2.3/16"}`)

	err = p.Reconcile(ctx, c)
	if wait, ok := provider.AsRequeueAfter(err); !ok || wait.After != 10*time.Second {
		t.Fatalf("first Reconcile = %v, want a RequeueAfter of 10s", err)
	}
	clock.Step(10 * time.Second)
	if err := p.Reconcile(ctx, c); err != nil {
		t.Fatalf("Reconcile after the delay = %v, want ready", err)
	}
	if infra := p.Infrastructures(); len(infra) != 1 || infra[0].Network != "10.1.0.0/16" {
		t.Fatalf("infrastructures = %+v, want one with network 10.1.0.0/16", infra)
	}

	if _, ok := provider.AsRequeueAfter(p.Delete(ctx, c)); !ok {
		t.Fatal("first Delete must wait for the delete delay")
	}
	clock.Step(5 * time.Second)
	if err := p.Delete(ctx, c); err != nil {
		t.Fatalf("Delete after the delay = %v", err)
	}
	if _, ok := p.Get(c.UID); ok {
		t.Fatal("the infrastructure must be gone")
	}
	if err := p.Delete(ctx, c); err != nil {
		t.Fatalf("deleting what is gone = %v, want success", err)
	}
}

func TestInvalidConfiguration(t *testing.T) {
	cases := map[string]struct{ spec, wantMsg string }{
		"not a CIDR":    {`{"network":"10.0.0.0/33"}`, "spec.providerSpec.network"},
		"unknown field": {`{"networks":"10.0.0.0/16"}`, "networks"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, _ := sim.New(sim.Options{})
			err := p.Reconcile(context.Background(), cluster(tc.spec))
			if !provider.IsInvalidConfiguration(err) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want an InvalidConfiguration naming %q", err, tc.wantMsg)
			}
		})
	}
}
