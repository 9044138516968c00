package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// Defaults.
const (
	DefaultURI         = "qemu:///system"
	DefaultVCPUs int32 = 2
	DefaultPool        = "default"
)

var (
	// DefaultMemory is the memory of a virtual machine whose providerSpec names none.
	DefaultMemory = resource.MustParse("2Gi")
	// MinMemory is the least memory the provider accepts: the node image's systemd, containerd
	// and kubelet use about 300 MiB before any pod runs.
	MinMemory = resource.MustParse("512Mi")
)

// Default fills in the defaults of the fields left empty.
func (s *ProviderSpec) Default() {
	if s.URI == "" {
		s.URI = DefaultURI
	}
	if s.VCPUs == 0 {
		s.VCPUs = DefaultVCPUs
	}
	if s.Memory == nil {
		m := DefaultMemory.DeepCopy()
		s.Memory = &m
	}
	if s.Image.Pool == "" {
		s.Image.Pool = DefaultPool
	}
	if s.StoragePool == "" {
		s.StoragePool = s.Image.Pool
	}
}

// MemoryMiB is the memory in MiB, rounded up.
func (s *ProviderSpec) MemoryMiB() int64 {
	if s.Memory == nil {
		return 0
	}
	const mib = 1 << 20
	return (s.Memory.Value() + mib - 1) / mib
}
