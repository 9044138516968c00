#!/usr/bin/env bash
# host-setup.sh prepares this machine as a libvirt host for the libvirt provider's tests and for
# make run-vms: QEMU, libvirt and socat from Debian, the four qemu.conf settings the loopback test
# network needs, virtlogd and libvirtd running, and a directory storage pool for the node image
# and the Machines' volumes. See docs/providers/libvirt.md.
#
# It is idempotent: it installs packages only when one is missing, changes qemu.conf only when a
# setting is absent, starts virtlogd and libvirtd only when they are not running, and defines the
# storage pool only when it is missing. It never creates a libvirt network, a bridge, a tap device
# or an iptables rule; it keeps libvirt's default NAT network from ever being started by moving
# its definition away before libvirtd first starts.
#
# Environment:
#   MACHINEAPI_LIBVIRT_POOL       storage pool to ensure (default: default)
#   MACHINEAPI_LIBVIRT_POOL_DIR   its directory (default: /var/lib/libvirt/images)
set -euo pipefail

pool=${MACHINEAPI_LIBVIRT_POOL:-default}
pool_dir=${MACHINEAPI_LIBVIRT_POOL_DIR:-/var/lib/libvirt/images}
qemu_conf=/etc/libvirt/qemu.conf
networks=/etc/libvirt/qemu/networks
parked=/etc/libvirt/qemu/default-network.xml.parked-by-machineapi
uri=qemu:///system

say() { echo "libvirt host: $*"; }

if [ "$(id -u)" != 0 ]; then
	say "this needs root (packages, /etc/libvirt, the system libvirtd). Run:"
	echo "  sudo $0"
	exit 1
fi

# 1. Packages, only when missing.
packages=(libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils socat)
missing=()
for p in "${packages[@]}"; do
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]} with apt-get (about a minute)..."
	# No service may start during the installation: libvirtd would start the default NAT network
	# (a bridge and iptables rules) before its definition is moved away below.
	own_policy=false
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		own_policy=true
	fi
	trap '$own_policy && rm -f /usr/sbin/policy-rc.d' EXIT
	if ! DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${missing[@]}"; then
		say "apt-get install failed; trying again after apt-get update"
		apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${missing[@]}"
	fi
	$own_policy && rm -f /usr/sbin/policy-rc.d
	trap - EXIT
else
	say "packages present (${packages[*]})"
fi

# 2. libvirt's default NAT network must never start: park its definition outside the folder
# libvirtd reads, and drop its autostart link.
if [ -f "$networks/default.xml" ]; then
	mv "$networks/default.xml" "$parked"
	say "moved libvirt's default NAT network definition to $parked (it is never started)"
fi
rm -f "$networks/autostart/default.xml"

# 3. qemu.conf: QEMU runs as root without a security driver (no chown of shared images, no LSM
# on such hosts), and without QEMU's seccomp sandbox, which kills QEMU when its user network
# spawns the socat of the loopback test network's guestfwd.
changed=false
ensure_setting() { # key value
	if ! grep -Eq "^[[:space:]]*$1[[:space:]]*=" "$qemu_conf"; then
		echo "$1 = $2" >>"$qemu_conf"
		changed=true
		say "set $1 = $2 in $qemu_conf"
	fi
}
ensure_setting user '"root"'
ensure_setting group '"root"'
ensure_setting security_driver '"none"'
ensure_setting seccomp_sandbox 0

# 4. Daemons, only when not running. A daemon keeps the descriptors it was started with: one of
# ours left open in it (the pipe of a caller's command substitution, make's) would keep that
# reader waiting for ever, so it starts with none but /dev/null.
start_daemon() {
	(
		for fd in $(ls "/proc/$BASHPID/fd"); do
			if ((fd > 2)); then eval "exec $fd>&-"; fi
		done
		exec "$@" </dev/null >/dev/null 2>&1
	)
}
if ! pidof virtlogd >/dev/null; then
	start_daemon virtlogd -d
	say "started virtlogd"
fi
if ! pidof libvirtd >/dev/null; then
	start_daemon libvirtd -d
	say "started libvirtd"
elif $changed; then
	say "libvirtd was already running: restart it so that the qemu.conf changes above apply"
fi
for _ in $(seq 60); do
	virsh -c "$uri" version >/dev/null 2>&1 && break
	sleep 0.5
done
virsh -c "$uri" version >/dev/null

# 5. A directory storage pool for the node image and the Machines' volumes.
if ! virsh -c "$uri" pool-info "$pool" >/dev/null 2>&1; then
	mkdir -p "$pool_dir"
	virsh -c "$uri" pool-define-as "$pool" dir --target "$pool_dir" >/dev/null
	virsh -c "$uri" pool-autostart "$pool" >/dev/null
	say "defined storage pool $pool ($pool_dir)"
fi
pool_info=$(virsh -c "$uri" pool-info "$pool")
if ! grep -Eq '^State:[[:space:]]+running' <<<"$pool_info"; then
	virsh -c "$uri" pool-start "$pool" >/dev/null
	say "started storage pool $pool"
fi

version=$(virsh -c "$uri" version)
say "ready: $(grep -i 'running hypervisor' <<<"$version"), storage pool $pool"
