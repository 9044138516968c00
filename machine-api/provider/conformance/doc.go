// Package conformance checks that a Provider keeps the contract the machine controller relies on.
// Run it from your provider's tests:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Suite{
//			Provider:   myProvider,
//			NewMachine: func(name string) *v1beta1.Machine { ... a valid Machine with a fresh UID ... },
//		})
//	}
//
// The checks: Create sets a providerID and an InternalIP; Exists is true after Create and false for
// a Machine never created; Create called again for the same Machine (even with the providerID lost,
// as after a crash) finds the same instance instead of making a second; different Machines get
// different providerIDs; Update keeps the providerID; Delete makes Exists false (eventually);
// deleting a missing instance, or deleting twice, succeeds; an invalid configuration (when the suite
// is given one) is reported as provider.InvalidConfiguration.
//
// It uses the standard testing package, so it runs with go test in any module.
package conformance
