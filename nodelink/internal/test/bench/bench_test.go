package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
	"machineapi.dev/nodelink/internal/test/envtest"
	"machineapi.dev/nodelink/internal/test/testmachine"
)

// writers is the concurrency of the set-up and raw-write clients: high enough to saturate the
// API server on these machines.
const writers = 64

func BenchmarkLink(b *testing.B) {
	ctrllog.SetLogger(logr.Discard())
	sizes := []int{1000, 5000}
	if s := os.Getenv("NODELINK_BENCH_N"); s != "" {
		sizes = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("NODELINK_BENCH_N=%q: %v", s, err)
			}
			sizes = append(sizes, n)
		}
	}
	workers, _ := strconv.Atoi(os.Getenv("NODELINK_BENCH_WORKERS"))
	for _, n := range sizes {
		b.Run(fmt.Sprintf("pairs=%d", n), func(b *testing.B) {
			for range b.N {
				linkPairs(b, n, workers)
			}
		})
	}
}

// linkPairs runs one measurement on a fresh API server: create n Nodes and n Machines, measure
// the raw write rate with n Node status updates, then start nodelink and time until every
// Machine is linked.
func linkPairs(b *testing.B, n, workers int) {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := envtest.Start(envtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cfg := env.Config
	cfg.QPS = -1 // no client-side limit: the API server is what is measured
	c, err := client.New(cfg, client.Options{Scheme: envtest.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	const ns = "bench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}

	nodeCreates := parallel(b, n, func(i int) error {
		return c.Create(ctx, builder.Node(fmt.Sprintf("node-%d", i)).WithProviderID(providerID(i)).WithInternalIP(ip(i)).Build())
	})
	machineCreates := parallel(b, n, func(i int) error {
		return c.Create(ctx, builder.Machine(ns, fmt.Sprintf("m-%d", i)).WithProviderID(providerID(i)).Build())
	})
	// The raw write floor: n Node status updates, then n Machine status updates (a CRD write
	// costs the API server more than a built-in one), unthrottled, at high concurrency.
	raw := parallel(b, n, func(i int) error {
		patch := []byte(fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
			time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339)))
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		return c.Status().Patch(ctx, node, client.RawPatch(types.StrategicMergePatchType, patch))
	})
	rawMachine := parallel(b, n, func(i int) error {
		patch := []byte(fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Booting","message":"","lastTransitionTime":%q}]}}`,
			time.Now().UTC().Format(time.RFC3339)))
		m := &testmachine.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("m-%d", i)}}
		return c.Status().Patch(ctx, m, client.RawPatch(types.MergePatchType, patch))
	})
	// A link is one Node patch and one Machine status patch: at the raw rates, the API server
	// could link floorLinks pairs per second.
	floorLinks := 1 / (1/raw + 1/rawMachine)

	linked, first, err := watchLinked(ctx, env, n)
	if err != nil {
		b.Fatal(err)
	}
	writesBefore, err := apiserverWrites(ctx, env)
	if err != nil {
		b.Fatal(err)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 envtest.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := nodelink.Setup(ctx, mgr, mgr, testmachine.Adapter{}, nodelink.Options{MaxConcurrentReconciles: workers}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	b.StartTimer()
	go func() { _ = mgr.Start(ctx) }()
	select {
	case <-linked:
	case <-time.After(10 * time.Minute):
		b.Fatalf("not every machine was linked within 10 minutes")
	}
	elapsed := time.Since(start)
	b.StopTimer()
	firstAfter := first.Load().(time.Time).Sub(start)
	writesAfter, err := apiserverWrites(ctx, env)
	if err != nil {
		b.Fatal(err)
	}

	linksPerSec := float64(n) / elapsed.Seconds()
	writes := writesAfter - writesBefore
	writesPerSec := writes / elapsed.Seconds()
	b.ReportMetric(linksPerSec, "links/s")
	b.ReportMetric(writesPerSec, "link-writes/s")
	b.ReportMetric(raw, "raw-node-writes/s")
	b.ReportMetric(rawMachine, "raw-machine-writes/s")
	b.ReportMetric(linksPerSec/floorLinks, "ratio-to-floor")
	b.ReportMetric(writes/float64(n), "writes/link")
	b.Logf("\n| pairs | Node creates/s | Machine creates/s | raw Node status writes/s | raw Machine status writes/s | floor links/s | first link after | all linked after | links/s | ratio to floor | API writes while linking | writes/link | link writes/s | ÷ raw Node writes/s |\n"+
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"+
		"| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f |",
		n, nodeCreates, machineCreates, raw, rawMachine, floorLinks, firstAfter.Round(time.Millisecond), elapsed.Round(time.Millisecond),
		linksPerSec, linksPerSec/floorLinks, writes, writes/float64(n), writesPerSec, writesPerSec/raw)
}

// parallel runs f(0..n-1) on `writers` goroutines and returns the calls per second.
func parallel(b *testing.B, n int, f func(i int) error) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for range writers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// watchLinked returns a channel closed once n Machines are linked (nodeRef set and NodeLinked
// True), as a watching user would see it, and when the first one was.
func watchLinked(ctx context.Context, env *envtest.Environment, n int) (<-chan struct{}, *atomic.Value, error) {
	var first atomic.Value
	ca, err := cache.New(env.Config, cache.Options{Scheme: envtest.Scheme()})
	if err != nil {
		return nil, nil, err
	}
	inf, err := ca.GetInformer(ctx, &testmachine.Machine{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	observe := func(obj any) {
		m, ok := obj.(*testmachine.Machine)
		if !ok || m.Status.NodeRef == nil || !linked(m) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[m.Name] {
			if len(seen) == 0 {
				first.Store(time.Now())
			}
			seen[m.Name] = true
			if len(seen) == n {
				close(done)
			}
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return nil, nil, err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, nil, fmt.Errorf("the watching cache did not sync")
	}
	return done, &first, nil
}

func linked(m *testmachine.Machine) bool {
	for _, c := range m.Status.Conditions {
		if c.Type == nodelink.ConditionNodeLinked {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// apiserverWrites sums the API server's apiserver_request_total over the write verbs.
func apiserverWrites(ctx context.Context, env *envtest.Environment) (float64, error) {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return 0, err
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		if !strings.Contains(line, `verb="PATCH"`) && !strings.Contains(line, `verb="UPDATE"`) &&
			!strings.Contains(line, `verb="CREATE"`) && !strings.Contains(line, `verb="DELETE"`) && !strings.Contains(line, `verb="APPLY"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", line, err)
		}
		if os.Getenv("NODELINK_BENCH_DEBUG") != "" && v > 10 {
			fmt.Println(line)
		}
		sum += v
	}
	return sum, sc.Err()
}

func providerID(i int) string { return fmt.Sprintf("bench:///i-%06d", i) }

func ip(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }
