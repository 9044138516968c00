//go:build tools

// Package controlplane pins the kube-apiserver and kubectl commands that hack/controlplane/build.sh
// compiles, so that `go mod tidy` keeps their dependencies in go.sum.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
