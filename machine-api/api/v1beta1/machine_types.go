package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// MachineSpec is the desired state of a Machine.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerID) || size(oldSelf.providerID) == 0 || (has(self.providerID) && self.providerID == oldSelf.providerID)",message="providerID is immutable once set",fieldPath=".providerID"
type MachineSpec struct {
	// providerID identifies the machine's instance, in the same form as the Node's
	// spec.providerID (for example sim:///default/abc123). The provider sets it once the instance
	// exists; it cannot change afterwards.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// providerSpec is the provider-specific configuration: inline (value) or a MachineClass.
	ProviderSpec ProviderSpec `json:"providerSpec"`

	// metadata holds labels and annotations applied to the machine's Node and kept in sync:
	// a key removed here is removed from the Node. Keys the Node got from elsewhere are left alone.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// taints applied to the machine's Node and kept in sync, identified by key and effect.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0)",message="key must not be empty"
	Taints []corev1.Taint `json:"taints,omitempty"`

	// versions the machine should run.
	// +optional
	Versions *MachineVersions `json:"versions,omitempty"`

	// lifecycleHooks hold the Machine's deletion at a stage until every hook listed for that
	// stage is removed by its owner.
	// +optional
	LifecycleHooks LifecycleHooks `json:"lifecycleHooks,omitempty"`

	// deletion bounds how long each step of deleting the Machine may wait.
	// +optional
	Deletion *MachineDeletionSpec `json:"deletion,omitempty"`
}

// MachineVersions are the Kubernetes versions a machine should run.
type MachineVersions struct {
	// kubelet is the kubelet version, for example v1.37.2.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Kubelet string `json:"kubelet,omitempty"`

	// controlPlane is the control plane version, for machines that run one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ControlPlane string `json:"controlPlane,omitempty"`
}

// LifecycleHooks pause the deletion of a Machine before its Node is drained (preDrain) and before
// its instance is deleted (preTerminate). A hook is removed by its owner when its work is done.
// Hooks cannot be added to a Machine that is already deleting.
type LifecycleHooks struct {
	// preDrain hooks hold deletion before the Node is cordoned and drained.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	PreDrain []LifecycleHook `json:"preDrain,omitempty"`

	// preTerminate hooks hold deletion after the drain and before the instance is deleted.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	PreTerminate []LifecycleHook `json:"preTerminate,omitempty"`
}

// LifecycleHook is one hook: a name unique within its stage and the component that owns it.
type LifecycleHook struct {
	// name of the hook, unique within its stage.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// owner names the component responsible for removing the hook.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Owner string `json:"owner"`
}

// MachineDeletionSpec bounds the steps of deleting a Machine. Unset means wait without a bound
// (drain and volume detach) or 10 seconds (node deletion).
type MachineDeletionSpec struct {
	// nodeDrainTimeoutSeconds is how long draining may take before it is given up and deletion
	// goes on. 0 or unset waits until the drain completes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDrainTimeoutSeconds *int32 `json:"nodeDrainTimeoutSeconds,omitempty"`

	// nodeVolumeDetachTimeoutSeconds is how long to wait for the Node's volumes to detach. 0 or
	// unset waits until they are detached.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeVolumeDetachTimeoutSeconds *int32 `json:"nodeVolumeDetachTimeoutSeconds,omitempty"`

	// nodeDeletionTimeoutSeconds is how long to keep trying to delete the Node object after the
	// instance is gone. Unset means 10 seconds; 0 retries until it succeeds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDeletionTimeoutSeconds *int32 `json:"nodeDeletionTimeoutSeconds,omitempty"`
}

// MachinePhase is a one-word summary of where a Machine is in its life.
// +kubebuilder:validation:Enum=Pending;Provisioning;Provisioned;Running;Deleting;Failed
type MachinePhase string

const (
	// MachinePhasePending: accepted, no instance requested yet.
	MachinePhasePending MachinePhase = "Pending"
	// MachinePhaseProvisioning: the instance is being created.
	MachinePhaseProvisioning MachinePhase = "Provisioning"
	// MachinePhaseProvisioned: the instance exists (providerID set); its Node is not linked or not Ready yet.
	MachinePhaseProvisioned MachinePhase = "Provisioned"
	// MachinePhaseRunning: the Node is linked and Ready.
	MachinePhaseRunning MachinePhase = "Running"
	// MachinePhaseDeleting: deletion is in progress (draining, hooks, instance deletion).
	MachinePhaseDeleting MachinePhase = "Deleting"
	// MachinePhaseFailed: something no retry can fix; see status.failureReason and failureMessage.
	MachinePhaseFailed MachinePhase = "Failed"
)

// MachineFailureReason is a machine-readable reason for phase Failed.
type MachineFailureReason string

const (
	// InvalidConfigurationFailure: the provider rejected the machine's configuration.
	InvalidConfigurationFailure MachineFailureReason = "InvalidConfiguration"
	// InstanceMissingFailure: the instance disappeared after it was provisioned.
	InstanceMissingFailure MachineFailureReason = "InstanceMissing"
	// MachineClassMissingFailure: the referenced MachineClass does not exist.
	MachineClassMissingFailure MachineFailureReason = "MachineClassMissing"
)

// NodeReference points at the Node linked to a Machine.
type NodeReference struct {
	// kind is always Node.
	// +kubebuilder:validation:Enum=Node
	Kind string `json:"kind"`
	// name of the Node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// uid of the Node, so a Node re-created with the same name is told apart.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// MachineStatusVersions are the versions the machine was observed to run.
type MachineStatusVersions struct {
	// kubelet is the version the Node reports.
	// +optional
	Kubelet string `json:"kubelet,omitempty"`
}

// MachineDeletionStatus records when each bounded deletion step started, so its timeout survives
// controller restarts.
type MachineDeletionStatus struct {
	// nodeDrainStartTime is when draining the Node started.
	// +optional
	NodeDrainStartTime *metav1.Time `json:"nodeDrainStartTime,omitempty"`
	// waitForNodeVolumeDetachStartTime is when waiting for volumes to detach started.
	// +optional
	WaitForNodeVolumeDetachStartTime *metav1.Time `json:"waitForNodeVolumeDetachStartTime,omitempty"`
	// nodeDeletionStartTime is when deleting the Node object started.
	// +optional
	NodeDeletionStartTime *metav1.Time `json:"nodeDeletionStartTime,omitempty"`
}

// MachineStatus is the observed state of a Machine.
type MachineStatus struct {
	// phase summarises where the machine is in its life.
	// +optional
	Phase MachinePhase `json:"phase,omitempty"`

	// nodeRef points at the Node linked to this machine; set by the node linker.
	// +optional
	NodeRef *NodeReference `json:"nodeRef,omitempty"`

	// addresses of the instance, as reported by the provider.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Addresses []corev1.NodeAddress `json:"addresses,omitempty"`

	// providerStatus is provider-specific status, a free-form object.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	ProviderStatus *runtime.RawExtension `json:"providerStatus,omitempty"`

	// versions observed on the Node.
	// +optional
	Versions *MachineStatusVersions `json:"versions,omitempty"`

	// provisionedTime is when the instance was first seen to exist. It never changes afterwards;
	// health checks measure the node startup timeout from it.
	// +optional
	ProvisionedTime *metav1.Time `json:"provisionedTime,omitempty"`

	// failureReason is set with phase Failed: a machine-readable reason.
	// +optional
	FailureReason *MachineFailureReason `json:"failureReason,omitempty"`

	// failureMessage is set with phase Failed: what went wrong and what to change.
	// +optional
	FailureMessage *string `json:"failureMessage,omitempty"`

	// deletion records when each bounded deletion step started.
	// +optional
	Deletion *MachineDeletionStatus `json:"deletion,omitempty"`

	// conditions: Ready, InstanceProvisioned, NodeLinked, Drained, Deleting, HealthCheckSucceeded, ...
	// Each controller writes only its own.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// lastUpdated is when the machine controller last changed this status.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
}

// Machine is one machine: an instance a provider creates, and the Node that runs on it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=machines,shortName=ma,categories=machineapi
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Where the machine is in its life"
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`,description="The instance"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeRef.name`,description="The linked Node"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.versions.kubelet`,description="Kubelet version"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="InternalIP",type=string,JSONPath=`.status.addresses[?(@.type=="InternalIP")].address`,priority=1,description="Internal IP address"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.failureReason`,priority=1,description="Why the machine failed"
type Machine struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec MachineSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status MachineStatus `json:"status,omitempty"`
}

// MachineList is a list of Machines.
// +kubebuilder:object:root=true
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Machine `json:"items"`
}

func init() {
	register(&Machine{}, &MachineList{})
}
