package machineset

import (
	"time"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
)

// A Machine whose instance is announced to go away (status.interruption, written by the machine
// controller from the provider or the interruption-deadline annotation) is replaced first: it no
// longer counts toward replicas, so scale creates a Machine in its place (lineage.Succeed: the
// lineage goes on with its count unchanged, since an interruption is no failure of the Machine),
// and remediateMachines deletes it, which drains its Node, once that replacement is Running, or
// interruptionLead before the deadline, whichever comes first, so the drain has that long.

// interruptionLead is how long before an interruption's deadline the set deletes the interrupted
// Machine even though its replacement is not Running yet.
const interruptionLead = 2 * time.Minute

// EventInterrupted (Normal): the set deleted a Machine whose instance is to be interrupted.
const EventInterrupted = "Interrupted"

// interrupted reports whether m's instance is announced to go away and m is not being deleted.
func interrupted(m *v1beta1.Machine) bool {
	return m.Status.Interruption != nil && m.DeletionTimestamp.IsZero()
}

// inherit gives the new Machine m the lineage of from, which it replaces: counted as a
// remediation, unless from is replaced only because its instance is to be interrupted.
func (s *scope) inherit(m, from *v1beta1.Machine) {
	if interrupted(from) && !lineage.IsRequested(from) && !s.launchesOf().replace[from.Name] {
		lineage.Succeed(m, from)
		return
	}
	lineage.Inherit(m, from)
}

// interruptionDue says whether the interrupted Machine m, whose replacement is heir (nil: none
// yet, or created by this reconcile), may be deleted now: its replacement is Running, or the
// deadline is interruptionLead away. When not, wait is how long until the lead starts.
func interruptionDue(m, heir *v1beta1.Machine, now time.Time) (due bool, why string, wait time.Duration) {
	lead := m.Status.Interruption.Deadline.Add(-interruptionLead)
	switch {
	case heir != nil && heir.Status.NodeRef != nil && heir.Status.Phase == v1beta1.MachinePhaseRunning:
		return true, "its replacement " + heir.Name + " is Running", 0
	case !now.Before(lead):
		return true, "the deadline is near and its replacement is not Running yet", 0
	}
	return false, "", lead.Sub(now)
}
