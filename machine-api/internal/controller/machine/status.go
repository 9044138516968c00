package machine

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/uptodate"
	"machineapi.dev/machine-api/machinelink"
	"machineapi.dev/machine-api/reconcile/conditions"
)

// computeStatus returns the Machine's new status from what the reconcile in s observed. It makes no
// API calls. Fields the machine controller does not own are carried over from the Machine as read.
func computeStatus(s *scope) v1beta1.MachineStatus {
	m := s.machine
	st := *m.Status.DeepCopy()
	now := metav1.NewTime(s.now)
	if s.link != nil {
		machinelink.Record(&st, s.link)
	}

	if o := s.observed; o != nil {
		st.Addresses = o.Status.Addresses
		st.ProviderStatus = o.Status.ProviderStatus
	}
	providerID := m.Spec.ProviderID
	if s.observed != nil && s.observed.Spec.ProviderID != "" {
		providerID = s.observed.Spec.ProviderID
	}
	if providerID != "" && st.ProvisionedTime == nil {
		st.ProvisionedTime = &now
	}
	if providerID != "" && st.MachineClass == nil && s.class != nil {
		// The class the instance was created from (this reconcile's, or, for an instance made
		// before the record existed, the class as it is when first seen).
		st.MachineClass = uptodate.RecordClass(s.class)
	}
	if ip := s.inPlace; ip != nil {
		st.InPlaceUpdate = ip.record
		if ip.updating != nil {
			conditions.Set(&st.Conditions, *ip.updating, s.now)
		}
		if ip.running {
			c := inPlaceUpToDate(ip.record)
			s.upToDate = &c
		}
		if !ip.running && ip.updating != nil && providerID != "" && s.class != nil {
			// The instance now runs from the class the Machine names.
			st.MachineClass = uptodate.RecordClass(s.class)
		}
	}
	if s.upToDate != nil {
		c := *s.upToDate
		c.ObservedGeneration = m.Generation // recording spec.providerID may have moved it since
		conditions.Set(&st.Conditions, c, s.now)
	}
	if s.node != nil && s.node.Status.NodeInfo.KubeletVersion != "" {
		st.Versions = &v1beta1.MachineStatusVersions{Kubelet: s.node.Status.NodeInfo.KubeletVersion}
	}

	switch {
	case s.failure != nil:
		st.FailureReason = ptr.To(s.failure.reason)
		st.FailureMessage = ptr.To(s.failure.message)
	case st.Phase == v1beta1.MachinePhaseFailed && s.startProvisioning:
		// A Failed machine whose spec changed gets another try.
		st.FailureReason, st.FailureMessage = nil, nil
	}
	failed := st.FailureReason != nil

	st.Phase = phase(m, st, providerID, s, failed)
	setInstanceProvisioned(&st, s, providerID, failed, m.Generation)
	setReady(&st, s, failed, m.Generation)
	setDeletion(&st, s, m.Generation)
	setInterruption(&st, s, m.Generation)

	if st.Phase != m.Status.Phase {
		st.LastUpdated = &now
	}
	st.ObservedGeneration = m.Generation
	return st
}

func phase(m *v1beta1.Machine, st v1beta1.MachineStatus, providerID string, s *scope, failed bool) v1beta1.MachinePhase {
	switch {
	case !m.DeletionTimestamp.IsZero():
		return v1beta1.MachinePhaseDeleting
	case failed:
		return v1beta1.MachinePhaseFailed
	case providerID == "" && (s.startProvisioning || st.Phase == v1beta1.MachinePhaseProvisioning):
		return v1beta1.MachinePhaseProvisioning
	case providerID == "":
		return v1beta1.MachinePhasePending
	case st.Phase == v1beta1.MachinePhaseRunning && st.NodeRef != nil:
		return v1beta1.MachinePhaseRunning // stays Running while linked; Ready tells current health
	case st.NodeRef != nil && s.node != nil && nodeReady(s.node) == corev1.ConditionTrue:
		return v1beta1.MachinePhaseRunning
	case st.NodeRef != nil && s.nodeElsewhere:
		return v1beta1.MachinePhaseRunning // linked by the linker that sees its cluster
	default:
		return v1beta1.MachinePhaseProvisioned
	}
}

func setInstanceProvisioned(st *v1beta1.MachineStatus, s *scope, providerID string, failed bool, gen int64) {
	c := metav1.Condition{Type: v1beta1.InstanceProvisionedCondition, ObservedGeneration: gen}
	switch {
	case failed && st.FailureReason != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(*st.FailureReason), ptr.Deref(st.FailureMessage, "")
	case providerID != "":
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonInstanceExists, fmt.Sprintf("instance %s exists", providerID)
	case s.classMissing != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonMachineClassNotFound, s.classMissing
	case s.providerErr != nil:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonProviderError
		c.Message = fmt.Sprintf("the provider failed, retrying with backoff: %v", s.providerErr)
	case s.providerWait != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonProviderWaiting, s.providerWait
	case st.Phase == v1beta1.MachinePhaseProvisioning:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonProvisioning, "creating the instance"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonPending, "the instance has not been requested yet"
	}
	conditions.Set(&st.Conditions, c, s.now)
}

func setReady(st *v1beta1.MachineStatus, s *scope, failed bool, gen int64) {
	c := metav1.Condition{Type: v1beta1.ReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: gen}
	switch {
	case st.Phase == v1beta1.MachinePhaseDeleting:
		c.Reason, c.Message = ReasonDeleting, "the machine is being deleted"
	case failed:
		c.Reason, c.Message = ReasonFailed, "the machine failed: "+ptr.Deref(st.FailureMessage, "")
	case st.NodeRef == nil && nodesUnreachable(st):
		// The node linker cannot see the Nodes (a workload cluster's API server is unreachable):
		// the Node may have registered and be Ready there.
		link := meta.FindStatusCondition(st.Conditions, v1beta1.NodeLinkedCondition)
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonNodesUnreachable
		c.Message = "no Node linked yet, and the node linker cannot see the Nodes (" + link.Type + ": " + link.Message + ")"
	case st.NodeRef == nil:
		c.Reason, c.Message = ReasonWaitingForNode, "waiting for the instance's Node to register and be linked"
	case s.nodeMissing:
		c.Reason, c.Message = ReasonNodeNotFound, fmt.Sprintf("Node %s no longer exists", st.NodeRef.Name)
	case s.nodeElsewhere:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonNodeInOtherCluster
		c.Message = fmt.Sprintf("Node %s is linked in another cluster; its readiness is not visible to this manager", st.NodeRef.Name)
	case s.node == nil:
		c.Reason, c.Message = ReasonWaitingForNode, fmt.Sprintf("waiting to observe Node %s", st.NodeRef.Name)
	default:
		cond := nodeReadyCondition(s.node)
		if cond != nil && cond.Status == corev1.ConditionTrue {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonNodeReady, fmt.Sprintf("Node %s is Ready", s.node.Name)
		} else {
			c.Reason, c.Message = ReasonNodeNotReady, fmt.Sprintf("Node %s is not Ready", s.node.Name)
			if cond != nil {
				c.Message = fmt.Sprintf("Node %s is not Ready (Ready=%s, %s: %s)", s.node.Name, cond.Status, cond.Reason, cond.Message)
			}
		}
	}
	conditions.Set(&st.Conditions, c, s.now)
}

// nodesUnreachable reports whether the node linker says it cannot see the Nodes, so whether the
// Machine has one is unknown (NodeLinked=Unknown/NodesUnreachable).
func nodesUnreachable(st *v1beta1.MachineStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, v1beta1.NodeLinkedCondition)
	return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == nodelink.ReasonNodesUnreachable
}

func setDeletion(st *v1beta1.MachineStatus, s *scope, gen int64) {
	d := s.deletion
	if d == nil || d.step == "" {
		return
	}
	if s.drainStart != nil || s.volumeStart != nil || s.nodeDelStart != nil {
		if st.Deletion == nil {
			st.Deletion = &v1beta1.MachineDeletionStatus{}
		}
		setOnce(&st.Deletion.NodeDrainStartTime, s.drainStart)
		setOnce(&st.Deletion.WaitForNodeVolumeDetachStartTime, s.volumeStart)
		setOnce(&st.Deletion.NodeDeletionStartTime, s.nodeDelStart)
	}
	conditions.Set(&st.Conditions, metav1.Condition{
		Type: v1beta1.DeletingCondition, Status: metav1.ConditionTrue, Reason: d.step, Message: d.message, ObservedGeneration: gen,
	}, s.now)
	if dr := d.drain; dr != nil {
		if dr.blockedBy != nil || (st.Deletion != nil && st.Deletion.DrainBlockedBy != nil) {
			if st.Deletion == nil {
				st.Deletion = &v1beta1.MachineDeletionStatus{}
			}
			st.Deletion.DrainBlockedBy = dr.blockedBy
		}
		status := metav1.ConditionFalse
		if dr.done {
			status = metav1.ConditionTrue
		}
		conditions.Set(&st.Conditions, metav1.Condition{
			Type: v1beta1.DrainedCondition, Status: status, Reason: dr.reason, Message: dr.message, ObservedGeneration: gen,
		}, s.now)
	}
}

// ownedConditions are the condition types the machine controller writes.
var ownedConditions = []string{
	v1beta1.ReadyCondition, v1beta1.InstanceProvisionedCondition, v1beta1.DrainedCondition, v1beta1.DeletingCondition,
	v1beta1.UpToDateCondition, v1beta1.InstanceInterruptionCondition, v1beta1.UpdatingCondition,
}

// statusApply returns the server-side apply configuration of the status fields the machine
// controller owns, taken from st: every field but status.nodeRef, and only the ownedConditions;
// and, when it records the Machine's link for the node linker (recordsLink, see link.go), the
// nodeRef and NodeLinked as well. A field unset in st is left out, which removes it. The UID makes
// the write fail rather than land on a Machine re-created under the same name.
func statusApply(m *v1beta1.Machine, st v1beta1.MachineStatus, recordsLink bool) *acv1beta1.MachineApplyConfiguration {
	owned := ownedConditions
	if m.DeletionTimestamp.IsZero() {
		// Until the Machine is deleted, Deleting is its set's (a disruption budget's hold, see
		// package machineset); the machine controller takes it over once deletion starts.
		owned = slices.DeleteFunc(slices.Clone(owned), func(t string) bool { return t == v1beta1.DeletingCondition })
	}
	if recordsLink {
		owned = append(slices.Clone(owned), v1beta1.NodeLinkedCondition)
	}
	ac := acv1beta1.MachineStatus().WithObservedGeneration(st.ObservedGeneration).
		WithConditions(conditions.ApplyConfigurations(st.Conditions, owned...)...)
	if recordsLink && st.NodeRef != nil {
		ac.WithNodeRef(machinelink.NodeRefApplyConfiguration(*st.NodeRef))
	}
	if st.Phase != "" {
		ac.WithPhase(st.Phase)
	}
	if len(st.Addresses) > 0 {
		ac.WithAddresses(st.Addresses...)
	}
	if st.ProviderStatus != nil {
		ac.WithProviderStatus(*st.ProviderStatus)
	}
	if st.Versions != nil {
		ac.WithVersions(acv1beta1.MachineStatusVersions().WithKubelet(st.Versions.Kubelet))
	}
	if st.ProvisionedTime != nil {
		ac.WithProvisionedTime(*st.ProvisionedTime)
	}
	if i := st.Interruption; i != nil {
		ia := acv1beta1.MachineInterruption().WithDeadline(i.Deadline).WithReason(i.Reason)
		if i.Message != "" {
			ia.WithMessage(i.Message)
		}
		ac.WithInterruption(ia)
	}
	if st.FailureReason != nil {
		ac.WithFailureReason(*st.FailureReason)
	}
	if st.FailureMessage != nil {
		ac.WithFailureMessage(*st.FailureMessage)
	}
	if d := st.Deletion; d != nil {
		del := acv1beta1.MachineDeletionStatus()
		if d.NodeDrainStartTime != nil {
			del.WithNodeDrainStartTime(*d.NodeDrainStartTime)
		}
		if d.WaitForNodeVolumeDetachStartTime != nil {
			del.WithWaitForNodeVolumeDetachStartTime(*d.WaitForNodeVolumeDetachStartTime)
		}
		if d.NodeDeletionStartTime != nil {
			del.WithNodeDeletionStartTime(*d.NodeDeletionStartTime)
		}
		if len(d.DrainBlockedBy) > 0 {
			del.WithDrainBlockedBy(d.DrainBlockedBy...)
		}
		ac.WithDeletion(del)
	}
	if st.LastUpdated != nil {
		ac.WithLastUpdated(*st.LastUpdated)
	}
	if u := st.InPlaceUpdate; u != nil {
		ac.WithInPlaceUpdate(inPlaceApply(u))
	}
	if c := st.MachineClass; c != nil {
		rec := acv1beta1.MachineClassRecord().WithName(c.Name).WithSpecHash(c.SpecHash)
		for _, f := range c.Fields {
			rec.WithFields(acv1beta1.FieldHash().WithPath(f.Path).WithHash(f.Hash))
		}
		ac.WithMachineClass(rec)
	}
	return acv1beta1.Machine(m.Name, m.Namespace).WithUID(m.UID).WithStatus(ac)
}

func setOnce(field **metav1.Time, t *time.Time) {
	if *field == nil && t != nil {
		*field = ptr.To(metav1.NewTime(*t))
	}
}

func nodeReadyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	if c := nodeReadyCondition(node); c != nil {
		return c.Status
	}
	return corev1.ConditionUnknown
}

func inPlaceApply(u *v1beta1.MachineInPlaceUpdate) *acv1beta1.MachineInPlaceUpdateApplyConfiguration {
	a := acv1beta1.MachineInPlaceUpdate().WithTemplateHash(u.TemplateHash).WithPaths(u.Paths...).WithUnsupported(u.Unsupported...)
	if u.Disruption != "" {
		a.WithDisruption(u.Disruption)
	}
	if u.CordonedNode != "" {
		a.WithCordonedNode(u.CordonedNode)
	}
	if u.NodeBootID != "" {
		a.WithNodeBootID(u.NodeBootID)
	}
	for _, t := range []struct {
		v    *metav1.Time
		with func(metav1.Time) *acv1beta1.MachineInPlaceUpdateApplyConfiguration
	}{{u.StartTime, a.WithStartTime}, {u.NodeDrainStartTime, a.WithNodeDrainStartTime}, {u.InstanceUpdatedTime, a.WithInstanceUpdatedTime}} {
		if t.v != nil {
			t.with(*t.v)
		}
	}
	return a
}
