package uptodate

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Reasons of the UpToDate condition. A Machine that is not up to date gets the reason of the first
// cause found, in this order, and a message naming every cause.
const (
	// ReasonUpToDate: nothing differs.
	ReasonUpToDate = "UpToDate"
	// ReasonTemplateChanged: a field that needs a new Machine differs from the template.
	ReasonTemplateChanged = "TemplateChanged"
	// ReasonMachineClassChanged: the MachineClass was edited since the instance was created.
	ReasonMachineClassChanged = "MachineClassChanged"
	// ReasonRolloutAfter: the instance was created before the deployment's spec.rollout.after,
	// which has passed.
	ReasonRolloutAfter = "RolloutAfter"
	// ReasonMaxAgeExceeded: the instance is older than the deployment's
	// spec.rollout.machineMaxAgeSeconds.
	ReasonMaxAgeExceeded = "MaxAgeExceeded"
)

// Bounds of the UpToDate message: at most maxShown changes of one cause are listed, and the whole
// message is at most maxMessage runes.
const (
	maxShown   = 5
	maxMessage = 1024
)

// Desired is what a Machine should be: the template of its MachineDeployment (or of its MachineSet
// when no deployment owns the set), and the deployment's rollout settings.
type Desired struct {
	// Owner names the object whose template it is, for messages: "MachineDeployment web". Empty
	// for a Machine no set owns.
	Owner string
	// Template is the template the Machine should match; nil for a Machine no set owns.
	Template *v1beta1.MachineTemplateSpec
	// Rollout is the deployment's spec.rollout; nil outside a deployment.
	Rollout *v1beta1.MachineDeploymentRollout
	// Deployment says the template is a MachineDeployment's, which replaces Machines that are not
	// up to date (a MachineSet alone never replaces a Machine).
	Deployment bool
	// InPlace is the deployment's spec.rollout.inPlace (InPlaceNever outside a deployment).
	InPlace v1beta1.InPlacePolicy
}

// ForDeployment is what the Machines of md should be.
func ForDeployment(md *v1beta1.MachineDeployment) Desired {
	return Desired{Owner: "MachineDeployment " + md.Name, Template: &md.Spec.Template, Rollout: md.Spec.Rollout, Deployment: true, InPlace: md.InPlace()}
}

// ForSet is what the Machines of a MachineSet no deployment owns should be.
func ForSet(set *v1beta1.MachineSet) Desired {
	return Desired{Owner: "MachineSet " + set.Name, Template: &set.Spec.Template, InPlace: v1beta1.InPlaceNever}
}

// Cause is one reason a Machine is not up to date.
type Cause struct {
	// Reason is one of the UpToDate reasons.
	Reason string
	// Message says what differs, for a human.
	Message string
	// Changes are the fields that differ (template and class causes).
	Changes []Change
	// Replaces says whether its MachineDeployment replaces the Machine for this cause: false for a
	// MachineClass change under machineClassChanges Ignore, and for any cause of a Machine no
	// deployment owns.
	Replaces bool
}

// Decision is what a Machine needs: nothing, fields updated in place, or a new Machine.
type Decision struct {
	// Causes say why the Machine is not up to date; none when it is.
	Causes []Cause
	// InPlace are the in-place fields that differ; its set updates them without a new Machine.
	InPlace []Change
	// Due is when the Machine becomes due for replacement by spec.rollout, if it is not yet and
	// will be (zero otherwise): the time to look again.
	Due time.Time
}

// UpToDate reports whether no cause was found.
func (d Decision) UpToDate() bool { return len(d.Causes) == 0 }

// Replace reports whether the Machine's deployment replaces it, and says why.
func (d Decision) Replace() (bool, string) {
	var why []string
	for _, c := range d.Causes {
		if c.Replaces {
			why = append(why, c.Message)
		}
	}
	return len(why) > 0, strings.Join(why, "; ")
}

// Decide is the one policy of what a change means for a Machine, used by the machine controller
// (the UpToDate condition), the MachineDeployment controller (which Machines of its current set it
// replaces) and kubectl machine rollout plan. m is the Machine, class the MachineClass its spec
// names as it is now (nil for an inline providerSpec or when it cannot be read), d what it should
// be, now the time of the decision.
//
// A field outside InPlaceFields that differs from d.Template is a TemplateChanged cause (its
// deployment has another MachineSet for that template). A class whose spec hash differs from the
// one recorded when the instance was created is a MachineClassChanged cause. spec.rollout.after
// that has passed, with the instance created before it, and an instance older than
// machineMaxAgeSeconds are causes too. In-place fields that differ are listed in InPlace and are
// no cause: the Machine's set brings them in line.
func Decide(m *v1beta1.Machine, class *v1beta1.MachineClass, d Desired, now time.Time) Decision {
	return NewDecider(d, class).Decide(m, now)
}

// Decider applies Decide's policy to many Machines of one Desired and MachineClass, working out
// once what depends only on those two: a MachineDeployment decides every Machine of its current
// set on each reconcile.
type Decider struct {
	d     Desired
	class *v1beta1.MachineClass
	// want is d.Template's spec without its in-place fields (nil without a template).
	want *v1beta1.MachineSpec
	// classHash is the hash of class's spec ("" without a class).
	classHash string
	// wantHash is d.Template's hash when d allows in-place updates ("" otherwise).
	wantHash string
}

// updatedInPlace reports whether m's template change is left to an in-place update rather than a
// replacement: always under spec.rollout.inPlace Only (which never replaces for a template
// change), under Prefer when m's provider plans to apply every change of the template in place.
func (x *Decider) updatedInPlace(m *v1beta1.Machine) bool {
	switch x.d.InPlace {
	case v1beta1.InPlaceOnly:
		return true
	case v1beta1.InPlacePrefer:
		rec := m.Status.InPlaceUpdate
		return rec != nil && rec.TemplateHash == x.wantHash && len(rec.Unsupported) == 0
	}
	return false
}

// NewDecider returns a Decider for Machines that should be d, whose spec names class as it is now
// (nil for an inline providerSpec or when it cannot be read).
func NewDecider(d Desired, class *v1beta1.MachineClass) *Decider {
	x := &Decider{d: d, class: class}
	if d.Template != nil {
		want := outsideInPlace(&d.Template.Spec)
		x.want = &want
		if d.InPlace == v1beta1.InPlacePrefer {
			x.wantHash = TemplateHash(d.Template)
		}
	}
	if class != nil {
		x.classHash = classSpecHash(class)
	}
	return x
}

// Decide is Decide for m, at now.
func (x *Decider) Decide(m *v1beta1.Machine, now time.Time) Decision {
	dec := x.Replacement(m, now)
	if x.d.Template != nil {
		after := *m
		if ApplyInPlace(setTemplate(x.d, m), &after) {
			dec.InPlace = diff("", inPlaceView(m), inPlaceView(&after))
		}
	}
	return dec
}

// Replacement is Decide without the in-place differences (Decision.InPlace stays empty): the
// causes and when the Machine becomes due, which is all that choosing Machines to replace needs.
func (x *Decider) Replacement(m *v1beta1.Machine, now time.Time) Decision {
	var dec Decision
	d, class := x.d, x.class
	inDeployment := d.Deployment
	if x.want != nil {
		have := outsideInPlace(&m.Spec)
		var changes []Change
		// The same bytes are the same spec; only a difference needs the (costlier) canonical diff.
		if !equality.Semantic.DeepEqual(&have, x.want) {
			want := *x.want
			changes = diff("spec", canonical(&have), canonical(&want))
		}
		if len(changes) > 0 {
			c := Cause{Reason: ReasonTemplateChanged, Changes: changes, Replaces: inDeployment && !x.updatedInPlace(m),
				Message: fmt.Sprintf("differs from the template of %s: %s", d.Owner, list(changes))}
			if inDeployment && !c.Replaces {
				c.Message += fmt.Sprintf(" (updated in place: spec.rollout.inPlace is %s)", d.InPlace)
			}
			dec.Causes = append(dec.Causes, c)
		}
	}
	if ref := m.Spec.ProviderSpec.MachineClass; ref != nil && class != nil && class.Name == ref.Name &&
		m.Status.MachineClass != nil && m.Status.MachineClass.Name == class.Name && m.Status.MachineClass.SpecHash != x.classHash {
		if paths := ClassChanges(m.Status.MachineClass, class); len(paths) > 0 {
			changes := make([]Change, len(paths))
			for i, p := range paths {
				changes[i] = Change{Path: p}
			}
			c := Cause{Reason: ReasonMachineClassChanged, Changes: changes,
				Replaces: inDeployment && (d.Rollout == nil || d.Rollout.MachineClassChanges != v1beta1.MachineClassChangeIgnore),
				Message:  fmt.Sprintf("MachineClass %s changed since the instance was created: %s", class.Name, list(changes))}
			if inDeployment && !c.Replaces {
				c.Message += " (not replaced: spec.rollout.machineClassChanges is Ignore)"
			}
			dec.Causes = append(dec.Causes, c)
		}
	}
	if r, provisioned := d.Rollout, m.Status.ProvisionedTime; r != nil && provisioned != nil {
		if r.After != nil && provisioned.Before(r.After) {
			if !now.Before(r.After.Time) {
				dec.Causes = append(dec.Causes, Cause{Reason: ReasonRolloutAfter, Replaces: true,
					Message: fmt.Sprintf("instance created at %s, before spec.rollout.after (%s) of %s",
						provisioned.UTC().Format(time.RFC3339), r.After.UTC().Format(time.RFC3339), d.Owner)})
			} else {
				dec.Due = r.After.Time
			}
		}
		if r.MachineMaxAgeSeconds != nil {
			maxAge := time.Duration(*r.MachineMaxAgeSeconds) * time.Second
			expiry := provisioned.Add(maxAge)
			if !now.Before(expiry) {
				dec.Causes = append(dec.Causes, Cause{Reason: ReasonMaxAgeExceeded, Replaces: true,
					Message: fmt.Sprintf("instance is %s old, older than spec.rollout.machineMaxAgeSeconds (%d) of %s",
						now.Sub(provisioned.Time).Truncate(time.Second), *r.MachineMaxAgeSeconds, d.Owner)})
			} else if dec.Due.IsZero() || expiry.Before(dec.Due) {
				dec.Due = expiry
			}
		}
	}
	return dec
}

// setTemplate is the template m's set applies to it: d's, plus, for a deployment's set, the
// set-name and deployment-name labels the deployment adds to its sets' templates (as m has them).
func setTemplate(d Desired, m *v1beta1.Machine) *v1beta1.MachineTemplateSpec {
	if !d.Deployment {
		return d.Template
	}
	t := d.Template.DeepCopy()
	for _, k := range []string{v1beta1.SetNameLabel, v1beta1.DeploymentNameLabel} {
		if v, ok := m.Labels[k]; ok {
			if t.Metadata.Labels == nil {
				t.Metadata.Labels = map[string]string{}
			}
			t.Metadata.Labels[k] = v
		}
	}
	return t
}

// inPlaceView is what ApplyInPlace may change of a Machine, for listing the differences: labels,
// annotations (without the set's bookkeeping ones) and the in-place fields of the spec.
func inPlaceView(m *v1beta1.Machine) map[string]any {
	ann := withoutKeys(m.Annotations, TemplateLabelsAnnotation, TemplateAnnotationsAnnotation, TemplateHooksAnnotation)
	return map[string]any{
		"metadata": map[string]any{"labels": m.Labels, "annotations": ann},
		"spec": map[string]any{
			"metadata": m.Spec.Metadata, "taints": m.Spec.Taints,
			"deletion": m.Spec.Deletion, "lifecycleHooks": m.Spec.LifecycleHooks,
		},
	}
}

// list renders at most maxShown changes, and how many more there are.
func list(changes []Change) string {
	shown := make([]string, 0, min(len(changes), maxShown))
	for i, c := range changes {
		if i == maxShown {
			shown = append(shown, fmt.Sprintf("and %d more", len(changes)-maxShown))
			break
		}
		shown = append(shown, c.String())
	}
	return strings.Join(shown, ", ")
}

// Condition is the UpToDate condition of a Machine for dec (observedGeneration gen): True with
// reason UpToDate, or False with the reason of the first cause and a message naming them all,
// at most maxMessage runes long.
func Condition(dec Decision, d Desired, gen int64) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.UpToDateCondition, ObservedGeneration: gen}
	if dec.UpToDate() {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonUpToDate
		c.Message = "matches what it was created from"
		if d.Owner != "" {
			c.Message = "matches the template of " + d.Owner
		}
		return c
	}
	msgs := make([]string, len(dec.Causes))
	for i, cause := range dec.Causes {
		msgs[i] = cause.Message
	}
	c.Status, c.Reason = metav1.ConditionFalse, dec.Causes[0].Reason
	c.Message = shorten(strings.Join(msgs, "; "), maxMessage)
	return c
}
