// Package libvirtprovider is the libvirt machine provider: each Machine is a libvirt domain (a
// QEMU virtual machine) on the host its providerSpec names, booting the node image from a
// copy-on-write overlay and joining the cluster with a real kubelet and a bootstrap token.
//
// What it does, per call (every call is idempotent):
//
//   - Create validates the providerSpec (api/v1beta1) and what the host has (the storage pools, the
//     image volume, kvm when asked for, the libvirt network), then defines the domain first — its
//     UUID is the Machine's UID and its <metadata> records the Machine's namespace, name and UID,
//     this manager's identity (Options.ManagerID), the pool of its volumes, the user network's
//     subnet index and the domain type chosen and why — and completes it: the Machine's bootstrap
//     token (machineapi.dev/machine-api/bootstrap), the seed volume (a tar archive the node image
//     applies at boot, uploaded with StorageVolUpload so remote hosts work too), the qcow2 overlay
//     of the image, and the start. A failure after the definition tears down everything it made,
//     token included. A Create that finds the domain (by UUID) adopts it instead: if the domain
//     never started (the Machine has no providerID yet), it is completed. The seed registers the
//     Node with the initialization taint (Options.InitializationTaintKey, NoSchedule), which the
//     node linker removes in the patch that gives the Node its Machine's labels and taints, so no
//     pod lands on the Node before them.
//   - spec.providerID is libvirt:///<machine-uid>, which the seed writes into the kubelet's
//     configuration; status.addresses are the InternalIP (known before boot on the user network,
//     10.0.N.15; read from the network's DHCP leases or the host's ARP table otherwise, by Update)
//     and the Hostname (the Node's name: the Machine's name and five characters of its UID);
//     status.providerStatus (api/v1beta1.ProviderStatus) says where the domain runs, its state,
//     and whether it runs under kvm or qemu and why.
//   - Exists looks the domain up by UUID on the host of status.providerStatus.uri (else the
//     providerSpec's). A host that cannot be reached is an error, except for a Machine with no
//     providerID: nothing of it can have been made there, so it does not exist (and Create reports
//     the unreachable host).
//   - Delete destroys the domain, revokes the Machine's bootstrap tokens, deletes its volumes and
//     undefines it (with its managed save, snapshot and checkpoint metadata and NVRAM), in that
//     order, so that the domain — what Exists looks for — goes last.
//   - Update refreshes the addresses and provider status, and completes a domain an interrupted
//     Create left unstarted. It never starts a domain that was stopped after its Machine got its
//     providerID: a machine that went away is for the health check to replace.
//
// Errors: a providerSpec or host set-up that cannot work is provider.InvalidConfiguration with a
// message saying what to change; a host that cannot be reached, and every other failure, is
// transient (retried with backoff, shown in the Machine's InstanceProvisioned condition) and names
// the URI.
//
// The provider needs the cluster (SetupWithManager, or WithCluster in tests): an uncached client
// for bootstrap tokens, and the client configuration for the CA and the API server's address
// that the guests get.
//
// Start reading at Provider in provider.go; domain.go renders the domain, seed.go the seed.
package libvirtprovider
