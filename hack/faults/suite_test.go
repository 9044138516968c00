package faults_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/hack/faults"
	"machineapi.dev/hack/tools/localstack"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var (
	binDir    = flag.String("bin-dir", "", "folder holding the machine-manager and cluster-manager binaries (default <root>/bin)")
	k8sBinDir = flag.String("k8s-bin-dir", os.Getenv("KUBEBUILDER_ASSETS"), "folder holding the source-built etcd and kube-apiserver (bin/k8s/<version>)")
	rootDir   = flag.String("root", "../..", "repository root, for the CRDs")
	knownBugs = flag.Bool("known-bugs", false, "also run the specs that reproduce known product bugs (docs/reliability.md); they fail until the bugs are fixed")
	promDir   = flag.String("prometheus-bin-dir", os.Getenv("PROMETHEUS_BIN_DIR"), "folder holding the prometheus binary built by make prometheus (bin/prometheus/<version>), for the observability scenario")
	keepState = flag.Bool("keep-state", false, "keep the state folder (etcd data, manager logs, sim instances) even when every scenario passes")
)

// The suite's shared world: one control plane for every scenario, the suite's own watch, and a
// client that reads straight from the API server.
var (
	ctx       context.Context
	plane     *faults.Plane
	restCfg   *rest.Config
	k8s       client.Client
	clientset kubernetes.Interface
	tracker   *faults.Tracker
	stateDir  string
	scheme    = runtime.NewScheme()
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Fault matrix: nothing lost, nothing duplicated, nothing deleted undrained")
}

// binaries are the programs the suite runs, by role.
var binaries = map[string]string{}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1beta1.AddToScheme(scheme)).To(Succeed())
	Expect(clusterv1.AddToScheme(scheme)).To(Succeed())

	root, err := filepath.Abs(*rootDir)
	Expect(err).NotTo(HaveOccurred())
	Expect(preflight(root)).To(Succeed(), "the suite needs the binaries: run `make test-faults`")

	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)

	stateDir, err = os.MkdirTemp("", "machineapi-faults-")
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("state (etcd, logs, sim instances) in %s\n", stateDir)
	DeferCleanup(func() {
		if *keepState || CurrentSpecReport().Failed() || suiteFailed {
			fmt.Fprintf(os.Stderr, "fault matrix: state kept in %s\n", stateDir)
			return
		}
		_ = os.RemoveAll(stateDir)
	})

	plane, err = faults.StartPlane(ctx, *k8sBinDir, filepath.Join(stateDir, "plane"), faults.AllControllers)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(plane.Stop)

	restCfg, err = clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	restCfg.QPS, restCfg.Burst = 500, 1000
	applier, err := localstack.NewApplier(restCfg)
	Expect(err).NotTo(HaveOccurred())
	files, err := localstack.ManifestFiles(
		filepath.Join(root, "machine-api/config/crd/bases"),
		filepath.Join(root, "cluster-api/config/crd/bases"),
		filepath.Join(root, "machine-api/config/admission"),
	)
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	_, err = applier.ApplyFiles(ctx, files...)
	Expect(err).NotTo(HaveOccurred())

	k8s, err = client.New(restCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(restCfg)
	Expect(err).NotTo(HaveOccurred())

	// The tracker's watches wait for the API server while it is down, so they are back as soon
	// as it serves again after a restart (faults.PatientTransport).
	watchCfg := rest.CopyConfig(restCfg)
	watchCfg.Wrap(faults.PatientTransport)
	watchCache, err := cache.New(watchCfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
	Expect(err).NotTo(HaveOccurred())
	tracker, err = faults.NewTracker(ctx, watchCache)
	Expect(err).NotTo(HaveOccurred())
	go func() { _ = watchCache.Start(ctx) }()
	Expect(watchCache.WaitForCacheSync(ctx)).To(BeTrue())
})

var suiteFailed bool

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		suiteFailed = true
	}
})

// KnownBug skips the rest of a spec that reproduces a known product bug, unless -known-bugs is
// given: the spec then runs, and fails until the bug is fixed. Remove the call with the fix.
func KnownBug(what string) {
	if !*knownBugs {
		Skip("known bug, run with -known-bugs to reproduce it: " + what)
	}
}

// preflight fails, naming what is missing, when a binary the suite runs is not there.
func preflight(root string) error {
	if *binDir == "" {
		*binDir = filepath.Join(root, "bin")
	}
	if *k8sBinDir == "" {
		return errors.New("-k8s-bin-dir (or KUBEBUILDER_ASSETS) is not set: run `make test-faults`, or pass -k8s-bin-dir=<repo>/bin/k8s/1.37.2")
	}
	var errs []error
	check := func(dir, name string) string {
		path := filepath.Join(dir, name)
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s is missing or not executable", path))
		}
		return path
	}
	check(*k8sBinDir, "etcd")
	check(*k8sBinDir, "kube-apiserver")
	binaries["machine-manager"] = check(*binDir, "machine-manager")
	binaries["cluster-manager"] = check(*binDir, "cluster-manager")
	binaries["nodelink"] = check(*binDir, "nodelink")
	for _, crds := range []string{"machine-api/config/crd/bases", "cluster-api/config/crd/bases"} {
		if _, err := os.Stat(filepath.Join(root, crds)); err != nil {
			errs = append(errs, fmt.Errorf("no CRDs at %s (is -root the repository root?)", filepath.Join(root, crds)))
		}
	}
	return errors.Join(errs...)
}
