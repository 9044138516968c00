#!/usr/bin/env bash
# Prints the path of the cluster-autoscaler binary make test-autoscaler runs:
#   - $1 when given (CLUSTER_AUTOSCALER=<path>), if it is an executable file;
#   - else bin/cluster-autoscaler, unpacked from the provided build ($2, an .xz file) when it is
#     missing or the .xz changed since it was unpacked (its sha256 is kept beside the binary);
#   - else it fails, saying how to get one.
set -euo pipefail
given=${1:-}
xz_file=$2
bin=bin/cluster-autoscaler
stamp=bin/.cluster-autoscaler.xz.sha256

if [ -n "$given" ]; then
	if [ ! -f "$given" ] || [ ! -x "$given" ]; then
		echo "CLUSTER_AUTOSCALER=$given is not an executable file" >&2
		exit 1
	fi
	echo "$given"
	exit 0
fi
if [ -f "$xz_file" ]; then
	sum=$(sha256sum "$xz_file" | cut -d' ' -f1)
	if [ ! -x "$bin" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
		echo "unpacking $xz_file into $bin" >&2
		mkdir -p bin
		xz -dc "$xz_file" > "$bin.tmp"
		chmod +x "$bin.tmp"
		mv "$bin.tmp" "$bin"
		echo "$sum" > "$stamp"
	fi
	echo "$bin"
	exit 0
fi
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi
cat >&2 <<MSG
no cluster-autoscaler binary: neither CLUSTER_AUTOSCALER=<path> nor the provided build ($xz_file)
nor $bin. Build one from the upstream tag (clusterapi provider only):
    git clone --depth 1 --branch cluster-autoscaler-1.36.1 https://github.com/kubernetes/autoscaler
    cd autoscaler/cluster-autoscaler && GOWORK=off go build -tags clusterapi -o cluster-autoscaler .
then run: make test-autoscaler CLUSTER_AUTOSCALER=\$PWD/cluster-autoscaler
MSG
exit 1
