// Package manager builds the cluster-manager: the Cluster controller, its remote node linkers and
// the remote drain controller around a cluster provider. A cluster provider's main.go needs only:
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
// gives the manager leader election, /healthz and /readyz probes, a Prometheus /metrics endpoint,
// namespace scoping, client QPS/burst and a graceful shutdown on SIGTERM.
//
// The cluster-manager runs next to a machine-manager (machine-api's manager), which makes the
// Machines of the MachineDeployments the Cluster controller renders. For Clusters with a
// kubeconfigSecretRef, the cluster-manager links their Machines (labelled remote-nodes=true) to
// the workload cluster's Nodes; the machine-manager's own node linker must then skip those
// Machines. It also holds each such Machine with a preDrain hook and, when the Machine is
// deleted, drains its Node in the workload cluster before removing the hook (package
// internal/controller/remotedrain), since the machine-manager cannot reach that Node.
package manager
