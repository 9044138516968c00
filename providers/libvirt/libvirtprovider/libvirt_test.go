//go:build libvirt

// The tests in this file run the provider against a real libvirtd (qemu:///system) and a real
// kube-apiserver (the source-built one in $KUBEBUILDER_ASSETS), so `make test` leaves them out:
//
//	providers/libvirt/hack/host-setup.sh   # as root, once
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.37.2 go test -tags libvirt ./providers/libvirt/...
//
// Every VM is a qemu (TCG) domain on QEMU's user network with restrict=on: no packet leaves
// loopback. The image is a tiny empty volume (SeaBIOS finds nothing to boot, which costs little)
// unless MACHINEAPI_NODE_IMAGE_VOLUME names a volume of the pool. Every domain, volume and token a
// test makes is removed when it ends, failed or not, and the suite fails if anything is left.
package libvirtprovider

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	libvirt "github.com/digitalocean/go-libvirt"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	testclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/bootstrap"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/provider/conformance"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

const testURI = "qemu:///system"

// fixture is the suite's libvirt host, API server and provider.
type fixture struct {
	conn      *libvirt.Libvirt
	pool      string
	image     string
	managerID string
	k8s       client.Client
	p         *Provider

	mu   sync.Mutex
	uids map[types.UID]bool // of every Machine the suite made, to find volumes left behind
}

func TestLibvirt(t *testing.T) {
	f := setUp(t)
	ctx := context.Background()

	t.Run("conformance", func(t *testing.T) {
		conformance.Run(t, conformance.Suite{
			Provider:   f.p,
			NewMachine: f.machine,
			InvalidMachine: func(name string) *v1beta1.Machine {
				return f.machineWith(name, func(s map[string]any) { s["memory"] = "256Mi" })
			},
			Instances: func() int { return len(f.domains(t)) },
		})
	})

	t.Run("a Machine's domain, volumes, seed and token", func(t *testing.T) {
		m := f.create(t, "anatomy")
		dom, found, err := lookup(f.conn, m.UID)
		if err != nil || !found {
			t.Fatalf("no domain with the Machine's UID as UUID: %v", err)
		}
		state, _, _ := f.conn.DomainGetState(dom, 0)
		data, _ := f.conn.DomainGetXMLDesc(dom, 0)
		r, _ := readDomain(data)
		if state != stateRunning || r.Type != "qemu" || r.Metadata.Machine == nil || r.Metadata.Machine.Manager != f.managerID ||
			r.Metadata.Machine.Namespace != "default" || r.Metadata.Machine.Name != m.Name || r.Metadata.Machine.UID != string(m.UID) {
			t.Errorf("domain %s: state %s, type %s, metadata %+v", dom.Name, stateName(state), r.Type, r.Metadata.Machine)
		}
		var st api.ProviderStatus
		if err := json.Unmarshal(m.Status.ProviderStatus.Raw, &st); err != nil {
			t.Fatal(err)
		}
		if st.DomainType != api.DomainTypeQEMU || st.DomainTypeReason != "set in providerSpec.value.domainType" || st.State != "running" || st.URI != testURI {
			t.Errorf("providerStatus %+v", st)
		}
		ip := fmt.Sprintf("10.0.%d.15", st.UserNetworkIndex)
		if m.Spec.ProviderID != "libvirt:///"+string(m.UID) || m.Status.Addresses[0].Address != ip || m.Status.Addresses[1].Address != provider.NodeName(m) {
			t.Errorf("providerID %s, addresses %v", m.Spec.ProviderID, m.Status.Addresses)
		}
		token, found, err := bootstrap.FindToken(ctx, f.k8s, m.UID)
		if err != nil || !found {
			t.Fatalf("no bootstrap token for the Machine: %v", err)
		}
		seed := f.download(t, seedVolume(m.UID))
		kubelet, kubeconfig := seedMember(t, seed, "files"+kubeletConfigPath), seedMember(t, seed, "files"+bootstrapKubeconfigPath)
		var kc map[string]any
		if err := yaml.Unmarshal(kubelet, &kc); err != nil || kc["providerID"] != m.Spec.ProviderID {
			t.Errorf("the seed's kubelet configuration has providerID %v (%v), want %s", kc["providerID"], err, m.Spec.ProviderID)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		if err != nil || cfg.BearerToken != token.String() || cfg.Host != fmt.Sprintf("https://10.0.%d.254:6443", st.UserNetworkIndex) || cfg.ServerName != "127.0.0.1" {
			t.Errorf("the seed's bootstrap kubeconfig: %+v, %v", cfg, err)
		}
		own, err := clientcmd.Load(seedMember(t, seed, "files"+kubeletKubeconfigPath))
		if err != nil || own.Clusters["default"].Server != cfg.Host || own.Clusters["default"].TLSServerName != "127.0.0.1" {
			t.Errorf("the seed's kubelet kubeconfig: %+v, %v; want the bootstrap kubeconfig's server and TLS server name", own, err)
		}
		disk, found, _ := volume(f.conn, f.poolHandle(t), diskVolume(m.UID))
		if !found {
			t.Fatal("no disk overlay")
		}
		info, _ := describeVolume(f.conn, disk)
		if info.Target.Format.Type != "qcow2" {
			t.Errorf("the disk is %s, want a qcow2 overlay", info.Target.Format.Type)
		}

		if err := f.p.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := bootstrap.FindToken(ctx, f.k8s, m.UID); found {
			t.Error("Delete left the bootstrap token")
		}
		f.expectNothingOf(t, m)
	})

	t.Run("two Machines created at once get distinct subnets", func(t *testing.T) {
		a, b := f.machine("parallel-a"), f.machine("parallel-b")
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, m := range []*v1beta1.Machine{a, b} {
			f.cleanup(t, m)
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = f.p.Create(ctx, m) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if a.Status.Addresses[0].Address == b.Status.Addresses[0].Address {
			t.Errorf("both got InternalIP %s", a.Status.Addresses[0].Address)
		}
	})

	t.Run("a Create interrupted after the domain was defined is completed by Update", func(t *testing.T) {
		m := f.machine("interrupted")
		f.cleanup(t, m)
		spec, err := parseSpec(m)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := checkHost(f.conn, testURI, spec)
		if err != nil {
			t.Fatal(err)
		}
		cl, _ := f.p.getCluster()
		if pl.endpoint, err = guestEndpoint(spec, cl.config, ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.p.define(f.p.hosts.get(testURI), f.conn, m, spec, pl); err != nil {
			t.Fatal(err)
		}
		// The process died here. The next one finds the domain...
		if ok, err := f.p.Exists(ctx, m); err != nil || !ok {
			t.Fatalf("Exists = %v, %v; want the defined domain found", ok, err)
		}
		// ...and, the Machine having no providerID, completes and starts it.
		if err := f.p.Update(ctx, m); err != nil {
			t.Fatal(err)
		}
		dom, _, _ := lookup(f.conn, m.UID)
		if state, _, _ := f.conn.DomainGetState(dom, 0); state != stateRunning || m.Spec.ProviderID == "" {
			t.Errorf("state %s, providerID %q: the domain was not completed", stateName(state), m.Spec.ProviderID)
		}
		for _, v := range []string{diskVolume(m.UID), seedVolume(m.UID)} {
			if _, found, _ := volume(f.conn, f.poolHandle(t), v); !found {
				t.Errorf("volume %s missing", v)
			}
		}
	})

	t.Run("a domain stopped behind the provider's back stays stopped", func(t *testing.T) {
		m := f.create(t, "stopped")
		dom, _, _ := lookup(f.conn, m.UID)
		if err := f.conn.DomainDestroy(dom); err != nil {
			t.Fatal(err)
		}
		if err := f.p.Update(ctx, m); err != nil {
			t.Fatal(err)
		}
		var st api.ProviderStatus
		_ = json.Unmarshal(m.Status.ProviderStatus.Raw, &st)
		if state, _, _ := f.conn.DomainGetState(dom, 0); state != stateShutoff || st.State != "shut off" {
			t.Errorf("state %s, providerStatus.state %q; want it left shut off for the health check", stateName(state), st.State)
		}
		if ok, _ := f.p.Exists(ctx, m); !ok {
			t.Error("Exists is false for a stopped domain")
		}
	})

	t.Run("bad input says what to change and leaves nothing", func(t *testing.T) {
		tests := map[string]struct {
			mutate  func(map[string]any)
			want    string
			invalid bool
		}{
			"a missing image volume": {
				mutate: func(s map[string]any) { s["image"] = map[string]any{"volume": "no-such-image.raw"} }, invalid: true,
				want: `volume "no-such-image.raw" not found in pool "` + f.pool + `" on qemu:///system: build the node image with ` + "`make node-image`",
			},
			"a missing storage pool": {
				mutate: func(s map[string]any) { s["storagePool"] = "no-such-pool" }, invalid: true,
				want: `storage pool "no-such-pool" not found on qemu:///system`,
			},
			"a disk smaller than the image": {
				mutate: func(s map[string]any) { s["diskSize"] = "1Mi" }, invalid: true,
				want: "providerSpec.value.diskSize 1Mi is smaller than the image volume",
			},
			"too little memory": {
				mutate: func(s map[string]any) { s["memory"] = "500Mi" }, invalid: true,
				want: "memory: Invalid value: \"500Mi\": must be at least 512Mi",
			},
			"an unreachable host": {
				mutate: func(s map[string]any) { s["uri"] = "qemu+ssh://root@127.0.0.1:1/system?no_verify=1" },
				want:   "cannot reach libvirt at qemu+ssh://root@127.0.0.1:1/system?no_verify=1",
			},
			"a local socket that is not there": {
				mutate: func(s map[string]any) { s["uri"] = "qemu:///system?socket=/nonexistent/libvirt-sock" },
				want:   "check that libvirtd runs on that host and that the URI is right",
			},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				m := f.machineWith("bad", tc.mutate)
				f.cleanup(t, m)
				err := f.p.Create(ctx, m)
				if err == nil || !strings.Contains(err.Error(), tc.want) || provider.IsInvalidConfiguration(err) != tc.invalid {
					t.Fatalf("Create: %v (invalid configuration: %v); want an error saying %q (invalid configuration: %v)", err, provider.IsInvalidConfiguration(err), tc.want, tc.invalid)
				}
				t.Logf("Create: %v", err)
				if ok, err := f.p.Exists(ctx, m); ok || err != nil {
					t.Errorf("Exists = %v, %v; want false", ok, err)
				}
				f.expectNothingOf(t, m)
			})
		}
	})

	t.Run("an in-place resize redefines the domain and restarts it once, across a manager restart", func(t *testing.T) {
		m := f.create(t, "resize")
		clock := testclock.NewFakePassiveClock(time.Now())
		// The empty image's guest has no OS to power off: the domain is destroyed at the timeout.
		p := New(Options{ManagerID: f.managerID, ShutdownTimeout: time.Minute, Clock: clock})
		desired := m.DeepCopy()
		desired.Spec.ProviderSpec = f.machineWith(m.Name, func(s map[string]any) { s["memory"] = "1Gi"; s["vcpus"] = 2 }).Spec.ProviderSpec
		plan, err := p.CanUpdateInPlace(ctx, m, desired)
		if want := []string{"spec.providerSpec.value.vcpus", "spec.providerSpec.value.memory"}; err != nil || !slices.Equal(plan.Paths, want) || len(plan.Unsupported) > 0 || !plan.Disruptive {
			t.Fatalf("plan %+v, %v; want %v, disruptive", plan, err, want)
		}
		moved := desired.DeepCopy()
		moved.Spec.ProviderSpec = f.machineWith(m.Name, func(s map[string]any) { s["memory"] = "1Gi"; s["storagePool"] = "elsewhere" }).Spec.ProviderSpec
		if plan, err := p.CanUpdateInPlace(ctx, m, moved); err != nil || !slices.Equal(plan.Unsupported, []string{"spec.providerSpec.value.storagePool"}) {
			t.Fatalf("plan %+v, %v; want the pool unsupported", plan, err)
		}

		dom, _, _ := lookup(f.conn, m.UID)
		before := dom.ID
		if _, ok := provider.AsRequeueAfter(p.UpdateInPlace(ctx, desired)); !ok {
			t.Fatal("UpdateInPlace returned no RequeueAfter while the guest is asked to power off")
		}
		live, persistent := f.sizes(t, m)
		if live != (shape{MemoryMiB: 512, VCPUs: 1}) || persistent != (shape{MemoryMiB: 1024, VCPUs: 2}) {
			t.Errorf("after the first call the domain runs %v and is defined with %v; want 512 MiB and 1 vCPU, 1024 MiB and 2 vCPUs", live, persistent)
		}
		if _, ok := provider.AsRequeueAfter(p.UpdateInPlace(ctx, desired)); !ok {
			t.Fatal("UpdateInPlace returned no RequeueAfter within the shutdown timeout")
		}
		// The manager restarts: a new provider, with nothing in memory, finds the restart under way.
		clock.SetTime(clock.Now().Add(time.Minute))
		restarted := New(Options{ManagerID: f.managerID, ShutdownTimeout: time.Minute, Clock: clock})
		if err := restarted.UpdateInPlace(ctx, desired); err != nil {
			t.Fatalf("at the timeout: %v; want the domain destroyed and started with the new size", err)
		}
		dom, _, _ = lookup(f.conn, m.UID)
		if live, persistent := f.sizes(t, m); dom.ID == before || live != (shape{MemoryMiB: 1024, VCPUs: 2}) || persistent != live {
			t.Errorf("domain id %d (was %d) runs %v, defined with %v; want it restarted with 1024 MiB and 2 vCPUs", dom.ID, before, live, persistent)
		}
		for _, flags := range []libvirt.DomainXMLFlags{0, libvirt.DomainXMLInactive} {
			if d, err := readDomainXML(f.conn, dom, flags); err != nil || d.Metadata.Restart != nil {
				t.Errorf("XML (flags %d): restart mark %+v, %v; want none", flags, d.Metadata.Restart, err)
			}
		}
		if err := restarted.UpdateInPlace(ctx, desired); err != nil {
			t.Fatal(err)
		}
		if again, _, _ := lookup(f.conn, m.UID); again.ID != dom.ID {
			t.Errorf("a call after the update restarted the domain again (id %d, then %d)", dom.ID, again.ID)
		}
		if plan, err := restarted.CanUpdateInPlace(ctx, desired, desired); err != nil || len(plan.Paths)+len(plan.Unsupported) > 0 {
			t.Errorf("after the update the plan is %+v, %v; want empty", plan, err)
		}

		if err := f.conn.DomainDestroy(dom); err != nil {
			t.Fatal(err)
		}
		smaller := desired.DeepCopy()
		smaller.Spec.ProviderSpec = f.machine(m.Name).Spec.ProviderSpec
		if err := restarted.UpdateInPlace(ctx, smaller); err == nil || !strings.Contains(err.Error(), "is shut off, and not by its in-place update") {
			t.Fatalf("UpdateInPlace of a domain stopped behind its back: %v; want it left stopped, saying so", err)
		}
		if state, _, _ := f.conn.DomainGetState(dom, 0); state != stateShutoff {
			t.Errorf("state %s; want it left shut off", stateName(state))
		}
	})

	t.Run("an unreachable host is an error once the Machine has a providerID", func(t *testing.T) {
		m := f.machineWith("gone", func(s map[string]any) { s["uri"] = "qemu+ssh://root@127.0.0.1:1/system?no_verify=1" })
		m.Spec.ProviderID = "libvirt:///" + string(m.UID)
		if _, err := f.p.Exists(ctx, m); err == nil || !strings.Contains(err.Error(), "cannot reach libvirt") {
			t.Fatalf("Exists: %v; want the unreachable host reported", err)
		}
		if err := f.p.Delete(ctx, m); err == nil {
			t.Fatal("Delete succeeded without reaching the host its instance is on")
		}
	})
}

func setUp(t *testing.T) *fixture {
	t.Helper()
	logf.SetLogger(testr.New(t))
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make controlplane` and export KUBEBUILDER_ASSETS=<repository>/bin/k8s/1.37.2")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 90 * time.Second, ControlPlaneStopTimeout: 30 * time.Second}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s: %v", assets, err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	k8s, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	conn, err := libvirt.ConnectToURI(&url.URL{Scheme: "qemu", Path: "/system"})
	if err != nil {
		t.Fatalf("cannot reach libvirtd at %s (%v): run providers/libvirt/hack/host-setup.sh as root", testURI, err)
	}
	t.Cleanup(func() { _ = conn.Disconnect() })
	f := &fixture{conn: conn, pool: envOr("MACHINEAPI_LIBVIRT_POOL", api.DefaultPool), k8s: k8s, managerID: "test-" + randomHex(4), uids: map[types.UID]bool{}}
	f.image = os.Getenv("MACHINEAPI_NODE_IMAGE_VOLUME")
	if f.image == "" {
		f.image = f.emptyImage(t)
	}
	// The provider gets the cluster as the manager gives it (the manager is not started: the
	// provider uses its configuration, scheme and event recorder, and a client of its own).
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: manager.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	f.p = New(Options{ManagerID: f.managerID})
	if err := f.p.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	// Registered now, so it runs after every test's own clean-up: nothing of this manager may be left.
	t.Cleanup(func() { f.expectNoLeftovers(t) })
	return f
}

// emptyImage makes a 16 MiB raw volume for the tests' domains to boot (SeaBIOS finds nothing).
func (f *fixture) emptyImage(t *testing.T) string {
	name := "machineapi-test-image-" + randomHex(4) + ".raw"
	data, err := renderRaw(name, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	vol, err := f.conn.StorageVolCreateXML(f.poolHandle(t), string(data), 0)
	if err != nil {
		t.Fatalf("creating the test image in pool %s: %v", f.pool, err)
	}
	t.Cleanup(func() { _ = f.conn.StorageVolDelete(vol, 0) })
	return name
}

func (f *fixture) poolHandle(t *testing.T) libvirt.StoragePool {
	p, found, err := pool(f.conn, f.pool)
	if err != nil || !found {
		t.Fatalf("storage pool %s: found %v, %v (providers/libvirt/hack/host-setup.sh defines it)", f.pool, found, err)
	}
	return p
}

// machine is a valid Machine: the smallest qemu domain on the loopback user network.
func (f *fixture) machine(name string) *v1beta1.Machine { return f.machineWith(name, nil) }

func (f *fixture) machineWith(name string, mutate func(map[string]any)) *v1beta1.Machine {
	spec := map[string]any{
		"image":      map[string]any{"pool": f.pool, "volume": f.image},
		"domainType": "qemu",
		"vcpus":      1,
		"memory":     "512Mi",
		"network":    map[string]any{"userLoopback": map[string]any{}},
	}
	if mutate != nil {
		mutate(spec)
	}
	raw, _ := json.Marshal(spec)
	uid := types.UID(uuid.NewUUID())
	f.mu.Lock()
	f.uids[uid] = true
	f.mu.Unlock()
	return &v1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid},
		Spec:       v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
	}
}

// create creates a valid Machine's domain and deletes it when the test ends.
func (f *fixture) create(t *testing.T, name string) *v1beta1.Machine {
	t.Helper()
	m := f.machine(name)
	f.cleanup(t, m)
	if err := f.p.Create(context.Background(), m); err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	return m
}

// cleanup deletes what the Machine may have on the host and in the cluster when the test ends.
func (f *fixture) cleanup(t *testing.T, m *v1beta1.Machine) {
	t.Cleanup(func() {
		if err := f.p.Delete(context.Background(), m); err != nil && !isUnreachable(err) {
			t.Errorf("deleting machine %s: %v", m.Name, err)
		}
	})
}

// domains are the domains this suite's manager defined.
func (f *fixture) domains(t *testing.T) []libvirt.Domain {
	doms, _, err := f.conn.ConnectListAllDomains(1, libvirt.ConnectListDomainsActive|libvirt.ConnectListDomainsInactive)
	if err != nil {
		t.Fatal(err)
	}
	var mine []libvirt.Domain
	for _, d := range doms {
		data, err := f.conn.DomainGetXMLDesc(d, 0)
		if err != nil {
			continue
		}
		if r, err := readDomain(data); err == nil && r.Metadata.Machine != nil && r.Metadata.Machine.Manager == f.managerID {
			mine = append(mine, d)
		}
	}
	return mine
}

// expectNothingOf checks that the Machine has no domain, volume or token.
func (f *fixture) expectNothingOf(t *testing.T, m *v1beta1.Machine) {
	t.Helper()
	if _, found, _ := lookup(f.conn, m.UID); found {
		t.Errorf("machine %s has a domain", m.Name)
	}
	for _, v := range []string{diskVolume(m.UID), seedVolume(m.UID)} {
		if _, found, _ := volume(f.conn, f.poolHandle(t), v); found {
			t.Errorf("machine %s has volume %s", m.Name, v)
		}
	}
	if _, found, _ := bootstrap.FindToken(context.Background(), f.k8s, m.UID); found {
		t.Errorf("machine %s has a bootstrap token", m.Name)
	}
}

// expectNoLeftovers fails the suite if a domain, volume or token of its manager is left, and
// removes it.
func (f *fixture) expectNoLeftovers(t *testing.T) {
	for _, d := range f.domains(t) {
		t.Errorf("domain %s was left behind", d.Name)
		_ = f.conn.DomainDestroy(d)
		_ = f.conn.DomainUndefineFlags(d, libvirt.DomainUndefineNvram)
	}
	vols, _, err := f.conn.StoragePoolListAllVolumes(f.poolHandle(t), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vols {
		if f.madeHere(v.Name) {
			t.Errorf("volume %s was left behind", v.Name)
			_ = f.conn.StorageVolDelete(v, 0)
		}
	}
	secrets := &corev1.SecretList{}
	if err := f.k8s.List(context.Background(), secrets, client.InNamespace("kube-system"), client.HasLabels{bootstrap.MachineUIDLabel}); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		t.Errorf("bootstrap token %s was left behind", s.Name)
	}
}

// madeHere reports whether a volume belongs to a Machine of this run (the API server, and so
// every token in it, is the suite's own).
func (f *fixture) madeHere(volumeName string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for uid := range f.uids {
		if volumeName == diskVolume(uid) || volumeName == seedVolume(uid) {
			return true
		}
	}
	return false
}

// download reads a volume of the pool.
func (f *fixture) download(t *testing.T, name string) []byte {
	v, found, err := volume(f.conn, f.poolHandle(t), name)
	if err != nil || !found {
		t.Fatalf("volume %s: %v", name, err)
	}
	var buf bytes.Buffer
	if err := f.conn.StorageVolDownload(v, &buf, 0, 0, 0); err != nil {
		t.Fatalf("downloading volume %s: %v", name, err)
	}
	return buf.Bytes()
}

// sizes reads the Machine's domain's live and persistent sizes.
func (f *fixture) sizes(t *testing.T, m *v1beta1.Machine) (live, persistent shape) {
	t.Helper()
	dom, _, err := lookup(f.conn, m.UID)
	if err != nil {
		t.Fatal(err)
	}
	for flags, out := range map[libvirt.DomainXMLFlags]*shape{0: &live, libvirt.DomainXMLInactive: &persistent} {
		d, err := readDomainXML(f.conn, dom, flags)
		if err != nil {
			t.Fatal(err)
		}
		if *out, err = d.shape(); err != nil {
			t.Fatal(err)
		}
		if ok, _ := d.sized(*out); !ok {
			t.Errorf("domain %s (XML flags %d) has a current size other than its maximum", dom.Name, flags)
		}
	}
	return live, persistent
}

// seedMember is a member of a seed archive.
func seedMember(t *testing.T, seed []byte, name string) []byte {
	tr := tar.NewReader(bytes.NewReader(seed))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("the seed has no %s: %v", name, err)
		}
		if h.Name == name {
			data, _ := io.ReadAll(tr)
			return data
		}
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
