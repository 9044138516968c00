package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Ready condition reasons, as a real kubelet and node lifecycle controller write them.
const (
	reasonKubeletReady    = "KubeletReady"
	reasonKubeletNotReady = "KubeletNotReady"
	reasonStatusUnknown   = "NodeStatusUnknown"
)

// register creates the instance's Node, Ready, in one write (Nodes accept status on create), and
// marks the instance registered. A Node that already exists counts as registered.
func (p *Provider) register(ctx context.Context, inst Instance) error {
	c := p.getClient()
	if c == nil {
		return fmt.Errorf("sim: no client to register Node %s with: call SetupWithManager or WithClient", inst.NodeName)
	}
	now := metav1.NewTime(p.opts.Clock.Now())
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: inst.NodeName,
			Labels: map[string]string{
				corev1.LabelHostname:           inst.NodeName,
				corev1.LabelInstanceTypeStable: inst.InstanceType,
				corev1.LabelOSStable:           "linux",
				corev1.LabelArchStable:         "amd64",
				InstanceLabel:                  string(inst.ID),
			},
		},
		// Registered as a bootstrapped kubelet is (--register-with-taints): no workloads until
		// the node linker has applied the Machine's labels and taints and removed the taint.
		Spec: corev1.NodeSpec{ProviderID: inst.ProviderID, Taints: []corev1.Taint{
			{Key: v1beta1.NodeUninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{
			Capacity:    inst.Capacity,
			Allocatable: inst.Capacity,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: inst.InternalIP},
				{Type: corev1.NodeHostName, Address: inst.NodeName},
			},
			Conditions: []corev1.NodeCondition{readyCondition(corev1.ConditionTrue, now)},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:  inst.Kubelet,
				OperatingSystem: "linux",
				Architecture:    "amd64",
				OSImage:         "machineapi sim",
			},
		},
	}
	if _, alive := p.store.get(inst.ID); !alive {
		return nil // deleted since the booter listed it
	}
	if err := c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sim: registering Node %s: %w", inst.NodeName, err)
	}
	_, alive, err := p.store.update(inst.ID, func(i *Instance) { i.Registered = true })
	if err == nil && !alive {
		// Deleted while its kubelet registered: a terminated instance's Node does not stay.
		return p.removeNode(ctx, inst.NodeName)
	}
	return err
}

// removeNode deletes the Node of an instance that is gone, as a cloud's node lifecycle
// controller would.
func (p *Provider) removeNode(ctx context.Context, name string) error {
	err := p.getClient().Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("sim: deleting Node %s of a deleted instance: %w", name, err)
	}
	return nil
}

func readyCondition(status corev1.ConditionStatus, now metav1.Time) corev1.NodeCondition {
	c := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: now}
	switch status {
	case corev1.ConditionTrue:
		c.Reason, c.Message = reasonKubeletReady, "kubelet is posting ready status (simulated)"
	case corev1.ConditionFalse:
		c.Reason, c.Message = reasonKubeletNotReady, "the simulated kubelet reports NotReady (fault knob)"
	default:
		c.Reason, c.Message = reasonStatusUnknown, "Kubelet stopped posting node status."
	}
	return c
}

// instanceID returns the instance UID behind a sim providerID.
func instanceID(providerID string) (types.UID, bool) {
	id, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	return types.UID(id), ok && id != ""
}

// renewLease renews the Node's Lease in kube-node-lease, or creates it, when this provider has not
// renewed it for most of a heartbeat interval. The renewal is a merge patch of renewTime alone,
// sent without reading the Lease: it never conflicts, and a manager whose cache is scoped to one
// namespace (--namespace) renews Leases it cannot see.
func (p *Provider) renewLease(ctx context.Context, c client.Client, node *corev1.Node, now time.Time) error {
	if last, ok := p.leaseRenewed(node.Name); ok && now.Sub(last) < p.opts.HeartbeatInterval*9/10 {
		return nil // renewed recently (a requeue or a Node event lands early)
	}
	renew := metav1.NewMicroTime(now)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node.Name}}
	patch := fmt.Appendf(nil, `{"spec":{"renewTime":%q}}`, renew.Format(metav1.RFC3339Micro))
	err := c.Patch(ctx, lease, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name), LeaseDurationSeconds: ptr.To[int32](leaseDurationSeconds), RenewTime: &renew}
		err = client.IgnoreAlreadyExists(c.Create(ctx, lease))
	}
	if err != nil {
		return err
	}
	p.setLeaseRenewed(node.Name, now)
	return nil
}

func (p *Provider) leaseRenewed(node string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.leases[node]
	return t, ok
}

func (p *Provider) forgetLease(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.leases, node)
}

func (p *Provider) setLeaseRenewed(node string, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leases == nil {
		p.leases = map[string]time.Time{}
	}
	p.leases[node] = t
}

// leaseDurationSeconds is a kubelet's default node lease duration.
const leaseDurationSeconds = 40

// heartbeatDue reports whether the Ready condition's heartbeat is older than interval.
func heartbeatDue(cond *corev1.NodeCondition, now time.Time, interval time.Duration) bool {
	return interval > 0 && cond != nil && now.Sub(cond.LastHeartbeatTime.Time) >= interval
}
