package machinedeployment

import (
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/uptodate"
)

// What kubectl machine rollout plan takes from the controller, so that the plan follows the
// controller's own rules rather than a copy of them.

// Fenceposts returns the maxSurge and maxUnavailable md's strategy resolves to (0 and 0 for
// Recreate and OnDelete).
func Fenceposts(md *v1beta1.MachineDeployment) (surge, unavailable int32) {
	return (&scope{md: md}).fenceposts()
}

// CurrentSet returns the set among sets (md's, not deleting) that md's template makes the current
// one, or nil when its template would make the controller create a new set.
func CurrentSet(md *v1beta1.MachineDeployment, sets []*v1beta1.MachineSet) *v1beta1.MachineSet {
	return currentSet(md, uptodate.TemplateHash(&md.Spec.Template), sets)
}
