package provider

import (
	"context"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// InPlacePlan is how a provider would bring a Machine's instance to a new spec without replacing
// the Machine.
type InPlacePlan struct {
	// Paths are the changed fields the provider applies in place, as paths of the Machine
	// (spec.providerSpec.value.instanceType, spec.versions.kubelet).
	Paths []string
	// Unsupported are the changed fields it cannot apply in place: only a new Machine has them.
	// A field the spec changes that is in neither list counts as unsupported.
	Unsupported []string
	// Disruptive says that applying Paths stops the instance's workloads (a reboot, a resize):
	// the Machine's Node is then cordoned and drained first, under the Machine's drain rules and
	// deadlines and its deployment's maxUnavailable and disruption budgets, and uncordoned once
	// it is Ready again.
	Disruptive bool
}

// InPlaceUpdater is implemented by providers that can change a running instance. A
// MachineDeployment with spec.rollout.inPlace Prefer or Only then updates its Machines in place
// where every changed field allows it, instead of replacing them. A provider without it has every
// template change applied by replacement.
type InPlaceUpdater interface {
	// CanUpdateInPlace compares m's instance with desired (m with the spec it is to have; both
	// with the providerSpec resolved from their MachineClass) and says which of the changes it
	// would apply in place. It changes nothing. The machine controller calls it once per Machine
	// and template revision, and records the answer in the Machine's status.inPlaceUpdate.
	CanUpdateInPlace(ctx context.Context, m, desired *v1beta1.Machine) (InPlacePlan, error)

	// UpdateInPlace brings m's instance in line with m's spec, the paths a plan said it applies.
	// It must be idempotent: after a crash it is called again and finds the update done or under
	// way. It returns a RequeueAfter error while the update runs (a reboot), and nil once the
	// instance runs with the new spec; for a disruptive update the controller then waits for the
	// Node to be Ready before uncordoning it.
	UpdateInPlace(ctx context.Context, m *v1beta1.Machine) error
}
