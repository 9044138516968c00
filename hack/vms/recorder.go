package vms

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Recorder watches Nodes and the pods of one namespace from before the first VM boots, and keeps
// what the suite's checks need: every version of every Node, every pod binding, each pod's way to
// its end, and how many of a workload's pods were Ready after every change.
//
// Writes to one etcd are ordered by its revision, which the API server hands out as
// resourceVersion: the suite's control plane has one etcd, so comparing a pod's binding with a
// Node's versions by resourceVersion says which came first. (The API does not promise this in
// general; it holds for this control plane.)
type Recorder struct {
	workload labels.Selector

	mu       sync.Mutex
	nodes    map[string][]NodeVersion
	bindings []Binding
	pods     map[types.UID]*PodLife
	ready    []ReadyCount
	latest   map[types.UID]*corev1.Pod // the workload's pods, latest version of each
}

// NodeVersion is one version of a Node, as the watch saw it.
type NodeVersion struct {
	RV            uint64
	Labels        map[string]string
	Taints        []corev1.Taint
	Unschedulable bool   // cordoned
	BootID        string // the kubelet's status.nodeInfo.bootID: a new one after each boot
	Seen          time.Time
}

// Binding is a pod seen bound to a Node for the first time.
type Binding struct {
	Pod  string
	Node string
	RV   uint64 // of the pod version that first had spec.nodeName
	Seen time.Time
}

// PodLife is one pod's way from binding to its end.
type PodLife struct {
	Name        string
	Node        string
	Terminating time.Time // deletionTimestamp first seen
	// Exited: a container seen terminated (the kubelet stopped it) while the pod was terminating.
	Exited  time.Time
	Deleted time.Time
}

// ReadyCount is how many pods of the workload were Ready and not terminating after a change.
type ReadyCount struct {
	At    time.Time
	Ready int
}

// StartRecorder starts watching Nodes, and the pods of namespace; workload selects the pods
// whose Ready count is kept. It returns once both watches have listed.
func StartRecorder(ctx context.Context, cs kubernetes.Interface, namespace string, workload labels.Selector) (*Recorder, error) {
	r := &Recorder{workload: workload, nodes: map[string][]NodeVersion{}, pods: map[types.UID]*PodLife{}}
	nodeFactory := informers.NewSharedInformerFactory(cs, 0)
	podFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace))
	nodes := nodeFactory.Core().V1().Nodes().Informer()
	pods := podFactory.Core().V1().Pods().Informer()
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.node(obj) },
		UpdateFunc: func(_, obj any) { r.node(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.pod(obj, false) },
		UpdateFunc: func(_, obj any) { r.pod(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			r.pod(obj, true)
		},
	}); err != nil {
		return nil, err
	}
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, pods.HasSynced) {
		return nil, fmt.Errorf("the suite's watches of Nodes and pods did not sync")
	}
	return r, nil
}

func rv(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

func (r *Recorder) node(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes[n.Name] = append(r.nodes[n.Name], NodeVersion{RV: rv(n.ResourceVersion), Labels: maps.Clone(n.Labels), Taints: slices.Clone(n.Spec.Taints),
		Unschedulable: n.Spec.Unschedulable, BootID: n.Status.NodeInfo.BootID, Seen: time.Now()})
}

func (r *Recorder) pod(obj any, deleted bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	life := r.pods[p.UID]
	if life == nil && p.Spec.NodeName != "" {
		life = &PodLife{Name: p.Name, Node: p.Spec.NodeName}
		r.pods[p.UID] = life
		r.bindings = append(r.bindings, Binding{Pod: p.Name, Node: p.Spec.NodeName, RV: rv(p.ResourceVersion), Seen: now})
	}
	if life != nil {
		if p.DeletionTimestamp != nil && life.Terminating.IsZero() {
			life.Terminating = now
		}
		if p.DeletionTimestamp != nil && life.Exited.IsZero() {
			for _, c := range p.Status.ContainerStatuses {
				if c.State.Terminated != nil {
					life.Exited = now
				}
			}
		}
		if deleted {
			life.Deleted = now
		}
	}
	if r.workload.Matches(labels.Set(p.Labels)) {
		r.ready = append(r.ready, ReadyCount{At: now, Ready: r.readyLocked(p, deleted)})
	}
}

// readyLocked counts the workload's pods that are Ready and not terminating, with p's change
// applied: it keeps the latest version of each pod.
func (r *Recorder) readyLocked(p *corev1.Pod, deleted bool) int {
	if r.latest == nil {
		r.latest = map[types.UID]*corev1.Pod{}
	}
	if deleted {
		delete(r.latest, p.UID)
	} else {
		r.latest[p.UID] = p
	}
	n := 0
	for _, q := range r.latest {
		if q.DeletionTimestamp == nil && podReady(q) {
			n++
		}
	}
	return n
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeVersions returns every version of the Node seen so far, oldest first.
func (r *Recorder) NodeVersions(name string) []NodeVersion {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.nodes[name])
}

// Bindings returns every pod binding seen so far.
func (r *Recorder) Bindings() []Binding {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bindings)
}

// Pods returns what is known of every pod seen bound, by name.
func (r *Recorder) Pods() map[string]PodLife {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]PodLife{}
	for _, l := range r.pods {
		out[l.Name] = *l
	}
	return out
}

// LeastReady returns the fewest of the workload's pods that were Ready (and not terminating) at
// any change since `since`, and how many changes were seen then.
func (r *Recorder) LeastReady(since time.Time) (least, changes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	least = -1
	for _, c := range r.ready {
		if c.At.Before(since) {
			continue
		}
		changes++
		if least < 0 || c.Ready < least {
			least = c.Ready
		}
	}
	return least, changes
}

// BoundEarly returns, for every pod bound to one of nodes, a line saying so when the Node did not
// yet carry the labels and taints wanted when the pod was bound: the version of the Node written
// last before the binding must have them all. An empty result means every pod landed after them.
func (r *Recorder) BoundEarly(nodes []string, wantLabels map[string]string, wantTaints []corev1.Taint) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.bindings {
		if !slices.Contains(nodes, b.Node) {
			continue
		}
		var before *NodeVersion
		for i, v := range r.nodes[b.Node] {
			if v.RV < b.RV {
				before = &r.nodes[b.Node][i]
			}
		}
		if before == nil {
			out = append(out, fmt.Sprintf("pod %s bound to Node %s (resourceVersion %d) before any version of the Node the suite saw", b.Pod, b.Node, b.RV))
			continue
		}
		if missing := Lacks(before.Labels, before.Taints, wantLabels, wantTaints); missing != "" {
			out = append(out, fmt.Sprintf("pod %s bound to Node %s (resourceVersion %d) when the Node (resourceVersion %d) lacked %s", b.Pod, b.Node, b.RV, before.RV, missing))
		}
	}
	return out
}

// Lacks says which of the wanted labels and taints (by key, value and effect) are not among have;
// empty when none is missing.
func Lacks(haveLabels map[string]string, haveTaints []corev1.Taint, wantLabels map[string]string, wantTaints []corev1.Taint) string {
	var missing []string
	for k, v := range wantLabels {
		if got, ok := haveLabels[k]; !ok || got != v {
			missing = append(missing, fmt.Sprintf("label %s=%s", k, v))
		}
	}
	for _, t := range wantTaints {
		if !slices.ContainsFunc(haveTaints, func(h corev1.Taint) bool { return h.MatchTaint(&t) && h.Value == t.Value }) {
			missing = append(missing, "taint "+t.ToString())
		}
	}
	slices.Sort(missing)
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprint(missing)
}
