// Command machine-manager-libvirt runs every machine-api controller with the libvirt provider:
// Machines are libvirt virtual machines that boot the node image and join with a real kubelet.
// See docs/providers/libvirt.md.
package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"machineapi.dev/machine-api/manager"

	"machineapi.dev/provider-libvirt/libvirtprovider"
)

func main() {
	opts := manager.DefaultOptions()
	opts.AddFlags(flag.CommandLine)
	lv := libvirtprovider.DefaultOptions()
	lv.AddFlags(flag.CommandLine)
	flag.Parse()
	if err := manager.Run(ctrl.SetupSignalHandler(), libvirtprovider.New(lv), opts); err != nil {
		os.Exit(1)
	}
}
