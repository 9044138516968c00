package lineage

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Lineage is what a Machine's annotations say about the lineage it belongs to.
type Lineage struct {
	// ID names the lineage; "" when the Machine has none (it never replaced a remediated Machine).
	ID string
	// Retries is how many times the lineage was remediated before this Machine was created.
	Retries int
	// LastRemediated is when the lineage was last remediated; zero when never.
	LastRemediated time.Time
	// Replaces names the Machine whose lineage this one took over; "" for the first of a slot.
	Replaces string
}

// Of reads m's lineage from its annotations.
func Of(m *v1beta1.Machine) Lineage {
	a := m.Annotations
	l := Lineage{ID: a[v1beta1.LineageAnnotation], Replaces: a[v1beta1.ReplacesAnnotation]}
	if n, err := strconv.Atoi(a[v1beta1.LineageRetriesAnnotation]); err == nil && n > 0 {
		l.Retries = n
	}
	if t, err := time.Parse(time.RFC3339, a[v1beta1.LineageRemediatedAtAnnotation]); err == nil {
		l.LastRemediated = t
	}
	return l
}

// Requested returns m's OwnerRemediated condition when a health check asked m's owner to
// remediate it (status False), nil otherwise.
func Requested(m *v1beta1.Machine) *metav1.Condition {
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.OwnerRemediatedCondition)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return c
}

// IsRequested reports whether a health check asked m's owner to remediate it (Requested is not
// nil): Sort's toReplace for an owner with no reason of its own to replace a Machine.
func IsRequested(m *v1beta1.Machine) bool { return Requested(m) != nil }

// Inherit gives the new Machine m, in place, the lineage of the requested Machine it replaces:
// the same lineage (named after requested when it had none), one remediation more (one in all
// when the health check said requested's lineage starts over), the time the remediation was
// requested, and the name of requested.
func Inherit(m, requested *v1beta1.Machine) {
	from := Of(requested)
	id := from.ID
	if id == "" {
		id = requested.Name
	}
	retries := from.Retries + 1
	at := time.Time{}
	if c := Requested(requested); c != nil {
		at = c.LastTransitionTime.Time
		if c.Reason == v1beta1.RemediationRequestedLineageResetReason {
			retries = 1
		}
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[v1beta1.LineageAnnotation] = id
	m.Annotations[v1beta1.LineageRetriesAnnotation] = strconv.Itoa(retries)
	if !at.IsZero() {
		m.Annotations[v1beta1.LineageRemediatedAtAnnotation] = at.UTC().Format(time.RFC3339)
	}
	m.Annotations[v1beta1.ReplacesAnnotation] = requested.Name
}

// Succeed gives the new Machine m, in place, the lineage of the Machine it replaces for a reason
// that is no failure of that Machine (its instance is to be interrupted): the same lineage and
// count, unchanged, and the name of the Machine it replaces.
func Succeed(m, from *v1beta1.Machine) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	for _, k := range []string{v1beta1.LineageAnnotation, v1beta1.LineageRetriesAnnotation, v1beta1.LineageRemediatedAtAnnotation} {
		if v, ok := from.Annotations[k]; ok {
			m.Annotations[k] = v
		}
	}
	m.Annotations[v1beta1.ReplacesAnnotation] = from.Name
}

// Sort sorts out the Machines to be replaced among a set's machines (those for which toReplace is
// true: a health check requested it, or the set has its own reason): awaiting are those no Machine
// of the set replaces yet, the longest lineage first (when the set replaces fewer Machines than
// were requested, the lineages that failed most are the ones kept), then by name; replaced are
// those not being deleted yet that some Machine of the set already replaces (only their delete is
// left).
func Sort(machines []*v1beta1.Machine, toReplace func(*v1beta1.Machine) bool) (awaiting, replaced []*v1beta1.Machine) {
	heirs := map[string]bool{}
	for _, m := range machines {
		if r := m.Annotations[v1beta1.ReplacesAnnotation]; r != "" {
			heirs[r] = true
		}
	}
	for _, m := range machines {
		switch {
		case !toReplace(m):
		case !heirs[m.Name]:
			awaiting = append(awaiting, m)
		case m.DeletionTimestamp.IsZero():
			replaced = append(replaced, m)
		}
	}
	slices.SortFunc(awaiting, func(a, b *v1beta1.Machine) int {
		return cmp.Or(cmp.Compare(Of(b).Retries, Of(a).Retries), cmp.Compare(a.Name, b.Name))
	})
	return awaiting, replaced
}

// Healthy reports whether m, judged unhealthy with a failure that began at failedAt, had passed
// its health check for at least minHealthy before that: its HealthCheckSucceeded condition True
// since then, or, when that condition is no longer True (a suspect phase rewrote it), its Node
// linked since then. A Machine that never had a Node never was: a slot whose Machines never boot
// keeps counting.
func Healthy(m *v1beta1.Machine, failedAt time.Time, minHealthy time.Duration) bool {
	since := time.Time{}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition); c != nil && c.Status == metav1.ConditionTrue {
		since = c.LastTransitionTime.Time
	} else if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition); c != nil && c.Status == metav1.ConditionTrue {
		since = c.LastTransitionTime.Time
	}
	return !since.IsZero() && !failedAt.Before(since.Add(minHealthy))
}
