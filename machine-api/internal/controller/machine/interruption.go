package machine

import (
	"context"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/reconcile/conditions"
)

// Reasons of the InstanceInterruption condition (True: the provider's reason, or ReasonManual).
const (
	// ReasonManual (True): the interruption-deadline annotation announced the interruption.
	ReasonManual = "Manual"
	// ReasonInterrupted (True): the provider announced an interruption without a reason.
	ReasonInterrupted = "Interrupted"
	// ReasonNotInterrupted (False): an interruption was announced and then withdrawn.
	ReasonNotInterrupted = "NotInterrupted"
	// ReasonInvalidInterruptionDeadline (False): the annotation is no RFC 3339 time.
	ReasonInvalidInterruptionDeadline = "InvalidInterruptionDeadline"
)

// conditionReason is what the API server accepts as a condition's reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// interruptionState is what a reconcile found about the announced end of the instance.
type interruptionState struct {
	// observed: the sources were read (a provider error with no annotation keeps the last answer).
	observed bool
	notice   *v1beta1.MachineInterruption
	invalid  string // why the annotation cannot be read
}

// observeInterruption reads whether the end of the Machine's instance is announced: by the
// annotation (v1beta1.InterruptionDeadlineAnnotation), which wins, or by the provider when it
// implements provider.InterruptionNotifier. Only provisioned Machines that are not being deleted
// are asked about.
func (r *Reconciler) observeInterruption(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m := s.machine
	if m.Spec.ProviderID == "" && (s.observed == nil || s.observed.Spec.ProviderID == "") {
		return reconcile.Result{}, true, nil
	}
	st := &interruptionState{observed: true}
	s.interruption = st
	if n, ok := r.Provider.(provider.InterruptionNotifier); ok {
		i, err := n.Interruption(ctx, m)
		switch {
		case err != nil:
			log.FromContext(ctx).Info("the provider could not say whether the instance is to be interrupted; keeping the last answer", "error", err.Error())
			st.observed = false
		case i != nil:
			reason := i.Reason
			if reason == "" {
				reason = ReasonInterrupted
			}
			// Clamped to what the API accepts, so that a provider's long text cannot fail the write.
			st.notice = &v1beta1.MachineInterruption{Deadline: metav1.NewTime(i.Deadline.UTC().Truncate(time.Second)),
				Reason: clamp(reason, 64), Message: clamp(i.Message, 1024)}
		}
	}
	if v, ok := m.Annotations[v1beta1.InterruptionDeadlineAnnotation]; ok {
		t, parsed := parseDeadline(v)
		if !parsed {
			st.invalid = fmt.Sprintf("annotation %s=%q is no RFC 3339 time (for example 2026-12-03T18:00:00Z): fix or remove it", v1beta1.InterruptionDeadlineAnnotation, v)
			return reconcile.Result{}, true, nil
		}
		st.observed = true
		st.notice = &v1beta1.MachineInterruption{Deadline: metav1.NewTime(t.UTC()), Reason: ReasonManual,
			Message: "announced by the " + v1beta1.InterruptionDeadlineAnnotation + " annotation"}
	}
	return reconcile.Result{}, true, nil
}

// clamp cuts s to at most n bytes, on a rune boundary.
func clamp(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// parseDeadline reads the annotation's RFC 3339 time.
func parseDeadline(v string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// setInterruption records the interruption s observed in st: status.interruption and the
// InstanceInterruption condition, which is absent until an interruption is first announced (or
// the annotation is invalid).
func setInterruption(st *v1beta1.MachineStatus, s *scope, generation int64) {
	now := s.now
	i := s.interruption
	if i == nil {
		return
	}
	if i.observed {
		st.Interruption = i.notice
	}
	c := metav1.Condition{Type: v1beta1.InstanceInterruptionCondition, ObservedGeneration: generation}
	switch {
	case st.Interruption != nil:
		c.Status, c.Reason = metav1.ConditionTrue, st.Interruption.Reason
		if !conditionReason.MatchString(c.Reason) {
			c.Reason = ReasonInterrupted // a condition's reason is one CamelCase word; status.interruption keeps the provider's
		}
		c.Message = fmt.Sprintf("the instance goes away at %s", st.Interruption.Deadline.UTC().Format(time.RFC3339))
		if st.Interruption.Message != "" {
			c.Message += ": " + st.Interruption.Message
		}
		c.Message += "; its MachineSet replaces it first"
	case i.invalid != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonInvalidInterruptionDeadline, i.invalid
	case meta.FindStatusCondition(st.Conditions, v1beta1.InstanceInterruptionCondition) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNotInterrupted, "the interruption announced earlier was withdrawn"
	default:
		return
	}
	conditions.Set(&st.Conditions, c, now)
}

// InterruptionNoticed is the provider's notify (provider.InterruptionNotifier): the Machine is
// queued ahead of new Machines. A call before the controller runs is dropped: its start queues
// every Machine anyway.
func (r *Reconciler) InterruptionNoticed(namespace, name string) {
	r.LinkChanged(types.NamespacedName{Namespace: namespace, Name: name})
}
