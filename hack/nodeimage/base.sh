#!/usr/bin/env bash
# Makes the Debian root tree the node image starts from: debootstrap of bookworm (minbase) with the
# packages the node needs, from the same Debian mirror apt uses on this host. It is the slow part of
# a cold image build (~3-10 minutes on 2 cores), so it is cached on its own, keyed by its own pins
# (the suite, the variant, the package list and the recipe number below): a change to anything else
# in hack/nodeimage (the app, a unit, containerd's pin, a comment here) reuses it.
#
# Usage: base.sh <cache-dir>. Prints the tree's path on its last line; progress goes to stderr.
# Needs root (debootstrap, chroot) and the debootstrap package (build.sh installs it).
set -euo pipefail

# Bump recipe when changing how the tree is made (not only what goes in): it is part of the key.
recipe=1
suite=bookworm
variant=minbase
# The node's packages (the node image contract's guest content). The kernel comes with
# initramfs-tools; build.sh makes the small initramfs.
packages=(
  systemd systemd-sysv udev dbus kmod iproute2 iptables conntrack ethtool ca-certificates
  runc containernetworking-plugins linux-image-amd64 e2fsprogs tar procps
)

cache=${1:?usage: base.sh <cache-dir>}
key=$(printf '%s\n' "recipe $recipe" "$suite" "$variant" "${packages[@]}" | sha256sum | cut -c1-32)
dir="$cache/base/$key"
if [[ -f "$dir/.complete" ]]; then
  echo "node image: Debian $suite base tree cached in $dir" >&2
  echo "$dir/rootfs"
  exit 0
fi

# apt_mirror prints the Debian mirror apt is configured with for $suite (deb822 .sources or
# one-line .list files), so that debootstrap goes where apt goes on this host.
apt_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] || continue
    awk -v suite="$suite" '
      function flush() { if (deb && suites ~ ("(^| )" suite "( |$)") && uri != "") { print uri; found = 1; exit } deb = 0; suites = ""; uri = "" }
      /^[ \t]*$/ { flush(); next }
      /^Types:/ { deb = ($0 ~ /[ \t]deb([ \t]|$)/) }
      /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
      /^URIs:/ { uri = $2 }
      END { if (!found) flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r "$f" ]] || continue
    awk -v suite="$suite" '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i + 1) == suite) { print $i; exit } }' "$f"
  done
}
mirror=${NODEIMAGE_DEBIAN_MIRROR:-$(apt_mirror | head -n1)}
mirror=${mirror:-http://deb.debian.org/debian}

# unmount_under unmounts whatever an interrupted debootstrap left mounted inside a tree (proc,
# sys), deepest first, so that removing the tree never reaches into them.
unmount_under() {
  awk -v p="$1/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" || true
  done
}

tmp="$dir.tmp"
mkdir -p "$cache/base"
unmount_under "$tmp"
rm -rf --one-file-system "$tmp"
mkdir -p "$tmp"
cleanup() {
  unmount_under "$tmp"
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

start=$SECONDS
echo "node image: debootstrap of Debian $suite ($variant + ${#packages[@]} packages) from $mirror" >&2
echo "            (~3-10 minutes on 2 cores, mostly dpkg; cached after in $cache/base)..." >&2
if ! debootstrap --variant="$variant" --include="$(IFS=,; echo "${packages[*]}")" \
  "$suite" "$tmp/rootfs" "$mirror" > "$tmp/debootstrap.log" 2>&1; then
  tail -n 30 "$tmp/debootstrap.log" >&2
  echo "node image: debootstrap failed (log above)" >&2
  exit 1
fi
# The downloaded .deb files and package lists are not needed in a node (~150 MB).
rm -f "$tmp/rootfs/var/cache/apt/archives/"*.deb
rm -rf "$tmp/rootfs/var/lib/apt/lists/"*
mv "$tmp/debootstrap.log" "$tmp/rootfs.log"
touch "$tmp/.complete"
rm -rf --one-file-system "$dir"
mv "$tmp" "$dir"
trap - EXIT
# Trees of older pins are only ever a starting point for a build (no VM uses them): drop them.
for old in "$cache/base"/*; do
  [[ "$old" == "$dir" || ! -d "$old" ]] && continue
  unmount_under "$old"
  rm -rf --one-file-system "$old"
done
echo "node image: debootstrap done in $((SECONDS - start))s" >&2
echo "$dir/rootfs"
