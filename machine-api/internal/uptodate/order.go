package uptodate

import (
	"slices"
	"strings"
	"time"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// SortForReplacement orders the Machines of a MachineDeployment's current MachineSet that it
// replaces (Decision.Replace), the first to go first: those already marked with the delete-machine
// annotation (their replacement is under way), then the unavailable ones (they give no capacity),
// then the oldest instance first (status.provisionedTime), ties by name. available says whether a
// Machine counts as available.
func SortForReplacement(machines []*v1beta1.Machine, available func(*v1beta1.Machine) bool) {
	slices.SortStableFunc(machines, func(a, b *v1beta1.Machine) int {
		if c := rank(a, available) - rank(b, available); c != 0 {
			return c
		}
		if c := provisioned(a).Compare(provisioned(b)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

func rank(m *v1beta1.Machine, available func(*v1beta1.Machine) bool) int {
	switch _, marked := m.Annotations[v1beta1.DeleteMachineAnnotation]; {
	case marked:
		return 0
	case !available(m):
		return 1
	}
	return 2
}

// provisioned is when m's instance was created; a Machine not provisioned yet sorts last.
func provisioned(m *v1beta1.Machine) time.Time {
	if m.Status.ProvisionedTime == nil {
		return time.Unix(1<<40, 0)
	}
	return m.Status.ProvisionedTime.Time
}
