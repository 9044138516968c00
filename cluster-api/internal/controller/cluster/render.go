package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// deploymentName is the name of a pool's MachineDeployment.
func deploymentName(c *v1beta1.Cluster, pool string) string { return c.Name + "-" + pool }

// poolLabels are the labels of a pool's MachineDeployment, its selector and its Machines.
func poolLabels(c *v1beta1.Cluster, pool string) map[string]string {
	return map[string]string{v1beta1.ClusterNameLabel: c.Name, v1beta1.WorkerPoolLabel: pool}
}

// renderDeployment returns the MachineDeployment a worker pool asks for: named <cluster>-<pool>,
// controlled by the Cluster, labelled (and selecting, and templating Machines labelled) with the
// cluster-name and worker-pool labels — plus remote-nodes=true on the Machines of a Cluster whose
// Nodes live in a workload cluster. The template is the pool's, or one whose providerSpec refers
// to the pool's MachineClass. Replicas are the pool's, within the autoscaling bounds when set; the
// bounds become the cluster-autoscaler's node-group annotations.
func renderDeployment(c *v1beta1.Cluster, pool *v1beta1.WorkerPool) *machinev1.MachineDeployment {
	labels := poolLabels(c, pool.Name)
	tmpl := machinev1.MachineTemplateSpec{}
	switch {
	case pool.Template != nil:
		tmpl = *pool.Template.DeepCopy()
	case pool.MachineClass != nil:
		tmpl.Spec.ProviderSpec.MachineClass = pool.MachineClass.DeepCopy()
	}
	tmplLabels := maps.Clone(tmpl.Metadata.Labels)
	if tmplLabels == nil {
		tmplLabels = map[string]string{}
	}
	delete(tmplLabels, v1beta1.RemoteNodesLabel)
	maps.Copy(tmplLabels, labels)
	if c.Spec.KubeconfigSecretRef != nil {
		tmplLabels[v1beta1.RemoteNodesLabel] = "true"
	}
	tmpl.Metadata.Labels = tmplLabels

	md := &machinev1.MachineDeployment{
		TypeMeta: metav1.TypeMeta{APIVersion: machinev1.GroupVersion.String(), Kind: "MachineDeployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            deploymentName(c, pool.Name),
			Namespace:       c.Namespace,
			Labels:          labels,
			Annotations:     autoscalerAnnotations(pool),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(c, v1beta1.GroupVersion.WithKind("Cluster"))},
		},
		Spec: machinev1.MachineDeploymentSpec{
			Replicas: ptr.To(initialReplicas(pool)),
			Selector: machinev1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: tmpl,
			Strategy: strategyOf(pool),
		},
	}
	return md
}

// initialReplicas is the pool's replicas (default 1), moved into the autoscaling bounds if any.
func initialReplicas(pool *v1beta1.WorkerPool) int32 {
	n := replicasOf(pool.Replicas)
	if a := pool.Autoscaling; a != nil {
		n = max(a.MinSize, min(n, a.MaxSize))
	}
	return n
}

func strategyOf(pool *v1beta1.WorkerPool) machinev1.MachineDeploymentStrategy {
	if pool.Strategy == nil {
		return machinev1.MachineDeploymentStrategy{Type: machinev1.RollingUpdateStrategy}
	}
	s := *pool.Strategy.DeepCopy()
	if s.Type == "" {
		s.Type = machinev1.RollingUpdateStrategy
	}
	return s
}

func autoscalerAnnotations(pool *v1beta1.WorkerPool) map[string]string {
	if pool.Autoscaling == nil {
		return nil
	}
	return map[string]string{
		machinev1.AutoscalerMinSizeAnnotation: strconv.Itoa(int(pool.Autoscaling.MinSize)),
		machinev1.AutoscalerMaxSizeAnnotation: strconv.Itoa(int(pool.Autoscaling.MaxSize)),
	}
}

// applyPool brings the fields of md that the cluster controller owns in line with want, the
// rendering of pool, in place, and returns what it changed (nil when nothing). It owns the
// cluster-name and worker-pool labels, the two autoscaler annotations, the template, the strategy
// and — unless the pool is autoscaled — the replicas. Everything else (other labels and
// annotations, minReadySeconds, paused, ...) is left to whoever set it; the selector is immutable.
func applyPool(md, want *machinev1.MachineDeployment, pool *v1beta1.WorkerPool) []string {
	var changed []string
	for k, v := range want.Labels {
		if md.Labels[k] != v {
			if md.Labels == nil {
				md.Labels = map[string]string{}
			}
			md.Labels[k] = v
			changed = appendOnce(changed, "labels")
		}
	}
	for _, k := range []string{machinev1.AutoscalerMinSizeAnnotation, machinev1.AutoscalerMaxSizeAnnotation} {
		v, wanted := want.Annotations[k]
		cur, has := md.Annotations[k]
		switch {
		case wanted && cur != v:
			if md.Annotations == nil {
				md.Annotations = map[string]string{}
			}
			md.Annotations[k] = v
			changed = appendOnce(changed, "autoscaling")
		case !wanted && has:
			delete(md.Annotations, k)
			changed = appendOnce(changed, "autoscaling")
		}
	}
	if pool.Autoscaling == nil && replicasOf(md.Spec.Replicas) != replicasOf(want.Spec.Replicas) {
		changed = append(changed, fmt.Sprintf("replicas %d→%d", replicasOf(md.Spec.Replicas), replicasOf(want.Spec.Replicas)))
		md.Spec.Replicas = ptr.To(replicasOf(want.Spec.Replicas))
	}
	if !sameJSON(md.Spec.Template, want.Spec.Template) {
		md.Spec.Template = *want.Spec.Template.DeepCopy()
		changed = append(changed, "template")
	}
	if !sameJSON(md.Spec.Strategy, want.Spec.Strategy) {
		md.Spec.Strategy = *want.Spec.Strategy.DeepCopy()
		changed = append(changed, "strategy")
	}
	return changed
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// sameJSON compares two values by their JSON form, decoded: free-form fields (the providerSpec
// value) compare equal whatever their key order or spacing, and nil equals empty where the JSON
// omits both.
func sameJSON(a, b any) bool {
	return reflect.DeepEqual(canonical(a), canonical(b))
}

func canonical(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshalling an API type cannot fail: %v", err))
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(fmt.Sprintf("unmarshalling JSON just marshalled cannot fail: %v", err))
	}
	return out
}
