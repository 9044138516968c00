package remotedrain

import "machineapi.dev/machine-api/machinedrain"

// WorkloadNodeDrained condition reasons, also the reasons of the events that accompany them.
const (
	// True: the hook was removed because...
	ReasonDrained                 = "Drained"                         // the Node was drained
	ReasonDrainExcluded           = string(machinedrain.SkipExcluded) // the Machine has the exclude-node-draining annotation
	ReasonNoNode                  = string(machinedrain.SkipNoNode)   // the Machine has no status.nodeRef
	ReasonNodeNotFound            = "NodeNotFound"                    // the Node does not exist in the workload cluster
	ReasonClusterDeleting         = "ClusterDeleting"                 // the Cluster is being deleted
	ReasonClusterNotFound         = "ClusterNotFound"                 // the Cluster is gone
	ReasonDrainTimeout            = "DrainTimeout"                    // spec.deletion.nodeDrainTimeoutSeconds passed
	ReasonWaitingForPreDrainHooks = "WaitingForPreDrainHooks"         // Unknown: other preDrain hooks hold the drain; it has not begun
	ReasonDraining                = "Draining"                        // False: the drain runs; the message says what is left and what blocks it
	ReasonDrainFailed             = "DrainFailed"                     // False: the workload API server cannot be reached or refused the drain
	ReasonKubeconfigProblem       = "KubeconfigProblem"               // False: the Cluster's kubeconfig Secret is missing or unusable
	ReasonInvalidDrainRule        = "InvalidDrainRule"                // False: a MachineDrainRule of the Machine's namespace cannot be used; the drain waits until it is fixed
)

// EventPodsDeleted (Warning, no condition of its own): a drain step deleted pods instead of
// evicting them, past the pod deadline (drainDeadlineSeconds) or on a Node unreachable for longer
// than the drain module's bound; the message names each pod and the budgets it was deleted over.
// The same reason as machine-manager's event.
const EventPodsDeleted = "PodsDeleted"

const (
	eventNormal  = "Normal"
	eventWarning = "Warning"
	// eventAction is the action of every event this controller emits.
	eventAction = "DrainWorkloadNode"
)
