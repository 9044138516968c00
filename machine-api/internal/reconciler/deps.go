// Package reconciler holds what the manager gives the controllers of machine-api that share it:
// the MachineSet, MachineDeployment and MachineHealthCheck controllers embed Deps.
package reconciler

import (
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Deps are what the manager gives a controller (see manager.New). Each controller's doc.go says
// what it reads through APIReader rather than the cache.
type Deps struct {
	// Client reads from the manager's cache and writes to the API server (through the
	// consistency guard's client, so that a reconcile waits for the cache to show its writes).
	Client client.Client
	// APIReader reads from the API server: what the cache may not show yet, or does not hold.
	APIReader client.Reader
	// Recorder emits the controller's events.
	Recorder events.EventRecorder
	// Clock is the time source (required).
	Clock clock.Clock
	// MaxConcurrentReconciles is the number of objects reconciled in parallel.
	MaxConcurrentReconciles int
}
