#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# etcd) from source into
# bin/k8s/<version>/, the directory KUBEBUILDER_ASSETS points at. Nothing is downloaded but Go
# modules. A build happens only when a binary is missing or when the pinned versions (the go.mod /
# go.sum files of hack/controlplane and hack/controlplane/etcd, or this script) change; otherwise it
# returns at once.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
k8s_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { sub(/^v/, "", $3); print $3 }' "$here/go.mod")
if [[ -z "$k8s_version" ]]; then
  echo "hack/controlplane/go.mod must have a line 'require k8s.io/kubernetes vX.Y.Z'" >&2
  exit 1
fi
out="$root/bin/k8s/$k8s_version"
stamp_file="$out/.pins"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)

stamp=$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/go.mod" "$here/etcd/go.sum" "$here/build.sh" | sha256sum | cut -d' ' -f1)

reason=""
for b in "${binaries[@]}"; do
  [[ -x "$out/$b" ]] || reason="$out/$b is missing"
done
if [[ -z "$reason" && "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]]; then
  reason="the pinned versions in hack/controlplane changed since the last build"
fi
if [[ -z "$reason" ]]; then
  echo "control plane: kube-apiserver v$k8s_version, etcd and kubectl are up to date in ${out#"$root"/}"
  exit 0
fi

mkdir -p "$out"
export GOWORK=off GOFLAGS="${GOFLAGS:-} -trimpath"
major=${k8s_version%%.*}
minor=${k8s_version#*.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

start=$SECONDS
echo "control plane: building because $reason."
echo "control plane: compiling kube-apiserver, kube-controller-manager, kube-scheduler and kubectl"
echo "               v$k8s_version from k8s.io/kubernetes source"
echo "               (no downloads of release binaries here; the first build takes ~8-9 minutes on"
echo "               2 cores, later builds reuse the Go build cache and take seconds)..."
(cd "$here" && go build -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
etcd_version=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" { print $3 }' "$here/etcd/go.mod")
echo "control plane: compiling etcd $etcd_version (go.etcd.io/etcd/server/v3/etcdmain, ~1 minute the first time)..."
(cd "$here/etcd" && go build -ldflags "-s -w" -o "$out/etcd" .)
echo "$stamp" > "$stamp_file"
echo "control plane: done in $((SECONDS - start))s: $(cd "$out" && ls | tr '\n' ' ')in ${out#"$root"/}"
