package cluster

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"machineapi.dev/cluster-api/internal/kubeconfig"
	"machineapi.dev/cluster-api/internal/remotelink"
)

// The kubeconfig Secret is read with get only — no list, no watch, no cache — so the cluster
// manager can read exactly the Secrets Clusters name and nothing else. This is the only access
// to Secrets in the product.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// linkRemoteNodes keeps one node linker running for a Cluster with a kubeconfigSecretRef, started
// with the Secret's current kubeconfig, and none for a Cluster without. The Secret is not
// watched: it is read again every KubeconfigPollInterval, and a changed kubeconfig replaces the
// linker. A missing Secret or a bad kubeconfig stops the linker and is reported; nothing is
// deleted because of it.
func (r *Reconciler) linkRemoteNodes(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	ref := c.Spec.KubeconfigSecretRef
	if ref == nil {
		if r.linkers.Stop(key) {
			r.Recorder.Eventf(c, nil, "Normal", EventLinkerStopped, "LinkRemoteNodes", "spec.kubeconfigSecretRef was removed: stopped linking Machines to the workload cluster's Nodes")
		}
		return ctrl.Result{}, nil
	}
	poll := ctrl.Result{RequeueAfter: r.KubeconfigPollInterval}
	cfg, fingerprint, reason, msg, err := r.readKubeconfig(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if reason != "" {
		s.remote = &remoteState{reason: reason, message: msg}
		if r.linkers.Stop(key) {
			r.Recorder.Eventf(c, nil, "Warning", EventLinkerStopped, "LinkRemoteNodes", "stopped linking Machines to the workload cluster's Nodes: %s", msg)
		}
		return poll, nil
	}
	s.remote = &remoteState{host: cfg.Host}
	before, had := r.linkers.Status(key)
	st, err := r.linkers.Ensure(key, cfg, fingerprint)
	if errors.Is(err, remotelink.ErrNotStarted) {
		return ctrl.Result{RequeueAfter: linkerStartRetry}, nil
	}
	if err != nil {
		s.remote.reason, s.remote.message = ReasonLinkerFailed, err.Error()
		return ctrl.Result{}, err
	}
	s.remote.linker = &st
	switch {
	case !had:
		r.Recorder.Eventf(c, nil, "Normal", EventLinkerStarted, "LinkRemoteNodes", "linking Machines to the Nodes of %s", cfg.Host)
	case before.Fingerprint != fingerprint:
		r.Recorder.Eventf(c, nil, "Normal", EventLinkerStarted, "LinkRemoteNodes", "the kubeconfig changed: linking Machines to the Nodes of %s with it", cfg.Host)
	}
	if !st.Running {
		return ctrl.Result{RequeueAfter: min(r.KubeconfigPollInterval, r.RemoteLink.RestartDelay)}, nil
	}
	return poll, nil
}

// observeRemote reports a running linker's view without starting or replacing one (deletion
// keeps the linker it has until the machines are gone).
func (r *Reconciler) observeRemote(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.cluster.Spec.KubeconfigSecretRef == nil {
		return ctrl.Result{}, true, nil
	}
	if st, ok := r.linkers.Status(types.NamespacedName{Namespace: s.cluster.Namespace, Name: s.cluster.Name}); ok {
		s.remote = &remoteState{linker: &st, host: st.Host}
	}
	return ctrl.Result{}, true, nil
}

// stopRemoteLinker stops the Cluster's linker once its machines are gone.
func (r *Reconciler) stopRemoteLinker(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	if r.linkers.Stop(types.NamespacedName{Namespace: s.cluster.Namespace, Name: s.cluster.Name}) {
		r.Recorder.Eventf(s.cluster, nil, "Normal", EventLinkerStopped, "Delete", "every machine is gone: stopped linking to the workload cluster's Nodes")
	}
	return ctrl.Result{}, true, nil
}

// readKubeconfig returns the workload cluster's client configuration from the Cluster's Secret
// and a fingerprint of the kubeconfig, or a WorkloadAPIReachable reason and message saying what
// the user must fix. err is a transient failure.
func (r *Reconciler) readKubeconfig(ctx context.Context, s *scope) (cfg *rest.Config, fingerprint, reason, msg string, err error) {
	kc, problem, err := kubeconfig.Read(ctx, r.APIReader, s.cluster, "cluster-manager", r.WorkloadQPS, r.WorkloadBurst)
	switch {
	case err != nil:
		return nil, "", "", "", err
	case problem != nil && problem.Kind == kubeconfig.SecretNotFound:
		return nil, "", ReasonKubeconfigSecretNotFound, problem.Message, nil
	case problem != nil:
		return nil, "", ReasonKubeconfigInvalid, problem.Message, nil
	}
	return kc.Rest, kc.Fingerprint, "", "", nil
}
