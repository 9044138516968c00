package machine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// notifier is a provider that announces what it is told to.
type notifier struct {
	provider.Provider
	notice *provider.Interruption
	err    error
}

func (n notifier) Interruption(context.Context, *v1beta1.Machine) (*provider.Interruption, error) {
	return n.notice, n.err
}
func (notifier) NotifyInterruptions(func(string, string)) {}

// TestInterruption protects what the machine controller records of an announced interruption:
// the annotation wins over the provider, a provider error keeps the last answer, a withdrawn
// notice leaves the condition False, an annotation that is no time says what to fix, and a Machine
// without an instance is not asked about.
func TestInterruption(t *testing.T) {
	deadline := now.Add(time.Hour)
	recorded := &v1beta1.MachineInterruption{Deadline: metav1.NewTime(now.Add(time.Minute)), Reason: "Maintenance"}
	wasTrue := metav1.Condition{Type: v1beta1.InstanceInterruptionCondition, Status: metav1.ConditionTrue, Reason: "Maintenance"}
	tests := map[string]struct {
		providerID  string
		annotation  string
		provider    provider.Provider
		before      *v1beta1.MachineInterruption
		beforeConds []metav1.Condition
		want        *v1beta1.MachineInterruption
		cond        string // status/reason, "" for absent
		mentions    string
	}{
		"a provider without the hook, no annotation: nothing recorded": {
			providerID: "sim:///a", provider: nil,
		},
		"the provider announces a reclaim": {
			providerID: "sim:///a", provider: notifier{notice: &provider.Interruption{Deadline: deadline, Reason: "SpotReclaim", Message: "reclaimed"}},
			want: &v1beta1.MachineInterruption{Deadline: metav1.NewTime(deadline), Reason: "SpotReclaim", Message: "reclaimed"},
			cond: "True/SpotReclaim", mentions: "goes away at 2026-11-30T13:00:00Z: reclaimed",
		},
		"a notice without a reason reads Interrupted": {
			providerID: "sim:///a", provider: notifier{notice: &provider.Interruption{Deadline: deadline}},
			want: &v1beta1.MachineInterruption{Deadline: metav1.NewTime(deadline), Reason: ReasonInterrupted},
			cond: "True/" + ReasonInterrupted,
		},
		"the annotation wins over the provider": {
			providerID: "sim:///a", annotation: "2026-11-30T18:00:00Z",
			provider: notifier{notice: &provider.Interruption{Deadline: deadline, Reason: "SpotReclaim"}},
			want:     &v1beta1.MachineInterruption{Deadline: metav1.NewTime(now.Add(6 * time.Hour)), Reason: ReasonManual, Message: "announced by the " + v1beta1.InterruptionDeadlineAnnotation + " annotation"},
			cond:     "True/" + ReasonManual,
		},
		"a provider error keeps the last answer": {
			providerID: "sim:///a", provider: notifier{err: errors.New("the cloud's API is down")},
			before: recorded, beforeConds: []metav1.Condition{wasTrue},
			want: recorded, cond: "True/Maintenance",
		},
		"a withdrawn notice turns the condition False": {
			providerID: "sim:///a", provider: notifier{},
			before: recorded, beforeConds: []metav1.Condition{wasTrue},
			cond: "False/" + ReasonNotInterrupted,
		},
		"an annotation that is no time says what to fix, and announces nothing": {
			providerID: "sim:///a", annotation: "tomorrow",
			cond: "False/" + ReasonInvalidInterruptionDeadline, mentions: "RFC 3339",
		},
		"a provider's long text is cut to what the API accepts": {
			providerID: "sim:///a", provider: notifier{notice: &provider.Interruption{Deadline: deadline, Reason: strings.Repeat("R", 100), Message: strings.Repeat("é", 600)}},
			want: &v1beta1.MachineInterruption{Deadline: metav1.NewTime(deadline), Reason: strings.Repeat("R", 64), Message: strings.Repeat("é", 512)},
			cond: "True/" + strings.Repeat("R", 64),
		},
		"a reason that is no condition reason keeps the status, and the condition says Interrupted": {
			providerID: "sim:///a", provider: notifier{notice: &provider.Interruption{Deadline: deadline, Reason: "host maintenance"}},
			want: &v1beta1.MachineInterruption{Deadline: metav1.NewTime(deadline), Reason: "host maintenance"},
			cond: "True/" + ReasonInterrupted,
		},
		"a Machine without an instance is not asked": {
			annotation: "2026-11-30T18:00:00Z", provider: notifier{notice: &provider.Interruption{Deadline: deadline}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}, Spec: v1beta1.MachineSpec{ProviderID: tc.providerID},
				Status: v1beta1.MachineStatus{Interruption: tc.before, Conditions: tc.beforeConds}}
			if tc.annotation != "" {
				m.Annotations = map[string]string{v1beta1.InterruptionDeadlineAnnotation: tc.annotation}
			}
			s := &scope{machine: m, now: now}
			r := &Reconciler{Provider: tc.provider}
			if _, done, err := r.observeInterruption(context.Background(), s); err != nil || !done {
				t.Fatalf("observeInterruption: done %v, error %v", done, err)
			}
			st := *m.Status.DeepCopy()
			setInterruption(&st, s, 1)
			if (st.Interruption == nil) != (tc.want == nil) || (st.Interruption != nil && (!st.Interruption.Deadline.Equal(&tc.want.Deadline) ||
				st.Interruption.Reason != tc.want.Reason || st.Interruption.Message != tc.want.Message)) {
				t.Errorf("status.interruption %+v, want %+v", st.Interruption, tc.want)
			}
			c := meta.FindStatusCondition(st.Conditions, v1beta1.InstanceInterruptionCondition)
			got := ""
			if c != nil {
				got = string(c.Status) + "/" + c.Reason
			}
			if got != tc.cond {
				t.Errorf("InstanceInterruption %q, want %q", got, tc.cond)
			}
			if tc.mentions != "" && (c == nil || !strings.Contains(c.Message, tc.mentions)) {
				t.Errorf("the condition's message does not mention %q: %+v", tc.mentions, c)
			}
		})
	}
}
