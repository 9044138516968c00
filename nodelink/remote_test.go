/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package nodelink_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

	// start runs a linker for the workload cluster and returns how to stop it and wait for it.
	start := func() (*nodelink.Linker[*testmachine.Machine], func()) {
		GinkgoHelper()
		l, err := nodelink.NewRemoteLinker(ctx, mgr, remote.Config, testmachine.Adapter{}, nodelink.Options{
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
