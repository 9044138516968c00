package autoscaler

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// AutoscalerBounds reasons.
const (
	ReasonWithinAutoscalerBounds = "WithinAutoscalerBounds"
	ReasonBelowMinSize           = "ReplicasBelowMinSize"
	ReasonAboveMaxSize           = "ReplicasAboveMaxSize"
	ReasonInvalidBounds          = "InvalidAutoscalerAnnotations"
)

// Bounds returns the AutoscalerBounds condition of a MachineSet or MachineDeployment with these
// annotations and spec.replicas, and false when neither autoscaler annotation is set (the
// condition is then removed). The controllers honour spec.replicas as written, whatever the
// bounds: the cluster-autoscaler never moves replicas outside them, and a person who does so is
// told by this condition (and a Warning event) instead of being overruled.
func Bounds(annotations map[string]string, replicas int32, generation int64) (metav1.Condition, bool) {
	minS, hasMin := annotations[v1beta1.AutoscalerMinSizeAnnotation]
	maxS, hasMax := annotations[v1beta1.AutoscalerMaxSizeAnnotation]
	if !hasMin && !hasMax {
		return metav1.Condition{}, false
	}
	c := metav1.Condition{Type: v1beta1.AutoscalerBoundsCondition, Status: metav1.ConditionFalse, ObservedGeneration: generation}
	lo, errMin := parseSize(minS, hasMin, 0)
	hi, errMax := parseSize(maxS, hasMax, -1)
	switch {
	case errMin != nil:
		c.Reason, c.Message = ReasonInvalidBounds, fmt.Sprintf("annotation %s: %v", v1beta1.AutoscalerMinSizeAnnotation, errMin)
	case errMax != nil:
		c.Reason, c.Message = ReasonInvalidBounds, fmt.Sprintf("annotation %s: %v", v1beta1.AutoscalerMaxSizeAnnotation, errMax)
	case hi >= 0 && lo > hi:
		c.Reason, c.Message = ReasonInvalidBounds, fmt.Sprintf("the autoscaler min size %d is larger than its max size %d: fix the annotations", lo, hi)
	case int64(replicas) < lo:
		c.Reason, c.Message = ReasonBelowMinSize, fmt.Sprintf("spec.replicas %d is below the autoscaler min size %d: "+
			"the controller keeps %d Machines; the cluster-autoscaler will not scale down until it is back in range", replicas, lo, replicas)
	case hi >= 0 && int64(replicas) > hi:
		c.Reason, c.Message = ReasonAboveMaxSize, fmt.Sprintf("spec.replicas %d is above the autoscaler max size %d: "+
			"the controller keeps %d Machines; the cluster-autoscaler will not scale up until it is back in range", replicas, hi, replicas)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonWithinAutoscalerBounds
		if hi >= 0 {
			c.Message = fmt.Sprintf("spec.replicas %d is within the autoscaler bounds [%d, %d]", replicas, lo, hi)
		} else {
			c.Message = fmt.Sprintf("spec.replicas %d is at least the autoscaler min size %d", replicas, lo)
		}
	}
	return c, true
}

func parseSize(s string, present bool, def int64) (int64, error) {
	if !present {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number >= 0", s)
	}
	return n, nil
}
