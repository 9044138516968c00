package machinedeployment_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func getMD(md *v1beta1.MachineDeployment) *v1beta1.MachineDeployment {
	out := &v1beta1.MachineDeployment{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(md), out)).To(Succeed())
	return out
}

// machines lists the Machines of a namespace as the API server has them, deleting ones included.
func machines(ns string) []v1beta1.Machine {
	list := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// sets lists the MachineSets of a namespace, oldest first.
func sets(ns string) []v1beta1.MachineSet {
	list := &v1beta1.MachineSetList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) ||
			list.Items[i].CreationTimestamp.Equal(&list.Items[j].CreationTimestamp) && list.Items[i].Name < list.Items[j].Name
	})
	return list.Items
}

func setNames(ns string) []string {
	var out []string
	for _, s := range sets(ns) {
		out = append(out, s.Name)
	}
	return out
}

// live returns the names of the Machines not being deleted, sorted.
func live(ns string) []string {
	var out []string
	for _, m := range machines(ns) {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

func ready(m *v1beta1.Machine) bool {
	return m.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(m.Status.Conditions, v1beta1.ReadyCondition)
}

func instanceType(m *v1beta1.Machine) string {
	var spec struct {
		InstanceType string `json:"instanceType"`
	}
	if m.Spec.ProviderSpec.Value != nil {
		_ = json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &spec)
	}
	return spec.InstanceType
}

// readyByType counts the ready, not deleting Machines of ns by instance type ("small=3 large=1").
func readyByType(ns string) func() map[string]int {
	return func() map[string]int {
		out := map[string]int{}
		for _, m := range machines(ns) {
			if ready(&m) {
				out[instanceType(&m)]++
			}
		}
		return out
	}
}

// liveByType counts the not deleting Machines of ns by instance type.
func liveByType(ns string) func() map[string]int {
	return func() map[string]int {
		out := map[string]int{}
		for _, m := range machines(ns) {
			if m.DeletionTimestamp.IsZero() {
				out[instanceType(&m)]++
			}
		}
		return out
	}
}

// status returns "replicas/updated/ready/available" of a deployment, for Eventually.
func status(md *v1beta1.MachineDeployment) func() string {
	return func() string {
		s := getMD(md).Status
		return fmt.Sprintf("%d/%d/%d/%d", s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas)
	}
}

func condition(md *v1beta1.MachineDeployment, t string) func() string {
	return func() string {
		c := meta.FindStatusCondition(getMD(md).Status.Conditions, t)
		if c == nil {
			return "<none>"
		}
		return fmt.Sprintf("%s/%s", c.Status, c.Reason)
	}
}

// setReplicas returns the spec.replicas of each MachineSet of ns by instance type of its template.
func setReplicas(ns string) func() map[string]int32 {
	return func() map[string]int32 {
		out := map[string]int32{}
		for _, s := range sets(ns) {
			m := v1beta1.Machine{Spec: s.Spec.Template.Spec}
			out[instanceType(&m)] += *s.Spec.Replicas
		}
		return out
	}
}

func mergePatch(obj client.Object, body string) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(body)))
	})).To(Succeed())
}

func setInstanceType(md *v1beta1.MachineDeployment, t string) {
	mergePatch(md, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"instanceType":"`+t+`"}}}}}}`)
}

// nodeOf returns the Node of Machine m, nil if it has none yet.
func nodeOf(m *v1beta1.Machine) *corev1.Node {
	if m.Status.NodeRef == nil {
		return nil
	}
	node := &corev1.Node{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, node); err != nil {
		return nil
	}
	return node
}

// sampler polls the Machines of a namespace every 20ms until stopped, recording the fewest ready
// (not deleting) Machines and the most live ones it saw, and whether it ever saw Machines of two
// instance types at once (deleting ones included). It also counts the distinct states it saw
// (which Machines, deleting or ready), so a test knows it watched the rollout in between and not
// only before and after.
type sampler struct {
	stop     chan struct{}
	done     sync.WaitGroup
	mu       sync.Mutex
	minReady int
	maxLive  int
	mixed    bool
	states   map[string]bool
	// mostDisrupting names the most Machines with a Node seen being deleted at once.
	mostDisrupting []string
	// deleted names every Machine seen being deleted.
	deleted map[string]bool
}

func sample(ns string) *sampler {
	s := &sampler{stop: make(chan struct{}), minReady: 1 << 30, states: map[string]bool{}, deleted: map[string]bool{}}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			list := &v1beta1.MachineList{}
			if err := k8s.List(ctx, list, client.InNamespace(ns)); err == nil {
				readyN, liveN, types := 0, 0, map[string]bool{}
				var disrupting, deleted []string
				state := make([]string, 0, len(list.Items))
				for i := range list.Items {
					m := &list.Items[i]
					types[instanceType(m)] = true
					state = append(state, fmt.Sprintf("%s/%t/%t", m.UID, m.DeletionTimestamp.IsZero(), ready(m)))
					switch {
					case m.DeletionTimestamp.IsZero():
						liveN++
					case m.Status.NodeRef != nil:
						disrupting = append(disrupting, m.Name)
						fallthrough
					default:
						deleted = append(deleted, m.Name)
					}
					if ready(m) {
						readyN++
					}
				}
				s.mu.Lock()
				s.minReady, s.maxLive = min(s.minReady, readyN), max(s.maxLive, liveN)
				for _, name := range deleted {
					s.deleted[name] = true
				}
				if len(disrupting) > len(s.mostDisrupting) {
					s.mostDisrupting = disrupting
				}
				s.mixed = s.mixed || len(types) > 1
				slices.Sort(state)
				s.states[strings.Join(state, ",")] = true
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return s
}

// Deleted names every Machine seen being deleted, so far.
func (s *sampler) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.deleted))
}

// MostDisrupting names the most Machines with a Node seen being deleted at once, so far.
func (s *sampler) MostDisrupting() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mostDisrupting
}

func (s *sampler) Stop() (minReady, maxLive int, mixed bool) {
	close(s.stop)
	s.done.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	Expect(len(s.states)).To(BeNumerically(">=", 3), "the sampler saw the rollout between its first and last state")
	return s.minReady, s.maxLive, s.mixed
}
