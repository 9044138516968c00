//go:build tools

// Package nodeimage pins the containerd commands (containerd, containerd-shim-runc-v2 and ctr)
// that hack/nodeimage/build.sh compiles into the node disk image, so that `go mod tidy` keeps
// their dependencies in go.sum. The module also holds the image's own small programs: cmd/pause,
// cmd/app and cmd/mkimage.
package nodeimage

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
