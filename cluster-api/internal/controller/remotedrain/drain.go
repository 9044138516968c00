package remotedrain

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/drain"

	"machineapi.dev/machine-api/machinedrain"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/kubeconfig"
)

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedrainrules,verbs=get;list;watch

// drainWorkloadNode runs one drain step on the Machine's Node in the workload cluster and
// releases the hook once the Node is drained or gone; otherwise it waits. The step applies the
// MachineDrainRules of the Machine's namespace (in the management cluster) that select it, and
// its pod deadline (drainDeadlineSeconds), as machine-manager's drain does; a step that deletes
// pods instead of evicting them says so in a Warning event naming each pod. Every outcome but a
// release is reported False, so the condition records when draining began even when the first
// step fails.
func (r *Reconciler) drainWorkloadNode(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	m := s.machine
	node := m.Status.NodeRef.Name
	decision := s.policy.decision
	record := func(reason, msg string) {
		s.outcome = &outcome{eventType: eventNormal, reason: reason, message: msg + "; " + letGo(decision)}
		if reason != ReasonDraining {
			s.outcome.eventType = eventWarning
		}
	}
	wait := func(reason, msg string) (ctrl.Result, bool, error) {
		record(reason, msg)
		return ctrl.Result{RequeueAfter: waitRequeue(decision, s.now)}, false, nil
	}
	wc, problem, err := r.clientsets.get(ctx, r.APIReader, s.cluster, r.WorkloadQPS, r.WorkloadBurst)
	if err != nil {
		record(ReasonDrainFailed, fmt.Sprintf("cannot drain Node %s yet, retrying: %v", node, err))
		return ctrl.Result{}, false, err
	}
	if problem != "" {
		return wait(ReasonKubeconfigProblem, fmt.Sprintf("cannot drain Node %s: %s", node, problem))
	}
	d, err := drain.New(wc.clientset, r.Drain)
	if err != nil {
		err = fmt.Errorf("the cluster-manager's drain options are invalid: %w", err)
		record(ReasonDrainFailed, fmt.Sprintf("cannot drain Node %s: %v", node, err))
		return ctrl.Result{}, false, reconcile.TerminalError(err)
	}
	rules, err := machinedrain.ReadRules(ctx, r.Client, m)
	if err != nil {
		// A rule left out could evict pods it protects: wait until it is fixed.
		return wait(ReasonInvalidDrainRule, fmt.Sprintf("cannot drain Node %s: %v; fix or delete the rule", node, err))
	}
	res, err := d.Drain(ctx, node, decision.Step(rules))
	if err == nil && len(res.Deleted) > 0 {
		r.Recorder.Eventf(m, nil, eventWarning, EventPodsDeleted, eventAction, "%s", res.DeletionSummary())
	}
	switch {
	case errors.Is(err, drain.ErrNodeNotFound):
		return r.release(ctx, s, eventNormal, ReasonNodeNotFound, fmt.Sprintf("draining skipped: Node %s no longer exists in the workload cluster (%s)", node, wc.host))
	case err != nil:
		return wait(ReasonDrainFailed, fmt.Sprintf("draining Node %s in the workload cluster (%s) failed, retrying every %s: %v", node, wc.host, drainPoll, err))
	case !res.Done:
		record(ReasonDraining, fmt.Sprintf("workload cluster %s: %s", wc.host, stableSummary(res)))
		return ctrl.Result{RequeueAfter: nextStep(decision, res.NextDeletion, s.now)}, false, nil
	}
	took := s.now.Sub(decision.StartedAt).Round(time.Second)
	return r.release(ctx, s, eventNormal, ReasonDrained, fmt.Sprintf("drained Node %s of the workload cluster (%s) in %s", node, wc.host, took))
}

// stableSummary is the drain result's summary without the elapsed time, so it changes only when
// the drain's state does (it is the condition's message and decides when to emit an event).
func stableSummary(res *drain.Result) string {
	cp := *res
	cp.Elapsed = 0
	return cp.Summary()
}

// workloadClient is a clientset for one Cluster's workload API server.
type workloadClient struct {
	fingerprint string
	host        string
	clientset   kubernetes.Interface
}

// clientsets caches one workload clientset per Cluster, replaced when the kubeconfig's
// fingerprint changes. The kubeconfig Secret is read on every call (get only, uncached).
type clientsets struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*workloadClient
}

func newClientsets() *clientsets { return &clientsets{m: map[types.NamespacedName]*workloadClient{}} }

// get returns the clientset of Cluster c's workload cluster, or a problem the user must fix
// (a message), or a transient error.
func (cs *clientsets) get(ctx context.Context, reader client.Reader, c *v1beta1.Cluster, qps float32, burst int) (*workloadClient, string, error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	if c.Spec.KubeconfigSecretRef == nil {
		return nil, fmt.Sprintf("Cluster %s has no spec.kubeconfigSecretRef to reach its workload cluster with", c.Name), nil
	}
	kc, problem, err := kubeconfig.Read(ctx, reader, c, "cluster-manager-remotedrain", qps, burst)
	if err != nil {
		return nil, "", err
	}
	if problem != nil {
		return nil, problem.Message, nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if wc, ok := cs.m[key]; ok && wc.fingerprint == kc.Fingerprint {
		return wc, "", nil
	}
	set, err := kubernetes.NewForConfig(kc.Rest)
	if err != nil {
		return nil, fmt.Sprintf("the kubeconfig of Cluster %s cannot make a client: %v", c.Name, err), nil
	}
	wc := &workloadClient{fingerprint: kc.Fingerprint, host: kc.Rest.Host, clientset: set}
	cs.m[key] = wc
	return wc, "", nil
}

// forget drops the clientset of a Cluster that is gone or going.
func (cs *clientsets) forget(key types.NamespacedName) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.m, key)
}
