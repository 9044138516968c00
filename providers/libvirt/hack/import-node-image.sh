#!/usr/bin/env bash
# import-node-image.sh [IMAGE_DIR] puts the node image that `make node-image` built into a libvirt
# storage pool, as the volume machineapi-node-<first 12 characters of its pin hash>.raw, so that a
# providerSpec's image.volume can name it. It does nothing when that volume is there already. The
# volume's name is printed on the last line.
#
# The upload goes through libvirt (virsh vol-upload --sparse), so it works for a remote host too:
# set LIBVIRT_DEFAULT_URI=qemu+ssh://user@host/system.
#
# Environment:
#   LIBVIRT_DEFAULT_URI       the libvirt host (default: qemu:///system)
#   MACHINEAPI_LIBVIRT_POOL   the storage pool (default: default; host-setup.sh defines it)
#   MACHINEAPI_CACHE          where make node-image caches images (default: ~/.cache/machineapi)
set -euo pipefail

uri=${LIBVIRT_DEFAULT_URI:-qemu:///system}
pool=${MACHINEAPI_LIBVIRT_POOL:-default}
cache=${MACHINEAPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/machineapi}
dir=${1:-$cache/node-image/current}

say() { echo "node image import: $*" >&2; }

if [ ! -f "$dir/manifest.json" ] || [ ! -f "$dir/disk.raw" ]; then
	say "no node image in $dir (disk.raw and manifest.json): build it with make node-image"
	exit 1
fi
hash=$(basename "$(readlink -f "$dir")")
name="machineapi-node-${hash:0:12}.raw"

if virsh -c "$uri" vol-info --pool "$pool" "$name" >/dev/null 2>&1; then
	say "$name is already in pool $pool on $uri"
	echo "$name"
	exit 0
fi

size=$(stat -c %s "$dir/disk.raw")
say "uploading $dir/disk.raw ($((size >> 20)) MiB, sparse) to pool $pool on $uri as $name..."
start=$(date +%s)
virsh -c "$uri" vol-create-as "$pool" "$name" "$size" --format raw >/dev/null
# A failed upload must not leave a volume that looks like the image.
trap 'virsh -c "$uri" vol-delete --pool "$pool" "$name" >/dev/null 2>&1 || true' EXIT
virsh -c "$uri" vol-upload --pool "$pool" --sparse "$name" "$dir/disk.raw"
trap - EXIT
say "done in $(($(date +%s) - start))s"
echo "$name"
