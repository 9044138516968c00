package nodelink_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
	"machineapi.dev/nodelink/internal/test/envtest"
	"machineapi.dev/nodelink/internal/test/testmachine"
)

// A workload cluster with its own API server, as cluster-api runs it: Machines in the management
// cluster (the suite's manager), Nodes in the workload cluster, one linker per workload cluster
// started and stopped at run time.
var _ = Describe("Linking Machines to Nodes of a remote workload cluster", Ordered, func() {
	const probeEvery = time.Second
	var (
		remote       *envtest.Environment
		remoteClient client.Client
		ns           string
		clock        *clocktesting.FakeClock
		selector     labels.Selector

		mu     sync.Mutex
		events []nodelink.Reachability
	)

	BeforeAll(func() {
		var err error
		remote, err = envtest.Start(envtest.Options{WithoutCRDs: true, StopTimeout: 3 * time.Second})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = remote.Stop() }) // stopped already by the last spec, normally
		remoteClient, err = client.New(remote.Config, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		ns = newNamespace()
		clock = clocktesting.NewFakeClock(time.Now())
		selector = labels.SelectorFromSet(labels.Set{clusterNameLabel: "remote"})
	})

	// startWith runs a linker for the workload cluster reached through cfg and returns how to stop
	// it and wait for it.
	startWith := func(cfg *rest.Config) (*nodelink.Linker[*testmachine.Machine], func()) {
		GinkgoHelper()
		l, err := nodelink.NewRemoteLinker(ctx, mgr, cfg, testmachine.Adapter{}, nodelink.Options{
			Name:          "nodelink-remote",
			Selector:      selector,
			Clock:         clock,
			ProbeInterval: probeEvery,
			OnReachabilityChange: func(r nodelink.Reachability) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, r)
			},
		})
		Expect(err).NotTo(HaveOccurred())
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- l.Start(lctx) }()
		return l, func() {
			GinkgoHelper()
			cancel()
			Eventually(done).Should(Receive(BeNil()), "Start must return nil once its context is cancelled")
		}
	}
	start := func() (*nodelink.Linker[*testmachine.Machine], func()) {
		GinkgoHelper()
		return startWith(remote.Config)
	}

	remoteMachine := func(id string) string {
		GinkgoHelper()
		name := unique("m")
		create(builder.Machine(ns, name).WithLabel(clusterNameLabel, "remote").WithProviderID(id).Build())
		return name
	}

	remoteNode := func(id string) string {
		GinkgoHelper()
		name := unique("node")
		Expect(remoteClient.Create(ctx, builder.Node(name).WithProviderID(id).Build())).To(Succeed())
		return name
	}

	reachable := func() []bool {
		mu.Lock()
		defer mu.Unlock()
		var out []bool
		for _, e := range events {
			out = append(out, e.Reachable)
		}
		return out
	}

	var firstMachine, firstNode string

	It("links a management-cluster Machine to its Node in the workload cluster, and stops cleanly", func() {
		l, stopLinker := start()
		id := "sim:///" + unique("i")
		// A Node with the same providerID in the management cluster must not be taken: the
		// machine belongs to the workload cluster's linker.
		localDecoy := unique("decoy")
		Expect(k8sClient.Create(ctx, builder.Node(localDecoy).WithProviderID(id).Build())).To(Succeed())
		firstMachine, firstNode = remoteMachine(id), remoteNode(id)

		Eventually(getLink(ns, firstMachine)).Should(Equal(linkedTo(firstNode)))
		Eventually(func(g Gomega) map[string]string {
			var n corev1.Node
			g.Expect(remoteClient.Get(ctx, client.ObjectKey{Name: firstNode}, &n)).To(Succeed())
			return n.Annotations
		}).Should(HaveKeyWithValue(annMachine, firstMachine))
		Expect(getNode(localDecoy)(Default).Annotations).NotTo(HaveKey(annMachine))
		Eventually(reachable).Should(Equal([]bool{true}))
		Expect(l.Reachability().Reachable).To(BeTrue())

		stopLinker()
	})

	It("links nothing while stopped, and links again with a new linker for the same cluster", func() {
		id := "sim:///" + unique("i")
		name, node := remoteMachine(id), remoteNode(id)
		Consistently(getMachine(ns, name)).Should(Equal(machineState{}), "the stopped linker must not act any more")

		_, stopLinker := start()
		DeferCleanup(stopLinker)
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))
	})

	// The linker reaches the workload API server through a proxy that the spec cuts, as a network
	// partition or a load balancer outage would: the server keeps running, so a Node can register
	// while the linker cannot see it (connections are refused meanwhile, as by a stopped server),
	// and the linker's Node watch reconnects with client-go's backoff once the proxy is back.
	It("reports unlinked Machines NodesUnreachable while the workload API server is out of reach, and matches them again once its Node cache has caught up", func() {
		proxy := startTCPProxy(remote.Config.Host)
		DeferCleanup(proxy.Close)
		cfg := rest.CopyConfig(remote.Config)
		cfg.Host = proxy.URL()
		_, stopLinker := startWith(cfg)
		DeferCleanup(stopLinker)

		idLinked, idLate, idNever := "sim:///"+unique("i"), "sim:///"+unique("i"), "sim:///"+unique("i")
		linked, linkedNode := remoteMachine(idLinked), remoteNode(idLinked)
		Eventually(getLink(ns, linked)).Should(Equal(linkedTo(linkedNode)))
		late := remoteMachine(idLate)
		Eventually(getMachine(ns, late)).Should(HaveField("Reason", nodelink.ReasonWaitingForNode))
		reasons := watchReasons(ns, late)

		By("cutting the linker off the workload API server")
		proxy.Cut()
		unreachable := And(HaveField("NodeRef", ""), HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", nodelink.ReasonNodesUnreachable),
			HaveField("Message", MatchRegexp(`^the Node side's API server https://127\.0\.0\.1:\d+ has not answered since \S+ \(.+\): a Node that registered meanwhile cannot be seen; waiting for it to answer$`)))
		Eventually(func(g Gomega) machineState {
			clock.Step(probeEvery)
			return getMachine(ns, late)(g)
		}).Should(unreachable, "a Machine waiting for its Node when the outage starts")
		never := remoteMachine(idNever)
		Eventually(getMachine(ns, never)).Should(unreachable, "a Machine created during the outage")
		lateNode := remoteNode(idLate) // registers where the linker cannot see it
		Consistently(getLink(ns, linked)).Should(Equal(linkedTo(linkedNode)), "a linked Machine keeps its Node")
		Expect(getMachine(ns, late)(Default)).To(unreachable)

		By("letting the linker reach the workload API server again")
		proxy.Restore()
		// Nodes change all the time in a real cluster (kubelet heartbeats); here one Node does, so
		// that the Node cache reaches the server's resourceVersion without waiting for a watch
		// bookmark (about a minute) when the watch resumes rather than relists.
		heartbeat := remoteNode("sim:///" + unique("heartbeat"))
		beat := 0
		Eventually(func(g Gomega) machineState {
			beat++
			patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"test.nodelink/heartbeat":"%d"}}}`, beat))
			g.Expect(remoteClient.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: heartbeat}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
			clock.Step(probeEvery)
			return getLink(ns, never)(g)
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Equal(machineState{Status: metav1.ConditionFalse, Reason: nodelink.ReasonWaitingForNode}),
			"a Machine without a Node waits again once the linker sees the Nodes")
		Eventually(getLink(ns, late)).Should(Equal(linkedTo(lateNode)), "the Node that registered during the outage is linked")
		Expect(getLink(ns, linked)(Default)).To(Equal(linkedTo(linkedNode)))
		Eventually(reasons).Should(Equal([]string{nodelink.ReasonWaitingForNode, nodelink.ReasonNodesUnreachable, nodelink.ReasonLinked}),
			"never reported waiting for a Node while the one that registered meanwhile could not be seen yet")
	})

	// A cluster-manager restarting during a workload cluster's outage builds its linker then: the
	// build must not need that API server (no discovery), and the linker links once it answers.
	It("can be built while the workload API server is unreachable, and links once it answers", func() {
		proxy := startTCPProxy(remote.Config.Host)
		DeferCleanup(proxy.Close)
		proxy.Cut()
		cfg := rest.CopyConfig(remote.Config)
		cfg.Host = proxy.URL()
		mu.Lock()
		events = nil
		mu.Unlock()
		_, stopLinker := startWith(cfg) // fails the spec if NewRemoteLinker returns an error
		DeferCleanup(stopLinker)
		Eventually(func() []bool {
			clock.Step(probeEvery)
			return reachable()
		}).Should(Equal([]bool{false}), "the outage is reported")

		id := "sim:///" + unique("i")
		name, node := remoteMachine(id), remoteNode(id)
		proxy.Restore()
		Eventually(func(g Gomega) machineState {
			clock.Step(probeEvery)
			return getLink(ns, name)(g)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal(linkedTo(node)))
		Expect(reachable()).To(Equal([]bool{false, true}))
	})

	It("tells the caller when the workload API server is unreachable, and unlinks nothing", func() {
		mu.Lock()
		events = nil
		mu.Unlock()
		l, stopLinker := start()
		Eventually(reachable).Should(Equal([]bool{true}))

		// The API server goes away (killed if it does not stop within 3s, hence no error check).
		_ = remote.Stop()
		Eventually(func() []bool {
			clock.Step(probeEvery)
			return reachable()
		}).Should(Equal([]bool{true, false}))
		got := l.Reachability()
		Expect(got.Reachable).To(BeFalse())
		Expect(got.Err).To(HaveOccurred())

		Consistently(getMachine(ns, firstMachine)).Should(And(
			HaveField("NodeRef", firstNode), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", nodelink.ReasonLinked)))
		stopLinker()
	})
})

// watchReasons watches a Machine of the suite's API server and returns the NodeLinked reasons it
// has had since, each once per change, in order: short-lived states that polling could miss are
// seen too.
func watchReasons(ns, name string) func() []string {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: envtest.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &testmachine.MachineList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var mu sync.Mutex
	var seen []string
	go func() {
		for e := range w.ResultChan() {
			m, ok := e.Object.(*testmachine.Machine)
			if !ok || e.Type == watch.Bookmark {
				continue
			}
			c := meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked)
			mu.Lock()
			if c != nil && (len(seen) == 0 || seen[len(seen)-1] != c.Reason) {
				seen = append(seen, c.Reason)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// tcpProxy forwards TCP connections to an API server until it is cut: then it closes the
// connections it carries and stops listening, so that clients get "connection refused" while the
// API server keeps serving everyone else. Restore listens again on the same address.
type tcpProxy struct {
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func startTCPProxy(targetURL string) *tcpProxy {
	GinkgoHelper()
	u, err := url.Parse(targetURL)
	Expect(err).NotTo(HaveOccurred())
	p := &tcpProxy{target: u.Host, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p
}

// URL is the proxy's address for a rest.Config: the API server's certificate is valid for
// 127.0.0.1, whatever the port.
func (p *tcpProxy) URL() string { return "https://" + p.addr }

// Cut closes every connection and stops listening.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Restore listens again on the proxy's address.
func (p *tcpProxy) Restore() {
	GinkgoHelper()
	var ln net.Listener
	Eventually(func() (err error) {
		ln, err = net.Listen("tcp", p.addr)
		return err
	}).Should(Succeed(), "listening again on %s", p.addr)
	p.serve(ln)
}

// Close cuts the proxy for good.
func (p *tcpProxy) Close() { p.Cut() }

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return // cut
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			if !p.track(in, out) {
				continue
			}
			go p.pipe(in, out)
			go p.pipe(out, in)
		}
	}()
}

// track records a forwarded pair of connections, or closes them when the proxy was cut meanwhile.
func (p *tcpProxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_, _ = in.Close(), out.Close()
		return false
	}
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	return true
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_, _ = dst.Close(), src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
