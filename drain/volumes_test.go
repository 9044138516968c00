package drain_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"machineapi.dev/drain"
	"machineapi.dev/drain/internal/test"
)

// TestDecideVolumes protects the scope of the volume wait: it waits for the volumes the drain
// freed, ignores those of pods that stay on the node, and is skipped on an unreachable node.
func TestDecideVolumes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name, claim string) *test.PodBuilder {
		return test.Pod("default", name).OnNode("n1").Running().Claim(claim)
	}
	claims := map[types.NamespacedName]*corev1.PersistentVolumeClaim{}
	volumes := map[string]*corev1.PersistentVolume{}
	for _, v := range []string{"data", "cache", "scratch", "logs"} {
		claims[types.NamespacedName{Namespace: "default", Name: v}] = &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + v}}
		volumes["pv-"+v] = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + v}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.example.com", VolumeHandle: v}},
		}}
	}
	claims[types.NamespacedName{Namespace: "default", Name: "batch-0-work"}] = &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-logs"}}
	attachment := func(pv string) storagev1.VolumeAttachment {
		return storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-" + pv}, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "disk.example.com", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)},
		}}
	}
	attached := func(names ...string) *corev1.Node {
		n := test.Node("n1").Ready(corev1.ConditionTrue).Build()
		for _, name := range names {
			n.Status.VolumesAttached = append(n.Status.VolumesAttached, corev1.AttachedVolume{Name: corev1.UniqueVolumeName(name)})
		}
		return n
	}
	tests := map[string]struct {
		node        *corev1.Node
		pods        []*corev1.Pod
		attachments []storagev1.VolumeAttachment
		want        string
	}{
		"an unreachable node: skipped": {
			node:        test.Node("n1").Ready(corev1.ConditionUnknown).Build(),
			attachments: []storagev1.VolumeAttachment{attachment("pv-data")},
			want:        "skip: Node n1 is unreachable (Ready=Unknown): no kubelet will unmount its volumes, so the volume wait is skipped",
		},
		"nothing attached: nothing to wait for": {node: attached(), want: "waiting: []; ignored: []"},
		"the volume of a pod that stays is ignored, the volume of a pod the drain evicted is waited for": {
			node:        attached(),
			pods:        []*corev1.Pod{pod("keep", "data").Build()},
			attachments: []storagev1.VolumeAttachment{attachment("pv-data"), attachment("pv-cache")},
			want:        "waiting: [csi-pv-cache (PersistentVolume pv-cache)]; ignored: [csi-pv-data (PersistentVolume pv-data): used by pod default/keep, which stays on the node until the instance goes]",
		},
		"a terminating or completed pod's volume is waited for: it is being released": {
			node: attached(),
			pods: []*corev1.Pod{
				pod("leaving", "data").Terminating(now, 30).Build(),
				pod("done", "cache").Phase(corev1.PodSucceeded).Build(),
			},
			attachments: []storagev1.VolumeAttachment{attachment("pv-data"), attachment("pv-cache")},
			want:        "waiting: [csi-pv-cache (PersistentVolume pv-cache) csi-pv-data (PersistentVolume pv-data)]; ignored: []",
		},
		"volumesAttached entries: one a VolumeAttachment stands for is listed once, one of a pod that stays is ignored, an unknown one is waited for": {
			node:        attached("kubernetes.io/csi/disk.example.com^cache", "kubernetes.io/csi/disk.example.com^data", "kubernetes.io/csi/other^x"),
			pods:        []*corev1.Pod{pod("keep", "data").Build()},
			attachments: []storagev1.VolumeAttachment{attachment("pv-cache")},
			want: "waiting: [csi-pv-cache (PersistentVolume pv-cache) kubernetes.io/csi/other^x]; " +
				"ignored: [kubernetes.io/csi/disk.example.com^data: used by pod default/keep, which stays on the node until the instance goes]",
		},
		"a generic ephemeral volume's claim counts as the pod's": {
			node: attached(),
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := test.Pod("default", "batch-0").OnNode("n1").Running().Build()
				p.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
				return p
			}()},
			attachments: []storagev1.VolumeAttachment{attachment("pv-logs")},
			want:        "waiting: []; ignored: [csi-pv-logs (PersistentVolume pv-logs): used by pod default/batch-0, which stays on the node until the instance goes]",
		},
	}
	d, err := drain.New(nil, drain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obs := drain.VolumeObservation{Node: tc.node, Claims: claims, PersistentVolumes: volumes, Attachments: tc.attachments}
			for _, p := range tc.pods {
				obs.Pods = append(obs.Pods, *p)
			}
			if got := describeVolumeWait(d.DecideVolumes(obs)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func describeVolumeWait(w *drain.VolumeWait) string {
	if w.Skip != "" {
		return "skip: " + w.Skip
	}
	var waiting, ignored []string
	for _, v := range w.Waiting {
		waiting = append(waiting, v.String())
	}
	for _, v := range w.Ignored {
		ignored = append(ignored, v.String()+": "+v.Reason)
	}
	return fmt.Sprintf("waiting: %v; ignored: %v", waiting, ignored)
}
