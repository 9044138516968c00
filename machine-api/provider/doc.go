// Package provider is the seam between the machine controller and an infrastructure provider:
// the Provider interface, the errors a provider returns to steer the controller, and helpers a
// provider uses to read what the controller resolved for it (the MachineClass).
//
// A provider is called with (ctx, *Machine) only — there is no Cluster in the seam. A provider that
// needs cluster-wide information fetches it itself.
//
// Contract, in one paragraph: every method is idempotent and may be called again at any time,
// including after a crash between a call and the controller persisting its result. Create must find
// an instance it already made for the same Machine (deterministically, by the Machine's UID) instead
// of making a second one. The controller calls Exists before every Create. A provider reports what
// it learned by setting spec.providerID, status.addresses and status.providerStatus on the Machine it
// was given; the controller persists exactly those fields and ignores any other change. The
// conformance package checks this contract; run it in your provider's tests.
//
// Optional interfaces: Lister (lister.go), for a provider that can list the instances it created,
// which turns on the manager's orphan collector.
//
// Start reading at Provider in provider.go; errors.go lists the typed errors.
package provider
