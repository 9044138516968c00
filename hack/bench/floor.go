package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// floorResult is the API server's raw write rate.
type floorResult struct {
	Writes       int     `json:"writes"`
	Seconds      float64 `json:"seconds"`
	WritesPerSec float64 `json:"writesPerSecond"`
	Workers      int     `json:"workers"`
}

// unthrottled returns a copy of cfg with no client-side rate limit.
func unthrottled(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return c
}

// measureFloor creates n Nodes and updates each one's status once, with `workers` concurrent
// writers and no client-side throttling: the fastest this API server stores small writes.
func measureFloor(ctx context.Context, cfg *rest.Config, n, workers int) (floorResult, error) {
	cs, err := kubernetes.NewForConfig(unthrottled(cfg))
	if err != nil {
		return floorResult{}, err
	}
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				node := &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("floor-%05d", i), Labels: map[string]string{"bench": "floor"}},
					Spec:       corev1.NodeSpec{ProviderID: fmt.Sprintf("floor:///%d", i)},
				}
				created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
				created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
				if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case jobs <- i:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			return floorResult{}, fmt.Errorf("measuring the write floor: %w", err)
		}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	select {
	case err := <-errs:
		return floorResult{}, fmt.Errorf("measuring the write floor: %w", err)
	default:
	}
	// Clean up outside the measurement.
	if err := cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "bench=floor"}); err != nil {
		return floorResult{}, err
	}
	return floorResult{Writes: 2 * n, Seconds: elapsed, WritesPerSec: float64(2*n) / elapsed, Workers: workers}, nil
}
