package machineset

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/reconcile/steps"
)

// A set with spec.machineLaunch replaces the Machines that do not reach Running (their Node
// linked, status.nodeRef set) within timeoutSeconds of their creation, the way it replaces the
// Machines a health check asked it to (lineage.go): a stuck Machine no longer counts toward
// replicas, so scale creates a Machine in its place that continues its lineage, and
// remediateMachines then deletes it. A stuck Machine whose lineage was already replaced maxRetries
// times is kept and reported. Which Machines are stuck is read from the Machines and the clock at
// every reconcile; nothing is remembered.

// Reasons of the MachinesProvisioned condition, and events.
const (
	// ReasonMachinesLaunched (True): no Machine is past its launch timeout without reaching Running.
	ReasonMachinesLaunched = "MachinesLaunched"
	// ReasonLaunchTimedOut (False): a Machine is past its launch timeout; the set replaces it.
	ReasonLaunchTimedOut = "LaunchTimedOut"
	// ReasonLaunchRetriesExhausted (False): a Machine is past its launch timeout and its lineage
	// spent spec.machineLaunch.maxRetries; the set keeps it.
	ReasonLaunchRetriesExhausted = "LaunchRetriesExhausted"

	// EventLaunchTimedOut (Warning): the set deleted Machines that did not reach Running in time,
	// their replacements created.
	EventLaunchTimedOut = "LaunchTimedOut"
)

// launches is what one reconcile found about the set's Machines that have not reached Running.
type launches struct {
	// replace are the stuck Machines the set replaces, by name.
	replace map[string]bool
	// stuck are the Machines past their launch timeout, replaced or kept, the oldest first.
	stuck []*v1beta1.Machine
	// next is how long until the next Machine that has not reached Running is due (0: none).
	next time.Duration
}

// launchesOf finds the set's stuck Machines, once per reconcile. Only Machines that count toward
// replicas are judged: not deleting, not already requested by a health check. A Machine whose
// NodeLinked condition is Unknown (the Nodes are out of sight) is not judged until the linker can
// tell again: an outage of the Node side must not look like every new Machine failing to boot.
func (s *scope) launchesOf() *launches {
	if s.launches != nil {
		return s.launches
	}
	l := &launches{}
	s.launches = l
	spec := s.set.Spec.MachineLaunch
	if spec == nil || spec.TimeoutSeconds <= 0 {
		return l
	}
	timeout := time.Duration(spec.TimeoutSeconds) * time.Second
	maxRetries := int(ptr.Deref(spec.MaxRetries, 3))
	for _, m := range s.machines {
		if !m.DeletionTimestamp.IsZero() || lineage.Requested(m) != nil || m.Status.NodeRef != nil || linkUnknown(m) {
			continue
		}
		due := m.CreationTimestamp.Add(timeout).Sub(s.now)
		if due > 0 {
			if l.next == 0 || due < l.next {
				l.next = due
			}
			continue
		}
		l.stuck = append(l.stuck, m)
		if lineage.Of(m).Retries < maxRetries {
			if l.replace == nil {
				l.replace = map[string]bool{}
			}
			l.replace[m.Name] = true
		}
	}
	slices.SortFunc(l.stuck, func(a, b *v1beta1.Machine) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return l
}

// linkUnknown reports whether m's NodeLinked condition is Unknown: the linker cannot see the Nodes.
func linkUnknown(m *v1beta1.Machine) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition)
	return c != nil && c.Status == metav1.ConditionUnknown
}

// toReplace reports whether the set replaces m: a health check asked it to, m did not launch in
// time, or its instance is to be interrupted (interruption.go).
func (s *scope) toReplace(m *v1beta1.Machine) bool {
	return lineage.IsRequested(m) || s.launchesOf().replace[m.Name] || interrupted(m)
}

// untilDue asks to come back when the next Machine that has not reached Running reaches its
// launch timeout, or an interrupted Machine must go before its replacement is Running: no event
// says so.
func untilDue(s *scope) time.Duration {
	if s.finalizerRemoved {
		return 0
	}
	var next time.Duration
	if s.launches != nil {
		next = s.launches.next
	}
	next = steps.SoonestAfter(next, s.interruptionWait)
	if next == 0 {
		return 0
	}
	return next + time.Second/10
}

// machinesProvisioned is the MachinesProvisioned condition, present while spec.machineLaunch is
// set; ok is false when it is not.
func machinesProvisioned(s *scope) (c metav1.Condition, ok bool) {
	spec := s.set.Spec.MachineLaunch
	if spec == nil {
		return c, false
	}
	timeout := time.Duration(spec.TimeoutSeconds) * time.Second
	c = metav1.Condition{Type: v1beta1.MachinesProvisionedCondition, ObservedGeneration: s.set.Generation}
	l := s.launchesOf()
	if len(l.stuck) == 0 {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonMachinesLaunched
		c.Message = fmt.Sprintf("no Machine is past its launch timeout (%s) without reaching Running", timeout)
		return c, true
	}
	oldest := l.stuck[0]
	c.Status = metav1.ConditionFalse
	var kept []string
	for _, m := range l.stuck {
		if !l.replace[m.Name] {
			kept = append(kept, m.Name)
		}
	}
	stuck := fmt.Sprintf("%d Machines did not reach Running within %s; the oldest, %s, was created %s ago and %s",
		len(l.stuck), timeout, oldest.Name, s.now.Sub(oldest.CreationTimestamp.Time).Round(time.Second), whyStuck(oldest))
	if len(kept) == 0 {
		c.Reason = ReasonLaunchTimedOut
		c.Message = stuck + "; the set replaces them"
		return c, true
	}
	c.Reason = ReasonLaunchRetriesExhausted
	c.Message = fmt.Sprintf("%s; %d are kept, not replaced, because their slot was already replaced spec.machineLaunch.maxRetries (%d) times: %s. "+
		"Fix the template (kubectl describe the Machines, the provider's events), then delete them",
		stuck, len(kept), ptr.Deref(spec.MaxRetries, 3), preview(kept))
	return c, true
}

// whyStuck says where m stopped: its phase and the first condition on the way to Running that is
// not True, or the provider's failure message.
func whyStuck(m *v1beta1.Machine) string {
	phase := string(m.Status.Phase)
	if phase == "" {
		phase = "without a phase"
	}
	why := "is " + phase
	if m.Status.FailureMessage != nil {
		return why + ": " + *m.Status.FailureMessage
	}
	for _, t := range []string{v1beta1.InstanceProvisionedCondition, v1beta1.NodeLinkedCondition} {
		c := meta.FindStatusCondition(m.Status.Conditions, t)
		if c == nil {
			return fmt.Sprintf("%s (no %s condition yet)", why, t)
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("%s (%s %s, %s: %s)", why, t, c.Status, c.Reason, c.Message)
		}
	}
	return why
}
