// Package provider is the seam between the cluster controller and a cluster provider, which owns
// a Cluster's cluster-scoped infrastructure (networks, load balancers, the control plane's
// endpoint...): the Provider interface and the errors a provider returns to steer the controller.
// Machines are not its business: machine-api's provider makes them.
//
// A provider is called with (ctx, *Cluster) only. Contract, in one paragraph: every method is
// idempotent and may be called again at any time, including after a crash between a call and the
// controller persisting its result; a provider finds what it made for a Cluster deterministically
// (by the Cluster's UID, or a name derived from it) instead of making it twice. The Cluster passed
// in is a copy: changes to it are ignored. Reconcile returning nil means "the infrastructure is
// ready"; a RequeueAfter error means "not yet, call me again then"; an InvalidConfiguration error
// means "never, until the user changes the Cluster"; any other error is transient and retried with
// backoff. Delete is called only once every Machine of the Cluster is gone.
//
// Start reading at Provider in provider.go; errors.go lists the typed errors; package sim is the
// simulated implementation.
package provider
