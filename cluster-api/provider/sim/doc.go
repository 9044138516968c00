// Package sim is the simulated cluster provider: a real provider.Provider for local runs, tests
// and benchmarks that needs no cloud. A Cluster's infrastructure is an in-memory record keyed by
// the Cluster's UID (so calling Reconcile again finds the same one): a network CIDR and a ready
// time.
//
// What it does:
//
//   - Reconcile validates spec.providerSpec — {"network": "<CIDR>"}, default 10.0.0.0/16; an
//     unknown field or a bad CIDR is an InvalidConfiguration error naming it — records the
//     infrastructure, and reports it ready once Options.ProvisionDelay has passed (a RequeueAfter
//     error until then). A changed network is applied in place.
//   - Delete marks the infrastructure deleting and removes it once Options.DeleteDelay has
//     passed (a RequeueAfter error until then); deleting what does not exist succeeds.
//
// Time comes from Options.Clock, so tests step a fake clock instead of sleeping.
package sim
