// Package drain drains Kubernetes nodes safely from a controller, one short step per reconcile.
//
// It owns cordoning, evicting and uncordoning a node, and explaining what holds a drain back. It
// knows nothing about machines: it needs a client-go clientset and a node name.
//
// A controller calls [Drainer.Drain] on every reconcile until [Result.Done], requeueing in between
// (by [Result.NextDeletion] at the latest); [Result.Summary] is a condition message and
// [Result.DeletionSummary] an event. [Drainer.Plan] previews a step without changing anything,
// [Drainer.Uncordon] undoes the cordon, and [Drainer.Volumes] says which volumes a drained node
// still has to detach.
//
// # The drain policy
//
// What a drain does is decided by pure functions, so that every controller that drains means the
// same by it. [DecideNode] decides about the drain as a whole, from what the caller knows (what
// holds the drain, a reason to skip it, when it began, its timeout and pod deadline): wait, skip,
// give up, or run a step ([NodeDecision.Step]), the deadline and the pod deadline. Both count
// from the start of draining, which the caller records from the first decision that starts it
// ([NodeDecision.Started]) and passes back on every call. [Drainer.DecidePods] decides, within a
// step, what happens to each pod of the node: skip it, evict it, delete it or wait for it, in
// which order group and by which rule ([PodVerdict]); Drain and Plan both consult it.
// [Drainer.DecideVolumes] decides which attached volumes the volume wait after a drain waits for.
//
// # Rules, order groups and deadlines
//
// A caller passes [PodRule]s in [Step.Rules] (machine-api translates a Machine's
// MachineDrainRules): each selects pods by their labels and their namespace's labels and gives
// them a behaviour (Drain, Skip, WaitCompleted) and, for Drain, an order group. The pod label
// machine.machineapi.dev/drain (Options.SkipLabelKey) overrides every rule: skip, wait-completed
// or order-<n>. Of several rules that select a pod the most protective wins (Skip, then
// WaitCompleted, then the Drain rule with the highest order, then the first name). Pods are
// drained one order group at a time, lowest first; a WaitCompleted pod is never evicted, the
// drain waits until it has completed.
//
// Two bounds end a drain that budgets would hold forever by deleting pods instead of evicting
// them, always naming the pods and the budgets they are deleted over ([Result.Deleted]): from
// [Step.PodDeadline] minus each pod's grace period on, a pod still holding the drain is deleted
// with that grace period, so that it is gone by the deadline; and on a node unreachable for
// longer than Options.UnreachableDeleteAfter (default [DefaultUnreachableDeleteAfter]) every pod
// that has to leave is deleted, since none can be serving.
//
// # Invariants
//
//   - A step never blocks for long: it returns within Options.StepTimeout (5s by default), sends at
//     most one eviction request per pod, at most Options.MaxConcurrentEvictions at a time, and
//     never waits for a pod to go. Pods evicted in a step stay in Result.Remaining until a later
//     step finds them gone.
//   - PodDisruptionBudgets are honoured: pods are removed through the Eviction API, and deleted
//     directly only past the pod deadline or the unreachable bound, as above. A step predicts the
//     API's decision from the budgets' status (so it does not send requests that would be
//     refused) and names the budget that blocks each pod; a 429 from the API is reported the same
//     way.
//   - Which pods a drain leaves on the node is kubectl's decision (k8s.io/kubectl/pkg/drain,
//     Helper.GetPodsForDeletion): DaemonSet pods, mirror pods, and pods using emptyDir data unless
//     Options.DeleteEmptyDirData; finished pods are removed. Pods labelled
//     machine.machineapi.dev/drain=skip (key and value configurable) are left alone too. Pods
//     without a controller are evicted.
//   - A step is idempotent and keeps no state: it cordons only a schedulable node and does not evict
//     an already terminating pod again. Everything about the drain it belongs to is in its Step. Plan and Drain share one decision function
//     (Drainer.DecidePods), so a Plan lists exactly what the next step does.
//   - Unreachable node (Ready condition Unknown, or Options.AssumeUnreachable): evictions ask for a
//     1s grace period, and pods terminating for more than Options.UnreachableTerminatingTimeout past
//     their deletion time are no longer waited for, since no kubelet will finish them.
//   - Time comes from Options.Clock; the package never reads the wall clock itself.
//
// The caller needs RBAC to get and patch nodes, list and delete pods, create pods/eviction, list
// poddisruptionbudgets, get daemonsets and (for rules selecting by namespace labels) namespaces;
// for the volume wait, to get persistentvolumeclaims and persistentvolumes and list
// storage.k8s.io volumeattachments.
//
// Start reading at drainer.go (Drain, Plan, Uncordon); policy.go is the drain policy (DecideNode,
// DecidePods), rules.go how rules and the label decide a pod's behaviour, plan.go reads what a
// step observes, pdb.go predicts the Eviction API, filters.go reads kubectl's filters, evict.go
// sends the evictions and deletions, volumes.go is the volume wait, and result.go holds the
// types a caller sees.
package drain
