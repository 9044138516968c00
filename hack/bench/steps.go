package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/drain/testplane/process"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider/sim"
)

const (
	benchNamespace = "bench"
	// floorNamespace holds the Machines of the Machine write floor (deleted before the manager
	// starts).
	floorNamespace = "bench-floor"
	deployment     = "bench"
	mhcTimeout     = 5 * time.Second
)

func (e *env) steps(ctx context.Context, res *results) (retErr error) {
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}); err != nil {
		return err
	}
	mgr, err := e.startManager()
	if err != nil {
		return err
	}
	defer mgr.Stop(30 * time.Second)
	// A manager that exits ends the run at once, pointing at its log.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	managerDone := make(chan struct{})
	var stopWatching sync.Once
	unwatch := func() { stopWatching.Do(func() { close(managerDone) }) }
	defer unwatch()
	go func() {
		select {
		case <-mgr.Done():
			cancel(fmt.Errorf("machine-manager exited (%v): see %s", mgr.Err(), mgr.LogFile)) //nolint:errorlint // the exit status is shown, not wrapped: Err is nil after a clean exit
		case <-managerDone:
		}
	}()
	defer func() {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && retErr != nil {
			retErr = cause
		}
	}()

	if res.ScaleUp, err = e.scaleUp(ctx, e.o.machines, res.Floor); err != nil {
		return err
	}
	res.ScaleUp.withWritesFloor(res.Floor, res.MachineFloor)
	if !e.skipped("mhc") {
		if res.HealthCheck, err = e.healthCheck(ctx); err != nil {
			return err
		}
	}
	if !e.skipped("scaledown") {
		if res.ScaleDown, err = e.scaleDown(ctx, res.Floor); err != nil {
			return err
		}
		res.ScaleDown.withWritesFloor(res.Floor, res.MachineFloor)
	}
	if rss, err := peakRSS(mgr.Pid()); err == nil {
		res.ManagerPeakRSSBytes = rss
	}
	unwatch() // the manager is stopped on purpose now
	mgr.Stop(30 * time.Second)
	if !e.skipped("nodelink") {
		if res.NodeLink, err = e.nodelinkAlone(ctx, e.o.machines, res.Floor); err != nil {
			return err
		}
	}
	return nil
}

// profileSeconds is how long the CPU profiles of the scale-up last.
const profileSeconds = 20

// profile starts the CPU profiles asked for (-apiserver-profile, -manager-profile) in the
// background, -profile-after from now, and returns a function that waits for them to be written.
func (e *env) profile(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	take := func(what, file string, get func() ([]byte, error)) {
		if file == "" {
			return
		}
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(e.o.profileAfter):
			}
			data, err := get()
			if err == nil {
				err = os.WriteFile(file, data, 0o644)
			}
			if err != nil {
				logf("  the CPU profile of %s failed: %v", what, err)
				return
			}
			logf("  CPU profile of %s written to %s", what, file)
		})
	}
	take("kube-apiserver", e.o.apiserverProfile, func() ([]byte, error) {
		return e.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(profileSeconds)).Timeout(2 * profileSeconds * time.Second).DoRaw(ctx)
	})
	take("machine-manager", e.o.managerProfile, func() ([]byte, error) {
		url := fmt.Sprintf("http://127.0.0.1:6060/debug/pprof/profile?seconds=%d", profileSeconds)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	})
	return wg.Wait
}

// pids names the processes whose CPU time the scale-up reports: the control plane's, the
// manager's and the benchmark's own (its watch of every Machine).
func (e *env) pids() map[string]int {
	out := map[string]int{"bench": os.Getpid()}
	for _, p := range e.plane.Processes() {
		out[p.Name] = p.Pid()
	}
	if e.manager != nil {
		out["machine-manager"] = e.manager.Pid()
	}
	return out
}

func (e *env) startManager() (*process.Process, error) {
	args := []string{
		"--kubeconfig=" + e.kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--sim-boot-delay=0", "--sim-heartbeat-interval=-1s", "--sim-state-dir=" + filepath.Join(e.stateDir, "sim"),
	}
	if e.o.pprof {
		args = append(args, "--pprof-bind-address=127.0.0.1:6060")
	}
	args = append(args, strings.Fields(e.o.managerArgs)...)
	p, err := process.Start("machine-manager", e.o.managerBin, args, filepath.Join(e.stateDir, "logs", "machine-manager.log"))
	if err != nil {
		return nil, err
	}
	logf("machine-manager started (pid %d): %s", p.Pid(), strings.Join(args[1:], " "))
	e.manager = p
	return p, nil
}

func (e *env) scaleUp(ctx context.Context, n int, floor floorResult) (stepResult, error) {
	md := &v1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: deployment},
		Spec: v1beta1.MachineDeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": "bench"}},
			Template: v1beta1.MachineTemplateSpec{
				Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"pool": "bench"}},
				Spec: v1beta1.MachineSpec{
					ProviderSpec: v1beta1.ProviderSpec{Value: sim.ProviderSpec{InstanceType: "small"}.Raw()},
					Metadata:     v1beta1.ObjectMeta{Labels: map[string]string{"node-role.kubernetes.io/worker": ""}},
				},
			},
		},
	}
	if err := e.c.Create(ctx, md); err != nil {
		return stepResult{}, err
	}
	// Let the deployment create its (empty) MachineSet before the measured window opens, so that
	// those writes are not counted as the scale-up's.
	time.Sleep(2 * time.Second) //nolint:forbidigo // a settle time outside the measurement, not a wait for a condition
	e.track.reset()
	logf("scale-up: MachineDeployment %s 0 -> %d", deployment, n)
	before, err := scrapeWrites(ctx, e.cs)
	if err != nil {
		return stepResult{}, err
	}
	profiled := e.profile(ctx)
	defer profiled()
	cpuBefore := snapshotCPU(e.pids())
	start := time.Now()
	if err := e.scale(ctx, n); err != nil {
		return stepResult{}, err
	}
	if err := e.track.waitUntil(ctx, "scale-up", 20*time.Minute, func(live, running int) bool { return running >= n }); err != nil {
		return stepResult{}, err
	}
	elapsed := time.Since(start)
	cpu := snapshotCPU(e.pids()).since(cpuBefore)
	after, err := scrapeWrites(ctx, e.cs)
	if err != nil {
		return stepResult{}, err
	}
	r := newStepResult("scale-up 0 -> N", n, elapsed, after.since(before), floor, nominalWritesPerMachine)
	r.CPUSeconds = cpu
	p50, p99 := e.track.timeToRunning()
	r.P50Seconds, r.P99Seconds = p50.Seconds(), p99.Seconds()
	r.Phases = e.track.phases()
	r.CreatedSeconds = e.track.lastSeen().Sub(start).Seconds()
	logf("  scale-up: %d machines Running in %s (%.1f machines/s, %.1f writes/machine)", n, elapsed.Round(time.Millisecond), r.MachinesPerSec, r.WritesPerMachine)
	return r, nil
}

func (e *env) scale(ctx context.Context, replicas int) error {
	md := &v1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: deployment}}
	return e.c.Patch(ctx, md, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)))
}

func (e *env) scaleDown(ctx context.Context, floor floorResult) (stepResult, error) {
	live, _ := e.track.counts()
	logf("scale-down: MachineDeployment %s %d -> 0 (each Node drained: they are empty)", deployment, live)
	before, err := scrapeWrites(ctx, e.cs)
	if err != nil {
		return stepResult{}, err
	}
	start := time.Now()
	if err := e.scale(ctx, 0); err != nil {
		return stepResult{}, err
	}
	if err := e.track.waitUntil(ctx, "scale-down", 20*time.Minute, func(l, _ int) bool { return l == 0 }); err != nil {
		return stepResult{}, err
	}
	elapsed := time.Since(start)
	after, err := scrapeWrites(ctx, e.cs)
	if err != nil {
		return stepResult{}, err
	}
	r := newStepResult("scale-down N -> 0", live, elapsed, after.since(before), floor, nominalWritesPerMachine)
	logf("  scale-down: %d machines gone in %s", live, elapsed.Round(time.Millisecond))
	return r, nil
}

// healthCheck puts every machine under one MachineHealthCheck, makes one Node NotReady and
// measures how long after the condition's timeout the machine's remediation (its deletion) starts.
func (e *env) healthCheck(ctx context.Context) (healthResult, error) {
	mhc := &v1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: "bench"},
		Spec: v1beta1.MachineHealthCheckSpec{
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": "bench"}},
			UnhealthyConditions: []v1beta1.UnhealthyCondition{
				{Type: "Ready", Status: "False", TimeoutSeconds: int32(mhcTimeout.Seconds())},
				{Type: "Ready", Status: "Unknown", TimeoutSeconds: int32(mhcTimeout.Seconds())},
			},
			MaxUnhealthy: ptr.To(intstr.FromString("40%")),
		},
	}
	if err := e.c.Create(ctx, mhc); err != nil {
		return healthResult{}, err
	}
	n := e.o.machines
	if err := waitFor(ctx, 2*time.Minute, func() bool {
		got := &v1beta1.MachineHealthCheck{}
		return e.c.Get(ctx, client.ObjectKeyFromObject(mhc), got) == nil && int(got.Status.CurrentHealthy) == n
	}); err != nil {
		return healthResult{}, fmt.Errorf("waiting for the health check to see %d healthy machines: %w", n, err)
	}
	list := &v1beta1.MachineList{}
	if err := e.cache.List(ctx, list, client.InNamespace(benchNamespace)); err != nil {
		return healthResult{}, fmt.Errorf("listing the machines to make one unhealthy: %w", err)
	}
	if len(list.Items) == 0 {
		return healthResult{}, fmt.Errorf("no machine to make unhealthy in namespace %s", benchNamespace)
	}
	victim := list.Items[0]
	nodeName := victim.Status.NodeRef.Name
	logf("health check: making Node %s of machine %s NotReady (timeout %s, %d machines checked)", nodeName, victim.Name, mhcTimeout, n)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"sim.machineapi.dev/not-ready-after":"0s"}}}`)
	if err := e.c.Patch(ctx, &victim, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return healthResult{}, err
	}
	var notReadyAt time.Time
	if err := waitFor(ctx, time.Minute, func() bool {
		node := &corev1.Node{}
		if e.c.Get(ctx, types.NamespacedName{Name: nodeName}, node) != nil {
			return false
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionFalse {
				// The health check measures the timeout from the condition's transition time
				// (whole seconds): measure from the same instant.
				notReadyAt = c.LastTransitionTime.Time
				return true
			}
		}
		return false
	}); err != nil {
		return healthResult{}, fmt.Errorf("the Node never went NotReady: %w", err)
	}
	var remediatedAt time.Time
	if err := waitFor(ctx, 2*time.Minute, func() bool {
		ts, ok := e.track.deletionStartedAt(victim.UID)
		remediatedAt = ts
		return ok
	}); err != nil {
		return healthResult{}, fmt.Errorf("the unhealthy machine was not remediated: %w", err)
	}
	r := healthResult{Machines: n, TimeoutSeconds: mhcTimeout.Seconds(), SecondsToRemediation: remediatedAt.Sub(notReadyAt).Seconds()}
	r.SecondsBeyondTimeout = r.SecondsToRemediation - r.TimeoutSeconds
	logf("  remediation started %.2fs after the Node went NotReady (%.2fs beyond the timeout)", r.SecondsToRemediation, r.SecondsBeyondTimeout)
	if err := e.c.Delete(ctx, mhc); err != nil {
		return r, err
	}
	// The set replaces the machine; wait for it so scale-down starts from N running machines.
	return r, e.track.waitUntil(ctx, "replacement", 5*time.Minute, func(live, running int) bool { return live == n && running == n })
}

// nodelinkAlone creates N Node/Machine pairs with matching providerIDs while nothing runs, then
// starts the nodelink binary and times until every Machine has its nodeRef.
func (e *env) nodelinkAlone(ctx context.Context, n int, floor floorResult) (stepResult, error) {
	const ns = "bench-nodelink"
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return stepResult{}, err
	}
	logf("nodelink: creating %d Node/Machine pairs (not timed)", n)
	err := parallel(n, 64, func(i int) error {
		id := fmt.Sprintf("sim:///nodelink-%05d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nodelink-%05d", i)}, Spec: corev1.NodeSpec{ProviderID: id}}
		m := &v1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pair-%05d", i)},
			Spec: v1beta1.MachineSpec{ProviderID: id, Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"pool": "nodelink"}},
				ProviderSpec: v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{}`)}}},
		}
		if err := e.c.Create(ctx, node); err != nil {
			return err
		}
		return e.c.Create(ctx, m)
	})
	if err != nil {
		return stepResult{}, err
	}
	before, err := scrapeWrites(ctx, e.cs)
	if err != nil {
		return stepResult{}, err
	}
	start := time.Now()
	p, err := process.Start("nodelink", e.o.nodelinkBin, []string{
		"--kubeconfig=" + e.kubeconfig, "--namespace=" + ns, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--max-concurrent-reconciles=20",
	}, filepath.Join(e.stateDir, "logs", "nodelink.log"))
	if err != nil {
		return stepResult{}, err
	}
	defer p.Stop(20 * time.Second)
	if err := waitFor(ctx, 20*time.Minute, func() bool {
		list := &v1beta1.MachineList{}
		if e.cache.List(ctx, list, client.InNamespace(ns)) != nil {
			return false
		}
		linked := 0
		for i := range list.Items {
			if list.Items[i].Status.NodeRef != nil {
				linked++
			}
		}
		return linked == n
	}); err != nil {
		return stepResult{}, fmt.Errorf("nodelink did not link every pair: %w (see %s)", err, p.LogFile)
	}
	elapsed := time.Since(start)
	after, err := scrapeWrites(ctx, e.cs)
	if err != nil {
		return stepResult{}, err
	}
	r := newStepResult("nodelink alone, N pairs", n, elapsed, after.since(before), floor, nominalWritesPerLink)
	if rss, err := peakRSS(p.Pid()); err == nil {
		r.PeakRSSBytes = rss
	}
	logf("  nodelink: %d pairs linked in %s", n, elapsed.Round(time.Millisecond))
	return r, nil
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
