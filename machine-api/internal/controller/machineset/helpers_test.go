package machineset_test

import (
	"fmt"
	"slices"
	"sort"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/expect"
)

// machinesOf lists the Machines a set controls, as the API server has them, deleting ones included.
func machinesOf(set *v1beta1.MachineSet) []v1beta1.Machine {
	list := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, list, client.InNamespace(set.Namespace))).To(Succeed())
	var out []v1beta1.Machine
	for _, m := range list.Items {
		if ref := metav1.GetControllerOf(&m); ref != nil && ref.UID == set.UID {
			out = append(out, m)
		}
	}
	return out
}

// names returns the sorted names of the Machines that are not being deleted.
func names(machines []v1beta1.Machine) []string {
	var out []string
	for _, m := range machines {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// liveNames is names(machinesOf(set)), for Eventually.
func liveNames(set *v1beta1.MachineSet) func() []string {
	return func() []string { return names(machinesOf(set)) }
}

// getSet reads a MachineSet back.
func getSet(set *v1beta1.MachineSet) *v1beta1.MachineSet {
	out := &v1beta1.MachineSet{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(set), out)).To(Succeed())
	return out
}

// readyReplicas is the set's status.readyReplicas, for Eventually.
func readyReplicas(set *v1beta1.MachineSet) func() int32 {
	return func() int32 { return getSet(set).Status.ReadyReplicas }
}

// condition returns "Status/Reason" of a set condition, for readable assertions.
func condition(set *v1beta1.MachineSet, t string) func() string {
	return func() string {
		c := meta.FindStatusCondition(getSet(set).Status.Conditions, t)
		if c == nil {
			return "<none>"
		}
		return fmt.Sprintf("%s/%s", c.Status, c.Reason)
	}
}

// eventReasons lists the reasons of the events about obj, for Eventually.
func eventReasons(obj client.Object) func() []string {
	return func() []string { return expect.EventReasons(ctx, k8s, obj) }
}

// eventNotes lists the notes of the events about obj, for Eventually.
func eventNotes(obj client.Object) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.UID == obj.GetUID() {
				out = append(out, e.Note)
			}
		}
		return out
	}
}

// nodeLabel returns the value of label key on the Node of machine name (or "<no node>").
func nodeLabel(ns, name, key string) string {
	m := &v1beta1.Machine{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m); err != nil || m.Status.NodeRef == nil {
		return "<no node>"
	}
	node := &corev1.Node{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, node); err != nil {
		return "<no node>"
	}
	if v, ok := node.Labels[key]; ok {
		return v
	}
	return "<unset>"
}

// oldestFirst sorts machines as the Oldest delete policy does: creation time, then name.
func oldestFirst(machines []v1beta1.Machine) []v1beta1.Machine {
	out := slices.Clone(machines)
	slices.SortStableFunc(out, func(a, b v1beta1.Machine) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out
}
