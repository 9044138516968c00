package vms_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"machineapi.dev/drain/testplane/process"
	"machineapi.dev/hack/tools/localstack"
	"machineapi.dev/hack/vms"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var (
	rootDir     = flag.String("root", "../..", "repository root: the CRDs, the bootstrap RBAC, the provider's sources")
	k8sBinDir   = flag.String("k8s-bin-dir", os.Getenv("KUBEBUILDER_ASSETS"), "folder holding the source-built etcd, kube-apiserver, kube-controller-manager and kube-scheduler (bin/k8s/<version>)")
	managerBin  = flag.String("manager", "", "the machine-manager-libvirt binary (empty: built from providers/libvirt into the state folder)")
	imageVolume = flag.String("image-volume", os.Getenv("MACHINEAPI_NODE_IMAGE_VOLUME"), "the node image's volume in the pool (providers/libvirt/hack/import-node-image.sh prints it)")
	poolName    = flag.String("pool", "default", "the libvirt storage pool holding the image, where the VMs' volumes go")
	libvirtURI  = flag.String("uri", "qemu:///system", "the local libvirt host")
	managerArgs = flag.String("manager-args", "", "more flags for machine-manager-libvirt, space-separated (--libvirt-initialization-taint-key= shows the labels-before-pods spec fail)")
	keepState   = flag.Bool("keep-state", false, "keep the state folder (etcd data, component and manager logs) even when every spec passes")
)

// The suite's world: one control plane, one manager, one namespace, the libvirt host, and the
// watches that run from before the first VM boots.
var (
	ctx       context.Context
	plane     *localstack.Plane
	k8s       client.Client
	clientset kubernetes.Interface
	host      *vms.Host
	manager   *vms.Manager
	recorder  *vms.Recorder
	monitor   *vms.Monitor
	ns        string
	managerID string
	stateDir  string
	scheme    = runtime.NewScheme()
)

// maxAlive is how many VMs may run at once: each takes about 40 % of a core idle under TCG, and
// CI hosts have 2 cores.
const maxAlive = 2

func TestVMs(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyPollingInterval(2 * time.Second)
	SetDefaultEventuallyTimeout(2 * time.Minute)
	RunSpecs(t, "libvirt VMs: real kubelets joining, drained, replaced, resized, gone")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1beta1.AddToScheme(scheme)).To(Succeed())
	root, err := filepath.Abs(*rootDir)
	Expect(err).NotTo(HaveOccurred())
	Expect(preflight()).To(Succeed(), "make test-vms prepares all of it")

	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	GinkgoWriter.Printf("host load average (1 min) at the start: %s\n", vms.LoadAverage())

	host, err = vms.ConnectHost(*libvirtURI, *poolName)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(host.Close)
	Expect(host.HasVolume(*imageVolume)).To(BeTrue(), "the node image volume %s is not in pool %s: import it with providers/libvirt/hack/import-node-image.sh", *imageVolume, *poolName)

	stateDir, err = os.MkdirTemp("", "machineapi-vms-")
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("state (etcd, logs) in %s; the VMs' consoles in /var/log/libvirt/qemu/\n", stateDir)
	DeferCleanup(func() {
		if *keepState || suiteFailed {
			fmt.Fprintf(os.Stderr, "VM suite: state kept in %s\n", stateDir)
			return
		}
		_ = os.RemoveAll(stateDir)
	})

	apiPort, err := process.FreePort()
	Expect(err).NotTo(HaveOccurred())
	etcdPort, err := localstack.FreePortPair()
	Expect(err).NotTo(HaveOccurred())
	plane, err = localstack.Start(ctx, localstack.Config{
		BinDir: *k8sBinDir, StateDir: filepath.Join(stateDir, "plane"), APIServerPort: apiPort, EtcdPort: etcdPort,
		ControllerManager: []string{"*"}, Scheduler: true, NodeBootstrap: true, EtcdUnsafeNoFsync: true, Log: GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(plane.Stop)

	restCfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	applier, err := localstack.NewApplier(restCfg)
	Expect(err).NotTo(HaveOccurred())
	crds, err := localstack.ManifestFiles(filepath.Join(root, "machine-api/config/crd/bases"), filepath.Join(root, "machine-api/config/admission"))
	Expect(err).NotTo(HaveOccurred())
	Expect(crds).NotTo(BeEmpty())
	_, err = applier.ApplyFiles(ctx, crds...)
	Expect(err).NotTo(HaveOccurred())
	_, err = localstack.ApplyNodeBootstrap(ctx, applier, root)
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(restCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(restCfg)
	Expect(err).NotTo(HaveOccurred())

	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "vms-"}}
	Expect(k8s.Create(ctx, namespace)).To(Succeed())
	ns = namespace.Name
	// Pods need the namespace's default service account, which kube-controller-manager makes.
	Eventually(func() error {
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(Succeed())
	recorder, err = vms.StartRecorder(ctx, clientset, ns, labels.SelectorFromSet(labels.Set{vms.AppLabel: vms.AppValue}))
	Expect(err).NotTo(HaveOccurred())

	managerID = "vms-e2e-" + randomHex(3)
	monitor = vms.StartMonitor(ctx, host, managerID, k8s, ns, 2*time.Second)
	// Registered before the manager starts, so it runs after the manager has stopped: whatever
	// the manager did not delete is removed here, and the suite fails for it.
	DeferCleanup(sweep)

	if *managerBin == "" {
		*managerBin, err = vms.BuildManager(root, stateDir)
		Expect(err).NotTo(HaveOccurred())
	}
	manager, err = vms.StartManager(ctx, *managerBin, plane.Kubeconfig, ns, managerID, filepath.Join(stateDir, "machine-manager-libvirt.log"), strings.Fields(*managerArgs)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(manager.Stop)
	GinkgoWriter.Printf("control plane on %s, namespace %s, manager %s (log %s), image %s in pool %s\n",
		plane.Server, ns, managerID, manager.LogFile(), *imageVolume, *poolName)
})

var suiteFailed bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		suiteFailed = true
	}
})

// After every spec: the manager still runs, and never were more than maxAlive VMs alive.
var _ = AfterEach(func() {
	Expect(manager.Exited()).To(Succeed())
	most, when := monitor.MostAlive()
	Expect(most).To(BeNumerically("<=", maxAlive), "VMs alive at once: %s", when)
})

// sweep removes whatever of the suite's manager is left on the host — domains, the volumes of
// every Machine the suite saw — and its bootstrap tokens, and fails the suite if there was any.
func sweep() {
	var left []string
	doms, err := host.Domains(managerID)
	Expect(err).NotTo(HaveOccurred())
	for _, d := range doms {
		left = append(left, "domain "+d.Name)
		Expect(host.Remove(d)).To(Succeed())
	}
	for _, uid := range monitor.MachineUIDs() {
		vols, err := host.VolumesOf(uid)
		Expect(err).NotTo(HaveOccurred())
		for _, v := range vols {
			left = append(left, "volume "+v)
			Expect(host.DeleteVolume(v)).To(Succeed())
		}
	}
	tokens, err := bootstrapTokens()
	Expect(err).NotTo(HaveOccurred())
	for _, t := range tokens {
		left = append(left, "bootstrap token "+t)
	}
	Expect(left).To(BeEmpty(), "left behind by the suite's manager (now removed)")
}

// bootstrapTokens names the bootstrap token Secrets in kube-system: the suite's control plane has
// only those the manager minted.
func bootstrapTokens() ([]string, error) {
	var secrets corev1.SecretList
	if err := k8s.List(ctx, &secrets, client.InNamespace(metav1.NamespaceSystem)); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range secrets.Items {
		if s.Type == corev1.SecretTypeBootstrapToken {
			out = append(out, s.Name)
		}
	}
	return out, nil
}

// preflight fails, naming what is missing, when something the suite needs is not there.
func preflight() error {
	var errs []error
	if *k8sBinDir == "" {
		errs = append(errs, errors.New("-k8s-bin-dir (or KUBEBUILDER_ASSETS) is not set: run `make test-vms`, or pass -k8s-bin-dir=<repo>/bin/k8s/1.37.2"))
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if st, err := os.Stat(filepath.Join(*k8sBinDir, b)); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("%s is missing: run `make controlplane`", filepath.Join(*k8sBinDir, b)))
		}
	}
	if *imageVolume == "" {
		errs = append(errs, errors.New("-image-volume (or MACHINEAPI_NODE_IMAGE_VOLUME) is not set: build the image with `make node-image`, import it with providers/libvirt/hack/import-node-image.sh and pass the name it prints"))
	}
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("the suite reads the VMs' QEMU processes and the system libvirtd's files: run it as root"))
	}
	return errors.Join(errs...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// condition returns a Machine's condition of this type as "Status/Reason: message", or "" when it
// has none.
func condition(m *v1beta1.Machine, typ string) string {
	for _, c := range m.Status.Conditions {
		if c.Type == typ {
			return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return ""
}

// describe is a one-line account of a Machine for progress output and failure messages.
func describe(m *v1beta1.Machine) string {
	node := ""
	if m.Status.NodeRef != nil {
		node = m.Status.NodeRef.Name
	}
	var conds []string
	for _, c := range m.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return fmt.Sprintf("%s phase=%s node=%q %s", m.Name, m.Status.Phase, node, strings.Join(conds, ","))
}
