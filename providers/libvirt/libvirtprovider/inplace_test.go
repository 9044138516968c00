package libvirtprovider

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"machineapi.dev/machine-api/provider"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

// libvirtXML is a domain's XML as libvirt returns it (sizes in KiB, the vCPU placement, the
// provider's metadata): mem is the memory in MiB, vcpus its vCPU count, net the <devices> part of
// the network ("" for the user network, which is on QEMU's command line).
func libvirtXML(domainType string, memMiB int64, vcpus int32, pool string, userIndex int32, net string) string {
	return fmt.Sprintf(`<domain type='%s' id='3' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>default.worker-1-3f2a9</name>
  <uuid>3f2a9c1e-7b4d-4c8e-9a1f-0123456789ab</uuid>
  <metadata>
    <machineapi:machine xmlns:machineapi="https://machineapi.dev/provider-libvirt/v1beta1">
      <machineapi:namespace>default</machineapi:namespace>
      <machineapi:name>worker-1</machineapi:name>
      <machineapi:uid>3f2a9c1e-7b4d-4c8e-9a1f-0123456789ab</machineapi:uid>
      <machineapi:manager>m</machineapi:manager>
      <machineapi:pool>%s</machineapi:pool>
      <machineapi:userNetworkIndex>%d</machineapi:userNetworkIndex>
    </machineapi:machine>
  </metadata>
  <memory unit='KiB'>%d</memory>
  <currentMemory unit='KiB'>%d</currentMemory>
  <vcpu placement='static'>%d</vcpu>
  <devices>%s</devices>
</domain>`, domainType, pool, userIndex, memMiB<<10, memMiB<<10, vcpus, net)
}

func mustReadDomain(t *testing.T, data string) domainRead {
	t.Helper()
	d, err := readDomain(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPlanInPlace protects CanUpdateInPlace's plan: the desired providerSpec is validated as
// Create validates it and compared with the domain as it is, not with the Machine's spec; a new
// memory size or vCPU count is applied in place and restarts the domain, every other field that
// differs needs a new Machine, and a field the domain already has is in place with nothing to do.
func TestPlanInPlace(t *testing.T) {
	const (
		base   = `"image":{"volume":"node.raw"},"network":{"userLoopback":{"tlsServerName":"kubernetes"}},"domainType":"qemu"`
		small  = `{` + base + `,"memory":"1Gi","vcpus":1}`
		memory = "spec.providerSpec.value.memory"
		vcpus  = "spec.providerSpec.value.vcpus"
	)
	userNet := libvirtXML("qemu", 1024, 1, "default", 7, "")
	tests := map[string]struct {
		machine string // the Machine's providerSpec; default small
		domain  string // its domain's XML; default userNet
		kvm     bool   // the host offers kvm
		desired string
		want    provider.InPlacePlan
		invalid string // a fragment of the InvalidConfiguration error
	}{
		"nothing changes": {desired: small, want: provider.InPlacePlan{}},
		"more memory restarts the domain": {
			desired: `{` + base + `,"memory":"2Gi","vcpus":1}`,
			want:    provider.InPlacePlan{Paths: []string{memory}, Disruptive: true},
		},
		"more vCPUs restart the domain": {
			desired: `{` + base + `,"memory":"1Gi","vcpus":2}`,
			want:    provider.InPlacePlan{Paths: []string{vcpus}, Disruptive: true},
		},
		"less of both, once": {
			machine: `{` + base + `,"memory":"4Gi","vcpus":4}`, domain: libvirtXML("qemu", 4096, 4, "default", 7, ""),
			desired: `{` + base + `,"memory":"2Gi","vcpus":2}`,
			want:    provider.InPlacePlan{Paths: []string{vcpus, memory}, Disruptive: true},
		},
		"the domain counts, not the Machine's spec: a size the spec already says but the domain lacks": {
			machine: `{` + base + `,"memory":"2Gi","vcpus":1}`,
			desired: `{` + base + `,"memory":"2Gi","vcpus":1}`,
			want:    provider.InPlacePlan{Paths: []string{memory}, Disruptive: true},
		},
		"a size the domain already has is in place and restarts nothing": {
			domain:  libvirtXML("qemu", 2048, 2, "default", 7, ""),
			desired: `{` + base + `,"memory":"2Gi","vcpus":2}`,
			want:    provider.InPlacePlan{Paths: []string{vcpus, memory}},
		},
		"the same size spelled differently restarts nothing": {
			desired: `{` + base + `,"memory":"1024Mi","vcpus":1}`,
			want:    provider.InPlacePlan{Paths: []string{memory}},
		},
		"defaults written out change nothing": {
			machine: `{` + base + `,"memory":"2Gi","vcpus":2}`, domain: libvirtXML("qemu", 2048, 2, "default", 7, ""),
			desired: `{` + base + `,"uri":"qemu:///system","storagePool":"default"}`,
			want:    provider.InPlacePlan{Paths: []string{"spec.providerSpec.value.uri", "spec.providerSpec.value.vcpus", "spec.providerSpec.value.memory", "spec.providerSpec.value.storagePool"}},
		},
		"a new image needs a new Machine": {
			desired: `{"image":{"volume":"node-2.raw"},"network":{"userLoopback":{"tlsServerName":"kubernetes"}},"domainType":"qemu","memory":"1Gi","vcpus":1}`,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.image"}},
		},
		"a new size and a new disk: the size in place, the disk unsupported": {
			desired: `{` + base + `,"memory":"2Gi","vcpus":1,"diskSize":"20Gi"}`,
			want:    provider.InPlacePlan{Paths: []string{memory}, Unsupported: []string{"spec.providerSpec.value.diskSize"}, Disruptive: true},
		},
		"another host": {
			desired: `{` + base + `,"memory":"1Gi","vcpus":1,"uri":"qemu+ssh://root@kvm-2/system"}`,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.uri"}},
		},
		"another pool": {
			desired: `{` + base + `,"memory":"1Gi","vcpus":1,"storagePool":"vms"}`,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.storagePool"}},
		},
		"a bridge instead of the user network": {
			desired: `{"image":{"volume":"node.raw"},"network":{"bridge":"br0"},"domainType":"qemu","memory":"1Gi","vcpus":1}`,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.network"}},
		},
		"another bridge, as the domain's interface says": {
			machine: `{"image":{"volume":"node.raw"},"network":{"bridge":"br0"},"domainType":"qemu","memory":"1Gi","vcpus":1}`,
			domain:  libvirtXML("qemu", 1024, 1, "default", 0, `<interface type='bridge'><source bridge='br0'/></interface>`),
			desired: `{"image":{"volume":"node.raw"},"network":{"bridge":"br1"},"domainType":"qemu","memory":"1Gi","vcpus":1}`,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.network"}},
		},
		"the user network's server name went into the seed": {
			desired: `{"image":{"volume":"node.raw"},"network":{"userLoopback":{"tlsServerName":"api"}},"domainType":"qemu","memory":"1Gi","vcpus":1}`,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.network"}},
		},
		"taints went into the seed": {
			desired: `{` + base + `,"memory":"1Gi","vcpus":1,"registerWithTaints":[{"key":"gpu","effect":"NoSchedule"}]}`,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.registerWithTaints"}},
		},
		"kvm for a qemu domain": {
			desired: `{"image":{"volume":"node.raw"},"network":{"userLoopback":{"tlsServerName":"kubernetes"}},"domainType":"kvm","memory":"1Gi","vcpus":1}`,
			kvm:     true,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.domainType"}},
		},
		"the automatic type is what Create would choose now": {
			desired: `{"image":{"volume":"node.raw"},"network":{"userLoopback":{"tlsServerName":"kubernetes"}},"memory":"1Gi","vcpus":1}`,
			want:    provider.InPlacePlan{Paths: []string{"spec.providerSpec.value.domainType"}},
		},
		"the automatic type on a host that now offers kvm": {
			desired: `{"image":{"volume":"node.raw"},"network":{"userLoopback":{"tlsServerName":"kubernetes"}},"memory":"1Gi","vcpus":1}`,
			kvm:     true,
			want:    provider.InPlacePlan{Unsupported: []string{"spec.providerSpec.value.domainType"}},
		},
		"too little memory is refused as Create refuses it": {
			desired: `{` + base + `,"memory":"256Mi","vcpus":1}`, invalid: `providerSpec.value.memory: Invalid value: "256Mi": must be at least 512Mi`,
		},
		"too many vCPUs": {
			desired: `{` + base + `,"memory":"1Gi","vcpus":256}`, invalid: "providerSpec.value.vcpus: Invalid value: 256: must be between 1 and 255",
		},
		"an unknown field": {
			desired: `{` + base + `,"memoryMiB":2048}`, invalid: `unknown field "memoryMiB"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := machineWith(tc.machine)
			if tc.machine == "" {
				m = machineWith(small)
			}
			domain := tc.domain
			if domain == "" {
				domain = userNet
			}
			plan, err := planInPlace(m, machineWith(tc.desired), api.DefaultURI, mustReadDomain(t, domain), tc.kvm)
			if tc.invalid != "" {
				if !provider.IsInvalidConfiguration(err) || !strings.Contains(err.Error(), tc.invalid) {
					t.Fatalf("err = %v; want an InvalidConfiguration saying %q", err, tc.invalid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plan, tc.want) {
				t.Errorf("plan %+v, want %+v", plan, tc.want)
			}
		})
	}
}

// TestEveryProviderSpecFieldIsPlanned keeps specFields complete: a providerSpec field the plan
// does not compare would be changed by a template and silently never applied.
func TestEveryProviderSpecFieldIsPlanned(t *testing.T) {
	planned := map[string]bool{}
	for _, f := range specFields {
		planned[f.name] = true
	}
	typ := reflect.TypeFor[api.ProviderSpec]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !planned[name] {
			t.Errorf("providerSpec field %s is not in specFields", name)
		}
		delete(planned, name)
	}
	for name := range planned {
		t.Errorf("specFields names %s, which the providerSpec does not have", name)
	}
}

// TestDomainSize protects the reading of a domain's size from the XML libvirt writes.
func TestDomainSize(t *testing.T) {
	tests := map[string]struct {
		xml   string
		want  shape
		sized bool // defined with exactly want
	}{
		"as the provider defines it": {
			xml:  `<domain><memory unit='KiB'>2097152</memory><currentMemory unit='KiB'>2097152</currentMemory><vcpu placement='static'>2</vcpu></domain>`,
			want: shape{MemoryMiB: 2048, VCPUs: 2}, sized: true,
		},
		"more vCPUs allowed than booted": {
			xml:  `<domain><memory unit='KiB'>1048576</memory><vcpu placement='static' current='1'>2</vcpu></domain>`,
			want: shape{MemoryMiB: 1024, VCPUs: 1},
		},
		"less memory current than maximum": {
			xml:  `<domain><memory unit='KiB'>2097152</memory><currentMemory unit='KiB'>1048576</currentMemory><vcpu>1</vcpu></domain>`,
			want: shape{MemoryMiB: 2048, VCPUs: 1},
		},
		"other units, rounded up to a MiB": {
			xml:  `<domain><memory unit='GiB'>1</memory><currentMemory unit='bytes'>1073741823</currentMemory><vcpu>1</vcpu></domain>`,
			want: shape{MemoryMiB: 1024, VCPUs: 1}, sized: true,
		},
		"no unit is KiB": {
			xml:  `<domain><memory>524288</memory><vcpu>1</vcpu></domain>`,
			want: shape{MemoryMiB: 512, VCPUs: 1}, sized: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := mustReadDomain(t, tc.xml)
			got, err := d.shape()
			if err != nil || got != tc.want {
				t.Fatalf("shape = %+v, %v; want %+v", got, err, tc.want)
			}
			if sized, err := d.sized(tc.want); err != nil || sized != tc.sized {
				t.Errorf("sized = %v, %v; want %v", sized, err, tc.sized)
			}
		})
	}
	if _, err := mustReadDomain(t, `<domain><memory unit='pages'>1</memory></domain>`).shape(); err == nil {
		t.Error("an unknown memory unit was read")
	}
}

// TestRestartMarkAsLibvirtWritesIt: the mark written through virDomainSetMetadata comes back
// under the key's prefix, and is read; another namespace's element is not the mark.
func TestRestartMarkAsLibvirtWritesIt(t *testing.T) {
	d := mustReadDomain(t, `<domain type='qemu' id='4'><metadata>
  <machineapi-restart:restart xmlns:machineapi-restart="https://machineapi.dev/provider-libvirt/v1beta1/restart" requested="2026-12-03T18:00:00Z" memoryMiB="2048" vcpus="2"/>
  <other:restart xmlns:other="https://example.com/other" requested="1999-01-01T00:00:00Z"/>
</metadata></domain>`)
	want := restartMark{Requested: "2026-12-03T18:00:00Z", MemoryMiB: 2048, VCPUs: 2}
	if m := d.Metadata.Restart; m == nil || m.Requested != want.Requested || m.MemoryMiB != want.MemoryMiB || m.VCPUs != want.VCPUs || d.ID != 4 {
		t.Errorf("mark %+v, id %d; want %+v, 4", m, d.ID, want)
	}
	if d := mustReadDomain(t, `<domain><metadata/></domain>`); d.Metadata.Restart != nil || d.ID != 0 {
		t.Errorf("a domain without the mark, not running, reads mark %+v, id %d", d.Metadata.Restart, d.ID)
	}
}

// TestNextRestart protects the restart of an in-place update against a manager that dies at any
// point: each row is what libvirt shows at one point of the restart, and the step is the one that
// continues it, so that the domain is stopped and started once for a change.
func TestNextRestart(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	const timeout = 2 * time.Minute
	small, big := shape{MemoryMiB: 1024, VCPUs: 1}, shape{MemoryMiB: 2048, VCPUs: 2}
	mark := &restartMark{Requested: t0.Format(time.RFC3339), MemoryMiB: 2048, VCPUs: 2}
	older := &restartMark{Requested: t0.Add(-time.Hour).Format(time.RFC3339), MemoryMiB: 1536, VCPUs: 1}
	tests := map[string]struct {
		state restartState
		now   time.Time
		want  restartStep
	}{
		"running with the size: nothing to do": {
			state: restartState{state: stateRunning, live: big}, want: restartNone,
		},
		"running without it: mark, and ask the guest to power off": {
			state: restartState{state: stateRunning, live: small}, want: restartShutdown,
		},
		"marked, still running within the timeout: ask again": {
			state: restartState{state: stateRunning, live: small, mark: mark}, now: t0.Add(90 * time.Second), want: restartShutdown,
		},
		"marked, shutting down within the timeout: ask again": {
			state: restartState{state: stateShuttingDown, live: small, mark: mark}, now: t0.Add(30 * time.Second), want: restartShutdown,
		},
		"marked, still running at the timeout: destroy, then start": {
			state: restartState{state: stateRunning, live: small, mark: mark}, now: t0.Add(timeout), want: restartDestroy,
		},
		"marked and shut off (the guest powered off, or the manager died after destroying it): start": {
			state: restartState{state: stateShutoff, mark: mark}, now: t0.Add(time.Hour), want: restartStart,
		},
		"marked and crashed: start": {
			state: restartState{state: stateCrashed, mark: mark}, want: restartStart,
		},
		"started with the mark (the manager died before removing it): finish, no second restart": {
			state: restartState{state: stateRunning, live: big, liveMark: mark, mark: mark}, now: t0.Add(time.Hour), want: restartFinish,
		},
		"started with the mark, but a newer size is wanted: finish this restart first": {
			state: restartState{state: stateRunning, live: shape{MemoryMiB: 1536, VCPUs: 1}, liveMark: mark, mark: mark}, want: restartFinish,
		},
		"marked, and running with the size though not started by the update: finish": {
			state: restartState{state: stateRunning, live: big, mark: mark}, want: restartFinish,
		},
		"a stale mark in the live definition is not this restart's": {
			state: restartState{state: stateRunning, live: small, liveMark: older, mark: mark}, now: t0.Add(time.Second), want: restartShutdown,
		},
		"shut off without the mark: not the update's to start": {
			state: restartState{state: stateShutoff}, want: restartStopped,
		},
		"paused: wait for someone to resume it": {
			state: restartState{state: 3, live: small, mark: mark}, want: restartBlocked,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			if got := nextRestart(tc.state, big, now, timeout); got != tc.want {
				t.Errorf("step %d, want %d", got, tc.want)
			}
		})
	}
}

// TestARestartWalksThroughOnce follows nextRestart from a running domain of the old size to one
// of the new, applying each step's effect on the domain as libvirt would, with the guest powering
// off after two requests: one stop and one start, the mark gone at the end. Since the steps depend
// only on that state, a manager restarted between any two calls takes the same path.
func TestARestartWalksThroughOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	small, big := shape{MemoryMiB: 1024, VCPUs: 1}, shape{MemoryMiB: 2048, VCPUs: 2}
	for _, powersOff := range []bool{true, false} {
		t.Run(fmt.Sprintf("guest powers off: %v", powersOff), func(t *testing.T) {
			s := restartState{state: stateRunning, live: small}
			now, requests, stops, starts := t0, 0, 0, 0
			for call := 0; ; call++ {
				if call > 100 {
					t.Fatal("no end after 100 calls")
				}
				step := nextRestart(s, big, now, 2*time.Minute)
				switch step {
				case restartNone:
					t.Fatalf("call %d: nothing to do though the domain is %+v", call, s)
				case restartShutdown:
					if s.mark == nil {
						s.mark = &restartMark{Requested: now.Format(time.RFC3339), MemoryMiB: big.MemoryMiB, VCPUs: big.VCPUs}
					}
					if requests++; powersOff && requests == 2 {
						s = restartState{state: stateShutoff, mark: s.mark}
						stops++
					}
				case restartDestroy, restartStart:
					if step == restartDestroy {
						stops++
					}
					// Started from the definition, which holds the mark; the manager dies before removing it.
					s = restartState{state: stateRunning, live: big, liveMark: s.mark, mark: s.mark}
					starts++
				case restartFinish:
					s.mark, s.liveMark = nil, nil
					if stops != 1 || starts != 1 || nextRestart(s, big, now, 2*time.Minute) != restartNone {
						t.Fatalf("after %d calls: %d stops, %d starts; want 1 and 1, and nothing left to do", call+1, stops, starts)
					}
					return
				default:
					t.Fatalf("call %d: step %d", call, step)
				}
				now = now.Add(restartPoll)
			}
		})
	}
}
