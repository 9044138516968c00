#!/usr/bin/env bash
# Smoke test of the node image (make node-image-smoke): boots it once under plain QEMU with TCG
# (no libvirt, no KVM), with a hand-made seed disk as the node image contract describes it, and
# checks on the serial console that the seed was applied, containerd started with the two images
# imported, and the kubelet started and tried to reach its API server.
#
# Network: QEMU user networking with restrict=on, so no guest packet leaves QEMU; the only way out
# is the guestfwd of 10.0.N.254:6443 to a socat that connects to 127.0.0.1:<port> on the host.
# There is no control plane here: a stand-in listener on that port records each connection the
# kubelet makes and closes it, which the kubelet logs as a failed request.
#
# Settings: SMOKE_INDEX (N of the VM's subnet 10.0.N.0/24, default 9), SMOKE_TIMEOUT (seconds,
# default 900: TCG boots take 0.5-5 minutes depending on host load). One VM, killed on exit.
# To go further against a real control plane: SMOKE_API_PORT=<port> forwards to an API server on
# 127.0.0.1:<port> instead of the stand-in, and the last check is then the Node's registration;
# SMOKE_SEED_DIR=<dir> adds its files to the seed's files/ tree (over the defaults: e.g. an
# etc/kubernetes/kubelet.conf with a node client certificate and that cluster's
# etc/kubernetes/pki/ca.crt); SMOKE_HOLD=<seconds> keeps the VM running that long after the
# checks pass, for a look with kubectl.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
index=${SMOKE_INDEX:-9}
timeout=${SMOKE_TIMEOUT:-900}
name=smoke-node
node_ip=10.0.$index.15
api=10.0.$index.254

image_dir=$("$here/build.sh" | tail -n1)
k8s_version=$(sed -n 's/.*"kubelet": "\(.*\)".*/\1/p' "$image_dir/manifest.json")

# Host tools: QEMU itself, qemu-img for the overlay, socat for the guestfwd and the stand-in,
# openssl for a throwaway CA.
missing=()
for p in qemu-system-x86 qemu-utils socat openssl; do
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" == installed ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $EUID -ne 0 ]]; then
    echo "smoke: missing host packages; install them with:" >&2
    echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "smoke: installing ${missing[*]}..." >&2
  apt-get install -y -q --no-install-recommends "${missing[@]}" > /dev/null ||
    { apt-get update -q > /dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" > /dev/null; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/nodeimage-smoke.XXXXXX")
listener_pid=""
cleanup() {
  if [[ -s "$work/qemu.pid" ]]; then
    kill "$(cat "$work/qemu.pid")" 2> /dev/null || true
  fi
  if [[ -n "$listener_pid" ]]; then
    kill "$listener_pid" 2> /dev/null || true
  fi
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The API server's port on the host: a real one, or a free one for the stand-in.
port=${SMOKE_API_PORT:-}
if [[ -z "$port" ]]; then
  for port in $(seq 36443 36543); do
    ss -Htln "sport = :$port" | grep -q . || break
  done
  # The stand-in: accepts on loopback, reads what the kubelet sends (a TLS hello), answers
  # nothing and closes; -d -d logs each accepted connection.
  socat -d -d "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" OPEN:/dev/null 2> "$work/listener.log" &
  listener_pid=$!
fi

# The seed: what a provider writes for a Machine (the contract's list), as a ustar archive from
# byte 0, padded with zeros to a multiple of 1 MiB.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=smoke-ca \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2> /dev/null
seed="$work/seed/files"
mkdir -p "$seed/etc/kubernetes/pki" "$seed/etc/systemd/network" "$seed/etc/machineapi" "$seed/var/lib/kubelet"
echo "$name" > "$seed/etc/hostname"
cp "$work/ca.crt" "$seed/etc/kubernetes/pki/ca.crt"
cat > "$seed/etc/systemd/network/10-machineapi.network" << EOF
[Match]
Name=en*

[Network]
Address=$node_ip/24
Gateway=10.0.$index.2
EOF
cat > "$seed/etc/kubernetes/bootstrap-kubelet.conf" << EOF
apiVersion: v1
kind: Config
clusters:
- name: smoke
  cluster:
    server: https://$api:6443
    tls-server-name: kubernetes
    certificate-authority-data: $(base64 -w0 < "$work/ca.crt")
users:
- name: kubelet-bootstrap
  user:
    token: smoke0.0123456789abcdef
contexts:
- name: smoke
  context:
    cluster: smoke
    user: kubelet-bootstrap
current-context: smoke
EOF
chmod 600 "$seed/etc/kubernetes/bootstrap-kubelet.conf"
cat > "$seed/var/lib/kubelet/config.yaml" << EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
providerID: smoke://$name
cgroupDriver: systemd
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: AlwaysAllow
failSwapOn: false
rotateCertificates: true
EOF
echo "KUBELET_ARGS=\"--hostname-override=$name --node-ip=$node_ip\"" > "$seed/etc/machineapi/kubelet.env"
if [[ -n "${SMOKE_SEED_DIR:-}" ]]; then
  cp -r "$SMOKE_SEED_DIR/." "$seed/"
fi
tar --format=ustar --owner=0 --group=0 --numeric-owner -cf "$work/seed.img" -C "$work/seed" files
truncate -s %1M "$work/seed.img"

qemu-img create -q -f qcow2 -F raw -b "$image_dir/disk.raw" "$work/disk.qcow2"
echo "smoke: booting $image_dir/disk.raw (TCG, 1 vCPU, 1 GiB; host load: $(cut -d' ' -f1-3 /proc/loadavg))," \
  "API server forwarded to 127.0.0.1:$port..." >&2
started=$SECONDS
qemu-system-x86_64 -accel tcg,tb-size=256 -cpu max -m 1024 -smp 1 -nographic -monitor none \
  -serial "file:$work/console.log" -no-reboot -pidfile "$work/qemu.pid" \
  -drive "if=none,id=root,file=$work/disk.qcow2,format=qcow2" -device virtio-blk-pci,drive=root,bootindex=0 \
  -drive "if=none,id=seed,file=$work/seed.img,format=raw,readonly=on" \
  -device virtio-blk-pci,drive=seed,serial=machineapi-seed \
  -netdev "user,id=n0,net=10.0.$index.0/24,restrict=on,guestfwd=tcp:$api:6443-cmd:socat - TCP:127.0.0.1:$port" \
  -device virtio-net-pci,netdev=n0,romfile= < /dev/null > "$work/qemu.log" 2>&1 &

# The milestones, in boot order: a name and the console text that proves it.
checks=(
  "seed applied|machineapi-seed: applied from"
  "hostname from the seed|machineapi-seed: hostname $name"
  "containerd up|machineapi-images: containerd $(sed -n 's/.*"containerd": "\(.*\)".*/\1/p' "$image_dir/manifest.json") up"
  "pause image imported|images in k8s.io: .*registry.k8s.io/pause:3.10"
  "app image imported|images in k8s.io: .*machineapi.local/app:v1"
  "kubelet started|\"Kubelet version\" kubeletVersion=\"$k8s_version\""
)
if [[ -n "${SMOKE_API_PORT:-}" ]]; then
  checks+=("node registered|\"Successfully registered node\" node=\"$name\"")
else
  checks+=("kubelet reached for the API server|https://$api:6443")
fi
declare -A seen=()
while ((${#seen[@]} < ${#checks[@]})); do
  if ! kill -0 "$(cat "$work/qemu.pid" 2> /dev/null || echo 0)" 2> /dev/null && ((SECONDS - started > 5)); then
    echo "smoke: QEMU exited" >&2
    cat "$work/qemu.log" >&2
    break
  fi
  if ((SECONDS - started > timeout)); then
    echo "smoke: timed out after ${timeout}s" >&2
    break
  fi
  for c in "${checks[@]}"; do
    what=${c%%|*}
    [[ -n "${seen[$what]:-}" ]] && continue
    if grep -aqE -- "${c#*|}" "$work/console.log" 2> /dev/null; then
      seen[$what]=$((SECONDS - started))
      echo "smoke: ${seen[$what]}s: $what" >&2
    fi
  done
  sleep 1
done

failed=0
for c in "${checks[@]}"; do
  [[ -n "${seen[${c%%|*}]:-}" ]] || { echo "smoke: FAILED: ${c%%|*} (no '${c#*|}' on the console)" >&2; failed=1; }
done
if [[ -n "$listener_pid" ]]; then
  connections=$(grep -c "accepting connection" "$work/listener.log" || true)
  if ((connections == 0)); then
    echo "smoke: FAILED: no connection reached the stand-in API server on 127.0.0.1:$port" >&2
    failed=1
  else
    echo "smoke: $connections connection(s) from the guest reached 127.0.0.1:$port through the guestfwd" >&2
  fi
fi
# Keep the console log of the last run beside the images, for a look after the VM is gone.
log_copy="$(dirname "$image_dir")/smoke-console.log"
cp "$work/console.log" "$log_copy"
if ((failed)); then
  echo "smoke: last console lines ($log_copy has them all):" >&2
  tail -n 40 "$work/console.log" >&2
  exit 1
fi
if [[ -n "${SMOKE_HOLD:-}" ]]; then
  echo "smoke: checks passed; keeping the VM running for ${SMOKE_HOLD}s (console: $work/console.log)" >&2
  sleep "$SMOKE_HOLD"
  cp "$work/console.log" "$log_copy"
fi
echo "smoke: ok in $((SECONDS - started))s (host load $(cut -d' ' -f1-3 /proc/loadavg)); console log in $log_copy" >&2
