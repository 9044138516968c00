package nodelink

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// mapFunc maps an event to the machines to reconcile: old is nil for an add, new is nil for a
// delete.
type mapFunc func(ctx context.Context, old, new client.Object) []reconcile.Request

// informerSource feeds the controller's queue from one informer of a cache, and removes its
// handler from the informer when the controller stops. (controller-runtime's source.Kind leaves
// its handler on the informer: every stopped remote linker would leak one on the manager's shared
// machine informer.)
type informerSource struct {
	cache  cache.Cache
	obj    client.Object
	mapper mapFunc
	synced chan error
}

var _ interface {
	Start(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error
	WaitForSync(context.Context) error
} = &informerSource{}

func (s *informerSource) String() string { return fmt.Sprintf("nodelink informer source %T", s.obj) }

// Start registers the handler and returns; a goroutine removes it when ctx is done.
func (s *informerSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.synced = make(chan error, 1)
	go func() {
		inf, err := s.cache.GetInformer(ctx, s.obj, cache.BlockUntilSynced(false))
		if err != nil {
			s.synced <- fmt.Errorf("getting the informer for %T: %w", s.obj, err)
			return
		}
		reg, err := inf.AddEventHandler(eventHandler{ctx: ctx, queue: q, mapper: s.mapper})
		if err != nil {
			s.synced <- fmt.Errorf("adding an event handler for %T: %w", s.obj, err)
			return
		}
		if toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			close(s.synced)
		}
		<-ctx.Done()
		_ = inf.RemoveEventHandler(reg) // fails only if the informer stopped, which drops handlers anyway
	}()
	return nil
}

// WaitForSync returns once the handler has seen the informer's initial list.
func (s *informerSource) WaitForSync(ctx context.Context) error {
	select {
	case err := <-s.synced:
		return err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil
		}
		return fmt.Errorf("timed out waiting for the %T cache to sync", s.obj)
	}
}

// eventHandler enqueues what mapper returns; requests from the initial list go in with low
// priority, so that live changes overtake a restart's backlog.
type eventHandler struct {
	ctx    context.Context
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
	mapper mapFunc
}

func (h eventHandler) OnAdd(obj any, initial bool) {
	if o, ok := obj.(client.Object); ok {
		h.add(h.mapper(h.ctx, nil, o), initial)
	}
}

func (h eventHandler) OnUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(client.Object)
	n, ok2 := newObj.(client.Object)
	if ok1 && ok2 {
		h.add(h.mapper(h.ctx, o, n), false)
	}
}

func (h eventHandler) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(client.Object); ok {
		h.add(h.mapper(h.ctx, o, nil), false)
	}
}

func (h eventHandler) add(reqs []reconcile.Request, low bool) {
	pq, isPQ := h.queue.(priorityqueue.PriorityQueue[reconcile.Request])
	for _, req := range reqs {
		if low && isPQ {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, req)
			continue
		}
		h.queue.Add(req)
	}
}

// mapMachine maps a machine event to that machine and, when its identity (providerID, addresses,
// nodeRef) changed, to the unlinked machines that share its providerID or an InternalIP: they may
// have been in conflict with it.
func (r *reconciler[M]) mapMachine(ctx context.Context, old, new client.Object) []reconcile.Request {
	var reqs requests
	switch {
	case old == nil:
		if m, ok := new.(M); ok {
			reqs.addIf(r.handles(m), client.ObjectKeyFromObject(m))
			r.addPeers(ctx, &reqs, m)
		}
	case new == nil:
		if m, ok := old.(M); ok {
			reqs.addIf(r.handles(m), client.ObjectKeyFromObject(m))
			r.addPeers(ctx, &reqs, m)
		}
	default:
		o, ok1 := old.(M)
		n, ok2 := new.(M)
		if !ok1 || !ok2 {
			return nil
		}
		ov, nv := r.machineView(o), r.machineView(n)
		identity := ov.ProviderID != nv.ProviderID || !slices.Equal(ov.IPs, nv.IPs) || !equality.Semantic.DeepEqual(ov.NodeRef, nv.NodeRef)
		if identity || r.machineInputsChanged(o, n) {
			reqs.addIf(r.handles(n), client.ObjectKeyFromObject(n))
		}
		if identity {
			r.addPeers(ctx, &reqs, o)
			r.addPeers(ctx, &reqs, n)
		}
	}
	return reqs.list
}

// machineInputsChanged reports whether anything but identity that a reconcile reads changed.
func (r *reconciler[M]) machineInputsChanged(o, n M) bool {
	return o.GetGeneration() != n.GetGeneration() ||
		!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
		!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) || // e.g. paused
		!equality.Semantic.DeepEqual(r.adapter.NodeMetadata(o), r.adapter.NodeMetadata(n)) ||
		!equality.Semantic.DeepEqual(r.adapter.LinkCondition(o), r.adapter.LinkCondition(n))
}

func (r *reconciler[M]) addPeers(ctx context.Context, reqs *requests, m M) {
	v := r.machineView(m)
	var peers []M
	if v.ProviderID != "" {
		peers = append(peers, r.listOrLog(ctx, indexMachineProviderID, v.ProviderID)...)
	}
	for _, ip := range v.IPs {
		peers = append(peers, r.listOrLog(ctx, indexMachineInternalIP, ip)...)
	}
	for _, p := range peers {
		self := p.GetName() == m.GetName() && p.GetNamespace() == m.GetNamespace()
		reqs.addIf(!self && r.handles(p), client.ObjectKeyFromObject(p))
	}
}

// mapNode maps a Node event to the machines it may concern: the one its annotations name, those
// whose nodeRef names it, and those with its providerID or one of its InternalIPs. Updates that
// change none of what nodelink reads (status heartbeats) map only to the machines whose patch of
// the Node was refused (stale.go).
func (r *reconciler[M]) mapNode(ctx context.Context, old, new client.Object) []reconcile.Request {
	var reqs requests
	o, _ := old.(*corev1.Node)
	n, _ := new.(*corev1.Node)
	// Machines whose patch of this Node was refused come back on any newer version (stale.go).
	if name := nodeName(o, n); name != "" {
		for _, key := range r.stale.take(name, n) {
			reqs.addIf(true, key)
		}
	}
	if o != nil && n != nil && !nodeInputsChanged(o, n) {
		return reqs.list
	}
	for _, node := range []*corev1.Node{o, n} {
		if node == nil {
			continue
		}
		if key := r.keys.claimedBy(node.Annotations); key.Name != "" {
			reqs.addIf(r.opts.Namespace == "" || key.Namespace == r.opts.Namespace, key)
		}
		var ms []M
		ms = append(ms, r.listOrLog(ctx, indexMachineNodeName, node.Name)...)
		if node.Spec.ProviderID != "" {
			ms = append(ms, r.listOrLog(ctx, indexMachineProviderID, node.Spec.ProviderID)...)
		}
		for _, ip := range nodeInternalIPs(node) {
			ms = append(ms, r.listOrLog(ctx, indexMachineInternalIP, ip)...)
		}
		for _, m := range ms {
			reqs.addIf(r.handles(m), client.ObjectKeyFromObject(m))
		}
	}
	return reqs.list
}

// nodeName is the name of the Node of an event (old is nil for an add, new for a delete).
func nodeName(old, new *corev1.Node) string {
	switch {
	case new != nil:
		return new.Name
	case old != nil:
		return old.Name
	}
	return ""
}

func nodeInputsChanged(o, n *corev1.Node) bool {
	return o.UID != n.UID || o.Spec.ProviderID != n.Spec.ProviderID ||
		!slices.Equal(nodeInternalIPs(o), nodeInternalIPs(n)) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
		!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)
}

func (r *reconciler[M]) listOrLog(ctx context.Context, index, value string) []M {
	ms, err := r.listMachines(ctx, index, value)
	if err != nil {
		r.opts.Logger.Error(err, "mapping an event to machines")
	}
	return ms
}

// requests is a small ordered set of requests.
type requests struct{ list []reconcile.Request }

func (s *requests) addIf(cond bool, key types.NamespacedName) {
	req := reconcile.Request{NamespacedName: key}
	if cond && !slices.Contains(s.list, req) {
		s.list = append(s.list, req)
	}
}
