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
//     applies at every boot, uploaded with StorageVolUpload so remote hosts work too; it holds the
//     kubelet's own kubeconfig as well, with the TLS server name the kubelet drops when it writes
//     that file, so that a rebooted guest reconnects), the qcow2 overlay of the image, and the
//     start. A failure after the definition tears down everything it made, token included. A Create that finds the domain (by UUID) adopts it instead: if the domain
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
//   - In place (provider.InPlaceUpdater, for MachineDeployments with spec.rollout.inPlace Prefer
//     or Only): CanUpdateInPlace validates the desired providerSpec as Create does and compares it
//     with the domain as it is, not with the Machine's spec (resize.go, instanceSpec): a new
//     memory or vcpus is applied in place and is disruptive (the Node is drained, the domain
//     restarted); any other field that differs — uri, image, diskSize, storagePool, domainType,
//     network, registerWithTaints: the host, the disk and the seed the domain was made with —
//     is unsupported, so the Machine is replaced (Prefer) or the rollout stalls (Only).
//     UpdateInPlace gives the domain's persistent definition the new size (virsh setmaxmem,
//     setmem, setvcpus --config) and, while the running domain lacks it, restarts it: it marks the
//     persistent definition (a <metadata> element in RestartNamespace), asks the guest to power
//     off (ACPI), destroys it if it still runs Options.ShutdownTimeout later (default 2 min),
//     starts it and removes the mark; it returns a RequeueAfter error every 5 s while the guest
//     powers off, nil once the domain runs with the size. Every call decides from libvirt's state
//     alone (nextRestart): the domain's state, its live and persistent sizes, and whether the
//     mark is in the persistent definition only (the domain to stop), in both (a domain the update
//     started) or in neither; so a manager that died anywhere goes on from there, one change
//     restarts the domain once, and a domain shut off without the mark is left shut off.
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
// Start reading at Provider in provider.go; domain.go renders the domain, seed.go the seed,
// inplace.go and resize.go update a domain in place.
package libvirtprovider
