// Package process is what every manager binary of machineapi shares, whatever controllers it
// runs: the options of the process (its /metrics, /healthz and /readyz endpoints, pprof, leader
// election, client rate limits, memory limit and graceful shutdown) with their flags, a
// controller-runtime manager built from them with its health and readiness probes, and Run, which
// starts that manager the way a binary does. Package command (below this one) is the binaries'
// main function.
//
// machine-manager (machineapi.dev/machine-api/manager) and cluster-manager
// (machineapi.dev/cluster-api/manager) embed Options in their own and add what their controllers
// need; a provider's main.go uses neither this package nor its flags directly.
//
// Start reading at Options in options.go.
package process
