/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package nodelink

// ConditionNodeLinked is the one condition nodelink writes on a machine. True means status.nodeRef
// names an existing Node that carries the machine's metadata; False carries one of the reasons
// below, each with a message that names the objects involved.
const ConditionNodeLinked = "NodeLinked"

// Reasons of the NodeLinked condition.
const (
	// ReasonLinked (True): the machine is linked to the Node in status.nodeRef.
	ReasonLinked = "Linked"

	// ReasonWaitingForNode (False): no Node matches yet — none has the machine's providerID or,
	// while the machine has no providerID, one of its InternalIPs. Nothing to do but wait for the
	// Node to register; no event is emitted for this expected state.
	ReasonWaitingForNode = "WaitingForNode"

	// ReasonMultipleNodesMatch (False): more than one Node matches the machine. Nothing is linked
	// until only one remains (delete the stale Node, or fix its providerID).
	ReasonMultipleNodesMatch = "MultipleNodesMatch"

	// ReasonMultipleMachinesMatch (False): the one Node that matches this machine also matches
	// another unlinked machine (two machines with the same providerID, or the same InternalIP and
	// no providerID). Nothing is linked until only one machine matches.
	ReasonMultipleMachinesMatch = "MultipleMachinesMatch"

	// ReasonNodeLinkedToOtherMachine (False): the Node with this machine's providerID is already
	// linked to another machine that still exists.
	ReasonNodeLinkedToOtherMachine = "NodeLinkedToOtherMachine"

	// ReasonIPMatchRefused (False): the only Node with the machine's InternalIP was created before
	// the machine or is linked to another existing machine: the IP was probably recycled, and the
	// old Node must not be adopted. Set spec.providerID, or delete the stale Node.
	ReasonIPMatchRefused = "IPMatchRefused"

	// ReasonNodeDeleted (False): the Node in status.nodeRef no longer exists. status.nodeRef is
	// kept, so health checks can see "nodeRef set but Node gone"; a Node that re-registers with the
	// machine's providerID is linked again.
	ReasonNodeDeleted = "NodeDeleted"
)
