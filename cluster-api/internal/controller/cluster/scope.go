package cluster

import (
	"time"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/remotelink"
)

// scope is what one reconcile learned. Steps fill it in; computeStatus turns it into status.
type scope struct {
	cluster *v1beta1.Cluster // as read; steps never change its status directly
	now     time.Time

	infra    infraState
	pools    *poolsState   // nil until the worker pools step ran
	members  *members      // nil until the members were listed
	remote   *remoteState  // nil when the Cluster has no kubeconfig (or the step did not run)
	deletion *deletionStep // nil unless the Cluster is being deleted

	finalizerRemoved bool // the Cluster is about to disappear: write no status
}

// infraState is what the cluster provider said.
type infraState struct {
	called  bool   // the provider was called
	ready   bool   // Reconcile returned nil
	waiting string // a RequeueAfter reason
	invalid string // an InvalidConfiguration message
	err     error  // a transient failure
}

// poolsState is what the worker pools step did.
type poolsState struct {
	waitingForInfra bool     // pools are created once the infrastructure is ready
	conflicts       []string // why pools could not get their MachineDeployment
	rendered        int      // pools whose MachineDeployment matches the spec
}

// members are the objects that carry the Cluster's cluster-name label in its namespace.
type members struct {
	deployments []machinev1.MachineDeployment
	sets        []machinev1.MachineSet
	machines    []machinev1.Machine
}

// remoteState is what the remote Nodes step found.
type remoteState struct {
	reason  string // a WorkloadAPIReachable reason, set when there is no linker status to report
	message string
	linker  *remotelink.Status // the running (or exited) linker, when there is one
	host    string             // the workload API server, for messages
}

// deletionStep is where the deletion pipeline stopped.
type deletionStep struct {
	reason  string // a Deleting condition reason
	message string
}

// provisioned reports whether the infrastructure is ready now or was before: worker pools are
// reconciled from then on, whatever the provider says later.
func (s *scope) provisioned() bool {
	return s.infra.ready || s.cluster.Status.Phase == v1beta1.ClusterPhaseProvisioned
}
