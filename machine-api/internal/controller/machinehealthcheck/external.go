package machinehealthcheck

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// ReasonRemediationForbidden (False, on Machines): the manager may not read the template or
// manage the requests; the message says which permission is missing.
const ReasonRemediationForbidden = "RemediationForbidden"

// requestKind is the kind of the requests made from a template of kind templateKind.
func requestKind(templateKind string) (string, bool) {
	kind, ok := strings.CutSuffix(templateKind, "Template")
	return kind, ok && kind != ""
}

// requestGVK is the kind of request a health check creates, from its spec alone.
func requestGVK(ref *v1beta1.RemediationTemplateReference) (schema.GroupVersionKind, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("spec.remediationTemplate.apiVersion %q: %w", ref.APIVersion, err)
	}
	kind, ok := requestKind(ref.Kind)
	if !ok {
		return schema.GroupVersionKind{}, fmt.Errorf("spec.remediationTemplate.kind %q does not end in Template", ref.Kind)
	}
	return gv.WithKind(kind), nil
}

// loadRemediation, for external remediation only, lists the live requests (which count as
// remediations in flight) and reads the template. A template that cannot be used blocks new
// remediations with a reason on each Machine, and is read again after templateRetry.
func (r *Reconciler) loadRemediation(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if !s.external {
		return ctrl.Result{}, true, nil
	}
	ref := s.mhc.Spec.RemediationTemplate
	gvk, err := requestGVK(ref)
	if err != nil {
		// Not an error of the reconcile: the template is unusable until the user fixes it, which
		// the Machines' conditions say.
		s.templateProblem, s.templateWhy = ReasonRemediationTemplateInvalid, err.Error()
		return ctrl.Result{}, true, nil //nolint:nilerr // reported in conditions, see above
	}
	live, err := r.liveRequests(ctx, s.mhc, gvk)
	if err != nil {
		if reason, why, ok := unusable(err, "list "+gvk.Kind); ok {
			s.templateProblem, s.templateWhy = reason, why
			return ctrl.Result{}, true, nil
		}
		return ctrl.Result{}, false, err
	}
	for i := range s.targets {
		m := s.targets[i].machine
		s.targets[i].request = live[m.Name] == m.UID
	}

	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(gvk.GroupVersion().WithKind(ref.Kind))
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.mhc.Namespace, Name: ref.Name}, tmpl)
	if err != nil {
		if reason, why, ok := unusable(err, "get "+ref.Kind+" "+ref.Name); ok {
			s.templateProblem, s.templateWhy = reason, why
			return ctrl.Result{}, true, nil
		}
		return ctrl.Result{}, false, fmt.Errorf("reading remediation template %s %s/%s: %w", ref.Kind, s.mhc.Namespace, ref.Name, err)
	}
	if _, found, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec"); !found {
		s.templateProblem = ReasonRemediationTemplateInvalid
		s.templateWhy = fmt.Sprintf("%s %s has no spec.template.spec to make a %s from", ref.Kind, ref.Name, gvk.Kind)
		return ctrl.Result{}, true, nil
	}
	s.template = tmpl
	return ctrl.Result{}, true, nil
}

// unusable turns the errors a user fixes (a missing kind or object, a missing permission) into a
// HealthCheckSucceeded reason and message; other errors are transient.
func unusable(err error, doing string) (reason, why string, ok bool) {
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return ReasonRemediationTemplateNotFound, fmt.Sprintf("cannot %s: %v", doing, err), true
	case apierrors.IsForbidden(err):
		return ReasonRemediationForbidden, fmt.Sprintf("cannot %s: %v; grant the manager access to the remediation kinds", doing, err), true
	}
	return "", "", false
}

// liveRequests returns the requests in the check's namespace that are not being deleted and are
// owned by the Machine they are named after, as that Machine's UID by name. Only metadata is read.
func (r *Reconciler) liveRequests(ctx context.Context, mhc *v1beta1.MachineHealthCheck, gvk schema.GroupVersionKind) (map[string]types.UID, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(mhc.Namespace)); err != nil {
		return nil, fmt.Errorf("listing %s requests of health check %s: %w", gvk.Kind, client.ObjectKeyFromObject(mhc), err)
	}
	live := make(map[string]types.UID, len(list.Items))
	for i := range list.Items {
		req := &list.Items[i]
		if !req.DeletionTimestamp.IsZero() {
			continue
		}
		for _, o := range req.OwnerReferences {
			if o.Kind == "Machine" && o.Name == req.Name {
				live[req.Name] = o.UID
			}
		}
	}
	return live, nil
}

// newRequest makes the external remediation request for m from tmpl: kind minus "Template",
// named after m, owned by m (so it goes with it), with the template's spec.template.spec as spec
// and its spec.template.metadata labels and annotations.
func newRequest(tmpl *unstructured.Unstructured, m *v1beta1.Machine) (*unstructured.Unstructured, error) {
	kind, ok := requestKind(tmpl.GetKind())
	if !ok {
		return nil, fmt.Errorf("template kind %q does not end in Template", tmpl.GetKind())
	}
	spec, _, err := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec")
	if err != nil {
		return nil, fmt.Errorf("reading spec.template.spec of %s %s: %w", tmpl.GetKind(), tmpl.GetName(), err)
	}
	labels, _, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "template", "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "template", "metadata", "annotations")
	req := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	req.SetAPIVersion(tmpl.GetAPIVersion())
	req.SetKind(kind)
	req.SetNamespace(m.Namespace)
	req.SetName(m.Name)
	if len(labels) > 0 {
		req.SetLabels(labels)
	}
	if len(annotations) > 0 {
		req.SetAnnotations(annotations)
	}
	req.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1beta1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID,
	}})
	return req, nil
}
