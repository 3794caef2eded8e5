# CRI-O as the cluster's container runtime: its configuration, with every path it would otherwise
# take from the machine (/etc/crio, /etc/containers, /var/lib/containers, /var/run/crio, /var/log,
# /var/tmp, /opt/cni) moved into the cluster's state folder, so that a test cluster on CRI-O
# shares nothing with the machine. Source it; it defines functions only. The binaries come from
# tests/cluster/build-crio.sh; conmon and runc are Debian's.
#
#   crio_config STATE REGISTRY NETWORK [STORAGE]       print crio.conf
#   crio_files STATE CRIO REGISTRY NETWORK [STORAGE]   write STATE/crio/: crio.conf and the files
#                                                      and folders it names
#   crio_command STATE CRIO                            print the command that starts CRI-O, one
#                                                      word a line (for `mapfile -t`)
#
# STATE is the cluster's state folder: CRI-O keeps its own under STATE/crio (its socket is
# STATE/crio/crio.sock) and reads the node's CNI networks from STATE/cni/net.d (the bridge's
# configuration containerd_up writes). CRIO is the folder build-crio.sh printed. REGISTRY is the
# registry (host:port) of the pause image, pause:3.10. NETWORK is the name of the CNI network pods
# join (the `name` of its .conflist, not the bridge's). STORAGE is containers-storage's driver:
# overlay (the default; the machine's root is ext4) or vfs.
#
# This machine's root lacks CAP_SYS_RESOURCE, so no process may lower its oom_score_adj, and
# CRI-O has no setting like containerd's restrict_oom_score_adj: a container asking for a negative
# one (a Guaranteed pod's, -997) fails in runc ("failed to update /proc/self/oom_score_adj:
# Permission denied"), as does the infra container CRI-O starts at -998 for a pod that shares its
# process namespace. So CRI-O's OCI runtime is runc behind a wrapper (crio_files writes it,
# STATE/crio/bin/runc) that raises a container's oom_score_adj to its own before runc reads it:
# what restrict_oom_score_adj does in containerd's CRI. The same wrapper drops the hugepage limits
# when the machine has no hugetlb hierarchy mounted (this one's kernel has the controller, unmounted):
# CRI-O asks /proc/cgroups, which lists it, and runc then fails the container ("cannot set hugetlb
# limit"); containerd's CRI looks for /sys/fs/cgroup/hugetlb and leaves them out, as this does.
# Nothing else of the container changes.
#
# The node's registry configuration is containers/image's, in the layout of a node's
# /etc/containers: STATE/crio/containers/registries.conf, its drop-ins in registries.conf.d/ and
# per-host certificates in certs.d/ (containers-certs.d(5)). CRI-O runs in a mount namespace where
# that folder is /etc/containers (the library reads certs.d there only), and reloads the
# registries' files when they change (auto_reload_registries): a test adds a host by writing a
# file.

# crio_config STATE REGISTRY NETWORK [STORAGE]: CRI-O v1.34's configuration (`crio config` prints
# every key with its meaning).
crio_config() {
  local state=$1 registry=$2 network=$3 storage=${4:-overlay}
  local c=$state/crio
  cat <<EOF
[crio]
root = "$c/storage"
runroot = "$c/run/storage"
storage_driver = "$storage"
storage_option = []
log_dir = "$c/log"
# The version files and the clean-shutdown file tell CRI-O, at start, whether to wipe its
# containers and images (after a reboot or an upgrade): ours, not the machine's /var/run/crio.
version_file = "$c/run/version"
version_file_persist = "$c/version"
clean_shutdown_file = "$c/clean.shutdown"

[crio.api]
listen = "$c/crio.sock"
# The streaming server (exec, attach, port-forward) on loopback, on a port of the kernel's choice.
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
default_runtime = "runc"
# The cgroup driver the kubelet takes from the runtime (CRI RuntimeConfig): cgroupfs, as the
# containerd nodes use; CRI-O's default is systemd, and there is no systemd here. conmon then
# lives in the pod's cgroup.
cgroup_manager = "cgroupfs"
decryption_keys_path = "$c/keys"
hooks_dir = ["$c/hooks.d"]
# No CDI devices of the machine's are ever injected.
cdi_spec_dirs = []
container_exits_dir = "$c/run/exits"
container_attach_socket_dir = "$c/run"
namespaces_dir = "$c/run/ns"
pinns_path = "$c/bin/pinns"
# No irqbalance here: CRI-O would otherwise read and write /etc/sysconfig.
irqbalance_config_file = ""
irqbalance_config_restore_file = "disable"
# No hostPort mapping: the tests' pods use the host's network, and CRI-O would otherwise need the
# machine's iptables or nft at start (it exits without them) and write rules there.
disable_hostport_mapping = true
log_level = "info"

[crio.runtime.runtimes.runc]
# runc behind the oom_score_adj wrapper (above).
runtime_path = "$c/bin/runc"
runtime_type = "oci"
# runc's state of our own, not the machine's /run/runc.
runtime_root = "$c/run/runc"
monitor_path = "/usr/bin/conmon"
monitor_cgroup = "pod"

[crio.image]
# registries.conf, its drop-ins and certs.d are read again when they change: a test writes them.
auto_reload_registries = true
# Credentials come from the kubelet, pull by pull; the machine's ~/.docker/config.json or
# containers auth.json is never read.
global_auth_file = "$c/auth.json"
pause_image = "$registry/pause:3.10"
signature_policy = "$c/policy.json"
signature_policy_dir = "$c/policies"
# Layers are downloaded here, not to the machine's /var/tmp.
big_files_temporary_dir = "$c/tmp"
# CRI-O itself treats 127.0.0.0/8 as insecure (plain HTTP): the tests' registries are all there.

[crio.network]
cni_default_network = "$network"
network_dir = "$state/cni/net.d"
plugin_dirs = ["/usr/lib/cni"]

[crio.metrics]
enable_metrics = false

[crio.nri]
# NRI would listen on the machine's /var/run/nri/nri.sock; nothing here uses it.
enable_nri = false
EOF
}

# crio_files STATE CRIO REGISTRY NETWORK [STORAGE]: STATE/crio/crio.conf and what it names: the
# node's /etc/containers (above) with a registries.conf that has no search registries (a short name
# is an error, as the kubelet's docker.io default makes every name qualified anyway), a signature
# policy that accepts anything (the tests' images are unsigned), an empty auth file,
# containers-storage's own configuration (else /etc/containers/storage.conf, if the machine has
# one, adds its options), and the pinns helper and the runc wrapper, where crio.conf names them
# whichever build made them.
crio_files() {
  local state=$1 bin=$2 c=$1/crio
  shift 2
  mkdir -p "$c/run" "$c/log" "$c/keys" "$c/hooks.d" "$c/policies" "$c/tmp" "$c/bin" \
    "$c/crio.conf.d" "$c/containers/registries.conf.d" "$c/containers/certs.d"
  crio_config "$state" "$@" >"$c/crio.conf"
  cp "$bin/pinns" "$c/bin/pinns"
  crio_runc >"$c/bin/runc"
  chmod 755 "$c/bin/runc"
  [ -f "$c/containers/registries.conf" ] ||
    echo 'unqualified-search-registries = []' >"$c/containers/registries.conf"
  echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$c/policy.json"
  echo '{"auths": {}}' >"$c/auth.json"
  cat >"$c/storage.conf" <<EOF
[storage]
driver = "${3:-overlay}"
runroot = "$c/run/storage"
graphroot = "$c/storage"
EOF
}

# crio_runc: the wrapper CRI-O runs as its OCI runtime. On `create` or `run` (the bundle's
# config.json) and `exec` (its --process file) it raises a negative oomScoreAdj to its own
# process's (0 here) and empties hugepageLimits without a hugetlb hierarchy (above), then runs
# Debian's runc with the same arguments. CRI-O writes both files
# as indented JSON where each key occurs once; sed over the whole file (-z), not a JSON tool, since
# it runs at every container start.
crio_runc() {
  cat <<'EOF'
#!/bin/sh
own=$(cat /proc/self/oom_score_adj)
bundle=. process= prev= command=
for a in "$@"; do
  case $prev in
    --bundle | -b) bundle=$a ;;
    --process | -p) process=$a ;;
  esac
  case $a in
    --bundle=*) bundle=${a#--bundle=} ;;
    --process=*) process=${a#--process=} ;;
    create | run | exec) [ -n "$command" ] || command=$a ;;
  esac
  prev=$a
done
case $command in
  create | run) file=$bundle/config.json ;;
  exec) file=$process ;;
  *) file= ;;
esac
if [ -n "$file" ] && [ "$own" -ge 0 ]; then
  sed -z -i -E "s/\"oomScoreAdj\"[[:space:]]*:[[:space:]]*-[0-9]+/\"oomScoreAdj\":$own/" "$file" || exit 1
fi
if [ -n "$file" ] && [ ! -d /sys/fs/cgroup/hugetlb ]; then
  sed -z -i -E 's/"hugepageLimits"[[:space:]]*:[[:space:]]*\[[^]]*\]/"hugepageLimits":[]/' "$file" || exit 1
fi
exec /usr/sbin/runc "$@"
EOF
}

# crio_command STATE CRIO: the command that starts CRI-O (CRIO: the folder build-crio.sh printed),
# one word a line: containers-storage's and containers-image's configuration files, which
# crio.conf cannot name, by their environment variables and flags; an empty drop-in folder of
# ours instead of /etc/crio/crio.conf.d.
crio_command() {
  local c=$1/crio bin=$2
  printf '%s\n' env "CONTAINERS_STORAGE_CONF=$c/storage.conf" \
    "$bin/crio" --config "$c/crio.conf" --config-dir "$c/crio.conf.d" \
    --registries-conf "$c/containers/registries.conf" --registries-conf-dir "$c/containers/registries.conf.d"
}
