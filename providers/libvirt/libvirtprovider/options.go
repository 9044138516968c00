package libvirtprovider

import (
	"flag"
	"strings"
	"time"

	"k8s.io/utils/clock"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/bootstrap"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

// Options configure the provider. Start from DefaultOptions.
type Options struct {
	// ManagerID names this manager in the metadata of the domains it defines. User-network subnets
	// are unique among the domains of one manager ID on a host, so two managers of one cluster must
	// share it, and managers of different clusters may (they then share the subnets too).
	ManagerID string
	// APIServerURL is the URL guests on a libvirt network or bridge reach the API server at.
	// Default: the URL the manager itself uses. Guests on the user network always use
	// https://10.0.N.254:6443.
	APIServerURL string
	// CAFile is the PEM file of the CA guests verify the API server with. Default: the CA of the
	// manager's client configuration.
	CAFile string
	// TokenTTL is how long a Machine's bootstrap token is valid. Default 24h.
	TokenTTL time.Duration
	// InitializationTaintKey is the key of the NoSchedule taint every Node registers with (its
	// kubelet's registerWithTaints, before any taint of the providerSpec): the node linker removes
	// it in the same patch that first gives the Node its Machine's labels and taints, so no pod
	// lands on the Node before them. DefaultOptions sets the linker's default,
	// v1beta1.NodeUninitializedTaintKey; empty registers no such taint (then pods may land before
	// the Machine's labels and taints are on the Node), for a cluster whose linker does not remove
	// it. Unlike the other options, New does not fill it in.
	InitializationTaintKey string
	// ListURIs are the libvirt hosts whose domains List reports (with those of every host the
	// provider has connected to since it started), for the manager's orphan collector.
	ListURIs []string
	// ShutdownTimeout is how long a guest may take to power off when an in-place update restarts
	// its domain (the ACPI power button) before the domain is destroyed. Default
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Clock is the time source (token expirations, seed timestamps, domain creation times, the
	// shutdown timeout). Default: the real clock.
	Clock clock.PassiveClock
}

// DefaultShutdownTimeout is the default Options.ShutdownTimeout: a node image's guest powers off
// in 15-30 s under TCG; its Node was drained before.
const DefaultShutdownTimeout = 2 * time.Minute

// DefaultOptions returns the options the flags default to.
func DefaultOptions() Options {
	return Options{ManagerID: "machine-manager", TokenTTL: bootstrap.DefaultTokenTTL, InitializationTaintKey: v1beta1.NodeUninitializedTaintKey,
		ListURIs: []string{api.DefaultURI}, ShutdownTimeout: DefaultShutdownTimeout}
}

// AddFlags binds the options to flags prefixed with --libvirt-.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ManagerID, "libvirt-manager-id", o.ManagerID, "this manager's name in the metadata of its libvirt domains; user-network subnets are unique per manager ID and host")
	fs.StringVar(&o.APIServerURL, "libvirt-apiserver-url", o.APIServerURL, "URL guests on a libvirt network or bridge reach the API server at (empty: the manager's own)")
	fs.StringVar(&o.CAFile, "libvirt-ca-file", o.CAFile, "PEM file of the CA guests verify the API server with (empty: the CA of the manager's client configuration)")
	fs.Func("libvirt-list-uris", "comma-separated libvirt hosts whose domains of this manager the orphan collector lists, besides those the provider has connected to (default "+api.DefaultURI+")", func(v string) error {
		o.ListURIs = nil
		for u := range strings.SplitSeq(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				o.ListURIs = append(o.ListURIs, u)
			}
		}
		return nil
	})
	fs.DurationVar(&o.TokenTTL, "libvirt-token-ttl", o.TokenTTL, "how long a Machine's bootstrap token is valid")
	fs.DurationVar(&o.ShutdownTimeout, "libvirt-shutdown-timeout", o.ShutdownTimeout, "how long a guest may take to power off when an in-place update restarts its domain, before the domain is destroyed")
	fs.StringVar(&o.InitializationTaintKey, "libvirt-initialization-taint-key", o.InitializationTaintKey, "key of the NoSchedule taint every Node registers with, which the node linker removes once the Node carries its Machine's labels and taints (empty: none, and pods may land before them)")
}
