package nodelink

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Field indexes. Matching looks machines and Nodes up through these only, never by listing every
// object. The names are nodelink's own, so they cannot collide with indexes other controllers
// register on the same caches.
const (
	indexMachineProviderID = "nodelink.machineapi.dev/machine.spec.providerID"
	indexMachineInternalIP = "nodelink.machineapi.dev/machine.status.addresses.internalIP"
	indexMachineNodeName   = "nodelink.machineapi.dev/machine.status.nodeRef.name"
	// indexMachineLinkReason: the NodeLinked reason of machines waiting for a Node
	// (WaitingForNode or NodesUnreachable), the ones a change of the Node side's reachability
	// concerns. Other reasons are not indexed.
	indexMachineLinkReason = "nodelink.machineapi.dev/machine.status.conditions.NodeLinked.reason"
	indexNodeProviderID    = "nodelink.machineapi.dev/node.spec.providerID"
	indexNodeInternalIP    = "nodelink.machineapi.dev/node.status.addresses.internalIP"
	// indexNodeMachinePrefix + annotation prefix: the namespace/name of the machine a Node's
	// annotations name. One per prefix, since the function depends on it.
	indexNodeMachinePrefix = "nodelink.machineapi.dev/node.annotations.machine:"
)

// indexMachines registers the machine indexes on the machine cache. Linkers for several workload
// clusters share the manager's machine cache: the second registration of the same index (same
// name, same function) is a no-op.
func indexMachines[M client.Object](ctx context.Context, indexer client.FieldIndexer, a Adapter[M]) error {
	typed := func(f func(M) []string) client.IndexerFunc {
		return func(o client.Object) []string {
			m, ok := o.(M)
			if !ok {
				return nil
			}
			return f(m)
		}
	}
	for name, f := range map[string]client.IndexerFunc{
		indexMachineProviderID: typed(func(m M) []string { return nonEmpty(a.ProviderID(m)) }),
		indexMachineInternalIP: typed(func(m M) []string { return normalizeIPs(a.InternalIPs(m)) }),
		indexMachineNodeName: typed(func(m M) []string {
			if ref := a.NodeRef(m); ref != nil {
				return nonEmpty(ref.Name)
			}
			return nil
		}),
		indexMachineLinkReason: typed(func(m M) []string {
			if c := a.LinkCondition(m); c != nil && (c.Reason == ReasonWaitingForNode || c.Reason == ReasonNodesUnreachable) {
				return []string{c.Reason}
			}
			return nil
		}),
	} {
		if err := addIndex(ctx, indexer, a.New(), name, f); err != nil {
			return err
		}
	}
	return nil
}

// indexNodes registers the Node indexes on the Node cache.
func indexNodes(ctx context.Context, indexer client.FieldIndexer, k annotationKeys, machineIndex string) error {
	node := func(f func(*corev1.Node) []string) client.IndexerFunc {
		return func(o client.Object) []string {
			n, ok := o.(*corev1.Node)
			if !ok {
				return nil
			}
			return f(n)
		}
	}
	for name, f := range map[string]client.IndexerFunc{
		indexNodeProviderID: node(func(n *corev1.Node) []string { return nonEmpty(n.Spec.ProviderID) }),
		indexNodeInternalIP: node(nodeInternalIPs),
		machineIndex: node(func(n *corev1.Node) []string {
			if key := k.claimedBy(n.Annotations); key.Name != "" {
				return []string{key.String()}
			}
			return nil
		}),
	} {
		if err := addIndex(ctx, indexer, &corev1.Node{}, name, f); err != nil {
			return err
		}
	}
	return nil
}

func addIndex(ctx context.Context, indexer client.FieldIndexer, obj client.Object, name string, f client.IndexerFunc) error {
	err := indexer.IndexField(ctx, obj, name, f)
	if err != nil && strings.Contains(err.Error(), "indexer conflict") {
		return nil // registered by an earlier linker sharing this cache
	}
	if err != nil {
		return fmt.Errorf("indexing %T by %s: %w", obj, name, err)
	}
	return nil
}

func nodeInternalIPs(n *corev1.Node) []string {
	var ips []string
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	return normalizeIPs(ips)
}

// normalizeIPs returns ips in canonical form (so that 10.0.0.1 and ::ffff:10.0.0.1 match),
// sorted, without duplicates or empty strings.
func normalizeIPs(ips []string) []string {
	var out []string
	for _, ip := range ips {
		if addr, err := netip.ParseAddr(strings.TrimSpace(ip)); err == nil {
			ip = addr.Unmap().String()
		}
		if ip != "" && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	slices.Sort(out)
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// cacheLookup answers matching's questions from the machine and Node caches' indexes.
type cacheLookup[M client.Object] struct {
	ctx context.Context
	r   *reconciler[M]
}

var _ lookup = cacheLookup[client.Object]{}

func (l cacheLookup[M]) Node(name string) (*nodeView, error) {
	var n corev1.Node
	if err := l.r.nodes.GetCache().Get(l.ctx, types.NamespacedName{Name: name}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting Node %s: %w", name, err)
	}
	v := l.r.nodeView(&n)
	return &v, nil
}

func (l cacheLookup[M]) NodesByProviderID(providerID string) ([]nodeView, error) {
	return l.nodes(indexNodeProviderID, providerID)
}

func (l cacheLookup[M]) NodesByInternalIP(ip string) ([]nodeView, error) {
	return l.nodes(indexNodeInternalIP, ip)
}

func (l cacheLookup[M]) nodes(index, value string) ([]nodeView, error) {
	var list corev1.NodeList
	if err := l.r.nodes.GetCache().List(l.ctx, &list, client.MatchingFields{index: value}); err != nil {
		return nil, fmt.Errorf("listing Nodes by %s=%s: %w", index, value, err)
	}
	views := make([]nodeView, 0, len(list.Items))
	for i := range list.Items {
		views = append(views, l.r.nodeView(&list.Items[i]))
	}
	return views, nil
}

func (l cacheLookup[M]) MachinesByProviderID(providerID string) ([]machineView, error) {
	return l.machines(indexMachineProviderID, providerID)
}

func (l cacheLookup[M]) MachinesByInternalIP(ip string) ([]machineView, error) {
	return l.machines(indexMachineInternalIP, ip)
}

func (l cacheLookup[M]) MachinesByNodeName(name string) ([]machineView, error) {
	return l.machines(indexMachineNodeName, name)
}

func (l cacheLookup[M]) machines(index, value string) ([]machineView, error) {
	ms, err := l.r.listMachines(l.ctx, index, value)
	if err != nil {
		return nil, err
	}
	views := make([]machineView, 0, len(ms))
	for _, m := range ms {
		views = append(views, l.r.machineView(m))
	}
	return views, nil
}

// MachineExists asks the cache first and, when the cache does not have the machine, the API
// server: a machine outside the cache's scope (or not yet in it) must not be taken for deleted.
func (l cacheLookup[M]) MachineExists(key types.NamespacedName) (bool, error) {
	return l.r.machineExists(l.ctx, key)
}

// listMachines returns the machines whose index has value, from the machine cache, narrowed by
// opts (a namespace, a label selector).
func (r *reconciler[M]) listMachines(ctx context.Context, index, value string, opts ...client.ListOption) ([]M, error) {
	list := r.adapter.NewList()
	if err := r.machines.GetCache().List(ctx, list, append([]client.ListOption{client.MatchingFields{index: value}}, opts...)...); err != nil {
		return nil, fmt.Errorf("listing machines by %s=%s: %w", index, value, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("reading machine list: %w", err)
	}
	out := make([]M, 0, len(objs))
	for _, o := range objs {
		if m, ok := o.(M); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func (r *reconciler[M]) machineExists(ctx context.Context, key types.NamespacedName) (bool, error) {
	m := r.adapter.New()
	err := r.machines.GetCache().Get(ctx, key, m)
	if err == nil {
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("getting machine %s: %w", key, err)
	}
	err = r.machines.GetAPIReader().Get(ctx, key, r.adapter.New())
	if err == nil {
		return true, nil
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("getting machine %s from the API server: %w", key, err)
}

func (r *reconciler[M]) machineView(m M) machineView {
	v := machineView{
		Key:        client.ObjectKeyFromObject(m),
		ProviderID: r.adapter.ProviderID(m),
		IPs:        normalizeIPs(r.adapter.InternalIPs(m)),
		Created:    m.GetCreationTimestamp().Time,
	}
	if ref := r.adapter.NodeRef(m); ref != nil && ref.Name != "" {
		v.NodeRef = ref
	}
	return v
}

func (r *reconciler[M]) nodeView(n *corev1.Node) nodeView {
	return nodeView{
		Name:       n.Name,
		UID:        n.UID,
		ProviderID: n.Spec.ProviderID,
		IPs:        nodeInternalIPs(n),
		Created:    n.CreationTimestamp.Time,
		ClaimedBy:  r.keys.claimedBy(n.Annotations),
	}
}
