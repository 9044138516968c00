package faults

import (
	"context"

	"machineapi.dev/drain/testplane/process"
	"machineapi.dev/hack/tools/localstack"
)

// Controller sets for StartPlane.
var (
	// AllControllers are kube-controller-manager's default controllers, as in a user's cluster.
	AllControllers = []string{"*"}
	// WithoutNodeLifecycle leaves out the node lifecycle controller, which would mark every Node
	// unreachable whose kubelet renews no Lease (the workload cluster's Nodes, played by the suite).
	WithoutNodeLifecycle = []string{"*", "-nodelifecycle"}
)

// Plane is the local control plane of localstack as a user's cluster has it: etcd, kube-apiserver,
// kube-controller-manager with every default controller and kube-scheduler. Its API server can be
// killed and started again while etcd and the controllers keep running with their data: the first
// fault of the matrix (localstack.Plane.KillAPIServer and StartAPIServer).
type Plane struct {
	*localstack.Plane
}

// StartPlane starts the control plane with state in dir, on free loopback ports, running the given
// kube-controller-manager controllers (AllControllers, or WithoutNodeLifecycle where nothing renews
// the Nodes' Leases).
func StartPlane(ctx context.Context, binDir, dir string, controllers []string) (*Plane, error) {
	etcdPort, err := FreePortPair()
	if err != nil {
		return nil, err
	}
	apiPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	lp, err := localstack.Start(ctx, localstack.Config{
		BinDir: binDir, StateDir: dir, APIServerPort: apiPort, EtcdPort: etcdPort, EtcdUnsafeNoFsync: true,
		ControllerManager: controllers, Scheduler: true,
	})
	if err != nil {
		return nil, err
	}
	return &Plane{Plane: lp}, nil
}

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort() (int, error) { return process.FreePort() }

// FreePortPair returns a port p such that p and p+1 are both free (etcd's client and peer ports).
func FreePortPair() (int, error) { return localstack.FreePortPair() }
