# Shell helpers shared by the demo and the benchmarks: install and start a real registry on
# loopback, and push small images through the registry API with curl (no Docker engine).
# Source it; it defines functions only.

need_registry() {
  # GNU time measures peak memory in tests/it/hostile.rs.
  if command -v docker-registry >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 && [ -x /usr/bin/time ]; then
    return
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "docker-registry, curl or GNU time is missing: run 'sudo apt-get install -y docker-registry curl time'" >&2
    exit 2
  fi
  echo "== installing docker-registry (Debian's CNCF distribution registry), curl and GNU time"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry curl time >/dev/null
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

# registry_config DIR ADDR [EXTRA_YAML]: writes DIR/config.yml for a plain-HTTP registry on ADDR
# with storage under DIR/storage and an access log.
registry_config() {
  local dir=$1 addr=$2 extra=${3:-}
  mkdir -p "$dir/storage"
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: info
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: $addr
  secret: pullcheck-demo
health:
  storagedriver:
    enabled: false
$extra
EOF
}

# start_registry DIR [EXTRA_YAML]: plain-HTTP registry with storage under DIR. Sets
# REGISTRY_HOST, REGISTRY_PID, REGISTRY_LOG.
start_registry() {
  local dir=$1 extra=${2:-}
  local port
  port=$(free_port)
  registry_config "$dir" "127.0.0.1:$port" "$extra"
  REGISTRY_LOG=$dir/registry.log
  docker-registry serve "$dir/config.yml" >"$REGISTRY_LOG" 2>&1 &
  REGISTRY_PID=$!
  REGISTRY_HOST=127.0.0.1:$port
  for _ in $(seq 100); do
    if curl -s -o /dev/null "http://$REGISTRY_HOST/v2/" 2>/dev/null; then return; fi
    sleep 0.1
  done
  echo "the registry did not start; its log:" >&2
  cat "$REGISTRY_LOG" >&2
  exit 1
}

# cluster_job NAME IMAGE: a batch/v1 Job of one container (`command: ["true"]`, IfNotPresent,
# restartPolicy Never, backoffLimit 5) on the host's network, for the cluster of tests/cluster/
# (the seed case of scripts/demo-cluster.sh and bench/cluster.sh).
cluster_job() {
  cat <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
spec:
  backoffLimit: 5
  template:
    spec:
      restartPolicy: Never
      hostNetwork: true
      containers:
      - name: app
        image: $2
        imagePullPolicy: IfNotPresent
        command: ["true"]
EOF
}

stop_registry() {
  if [ -n "${REGISTRY_PID:-}" ]; then
    kill "$REGISTRY_PID" 2>/dev/null || true
    wait "$REGISTRY_PID" 2>/dev/null || true
    REGISTRY_PID=
  fi
}

# push_blob HOST REPO FILE -> prints the blob digest
push_blob() {
  local host=$1 repo=$2 file=$3 digest loc sep
  digest="sha256:$(sha256sum "$file" | cut -d' ' -f1)"
  loc=$(curl -fsS -X POST -D - -o /dev/null "http://$host/v2/$repo/blobs/uploads/" |
    awk 'tolower($1)=="location:" {print $2}' | tr -d '\r')
  case $loc in http*) ;; *) loc="http://$host$loc" ;; esac
  case $loc in *\?*) sep='&' ;; *) sep='?' ;; esac
  curl -fsS -X PUT -H 'Content-Type: application/octet-stream' \
    --data-binary "@$file" "$loc${sep}digest=$digest" -o /dev/null
  echo "$digest"
}

# put_manifest HOST REPO REF MEDIATYPE FILE -> prints the manifest digest
put_manifest() {
  local host=$1 repo=$2 ref=$3 type=$4 file=$5
  curl -fsS -X PUT -H "Content-Type: $type" --data-binary "@$file" \
    "http://$host/v2/$repo/manifests/$ref" -o /dev/null
  echo "sha256:$(sha256sum "$file" | cut -d' ' -f1)"
}

# image_parts HOST REPO OS ARCH CONFIG_TYPE LAYER_TYPE -> prints "config_digest config_size layer_digest layer_size"
image_parts() {
  local host=$1 repo=$2 os=$3 arch=$4 tmp
  tmp=$(mktemp -d)
  printf '{"architecture":"%s","os":"%s","rootfs":{"type":"layers","diff_ids":[]},"config":{}}' "$arch" "$os" >"$tmp/config"
  printf 'pullcheck sample layer for %s/%s %s\n' "$os" "$arch" "$repo" >"$tmp/layer"
  local cd ld
  cd=$(push_blob "$host" "$repo" "$tmp/config")
  ld=$(push_blob "$host" "$repo" "$tmp/layer")
  echo "$cd $(wc -c <"$tmp/config") $ld $(wc -c <"$tmp/layer")"
  rm -rf "$tmp"
}

# push_manifest HOST REPO REF OS ARCH MANIFEST_TYPE CONFIG_TYPE LAYER_TYPE -> prints the digest
push_manifest() {
  local host=$1 repo=$2 ref=$3 os=$4 arch=$5 type=$6 config_type=$7 layer_type=$8 parts tmp
  read -r -a parts <<<"$(image_parts "$host" "$repo" "$os" "$arch")"
  tmp=$(mktemp)
  printf '{"schemaVersion":2,"mediaType":"%s","config":{"mediaType":"%s","digest":"%s","size":%s},"layers":[{"mediaType":"%s","digest":"%s","size":%s}]}' \
    "$type" "$config_type" "${parts[0]}" "${parts[1]}" "$layer_type" "${parts[2]}" "${parts[3]}" >"$tmp"
  put_manifest "$host" "$repo" "$ref" "$type" "$tmp"
  rm -f "$tmp"
}

# push_oci_manifest HOST REPO REF OS ARCH -> prints the manifest digest
push_oci_manifest() {
  push_manifest "$@" application/vnd.oci.image.manifest.v1+json \
    application/vnd.oci.image.config.v1+json application/vnd.oci.image.layer.v1.tar
}

# push_schema2_manifest HOST REPO REF OS ARCH -> prints the manifest digest
push_schema2_manifest() {
  push_manifest "$@" application/vnd.docker.distribution.manifest.v2+json \
    application/vnd.docker.container.image.v1+json application/vnd.docker.image.rootfs.diff.tar.gzip
}

# push_oci_index HOST REPO REF -> an index of linux/amd64 and linux/arm64/v8; prints its digest
push_oci_index() {
  local host=$1 repo=$2 ref=$3 amd arm tmp
  amd=$(push_oci_manifest "$host" "$repo" "amd64-child" linux amd64)
  arm=$(push_oci_manifest "$host" "$repo" "arm64-child" linux arm64)
  local amd_size arm_size
  amd_size=$(curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$host/v2/$repo/manifests/$amd" | wc -c)
  arm_size=$(curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$host/v2/$repo/manifests/$arm" | wc -c)
  tmp=$(mktemp)
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"amd64","os":"linux"}},{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"arm64","os":"linux","variant":"v8"}}]}' \
    "$amd" "$amd_size" "$arm" "$arm_size" >"$tmp"
  put_manifest "$host" "$repo" "$ref" application/vnd.oci.image.index.v1+json "$tmp"
  rm -f "$tmp"
}
