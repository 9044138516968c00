package machinedeployment

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func testMD(replicas int32, mutate ...func(*v1beta1.MachineDeployment)) *v1beta1.MachineDeployment {
	md := &v1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "md", Namespace: "ns", Generation: 2},
		Spec: v1beta1.MachineDeploymentSpec{
			Replicas:                ptr.To(replicas),
			Selector:                v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
			ProgressDeadlineSeconds: ptr.To(int32(60)),
		},
		Status: v1beta1.MachineDeploymentStatus{ObservedGeneration: 2},
	}
	for _, f := range mutate {
		f(md)
	}
	return md
}

func testSetWith(name string, replicas, actual, available int32) *v1beta1.MachineSet {
	return &v1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1beta1.MachineSetSpec{Replicas: ptr.To(replicas)},
		Status:     v1beta1.MachineSetStatus{Replicas: actual, ReadyReplicas: available, AvailableReplicas: available},
	}
}

func progressingSince(reason string, status metav1.ConditionStatus, since time.Time) func(*v1beta1.MachineDeployment) {
	return func(md *v1beta1.MachineDeployment) {
		md.Status.Conditions = []metav1.Condition{{Type: v1beta1.ProgressingCondition, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(since)}}
	}
}

func TestDeploymentStatus(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	cases := map[string]struct {
		md                  *v1beta1.MachineDeployment
		newSet              *v1beta1.MachineSet
		old                 []*v1beta1.MachineSet
		createdSet          bool
		wantCounts          [5]int32 // replicas, updated, ready, available, unavailable
		wantProgressing     string
		wantAvailable       metav1.ConditionStatus
		wantProgressMovedTo time.Time
	}{
		"mid-rollout: counts over both sets, progress restarts the deadline": {
			md:              testMD(6, progressingSince(ReasonSetUpdated, metav1.ConditionTrue, t0)),
			newSet:          testSetWith("new", 2, 2, 1),
			old:             []*v1beta1.MachineSet{testSetWith("old", 5, 5, 5)},
			wantCounts:      [5]int32{7, 2, 6, 6, 0},
			wantProgressing: "True/" + ReasonSetUpdated, wantAvailable: metav1.ConditionTrue,
			wantProgressMovedTo: now,
		},
		"no progress for longer than the deadline": {
			md: testMD(6, progressingSince(ReasonSetUpdated, metav1.ConditionTrue, t0), func(md *v1beta1.MachineDeployment) {
				md.Status.Replicas, md.Status.UpdatedReplicas, md.Status.ReadyReplicas, md.Status.AvailableReplicas = 7, 1, 6, 6
			}),
			newSet:          testSetWith("new", 1, 1, 0),
			old:             []*v1beta1.MachineSet{testSetWith("old", 6, 6, 6)},
			wantCounts:      [5]int32{7, 1, 6, 6, 0},
			wantProgressing: "False/" + ReasonDeadlineExceeded, wantAvailable: metav1.ConditionTrue,
		},
		"complete": {
			md:              testMD(3, progressingSince(ReasonSetUpdated, metav1.ConditionTrue, t0)),
			newSet:          testSetWith("new", 3, 3, 3),
			old:             []*v1beta1.MachineSet{testSetWith("old", 0, 0, 0)},
			wantCounts:      [5]int32{3, 3, 3, 3, 0},
			wantProgressing: "True/" + ReasonNewSetAvailable, wantAvailable: metav1.ConditionTrue,
		},
		"paused": {
			md:              testMD(3, func(md *v1beta1.MachineDeployment) { md.Spec.Paused = true }),
			old:             []*v1beta1.MachineSet{testSetWith("old", 3, 3, 2)},
			wantCounts:      [5]int32{3, 0, 2, 2, 1},
			wantProgressing: "Unknown/" + ReasonPaused, wantAvailable: metav1.ConditionFalse,
		},
		"a new set was created": {
			md:              testMD(3),
			newSet:          nil,
			old:             []*v1beta1.MachineSet{testSetWith("old", 3, 3, 3)},
			createdSet:      true,
			wantCounts:      [5]int32{3, 0, 3, 3, 0},
			wantProgressing: "True/" + ReasonNewSetCreated, wantAvailable: metav1.ConditionTrue,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &scope{md: tc.md, now: now, newSet: tc.newSet, oldSets: tc.old, createdSet: tc.createdSet}
			s.sets = append(s.sets, tc.old...)
			if tc.newSet != nil {
				s.sets = append(s.sets, tc.newSet)
			}
			st := computeStatus(s)
			got := [5]int32{st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas}
			if got != tc.wantCounts {
				t.Fatalf("counts %v, want %v", got, tc.wantCounts)
			}
			p := meta.FindStatusCondition(st.Conditions, v1beta1.ProgressingCondition)
			if p == nil || string(p.Status)+"/"+p.Reason != tc.wantProgressing {
				t.Fatalf("Progressing %+v, want %s", p, tc.wantProgressing)
			}
			if !tc.wantProgressMovedTo.IsZero() && !p.LastTransitionTime.Time.Equal(tc.wantProgressMovedTo) {
				t.Fatalf("Progressing moved to %s, want %s", p.LastTransitionTime, tc.wantProgressMovedTo)
			}
			if a := meta.FindStatusCondition(st.Conditions, v1beta1.AvailableCondition); a == nil || a.Status != tc.wantAvailable {
				t.Fatalf("Available %+v, want %s", a, tc.wantAvailable)
			}
		})
	}
}

func TestUntilDeadline(t *testing.T) {
	md := testMD(3)
	st := v1beta1.MachineDeploymentStatus{Conditions: []metav1.Condition{{Type: v1beta1.ProgressingCondition, Status: metav1.ConditionTrue,
		Reason: ReasonSetUpdated, LastTransitionTime: metav1.NewTime(t0)}}}
	if d := untilDeadline(md, st, t0.Add(20*time.Second)); d != 41*time.Second {
		t.Fatalf("requeue in %s, want the 60s deadline minus 20s plus a second", d)
	}
	st.Conditions[0].Reason = ReasonNewSetAvailable
	if d := untilDeadline(md, st, t0); d != 0 {
		t.Fatalf("a complete rollout requeues in %s", d)
	}
}
