package sim

import (
	"context"
	"fmt"
	"maps"
	"time"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// Paths of the Machine the sim changes in place.
const (
	instanceTypePath = "spec.providerSpec.value.instanceType"
	tagsPath         = "spec.providerSpec.value.tags"
)

var _ provider.InPlaceUpdater = (*Provider)(nil)

// CanUpdateInPlace implements provider.InPlaceUpdater. It compares desired's providerSpec with
// what m's instance has now (not with m's spec): a different instance type is applied in place
// with a reboot (Disruptive), different tags without one. Every other change is the controller's
// to call unsupported.
func (p *Provider) CanUpdateInPlace(_ context.Context, m, desired *v1beta1.Machine) (provider.InPlacePlan, error) {
	spec, err := parseSpec(desired)
	if err != nil {
		return provider.InPlacePlan{}, err
	}
	inst, ok := p.store.get(m.UID)
	if !ok {
		return provider.InPlacePlan{}, fmt.Errorf("sim: machine %s/%s has no instance (UID %s) to update in place", m.Namespace, m.Name, m.UID)
	}
	plan := provider.InPlacePlan{}
	if inst.InstanceType != spec.InstanceType {
		plan.Paths = append(plan.Paths, instanceTypePath)
		plan.Disruptive = true // a resize reboots the instance
	}
	if !maps.Equal(inst.Tags, spec.Tags) {
		plan.Paths = append(plan.Paths, tagsPath)
	}
	return plan, nil
}

// UpdateInPlace implements provider.InPlaceUpdater. New tags are recorded at once. A new instance
// type is recorded with the capacity it brings, counted in Instance.InPlaceUpdates, and starts a
// reboot of RebootDuration; until the reboot is over the call returns a RequeueAfter error, and a
// call during the reboot never starts another one (a second type change waits for the first
// reboot to end). All of it is in the store, so a restarted manager finds the update under way.
//
// Like Create, it lets the instance's kubelet report at once when its Node is registered: Ready=False
// while the instance reboots, then Ready=True with the new type's capacity.
func (p *Provider) UpdateInPlace(ctx context.Context, m *v1beta1.Machine) error {
	spec, err := parseSpec(m)
	if err != nil {
		return err
	}
	reboot, err := p.rebootDuration(m)
	if err != nil {
		return err
	}
	class := provider.MachineClassFrom(ctx)
	now := p.opts.Clock.Now()
	inst, found, err := p.store.updateIf(m.UID, func(i *Instance) bool {
		changed := false
		if !maps.Equal(i.Tags, spec.Tags) {
			i.Tags, changed = maps.Clone(spec.Tags), true
		}
		if i.InstanceType != spec.InstanceType && !i.rebooting(now) {
			i.InstanceType = spec.InstanceType
			i.Capacity = capacity(class, spec)
			i.InPlaceUpdates++
			i.RebootUntil = now.Add(reboot)
			changed = true
		}
		return changed
	})
	if err != nil {
		return fmt.Errorf("sim: recording the in-place update of machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	if !found {
		return fmt.Errorf("sim: machine %s/%s has no instance (UID %s) to update in place", m.Namespace, m.Name, m.UID)
	}
	describe(m, inst, now)
	if inst.Registered && p.getClient() != nil {
		if _, err := p.serveNode(ctx, inst.NodeName); err != nil {
			return err
		}
	}
	if !inst.rebooting(now) {
		return nil
	}
	if inst.InstanceType != spec.InstanceType {
		return provider.RequeueAfter(inst.RebootUntil.Sub(now), fmt.Sprintf("sim: instance %s is rebooting for its change to instance type %s; the change to %s waits", inst.ID, inst.InstanceType, spec.InstanceType))
	}
	return provider.RequeueAfter(inst.RebootUntil.Sub(now), fmt.Sprintf("sim: instance %s is rebooting to instance type %s", inst.ID, inst.InstanceType))
}

// rebootDuration is how long m's instance reboots for an in-place update.
func (p *Provider) rebootDuration(m *v1beta1.Machine) (time.Duration, error) {
	v, ok := m.Annotations[RebootDurationAnnotation]
	if !ok {
		return max(p.opts.RebootDuration, 0), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, provider.InvalidConfiguration("annotation %s=%q is not a duration such as 30s", RebootDurationAnnotation, v)
	}
	return d, nil
}
