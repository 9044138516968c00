package vms

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

var metav1Now = metav1.Now()

// TestBoundEarly protects the labels-before-pods check: a binding counts against the Node version
// written last before it (by resourceVersion), whatever the Node looked like afterwards.
func TestBoundEarly(t *testing.T) {
	want := map[string]string{"role": ""}
	taint := corev1.Taint{Key: "pool", Value: "vms", Effect: corev1.TaintEffectPreferNoSchedule}
	bare := NodeVersion{RV: 10}
	labelled := NodeVersion{RV: 20, Labels: want, Taints: []corev1.Taint{taint}}
	for name, tc := range map[string]struct {
		versions []NodeVersion
		binding  uint64
		early    bool
	}{
		"bound after the labels and taints":               {versions: []NodeVersion{bare, labelled}, binding: 21},
		"bound between registration and the labels":       {versions: []NodeVersion{bare, labelled}, binding: 15, early: true},
		"bound before the suite saw the Node at all":      {versions: []NodeVersion{labelled}, binding: 5, early: true},
		"labels without the taint are not enough":         {versions: []NodeVersion{bare, {RV: 20, Labels: want}}, binding: 21, early: true},
		"a later version without them does not undo them": {versions: []NodeVersion{bare, labelled, {RV: 30}}, binding: 25},
	} {
		t.Run(name, func(t *testing.T) {
			r := &Recorder{nodes: map[string][]NodeVersion{"n1": tc.versions}, bindings: []Binding{{Pod: "p", Node: "n1", RV: tc.binding}}}
			got := r.BoundEarly([]string{"n1"}, want, []corev1.Taint{taint})
			if early := len(got) > 0; early != tc.early {
				t.Errorf("BoundEarly() = %v, want early %v", got, tc.early)
			}
			if other := r.BoundEarly([]string{"n2"}, want, []corev1.Taint{taint}); len(other) > 0 {
				t.Errorf("BoundEarly() for another Node = %v", other)
			}
		})
	}
}

// TestLeastReady protects the budget check: the fewest Ready, not-terminating pods after any change.
func TestLeastReady(t *testing.T) {
	r := &Recorder{workload: labels.Everything()}
	ready := func(name string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		p.Name, p.UID = name, types.UID("uid-"+name)
		if terminating {
			p.DeletionTimestamp = &metav1Now
		}
		return p
	}
	r.pod(ready("a", false), false)
	r.pod(ready("b", false), false)
	since := time.Now()
	r.pod(ready("a", true), false) // evicted: 1 left
	r.pod(ready("c", false), false)
	r.pod(ready("a", true), true)
	r.pod(ready("b", true), false)
	if least, changes := r.LeastReady(since); least != 1 || changes != 4 {
		t.Errorf("LeastReady() = %d over %d changes, want 1 over 4", least, changes)
	}
	r.pod(ready("c", true), false)
	if least, _ := r.LeastReady(since); least != 0 {
		t.Errorf("LeastReady() = %d after every pod went Terminating, want 0", least)
	}
}
