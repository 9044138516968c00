package machinedeployment

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/uptodate"
)

// nameTakenRetry is how often a deployment whose new MachineSet name is taken by another object
// looks again (that object is not watched).
const nameTakenRetry = 30 * time.Second

// listSets finds the deployment's MachineSets through the controller index and sorts them into the
// new set (its template, metadata aside, is the deployment's) and the old ones, oldest first.
func (r *Reconciler) listSets(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	list := &v1beta1.MachineSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.md.Namespace), client.MatchingFields{index.MachineSetByDeployment: string(s.md.UID)}); err != nil {
		return reconcile.Result{}, false, fmt.Errorf("listing the MachineSets of MachineDeployment %s/%s: %w", s.md.Namespace, s.md.Name, err)
	}
	s.hash = uptodate.TemplateHash(&s.md.Spec.Template)
	for i := range list.Items {
		set := &list.Items[i]
		if !set.DeletionTimestamp.IsZero() {
			s.deleting++
			continue
		}
		s.sets = append(s.sets, set)
	}
	slices.SortStableFunc(s.sets, func(a, b *v1beta1.MachineSet) int { return byCreation(stateOf(a), stateOf(b)) })
	s.newSet = currentSet(s.md, s.hash, s.sets)
	for _, set := range s.sets {
		if set != s.newSet {
			s.oldSets = append(s.oldSets, set)
		}
	}
	return reconcile.Result{}, true, nil
}

// currentSet returns the new set among sets (not deleting): the one whose template has the
// deployment's hash. When several have it (sets named by an earlier hash, which still counted
// deletion settings and hooks, can share one), the set named for the hash wins, else the highest
// revision, the one holding the Machines. Nil when none has it: the deployment creates one.
func currentSet(md *v1beta1.MachineDeployment, hash string, sets []*v1beta1.MachineSet) *v1beta1.MachineSet {
	var found *v1beta1.MachineSet
	for _, set := range sets {
		if uptodate.TemplateHash(&set.Spec.Template) != hash {
			continue
		}
		switch {
		case found == nil, set.Name == setName(md, hash):
			found = set
		case found.Name != setName(md, hash) && revision(set.Annotations) > revision(found.Annotations):
			found = set
		}
	}
	return found
}

func setName(md *v1beta1.MachineDeployment, hash string) string {
	return md.Name + "-" + hash
}

// createNewSet creates the deployment's MachineSet for its current template with replicas, at
// revision (highest old revision + 1). It carries the MachineSet finalizer already.
func (r *Reconciler) createNewSet(ctx context.Context, s *scope, replicas int32) (reconcile.Result, error) {
	md := s.md
	name := setName(md, s.hash)
	surge, _ := s.fenceposts()
	rev := maxRevision(s.oldSets) + 1
	if s.byName(name) != nil {
		// A set updated in place keeps the name of the template it had: a new set for that
		// template again takes the revision in its name.
		name = fmt.Sprintf("%s-%d", name, rev)
	}
	set := &v1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: md.Namespace,
			Name:      name,
			Labels:    map[string]string{v1beta1.DeploymentNameLabel: md.Name},
			Annotations: map[string]string{
				v1beta1.RevisionAnnotation: strconv.FormatInt(rev, 10),
				DesiredReplicasAnnotation:  strconv.Itoa(int(s.replicas())),
				MaxReplicasAnnotation:      strconv.Itoa(int(s.replicas() + surge)),
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(md, v1beta1.GroupVersion.WithKind("MachineDeployment"))},
			Finalizers:      []string{v1beta1.MachineSetFinalizer},
		},
		Spec: v1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: setSelector(md, name),
			Template: *md.Spec.Template.DeepCopy(),
		},
	}
	applyDeploymentSpec(md, set, false)
	withAutoscalerKeys(md, set)
	err := r.Client.Create(ctx, set)
	switch {
	case apierrors.IsAlreadyExists(err):
		s.blocked = fmt.Sprintf("MachineSet %s exists but does not belong to this MachineDeployment (or is being deleted): delete or rename it", name)
		return reconcile.Result{RequeueAfter: nameTakenRetry}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("creating MachineSet %s for MachineDeployment %s: %w", name, md.Name, err)
	}
	s.createdSet = true
	r.Recorder.Eventf(md, set, "Normal", EventSetCreated, "Rollout", "created MachineSet %s (revision %d) with %d replicas", name, rev, replicas)
	return reconcile.Result{}, r.recordRevision(ctx, s, strconv.FormatInt(rev, 10))
}

// setSelector is the deployment's selector plus the set's own set-name label, so that two sets of
// a deployment never select the same Machines. The label goes in matchLabels, or in
// matchExpressions when matchLabels is already at its 16 entries.
func setSelector(md *v1beta1.MachineDeployment, name string) v1beta1.LabelSelector {
	sel := *md.Spec.Selector.DeepCopy()
	if len(sel.MatchLabels) >= 16 {
		sel.MatchExpressions = append(sel.MatchExpressions, v1beta1.LabelSelectorRequirement{
			Key: v1beta1.SetNameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{name},
		})
		return sel
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[v1beta1.SetNameLabel] = name
	return sel
}

// applyDeploymentSpec sets what a MachineSet takes from its deployment and may change in place:
// template metadata (plus the set-name and deployment-name labels), the template's in-place fields
// (uptodate.CopyInPlace: node metadata, taints, deletion settings, lifecycle hooks), deletePolicy,
// minReadySeconds, machineLaunch and disruption. An outdated set (an old set of a rollout in progress) also gets the
// outdated-revision taint (v1beta1.OutdatedRevisionTaintKey, PreferNoSchedule), which its Machines
// carry to their Nodes. It reports whether anything changed.
func applyDeploymentSpec(md *v1beta1.MachineDeployment, set *v1beta1.MachineSet, outdated bool) bool {
	before := set.Spec.DeepCopy()
	t := &set.Spec.Template
	t.Metadata.Labels = maps.Clone(md.Spec.Template.Metadata.Labels)
	if t.Metadata.Labels == nil {
		t.Metadata.Labels = map[string]string{}
	}
	t.Metadata.Labels[v1beta1.SetNameLabel] = set.Name
	t.Metadata.Labels[v1beta1.DeploymentNameLabel] = md.Name
	t.Metadata.Annotations = maps.Clone(md.Spec.Template.Metadata.Annotations)
	uptodate.CopyInPlace(&t.Spec, &md.Spec.Template.Spec)
	if outdated && !slices.ContainsFunc(t.Spec.Taints, func(tt v1beta1.MachineTaint) bool { return tt.Key == v1beta1.OutdatedRevisionTaintKey }) {
		t.Spec.Taints = append(t.Spec.Taints, v1beta1.MachineTaint{
			Key: v1beta1.OutdatedRevisionTaintKey, Effect: corev1.TaintEffectPreferNoSchedule, Propagation: v1beta1.TaintPropagationAlways,
		})
	}
	set.Spec.DeletePolicy = v1beta1.RandomDeletePolicy
	if ru := md.Spec.Strategy.RollingUpdate; ru != nil && ru.DeletePolicy != "" {
		set.Spec.DeletePolicy = ru.DeletePolicy
	}
	set.Spec.MinReadySeconds = ptr.Deref(md.Spec.MinReadySeconds, 0)
	set.Spec.MachineLaunch = md.Spec.MachineLaunch.DeepCopy()
	set.Spec.Disruption = md.Spec.Disruption.DeepCopy()
	return !equality.Semantic.DeepEqual(before, &set.Spec)
}

// syncMetadata brings every set's in-place fields (see applyDeploymentSpec) in line with the
// deployment, so that a change of labels, annotations, node metadata, taints, deletion settings or
// lifecycle hooks reaches existing Machines without a rollout, and marks the old sets of a rollout
// in progress outdated (their Nodes get the outdated-revision taint; the current set never has
// it, so undoing a rollout removes it). Paused deployments keep their sets as they are.
func (r *Reconciler) syncMetadata(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	if s.md.Spec.Paused {
		return reconcile.Result{}, true, nil
	}
	var updated []string
	for _, set := range s.sets {
		changed := set.DeepCopy()
		if !applyDeploymentSpec(s.md, changed, s.newSet != nil && set != s.newSet) {
			continue
		}
		if err := r.patchSet(ctx, set, changed); err != nil {
			return reconcile.Result{}, false, fmt.Errorf("updating the in-place fields of MachineSet %s: %w", set.Name, err)
		}
		updated = append(updated, set.Name)
	}
	if len(updated) > 0 {
		r.Recorder.Eventf(s.md, nil, "Normal", EventMetadataUpdated, "UpdateMetadata",
			"updated the in-place fields of MachineSets %v; their Machines and Nodes follow without a rollout", updated)
	}
	return reconcile.Result{}, true, nil
}

// syncRevision makes the new set's revision the highest (a rollback brings an old set back as the
// newest revision) and records it on the deployment.
func (r *Reconciler) syncRevision(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	if s.md.Spec.Paused || s.newSet == nil {
		return reconcile.Result{}, true, nil
	}
	if top := maxRevision(s.oldSets); revision(s.newSet.Annotations) <= top {
		changed := s.newSet.DeepCopy()
		changed.Annotations = maps.Clone(changed.Annotations)
		if changed.Annotations == nil {
			changed.Annotations = map[string]string{}
		}
		changed.Annotations[v1beta1.RevisionAnnotation] = strconv.FormatInt(top+1, 10)
		withAutoscalerKeys(s.md, changed)
		if err := r.patchSet(ctx, s.newSet, changed); err != nil {
			return reconcile.Result{}, false, fmt.Errorf("updating the revision of MachineSet %s: %w", s.newSet.Name, err)
		}
	}
	if err := r.recordRevision(ctx, s, s.newSet.Annotations[v1beta1.RevisionAnnotation]); err != nil {
		return reconcile.Result{}, false, err
	}
	return reconcile.Result{}, true, nil
}

// recordRevision sets the deployment's revision annotation (the old sets of an OnDelete rollout
// read it to know they are old).
func (r *Reconciler) recordRevision(ctx context.Context, s *scope, rev string) error {
	if s.md.Annotations[v1beta1.RevisionAnnotation] == rev {
		return nil
	}
	before := s.md.DeepCopy()
	if s.md.Annotations == nil {
		s.md.Annotations = map[string]string{}
	}
	s.md.Annotations[v1beta1.RevisionAnnotation] = rev
	if err := r.Client.Patch(ctx, s.md, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("recording revision %s on MachineDeployment %s: %w", rev, s.md.Name, err)
	}
	return nil
}

// scaleSet sets a set's replicas and records the deployment's size on it (desired and max
// replicas annotations), in one write; nothing is written when both are already right.
func (r *Reconciler) scaleSet(ctx context.Context, s *scope, set *v1beta1.MachineSet, replicas int32) error {
	surge, _ := s.fenceposts()
	changed := set.DeepCopy()
	changed.Spec.Replicas = ptr.To(replicas)
	changed.Annotations = maps.Clone(changed.Annotations)
	if changed.Annotations == nil {
		changed.Annotations = map[string]string{}
	}
	changed.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(s.replicas()))
	changed.Annotations[MaxReplicasAnnotation] = strconv.Itoa(int(s.replicas() + surge))
	if equality.Semantic.DeepEqual(changed.Spec, set.Spec) && equality.Semantic.DeepEqual(changed.Annotations, set.Annotations) {
		return nil
	}
	from := ptr.Deref(set.Spec.Replicas, 1)
	if err := r.patchSet(ctx, set, changed); err != nil {
		return fmt.Errorf("scaling MachineSet %s to %d: %w", set.Name, replicas, err)
	}
	if from != replicas {
		s.scaled = true
		r.Recorder.Eventf(s.md, set, "Normal", EventScaled, "Scale", "scaled MachineSet %s from %d to %d", set.Name, from, replicas)
	}
	return nil
}

// patchSet writes changed over set (the cached object) with optimistic locking, and updates set in
// place.
func (r *Reconciler) patchSet(ctx context.Context, set, changed *v1beta1.MachineSet) error {
	if err := r.Client.Patch(ctx, changed, client.MergeFromWithOptions(set, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	*set = *changed
	return nil
}

func maxRevision(sets []*v1beta1.MachineSet) int64 {
	var top int64
	for _, set := range sets {
		top = max(top, revision(set.Annotations))
	}
	return top
}
