package machineset

import (
	"slices"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// DeletionOrder returns machines in the order a set with delete policy deletes them when it
// scales down, the first to go first (see sortForDeletion). kubectl machine rollout plan shows
// it; machines is not modified.
func DeletionOrder(machines []*v1beta1.Machine, policy v1beta1.DeletePolicy) []*v1beta1.Machine {
	sorted := slices.Clone(machines)
	sortForDeletion(sorted, policy)
	return sorted
}
