package provider_test

import (
	"fmt"
	"testing"
	"time"

	machineprovider "machineapi.dev/machine-api/provider"

	"machineapi.dev/cluster-api/provider"
)

// TestErrorsAreMachineAPIs protects the reuse of machine-api's provider errors: a Cluster's
// invalid configuration says so in its message, and either package recognises the other's errors.
func TestErrorsAreMachineAPIs(t *testing.T) {
	err := fmt.Errorf("reconciling: %w", provider.InvalidConfiguration("spec.providerSpec.network %q is not a CIDR such as 10.0.0.0/16", "10.0.0.0/33"))
	if want := `reconciling: invalid cluster configuration: spec.providerSpec.network "10.0.0.0/33" is not a CIDR such as 10.0.0.0/16`; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	if !provider.IsInvalidConfiguration(err) || !machineprovider.IsInvalidConfiguration(err) {
		t.Errorf("an invalid cluster configuration is not recognised by both packages")
	}
	if !provider.IsInvalidConfiguration(machineprovider.InvalidConfiguration("x")) {
		t.Errorf("machine-api's invalid configuration is not recognised by cluster-api's package")
	}
	wait, ok := provider.AsRequeueAfter(fmt.Errorf("x: %w", machineprovider.RequeueAfter(time.Second, "creating the load balancer")))
	if !ok || wait.After != time.Second {
		t.Errorf("AsRequeueAfter = %+v, %v; want a 1s wait", wait, ok)
	}
	if got := provider.RequeueAfter(30*time.Second, "creating the load balancer").Error(); got != "creating the load balancer; trying again in 30s" {
		t.Errorf("RequeueAfter message = %q", got)
	}
}
