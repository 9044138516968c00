package cluster

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"machineapi.dev/nodelink"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/reconcile/conditions"
	"machineapi.dev/machine-api/reconcile/write"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	clusterac "machineapi.dev/cluster-api/applyconfiguration/api/v1beta1"
)

// computeStatus returns the Cluster's status from what the reconcile observed in s. It makes no
// API calls. Counts and conditions a reconcile did not observe keep their previous values.
func computeStatus(s *scope) v1beta1.ClusterStatus {
	c := s.cluster
	st := *c.Status.DeepCopy()
	gen := c.Generation
	if s.members != nil {
		st.DesiredMachines, st.Machines, st.ReadyMachines = countMachines(s.members)
	}
	st.Phase = phase(s)
	setInfrastructureReady(&st, s, gen)
	setWorkerPoolsReady(&st, s, gen)
	if s.members != nil {
		setMachinesReady(&st, s.now, gen)
	}
	setWorkloadAPIReachable(&st, s, gen)
	setDeleting(&st, s, gen)
	st.ObservedGeneration = gen
	return st
}

// countMachines returns the desired, existing and Ready machine counts of a Cluster's members.
// Desired is what the owners want: every MachineDeployment's replicas, every MachineSet's that no
// MachineDeployment controls, and one for every Machine that no MachineSet controls and that is
// not being deleted. Machines counts every member Machine, deleting or not; ready those not
// deleting whose Ready condition is True.
func countMachines(m *members) (desired, machines, ready int32) {
	for i := range m.deployments {
		if d := &m.deployments[i]; d.DeletionTimestamp.IsZero() {
			desired += replicasOf(d.Spec.Replicas)
		}
	}
	for i := range m.sets {
		if set := &m.sets[i]; set.DeletionTimestamp.IsZero() && !controlledBy(set, "MachineDeployment") {
			desired += replicasOf(set.Spec.Replicas)
		}
	}
	for i := range m.machines {
		ma := &m.machines[i]
		machines++
		if !ma.DeletionTimestamp.IsZero() {
			continue
		}
		if !controlledBy(ma, "MachineSet") {
			desired++
		}
		if meta.IsStatusConditionTrue(ma.Status.Conditions, machinev1.ReadyCondition) {
			ready++
		}
	}
	return desired, machines, ready
}

func replicasOf(r *int32) int32 {
	if r == nil {
		return 1 // the API default
	}
	return *r
}

func controlledBy(o metav1.Object, kind string) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.Kind == kind && ref.APIVersion == machinev1.GroupVersion.String()
}

// phase: Deleting while deleting; Failed on a configuration the provider can never use;
// Provisioned once the infrastructure is ready (and from then on, through transient provider
// errors); Provisioning while the provider works on it; Pending before it was ever called.
func phase(s *scope) v1beta1.ClusterPhase {
	switch {
	case !s.cluster.DeletionTimestamp.IsZero():
		return v1beta1.ClusterPhaseDeleting
	case s.infra.invalid != "":
		return v1beta1.ClusterPhaseFailed
	case s.provisioned():
		return v1beta1.ClusterPhaseProvisioned
	case s.infra.called:
		return v1beta1.ClusterPhaseProvisioning
	case s.cluster.Status.Phase != "":
		return s.cluster.Status.Phase
	default:
		return v1beta1.ClusterPhasePending
	}
}

func setInfrastructureReady(st *v1beta1.ClusterStatus, s *scope, gen int64) {
	c := metav1.Condition{Type: v1beta1.InfrastructureReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: gen}
	in := s.infra
	switch {
	case !in.called:
		return // not asked this time (deletion still waits for the machines): keep what it said
	case in.invalid != "":
		c.Reason, c.Message = ReasonInvalidConfiguration, in.invalid+" (fix spec.providerSpec; nothing is retried until the Cluster changes)"
	case in.err != nil:
		c.Reason, c.Message = ReasonProviderError, fmt.Sprintf("the cluster provider failed, retrying with backoff: %v", in.err)
	case !s.cluster.DeletionTimestamp.IsZero() && in.ready:
		c.Reason, c.Message = ReasonDeletingInfrastructure, "the infrastructure is deleted"
	case !s.cluster.DeletionTimestamp.IsZero():
		c.Reason, c.Message = ReasonDeletingInfrastructure, in.waiting
	case in.ready:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonInfrastructureProvisioned, "the cluster provider reports the infrastructure ready"
	default:
		c.Reason, c.Message = ReasonProvisioning, in.waiting
	}
	conditions.Set(&st.Conditions, c, s.now)
}

func setWorkerPoolsReady(st *v1beta1.ClusterStatus, s *scope, gen int64) {
	p := s.pools
	if p == nil {
		return
	}
	c := metav1.Condition{Type: v1beta1.WorkerPoolsReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: gen}
	switch {
	case p.waitingForInfra:
		c.Reason, c.Message = ReasonWaitingForInfrastructure, "the worker pools' MachineDeployments are created once the infrastructure is ready"
	case len(p.conflicts) > 0:
		c.Reason, c.Message = ReasonMachineDeploymentConflict, strings.Join(p.conflicts, "; ")
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonPoolsReconciled
		c.Message = fmt.Sprintf("%d worker pool(s) have their MachineDeployment", p.rendered)
	}
	conditions.Set(&st.Conditions, c, s.now)
}

func setMachinesReady(st *v1beta1.ClusterStatus, now time.Time, gen int64) {
	c := metav1.Condition{Type: v1beta1.MachinesReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: gen,
		Reason: ReasonWaitingForMachine}
	c.Message = fmt.Sprintf("%d of %d desired machines are Ready (%d exist)", st.ReadyMachines, st.DesiredMachines, st.Machines)
	if st.ReadyMachines >= st.DesiredMachines {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonMachinesReady
	}
	conditions.Set(&st.Conditions, c, now)
}

// setWorkloadAPIReachable reports the remote linker's view. The condition exists only while the
// Cluster has a kubeconfigSecretRef.
func setWorkloadAPIReachable(st *v1beta1.ClusterStatus, s *scope, gen int64) {
	if s.cluster.Spec.KubeconfigSecretRef == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1beta1.WorkloadAPIReachableCondition)
		return
	}
	r := s.remote
	if r == nil {
		return
	}
	c := metav1.Condition{Type: v1beta1.WorkloadAPIReachableCondition, Status: metav1.ConditionFalse, ObservedGeneration: gen}
	var reach nodelink.Reachability
	if r.linker != nil {
		reach = r.linker.Reachability
	}
	switch {
	case r.reason != "":
		c.Reason, c.Message = r.reason, r.message
	case r.linker == nil:
		return
	case !reach.LastProbe.IsZero() && !reach.Reachable:
		// Also when the linker stopped: an unreachable server is what keeps its cache from syncing.
		c.Reason = ReasonUnreachable
		c.Message = fmt.Sprintf("the workload API server %s has not answered since %s: %v; Machines keep their last Node links and nothing is remediated or deleted because of it",
			r.host, reach.Since.UTC().Format("2006-01-02T15:04:05Z"), reach.Err)
	case !r.linker.Running:
		c.Reason = ReasonLinkerFailed
		c.Message = fmt.Sprintf("the node linker for %s stopped: %v; it is restarted shortly, and nothing is unlinked or deleted meanwhile", r.host, r.linker.Err)
	case reach.LastProbe.IsZero():
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonProbing, fmt.Sprintf("waiting for the first answer of the workload API server %s", r.host)
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonReachable, fmt.Sprintf("the workload API server %s answers; its Nodes are linked to the cluster's Machines", r.host)
	}
	conditions.Set(&st.Conditions, c, s.now)
}

func setDeleting(st *v1beta1.ClusterStatus, s *scope, gen int64) {
	if s.deletion == nil && !s.cluster.DeletionTimestamp.IsZero() {
		return // deleting, but no step ran this time: keep what the last one said
	}
	if s.deletion == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1beta1.DeletingCondition)
		return
	}
	conditions.Set(&st.Conditions, metav1.Condition{Type: v1beta1.DeletingCondition, Status: metav1.ConditionTrue,
		ObservedGeneration: gen, Reason: s.deletion.reason, Message: s.deletion.message}, s.now)
}

// statusApply returns the server-side apply configuration of st, the whole status of c (the
// Cluster controller owns all of it). The UID makes the write fail rather than land on a Cluster
// re-created under the same name.
func statusApply(c *v1beta1.Cluster, st v1beta1.ClusterStatus) (*clusterac.ClusterApplyConfiguration, error) {
	ac, err := write.WholeStatus[clusterac.ClusterStatusApplyConfiguration](st)
	if err != nil {
		return nil, err
	}
	return clusterac.Cluster(c.Name, c.Namespace).WithUID(c.UID).WithStatus(ac), nil
}
