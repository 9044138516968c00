// Package machinedrain reads a Machine's drain settings for the drain policy of machineapi.dev/drain,
// so that every controller that drains a Machine's Node asks the policy the same question:
// machine-manager for Nodes in its own cluster, cluster-manager for Nodes in a workload cluster.
//
// [Request] turns a Machine into a drain.NodeRequest: its preDrain lifecycle hooks other than the
// caller's own hold the drain, the exclude-node-draining annotation or a missing status.nodeRef
// skip it ([Skip]), spec.deletion.nodeDrainTimeoutSeconds bounds it and
// spec.deletion.drainDeadlineSeconds is its pod deadline, both counted from when the caller began
// draining. Where that start is recorded is the caller's: machine-manager keeps it in
// status.deletion.nodeDrainStartTime ([LocalRequest] is its request). A caller adds its own
// reasons to skip (a Node it cannot reach, one that no longer exists) when Request found none,
// then calls drain.DecideNode.
//
// [Rules] turns the MachineDrainRules of the Machine's namespace that select it into the
// drain.PodRules of its drain steps (NodeDecision.Step); [ReadRules] lists them first. The rules
// live in the Machine's namespace in the management cluster, whichever cluster the Node is in.
// [SkipVolumeWait] reads the annotation that skips the volume wait after the drain.
//
// The package keeps no state, and makes no API calls but ReadRules' list.
package machinedrain
