// Package drain drains Kubernetes nodes safely from a controller, one short step per reconcile.
//
// It owns cordoning, evicting and uncordoning a node, and explaining what holds a drain back. It
// knows nothing about machines: it needs a client-go clientset and a node name.
//
// A controller calls [Drainer.Drain] on every reconcile until [Result.Done], requeueing in between;
// [Result.Summary] is a condition message. [Drainer.Plan] previews a step without changing
// anything, and [Drainer.Uncordon] undoes the cordon.
//
// # Invariants
//
//   - A step never blocks for long: it returns within Options.StepTimeout (5s by default), sends at
//     most one eviction request per pod, at most Options.MaxConcurrentEvictions at a time, and
//     never waits for a pod to go. Pods evicted in a step stay in Result.Remaining until a later
//     step finds them gone.
//   - PodDisruptionBudgets are always honoured: pods are only removed through the Eviction API,
//     never deleted. A step predicts the API's decision from the budgets' status (so it does not
//     send requests that would be refused) and names the budget that blocks each pod; a 429 from
//     the API is reported the same way.
//   - Which pods a drain leaves on the node is kubectl's decision (k8s.io/kubectl/pkg/drain,
//     Helper.GetPodsForDeletion): DaemonSet pods, mirror pods, and pods using emptyDir data unless
//     Options.DeleteEmptyDirData; finished pods are removed. Pods labelled
//     machine.machineapi.dev/drain=skip (key and value configurable) are left alone too. Pods
//     without a controller are evicted.
//   - A step is idempotent and keeps no state: it cordons only a schedulable node and does not evict
//     an already terminating pod again. Plan and Drain share one decision function, so a Plan lists
//     exactly what the next step does.
//   - Unreachable node (Ready condition Unknown, or Options.AssumeUnreachable): evictions ask for a
//     1s grace period, and pods terminating for more than Options.UnreachableTerminatingTimeout past
//     their deletion time are no longer waited for, since no kubelet will finish them.
//   - Time comes from Options.Clock; the package never reads the wall clock itself.
//
// The caller needs RBAC to get and patch nodes, list pods, create pods/eviction, list
// poddisruptionbudgets and get daemonsets.
//
// Start reading at drainer.go (Drain, Plan, Uncordon); plan.go decides what happens to each pod,
// pdb.go predicts the Eviction API, filters.go reads kubectl's filters, evict.go sends the
// evictions, and result.go holds the types a caller sees.
package drain
