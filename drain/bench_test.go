package drain_test

import (
	"context"
	"fmt"
	"testing"

	"machineapi.dev/drain"
	"machineapi.dev/drain/internal/test"
)

// BenchmarkDrainNode100Pods measures draining a node that runs 100 evictable pods on a real API
// server, from the first step to Done, with the test acting as the kubelet between steps (it
// deletes terminating pods with grace period 0). Creating the node and pods is not timed.
// It reports steps/op: how many Drain calls, and so requeues, a drain takes.
//
//	KUBEBUILDER_ASSETS=$PWD/../bin/k8s/1.37.2 go test -run '^$' -bench DrainNode100Pods -benchtime 5x
func BenchmarkDrainNode100Pods(b *testing.B) {
	const pods = 100
	env, err := test.Start(test.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			b.Error(err)
		}
	}()
	ctx := context.Background()
	if err := test.CreateNamespace(ctx, env.Client, "bench"); err != nil {
		b.Fatal(err)
	}
	d, err := drain.New(env.Client, drain.Options{})
	if err != nil {
		b.Fatal(err)
	}
	steps := 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		node := fmt.Sprintf("bench-%d", i)
		if _, err := test.CreateNode(ctx, env.Client, test.Node(node).Build()); err != nil {
			b.Fatal(err)
		}
		for j := range pods {
			if _, err := test.CreatePod(ctx, env.Client, test.Pod("bench", fmt.Sprintf("%s-pod-%d", node, j)).OnNode(node).Running().Build()); err != nil {
				b.Fatal(err)
			}
		}
		kubelet := test.Kubelet{Client: env.Client, Node: node}
		b.StartTimer()

		for {
			res, err := d.Drain(ctx, node, drain.Step{})
			if err != nil {
				b.Fatal(err)
			}
			steps++
			if res.Done {
				break
			}
			if len(res.Blocked) > 0 {
				b.Fatalf("step %d: %s", steps, res.Summary())
			}
			if _, err := kubelet.FinishTerminatingPods(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
}
