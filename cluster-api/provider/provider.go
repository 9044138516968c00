package provider

import (
	"context"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// Provider creates and deletes the infrastructure a Cluster needs before and after its machines.
type Provider interface {
	// Reconcile creates the Cluster's infrastructure, or finds what an earlier call created for
	// the same Cluster, and brings it in line with spec.providerSpec and
	// spec.controlPlaneEndpoint. It is called on every reconcile of a Cluster that is not being
	// deleted, so it should be cheap when nothing changed.
	//
	// It returns nil when the infrastructure is ready (the controller then sets
	// InfrastructureReady=True and creates the worker pools), a RequeueAfter error while it is
	// still being created (its reason becomes the condition's message), an InvalidConfiguration
	// error when spec.providerSpec can never work (the Cluster goes to phase Failed until its
	// spec changes), and any other error for a transient failure (retried with backoff).
	Reconcile(ctx context.Context, c *v1beta1.Cluster) error

	// Delete deletes the Cluster's infrastructure. The controller calls it only after every
	// Machine, MachineSet and MachineDeployment of the Cluster is gone, and removes the Cluster's
	// finalizer once it returns nil. Deleting infrastructure that does not exist succeeds.
	//
	// It returns a RequeueAfter error while the deletion is still in progress, and any other
	// error for a failure (retried with backoff; the Cluster stays, with the error in its
	// InfrastructureReady condition).
	Delete(ctx context.Context, c *v1beta1.Cluster) error
}
