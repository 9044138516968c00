// Package uptodate decides what a change means for a Machine: which of its fields its set brings
// in line in place, and whether it needs a new Machine and why. It is the one policy the machine
// controller (the UpToDate condition), the MachineSet controller (in-place propagation), the
// MachineDeployment controller (template hash, in-place propagation, which Machines of its current
// set it replaces) and kubectl machine rollout plan share.
//
// # In-place fields
//
// InPlaceFields lists the template fields that tell the controllers how to treat a Machine rather
// than what to provision: the Machine's labels and annotations, its Node's metadata and taints,
// spec.deletion and spec.lifecycleHooks. TemplateHash leaves them out (a change of only these
// creates no MachineSet), CopyInPlace copies them from a deployment's template to its sets', and
// ApplyInPlace from a set's template to its Machines: spec.deletion also to Machines being deleted,
// hooks only to the others (a hook cannot be added to a deleting Machine, see
// config/admission), and never removing the labels, annotations or hooks others put there.
//
// # Not up to date
//
// Decide compares a Machine with what it should be (Desired: its deployment's template and
// spec.rollout, or its standalone set's template) and its MachineClass. It finds four causes,
// each a reason of the UpToDate condition: TemplateChanged (a field outside the in-place ones
// differs; the change names each path, old → new), MachineClassChanged (the class was edited
// since the instance was created; the paths named from the hashes recorded in
// status.machineClass, see RecordClass and ClassChanges), RolloutAfter and MaxAgeExceeded (from
// status.provisionedTime, the instance's creation). Condition renders the decision, with a
// message of bounded length.
//
// # Checking many Machines
//
// A MachineSet compares each of its Machines with its template, and a MachineDeployment decides
// each Machine of its current set, on every reconcile. Checked remembers, per owner, which Machines
// such a check found in line and at which resourceVersion, under a key naming everything else the
// check read (the owner's generation, the MachineClass's version): a Machine unchanged since, under
// the same key, is not checked again. What needed work is never remembered.
//
// Everything here but Checked is pure: no API calls, time passed in. Start reading at Decide.
package uptodate
