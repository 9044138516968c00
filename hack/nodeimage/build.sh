#!/usr/bin/env bash
# Builds the node disk image the libvirt provider boots (docs: /work/notes/node-image-contract.md,
# "the image"): one raw BIOS-bootable disk, an MBR with syslinux on a small FAT partition (kernel,
# initramfs) and an ext4 root labelled rootfs holding Debian bookworm, containerd and the kubelet
# built from their Go pins, the pause and app images, and the units that apply a Machine's seed
# disk and start the kubelet.
#
# It is cached outside the clone, in
#   ${MACHINEAPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/machineapi}/node-image/<pinhash>/
# (disk.raw, then manifest.json written last, so a folder without manifest.json is never taken as
# an image) with node-image/current pointing at it. <pinhash> is the sha256 of everything that
# determines the image: the files of hack/nodeimage (but smoke.sh and tests), hack/controlplane's
# go.mod and go.sum (the kubelet's pins) and the Go version. When that folder exists the script
# returns at once; otherwise it builds in <pinhash>.tmp and renames it at the end. The Debian tree
# is cached on its own (base.sh), the Go builds reuse the Go build cache. Progress goes to stderr;
# the image's folder is printed on the last line of stdout.
#
# Needs root: debootstrap, chroot and root-owned files in the image. Host packages it needs are
# installed with apt-get when missing. Nothing is mounted and no loop device is used: the file
# systems are written from directories (mkfs.ext4 -d, mcopy) and placed in the disk with dd.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${MACHINEAPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/machineapi}
images="$cache/node-image"

# The pins and names the image carries (the contract's names for the two images).
pause_ref=registry.k8s.io/pause:3.10
app_ref=machineapi.local/app:v1
k8s_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$root/hack/controlplane/go.mod")
containerd_version=$(awk '($1 == "require" && $2 == m) { print $3 } $1 == m { print $2 }' m=github.com/containerd/containerd/v2 "$here/go.mod")
if [[ -z "$k8s_version" || -z "$containerd_version" ]]; then
  echo "node image: cannot read the kubelet pin (hack/controlplane/go.mod) or containerd's (hack/nodeimage/go.mod)" >&2
  exit 1
fi
# Disk layout: the MBR and alignment gap, a FAT boot partition, the ext4 root to the end. The
# disk is sparse: its virtual size is the room a node has for images and pods.
disk_mib=4096
boot_mib=64
root_mib=$((disk_mib - 1 - boot_mib))
kernel_cmdline=$(awk '$1 == "APPEND" { $1 = ""; sub(/^ /, ""); print }' "$here/boot/syslinux.cfg")

pinhash=$(
  cd "$root"
  {
    find hack/nodeimage -type f ! -name smoke.sh ! -name '*_test.go' ! -name '*.md' -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum
    sha256sum hack/controlplane/go.mod hack/controlplane/go.sum
    go env GOVERSION
  } | sha256sum | cut -d' ' -f1
)
out="$images/$pinhash"

# point_current makes node-image/current name the image atomically (a new link renamed over it).
point_current() {
  ln -sfn "$pinhash" "$images/current.new"
  mv -T "$images/current.new" "$images/current"
}

if [[ -f "$out/manifest.json" ]]; then
  point_current
  echo "node image: up to date (kubelet $k8s_version, containerd $containerd_version) in $out" >&2
  echo "$out"
  exit 0
fi

# Host packages: the build's tools (debootstrap, mkfs.ext4, mkfs.vfat, mcopy, syslinux and its
# mbr.bin, sfdisk, qemu-img).
host_packages=(debootstrap e2fsprogs dosfstools mtools syslinux syslinux-common fdisk qemu-utils)
missing=()
for p in "${host_packages[@]}"; do
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" == installed ]] || missing+=("$p")
done
if [[ $EUID -ne 0 ]]; then
  if ((${#missing[@]})); then
    echo "node image: missing host packages; install them with:" >&2
    echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  fi
  echo "node image: building it needs root (debootstrap, chroot, root-owned files in the image): run it as root" >&2
  exit 1
fi
if ((${#missing[@]})); then
  echo "node image: installing host packages ${missing[*]} (~10-60 s)..." >&2
  apt_log=$(mktemp)
  # A fresh machine may have no package lists yet: update once and retry.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" > "$apt_log" 2>&1 &&
    ! { apt-get update -q > "$apt_log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" > "$apt_log" 2>&1; }; then
    cat "$apt_log" >&2
    rm -f "$apt_log"
    exit 1
  fi
  rm -f "$apt_log"
fi

# One build at a time per cache: a second one waits, then finds the image built.
mkdir -p "$images"
exec 9> "$images/.lock"
if ! flock -n 9; then
  echo "node image: another build holds $images/.lock; waiting for it..." >&2
  flock 9
  if [[ -f "$out/manifest.json" ]]; then
    point_current
    echo "node image: built meanwhile in $out" >&2
    echo "$out"
    exit 0
  fi
fi

# unmount_under unmounts anything left mounted inside a tree (a chroot's /proc), deepest first,
# so that removing the tree never reaches into it.
unmount_under() {
  awk -v p="$1/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" || true
  done
}
# Leftovers of interrupted builds: they are never complete images.
for d in "$images"/*.tmp "$images"/build.*; do
  [[ -d "$d" ]] || continue
  unmount_under "$d"
  rm -rf --one-file-system "$d"
done

work=$(mktemp -d "$images/build.XXXXXX")
cleanup() {
  unmount_under "$work"
  rm -rf --one-file-system "$work" "$out.tmp"
}
trap cleanup EXIT

start=$SECONDS
step_start=$SECONDS
timings=()
# step ends the current step: records its time for the summary.
step() {
  timings+=("$1 $((SECONDS - step_start))s")
  step_start=$SECONDS
}

echo "node image: building $out" >&2
echo "            (cold: ~10-20 minutes on 2 cores — debootstrap, containerd and kubelet compiles;" >&2
echo "            with the Debian tree and the Go build cache warm: ~1 minute)" >&2

base=$("$here/base.sh" "$images")
step debootstrap

export GOWORK=off CGO_ENABLED=0
mkdir -p "$work/bin" "$work/images"
echo "node image: compiling containerd $containerd_version, containerd-shim-runc-v2 and ctr (static;" >&2
echo "            1-8 minutes the first time, less when the control plane's build already compiled the" >&2
echo "            libraries they share; seconds with a warm Go build cache)..." >&2
(cd "$here" && go build -trimpath -tags "no_btrfs no_devmapper no_zfs" \
  -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
  -o "$work/bin/" github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr)
step containerd

# The same version stamp as hack/controlplane/build.sh gives the control plane.
major=${k8s_version#v}; major=${major%%.*}
minor=${k8s_version#v*.}; minor=${minor%%.*}
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
k8s_ldflags+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
k8s_ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
echo "node image: compiling kubelet $k8s_version from hack/controlplane's k8s.io/kubernetes pin (static;" >&2
echo "            ~5-6 minutes the first time, seconds with a warm Go build cache)..." >&2
(cd "$root/hack/controlplane" && go build -trimpath -ldflags "$k8s_ldflags" -o "$work/bin/kubelet" k8s.io/kubernetes/cmd/kubelet)
step kubelet

echo "node image: compiling pause, app and mkimage; writing the $pause_ref and $app_ref images..." >&2
(cd "$here" && go build -trimpath -ldflags "-s -w" -o "$work/bin/" ./cmd/pause ./cmd/app ./cmd/mkimage)
pause_digest=$("$work/bin/mkimage" -binary "$work/bin/pause" -name "$pause_ref" -path /pause -o "$work/images/pause.tar")
app_digest=$("$work/bin/mkimage" -binary "$work/bin/app" -name "$app_ref" -path /app -o "$work/images/app.tar")
step images

echo "node image: assembling the root file system, initramfs and disk (~15-30 s)..." >&2
rootfs="$work/rootfs"
cp -a "$base" "$rootfs"
install -m 0755 "$work/bin/containerd" "$work/bin/containerd-shim-runc-v2" "$work/bin/ctr" "$work/bin/kubelet" "$rootfs/usr/local/bin/"
install -d "$rootfs/usr/local/share/machineapi/images"
install -m 0644 "$work/images/pause.tar" "$work/images/app.tar" "$rootfs/usr/local/share/machineapi/images/"
# The guest's files, with modes fixed here rather than taken from the checkout (whose umask
# may differ): executables 0755, everything else 0644, new directories 0755.
(cd "$here/guest" && find . -type f) | while read -r f; do
  mode=0644
  [[ -x "$here/guest/$f" ]] && mode=0755
  install -D -m "$mode" "$here/guest/$f" "$rootfs/${f#./}"
done
# Per-node identity comes from the seed and from the VM: a default hostname until the seed sets
# one; an empty machine-id, which systemd fills at first boot (from the VM's SMBIOS UUID when it
# has one), so that no two nodes share one; no DNS (the nodes reach only their API server).
echo machineapi-node > "$rootfs/etc/hostname"
: > "$rootfs/etc/machine-id"
: > "$rootfs/etc/resolv.conf"
chmod 0644 "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf"
chmod 0444 "$rootfs/etc/machine-id"
systemctl --root="$rootfs" --quiet enable containerd.service machineapi-seed.service \
  machineapi-images.service kubelet.service systemd-networkd.service systemd-networkd-wait-online.service
# Nothing to do on a test node and each costs boot time under emulation: apt and maintenance
# timers, and a getty on a display nobody sees (the serial console keeps its own).
for unit in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
  e2scrub_reap.service fstrim.timer getty@tty1.service; do
  if [[ -e "$rootfs/lib/systemd/system/$unit" || -e "$rootfs/usr/lib/systemd/system/$unit" ]]; then
    systemctl --root="$rootfs" --quiet disable "$unit"
  fi
done
# systemd-firstboot would ask on the console for a locale, time zone and root password on the
# first boot (the machine-id is empty): a node must never wait for input.
ln -sfn /dev/null "$rootfs/etc/systemd/system/systemd-firstboot.service"

kernel_version=$(ls "$rootfs/lib/modules")
if [[ $(wc -w <<< "$kernel_version") -ne 1 ]]; then
  echo "node image: expected one kernel in the base tree, found: $kernel_version" >&2
  exit 1
fi
# The small initramfs (guest/etc/initramfs-tools: MODULES=list, virtio and ext4 only), made in the
# tree with its own initramfs-tools.
chroot "$rootfs" update-initramfs -u -k "$kernel_version" > "$work/initramfs.log" 2>&1 ||
  { cat "$work/initramfs.log" >&2; exit 1; }
cp "$rootfs/boot/vmlinuz-$kernel_version" "$work/vmlinuz"
cp "$rootfs/boot/initrd.img-$kernel_version" "$work/initrd.img"

# pkg_version prints an installed package's version in the tree.
pkg_version() { dpkg-query --admindir="$rootfs/var/lib/dpkg" -W -f='${Version}' "$1"; }
kernel_package="linux-image-$kernel_version $(pkg_version "linux-image-$kernel_version")"
runc_version=$(pkg_version runc)
cni_version=$(pkg_version containernetworking-plugins)
systemd_version=$(pkg_version systemd)
rootfs_bytes=$(du -sb "$rootfs" | cut -f1)

truncate -s "${root_mib}M" "$work/root.img"
mkfs.ext4 -q -F -L rootfs -d "$rootfs" "$work/root.img"
# Nothing else removes the tree; it is ~1 GiB.
rm -rf --one-file-system "$rootfs"
mkfs.vfat -n NODEBOOT -h $((2048)) -C "$work/boot.img" $((boot_mib * 1024)) > /dev/null
mcopy -i "$work/boot.img" "$work/vmlinuz" ::/vmlinuz
mcopy -i "$work/boot.img" "$work/initrd.img" ::/initrd.img
mcopy -i "$work/boot.img" "$here/boot/syslinux.cfg" ::/syslinux.cfg
syslinux --install "$work/boot.img"

mkdir -p "$out.tmp"
disk="$out.tmp/disk.raw"
truncate -s "${disk_mib}M" "$disk"
sfdisk --quiet "$disk" << EOF
label: dos
unit: sectors
start=2048, size=$((boot_mib * 2048)), type=e, bootable
start=$(((1 + boot_mib) * 2048)), type=83
EOF
dd if="$work/boot.img" of="$disk" bs=1M seek=1 conv=notrunc,sparse status=none
dd if="$work/root.img" of="$disk" bs=1M seek=$((1 + boot_mib)) conv=notrunc,sparse status=none
dd if=/usr/lib/syslinux/mbr/mbr.bin of="$disk" bs=440 count=1 conv=notrunc status=none
step assemble

disk_bytes=$(stat -c %s "$disk")
disk_allocated=$(du -B1 "$disk" | cut -f1)
size_of() { stat -c %s "$1"; }
initrd_bytes=$(size_of "$work/initrd.img")
cat > "$out.tmp/manifest.json" << EOF
{
  "pinHash": "$pinhash",
  "buildTime": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "disk": "disk.raw",
  "format": "raw",
  "boot": "bios-mbr-syslinux",
  "kernelCommandLine": "$kernel_cmdline",
  "debianSuite": "bookworm",
  "kernelPackage": "$kernel_package",
  "kernelVersion": "$kernel_version",
  "systemd": "$systemd_version",
  "containerd": "$containerd_version",
  "runc": "$runc_version",
  "cniPlugins": "$cni_version",
  "kubelet": "$k8s_version",
  "pauseImage": "$pause_ref",
  "pauseImageDigest": "$pause_digest",
  "appImage": "$app_ref",
  "appImageDigest": "$app_digest",
  "goVersion": "$(go env GOVERSION)",
  "sizes": {
    "diskBytes": $disk_bytes,
    "diskAllocatedBytes": $disk_allocated,
    "rootfsBytes": $rootfs_bytes,
    "vmlinuzBytes": $(size_of "$work/vmlinuz"),
    "initrdBytes": $initrd_bytes,
    "kubeletBytes": $(size_of "$work/bin/kubelet"),
    "containerdBytes": $(size_of "$work/bin/containerd")
  }
}
EOF
rm -rf --one-file-system "$out"
mv "$out.tmp" "$out"
point_current
trap - EXIT
cleanup
echo "node image: done in $((SECONDS - start))s (${timings[*]}): disk.raw $((disk_bytes >> 20)) MiB" \
  "($((disk_allocated >> 20)) MiB allocated), initrd $((initrd_bytes >> 10)) KiB" >&2
echo "$out"
