package conditions

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// Set records c in conds at time now. A new condition, or one whose status changes, gets now as
// its lastTransitionTime; one whose status stays keeps its time. Reason, message and
// observedGeneration are always c's. It reports whether conds changed.
func Set(conds *[]metav1.Condition, c metav1.Condition, now time.Time) bool {
	c.LastTransitionTime = metav1.NewTime(now)
	return meta.SetStatusCondition(conds, c)
}

// Restart records c in conds with now as its lastTransitionTime whatever the status was before.
// It reports whether conds changed.
func Restart(conds *[]metav1.Condition, c metav1.Condition, now time.Time) bool {
	c.LastTransitionTime = metav1.NewTime(now)
	prev := meta.FindStatusCondition(*conds, c.Type)
	if prev != nil && *prev == c {
		return false
	}
	meta.RemoveStatusCondition(conds, c.Type)
	*conds = append(*conds, c)
	return true
}

// ApplyConfigurations returns the server-side apply configurations of the conditions in conds
// whose type is one of types, or of every condition when no type is given, in the order of conds.
func ApplyConfigurations(conds []metav1.Condition, types ...string) []*metav1ac.ConditionApplyConfiguration {
	var out []*metav1ac.ConditionApplyConfiguration
	for _, c := range conds {
		if len(types) > 0 && !slices.Contains(types, c.Type) {
			continue
		}
		out = append(out, ApplyConfiguration(c))
	}
	return out
}

// ApplyConfiguration returns the server-side apply configuration of c, every field set.
func ApplyConfiguration(c metav1.Condition) *metav1ac.ConditionApplyConfiguration {
	return metav1ac.Condition().
		WithType(c.Type).
		WithStatus(c.Status).
		WithObservedGeneration(c.ObservedGeneration).
		WithLastTransitionTime(c.LastTransitionTime).
		WithReason(c.Reason).
		WithMessage(c.Message)
}
