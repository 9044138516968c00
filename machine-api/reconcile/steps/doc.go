// Package steps runs the steps of a reconcile, so that every controller of machine-api and
// cluster-api reads the same way: Reconcile lists named steps; each step does one thing, writes
// what it learned into the reconcile's scope, and says whether the steps after it may run. It is
// exported so that cluster-api's controllers use these runners rather than copies of them.
//
// There are two runners, one per way the steps of a reconcile relate:
//
//   - Pipeline, for ordered stages (Step returns result, done, err): the steps run in order, and
//     the first one that is not done (it waits for something) or fails stops the rest. A deletion
//     is a pipeline: nothing is drained while a pre-drain hook remains. Its result is the soonest
//     requeue of the steps it ran (a step that is done may still ask to be called again, when a
//     timeout it watches expires), and the error of the step that failed.
//   - All, for independent parts (Part returns result, err): every part runs, whatever the others
//     returned, so one failing part never holds back the others (a Cluster's infrastructure, its
//     worker pools and its remote Node linking). Its result is the soonest requeue, or, when parts
//     failed, their errors joined, transient failures before terminal ones (so a transient failure
//     is retried even when another part failed for good). Done turns a Part into a Step, for a
//     pipeline that includes it.
//
// Soonest combines results wherever several count: the soonest RequeueAfter wins, and zero means
// no timed requeue. Both runners combine with it, and a controller combines a runner's result with
// requeues of its own (a MachineSet's next Machine becoming available, a MachineDeployment's
// progress deadline) with Soonest too.
//
// Result.Requeue is never used: a step that must run again soon says when, with RequeueAfter.
package steps
