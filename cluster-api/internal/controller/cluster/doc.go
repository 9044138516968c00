// Package cluster is the Cluster controller: it gets a Cluster's infrastructure from the cluster
// provider, renders its worker pools as MachineDeployments, links its Machines to the Nodes of its
// workload cluster when it has a kubeconfig, reports its machines, and on deletion removes
// everything in order.
//
// # Live path
//
// finalizer → independent steps, every one run whatever the others returned (steps.All of
// machineapi.dev/machine-api/reconcile/steps: the soonest requeue wins, transient errors win over a
// terminal one): infrastructure (provider Reconcile: ready, waiting with RequeueAfter,
// InvalidConfiguration → phase Failed and a TerminalError, or a transient error) →
// worker pools (once the infrastructure is or was ready: one MachineDeployment <cluster>-<pool>
// each, created, updated, deleted when the pool leaves the spec) → remote Nodes (one nodelink
// linker per Cluster with spec.kubeconfigSecretRef, see package remotelink) → the members are
// listed for the counts.
//
// # Membership
//
// A MachineDeployment, MachineSet or Machine belongs to a Cluster through the cluster-name label
// in the Cluster's namespace (field index index.MemberByClusterName, package internal/index). The
// pools' MachineDeployments are also controlled by the Cluster (owner reference): only those are
// updated or deleted by pool changes; one with a pool's name that the Cluster does not control is reported
// (WorkerPoolsReady=False, MachineDeploymentConflict), never taken over.
//
// # Who owns a pool's replicas
//
// Without spec.workerPools[].autoscaling the Cluster does: the MachineDeployment is kept at the
// pool's replicas, and a `kubectl scale` of it is undone on the next reconcile. With autoscaling
// the cluster-autoscaler does: the bounds become the MachineDeployment's node-group min-size and
// max-size annotations, the pool's replicas (moved into the bounds) are written once, at creation,
// and never again, so the controller and the autoscaler never fight. The controller owns, on a
// pool's MachineDeployment, its cluster-name and worker-pool labels, those two annotations, the
// template, the strategy and (as above) the replicas; other fields are left to their writers.
//
// # Delete path
//
// An ordered pipeline (steps.Pipeline) that stops at the first step still waiting, requeued at
// the soonest time any step that ran asked for; the Deleting condition's reason names that step:
// DeletingMachines (delete every member MachineDeployment, MachineSet and Machine — never another
// Cluster's — and wait until all are gone; each Machine is drained and its instance deleted by the
// machine controller) → the remote linker is stopped →
// DeletingInfrastructure (provider Delete until it reports the infrastructure gone) →
// RemovingFinalizer. Nothing relies on garbage collection.
//
// # Status
//
// Computed from what a reconcile observed (status.go, pure functions; conditions set with
// conditions.Set at the reconcile's time) and written once per reconcile by one server-side apply
// of the whole status under the field manager FieldOwner (write.Status of
// machineapi.dev/machine-api/reconcile/write, through the apply configurations in
// cluster-api/applyconfiguration), and not at all when unchanged: phase,
// desiredMachines/machines/readyMachines (see countMachines), observedGeneration, and the
// conditions InfrastructureReady, WorkerPoolsReady, MachinesReady, WorkloadAPIReachable (only with
// a kubeconfigSecretRef) and Deleting (only while deleting). An unreachable workload API server
// only turns WorkloadAPIReachable False: nothing here deletes or remediates because of it.
//
// Clusters with spec.paused are left alone: no provider call, no pool change, no status write (a
// node linker already running keeps linking). Time comes from an injected clock.
//
// # Requeues
//
// Events drive most work (the Cluster, its members, the linkers' reachability changes). Timed
// requeues: memberPoll while deletion waits for machines, the provider's RequeueAfter,
// KubeconfigPollInterval while a Cluster has a kubeconfig (the Secret is read, never watched),
// linkerStartRetry before the linker registry has started, and consistency.Recheck while the cache
// does not show what the Cluster's earlier reconciles wrote (the consistency guard, package
// machineapi.dev/nodelink/consistency, wired by the manager: a reconcile never works from a copy
// its own writes superseded). A conflict (a finalizer or pool MachineDeployment patch guarded by a
// resourceVersion another writer changed, a status applied to a Cluster re-created under the same
// name) is requeued after write.ConflictRetry, without an error.
//
// Start reading at Reconcile in controller.go; infrastructure.go, pools.go (render.go: pure),
// remote.go and delete.go hold the steps, status.go the status.
package cluster
