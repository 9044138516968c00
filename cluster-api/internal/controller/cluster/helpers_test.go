package cluster_test

import (
	"slices"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// clusterStatus returns the Cluster's status as `kubectl get cluster -o yaml` shows it.
func clusterStatus(ns, name string) func(Gomega) v1beta1.ClusterStatus {
	return func(g Gomega) v1beta1.ClusterStatus {
		c := &v1beta1.Cluster{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)).To(Succeed())
		return c.Status
	}
}

// conditionOf returns "Status/Reason" of a Cluster condition, "" when absent.
func conditionOf(ns, name, typ string) func(Gomega) string {
	return func(g Gomega) string {
		c := meta.FindStatusCondition(clusterStatus(ns, name)(g).Conditions, typ)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// memberMachines returns the Machines labelled for the Cluster.
func memberMachines(ns, cluster string) func(Gomega) []machinev1.Machine {
	return func(g Gomega) []machinev1.Machine {
		list := &machinev1.MachineList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{v1beta1.ClusterNameLabel: cluster})).To(Succeed())
		return list.Items
	}
}

// runningMachines counts the Cluster's Machines in phase Running.
func runningMachines(ns, cluster string) func(Gomega) int {
	return func(g Gomega) int {
		n := 0
		for _, m := range memberMachines(ns, cluster)(g) {
			if m.Status.Phase == machinev1.MachinePhaseRunning && m.DeletionTimestamp.IsZero() {
				n++
			}
		}
		return n
	}
}

// deploymentNames lists the MachineDeployments in ns.
func deploymentNames(ns string) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &machinev1.MachineDeploymentList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var names []string
		for _, d := range list.Items {
			names = append(names, d.Name)
		}
		slices.Sort(names)
		return names
	}
}

func replicasOf(ns, name string) func(Gomega) int32 {
	return func(g Gomega) int32 {
		md := &machinev1.MachineDeployment{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, md)).To(Succeed())
		return *md.Spec.Replicas
	}
}

func gone(obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}
}

// eventsFor returns "Type Reason: note" of every event about the named object.
func eventsFor(ns, name string) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				out = append(out, e.Type+" "+e.Reason+": "+e.Note)
			}
		}
		return out
	}
}

// containing matches a list of strings one of which contains sub.
func containing(sub string) OmegaMatcher {
	return ContainElement(ContainSubstring(sub))
}

// nodeOf returns the Node a Machine is linked to in the given client's cluster.
func nodeOf(c client.Client, m *machinev1.Machine) func(Gomega) *corev1.Node {
	return func(g Gomega) *corev1.Node {
		got := &machinev1.Machine{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
		g.Expect(got.Status.NodeRef).NotTo(BeNil())
		n := &corev1.Node{}
		g.Expect(c.Get(ctx, types.NamespacedName{Name: got.Status.NodeRef.Name}, n)).To(Succeed())
		return n
	}
}
