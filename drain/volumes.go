package drain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The volume wait: after a drain, before the instance goes, a caller waits for the volumes the
// drain freed to detach from the node, so that a volume is never attached to two nodes' instances
// at once. It waits only for what the drain frees: the volumes of pods that are still on the node
// and not terminating stay attached until the instance goes (the drain left them: skipped,
// DaemonSet or mirror pods, or pods it gave up on), so waiting for them would only wait out the
// caller's timeout.

// VolumeObservation is what a volume wait saw of a node: the input of DecideVolumes. Drainer.Volumes
// reads it from the API server; a caller or a test may build one.
type VolumeObservation struct {
	// Node is the node, with its status.volumesAttached.
	Node *corev1.Node
	// Pods are the pods bound to the node.
	Pods []corev1.Pod
	// Claims are the PersistentVolumeClaims the pods use, by namespace and name; a claim that
	// does not exist is missing.
	Claims map[types.NamespacedName]*corev1.PersistentVolumeClaim
	// PersistentVolumes are the volumes bound to those claims and those the attachments name, by
	// name; one that does not exist is missing.
	PersistentVolumes map[string]*corev1.PersistentVolume
	// Attachments are the VolumeAttachments whose spec.nodeName is the node.
	Attachments []storagev1.VolumeAttachment
}

// VolumeWait is the drain policy's answer about the volumes of a drained node.
type VolumeWait struct {
	// Node is the node's name.
	Node string
	// Skip, when not empty, says why the wait is skipped altogether: the node is unreachable,
	// and no kubelet will unmount its volumes.
	Skip string
	// Waiting lists the attached volumes to wait for, sorted by name. The wait is over when it is
	// empty (or Skip is set).
	Waiting []AttachedVolume
	// Ignored lists the attached volumes the wait ignores, with why, sorted by name.
	Ignored []AttachedVolume
}

// AttachedVolume is a volume attached to the node: a VolumeAttachment, or an entry of the node's
// status.volumesAttached that no VolumeAttachment stands for.
type AttachedVolume struct {
	// Name is the VolumeAttachment's name, or the status.volumesAttached entry's name (such as
	// kubernetes.io/csi/<driver>^<volume handle>).
	Name string
	// PersistentVolume is the volume's PersistentVolume, when known.
	PersistentVolume string
	// Reason, for an ignored volume, says why.
	Reason string
}

// String names the volume for a message.
func (v AttachedVolume) String() string {
	if v.PersistentVolume != "" {
		return fmt.Sprintf("%s (PersistentVolume %s)", v.Name, v.PersistentVolume)
	}
	return v.Name
}

// DecideVolumes is the drain policy for the volume wait of a drained node, with the Drainer's
// options. It makes no API call. In order:
//
//   - on an unreachable node (Ready=Unknown, or Options.AssumeUnreachable) the wait is skipped:
//     no kubelet will unmount the volumes;
//   - the volumes used (through a PersistentVolumeClaim, or a generic ephemeral volume's claim)
//     by pods still on the node that are neither terminating nor completed are ignored: the pods
//     the drain leaves there (skipped by a label or a rule, DaemonSet and mirror pods, and pods it
//     gave up on) keep them attached until the instance goes;
//   - every other VolumeAttachment of the node is waited for, and every entry of the node's
//     status.volumesAttached that none of them stands for (an entry is matched to a CSI
//     PersistentVolume by its kubernetes.io/csi/<driver>^<volume handle> name).
func (d *Drainer) DecideVolumes(obs VolumeObservation) *VolumeWait {
	w := &VolumeWait{Node: obs.Node.Name}
	if d.opts.AssumeUnreachable || nodeUnreachable(obs.Node) {
		w.Skip = fmt.Sprintf("Node %s is unreachable (Ready=Unknown): no kubelet will unmount its volumes, so the volume wait is skipped", obs.Node.Name)
		return w
	}
	// The PersistentVolumes, and their attached names, of the pods that stay.
	stays := map[string]types.NamespacedName{}
	for i := range obs.Pods {
		pod := &obs.Pods[i]
		if pod.Spec.NodeName != obs.Node.Name || pod.DeletionTimestamp != nil || podCompleted(pod) {
			continue
		}
		for _, claim := range claimsOf(pod) {
			c := obs.Claims[claim]
			if c == nil || c.Spec.VolumeName == "" {
				continue
			}
			stays[c.Spec.VolumeName] = keyOf(pod)
			if name := csiAttachedName(obs.PersistentVolumes[c.Spec.VolumeName]); name != "" {
				stays[name] = keyOf(pod)
			}
		}
	}
	keep := func(v AttachedVolume, used string) {
		if pod, ok := stays[used]; ok {
			v.Reason = fmt.Sprintf("used by pod %s, which stays on the node until the instance goes", pod)
			w.Ignored = append(w.Ignored, v)
			return
		}
		w.Waiting = append(w.Waiting, v)
	}
	covered := map[string]bool{}
	for _, va := range obs.Attachments {
		if va.Spec.NodeName != obs.Node.Name {
			continue
		}
		pv := ptr.Deref(va.Spec.Source.PersistentVolumeName, "")
		keep(AttachedVolume{Name: va.Name, PersistentVolume: pv}, pv)
		if name := csiAttachedName(obs.PersistentVolumes[pv]); name != "" {
			covered[name] = true
		}
	}
	for _, av := range obs.Node.Status.VolumesAttached {
		if name := string(av.Name); !covered[name] {
			keep(AttachedVolume{Name: name}, name)
		}
	}
	byName := func(a, b AttachedVolume) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(w.Waiting, byName)
	slices.SortFunc(w.Ignored, byName)
	return w
}

// Volumes reads what the volume wait of a drained node needs (its pods, their claims and
// volumes, the VolumeAttachments of the node) and returns the drain policy's answer
// (DecideVolumes). It changes nothing and returns within Options.StepTimeout; the error wraps
// ErrNodeNotFound when the Node does not exist. The caller needs RBAC to get nodes,
// persistentvolumeclaims and persistentvolumes, and to list pods and
// storage.k8s.io volumeattachments.
func (d *Drainer) Volumes(ctx context.Context, nodeName string) (*VolumeWait, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StepTimeout)
	defer cancel()
	node, err := d.getNode(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	obs := VolumeObservation{Node: node, Claims: map[types.NamespacedName]*corev1.PersistentVolumeClaim{}, PersistentVolumes: map[string]*corev1.PersistentVolume{}}
	if d.opts.AssumeUnreachable || nodeUnreachable(node) {
		return d.DecideVolumes(obs), nil
	}
	pods, err := d.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", nodeName, err)
	}
	obs.Pods = pods.Items
	var volumes []string
	for i := range obs.Pods {
		for _, key := range claimsOf(&obs.Pods[i]) {
			if _, ok := obs.Claims[key]; ok {
				continue
			}
			c, err := d.client.CoreV1().PersistentVolumeClaims(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				obs.Claims[key] = nil
			case err != nil:
				return nil, fmt.Errorf("reading PersistentVolumeClaim %s of a pod on node %s: %w", key, nodeName, err)
			default:
				obs.Claims[key] = c
				volumes = append(volumes, c.Spec.VolumeName)
			}
		}
	}
	vas, err := d.client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the VolumeAttachments (for node %s): %w", nodeName, err)
	}
	for _, va := range vas.Items {
		if va.Spec.NodeName == nodeName {
			obs.Attachments = append(obs.Attachments, va)
			volumes = append(volumes, ptr.Deref(va.Spec.Source.PersistentVolumeName, ""))
		}
	}
	for _, name := range volumes {
		if _, ok := obs.PersistentVolumes[name]; ok || name == "" {
			continue
		}
		pv, err := d.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			obs.PersistentVolumes[name] = nil
		case err != nil:
			return nil, fmt.Errorf("reading PersistentVolume %s (attached to node %s): %w", name, nodeName, err)
		default:
			obs.PersistentVolumes[name] = pv
		}
	}
	return d.DecideVolumes(obs), nil
}

// claimsOf returns the PersistentVolumeClaims a pod uses: those it names, and those of its
// generic ephemeral volumes (named <pod>-<volume>).
func claimsOf(pod *corev1.Pod) []types.NamespacedName {
	var out []types.NamespacedName
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, types.NamespacedName{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName})
		case v.Ephemeral != nil:
			out = append(out, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name + "-" + v.Name})
		}
	}
	return out
}

// csiAttachedName is the name under which a node's status.volumesAttached lists a CSI
// PersistentVolume, or "" for another kind of volume (or none).
func csiAttachedName(pv *corev1.PersistentVolume) string {
	if pv == nil || pv.Spec.CSI == nil {
		return ""
	}
	return "kubernetes.io/csi/" + pv.Spec.CSI.Driver + "^" + pv.Spec.CSI.VolumeHandle
}
