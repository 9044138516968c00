// Package statemetrics exports gauges computed from a manager's cache at the moment Prometheus
// scrapes, the way kube-state-metrics does: how many Machines are in each phase, which drains are
// blocked and since when, what a set's status says. Nothing is counted up and down in memory, so
// a gauge cannot drift from what `kubectl get` shows, and a restarted manager exports the same
// values as soon as its cache has synced. It is part of the controllers' kit, exported for
// cluster-api's controllers too.
//
// Only the elected replica exports them (a manager without leader election is always elected):
// every replica runs a cache, and were each to export the same state, a sum over the replicas
// would count every Machine twice. Counters and histograms of decisions (a provider call, a
// remediation, a link) are made where the decision is taken, and only the leader takes them.
//
// # Labels
//
// A gauge names the objects that hold the state it counts: a namespace, a MachineSet, a
// MachineDeployment, a MachineHealthCheck, a Cluster, never a Machine, a Node or a pod: the
// number of series follows the number of sets and checks, not of Machines. Catalog lists what a
// registry holds, with the label names, for the tests that hold every metric to that rule and to
// docs/operations.md.
//
// Start reading at New.
package statemetrics
