package drain

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/clock"
)

const (
	// DefaultSkipLabelKey is the pod label that, with DefaultSkipLabelValue, leaves a pod on the node.
	DefaultSkipLabelKey = "machine.machineapi.dev/drain"
	// DefaultSkipLabelValue is the value of DefaultSkipLabelKey that leaves a pod on the node.
	DefaultSkipLabelValue = "skip"
	// DefaultStepTimeout bounds one call of Drain or Plan.
	DefaultStepTimeout = 5 * time.Second
	// DefaultMaxConcurrentEvictions is how many eviction requests one step sends at once.
	DefaultMaxConcurrentEvictions = 10
	// DefaultUnreachableTerminatingTimeout is how long, on an unreachable node, a pod may stay
	// terminating past its deletion timestamp before the drain stops waiting for it.
	DefaultUnreachableTerminatingTimeout = 5 * time.Second
	// UnreachableGracePeriodSeconds is the grace period evictions use on an unreachable node: no
	// kubelet will run the pods' shutdown anyway, so their deletion timestamp should come soon.
	UnreachableGracePeriodSeconds int64 = 1
	// DefaultUnreachableDeleteAfter is how long a node must have been unreachable (Ready=Unknown,
	// counted from the condition's lastTransitionTime) before the drain deletes its pods instead
	// of evicting them. It is the tolerationSeconds Kubernetes gives every pod for the
	// node.kubernetes.io/unreachable taint by default: by then the pods cannot have been serving
	// for a while, and the node lifecycle controller would evict most of them anyway.
	DefaultUnreachableDeleteAfter = 5 * time.Minute
)

// Options configure a Drainer. The zero value is valid: every field has a default.
type Options struct {
	// GracePeriodSeconds overrides each pod's terminationGracePeriodSeconds in the eviction
	// request; nil keeps the pod's own. On an unreachable node UnreachableGracePeriodSeconds wins.
	GracePeriodSeconds *int64

	// DeleteEmptyDirData allows evicting pods that use emptyDir volumes, whose data is lost.
	// Without it such pods are reported as blocked and the drain never completes.
	DeleteEmptyDirData bool

	// SkipLabelKey and SkipLabelValue name the pod label that leaves a pod alone: a pod carrying
	// SkipLabelKey=SkipLabelValue is never evicted and does not hold the drain back.
	// They default to DefaultSkipLabelKey and DefaultSkipLabelValue. SkipLabelKey is the
	// override label of every rule (see PodRule): its values WaitCompletedLabelValue and
	// order-<n> (OrderLabelValuePrefix) decide a pod's behaviour and order group too.
	SkipLabelKey   string
	SkipLabelValue string

	// AssumeUnreachable drains in unreachable-node mode even when the node's Ready condition is not
	// Unknown. Without it the mode is chosen from the Node on every call.
	AssumeUnreachable bool

	// UnreachableTerminatingTimeout is how long, in unreachable-node mode, a pod may stay terminating
	// past its deletion timestamp before the drain stops waiting for it.
	// Defaults to DefaultUnreachableTerminatingTimeout.
	UnreachableTerminatingTimeout time.Duration

	// UnreachableDeleteAfter is how long a node must have been unreachable (its Ready condition
	// Unknown since its lastTransitionTime) before the pods that have to leave are deleted rather
	// than evicted, so that no PodDisruptionBudget holds such a drain forever.
	// Defaults to DefaultUnreachableDeleteAfter.
	UnreachableDeleteAfter time.Duration

	// StepTimeout bounds one call of Drain or Plan, API requests included. Evictions not started by
	// then are reported as blocked for this step and retried on the next. Defaults to DefaultStepTimeout.
	StepTimeout time.Duration

	// MaxConcurrentEvictions is how many eviction requests a step has in flight at once.
	// Defaults to DefaultMaxConcurrentEvictions.
	MaxConcurrentEvictions int

	// Clock tells the time for Result.Elapsed and for how long pods have been terminating.
	// Defaults to the real clock.
	Clock clock.PassiveClock

	// OnPodDeletionOrEvictionStarted is called just before an eviction request for pod is sent
	// (usingEviction true) or, past the pod deadline or the unreachable bound, a deletion request
	// (usingEviction false). It may be called from several goroutines at once.
	OnPodDeletionOrEvictionStarted func(pod *corev1.Pod, usingEviction bool)

	// OnPodDeletionOrEvictionFinished is called when that request has returned: err is nil
	// when the API server accepted it (the pod is now terminating) or the pod was already gone,
	// otherwise the refusal, such as a 429 from a PodDisruptionBudget. Unlike kubectl, a step does
	// not wait for the pod to disappear. It may be called from several goroutines at once.
	OnPodDeletionOrEvictionFinished func(pod *corev1.Pod, usingEviction bool, err error)
}

// withDefaults returns a copy of o with every unset field defaulted, or an error naming the field
// that is invalid.
func (o Options) withDefaults() (Options, error) {
	if o.SkipLabelKey == "" {
		o.SkipLabelKey = DefaultSkipLabelKey
	}
	if o.SkipLabelValue == "" {
		o.SkipLabelValue = DefaultSkipLabelValue
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = DefaultStepTimeout
	}
	if o.MaxConcurrentEvictions == 0 {
		o.MaxConcurrentEvictions = DefaultMaxConcurrentEvictions
	}
	if o.UnreachableTerminatingTimeout == 0 {
		o.UnreachableTerminatingTimeout = DefaultUnreachableTerminatingTimeout
	}
	if o.UnreachableDeleteAfter == 0 {
		o.UnreachableDeleteAfter = DefaultUnreachableDeleteAfter
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	switch {
	case o.StepTimeout < 0:
		return o, fmt.Errorf("drain option StepTimeout is %s: use a positive duration or 0 for the default (%s)", o.StepTimeout, DefaultStepTimeout)
	case o.MaxConcurrentEvictions < 0:
		return o, fmt.Errorf("drain option MaxConcurrentEvictions is %d: use a positive number or 0 for the default (%d)", o.MaxConcurrentEvictions, DefaultMaxConcurrentEvictions)
	case o.UnreachableTerminatingTimeout < 0:
		return o, fmt.Errorf("drain option UnreachableTerminatingTimeout is %s: use a positive duration or 0 for the default (%s)", o.UnreachableTerminatingTimeout, DefaultUnreachableTerminatingTimeout)
	case o.UnreachableDeleteAfter < 0:
		return o, fmt.Errorf("drain option UnreachableDeleteAfter is %s: use a positive duration or 0 for the default (%s)", o.UnreachableDeleteAfter, DefaultUnreachableDeleteAfter)
	case o.GracePeriodSeconds != nil && *o.GracePeriodSeconds < 0:
		return o, fmt.Errorf("drain option GracePeriodSeconds is %d: use 0 or more, or nil for each pod's own", *o.GracePeriodSeconds)
	}
	if _, err := o.keepSelector(); err != nil {
		return o, err
	}
	return o, nil
}

// keepSelector selects the pods the drain may consider: those without the skip label. It is handed
// to kubectl's GetPodsForDeletion as its pod selector, so skip-labelled pods never reach its filters.
func (o Options) keepSelector() (string, error) {
	req, err := labels.NewRequirement(o.SkipLabelKey, selection.NotEquals, []string{o.SkipLabelValue})
	if err != nil {
		return "", fmt.Errorf("drain options SkipLabelKey=%q, SkipLabelValue=%q do not make a valid label: %w", o.SkipLabelKey, o.SkipLabelValue, err)
	}
	return labels.NewSelector().Add(*req).String(), nil
}
