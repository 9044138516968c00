package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"machineapi.dev/drain/testplane/process"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Autoscaler is the unmodified cluster-autoscaler (clusterapi provider) run as a child process
// against the plane, for the autoscaler scenarios (make test-autoscaler). It is told the group
// with CAPI_GROUP, discovers only the node groups of Namespace, and runs with short timings so a
// scenario takes a minute or two (see AutoscalerArgs).
type Autoscaler struct {
	Binary     string
	Kubeconfig string
	// Namespace is the only namespace whose MachineSets and MachineDeployments are node groups.
	Namespace string
	LogFile   string

	proc *process.Process
}

// Where the autoscaler writes its status: the ConfigMap AutoscalerStatusConfigMap in
// AutoscalerStatusNamespace (its --namespace).
const (
	AutoscalerStatusNamespace = "kube-system"
	AutoscalerStatusConfigMap = "cluster-autoscaler-status"
)

// AutoscalerScanInterval is how often the autoscaler looks at the cluster.
const AutoscalerScanInterval = 5 * time.Second

// AutoscalerArgs are the flags the scenarios run the autoscaler with: a 5s loop, nodes unneeded
// for 10s are removed, no cool-down after a scale-up, a deletion or a failure, unremovable nodes
// checked again after 5s (not 5 minutes), and verbosity 4, at which it logs the node groups it
// discovers and the nodes it skips because their MachineDeployment is rolling out.
func AutoscalerArgs(kubeconfig, namespace string, metricsPort int) []string {
	return []string{
		"--cloud-provider=clusterapi",
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + AutoscalerStatusNamespace,
		"--leader-elect=false",
		"--node-group-auto-discovery=clusterapi:namespace=" + namespace,
		"--scan-interval=" + AutoscalerScanInterval.String(),
		"--scale-down-unneeded-time=10s",
		"--scale-down-delay-after-add=0s",
		"--scale-down-delay-after-delete=0s",
		"--scale-down-delay-after-failure=0s",
		"--unremovable-node-recheck-timeout=5s",
		"--max-node-provision-time=3m",
		fmt.Sprintf("--address=127.0.0.1:%d", metricsPort),
		"--v=4",
	}
}

// Start starts the autoscaler, after removing the status ConfigMap an earlier one left.
func (a *Autoscaler) Start(ctx context.Context, c client.Client) error {
	if a.proc != nil {
		return errors.New("the cluster-autoscaler is already running")
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = AutoscalerStatusNamespace, AutoscalerStatusConfigMap
	if err := c.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the autoscaler's old status: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	// env sets the group for the autoscaler alone (the suite's own environment is left as it is).
	args := append([]string{"CAPI_GROUP=" + v1beta1.GroupVersion.Group, a.Binary}, AutoscalerArgs(a.Kubeconfig, a.Namespace, port)...)
	p, err := process.Start("cluster-autoscaler", "/usr/bin/env", args, a.LogFile)
	if err != nil {
		return err
	}
	a.proc = p
	return nil
}

// Stop stops the autoscaler (SIGTERM, then SIGKILL after grace).
func (a *Autoscaler) Stop(grace time.Duration) {
	if a.proc == nil {
		return
	}
	a.proc.Stop(grace)
	a.proc = nil
}

// Exited returns an error when the autoscaler ended without being stopped: a crash, or flags it
// refused.
func (a *Autoscaler) Exited() error { return exitedOnItsOwn("the cluster-autoscaler", a.proc) }

// LogLines returns the lines of the autoscaler's log that match re.
func (a *Autoscaler) LogLines(re *regexp.Regexp) []string {
	data, err := os.ReadFile(a.LogFile)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if re.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// AutoscalerStatus is the part of the autoscaler's status ConfigMap the scenarios read: per node
// group, its bounds, target and Node counts.
type AutoscalerStatus struct {
	NodeGroups []NodeGroupStatus `json:"nodeGroups"`
}

// NodeGroupStatus is one node group of AutoscalerStatus.
type NodeGroupStatus struct {
	// Name is <Kind>/<namespace>/<name>, for example MachineDeployment/ns/pool.
	Name   string `json:"name"`
	Health struct {
		Status              string `json:"status"`
		CloudProviderTarget int    `json:"cloudProviderTarget"`
		MinSize             int    `json:"minSize"`
		MaxSize             int    `json:"maxSize"`
		NodeCounts          struct {
			Registered struct {
				Total      int `json:"total"`
				Ready      int `json:"ready"`
				NotStarted int `json:"notStarted"`
			} `json:"registered"`
			Unregistered     int `json:"unregistered"`
			LongUnregistered int `json:"longUnregistered"`
		} `json:"nodeCounts"`
	} `json:"health"`
}

// ReadAutoscalerStatus reads the status the autoscaler wrote last, nil when there is none yet.
func ReadAutoscalerStatus(ctx context.Context, c client.Reader) (*AutoscalerStatus, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, types.NamespacedName{Namespace: AutoscalerStatusNamespace, Name: AutoscalerStatusConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	st := &AutoscalerStatus{}
	if err := yaml.Unmarshal([]byte(cm.Data["status"]), st); err != nil {
		return nil, fmt.Errorf("reading the autoscaler's status: %w", err)
	}
	return st, nil
}

// Group returns the status of the node group named name (<Kind>/<namespace>/<name>), nil if the
// autoscaler does not list it.
func (s *AutoscalerStatus) Group(name string) *NodeGroupStatus {
	if s == nil {
		return nil
	}
	for i := range s.NodeGroups {
		if s.NodeGroups[i].Name == name {
			return &s.NodeGroups[i]
		}
	}
	return nil
}
