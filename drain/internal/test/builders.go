package test

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// NodeBuilder builds a Node.
type NodeBuilder struct{ node *corev1.Node }

// Node starts a schedulable Node without conditions.
func Node(name string) *NodeBuilder {
	return &NodeBuilder{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Unschedulable marks the node cordoned.
func (b *NodeBuilder) Unschedulable() *NodeBuilder {
	b.node.Spec.Unschedulable = true
	return b
}

// Ready sets the node's Ready condition (Unknown is what the node controller writes when the
// kubelet stops reporting).
func (b *NodeBuilder) Ready(status corev1.ConditionStatus) *NodeBuilder {
	b.node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test"}}
	return b
}

// ReadySince sets the node's Ready condition with the time it last changed, as the kubelet or the
// node controller records it.
func (b *NodeBuilder) ReadySince(status corev1.ConditionStatus, since time.Time) *NodeBuilder {
	b.node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
		LastTransitionTime: metav1.NewTime(since)}}
	return b
}

// Build returns the Node.
func (b *NodeBuilder) Build() *corev1.Node { return b.node.DeepCopy() }

// PodBuilder builds a Pod. By default it is owned by a ReplicaSet named after it, so kubectl's
// filters treat it as managed, and it is Pending with no node.
type PodBuilder struct{ pod *corev1.Pod }

// Pod starts a pod with one container, controlled by a ReplicaSet.
func Pod(namespace, name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			UID:       types.UID(namespace + "-" + name),
			Labels:    map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs",
				UID: types.UID(name + "-rs"), Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}}
}

// OnNode binds the pod to a node, as the scheduler would.
func (b *PodBuilder) OnNode(node string) *PodBuilder {
	b.pod.Spec.NodeName = node
	return b
}

// Label adds a label.
func (b *PodBuilder) Label(key, value string) *PodBuilder {
	b.pod.Labels[key] = value
	return b
}

// Unmanaged removes the owner: no controller recreates the pod.
func (b *PodBuilder) Unmanaged() *PodBuilder {
	b.pod.OwnerReferences = nil
	return b
}

// OwnedByDaemonSet makes the pod a DaemonSet pod.
func (b *PodBuilder) OwnedByDaemonSet(ds *appsv1.DaemonSet) *PodBuilder {
	b.pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true),
	}}
	return b
}

// Mirror makes the pod a mirror pod: the API copy of a static pod the kubelet runs from a file.
func (b *PodBuilder) Mirror() *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[corev1.MirrorPodAnnotationKey] = "mirror-hash"
	b.pod.OwnerReferences = nil
	return b
}

// EmptyDir gives the pod an emptyDir volume (local data lost on eviction).
func (b *PodBuilder) EmptyDir() *PodBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, corev1.Volume{
		Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	})
	return b
}

// GracePeriod sets spec.terminationGracePeriodSeconds.
func (b *PodBuilder) GracePeriod(seconds int64) *PodBuilder {
	b.pod.Spec.TerminationGracePeriodSeconds = ptr.To(seconds)
	return b
}

// Claim mounts the PersistentVolumeClaim claim as a volume.
func (b *PodBuilder) Claim(claim string) *PodBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, corev1.Volume{
		Name: claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}},
	})
	return b
}

// Finalizer adds a finalizer, which keeps the pod terminating after deletion until it is removed.
func (b *PodBuilder) Finalizer(name string) *PodBuilder {
	b.pod.Finalizers = append(b.pod.Finalizers, name)
	return b
}

// Running sets phase Running and Ready=True, as the kubelet reports a healthy pod. Budgets only
// protect such pods: the Eviction API deletes Pending pods without looking at budgets.
func (b *PodBuilder) Running() *PodBuilder {
	b.pod.Status.Phase = corev1.PodRunning
	b.pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return b
}

// Unready sets phase Running and Ready=False.
func (b *PodBuilder) Unready() *PodBuilder {
	b.pod.Status.Phase = corev1.PodRunning
	b.pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	return b
}

// Phase sets the pod's phase.
func (b *PodBuilder) Phase(phase corev1.PodPhase) *PodBuilder {
	b.pod.Status.Phase = phase
	return b
}

// Terminating marks the pod deleted with the given grace period, its deletion timestamp at
// deletedAt+grace, as the API server does. Only for fake clients: a real API server sets it.
func (b *PodBuilder) Terminating(deletedAt time.Time, graceSeconds int64) *PodBuilder {
	b.pod.DeletionTimestamp = ptr.To(metav1.NewTime(deletedAt.Add(time.Duration(graceSeconds) * time.Second)))
	b.pod.DeletionGracePeriodSeconds = ptr.To(graceSeconds)
	return b
}

// Build returns the Pod.
func (b *PodBuilder) Build() *corev1.Pod { return b.pod.DeepCopy() }

// PDBBuilder builds a PodDisruptionBudget.
type PDBBuilder struct{ pdb *policyv1.PodDisruptionBudget }

// PDB starts a budget selecting pods with app=<name> and a status that allows no disruption.
func PDB(namespace, name string) *PDBBuilder {
	return &PDBBuilder{pdb: &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1},
	}}
}

// Selecting replaces the selector with matchLabels.
func (b *PDBBuilder) Selecting(matchLabels map[string]string) *PDBBuilder {
	b.pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return b
}

// MaxUnavailable sets spec.maxUnavailable. On an API server the disruption controller then needs
// the scale of the pods' controller; MinAvailable does not.
func (b *PDBBuilder) MaxUnavailable(n int) *PDBBuilder {
	b.pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(int32(n)))
	return b
}

// MinAvailable sets spec.minAvailable to a number.
func (b *PDBBuilder) MinAvailable(n int) *PDBBuilder {
	b.pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(int32(n)))
	return b
}

// Allows sets status.disruptionsAllowed, as input of the pure tests of the budget prediction (on
// an API server, the disruption controller computes the status: CreatePDB drops it).
func (b *PDBBuilder) Allows(n int32) *PDBBuilder {
	b.pdb.Status.DisruptionsAllowed = n
	return b
}

// Healthy sets status.currentHealthy and status.desiredHealthy.
func (b *PDBBuilder) Healthy(current, desired int32) *PDBBuilder {
	b.pdb.Status.CurrentHealthy, b.pdb.Status.DesiredHealthy = current, desired
	return b
}

// Stale makes status.observedGeneration lag behind metadata.generation.
func (b *PDBBuilder) Stale() *PDBBuilder {
	b.pdb.Generation = 2
	return b
}

// AlwaysAllowUnhealthy sets spec.unhealthyPodEvictionPolicy to AlwaysAllow.
func (b *PDBBuilder) AlwaysAllowUnhealthy() *PDBBuilder {
	b.pdb.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
	return b
}

// Build returns the budget.
func (b *PDBBuilder) Build() *policyv1.PodDisruptionBudget { return b.pdb.DeepCopy() }

// DaemonSet returns a DaemonSet whose pods carry app=<name>.
func DaemonSet(namespace, name string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}
