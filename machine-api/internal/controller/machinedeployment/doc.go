// Package machinedeployment is the MachineDeployment controller: it owns MachineSets, one per
// template revision, and moves Machines from the old ones to the current one by the deployment's
// strategy, with the arithmetic of apps/v1 Deployments.
//
// # What a reconcile does
//
// get → paused annotation (ours or cluster.x-k8s.io/paused, see v1beta1.PausedBy)? leave it →
// finalizer → list the deployment's sets (controller index) → on deletion, delete every set and
// drop the finalizer once they are gone (each set deletes its Machines first; nothing relies on
// garbage collection) → find the current set's Machines to replace (below) → wait for the sets
// (below) → keep the cluster-autoscaler's keys on them → update their in-place fields → record the
// revision → scale or roll out → prune old empty sets. Status is
// computed from the sets' status (status.go, pure functions) and written once, by one server-side
// apply of the whole status (field manager machinedeployment-controller, see package write), and
// not at all when it did not change.
//
// # MachineSets
//
// A set is named <deployment>-<hash>, the hash (10 characters) taken over the template's spec
// without its in-place fields (uptodate.TemplateHash). It has the deployment as controller, the
// deployment-name label, the revision annotation, the deployment's selector plus its own set-name
// label (so sets never share Machines), the MachineSet finalizer already set, and the desired- and
// max-replicas annotations (the deployment's replicas and replicas + maxSurge when the set was last
// scaled, as apps/v1 keeps them). The new set is the one whose hash is the deployment's; the others
// are old. When several sets have the hash (sets named by an earlier hash, which counted deletion
// settings and hooks), the set named for it wins, else the highest revision.
//
// Every set also carries the keys the cluster-autoscaler hard-codes (autoscalerkeys.go): the
// cluster.x-k8s.io/deployment-name label and the machinedeployment.clusters.x-k8s.io/revision
// annotation, equal to our revision. They are set at creation, changed with our revision on a
// rollback, and repaired by every reconcile, paused or not: the autoscaler finds a deployment's
// sets by the label and does not scale down a deployment whose old sets (by the revision) still
// have Machines.
//
// # In-place fields
//
// template.metadata and the template spec's metadata, taints, deletion and lifecycleHooks
// (uptodate.InPlaceFields) are not part of the hash: a change to them creates no set; it is copied
// into every set's template (new and old, while not paused), and each set updates its Machines
// (spec.deletion also on Machines being deleted, hooks only on the others), and the node linker
// their Nodes. The same holds for the sets' deletePolicy (from strategy.rollingUpdate.deletePolicy)
// and minReadySeconds. Any other template change creates a new set and rolls out.
//
// # Replacing Machines of the current set
//
// findStale (stale.go) lists the new set's Machines and asks uptodate.Decider (Decide's policy, without
// the in-place differences, worked out once per reconcile) which ones the
// deployment replaces although their template is current: instances created before
// spec.rollout.after once it has passed, older than spec.rollout.machineMaxAgeSeconds, or made from
// a MachineClass edited since (unless spec.rollout.machineClassChanges is Ignore). A Machine kept
// with no rollout deadline ahead is not asked again until it, the deployment's spec or the class
// changes (uptodate.Checked). RollingUpdate
// counts them as one more old set, the newest (nextRollingStep): the new set grows within maxSurge
// for their replacements, and they go after the old sets' Machines while maxUnavailable allows,
// unavailable ones first, then the oldest instance first. Recreate removes them all and grows the
// set back once they are gone; OnDelete and a paused deployment leave them. To remove one, the
// deployment marks it with the delete-machine annotation and lowers the set's replicas only once
// its cache shows the mark (the set reads the same cache and deletes marked Machines first), so
// the set deletes that Machine and no other. A marked Machine the set has not deleted yet while it
// has more Machines than replicas (a disruption budget holds it) counts as going, in neither the
// set's replicas nor the stale ones (orderedRemovals), so the set is not grown back to replace it
// twice. The deployment watches the marks of its Machines and
// the MachineClass its template names, and asks to come back when the next Machine becomes due.
//
// # In-place updates
//
// With spec.rollout.inPlace Prefer or Only (not OnDelete), a template change for which no set
// exists goes through DecideInPlace (inplace.go) before the strategy: when the one set holding
// Machines has, for each of them, a provider's plan for the template naming no unsupported field
// (status.inPlaceUpdate, recorded by the machine controller), the deployment gives that set the
// template and the next revision instead of creating a set, and the set updates its Machines in
// place. Prefer replaces otherwise; Only stalls with Progressing=False/InPlaceUpdateUnsupported.
// Machines of the current set with such a plan are not replaced for their template
// (uptodate.Decider).
//
// # Strategies
//
//   - RollingUpdate: maxSurge (percent of replicas rounded up) and maxUnavailable (rounded down; 1
//     if both come out 0). The new set grows while all sets together stay within replicas +
//     maxSurge; old sets shrink, their unavailable Machines first, then oldest set first, while at
//     least replicas - maxUnavailable Machines stay available. Only available Machines count.
//   - Recreate: old sets go to 0; once their Machines are gone (status.replicas 0 and ScalingDown
//     False), the new set is created or scaled to replicas.
//   - OnDelete: the new set is created with what the old sets do not hold. An old set never
//     replaces a Machine (the MachineSet controller holds its creates when its deployment rolls
//     out OnDelete and the set's revision is not the deployment's): when a user deletes an old
//     Machine, the old set's replicas drop to the Machines it still has and the new set grows by as
//     many. Scaling down takes from the old sets first, oldest first.
//
// spec.paused stops rollouts — no new set, no metadata propagation — but not scaling.
//
// # Scaling without applying a scale twice
//
// A change of replicas while several sets have replicas (a RollingUpdate in progress, or a paused
// one) is spread over them in proportion to their size (apps/v1's proportional scaling: each
// set's share is its replicas × (replicas + maxSurge) / its max-replicas annotation, leftovers to
// the largest set). The replicas and the annotations are written together, so computing the scale
// again finds nothing to do. A decrease first takes the Machines marked
// machine.machineapi.dev/delete-machine from whichever sets hold them, and spreads only the rest
// (OnDelete: takes the rest from the oldest old sets); marks decide which sets shrink, never by
// how many Machines in all (scaleTargets and onDeleteTargets). The marks are read from the API
// server (marks.go), not the cache: the cluster-autoscaler marks just before it lowers the
// replicas. Before computing any step the deployment waits until (1) its cache
// shows every set write it made (the consistency guard, package machineapi.dev/nodelink/consistency,
// runs a reconcile only then: each write is awaited until the cached set's resourceVersion is at
// least the one written), and (2) every set's status.observedGeneration is its generation
// (a set advances it only once it has acted on its spec), so no step is computed from stale counts:
// Gardener MCM #754 and #816 scaled twice that way. A set with the paused annotation therefore
// holds its deployment's rollout until the annotation is removed.
//
// # Revisions and rollback
//
// The new set's revision is the highest + 1; the deployment's revision annotation names it. To roll
// back, restore an old revision's template spec from its MachineSet:
//
//	kubectl patch md/<name> --type json -p '[{"op":"replace","path":"/spec/template/spec","value":'"$(kubectl get ms/<old-set> -o jsonpath='{.spec.template.spec}')"'}]'
//
// Its hash is the old set's again, so that set becomes the new set (revision bumped to the
// highest), and the strategy rolls back to it. A JSON patch is used because a merge patch would
// keep fields the old spec does not have. spec.revisionHistoryLimit (default 1) old sets with no
// replicas and no Machines are kept; the oldest beyond it are deleted.
//
// # Conditions and status
//
// replicas, readyReplicas, availableReplicas and upToDateReplicas sum the sets' status;
// updatedReplicas is the new set's; unavailableReplicas is replicas wanted minus available. Available: at least replicas -
// maxUnavailable available (all of them for Recreate and OnDelete). Progressing, as apps/v1:
// True/NewMachineSetCreated or MachineSetUpdated while progressing, True/NewMachineSetAvailable when
// done, Unknown/DeploymentPaused, False/ProgressDeadlineExceeded after progressDeadlineSeconds
// without progress (a new or scaled set, a spec change, or a change in the counts); its
// lastTransitionTime is the time of the last progress. AutoscalerBounds as on MachineSets (see
// package autoscaler): replicas outside the autoscaler annotations is reported, not
// changed.
//
// # Requeues
//
// Events drive the work (the deployment and its sets, whose status changes as their Machines do).
// Timed requeues: at the progress deadline, when the next Machine of the current set becomes due
// for replacement (spec.rollout), nameTakenRetry while the new set's name is taken,
// write.ConflictRetry after a guarded write (finalizer, revision, a set's replicas or metadata) met
// a conflict, and consistency.Recheck while the cache does not show the deployment's earlier
// writes (for at most 5 minutes, the fallback for a lost event).
//
// Start reading at Reconcile in controller.go; sets.go, stale.go and strategy.go hold the steps,
// rollout.go and rollout_stale.go the arithmetic, status.go the status; plan.go what kubectl
// machine rollout plan takes from the controller.
package machinedeployment
