#!/usr/bin/env bash
# Builds the Prometheus server and promtool from the github.com/prometheus/prometheus module
# pinned in hack/prometheus/go.mod into bin/prometheus/<version>/ (module v0.316.0 is Prometheus
# 3.16.0). Nothing is downloaded but Go modules. A build happens only when a binary is missing or
# when the pins (go.mod, go.sum, this script) change; otherwise it returns at once. Prints the
# directory on its last line.
#
# Built with -tags remove_all_sd: only static and file service discovery (all the tests need),
# which leaves out the cloud SDKs and halves the build. Without the builtinassets tag the web UI is
# not embedded; the HTTP API the tests use is all there.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=$("$here/version.sh")
out="$root/bin/prometheus/$version"
stamp_file="$out/.pins"
binaries=(prometheus promtool)

stamp=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" "$here/version.sh" | sha256sum | cut -d' ' -f1)

reason=""
for b in "${binaries[@]}"; do
  [[ -x "$out/$b" ]] || reason="$out/$b is missing"
done
if [[ -z "$reason" && "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]]; then
  reason="the pinned version in hack/prometheus changed since the last build"
fi
if [[ -z "$reason" ]]; then
  echo "prometheus: prometheus and promtool $version are up to date in ${out#"$root"/}" >&2
  echo "$out"
  exit 0
fi

mkdir -p "$out"
export GOWORK=off GOFLAGS="${GOFLAGS:-} -trimpath"
ldflags="-s -w -X github.com/prometheus/common/version.Version=$version"
ldflags+=" -X github.com/prometheus/common/version.Branch=v$version -X github.com/prometheus/common/version.Revision=module"

start=$SECONDS
{
  echo "prometheus: building because $reason."
  echo "prometheus: compiling prometheus and promtool $version from the github.com/prometheus/prometheus"
  echo "            module (~5 CPU-minutes the first time on 2 cores, seconds with a warm build cache)..."
} >&2
(cd "$here" && go build -tags remove_all_sd -ldflags "$ldflags" -o "$out/" \
  github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
echo "$stamp" > "$stamp_file"
echo "prometheus: done in $((SECONDS - start))s in ${out#"$root"/}" >&2
echo "$out"
