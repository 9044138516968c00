package lineage

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Lineage is what a Machine's annotations say about the lineage it belongs to.
type Lineage struct {
	// ID names the lineage; "" when the Machine has none (it never was remediated, nor replaced
	// a remediated Machine).
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

// AwaitsHandOver reports whether m was marked for remediation and its set has not acted on it yet.
func AwaitsHandOver(m *v1beta1.Machine) bool {
	return controllerutil.ContainsFinalizer(m, v1beta1.LineageFinalizer)
}

// Mark marks m, in place, as remediated at now: the health check writes this just before it
// deletes m. m keeps its lineage (or starts one named after itself) and its count.
func Mark(m *v1beta1.Machine, now time.Time) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	if m.Annotations[v1beta1.LineageAnnotation] == "" {
		m.Annotations[v1beta1.LineageAnnotation] = m.Name
	}
	m.Annotations[v1beta1.LineageRemediatedAtAnnotation] = now.UTC().Format(time.RFC3339)
	controllerutil.AddFinalizer(m, v1beta1.LineageFinalizer)
}

// Inherit gives the new Machine m, in place, the lineage of the remediated Machine it replaces:
// the same lineage, one remediation more, the time of that remediation, and the name of remediated.
func Inherit(m, remediated *v1beta1.Machine) {
	from := Of(remediated)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	id := from.ID
	if id == "" {
		id = remediated.Name
	}
	m.Annotations[v1beta1.LineageAnnotation] = id
	m.Annotations[v1beta1.LineageRetriesAnnotation] = strconv.Itoa(from.Retries + 1)
	if !from.LastRemediated.IsZero() {
		m.Annotations[v1beta1.LineageRemediatedAtAnnotation] = from.LastRemediated.UTC().Format(time.RFC3339)
	}
	m.Annotations[v1beta1.ReplacesAnnotation] = remediated.Name
}

// Reset removes m's count of earlier remediations, in place, and reports whether there was one:
// its lineage starts over. The lineage name and what it replaced stay, for the record.
func Reset(m *v1beta1.Machine) bool {
	_, hadCount := m.Annotations[v1beta1.LineageRetriesAnnotation]
	_, hadTime := m.Annotations[v1beta1.LineageRemediatedAtAnnotation]
	delete(m.Annotations, v1beta1.LineageRetriesAnnotation)
	delete(m.Annotations, v1beta1.LineageRemediatedAtAnnotation)
	return hadCount || hadTime
}

// Release removes the lineage finalizer from m, in place, and reports whether it was there.
func Release(m *v1beta1.Machine) bool {
	return controllerutil.RemoveFinalizer(m, v1beta1.LineageFinalizer)
}

// Sort sorts out the marked Machines among a set's machines: awaiting are those whose lineage no
// Machine of the set has taken over yet, the longest lineage first (when the set replaces fewer
// Machines than were remediated, the lineages that failed most are the ones kept), then by name;
// handedOver are those some Machine of the set already replaces (their finalizer only remains to
// be removed).
func Sort(machines []*v1beta1.Machine) (awaiting, handedOver []*v1beta1.Machine) {
	replaced := map[string]bool{}
	for _, m := range machines {
		if r := m.Annotations[v1beta1.ReplacesAnnotation]; r != "" {
			replaced[r] = true
		}
	}
	for _, m := range machines {
		switch {
		case !AwaitsHandOver(m):
		case replaced[m.Name]:
			handedOver = append(handedOver, m)
		case !m.DeletionTimestamp.IsZero():
			awaiting = append(awaiting, m)
		}
	}
	slices.SortFunc(awaiting, func(a, b *v1beta1.Machine) int {
		return cmp.Or(cmp.Compare(Of(b).Retries, Of(a).Retries), cmp.Compare(a.Name, b.Name))
	})
	return awaiting, handedOver
}

// Update applies change to a copy of m and writes what changed with a merge patch guarded by m's
// resourceVersion: finalizers are a list shared with the machine controller, which a merge patch
// replaces whole, so a change computed from a stale copy must fail (with a conflict) rather than
// bring back a finalizer that was removed meanwhile. It returns the updated Machine, or m itself
// when change reports that nothing changed.
func Update(ctx context.Context, c client.Client, m *v1beta1.Machine, change func(*v1beta1.Machine) bool) (*v1beta1.Machine, error) {
	updated := m.DeepCopy()
	if !change(updated) {
		return m, nil
	}
	if err := c.Patch(ctx, updated, client.MergeFromWithOptions(m, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, err
	}
	return updated, nil
}
