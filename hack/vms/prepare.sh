#!/usr/bin/env bash
# prepare.sh TARGET readies this host for make test-vms and make run-vms (TARGET names which, for
# the messages): the libvirt host set-up (providers/libvirt/hack/host-setup.sh: Debian packages
# with apt-get when missing, qemu.conf, virtlogd and libvirtd started when not running, the
# storage pool), the node image (make node-image: cached outside the clone, rebuilt only when a
# pin changes) imported into the pool, and bin/machine-manager-libvirt built. Progress goes to
# stderr; stdout gets one line, the image volume's name.
#
# It needs root, and stops with the command to run when it is not.
set -euo pipefail

target=${1:-test-vms}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
exec 3>&1 1>&2

if [[ $EUID -ne 0 ]]; then
	echo "make $target runs libvirt VMs, which needs root: it installs Debian packages when missing, configures"
	echo "and starts the system libvirtd, builds the node image (debootstrap, chroot) and reads the VMs' QEMU"
	echo "processes. Run it as root:"
	# shellcheck disable=SC2016 # printed for the user's shell to expand
	echo '  sudo env "PATH=$PATH" make '"$target"
	exit 1
fi

start=$SECONDS
echo "== libvirt host (providers/libvirt/hack/host-setup.sh)"
"$root/providers/libvirt/hack/host-setup.sh" 3>&- # the daemons it may start must not hold our stdout
echo "== node image (make node-image: reused from its cache unless a pin changed; a cold build takes tens of minutes)"
image=$(make --no-print-directory -C "$root" node-image | tail -1)
echo "== node image into the storage pool (providers/libvirt/hack/import-node-image.sh)"
volume=$("$root/providers/libvirt/hack/import-node-image.sh" "$image" | tail -1)
echo "== bin/machine-manager-libvirt"
(cd "$root/providers/libvirt" && go build -o "$root/bin/machine-manager-libvirt" ./cmd/machine-manager-libvirt)
echo "== ready in $((SECONDS - start))s: image volume $volume"
echo "$volume" >&3
