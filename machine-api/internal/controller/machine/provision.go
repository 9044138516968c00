package machine

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// resolveClass fetches the MachineClass the Machine refers to, if any. A missing class is waited
// for (it may be created next), with a condition saying which class is missing.
func (r *Reconciler) resolveClass(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	ref := s.machine.Spec.ProviderSpec.MachineClass
	if ref == nil {
		return reconcile.Result{}, true, nil
	}
	class := &v1beta1.MachineClass{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.machine.Namespace, Name: ref.Name}, class)
	if apierrors.IsNotFound(err) {
		if s.machine.Spec.ProviderID != "" {
			return reconcile.Result{}, true, nil // already provisioned: the class is no longer needed to run
		}
		s.classMissing = fmt.Sprintf("MachineClass %s/%s does not exist: create it or change spec.providerSpec.machineClass.name", s.machine.Namespace, ref.Name)
		return reconcile.Result{RequeueAfter: classRetry}, false, nil
	}
	if err != nil {
		return reconcile.Result{}, false, fmt.Errorf("getting MachineClass %s/%s: %w", s.machine.Namespace, ref.Name, err)
	}
	s.class = class
	return reconcile.Result{}, true, nil
}

// provision makes sure the Machine's instance exists: it records Provisioning before the first
// Create, calls Exists before every Create, adopts an instance an earlier Create made, and turns an
// instance that vanished into a Failed machine.
func (r *Reconciler) provision(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m := s.machine
	if m.Status.Phase == v1beta1.MachinePhaseFailed {
		if !retryable(m) {
			return reconcile.Result{}, false, nil // terminal until the spec changes
		}
		s.startProvisioning = true
		return reconcile.Result{}, false, nil
	}
	if m.Spec.ProviderID == "" && m.Status.Phase != v1beta1.MachinePhaseProvisioning {
		// Persist Provisioning before calling Create: if this process dies after Create, the next
		// one sees Provisioning and looks for the instance first. The status is written now, the one
		// write a reconcile makes before its end, and Create follows in this reconcile once the API
		// server has stored it (not in the next one, which would wait behind every queued Machine).
		s.startProvisioning = true
		if err := r.writeStatus(ctx, s); err != nil || s.machine.Status.Phase != v1beta1.MachinePhaseProvisioning {
			return reconcile.Result{}, false, err // not stored (or the Machine is gone): no Create
		}
		m = s.machine
	}

	view, pctx := r.providerView(ctx, s)
	exists, err := r.callExists(pctx, view)
	if err != nil {
		s.providerErr = err
		return reconcile.Result{}, false, err
	}
	switch {
	case !exists && m.Spec.ProviderID != "":
		s.failure = &failure{reason: v1beta1.InstanceMissingFailure,
			message: fmt.Sprintf("instance %s no longer exists; it is not re-created: delete the machine (its set or health check replaces it)", m.Spec.ProviderID)}
		r.Recorder.Eventf(m, nil, "Warning", ReasonInstanceMissing, "Provision", s.failure.message)
		return reconcile.Result{}, false, nil
	case !exists:
		if err := r.callCreate(pctx, view); err != nil {
			return r.providerFailed(s, err)
		}
		// Routine progress: the InstanceProvisioned condition says it (see emitTransitionEvents).
		log.FromContext(ctx).V(1).Info("created the instance", "providerID", view.Spec.ProviderID)
	default:
		if err := r.callUpdate(pctx, view); err != nil {
			return r.providerFailed(s, err)
		}
		if m.Spec.ProviderID == "" {
			r.Recorder.Eventf(m, nil, "Normal", EventInstanceAdopted, "Provision", "found instance %s created by an earlier attempt", view.Spec.ProviderID)
		}
	}
	s.observed = view
	if m.Spec.ProviderID == "" {
		if view.Spec.ProviderID == "" {
			return reconcile.Result{}, false, reconcile.TerminalError(fmt.Errorf("the provider created the instance of machine %s but set no spec.providerID: fix the provider", client.ObjectKeyFromObject(m)))
		}
		if err := r.persistProviderID(ctx, m, view.Spec.ProviderID); err != nil {
			return reconcile.Result{}, false, err
		}
	}
	return reconcile.Result{}, true, nil
}

// retryable reports whether a Failed machine may be provisioned again: only an invalid
// configuration that the user has since changed.
func retryable(m *v1beta1.Machine) bool {
	return m.Spec.ProviderID == "" && m.Status.FailureReason != nil &&
		*m.Status.FailureReason == v1beta1.InvalidConfigurationFailure &&
		m.Status.ObservedGeneration != m.Generation
}

// providerView returns the copy of the Machine a provider is called with: the class's
// providerSpec resolved inline, and a context carrying the class.
func (r *Reconciler) providerView(ctx context.Context, s *scope) (*v1beta1.Machine, context.Context) {
	view := s.machine.DeepCopy()
	if s.class != nil {
		view.Spec.ProviderSpec = v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: s.class.Spec.ProviderSpec.Raw}}
		ctx = provider.WithMachineClass(ctx, s.class)
	}
	return view, ctx
}

// providerFailed sorts a provider error into terminal, wait and transient.
func (r *Reconciler) providerFailed(s *scope, err error) (reconcile.Result, bool, error) {
	if provider.IsInvalidConfiguration(err) {
		var ic *provider.InvalidConfigurationError
		errors.As(err, &ic)
		s.failure = &failure{reason: v1beta1.InvalidConfigurationFailure, message: ic.Message}
		r.Recorder.Eventf(s.machine, nil, "Warning", ReasonInvalidConfiguration, "Provision",
			"%s; fix spec.providerSpec (or its MachineClass): the machine is provisioned again when its spec changes", ic.Message)
		return reconcile.Result{}, false, reconcile.TerminalError(err)
	}
	if wait, ok := provider.AsRequeueAfter(err); ok {
		s.providerWait = wait.Error()
		return reconcile.Result{RequeueAfter: wait.After}, false, nil
	}
	s.providerErr = err
	return reconcile.Result{}, false, err
}

// persistProviderID writes spec.providerID, the only spec field the controller sets.
func (r *Reconciler) persistProviderID(ctx context.Context, m *v1beta1.Machine, id string) error {
	patched := m.DeepCopy()
	patched.Spec.ProviderID = id
	if err := r.Client.Patch(ctx, patched, client.MergeFrom(m)); err != nil {
		return fmt.Errorf("recording spec.providerID %s on machine %s: %w", id, client.ObjectKeyFromObject(m), err)
	}
	// The status patch that follows must be based on the object as it is now stored.
	m.ResourceVersion = patched.ResourceVersion
	m.Generation = patched.Generation
	m.Spec.ProviderID = id
	return nil
}

func (r *Reconciler) callExists(ctx context.Context, m *v1beta1.Machine) (bool, error) {
	start := r.Clock.Now()
	ok, err := r.Provider.Exists(ctx, m)
	observeProviderCall("Exists", start, r.Clock.Now(), err)
	return ok, err
}

func (r *Reconciler) callCreate(ctx context.Context, m *v1beta1.Machine) error {
	start := r.Clock.Now()
	err := r.Provider.Create(ctx, m)
	observeProviderCall("Create", start, r.Clock.Now(), err)
	return err
}

func (r *Reconciler) callUpdate(ctx context.Context, m *v1beta1.Machine) error {
	start := r.Clock.Now()
	err := r.Provider.Update(ctx, m)
	observeProviderCall("Update", start, r.Clock.Now(), err)
	return err
}

func (r *Reconciler) callDelete(ctx context.Context, m *v1beta1.Machine) error {
	start := r.Clock.Now()
	err := r.Provider.Delete(ctx, m)
	observeProviderCall("Delete", start, r.Clock.Now(), err)
	return err
}
