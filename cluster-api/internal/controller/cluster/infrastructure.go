package cluster

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/cluster-api/provider"
)

// reconcileInfrastructure asks the cluster provider to create or update the infrastructure and
// records its answer in s.infra. An invalid configuration is terminal: it is reported and nothing
// is retried until the Cluster changes.
func (r *Reconciler) reconcileInfrastructure(ctx context.Context, s *scope) (ctrl.Result, error) {
	res, err := r.callProvider(s, r.Provider.Reconcile(ctx, s.cluster.DeepCopy()))
	if err != nil {
		return res, fmt.Errorf("reconciling the infrastructure of cluster %s: %w", s.cluster.Name, err)
	}
	return res, nil
}

// deleteInfrastructure asks the cluster provider to delete the infrastructure; the pipeline goes
// on once the provider reports it gone.
func (r *Reconciler) deleteInfrastructure(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	s.deletion = &deletionStep{reason: ReasonDeletingInfrastructure, message: "deleting the cluster's infrastructure"}
	res, err := r.callProvider(s, r.Provider.Delete(ctx, s.cluster.DeepCopy()))
	if err != nil {
		return res, false, fmt.Errorf("deleting the infrastructure of cluster %s: %w", s.cluster.Name, err)
	}
	if s.infra.waiting != "" {
		s.deletion.message = s.infra.waiting
	}
	return res, s.infra.ready, nil
}

// callProvider records a provider call's outcome in s.infra and returns how to requeue: after the
// provider's delay when it is waiting, with the error when it failed transiently, not at all on an
// invalid configuration (a TerminalError: the next change of the Cluster brings it back).
func (r *Reconciler) callProvider(s *scope, err error) (ctrl.Result, error) {
	s.infra.called = true
	if wait, ok := provider.AsRequeueAfter(err); ok {
		s.infra.waiting = wait.Reason
		return ctrl.Result{RequeueAfter: wait.After}, nil
	}
	switch {
	case err == nil:
		s.infra.ready = true
		return ctrl.Result{}, nil
	case provider.IsInvalidConfiguration(err):
		s.infra.invalid = err.Error()
		return ctrl.Result{}, reconcile.TerminalError(err)
	default:
		s.infra.err = err
		return ctrl.Result{}, err
	}
}
