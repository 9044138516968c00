// Package manager runs every machine-api controller — Machines, MachineClasses, MachineSets,
// MachineDeployments, MachineHealthChecks, the cluster-autoscaler's capacity annotations of sets
// and deployments — plus the node linker for Machines, around a provider.
// It is all a provider's main.go needs:
//
//	func main() {
//		opts := manager.DefaultOptions()
//		opts.AddFlags(flag.CommandLine)
//		flag.Parse()
//		if err := manager.Run(ctrl.SetupSignalHandler(), myprovider.New(), opts); err != nil {
//			os.Exit(1)
//		}
//	}
//
// Run builds the client configuration from --kubeconfig (or the in-cluster configuration), and
// gives the manager leader election, /healthz and /readyz probes, a Prometheus /metrics endpoint, an
// optional pprof endpoint, namespace and label-selector scoping, high client QPS/burst defaults and a
// graceful shutdown on SIGTERM. A provider that needs to watch objects or run background work
// implements ManagerSetup; the simulated provider does so to play the kubelet.
//
// Every controller New builds writes through one client of package
// machineapi.dev/nodelink/consistency and runs behind a consistency guard of its own, so none acts
// on a cache that does not show its own earlier writes (the node linker guards itself). A
// provider's writes (made with the manager's client) are not awaited.
package manager
