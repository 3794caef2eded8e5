#!/usr/bin/env bash
# A real single-node Kubernetes for the tests: etcd (3.6, built from its Go module by
# build-etcd.sh), kube-apiserver, kube-controller-manager, kube-scheduler, a container runtime
# (containerd or CRI-O, below) and the kubelet, with a plain-HTTP registry
# (Debian's docker-registry) that holds the pause image, pullcheck's image and a small tools
# image. Everything is on this machine: loopback, and a bridge of its own (pullcheck0,
# 10.213.0.0/24) that only the node's network namespaces use.
#
#   tests/cluster/cluster.sh up     start what is not running (idempotent); ready when the Node is
#                                   Ready and the default service account exists
#   tests/cluster/cluster.sh down   stop every process by PID, unmount, remove the bridge
#   tests/cluster/cluster.sh clean  down, then remove the state folder (etcd's data, the PKI, the
#                                   registry's storage): the next `up` starts from nothing
#   tests/cluster/cluster.sh env    print the variables of a running cluster (source it)
#
# The node's container runtime is PULLCHECK_CLUSTER_RUNTIME (each words a failed pull its own way):
#   containerd2         containerd v2.4.2, built from its Go module (build-containerd.sh), pulling
#                       through its transfer service, as containerd 2 does by default
#   containerd2-local   the same containerd, pulling on its older local path
#                       (use_local_image_pull, which a config with registry mirrors also takes)
#   containerd1.6       Debian's containerd 1.6
#   crio                CRI-O v1.34.0, built from its Go module (build-crio.sh), with Debian's conmon
#                       and runc (runtime-crio.sh has its configuration)
# Unset, it is the runtime the state folder was made with, and containerd2 for a new one. A state
# folder keeps its runtime (a runtime's root is its own): another one needs `clean`.
#
# All state is in one folder, ${PULLCHECK_CLUSTER_DIR:-target/cluster}; `up` writes `env` there
# (KUBECONFIG, PULLCHECK_CLUSTER_REGISTRY, PULLCHECK_CLUSTER_RUNTIME with the runtime's version,
# PULLCHECK_CLUSTER_CRI, the runtime's socket,
# ...). Needs root. docs/kubernetes-in-tests.md says how this node differs from a production one,
# and why that does not change what is proven.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/lib.sh
. "$repo/scripts/lib.sh"
here=$repo/tests/cluster
state=${PULLCHECK_CLUSTER_DIR:-$repo/target/cluster}
mkdir -p "$state"
state=$(cd "$state" && pwd)

node=pullcheck-node
bridge=pullcheck0
node_ip=10.213.0.1
cluster_range=10.213.0.0/16
pod_cidr=10.213.0.0/24
service_cidr=10.213.1.0/24
service_ip=10.213.1.1
api_port=6443
etcd_client=127.0.0.1:23790
etcd_peer=127.0.0.1:23800
# containerd's resolver (resolver_up): a loopback address of its own, off the pods' 127.0.0.1.
resolver_ip=127.213.0.53
# The trace sink (traces_up): the API server's OTLP exporter sends its spans there.
trace_sink=127.0.0.1:24317

log() { echo "== cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }

# A process we started is running when its PID file names a live process of the same command.
running() {
  local pid
  pid=$(cat "$state/pids/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

# start NAME CMD...: in its own session, output to logs/NAME.log, PID to pids/NAME.pid. Under
# tini as a subreaper: this machine's PID 1 reaps nothing, and containerd's shims, which detach
# from containerd, would otherwise stay zombies once they exit.
start() {
  local name=$1
  shift
  running "$name" && return 0
  mkdir -p "$state/logs" "$state/pids"
  setsid tini -s -g -- "$@" >>"$state/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$state/pids/$name.pid"
}

# wait_for NAME SECONDS CMD...: polls CMD until it succeeds; on time-out prints the component's
# log tail and fails.
wait_for() {
  local name=$1 seconds=$2
  shift 2
  local deadline=$(($(date +%s) + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! running "$name"; then
      echo "cluster: $name exited; the last lines of $state/logs/$name.log:" >&2
      tail -n 40 "$state/logs/$name.log" >&2 || true
      exit 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "cluster: $name not ready after ${seconds} s; the last lines of $state/logs/$name.log:" >&2
      tail -n 40 "$state/logs/$name.log" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
}

need() {
  [ "$(id -u)" = 0 ] || die "needs root: it runs containerd and the kubelet, makes a bridge and mounts"
  local missing=()
  # Debian's containerd is also the tests' `ctr`, whatever the runtime.
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  command -v skopeo >/dev/null || missing+=(skopeo)
  command -v buildah >/dev/null || missing+=(buildah)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v curl >/dev/null || missing+=(curl)
  command -v tini >/dev/null || missing+=(tini)
  command -v python3 >/dev/null || missing+=(python3)
  [ -x /bin/busybox ] && file -b /bin/busybox | grep -q static || missing+=(busybox-static)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian's ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# ---------------------------------------------------------------------------------------------
# PKI: one CA signs every certificate (as kubeadm's does), made once per state folder.
pki() {
  local p=$state/pki
  [ -f "$p/done" ] && return 0
  mkdir -p "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=pullcheck-test-ca" \
    -keyout "$p/ca.key" -out "$p/ca.crt" 2>/dev/null
  # cert NAME SUBJECT [SANS]
  cert() {
    local name=$1 subject=$2 sans=${3:-}
    openssl req -newkey rsa:2048 -nodes -subj "$subject" -keyout "$p/$name.key" -out "$p/$name.csr" 2>/dev/null
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=digitalSignature,keyEncipherment"
      if [ -n "$sans" ]; then
        echo "extendedKeyUsage=serverAuth,clientAuth"
        echo "subjectAltName=$sans"
      else
        echo "extendedKeyUsage=clientAuth"
      fi
    } >"$p/$name.ext"
    openssl x509 -req -in "$p/$name.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
      -days 3650 -extfile "$p/$name.ext" -out "$p/$name.crt" 2>/dev/null
    rm -f "$p/$name.csr" "$p/$name.ext"
  }
  cert apiserver "/CN=kube-apiserver" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:$node_ip,IP:$service_ip,IP:127.0.0.1"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  cert admin "/O=system:masters/CN=kubernetes-admin"
  cert controller-manager "/CN=system:kube-controller-manager"
  cert scheduler "/CN=system:kube-scheduler"
  cert kubelet-client "/O=system:nodes/CN=system:node:$node"
  cert kubelet "/CN=$node" "DNS:$node,IP:$node_ip"
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  touch "$p/done"
}

kubeconfig() {
  local name=$1 user=$2
  cat >"$state/kubeconfig/$name" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: pullcheck
  cluster:
    certificate-authority: $state/pki/ca.crt
    server: https://$node_ip:$api_port
users:
- name: $user
  user:
    client-certificate: $state/pki/$user.crt
    client-key: $state/pki/$user.key
contexts:
- name: pullcheck
  context: {cluster: pullcheck, user: $user}
current-context: pullcheck
EOF
}

# ---------------------------------------------------------------------------------------------
# The network: a bridge of our own carries the node's address (the kubelet and the API server
# refuse loopback) and the pods' bridge. Service IPs are routed onto it, so nothing addressed to
# one ever leaves the machine; the one service the pods need, `kubernetes`, is DNAT'ed to the
# API server, which is the part of kube-proxy's job that this node needs. The API server itself
# calls an admission webhook's Service at one of its endpoints, a pod's address on the bridge
# (`--enable-aggregator-routing`: the resolver it then uses for aggregated APIs and webhooks
# alike), so the webhook's Service needs no kube-proxy either.
network() {
  # The whole 10.213.0.0/16 is unreachable but for the more specific routes onto our bridge: a
  # client that talks to the cluster while it is down (a stale kubeconfig) is refused on the
  # machine instead of being routed out of it. Kept by `down` on purpose.
  ip route replace unreachable "$cluster_range"
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
  fi
  ip addr replace "$node_ip/24" dev "$bridge"
  ip link set "$bridge" up
  ip route replace "$service_cidr" dev "$bridge"
  if ! iptables -t nat -S PULLCHECK-SERVICES >/dev/null 2>&1; then
    iptables -t nat -N PULLCHECK-SERVICES
    iptables -t nat -A PULLCHECK-SERVICES -d "$service_ip/32" -p tcp --dport 443 \
      -j DNAT --to-destination "$node_ip:$api_port"
  fi
  for chain in OUTPUT PREROUTING; do
    iptables -t nat -C "$chain" -j PULLCHECK-SERVICES 2>/dev/null ||
      iptables -t nat -I "$chain" -j PULLCHECK-SERVICES
  done
  # The kubelet's volume propagation (and containerd's mounts) want shared mounts; this
  # machine's / is private.
  mount --make-rshared /
}

# ---------------------------------------------------------------------------------------------
# The registry: Debian's docker-registry, plain HTTP on loopback, its port kept in the state.
registry() {
  local dir=$state/registry port
  mkdir -p "$dir"
  if [ -f "$dir/port" ]; then
    port=$(cat "$dir/port")
  else
    port=$(free_port)
    echo "$port" >"$dir/port"
  fi
  registry_config "$dir" "127.0.0.1:$port"
  start registry docker-registry serve "$dir/config.yml"
  wait_for registry 20 curl -fsS "http://127.0.0.1:$port/v2/"
  registry_host=127.0.0.1:$port
}

# The images every test may use, built here without a Docker engine and pushed once:
# - pause:3.10, containerd's sandbox image, from tests/cluster/pause/pause.c;
# - tools:1, Debian's static busybox (sh, sleep, true, ...), for the containers under test, and
#   two variants for the start check: tools-nobody:1 (user `nobody`), tools-nocmd:1 (no command),
#   and images/node-only.tar, an archive of an image the registry never gets; tools-reverify:1,
#   the same with a label of its own (a distinct image for node_images.rs);
# - pullcheck:ci and pullcheck:ci-webhook, the images scripts/build-image.sh built from the
#   Dockerfile (the init container's, and the webhook's with its cargo feature).
images() {
  local tmp
  pushed() { curl -fs -o /dev/null -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$registry_host/v2/$1/manifests/$2"; }
  tmp=$(mktemp -d)
  if ! pushed pause 3.10; then
    log "pushing pause:3.10"
    mkdir -p "$tmp/pause"
    cp "$cache/pause" "$tmp/pause/pause"
    image_from "$tmp/pause" pause:3.10 "docker://$registry_host/pause:3.10" --entrypoint '["/pause"]'
  fi
  mkdir -p "$tmp/tools/bin" "$tmp/tools/tmp"
  cp /bin/busybox "$tmp/tools/bin/busybox"
  for applet in sh echo cat ls sleep true false id env; do ln -s busybox "$tmp/tools/bin/$applet"; done
  local sh='["/bin/sh","-c","echo ok"]'
  if ! pushed tools 1; then
    log "pushing tools:1, tools-nobody:1, tools-nocmd:1 (busybox)"
    image_from "$tmp/tools" tools:1 "docker://$registry_host/tools:1" --cmd "$sh" --env PATH=/bin
    # For the start check: an image whose user is a name, and one with no command at all.
    image_from "$tmp/tools" tools-nobody:1 "docker://$registry_host/tools-nobody:1" --cmd "$sh" --env PATH=/bin --user nobody
    image_from "$tmp/tools" tools-nocmd:1 "docker://$registry_host/tools-nocmd:1" --env PATH=/bin
  fi
  # For the re-verification test: an image of its own content too (a label of its own), so
  # that the Node's five names of it are the test's own whatever else pulled tools:1.
  if ! pushed tools-reverify 1; then
    log "pushing tools-reverify:1 (busybox)"
    image_from "$tmp/tools" tools-reverify:1 "docker://$registry_host/tools-reverify:1" --cmd "$sh" --env PATH=/bin \
      --label pullcheck.test=reverify
  fi
  # For the node-images test: an image of its own content (the kubelet lists at most 5 names per
  # image in the Node), named for this registry, which never gets it: only an archive for
  # `ctr images import`.
  if [ ! -f "$state/images/node-only.tar" ]; then
    mkdir -p "$state/images"
    image_from "$tmp/tools" node-only:1 "docker-archive:$state/images/node-only.tar:$registry_host/node-only:1" \
      --cmd "$sh" --env PATH=/bin --label pullcheck.test=node-only
  fi
  local archive tag
  for archive in image:ci image-webhook:ci-webhook; do
    tag=${archive#*:} archive=$repo/target/${archive%%:*}.tar
    [ -f "$archive" ] || die "$archive is missing: run scripts/build-image.sh first (it builds pullcheck's images from the Dockerfile)"
    # Pushed afresh each time: the image follows the code under test.
    skopeo copy -q --dest-tls-verify=false "oci-archive:$archive" "docker://$registry_host/pullcheck:$tag" >/dev/null
  done
  rm -rf "$tmp"
}

# image_from DIR NAME DEST CONFIG_FLAGS...: a one-layer image of DIR, pushed to DEST (a
# containers-transports reference).
image_from() {
  local dir=$1 name=$2 dest=$3 store=(--storage-driver vfs) ctr
  shift 3
  ctr=$(buildah "${store[@]}" from --quiet scratch)
  buildah "${store[@]}" copy --quiet "$ctr" "$dir" / >/dev/null
  buildah "${store[@]}" config "$@" "$ctr"
  buildah "${store[@]}" commit --quiet --rm "$ctr" "localhost/$name" >/dev/null
  buildah "${store[@]}" push --quiet --tls-verify=false "localhost/$name" "$dest"
}

# ---------------------------------------------------------------------------------------------
# containerd's resolver: a stand-in on loopback that answers every question NXDOMAIN, so that an
# image whose registry name does not resolve fails as on a real node (the kubelet's words for a
# DNS failure), and no query from containerd ever leaves the machine. Only containerd uses it
# (containerd_up); the pods keep the kubelet's resolv.conf.
resolver_up() {
  local d=$state/resolver
  mkdir -p "$d"
  echo "nameserver $resolver_ip" >"$d/resolv.conf"
  cat >"$d/nxdomain.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
while True:
    query, peer = s.recvfrom(4096)
    # The header (12 bytes), then the first question: its name's labels, a zero, type, class.
    end = 12
    while end < len(query) and query[end] != 0:
        end += 1 + query[end]
    end += 5
    if len(query) < 12 or end > len(query) or query[2] & 0x80:
        continue
    # The same id and question; an answer (QR) with the query's opcode and RD, RA, NXDOMAIN.
    flags = bytes([0x80 | (query[2] & 0x79), 0x80 | 3])
    s.sendto(query[:2] + flags + b"\x00\x01\x00\x00\x00\x00\x00\x00" + query[12:end], peer)
EOF
  start resolver python3 "$d/nxdomain.py" "$resolver_ip"
  wait_for resolver 10 sh -c "ss -Hlun src $resolver_ip:53 | grep -q ."
}

# ---------------------------------------------------------------------------------------------
etcd_up() {
  # etcd 3.6 (build-etcd.sh): Debian's 3.4.23 lacks watch progress requests, and the API server
  # then refuses the watch streams of newer clients (the frameworks' controllers), whose changes
  # arrive late. A data folder of another etcd version is not upgraded here: `clean` first.
  local etcd_dir version
  etcd_dir=$("$here/build-etcd.sh" | tail -n 1)
  version=$("$etcd_dir/etcd" --version | awk 'NR == 1 {print $3}')
  if [ -d "$state/etcd" ] && [ "$(cat "$state/etcd-version" 2>/dev/null)" != "$version" ]; then
    die "the state folder $state holds the data of another etcd than $version: run 'tests/cluster/cluster.sh clean' first"
  fi
  mkdir -p "$state/etcd"
  echo "$version" >"$state/etcd-version"
  start etcd "$etcd_dir/etcd" --name "$node" --data-dir "$state/etcd" \
    --listen-client-urls "http://$etcd_client" --advertise-client-urls "http://$etcd_client" \
    --listen-peer-urls "http://$etcd_peer" --initial-advertise-peer-urls "http://$etcd_peer" \
    --initial-cluster "$node=http://$etcd_peer" --listen-metrics-urls "" --log-level warn
  wait_for etcd 30 curl -fsS "http://$etcd_client/health"
}

# The API server's own timing of each call to a webhook, at nanosecond grain: its tracing, every
# request sampled, sent to a sink of ours that keeps the webhook calls' spans in
# traces/webhook-calls.jsonl (tests/cluster/kube/tracesink.go). Its metric of the same calls has
# no bucket between 5 and 25 ms.
traces_up() {
  mkdir -p "$state/traces"
  cat >"$state/traces/config.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: TracingConfiguration
endpoint: $trace_sink
samplingRatePerMillion: 1000000
EOF
  start trace-sink "$cache/kube" trace-sink --listen "$trace_sink" --out "$state/traces/webhook-calls.jsonl"
  wait_for trace-sink 10 sh -c "ss -Hltn 'sport = :${trace_sink#*:}' | grep -q ."
}

apiserver_up() {
  local p=$state/pki
  start kube-apiserver "$cache/kube" kube-apiserver \
    --advertise-address "$node_ip" --bind-address "$node_ip" --secure-port "$api_port" \
    --etcd-servers "http://$etcd_client" \
    --client-ca-file "$p/ca.crt" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-cluster-ip-range "$service_cidr" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --enable-aggregator-routing=true \
    --allow-privileged=true --profiling=false \
    --tracing-config-file "$state/traces/config.yaml"
  wait_for kube-apiserver 90 "$cache/kube" kubectl --kubeconfig "$state/kubeconfig/admin" get --raw /readyz
}

controllers_up() {
  local p=$state/pki controllers
  # The cloud controllers' stubs (route, service, cloud-node-lifecycle) are gone from 1.37's
  # controller manager, which refuses to start when they are named.
  case $kubernetes in
    v1.34.*) controllers='*,-nodeipam,-route,-service,-cloud-node-lifecycle' ;;
    *) controllers='*,-nodeipam' ;;
  esac
  start kube-controller-manager "$cache/kube" kube-controller-manager \
    --kubeconfig "$state/kubeconfig/controller-manager" \
    --authentication-kubeconfig "$state/kubeconfig/controller-manager" \
    --authorization-kubeconfig "$state/kubeconfig/controller-manager" \
    --bind-address 127.0.0.1 --secure-port 10257 \
    --leader-elect=false --use-service-account-credentials=true \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --controllers "$controllers" --profiling=false
  start kube-scheduler "$cache/kube" kube-scheduler \
    --kubeconfig "$state/kubeconfig/scheduler" \
    --authentication-kubeconfig "$state/kubeconfig/scheduler" \
    --authorization-kubeconfig "$state/kubeconfig/scheduler" \
    --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false --profiling=false
}

# The runtime of this `up` (PULLCHECK_CLUSTER_RUNTIME, or the state folder's): sets `runtime`
# (containerd2, containerd2-local, containerd1.6, crio) and refuses a runtime other than the one the
# state folder was made with. The versioned names the env file gives (containerd-2.4.2, ...) are
# taken too, so that a shell that sourced it can still run `up`.
pick_runtime() {
  local kept=
  if [ -f "$state/runtime" ]; then
    kept=$(cat "$state/runtime")
  elif [ -d "$state/containerd/root" ]; then
    # A state folder from before the runtime could be picked: Debian's containerd made it.
    kept=containerd1.6
  fi
  local want=${PULLCHECK_CLUSTER_RUNTIME:-${kept:-containerd2}}
  case $want in
    containerd2-local | containerd-2.*-local-pull) runtime=containerd2-local ;;
    containerd2 | containerd-2.*) runtime=containerd2 ;;
    containerd1.6 | containerd-1.6*) runtime=containerd1.6 ;;
    crio | cri-o-*) runtime=crio ;;
    *) die "PULLCHECK_CLUSTER_RUNTIME=$want: not a runtime of the test cluster (containerd2, containerd2-local, containerd1.6 or crio)" ;;
  esac
  if [ -n "$kept" ] && [ "$kept" != "$runtime" ]; then
    die "the state folder $state was made with the runtime $kept, not $runtime: run \`tests/cluster/cluster.sh clean\` first (a runtime's images and containers are its own)"
  fi
}

# containerd 1.6's configuration (version 2).
containerd_config_v2() {
  local c=$state/containerd
  cat >"$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$registry_host/pause:3.10"
  # This machine's root lacks CAP_SYS_RESOURCE, so no process may lower its oom_score_adj: the
  # kubelet's -998 for a pod sandbox makes runc fail ("failed to update
  # /proc/self/oom_score_adj: Permission denied"). This caps every container's at containerd's
  # own (0), as containerd does for rootless use.
  restrict_oom_score_adj = true
  enable_cdi = false
  # containerd runs in a mount namespace of its own (below): the pods' network namespaces are
  # mounted there, not in the machine's /run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state of our own, not the machine's /run/containerd/runc.
        Root = "$c/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$state/certs.d"
EOF
}

# containerd 2's own configuration (version 3: the CRI plugin is split into an images plugin and a
# runtime plugin), the same settings as containerd_config_v2's. $1: use_local_image_pull, false
# (the transfer service, containerd 2's default) or true (the local pull of containerd 1.x).
containerd_config_v3() {
  local c=$state/containerd
  cat >"$c/config.toml" <<EOF
version = 3
root = "$c/root"
state = "$c/state"
# NRI would listen on the machine's /var/run/nri/nri.sock; nothing here uses it.
disabled_plugins = ["io.containerd.nri.v1.nri"]
[grpc]
  address = "$c/containerd.sock"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  use_local_image_pull = $1
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$registry_host/pause:3.10"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$state/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  # As in containerd_config_v2: this machine's root cannot lower its oom_score_adj.
  restrict_oom_score_adj = true
  # containerd 2 has no enable_cdi (CDI is always on): no spec folder instead, so no device of
  # the machine's is ever injected.
  cdi_spec_dirs = []
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$c/runc"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$state/cni/net.d"
EOF
}

# The runtime's binary (containerd_bin, or crio_dir: the folder of crio, pinns and crictl), its
# socket (cri_socket) and versioned name (`runtime_name`: containerd-2.4.2,
# containerd-2.4.2-local-pull, containerd-1.6.20, cri-o-1.34.0), the name of its recorded words'
# table.
runtime_binary() {
  case $runtime in
    crio)
      command -v conmon >/dev/null || {
        log "installing Debian's conmon"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq conmon >/dev/null
      }
      crio_dir=$("$here/build-crio.sh" | tail -n 1)
      cri_socket=$state/crio/crio.sock
      # `crio version 1.34.0` on its first line.
      runtime_name=cri-o-$("$crio_dir/crio" --version | awk 'NR == 1 {print $3}')
      return 0
      ;;
    containerd2*)
      local built
      built=$("$here/build-containerd.sh" | tail -n 1)
      containerd_bin=$built/containerd
      # containerd finds its shim on its PATH: the one built with it first, not Debian's.
      containerd_path=$built:$PATH
      ;;
    containerd1.6)
      containerd_bin=$(command -v containerd)
      containerd_path=$PATH
      ;;
  esac
  # `containerd github.com/containerd/containerd/v2 v2.4.2 REVISION`; Debian's says 1.6.20~ds1.
  local version
  version=$("$containerd_bin" --version | awk '{print $3}')
  version=${version#v}
  runtime_name=containerd-${version%%[~+]*}
  [ "$runtime" = containerd2-local ] && runtime_name+=-local-pull
  cri_socket=$state/containerd/containerd.sock
  return 0
}

# The pods' network, for either runtime: the bridge plugin on our bridge, host-local addresses.
cni_network() {
  mkdir -p "$state/cni/net.d" "$state/cni/ipam"
  cat >"$state/cni/net.d/10-pullcheck.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "pullcheck",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "$state/cni/ipam",
        "ranges": [[{"subnet": "$pod_cidr", "rangeStart": "10.213.0.10", "gateway": "$node_ip"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOF
}

containerd_up() {
  local c=$state/containerd
  mkdir -p "$c/root" "$c/state" "$state/certs.d"
  cni_network
  case $runtime in
    containerd1.6) containerd_config_v2 ;;
    containerd2) containerd_config_v3 false ;;
    containerd2-local) containerd_config_v3 true ;;
  esac
  # In a mount namespace of its own, whose /etc/resolv.conf names only the stand-in of
  # resolver_up. A slave of the machine's, so that the kubelet's volume mounts still reach the
  # containers; the pods' network namespaces are mounted under containerd's state (above), in
  # that namespace, and go with it.
  start containerd unshare --mount --propagation slave -- \
    sh -c 'mount --bind "$1" /etc/resolv.conf && PATH=$2 exec "$3" --config "$4"' \
    sh "$state/resolver/resolv.conf" "$containerd_path" "$containerd_bin" "$c/config.toml"
  wait_for containerd 30 ctr --address "$c/containerd.sock" version
  # pullcheck's own images were pushed afresh (images): a copy the node kept from an earlier
  # `up` of a kept state would be run instead wherever the pull policy is IfNotPresent (the
  # init container's), so the node forgets them.
  local tag name
  for tag in ci ci-webhook; do
    ctr --address "$c/containerd.sock" -n k8s.io images rm "$registry_host/pullcheck:$tag" >/dev/null 2>&1 || true
  done
  # The names earlier tests gave images on hosts of their own (each fault proxy and test registry
  # is one, on a port never used again) are forgotten too: the kubelet lists at most 5 names of
  # an image, and the seed case with IfNotPresent proves an absence only from a complete list.
  for name in $(ctr --address "$c/containerd.sock" -n k8s.io images ls -q); do
    case $name in
      "$registry_host"/* | sha256:*) ;;
      *) ctr --address "$c/containerd.sock" -n k8s.io images rm "$name" >/dev/null 2>&1 || true ;;
    esac
  done
}

# CRI-O (runtime-crio.sh writes its configuration): in a mount namespace of its own, as
# containerd_up's, where /etc/resolv.conf is the stand-in resolver's and /etc/containers is the
# node's registry configuration of the state folder (containers/image reads certs.d there only).
crio_up() {
  local c=$state/crio command name
  # shellcheck source=runtime-crio.sh
  . "$here/runtime-crio.sh"
  cni_network
  crio_files "$state" "$crio_dir" "$registry_host" pullcheck overlay
  mapfile -t command < <(crio_command "$state" "$crio_dir")
  # The bind mount's target: skopeo and buildah (need) made it on any machine that runs this.
  [ -d /etc/containers ] || die "/etc/containers is missing: CRI-O's registry configuration is mounted there in its own namespace"
  start crio unshare --mount --propagation slave -- \
    sh -c 'mount --bind "$1" /etc/resolv.conf && mount --bind "$2" /etc/containers && shift 2 && exec "$@"' \
    sh "$state/resolver/resolv.conf" "$c/containers" "${command[@]}"
  wait_for crio 60 "$crio_dir/crictl" --runtime-endpoint "unix://$cri_socket" version
  # As containerd_up: pullcheck's own images and other hosts' names are forgotten.
  for name in $("$crio_dir/crictl" --runtime-endpoint "unix://$cri_socket" images 2>/dev/null | awk 'NR > 1 {print $1 ":" $2}'); do
    case $name in
      "$registry_host"/pullcheck:* | *:'<none>') "$crio_dir/crictl" --runtime-endpoint "unix://$cri_socket" rmi "$name" >/dev/null 2>&1 || true ;;
      "$registry_host"/*) ;;
      *) "$crio_dir/crictl" --runtime-endpoint "unix://$cri_socket" rmi "$name" >/dev/null 2>&1 || true ;;
    esac
  done
}

kubelet_up() {
  local p=$state/pki k=$state/kubelet
  mkdir -p "$k"
  echo "nameserver 127.0.0.1" >"$k/resolv.conf"
  cat >"$k/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $p/kubelet.crt
tlsPrivateKeyFile: $p/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $p/ca.crt}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://$cri_socket
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
# Image GC never runs: containerd 1.6 does not pin the sandbox image, and the tests import
# images the registry does not have.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
serializeImagePulls: false
clusterDomain: cluster.local
# Pods resolve no names here: a resolver on loopback that answers nothing keeps any lookup on
# the machine (the tests use addresses only).
resolvConf: $k/resolv.conf
nodeStatusUpdateFrequency: 4s
# The scale test runs 300 pods of one Job at once (tests/cluster/scale.rs), beside the releases'.
maxPods: 400
EOF
  start kubelet "$cache/kube" kubelet --config "$k/config.yaml" --kubeconfig "$state/kubeconfig/kubelet-client" \
    --root-dir "$k/root" --cert-dir "$k/pki" --hostname-override "$node" --node-ip "$node_ip"
}

ready() {
  local kubectl=("$cache/kube" kubectl --kubeconfig "$state/kubeconfig/admin")
  "${kubectl[@]}" get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True &&
    "${kubectl[@]}" -n default get serviceaccount default >/dev/null 2>&1
}

write_env() {
  cat >"$state/env" <<EOF
export KUBECONFIG=$state/kubeconfig/admin
export PULLCHECK_CLUSTER_DIR=$state
export PULLCHECK_CLUSTER_KUBE=$cache/kube
export PULLCHECK_CLUSTER_REGISTRY=$registry_host
export PULLCHECK_CLUSTER_NODE=$node
export PULLCHECK_CLUSTER_NODE_IP=$node_ip
export PULLCHECK_CLUSTER_API=https://$node_ip:$api_port
export PULLCHECK_CLUSTER_CONTAINERD=$state/containerd/containerd.sock
export PULLCHECK_CLUSTER_HOSTS_DIR=$state/certs.d
export PULLCHECK_CLUSTER_CRI=unix://$cri_socket
export PULLCHECK_CLUSTER_CRICTL=${crio_dir:+$crio_dir/crictl}
export PULLCHECK_CLUSTER_NODE_CONTAINERS=$state/crio/containers
export PULLCHECK_CLUSTER_RESOLVER=$resolver_ip
export PULLCHECK_CLUSTER_RUNTIME=$runtime_name
export PULLCHECK_CLUSTER_KUBERNETES=$kubernetes
EOF
}

up() {
  need
  pick_runtime
  # The Kubernetes version (tests/cluster/build.sh builds it), kept by the state folder as the
  # runtime is: etcd's data is not carried across minor versions here.
  kubernetes=${PULLCHECK_CLUSTER_KUBERNETES:-$(cat "$state/kubernetes" 2>/dev/null || echo v1.34.4)}
  if [ -f "$state/kubernetes" ] && [ "$(cat "$state/kubernetes")" != "$kubernetes" ]; then
    die "the state folder $state was made with Kubernetes $(cat "$state/kubernetes"), not $kubernetes: run 'tests/cluster/cluster.sh clean' first"
  fi
  cache=$(PULLCHECK_CLUSTER_KUBERNETES=$kubernetes "$here/build.sh" | tail -n 1)
  echo "$kubernetes" >"$state/kubernetes"
  runtime_binary
  echo "$runtime" >"$state/runtime"
  log "state in $state, Kubernetes from $cache, runtime $runtime_name (${containerd_bin:-$crio_dir/crio})"
  pki
  mkdir -p "$state/kubeconfig"
  kubeconfig admin admin
  kubeconfig controller-manager controller-manager
  kubeconfig scheduler scheduler
  kubeconfig kubelet-client kubelet-client
  network
  registry
  images
  etcd_up
  traces_up
  apiserver_up
  controllers_up
  resolver_up
  case $runtime in
    crio) crio_up ;;
    *) containerd_up ;;
  esac
  kubelet_up
  write_env
  local deadline=$(($(date +%s) + 180))
  until ready; do
    for c in kube-controller-manager kube-scheduler kubelet "${runtime%%[0-9]*}"; do
      running "$c" || { echo "cluster: $c exited; the last lines of its log:" >&2; tail -n 40 "$state/logs/$c.log" >&2; exit 1; }
    done
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "cluster: the Node is not Ready (or no default service account) after 180 s:" >&2
      "$cache/kube" kubectl --kubeconfig "$state/kubeconfig/admin" get node "$node" -o yaml >&2 || true
      tail -n 40 "$state/logs/kubelet.log" >&2 || true
      exit 1
    fi
    sleep 1
  done
  log "ready: source $state/env"
}

down() {
  # The kubelet first, so it starts nothing new; then every container's shim, by the socket of
  # our containerd named in its command line; then the control plane and the registry.
  for c in kubelet kube-scheduler kube-controller-manager; do stop "$c"; done
  local sock=$state/containerd/containerd.sock
  if [ -S "$sock" ]; then
    local ids
    ids=$(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do ctr --address "$sock" -n k8s.io tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
  fi
  pkill -KILL -f "containerd-shim.*-address $sock" 2>/dev/null || true
  # CRI-O's containers: each pod's processes (conmon among them: its monitor_cgroup is the pod's)
  # are in the pod's cgroup, which outlives CRI-O.
  local procs
  for procs in /sys/fs/cgroup/*/kubepods/cgroup.procs /sys/fs/cgroup/*/kubepods/*/cgroup.procs \
    /sys/fs/cgroup/*/kubepods/*/*/cgroup.procs /sys/fs/cgroup/*/kubepods/*/*/*/cgroup.procs; do
    [ -f "$procs" ] && xargs -r kill -KILL <"$procs" 2>/dev/null || true
  done
  sleep 0.5
  for c in containerd crio kube-apiserver trace-sink etcd registry resolver; do stop "$c"; done
  # Whatever else still names the state folder (a daemon whose PID file was lost to an
  # interrupted `up`): every process of ours has it in its arguments.
  pkill -KILL -f -- " $state/" 2>/dev/null || true
  # Mounts the kubelet and containerd left under the state folder, deepest first.
  { grep -F " $state/" /proc/self/mounts || true; } | awk '{print $2}' | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  # Network namespaces containerd made for pods: each holds an end of a veth on our bridge.
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}' || true); do
    if ip netns exec "$ns" ip -o addr 2>/dev/null | grep -q ' 10\.213\.0\.'; then ip netns delete "$ns" 2>/dev/null || true; fi
  done
  rm -rf "$state/cni/ipam"
  for chain in OUTPUT PREROUTING; do
    while iptables -t nat -D "$chain" -j PULLCHECK-SERVICES 2>/dev/null; do :; done
  done
  iptables -t nat -F PULLCHECK-SERVICES 2>/dev/null || true
  iptables -t nat -X PULLCHECK-SERVICES 2>/dev/null || true
  ip route del "$service_cidr" dev "$bridge" 2>/dev/null || true
  ip link del "$bridge" 2>/dev/null || true
  ip route replace unreachable "$cluster_range"
  # Pods' cgroups, so the next `up` starts from none (cgroup v1: one tree per controller).
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  log "stopped"
}

stop() {
  local name=$1 pid
  pid=$(cat "$state/pids/$name.pid" 2>/dev/null) || return 0
  if [ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null; then
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$state/pids/$name.pid"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  env) cat "$state/env" ;;
  clean) down && rm -rf "$state" ;;
  *) echo "usage: $0 up|down|clean|env" >&2; exit 2 ;;
esac
