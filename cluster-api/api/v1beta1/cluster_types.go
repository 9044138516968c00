package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
)

const (
	// Prefix is the prefix of every well-known key of this group.
	Prefix = "cluster.machineapi.dev/"

	// ClusterNameLabel on a Machine, MachineSet or MachineDeployment names the Cluster (in the
	// same namespace) it belongs to. It is optional: machine-api works without any Cluster.
	ClusterNameLabel = Prefix + "cluster-name"

	// WorkerPoolLabel on a MachineDeployment names the worker pool of its Cluster it was made for.
	WorkerPoolLabel = Prefix + "worker-pool"

	// RemoteNodesLabel, with the value "true", on a Machine says that its Node lives in its
	// Cluster's workload API server (spec.kubeconfigSecretRef), so the cluster-manager links it
	// and a machine-manager's in-process node linker must not. The cluster controller puts it on
	// the templates of the worker pools of a Cluster with a kubeconfigSecretRef; Machines of such
	// a Cluster created otherwise must carry it to be linked.
	RemoteNodesLabel = Prefix + "remote-nodes"

	// ClusterFinalizer keeps a Cluster until its machines and infrastructure are gone.
	ClusterFinalizer = Prefix + "cluster"

	// DrainHookName is the preDrain lifecycle hook (spec.lifecycleHooks.preDrain) the
	// cluster-manager puts on every Machine that carries ClusterNameLabel and RemoteNodesLabel=true
	// and is not being deleted. It holds the Machine's deletion until the cluster-manager has
	// drained the Machine's Node in the workload cluster, which machine-manager cannot reach; the
	// cluster-manager then removes it. Removing it by hand lets deletion go on without that drain.
	DrainHookName = "drain-workload-node"

	// DrainHookOwner is the owner of the DrainHookName hook.
	DrainHookOwner = "cluster-manager"
)

// HasRemoteNode reports whether labels (a Machine's) carry ClusterNameLabel and
// RemoteNodesLabel=true: the Machine's Node lives in its Cluster's workload cluster.
func HasRemoteNode(labels map[string]string) bool {
	return labels[ClusterNameLabel] != "" && labels[RemoteNodesLabel] == "true"
}

// APIEndpoint is where a cluster's API server listens.
type APIEndpoint struct {
	// host name or IP address.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Host string `json:"host,omitempty"`

	// port number.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port,omitempty"`
}

// KubeconfigSecretReference names a Secret in the Cluster's namespace holding a kubeconfig.
type KubeconfigSecretReference struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`

	// key in the Secret's data holding the kubeconfig.
	// +optional
	// +kubebuilder:default=value
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// WorkerPool declares a group of identical worker machines; the cluster controller manages one
// MachineDeployment per pool, named <cluster>-<pool>.
// +kubebuilder:validation:XValidation:rule="has(self.template) != has(self.machineClass)",message="set exactly one of template or machineClass"
type WorkerPool struct {
	// name of the pool, unique within the Cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name,omitempty"`

	// replicas is the number of machines in the pool. The cluster controller keeps the pool's
	// MachineDeployment at this size, except when autoscaling is set: then it is only the
	// initial size (within the autoscaling bounds) and the cluster-autoscaler owns the size.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// template of the pool's machines. Its labels get the cluster-name and pool labels added.
	// +optional
	Template *machinev1.MachineTemplateSpec `json:"template,omitempty"`

	// machineClass is a shorthand for a template whose providerSpec refers to this MachineClass.
	// +optional
	MachineClass *machinev1.MachineClassReference `json:"machineClass,omitempty"`

	// strategy of the pool's MachineDeployment. Unset means RollingUpdate with its defaults.
	// +optional
	Strategy *machinev1.MachineDeploymentStrategy `json:"strategy,omitempty"`

	// autoscaling hands the pool's size to the cluster-autoscaler within these bounds: they
	// become the MachineDeployment's node-group min-size and max-size annotations, and the
	// cluster controller stops writing its replicas after creating it.
	// +optional
	Autoscaling *WorkerPoolAutoscaling `json:"autoscaling,omitempty"`
}

// WorkerPoolAutoscaling bounds the size the cluster-autoscaler may give a worker pool.
// +kubebuilder:validation:XValidation:rule="self.minSize <= self.maxSize",message="minSize must not be greater than maxSize"
type WorkerPoolAutoscaling struct {
	// minSize is the smallest number of machines the autoscaler may scale the pool to.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +required
	MinSize int32 `json:"minSize"`

	// maxSize is the largest number of machines the autoscaler may scale the pool to.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +required
	MaxSize int32 `json:"maxSize,omitempty"`
}

// ClusterSpec is the desired state of a Cluster.
type ClusterSpec struct {
	// paused stops the cluster controller from acting on this Cluster.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// controlPlaneEndpoint is where the cluster's API server listens.
	// +optional
	ControlPlaneEndpoint *APIEndpoint `json:"controlPlaneEndpoint,omitempty"`

	// providerSpec is the cluster provider's configuration, a free-form object.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	ProviderSpec *runtime.RawExtension `json:"providerSpec,omitempty"`

	// kubeconfigSecretRef names a Secret with a kubeconfig for this cluster's own API server. When
	// set, the cluster's Machines are linked to the Nodes found there; when unset, to Nodes of the
	// management cluster.
	// +optional
	KubeconfigSecretRef *KubeconfigSecretReference `json:"kubeconfigSecretRef,omitempty"`

	// workerPools each become a MachineDeployment managed by the cluster controller. At most 8,
	// so that the API server can afford to validate each pool's template.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	WorkerPools []WorkerPool `json:"workerPools,omitempty"`
}

// ClusterPhase summarises where a Cluster is in its life.
// +kubebuilder:validation:Enum=Pending;Provisioning;Provisioned;Deleting;Failed
type ClusterPhase string

const (
	// ClusterPhasePending: accepted, nothing done yet.
	ClusterPhasePending ClusterPhase = "Pending"
	// ClusterPhaseProvisioning: the infrastructure is being created.
	ClusterPhaseProvisioning ClusterPhase = "Provisioning"
	// ClusterPhaseProvisioned: the infrastructure exists.
	ClusterPhaseProvisioned ClusterPhase = "Provisioned"
	// ClusterPhaseDeleting: machines and infrastructure are being deleted.
	ClusterPhaseDeleting ClusterPhase = "Deleting"
	// ClusterPhaseFailed: something no retry can fix; see the conditions.
	ClusterPhaseFailed ClusterPhase = "Failed"
)

// ClusterStatus is the observed state of a Cluster.
type ClusterStatus struct {
	// phase summarises where the cluster is in its life.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// desiredMachines is the number of machines the cluster's MachineDeployments and MachineSets want.
	// +optional
	DesiredMachines int32 `json:"desiredMachines"`

	// machines is the number of machines that belong to the cluster.
	// +optional
	Machines int32 `json:"machines"`

	// readyMachines is the number of the cluster's machines whose Node is Ready.
	// +optional
	ReadyMachines int32 `json:"readyMachines"`

	// conditions are the observed conditions: InfrastructureReady, WorkerPoolsReady, MachinesReady, WorkloadAPIReachable
	// (only with a kubeconfigSecretRef) and Deleting (only while deleting).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Cluster is a Kubernetes cluster built on machines: its infrastructure, its worker pools, and
// where its Nodes live.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusters,shortName=cl,categories=machineapi
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredMachines`,description="Machines wanted"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMachines`,description="Machines whose Node is Ready"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.controlPlaneEndpoint.host`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 30",message="metadata.name must be at most 30 characters: it is used in label values and in the names of its MachineDeployments"
type Cluster struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +optional
	Spec ClusterSpec `json:"spec,omitempty"`
	// status is the observed state.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterList is a list of Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
