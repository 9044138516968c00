package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	applyv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider/sim"
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

// measureMachineFloor creates n Machines and writes each one's status once, like measureFloor
// does with Nodes: the fastest this API server stores Machine writes (JSON, validated against the
// CRD's schema and CEL rules), which cost it more than Node writes. It runs before any controller,
// so nothing else reacts to these Machines. With apply, the status is written by server-side apply
// under a field manager, as the controllers write it, instead of an update.
func measureMachineFloor(ctx context.Context, cfg *rest.Config, namespace string, n, workers int, apply bool) (floorResult, error) {
	c, err := client.New(unthrottled(cfg), client.Options{Scheme: manager.Scheme()})
	if err != nil {
		return floorResult{}, err
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})); err != nil {
		return floorResult{}, err
	}
	prefix := "floor"
	if apply {
		prefix = "floor-apply"
	}
	write := func(i int) error {
		m := &v1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-%05d", prefix, i), Labels: map[string]string{"bench": "floor"}},
			Spec:       v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{Value: sim.ProviderSpec{InstanceType: "small"}.Raw()}},
		}
		if err := c.Create(ctx, m); err != nil {
			return err
		}
		now := metav1.Now()
		if apply {
			ac := applyv1beta1.Machine(m.Name, namespace).WithStatus(applyv1beta1.MachineStatus().
				WithPhase(v1beta1.MachinePhaseProvisioning).
				WithConditions(metav1ac.Condition().WithType(v1beta1.ReadyCondition).WithStatus(metav1.ConditionFalse).
					WithReason("Provisioning").WithMessage("floor").WithLastTransitionTime(now)))
			return c.Status().Apply(ctx, ac, client.FieldOwner("bench-floor"), client.ForceOwnership)
		}
		m.Status.Phase = v1beta1.MachinePhaseProvisioning
		m.Status.Conditions = []metav1.Condition{{Type: v1beta1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "Provisioning",
			Message: "floor", LastTransitionTime: now}}
		return c.Status().Update(ctx, m)
	}
	res, err := runWriters(n, workers, write)
	if err != nil {
		return floorResult{}, fmt.Errorf("measuring the Machine write floor: %w", err)
	}
	// Clean up outside the measurement.
	return res, c.DeleteAllOf(ctx, &v1beta1.Machine{}, client.InNamespace(namespace), client.MatchingLabels{"bench": "floor"})
}

// runWriters runs write(0..n-1) on `workers` goroutines (two writes each) and times it.
func runWriters(n, workers int, write func(i int) error) (floorResult, error) {
	start := time.Now()
	if err := parallel(n, workers, write); err != nil {
		return floorResult{}, err
	}
	elapsed := time.Since(start).Seconds()
	return floorResult{Writes: 2 * n, Seconds: elapsed, WritesPerSec: float64(2*n) / elapsed, Workers: workers}, nil
}

// parallel runs job(0..n-1) on `workers` goroutines and returns the first error; no job starts
// after one failed.
func parallel(n, workers int, job func(i int) error) error {
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if err := job(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case jobs <- i:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			return err
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// measureFloor creates n Nodes and updates each one's status once, with `workers` concurrent
// writers and no client-side throttling: the fastest this API server stores small writes.
func measureFloor(ctx context.Context, cfg *rest.Config, n, workers int) (floorResult, error) {
	cs, err := kubernetes.NewForConfig(unthrottled(cfg))
	if err != nil {
		return floorResult{}, err
	}
	res, err := runWriters(n, workers, func(i int) error {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("floor-%05d", i), Labels: map[string]string{"bench": "floor"}},
			Spec:       corev1.NodeSpec{ProviderID: fmt.Sprintf("floor:///%d", i)},
		}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return floorResult{}, fmt.Errorf("measuring the write floor: %w", err)
	}
	// Clean up outside the measurement.
	return res, cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "bench=floor"})
}
