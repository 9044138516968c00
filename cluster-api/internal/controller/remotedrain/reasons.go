package remotedrain

// WorkloadNodeDrained condition reasons, also the reasons of the events that accompany them.
const (
	// True: the hook was removed because...
	ReasonDrained           = "Drained"           // the Node was drained
	ReasonDrainExcluded     = "DrainExcluded"     // the Machine has the exclude-node-draining annotation
	ReasonNoNode            = "NoNode"            // the Machine has no status.nodeRef
	ReasonNodeNotFound      = "NodeNotFound"      // the Node does not exist in the workload cluster
	ReasonClusterDeleting   = "ClusterDeleting"   // the Cluster is being deleted
	ReasonClusterNotFound   = "ClusterNotFound"   // the Cluster is gone
	ReasonDrainTimeout      = "DrainTimeout"      // spec.deletion.nodeDrainTimeoutSeconds passed
	ReasonDraining          = "Draining"          // False: the drain runs; the message says what is left and what blocks it
	ReasonDrainFailed       = "DrainFailed"       // False: the workload API server cannot be reached or refused the drain
	ReasonKubeconfigProblem = "KubeconfigProblem" // False: the Cluster's kubeconfig Secret is missing or unusable
)

const (
	eventNormal  = "Normal"
	eventWarning = "Warning"
	// eventAction is the action of every event this controller emits.
	eventAction = "DrainWorkloadNode"
)
