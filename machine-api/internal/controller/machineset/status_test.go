package machineset

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/autoscaler"
)

func testSet(replicas int32, mutate ...func(*v1beta1.MachineSet)) *v1beta1.MachineSet {
	set := &v1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "ns", UID: "set-uid", Generation: 4},
		Spec: v1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
			Template: v1beta1.MachineTemplateSpec{Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"pool": "a"}}},
		},
	}
	for _, f := range mutate {
		f(set)
	}
	return set
}

func labelled(m *v1beta1.Machine) { m.Labels = map[string]string{"pool": "a"} }

// readySince makes m's Ready condition True since t0 + d.
func readySince(d time.Duration) func(*v1beta1.Machine) {
	return func(m *v1beta1.Machine) {
		meta.RemoveStatusCondition(&m.Status.Conditions, v1beta1.ReadyCondition)
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1beta1.ReadyCondition, Status: metav1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(t0.Add(d))})
	}
}

func notReady(m *v1beta1.Machine) {
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1beta1.ReadyCondition, Status: metav1.ConditionFalse})
}

func TestCountsAndAvailability(t *testing.T) {
	now := t0.Add(time.Minute)
	cases := map[string]struct {
		minReady      int32
		machines      []*v1beta1.Machine
		wantReady     int32
		wantAvailable int32
		wantFully     int32
		wantNext      time.Duration
	}{
		"ready Machines are available at once without minReadySeconds": {
			machines:  []*v1beta1.Machine{machine("a", 0, labelled), machine("b", 0, notReady)},
			wantReady: 1, wantAvailable: 1, wantFully: 1,
		},
		"a Machine ready for less than minReadySeconds is ready, not yet available, and sets the requeue": {
			minReady:  30,
			machines:  []*v1beta1.Machine{machine("a", 0, readySince(0)), machine("b", 0, readySince(50*time.Second)), machine("c", 0, readySince(45*time.Second))},
			wantReady: 3, wantAvailable: 1, wantNext: 15 * time.Second,
		},
		"fully labeled counts Machines carrying every template label": {
			machines:  []*v1beta1.Machine{machine("a", 0, labelled), machine("b", 0, labelled), machine("c", 0)},
			wantReady: 3, wantAvailable: 3, wantFully: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := count(tc.machines, testSet(3, func(s *v1beta1.MachineSet) { s.Spec.MinReadySeconds = tc.minReady }), now)
			if c.ready != tc.wantReady || c.available != tc.wantAvailable || c.fullyLabeled != tc.wantFully || c.nextAvailable != tc.wantNext {
				t.Fatalf("ready %d available %d fully labeled %d next %s; want %d %d %d %s",
					c.ready, c.available, c.fullyLabeled, c.nextAvailable, tc.wantReady, tc.wantAvailable, tc.wantFully, tc.wantNext)
			}
		})
	}
}

func TestIsFrozen(t *testing.T) {
	frozenBefore := func(s *v1beta1.MachineSet) {
		s.Status.Conditions = []metav1.Condition{{Type: v1beta1.FrozenCondition, Status: metav1.ConditionTrue}}
	}
	cases := map[string]struct {
		set   *v1beta1.MachineSet
		have  int32
		surge int32
		want  bool
	}{
		"within replicas":                            {set: testSet(3), have: 3, want: false},
		"within replicas plus surge":                 {set: testSet(3), have: 4, surge: 1, want: false},
		"the count grew past the bound":              {set: testSet(3, func(s *v1beta1.MachineSet) { s.Status.Replicas = 3 }), have: 5, surge: 1, want: true},
		"the bound was lowered below it: scale-down": {set: testSet(1, func(s *v1beta1.MachineSet) { s.Status.Replicas = 5 }), have: 5, want: false},
		"stays frozen while out of bounds":           {set: testSet(1, frozenBefore, func(s *v1beta1.MachineSet) { s.Status.Replicas = 9 }), have: 4, want: true},
		"thaws once back within bounds":              {set: testSet(3, frozenBefore), have: 3, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := isFrozen(tc.set, tc.have, tc.surge); got != tc.want {
				t.Fatalf("isFrozen = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"pool": "a"})
	cases := map[string]struct {
		scope *scope
		check func(t *testing.T, st v1beta1.MachineSetStatus)
	}{
		"counts created Machines the cache does not show yet, and says it is scaling up": {
			scope: &scope{set: testSet(3), selector: sel, now: t0, acted: true, created: 2,
				machines: []*v1beta1.Machine{machine("a", 0, labelled)}},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				expectInt(t, "replicas", st.Replicas, 3)
				expectInt(t, "ready", st.ReadyReplicas, 1)
				expectCondition(t, st, v1beta1.ScalingUpCondition, metav1.ConditionTrue, ReasonScalingUp)
				expectCondition(t, st, v1beta1.ReadyCondition, metav1.ConditionFalse, ReasonMachinesNotReady)
				if st.Selector != "pool=a" || st.ObservedGeneration != 4 {
					t.Fatalf("selector %q observedGeneration %d", st.Selector, st.ObservedGeneration)
				}
			},
		},
		"leaves out Machines it just deleted and reports them draining": {
			scope: &scope{set: testSet(1), selector: sel, now: t0, acted: true, deleted: []string{"b"},
				machines: []*v1beta1.Machine{machine("a", 0), machine("b", 0)}},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				expectInt(t, "replicas", st.Replicas, 1)
				expectInt(t, "available", st.AvailableReplicas, 1)
				expectCondition(t, st, v1beta1.ScalingDownCondition, metav1.ConditionTrue, ReasonWaitingForDeletions)
				expectCondition(t, st, v1beta1.ReadyCondition, metav1.ConditionTrue, ReasonMachinesReady)
			},
		},
		"keeps observedGeneration when it did not get to scale": {
			scope: &scope{set: testSet(2), selector: sel, now: t0, machines: []*v1beta1.Machine{machine("a", 0)}},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				expectInt(t, "observedGeneration", int32(st.ObservedGeneration), 0)
				expectInt(t, "replicas", st.Replicas, 1)
			},
		},
		"reports a create failure in ScalingUp": {
			scope: &scope{set: testSet(2), selector: sel, now: t0, acted: true, createErr: errors.New("quota exceeded")},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				expectCondition(t, st, v1beta1.ScalingUpCondition, metav1.ConditionTrue, ReasonCreateFailed)
			},
		},
		"an old set of an OnDelete rollout holds its replacements": {
			scope: &scope{set: testSet(2), selector: sel, now: t0, acted: true, owner: &ownerInfo{holdCreates: "old"},
				machines: []*v1beta1.Machine{machine("a", 0)}},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				expectCondition(t, st, v1beta1.ScalingUpCondition, metav1.ConditionFalse, ReasonCreatesHeld)
			},
		},
		"frozen": {
			scope: &scope{set: testSet(1), selector: sel, now: t0, acted: true, frozen: true,
				machines: []*v1beta1.Machine{machine("a", 0), machine("b", 0), machine("c", 0)}},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				expectCondition(t, st, v1beta1.FrozenCondition, metav1.ConditionTrue, ReasonTooManyMachines)
				expectCondition(t, st, v1beta1.ScalingDownCondition, metav1.ConditionTrue, ReasonScalingDown)
			},
		},
		"a Failed Machine is named in Ready": {
			scope: &scope{set: testSet(1), selector: sel, now: t0, acted: true,
				machines: []*v1beta1.Machine{machine("a", 0, failed, notReady, func(m *v1beta1.Machine) { m.Status.FailureMessage = ptr.To("bad instance type") })}},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				c := meta.FindStatusCondition(st.Conditions, v1beta1.ReadyCondition)
				if c == nil || c.Message != "0 of 1 Machines are ready; 1 failed: a (bad instance type)" {
					t.Fatalf("Ready = %+v", c)
				}
			},
		},
		"the autoscaler condition appears with the annotations": {
			scope: &scope{set: testSet(5, func(s *v1beta1.MachineSet) {
				s.Annotations = map[string]string{v1beta1.AutoscalerMinSizeAnnotation: "6"}
			}), selector: sel, now: t0, acted: true},
			check: func(t *testing.T, st v1beta1.MachineSetStatus) {
				expectCondition(t, st, v1beta1.AutoscalerBoundsCondition, metav1.ConditionFalse, autoscaler.ReasonBelowMinSize)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { tc.check(t, statusOf(tc.scope)) })
	}
}

func TestComputeStatusIsStable(t *testing.T) {
	s := &scope{set: testSet(1), selector: labels.Everything(), now: t0, acted: true, machines: []*v1beta1.Machine{machine("a", 0)}}
	first := statusOf(s)
	s.set.Status = first
	s.now = t0.Add(time.Hour)
	second := statusOf(s)
	for i := range first.Conditions {
		if !first.Conditions[i].LastTransitionTime.Equal(&second.Conditions[i].LastTransitionTime) {
			t.Fatalf("condition %s moved its transition time without a change", first.Conditions[i].Type)
		}
	}
}

// statusOf is the status a reconcile that ended with s writes.
func statusOf(s *scope) v1beta1.MachineSetStatus {
	return computeStatus(s, count(s.active(), s.set, s.now))
}

func expectInt(t *testing.T, what string, got, want int32) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %d, want %d", what, got, want)
	}
}

func expectCondition(t *testing.T, st v1beta1.MachineSetStatus, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %+v, want %s/%s", typ, c, status, reason)
	}
}
