package libvirtprovider

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

// The decisions of an in-place update, made from what libvirt reports and nothing else, so that
// they are table-tested here and inplace.go only reads libvirt and acts.

// specValuePath prefixes the Machine paths of providerSpec fields in an in-place plan.
const specValuePath = "spec.providerSpec.value."

// specField is a providerSpec field as an in-place plan compares it.
type specField struct {
	// name is the field's JSON name.
	name string
	// inPlace: a new value is applied by redefining the domain and restarting it.
	inPlace bool
	// equal compares the field of two defaulted specs.
	equal func(a, b *api.ProviderSpec) bool
}

// specFields are every field of api.ProviderSpec (a test keeps the list complete). Only the size
// is changed in place; every other field is how the domain was made (its host, disk, network,
// seed), which only a new Machine changes.
var specFields = []specField{
	{name: "uri", equal: func(a, b *api.ProviderSpec) bool { return a.URI == b.URI }},
	{name: "vcpus", inPlace: true, equal: func(a, b *api.ProviderSpec) bool { return a.VCPUs == b.VCPUs }},
	{name: "memory", inPlace: true, equal: func(a, b *api.ProviderSpec) bool { return a.MemoryMiB() == b.MemoryMiB() }},
	{name: "image", equal: func(a, b *api.ProviderSpec) bool { return a.Image == b.Image }},
	{name: "diskSize", equal: func(a, b *api.ProviderSpec) bool { return sameQuantity(a.DiskSize, b.DiskSize) }},
	{name: "storagePool", equal: func(a, b *api.ProviderSpec) bool { return a.StoragePool == b.StoragePool }},
	{name: "domainType", equal: func(a, b *api.ProviderSpec) bool { return a.DomainType == b.DomainType }},
	{name: "network", equal: func(a, b *api.ProviderSpec) bool { return reflect.DeepEqual(a.Network, b.Network) }},
	{name: "registerWithTaints", equal: func(a, b *api.ProviderSpec) bool {
		return len(a.RegisterWithTaints) == 0 && len(b.RegisterWithTaints) == 0 || reflect.DeepEqual(a.RegisterWithTaints, b.RegisterWithTaints)
	}},
}

func sameQuantity(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(*b) == 0
}

// planInPlace is CanUpdateInPlace's plan for Machine m, whose domain on the host at uri reads d,
// to become desired; kvmOffered says whether the host offers kvm, for a desired domainType left
// to the automatic choice.
func planInPlace(m, desired *v1beta1.Machine, uri string, d domainRead, kvmOffered bool) (provider.InPlacePlan, error) {
	want, err := parseSpec(desired)
	if err != nil {
		return provider.InPlacePlan{}, err
	}
	if want.DomainType == "" {
		if want.DomainType, _, err = chooseDomainType("", kvmOffered, uri); err != nil {
			return provider.InPlacePlan{}, err
		}
	}
	have, err := instanceSpec(recordedSpec(m), uri, d)
	if err != nil {
		return provider.InPlacePlan{}, fmt.Errorf("reading the size of domain %s: %w", d.Name, err)
	}
	return planResize(&have, &want, editedFields(m.Spec.ProviderSpec.Value, desired.Spec.ProviderSpec.Value)), nil
}

// planResize is the in-place plan from the instance as it is (have, instanceSpec) to want, both
// defaulted, with want's domainType resolved as Create would: a field whose value differs goes to
// Paths when it is the memory or the vCPU count, and makes the plan disruptive (the domain
// restarts), and to Unsupported otherwise. A field the instance already has but whose text the
// Machine's spec changes (edited names the fields whose JSON differs between the Machine's
// providerSpec and the desired one: "1Gi" for "1024Mi", a default written out) goes to Paths
// with nothing to do, so that it does not count as unsupported.
func planResize(have, want *api.ProviderSpec, edited map[string]bool) provider.InPlacePlan {
	var plan provider.InPlacePlan
	for _, f := range specFields {
		path := specValuePath + f.name
		switch {
		case !f.equal(have, want) && f.inPlace:
			plan.Paths = append(plan.Paths, path)
			plan.Disruptive = true
		case !f.equal(have, want):
			plan.Unsupported = append(plan.Unsupported, path)
		case edited[f.name]:
			plan.Paths = append(plan.Paths, path)
		}
	}
	return plan
}

// instanceSpec is the providerSpec of the instance as it is: what the domain records of itself —
// the host it is on (uri), its size (d: the running domain's, or the persistent definition of one
// that is shut off), its domain type, the pool of its volumes and its network attachment — and,
// for what the domain does not record (the image, the disk size, the taints and the user
// network's settings, which went into its disk and seed), the Machine's providerSpec (recorded,
// defaulted), which the domain was made from and which no in-place update changes.
func instanceSpec(recorded api.ProviderSpec, uri string, d domainRead) (api.ProviderSpec, error) {
	have := recorded // the fields set below are replaced, never modified
	size, err := d.shape()
	if err != nil {
		return have, err
	}
	have.URI = uri
	have.VCPUs = size.VCPUs
	have.Memory = resource.NewQuantity(size.MemoryMiB<<20, resource.BinarySI)
	have.DomainType = api.DomainType(d.Type)
	if meta := d.Metadata.Machine; meta != nil && meta.Pool != "" {
		have.StoragePool = meta.Pool
	}
	have.Network = api.NetworkAttachment{}
	switch {
	case d.Metadata.Machine != nil && d.Metadata.Machine.UserNetworkIndex != 0:
		u := api.UserLoopbackNetwork{}
		if recorded.Network.UserLoopback != nil {
			u = *recorded.Network.UserLoopback
		}
		have.Network.UserLoopback = &u
	case len(d.Devices.Interfaces) > 0 && d.Devices.Interfaces[0].Type == "network":
		have.Network.Network = d.Devices.Interfaces[0].Source.Network
	case len(d.Devices.Interfaces) > 0 && d.Devices.Interfaces[0].Type == "bridge":
		have.Network.Bridge = d.Devices.Interfaces[0].Source.Bridge
	}
	return have, nil
}

// editedFields names the top-level providerSpec fields whose JSON differs between two
// providerSpecs: what the Machine's spec changes, as the machine controller sees it.
func editedFields(a, b *runtime.RawExtension) map[string]bool {
	decode := func(r *runtime.RawExtension) map[string]any {
		var out map[string]any
		if r != nil {
			_ = json.Unmarshal(r.Raw, &out)
		}
		return out
	}
	am, bm := decode(a), decode(b)
	out := map[string]bool{}
	for k, v := range am {
		if !reflect.DeepEqual(v, bm[k]) {
			out[k] = true
		}
	}
	for k, v := range bm {
		if !reflect.DeepEqual(v, am[k]) {
			out[k] = true
		}
	}
	return out
}

// RestartNamespace is the XML namespace of the mark an in-place update leaves in a domain's
// <metadata> while it restarts the domain.
const RestartNamespace = MetadataNamespace + "/restart"

// restartMark says that an in-place update restarts the domain: written into the domain's
// persistent definition only (never the running domain's) when the update asks the guest to
// power off, it is copied into the live definition when the update starts the domain again, and
// removed from both once the domain runs. So, from libvirt alone: a shut-off domain with the mark
// in its definition was stopped by the update and is started; a running domain without the mark
// in its live definition is the one to stop; with the same mark in both, it was started by the
// update, which is over.
type restartMark struct {
	XMLName xml.Name `xml:"restart"`
	// Requested is when the guest was first asked to power off (RFC 3339): it is destroyed if it
	// still runs Options.ShutdownTimeout later.
	Requested string `xml:"requested,attr"`
	// MemoryMiB and VCPUs are the size it restarts for, for a person reading virsh dumpxml.
	MemoryMiB int64 `xml:"memoryMiB,attr"`
	VCPUs     int32 `xml:"vcpus,attr"`
}

// libvirt's domain states (virDomainState) an in-place update tells apart.
const (
	stateBlocked      = 2
	stateShuttingDown = 4
	stateCrashed      = 6
)

// restartState is what libvirt says of a domain during an in-place update.
type restartState struct {
	// state is the domain's state (virDomainState).
	state int32
	// live is the running domain's size, and liveMark the restart mark of its live definition
	// (both unset when it is not running).
	live     shape
	liveMark *restartMark
	// mark is the restart mark of its persistent definition.
	mark *restartMark
}

// running reports whether the domain's QEMU runs (a guest shutting down still runs).
func (s restartState) running() bool {
	switch s.state {
	case stateRunning, stateBlocked, stateShuttingDown:
		return true
	}
	return false
}

// restartStep is what an in-place update does next to have the domain run with its new size.
type restartStep int

const (
	// restartNone: the domain runs with the size; nothing to do.
	restartNone restartStep = iota
	// restartFinish: the domain runs after the update's restart (or has the size anyway): the
	// mark goes.
	restartFinish
	// restartShutdown: the running domain lacks the size: mark the definition (once) and ask the
	// guest to power off (again, until it does: a guest still booting may miss the request).
	restartShutdown
	// restartDestroy: the guest did not power off within the timeout: destroy the domain, then
	// start it.
	restartDestroy
	// restartStart: the update stopped the domain: start it with its new definition.
	restartStart
	// restartStopped: the domain is shut off, not by the update: it is left so (a machine that went
	// away is for the health check to replace).
	restartStopped
	// restartBlocked: the domain is paused or suspended: nothing is done until someone resumes it.
	restartBlocked
)

// nextRestart decides the next step of an in-place update towards a domain that runs with want,
// from libvirt's state alone, so that a manager that died at any point goes on from there and
// restarts the domain at most once for a change; timeout is how long the guest may take to power
// off before it is destroyed.
func nextRestart(s restartState, want shape, now time.Time, timeout time.Duration) restartStep {
	switch {
	case s.state == stateShutoff || s.state == stateCrashed:
		if s.mark != nil {
			return restartStart
		}
		return restartStopped
	case !s.running():
		return restartBlocked
	case s.mark != nil && (s.liveMark != nil && *s.liveMark == *s.mark || s.live == want):
		return restartFinish
	case s.live == want:
		return restartNone
	case s.mark == nil:
		return restartShutdown
	}
	requested, err := time.Parse(time.RFC3339, s.mark.Requested)
	if err != nil || !now.Before(requested.Add(timeout)) {
		return restartDestroy // an unreadable mark is the update's own, and old
	}
	return restartShutdown
}
