// Package disruption is the one decision on how many of a pool's Machines may be taken away on
// purpose now: the disruption budgets of a MachineDeployment or MachineSet
// (spec.disruption.budgets), applied to a reason (a rollout, a MachineClass change, an expiry, a
// remediation, a scale-down, a deletion mark) at a moment in time.
//
// Decide is pure: it reads the budgets, the reason, the pool's size, how many of its Machines are
// being disrupted already, and the time, and says how many more may be, which budget binds, and
// until when the answer holds (the next moment a window opens or closes). Every voluntary path
// asks it before it starts a Machine's deletion; involuntary losses (a vanished instance) never
// ask. A budget that cannot be read (a schedule or time zone that does not parse) holds every
// disruption it would bound, and says what to fix: nothing is deleted by surprise because of a
// typo.
//
// Windows: a budget with a schedule is in force from each time the schedule names (in its time
// zone, UTC by default) for durationSeconds; overlapping windows chain. Percentages of the pool
// round down but never below 1, as maxUnhealthy's do: only 0 or 0% holds everything.
//
// Start reading at Decide.
package disruption
