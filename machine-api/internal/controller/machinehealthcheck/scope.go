package machinehealthcheck

import (
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// scope is what one reconcile learned. Steps fill it in; computeStatus turns it into status.
type scope struct {
	mhc *v1beta1.MachineHealthCheck // as read
	now time.Time

	targets []target    // the selected Machines with their Nodes (and requests)
	eval    *evaluation // the pass over targets
	invalid error       // the spec cannot be evaluated; reported in RemediationAllowed
	changed atomic.Bool // a Machine write met a conflict: evaluate again after write.ConflictRetry

	// External remediation (spec.remediationTemplate set).
	external        bool
	template        *unstructured.Unstructured // the template, when it could be read and is usable
	templateProblem string                     // a HealthCheckSucceeded reason when it is not ...
	templateWhy     string                     // ... and why, in words
}
