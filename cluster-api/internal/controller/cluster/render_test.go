package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

func testCluster(pools ...v1beta1.WorkerPool) *v1beta1.Cluster {
	return &v1beta1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "prod", UID: "cluster-uid"},
		Spec:       v1beta1.ClusterSpec{WorkerPools: pools},
	}
}

func templatePool(name string, replicas int32) v1beta1.WorkerPool {
	return v1beta1.WorkerPool{
		Name:     name,
		Replicas: ptr.To(replicas),
		Template: &machinev1.MachineTemplateSpec{
			Metadata: machinev1.ObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: machinev1.MachineSpec{
				ProviderSpec: machinev1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{"instanceType":"small"}`)}},
			},
		},
	}
}

// The rendering of a pool is the contract with machine-api and the autoscaler: name, labels on
// the deployment, its selector and its Machines, replicas, template and strategy.
func TestRenderDeployment(t *testing.T) {
	remote := testCluster()
	remote.Spec.KubeconfigSecretRef = &v1beta1.KubeconfigSecretReference{Name: "kc", Key: "value"}
	cases := map[string]struct {
		cluster          *v1beta1.Cluster
		pool             v1beta1.WorkerPool
		wantReplicas     int32
		wantTmplLabels   map[string]string
		wantClass        string
		wantStrategy     machinev1.MachineDeploymentStrategyType
		wantAnnotations  map[string]string
		wantProviderSpec string
	}{
		"template pool keeps its labels and gets the membership labels": {
			cluster: testCluster(), pool: templatePool("workers", 3), wantReplicas: 3,
			wantTmplLabels:   map[string]string{"team": "a", v1beta1.ClusterNameLabel: "prod", v1beta1.WorkerPoolLabel: "workers"},
			wantStrategy:     machinev1.RollingUpdateStrategy,
			wantProviderSpec: `{"instanceType":"small"}`,
		},
		"machineClass pool becomes a template referring to the class": {
			cluster: testCluster(), pool: v1beta1.WorkerPool{Name: "gpu", MachineClass: &machinev1.MachineClassReference{Name: "big"}},
			wantReplicas:   1,
			wantTmplLabels: map[string]string{v1beta1.ClusterNameLabel: "prod", v1beta1.WorkerPoolLabel: "gpu"},
			wantClass:      "big", wantStrategy: machinev1.RollingUpdateStrategy,
		},
		"a remote cluster's machines are marked for the remote linker": {
			cluster: remote, pool: templatePool("workers", 2), wantReplicas: 2,
			wantTmplLabels: map[string]string{"team": "a", v1beta1.ClusterNameLabel: "prod", v1beta1.WorkerPoolLabel: "workers",
				v1beta1.RemoteNodesLabel: "true"},
			wantStrategy: machinev1.RollingUpdateStrategy, wantProviderSpec: `{"instanceType":"small"}`,
		},
		"a user cannot mark a local cluster's machines remote": {
			cluster: testCluster(), pool: func() v1beta1.WorkerPool {
				p := templatePool("workers", 1)
				p.Template.Metadata.Labels[v1beta1.RemoteNodesLabel] = "true"
				return p
			}(),
			wantReplicas:   1,
			wantTmplLabels: map[string]string{"team": "a", v1beta1.ClusterNameLabel: "prod", v1beta1.WorkerPoolLabel: "workers"},
			wantStrategy:   machinev1.RollingUpdateStrategy, wantProviderSpec: `{"instanceType":"small"}`,
		},
		"autoscaling moves replicas into the bounds and sets the node-group annotations": {
			cluster: testCluster(), pool: func() v1beta1.WorkerPool {
				p := templatePool("workers", 1)
				p.Autoscaling = &v1beta1.WorkerPoolAutoscaling{MinSize: 2, MaxSize: 5}
				return p
			}(),
			wantReplicas:   2,
			wantTmplLabels: map[string]string{"team": "a", v1beta1.ClusterNameLabel: "prod", v1beta1.WorkerPoolLabel: "workers"},
			wantStrategy:   machinev1.RollingUpdateStrategy, wantProviderSpec: `{"instanceType":"small"}`,
			wantAnnotations: map[string]string{machinev1.AutoscalerMinSizeAnnotation: "2", machinev1.AutoscalerMaxSizeAnnotation: "5"},
		},
		"the pool's strategy is used": {
			cluster: testCluster(), pool: func() v1beta1.WorkerPool {
				p := templatePool("workers", 1)
				p.Strategy = &machinev1.MachineDeploymentStrategy{Type: machinev1.RecreateStrategy}
				return p
			}(),
			wantReplicas:   1,
			wantTmplLabels: map[string]string{"team": "a", v1beta1.ClusterNameLabel: "prod", v1beta1.WorkerPoolLabel: "workers"},
			wantStrategy:   machinev1.RecreateStrategy, wantProviderSpec: `{"instanceType":"small"}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.pool.DeepCopy()
			md := renderDeployment(tc.cluster, &tc.pool)
			if !sameJSON(before, tc.pool) {
				t.Errorf("rendering changed the pool in the Cluster's spec: %+v", tc.pool)
			}
			if want := "prod-" + tc.pool.Name; md.Name != want || md.Namespace != "ns" {
				t.Errorf("name = %s/%s, want ns/%s", md.Namespace, md.Name, want)
			}
			wantLabels := map[string]string{v1beta1.ClusterNameLabel: "prod", v1beta1.WorkerPoolLabel: tc.pool.Name}
			if !sameJSON(md.Labels, wantLabels) || !sameJSON(md.Spec.Selector.MatchLabels, wantLabels) {
				t.Errorf("labels %v, selector %v; want both %v", md.Labels, md.Spec.Selector.MatchLabels, wantLabels)
			}
			if !sameJSON(md.Spec.Template.Metadata.Labels, tc.wantTmplLabels) {
				t.Errorf("template labels = %v, want %v", md.Spec.Template.Metadata.Labels, tc.wantTmplLabels)
			}
			if got := *md.Spec.Replicas; got != tc.wantReplicas {
				t.Errorf("replicas = %d, want %d", got, tc.wantReplicas)
			}
			got := ""
			if c := md.Spec.Template.Spec.ProviderSpec.MachineClass; c != nil {
				got = c.Name
			}
			if got != tc.wantClass {
				t.Errorf("machineClass = %q, want %q", got, tc.wantClass)
			}
			if v := md.Spec.Template.Spec.ProviderSpec.Value; tc.wantProviderSpec != "" && (v == nil || string(v.Raw) != tc.wantProviderSpec) {
				t.Errorf("providerSpec.value = %v, want %s", v, tc.wantProviderSpec)
			}
			if md.Spec.Strategy.Type != tc.wantStrategy {
				t.Errorf("strategy = %s, want %s", md.Spec.Strategy.Type, tc.wantStrategy)
			}
			if !sameJSON(md.Annotations, tc.wantAnnotations) {
				t.Errorf("annotations = %v, want %v", md.Annotations, tc.wantAnnotations)
			}
			if ref := metav1.GetControllerOf(md); ref == nil || ref.UID != "cluster-uid" || ref.Kind != "Cluster" {
				t.Errorf("controller = %+v, want the Cluster", ref)
			}
		})
	}
}

// applyPool decides what a reconcile writes to an existing MachineDeployment, and so who owns
// which field: the replicas question above all (the autoscaler must not be fought).
func TestApplyPool(t *testing.T) {
	scaledByAutoscaler := func(p v1beta1.WorkerPool) *machinev1.MachineDeployment {
		md := renderDeployment(testCluster(p), &p)
		md.Spec.Replicas = ptr.To[int32](7)
		return md
	}
	autoscaled := templatePool("workers", 1)
	autoscaled.Autoscaling = &v1beta1.WorkerPoolAutoscaling{MinSize: 1, MaxSize: 10}
	cases := map[string]struct {
		pool        v1beta1.WorkerPool
		current     func(v1beta1.WorkerPool) *machinev1.MachineDeployment
		wantChanged []string
		wantReps    int32
		check       func(*machinev1.MachineDeployment) bool
	}{
		"in sync: nothing to write": {
			pool:     templatePool("workers", 3),
			current:  func(p v1beta1.WorkerPool) *machinev1.MachineDeployment { return renderDeployment(testCluster(p), &p) },
			wantReps: 3,
		},
		"a changed pool size is written": {
			pool: templatePool("workers", 5),
			current: func(p v1beta1.WorkerPool) *machinev1.MachineDeployment {
				old := templatePool("workers", 3)
				return renderDeployment(testCluster(old), &old)
			},
			wantChanged: []string{"replicas 3→5"}, wantReps: 5,
		},
		"without autoscaling, a manual scale of the deployment is undone": {
			pool: templatePool("workers", 3), current: scaledByAutoscaler,
			wantChanged: []string{"replicas 7→3"}, wantReps: 3,
		},
		"with autoscaling, the autoscaler's size is kept": {
			pool: autoscaled, current: scaledByAutoscaler, wantReps: 7,
		},
		"turning autoscaling off removes the node-group annotations and takes the size back": {
			pool: templatePool("workers", 2),
			current: func(v1beta1.WorkerPool) *machinev1.MachineDeployment {
				return scaledByAutoscaler(autoscaled)
			},
			wantChanged: []string{"autoscaling", "replicas 7→2"}, wantReps: 2,
		},
		"a template change is written whole; a reordered providerSpec is no change": {
			pool: func() v1beta1.WorkerPool {
				p := templatePool("workers", 1)
				p.Template.Spec.ProviderSpec.Value.Raw = []byte(`{ "instanceType" : "large" }`)
				return p
			}(),
			current: func(v1beta1.WorkerPool) *machinev1.MachineDeployment {
				p := templatePool("workers", 1)
				return renderDeployment(testCluster(p), &p)
			},
			wantChanged: []string{"template"}, wantReps: 1,
		},
		"fields the controller does not own are left alone": {
			pool: templatePool("workers", 1),
			current: func(p v1beta1.WorkerPool) *machinev1.MachineDeployment {
				md := renderDeployment(testCluster(p), &p)
				md.Labels["extra"] = "kept"
				md.Annotations = map[string]string{"note": "kept"}
				md.Spec.MinReadySeconds = ptr.To[int32](30)
				md.Spec.Paused = true
				return md
			},
			wantReps: 1,
			check: func(md *machinev1.MachineDeployment) bool {
				return md.Labels["extra"] == "kept" && md.Annotations["note"] == "kept" && md.Spec.Paused && *md.Spec.MinReadySeconds == 30
			},
		},
		"a strategy change is written": {
			pool: func() v1beta1.WorkerPool {
				p := templatePool("workers", 1)
				p.Strategy = &machinev1.MachineDeploymentStrategy{Type: machinev1.RollingUpdateStrategy,
					RollingUpdate: &machinev1.MachineRollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
				return p
			}(),
			current: func(v1beta1.WorkerPool) *machinev1.MachineDeployment {
				p := templatePool("workers", 1)
				return renderDeployment(testCluster(p), &p)
			},
			wantChanged: []string{"strategy"}, wantReps: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			md := tc.current(tc.pool)
			want := renderDeployment(testCluster(tc.pool), &tc.pool)
			changed := applyPool(md, want, &tc.pool)
			if !sameJSON(changed, tc.wantChanged) {
				t.Errorf("changed = %q, want %q", changed, tc.wantChanged)
			}
			if got := *md.Spec.Replicas; got != tc.wantReps {
				t.Errorf("replicas = %d, want %d", got, tc.wantReps)
			}
			if again := applyPool(md, want, &tc.pool); len(again) != 0 {
				t.Errorf("a second apply changed %q: applyPool must converge in one write", again)
			}
			if tc.check != nil && !tc.check(md) {
				t.Errorf("fields owned by others were changed: %+v", md)
			}
		})
	}
}
