package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TaintPropagation says how a Machine's taint reaches its Node.
// +kubebuilder:validation:Enum=Always;OnInitialization
type TaintPropagation string

const (
	// TaintPropagationAlways keeps the taint on the Node in sync with the Machine: added, changed
	// and removed with it, and put back when someone removes it from the Node.
	TaintPropagationAlways TaintPropagation = "Always"
	// TaintPropagationOnInitialization puts the taint on the Node once, in the patch that
	// initializes it (the one that removes NodeUninitializedTaintKey, or that first links a Node
	// registered without it), and then leaves it to whoever manages the Node: removing it from the
	// Node, or from the Machine, changes nothing more.
	TaintPropagationOnInitialization TaintPropagation = "OnInitialization"
)

// MachineTaint is a taint a Machine puts on its Node.
type MachineTaint struct {
	// key of the taint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +required
	Key string `json:"key,omitempty"`

	// value of the taint; omitted for a taint without one.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`

	// effect of the taint: NoSchedule, PreferNoSchedule or NoExecute.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	// +required
	Effect corev1.TaintEffect `json:"effect,omitempty"`

	// propagation is Always (the default: kept in sync with the Machine) or OnInitialization (put
	// on the Node when it is initialized, then left alone).
	// +kubebuilder:default=Always
	// +optional
	Propagation TaintPropagation `json:"propagation,omitempty"`
}

// Taint returns the Node taint t asks for.
func (t MachineTaint) Taint() corev1.Taint {
	return corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
}

// MachineSpec is the desired state of a Machine.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerID) || size(oldSelf.providerID) == 0 || (has(self.providerID) && self.providerID == oldSelf.providerID)",message="providerID is immutable once set",fieldPath=".providerID"
type MachineSpec struct {
	// providerID identifies the machine's instance, in the same form as the Node's
	// spec.providerID (for example sim:///default/abc123). The provider sets it once the instance
	// exists; it cannot change afterwards.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:MinLength=1
	ProviderID string `json:"providerID,omitempty"`

	// providerSpec is the provider-specific configuration: inline (value) or a MachineClass.
	// +required
	ProviderSpec ProviderSpec `json:"providerSpec"`

	// metadata holds labels and annotations applied to the machine's Node and kept in sync:
	// a key removed here is removed from the Node. Keys the Node got from elsewhere are left alone.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// taints applied to the machine's Node, identified by key and effect: kept in sync
	// (propagation Always, the default), or put on the Node once, when it is initialized, and
	// then left to whoever manages the Node (propagation OnInitialization).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Taints []MachineTaint `json:"taints,omitempty"`

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
	// +kubebuilder:validation:MinLength=1
	Kubelet string `json:"kubelet,omitempty"`

	// controlPlane is the control plane version, for machines that run one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:MinLength=1
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
	// +required
	Name string `json:"name,omitempty"`

	// owner names the component responsible for removing the hook.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Owner string `json:"owner,omitempty"`
}

// MachineDeletionSpec bounds the steps of deleting a Machine. Unset means wait without a bound
// (drain and volume detach) or 10 seconds (node deletion).
// +kubebuilder:validation:XValidation:rule="!has(self.drainDeadlineSeconds) || !has(self.nodeDrainTimeoutSeconds) || self.drainDeadlineSeconds == 0 || self.nodeDrainTimeoutSeconds == 0 || self.drainDeadlineSeconds < self.nodeDrainTimeoutSeconds",message="drainDeadlineSeconds must be less than nodeDrainTimeoutSeconds: the timeout gives up draining first otherwise",fieldPath=".drainDeadlineSeconds"
type MachineDeletionSpec struct {
	// nodeDrainTimeoutSeconds is how long draining may take, counted from the start of draining,
	// before it is given up and deletion goes on, whatever pods are still on the Node. 0 or unset
	// waits until the drain completes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDrainTimeoutSeconds *int32 `json:"nodeDrainTimeoutSeconds,omitempty"`

	// drainDeadlineSeconds is by when, counted from the start of draining, the pods that have to
	// leave the Node must be gone. Each pod still holding the drain (blocked by a
	// PodDisruptionBudget, waiting for its order group or to complete) is deleted rather than
	// evicted its own terminationGracePeriodSeconds before the deadline, so that it gets its whole
	// grace period and no budget holds it past the deadline; an event names every pod deleted
	// so. Unlike nodeDrainTimeoutSeconds, the drain goes on until those pods are gone; when both
	// are set it must be the shorter. 0 or unset: no deadline.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DrainDeadlineSeconds *int32 `json:"drainDeadlineSeconds,omitempty"`

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
	// MachinePhaseRunning: the Node is linked (status.nodeRef). A Machine turns Running once its
	// Node is Ready (or, for a Node in a workload cluster this manager cannot see, once the node
	// linker there reports it linked) and stays Running while it is linked, whatever the Node's
	// readiness since: the Ready condition tells its current health.
	MachinePhaseRunning MachinePhase = "Running"
	// MachinePhaseDeleting: deletion is in progress (draining, hooks, instance deletion).
	MachinePhaseDeleting MachinePhase = "Deleting"
	// MachinePhaseFailed: something no retry can fix; see status.failureReason and failureMessage.
	MachinePhaseFailed MachinePhase = "Failed"
)

// MachineFailureReason is a machine-readable reason for phase Failed.
// +kubebuilder:validation:MaxLength=256
type MachineFailureReason string

const (
	// InvalidConfigurationFailure: the provider rejected the machine's configuration.
	InvalidConfigurationFailure MachineFailureReason = "InvalidConfiguration"
	// InstanceMissingFailure: the instance disappeared after it was provisioned.
	InstanceMissingFailure MachineFailureReason = "InstanceMissing"
)

// NodeReference points at the Node linked to a Machine.
type NodeReference struct {
	// kind is always Node.
	// +kubebuilder:validation:Enum=Node
	// +required
	Kind string `json:"kind,omitempty"`
	// name of the Node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
	// uid of the Node, so a Node re-created with the same name is told apart.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// MachineStatusVersions are the versions the machine was observed to run.
type MachineStatusVersions struct {
	// kubelet is the version the Node reports.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
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
	// drainBlockedBy says, while the Node is being drained and pods are left on it, what holds
	// them: the causes of the pods left (PodDisruptionBudget, WaitCompleted, DrainOrder,
	// DrainFilter, EvictionError, StepDeadline) or MachineDrainRule (a rule of the namespace cannot
	// be used). Empty once nothing holds the drain.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	DrainBlockedBy []string `json:"drainBlockedBy,omitempty"`
}

// MachineClassRecord is a MachineClass as a Machine's instance was created from it: its name, a
// hash of its spec, and hashes of the spec's fields, so that the paths a later edit changed can be
// named without keeping a copy of the spec (which may be large). The fields are the nodes of the
// spec's tree (spec, spec.providerSpec, spec.providerSpec.image, ...) down to the deepest level
// that keeps them at most 32; lists count as one field.
type MachineClassRecord struct {
	// name of the MachineClass.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// specHash is a hash of the class's spec (FNV-64a of its JSON with sorted keys, in hex).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	SpecHash string `json:"specHash,omitempty"`

	// fields are the hashes of the spec's fields, by path.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=32
	Fields []FieldHash `json:"fields,omitempty"`
}

// FieldHash is the hash of one field of an object, by its path.
type FieldHash struct {
	// path of the field, for example spec.providerSpec.instanceType.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Path string `json:"path,omitempty"`

	// hash of the field's value (FNV-64a of its JSON with sorted keys, in hex).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	Hash string `json:"hash,omitempty"`
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
	// +kubebuilder:validation:MaxLength=10240
	FailureMessage *string `json:"failureMessage,omitempty"`

	// deletion records when each bounded deletion step started.
	// +optional
	Deletion *MachineDeletionStatus `json:"deletion,omitempty"`

	// machineClass records the MachineClass the instance was created from, as it was then, so that
	// a later edit of the class is reported (the UpToDate condition) and can be rolled out. Set by
	// the machine controller when it creates the instance (for a Machine provisioned before this
	// field existed: when the controller first sees it).
	// +optional
	MachineClass *MachineClassRecord `json:"machineClass,omitempty"`

	// interruption is the announced end of the instance (a spot reclaim, a host's maintenance),
	// from the provider or from the machine.machineapi.dev/interruption-deadline annotation; the
	// Machine's MachineSet replaces it before the deadline (the InstanceInterruption condition).
	// +optional
	Interruption *MachineInterruption `json:"interruption,omitempty"`

	// inPlaceUpdate is the provider's plan to bring the instance to a new template without
	// replacing the Machine, while its MachineDeployment allows in-place updates
	// (spec.rollout.inPlace): recorded when the template changes, and carried out once the
	// Machine's MachineSet gives it the new spec (spec matches templateHash; the Updating
	// condition follows it). Removed when the update is done.
	// +optional
	InPlaceUpdate *MachineInPlaceUpdate `json:"inPlaceUpdate,omitempty"`

	// conditions are the observed conditions: Ready, InstanceProvisioned, NodeLinked, UpToDate, Drained, Deleting, HealthCheckSucceeded, ...
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

// MachineInterruption is an announced end of a Machine's instance.
type MachineInterruption struct {
	// deadline is when the instance is expected to go away.
	// +required
	Deadline metav1.Time `json:"deadline"`

	// reason names the cause in one word: what the provider says (SpotReclaim, Maintenance, ...),
	// or Manual for the annotation.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`

	// message says more, as the provider or the annotation gave it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// MachineInPlaceUpdate is a provider's plan for updating a Machine's instance in place, and how far
// the update has come.
type MachineInPlaceUpdate struct {
	// templateHash identifies the template the plan is for: the name suffix its deployment's
	// MachineSet for that template would have (the hash of the spec fields that need a new
	// Machine).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TemplateHash string `json:"templateHash,omitempty"`

	// paths are the changed fields the provider applies in place.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Paths []string `json:"paths,omitempty"`

	// unsupported are the changed fields the provider cannot apply in place: with any, the
	// Machine is replaced (inPlace Prefer) or the rollout stalls (inPlace Only).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Unsupported []string `json:"unsupported,omitempty"`

	// disruption says what the update does to the instance's workloads: None, or Drain (it stops
	// them, a reboot: the Node is cordoned and drained first, and uncordoned once Ready again).
	// +optional
	Disruption InPlaceDisruption `json:"disruption,omitempty"`

	// startTime is when the update began: the Machine got the new spec.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// nodeDrainStartTime is when draining the Node for the update began (nodeDrainTimeoutSeconds
	// counts from it).
	// +optional
	NodeDrainStartTime *metav1.Time `json:"nodeDrainStartTime,omitempty"`

	// cordonedNode names the Node the update cordoned (it was schedulable before), which it
	// uncordons afterwards; empty when it cordoned none.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CordonedNode string `json:"cordonedNode,omitempty"`

	// nodeBootID is the Node's boot ID when draining began: after a disruptive update the
	// controller waits for the Node to be Ready with another one (or to report Ready since
	// instanceUpdatedTime, for an update that did not reboot it).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	NodeBootID string `json:"nodeBootID,omitempty"`

	// instanceUpdatedTime is when the provider reported the instance updated.
	// +optional
	InstanceUpdatedTime *metav1.Time `json:"instanceUpdatedTime,omitempty"`
}

// InPlaceDisruption is what an in-place update does to an instance's workloads.
// +kubebuilder:validation:Enum=None;Drain
type InPlaceDisruption string

const (
	// InPlaceDisruptionNone: the workloads keep running.
	InPlaceDisruptionNone InPlaceDisruption = "None"
	// InPlaceDisruptionDrain: the update stops them (a reboot): the Node is drained first.
	InPlaceDisruptionDrain InPlaceDisruption = "Drain"
)

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
// +kubebuilder:printcolumn:name="UpToDate",type=string,JSONPath=`.status.conditions[?(@.type=="UpToDate")].status`,priority=1,description="Whether the machine matches its deployment's template, its class and spec.rollout"
// +kubebuilder:printcolumn:name="Updating",type=string,JSONPath=`.status.conditions[?(@.type=="Updating")].reason`,priority=1,description="The step of an in-place update, or InPlaceUpdated"
type Machine struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
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
