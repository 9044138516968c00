package provider

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Instance is one instance a Lister reports: what the provider stamped on it when it created it.
type Instance struct {
	// ProviderID is the instance's provider ID (what its Node reports).
	ProviderID string
	// MachineUID, MachineNamespace and MachineName name the Machine the instance was created for.
	MachineUID       types.UID
	MachineNamespace string
	MachineName      string
	// Created is when the instance was created; zero when the provider cannot tell, and then the
	// instance is never collected (its age is unknown).
	Created time.Time
}

// Lister is implemented by providers that can list the instances they created. The manager's
// orphan collector uses it to find instances whose Machine is gone (a finalizer removed by hand,
// a create whose answer was lost while its Machine was deleted, a restore from a backup) and
// report them, and delete them unless told to only report. A provider without it runs as before,
// and the manager says once that orphan collection is off.
type Lister interface {
	// List returns every instance this manager created, found by what the provider stamps on an
	// instance at creation (the Machine's UID, and an identity of the manager, so that two
	// managers sharing an account never see each other's instances), whether or not its Machine
	// still exists. It returns an error rather than a partial list: an instance missing from the
	// list is never collected, but one listed without its Machine may be.
	List(ctx context.Context) ([]Instance, error)

	// DeleteInstance deletes an instance List returned, whose Machine no longer exists (and its
	// Node, where the provider would remove the Node of a deleted instance). Deleting one that is
	// gone already succeeds. It may return before the instance is gone.
	DeleteInstance(ctx context.Context, inst Instance) error
}
