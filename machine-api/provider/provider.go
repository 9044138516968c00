package provider

import (
	"context"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Provider creates, updates, checks and deletes the instances behind Machines.
//
// The Machine passed to each method is a copy the provider may modify. When the Machine refers to
// a MachineClass, spec.providerSpec.value holds the class's providerSpec (the Machine stored in the
// API keeps the reference) and MachineClassFrom(ctx) returns the class.
type Provider interface {
	// Create creates the Machine's instance, or finds the one an earlier call created for the same
	// Machine UID, and records spec.providerID (which must equal the providerID its Node will
	// report), status.addresses and, optionally, status.providerStatus on m.
	//
	// Create may return before the instance has booted. It returns an InvalidConfiguration error
	// when the Machine's configuration can never work (the Machine then goes to phase Failed), a
	// RequeueAfter error to be called again later, and any other error for a transient failure
	// (retried with backoff).
	Create(ctx context.Context, m *v1beta1.Machine) error

	// Update brings an existing instance in line with the Machine's spec where the provider can
	// change it in place, and refreshes status.addresses and status.providerStatus on m. It is
	// called on every reconcile of a provisioned Machine, so it should be cheap when nothing changed.
	Update(ctx context.Context, m *v1beta1.Machine) error

	// Exists reports whether the Machine's instance exists. It must not rely on spec.providerID
	// alone: a crash may have lost it, so it finds the instance the way Create does.
	Exists(ctx context.Context, m *v1beta1.Machine) (bool, error)

	// Delete deletes the Machine's instance. Deleting an instance that does not exist succeeds.
	// Delete may return before the instance is gone; the controller calls Exists until it is false.
	Delete(ctx context.Context, m *v1beta1.Machine) error
}

type machineClassKey struct{}

// WithMachineClass returns a context carrying the MachineClass a Machine refers to. The machine
// controller calls it before each provider call; providers read the class with MachineClassFrom.
func WithMachineClass(ctx context.Context, class *v1beta1.MachineClass) context.Context {
	return context.WithValue(ctx, machineClassKey{}, class)
}

// MachineClassFrom returns the MachineClass the Machine being handled refers to, or nil when its
// providerSpec is inline.
func MachineClassFrom(ctx context.Context) *v1beta1.MachineClass {
	class, _ := ctx.Value(machineClassKey{}).(*v1beta1.MachineClass)
	return class
}
