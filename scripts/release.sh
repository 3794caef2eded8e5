#!/usr/bin/env bash
# Publishes a release of pullcheck: what .github/workflows/release.yml runs on a version tag, and
# what the cluster tests run against the test cluster's registry (tests/cluster/release.rs).
#
# Usage: scripts/release.sh REGISTRY VERSION
#        scripts/release.sh --binaries      (only the static binaries, for every platform)
#
#   REGISTRY  where the images and the chart go, e.g. ghcr.io/pullcheck
#   VERSION   the release's semantic version, e.g. 1.2.0 (a leading `v`, as in the tag, is dropped)
#
# It pushes:
#   REGISTRY/pullcheck:VERSION          the init container's image (no cargo feature)
#   REGISTRY/pullcheck-cluster:VERSION  the chart's image (`--features webhook,watch`: the pods
#                                       run `pullcheck webhook` and `pullcheck watch`)
#   each an OCI image index of linux/amd64 and linux/arm64, with two OCI referrers attached:
#   its SBOM (SPDX 2.3 JSON, artifact type application/spdx+json, from `cargo metadata` and
#   Cargo.lock for that feature set) and the release's provenance (an in-toto statement, SLSA
#   provenance v1, artifact type application/vnd.in-toto+json, naming the source commit, the
#   command and every image and binary digest);
#   oci://REGISTRY/charts/pullcheck:VERSION, the chart, whose version, appVersion and default
#   images (image.repository REGISTRY/pullcheck-cluster, inject.image REGISTRY/pullcheck:VERSION)
#   are set from VERSION in the packaged chart only.
# And leaves in dist/release/ (PULLCHECK_RELEASE_DIR) what the workflow attaches to the GitHub
# release: the static binaries pullcheck-linux-ARCH and pullcheck-cluster-linux-ARCH, SHA256SUMS,
# the SBOMs, the provenance, the chart's .tgz and release.json (every digest pushed).
#
# Environment:
#   PULLCHECK_RELEASE_PLAIN_HTTP=1   speak plain HTTP to REGISTRY (a local test registry)
#   PULLCHECK_RELEASE_ARCHES         the platforms, default "amd64 arm64"
#   PULLCHECK_HELM, PULLCHECK_ORAS   helm and oras to use; otherwise from the PATH, else built
#                                    from their Go modules (tests/cluster/build-helm.sh; oras
#                                    with `go install`, into the same cache)
# Credentials: log in beforehand with `buildah login`, `helm registry login` and `oras login`.
#
# The host's platform is built by scripts/build-image.sh --all (the same binaries the tests run);
# arm64 on x86_64 is cross-built with rustup's aarch64-unknown-linux-musl target, linked by
# rust-lld, with Debian's gcc-aarch64-linux-gnu compiling ring's C and assembly. Needs root (as
# build-image.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "scripts/release.sh: $*" >&2; exit 2; }
binaries_only=0
if [ "${1:-}" = --binaries ]; then
  binaries_only=1
elif [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  usage; exit 0
elif [ $# -ne 2 ]; then
  usage >&2; exit 2
else
  registry=${1%/}
  version=${2#v}
  [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    die "VERSION $2 is not a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE])"
  crate=$(awk -F'"' '/^version = / {print $2; exit}' Cargo.toml)
  [ "${version%%-*}" = "${crate%%-*}" ] ||
    die "VERSION $version is not Cargo.toml's $crate: the binaries would report $crate (bump Cargo.toml first)"
  [[ $registry =~ ^[A-Za-z0-9.:-]+(/[a-z0-9._-]+)*$ ]] || die "REGISTRY $1 is not a registry host with an optional path"
fi
arches=${PULLCHECK_RELEASE_ARCHES:-amd64 arm64}
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

case $(uname -m) in
  x86_64) host=amd64 ;;
  aarch64) host=arm64 ;;
  *) die "unsupported build machine $(uname -m)" ;;
esac
rust_target() {
  case $1 in
    amd64) echo x86_64-unknown-linux-musl ;;
    arm64) echo aarch64-unknown-linux-musl ;;
    *) die "unsupported platform $1 (amd64, arm64)" ;;
  esac
}

# --- the static binaries, dist/<arch>/pullcheck and dist/<arch>/pullcheck-webhook
# cross ARCH: builds both binaries for a platform other than the host's.
cross() {
  local target built
  target=$(rust_target "$1")
  rustup target list --installed | grep -qx "$target" || rustup target add "$target" >/dev/null
  if [ "$1" = arm64 ]; then
    command -v aarch64-linux-gnu-gcc >/dev/null || {
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu >/dev/null
    }
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
    export CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_musl=aarch64-linux-gnu-ar
  else
    command -v x86_64-linux-gnu-gcc >/dev/null || die "x86_64-linux-gnu-gcc is missing (Debian's gcc-x86-64-linux-gnu)"
    export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
    export CC_x86_64_unknown_linux_musl=x86_64-linux-gnu-gcc AR_x86_64_unknown_linux_musl=x86_64-linux-gnu-ar
  fi
  built=${CARGO_TARGET_DIR:-target}/$target/release/pullcheck
  mkdir -p "dist/$1"
  cargo build --release --locked --target "$target" --features webhook,watch
  cp "$built" "dist/$1/pullcheck-webhook"
  cargo build --release --locked --target "$target"
  cp "$built" "dist/$1/pullcheck"
}
scripts/build-image.sh --all >/dev/null
for arch in $arches; do
  [ "$arch" = "$host" ] || cross "$arch"
  # A release binary is static: a dynamic one would not start in a `FROM scratch` image.
  for binary in pullcheck pullcheck-webhook; do
    file -b "dist/$arch/$binary" | grep -q 'statically linked' || die "dist/$arch/$binary is not statically linked: $(file -b "dist/$arch/$binary")"
  done
done
[ "$binaries_only" = 0 ] || exit 0

# --- the tools
cache=${PULLCHECK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pullcheck}
helm=${PULLCHECK_HELM:-$(command -v helm || echo "$(tests/cluster/build-helm.sh | tail -1)/helm")}
oras_version=v1.3.6
oras=${PULLCHECK_ORAS:-$(command -v oras || echo "$cache/oras-$oras_version/oras")}
if [ ! -x "$oras" ]; then
  command -v go >/dev/null || die "oras is missing, and Go to build it (go install oras.land/oras/cmd/oras@$oras_version)"
  GOBIN=$(dirname "$oras") go install "oras.land/oras/cmd/oras@$oras_version"
fi
store=(--storage-driver vfs)
plain=() tls=() oras_plain=()
if [ "${PULLCHECK_RELEASE_PLAIN_HTTP:-}" = 1 ]; then
  plain=(--plain-http) tls=(--tls-verify=false) oras_plain=(--plain-http)
fi

out=${PULLCHECK_RELEASE_DIR:-dist/release}
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
commit=$(git rev-parse HEAD)
source_uri=$(git remote get-url origin 2>/dev/null || echo "${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-pullcheck/pullcheck}")
case $source_uri in /* | file:*) source_uri=${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-pullcheck/pullcheck} ;; esac
clean=true
[ -z "$(git status --porcelain --untracked-files=no)" ] || clean=false

# --- the images: one OCI index per image, of one image per platform
# publish NAME BINARY: builds REGISTRY/NAME:VERSION from dist/<arch>/BINARY and pushes it;
# records the index's digest in $tmp/NAME.digest.
publish() {
  local name=$1 binary=$2 list=localhost/pullcheck-release/$1:$version arch log=$tmp/buildah.log
  buildah "${store[@]}" manifest rm "$list" >/dev/null 2>&1 || true
  buildah "${store[@]}" manifest create "$list" >/dev/null
  for arch in $arches; do
    buildah "${store[@]}" bud --isolation chroot --target prebuilt --format oci \
      --build-arg "TARGETARCH=$arch" --build-arg "BINARY=$binary" --platform "linux/$arch" \
      --label "org.opencontainers.image.version=$version" \
      --label "org.opencontainers.image.revision=$commit" \
      --label "org.opencontainers.image.source=$source_uri" \
      -t "$list-$arch" . >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    buildah "${store[@]}" manifest add "$list" "containers-storage:$list-$arch" >/dev/null
  done
  buildah "${store[@]}" manifest push "${tls[@]}" --all --format oci --digestfile "$tmp/$name.digest" \
    "$list" "docker://$registry/$name:$version" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  echo "pushed $registry/$name:$version@$(cat "$tmp/$name.digest")"
}
publish pullcheck pullcheck
publish pullcheck-cluster pullcheck-webhook

# --- the binaries the GitHub release carries
for arch in $arches; do
  cp "dist/$arch/pullcheck" "$out/pullcheck-linux-$arch"
  cp "dist/$arch/pullcheck-webhook" "$out/pullcheck-cluster-linux-$arch"
done

# --- the chart: version, appVersion and the default images from VERSION, in the package only
cp -r charts/pullcheck "$tmp/pullcheck"
python3 - "$tmp/pullcheck/values.yaml" "$registry" "$version" <<'PY'
import re, sys
path, registry, version = sys.argv[1:]
text = open(path).read()
# The top-level `image.repository` and `inject.image` (their keys as values.yaml writes them).
text, n = re.subn(r"(?m)^(image:\n(?:  #.*\n)*  repository: ).*$", rf"\g<1>{registry}/pullcheck-cluster", text, count=1)
text, m = re.subn(r"(?m)^(inject:\n(?:  #.*\n)*  image: ).*$", rf'\g<1>"{registry}/pullcheck:{version}"', text, count=1)
if n != 1 or m != 1:
    sys.exit(f"{path}: no image.repository or inject.image to set ({n}, {m})")
open(path, "w").write(text)
PY
"$helm" package --version "$version" --app-version "$version" -d "$out" "$tmp/pullcheck" >/dev/null
"$helm" push "${plain[@]}" "$out/pullcheck-$version.tgz" "oci://$registry/charts" >"$tmp/helm.log" 2>&1 ||
  { cat "$tmp/helm.log" >&2; exit 1; }
chart_digest=$(awk '/^Digest:/ {print $2}' "$tmp/helm.log")
echo "pushed oci://$registry/charts/pullcheck:$version@$chart_digest"

# --- SBOMs and provenance
# sbom NAME FEATURES TARGET: the SPDX document of the packages NAME's binary is built from.
sbom() {
  cargo metadata --format-version 1 --locked --filter-platform "$3" ${2:+--features "$2"} >"$tmp/metadata.json"
  python3 - "$tmp/metadata.json" Cargo.lock "$1" "$version" "$commit" "$source_uri" <<'PY' >"$out/$1.spdx.json"
import json, re, sys, tomllib, uuid, datetime
meta, lock, name, version, commit, source = sys.argv[1:]
meta = json.load(open(meta))
sums = {(p["name"], p["version"]): p.get("checksum") for p in tomllib.load(open(lock, "rb"))["package"]}
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
root = meta["resolve"]["root"]
def spdx_id(p):
    return "SPDXRef-Package-" + re.sub(r"[^A-Za-z0-9.-]", "-", f"{p['name']}-{p['version']}")
# What the binary is built from: the root's normal and build dependencies, transitively (a
# dependency's own dev-dependencies are never in the resolve; the root's are left out here).
def kinds(dep):
    return {k["kind"] for k in dep["dep_kinds"]}
seen, todo, edges = {root}, [root], []
while todo:
    at = todo.pop()
    for dep in nodes[at]["deps"]:
        if at == root and kinds(dep) <= {"dev"}:
            continue
        edges.append((at, dep["pkg"]))
        if dep["pkg"] not in seen:
            seen.add(dep["pkg"])
            todo.append(dep["pkg"])
def package(pid):
    p = packages[pid]
    license = (p.get("license") or "NOASSERTION").replace("/", " OR ")
    entry = {
        "name": p["name"], "SPDXID": spdx_id(p), "versionInfo": p["version"],
        "downloadLocation": f"https://crates.io/api/v1/crates/{p['name']}/{p['version']}/download"
            if (p.get("source") or "").startswith("registry+") else "NOASSERTION",
        "licenseConcluded": "NOASSERTION", "licenseDeclared": license, "copyrightText": "NOASSERTION",
        "filesAnalyzed": False,
        "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                          "referenceLocator": f"pkg:cargo/{p['name']}@{p['version']}"}],
    }
    if pid == root:
        entry["downloadLocation"] = f"git+{source}@{commit}"
    checksum = sums.get((p["name"], p["version"]))
    if checksum:
        entry["checksums"] = [{"algorithm": "SHA256", "checksumValue": checksum}]
    return entry
doc = {
    "spdxVersion": "SPDX-2.3", "dataLicense": "CC0-1.0", "SPDXID": "SPDXRef-DOCUMENT",
    "name": f"{name}-{version}",
    "documentNamespace": f"https://github.com/pullcheck/pullcheck/spdx/{name}-{version}-{uuid.uuid4()}",
    "creationInfo": {"created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "creators": ["Tool: scripts/release.sh (cargo metadata)"]},
    "packages": [package(pid) for pid in sorted(seen)],
    "relationships": [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                       "relatedSpdxElement": spdx_id(packages[root])}]
        + [{"spdxElementId": spdx_id(packages[a]), "relationshipType": "DEPENDS_ON",
            "relatedSpdxElement": spdx_id(packages[b])} for a, b in sorted(set(edges))],
}
json.dump(doc, sys.stdout, indent=1)
PY
}
sbom pullcheck "" "$(rust_target "$host")"
sbom pullcheck-cluster webhook,watch "$(rust_target "$host")"

(cd "$out" && sha256sum pullcheck-linux-* pullcheck-cluster-linux-* "pullcheck-$version.tgz" >SHA256SUMS)
python3 - "$out" "$registry" "$version" "$commit" "$source_uri" "$clean" "$started" "$chart_digest" \
  "$(cat "$tmp/pullcheck.digest")" "$(cat "$tmp/pullcheck-cluster.digest")" "$arches" "$(rustc -V)" <<'PY'
import json, os, sys, datetime
out, registry, version, commit, source, clean, started, chart, init, cluster, arches, rustc = sys.argv[1:]
subjects = [
    {"name": f"{registry}/pullcheck", "digest": {"sha256": init.split(":", 1)[1]}},
    {"name": f"{registry}/pullcheck-cluster", "digest": {"sha256": cluster.split(":", 1)[1]}},
    {"name": f"{registry}/charts/pullcheck", "digest": {"sha256": chart.split(":", 1)[1]}},
]
for line in open(f"{out}/SHA256SUMS"):
    digest, name = line.split()
    subjects.append({"name": name, "digest": {"sha256": digest}})
run = os.environ.get("GITHUB_RUN_ID")
server, repo = os.environ.get("GITHUB_SERVER_URL", ""), os.environ.get("GITHUB_REPOSITORY", "")
statement = {
    "_type": "https://in-toto.io/Statement/v1",
    "subject": subjects,
    "predicateType": "https://slsa.dev/provenance/v1",
    "predicate": {
        "buildDefinition": {
            "buildType": "https://github.com/pullcheck/pullcheck/blob/main/scripts/release.sh",
            "externalParameters": {
                "command": f"scripts/release.sh {registry} {version}",
                "source": {"uri": f"git+{source}", "digest": {"gitCommit": commit}},
                "platforms": [f"linux/{a}" for a in arches.split()],
            },
            "internalParameters": {"worktreeClean": clean == "true", "rustc": rustc},
            "resolvedDependencies": [{"uri": f"git+{source}", "digest": {"gitCommit": commit}}],
        },
        "runDetails": {
            "builder": {"id": f"{server}/{repo}/.github/workflows/release.yml" if run else "scripts/release.sh on a local machine"},
            "metadata": {
                "invocationId": f"{server}/{repo}/actions/runs/{run}" if run else f"local-{started}",
                "startedOn": started,
                "finishedOn": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        },
    },
}
json.dump(statement, open(f"{out}/provenance.intoto.json", "w"), indent=1)
json.dump({"version": version, "commit": commit,
           "images": {f"{registry}/pullcheck:{version}": init, f"{registry}/pullcheck-cluster:{version}": cluster},
           "chart": {f"oci://{registry}/charts/pullcheck:{version}": chart}},
          open(f"{out}/release.json", "w"), indent=1)
PY

# --- the SBOM and the provenance attached to each image index, as OCI referrers (a registry
# without the referrers API gets the tag fallback, `sha256-<digest>`, that oras keeps)
for name in pullcheck pullcheck-cluster; do
  ref=$registry/$name@$(cat "$tmp/$name.digest")
  (cd "$out" &&
    "$oras" attach "${oras_plain[@]}" --artifact-type application/spdx+json "$ref" \
      "$name.spdx.json:application/spdx+json" >/dev/null &&
    "$oras" attach "${oras_plain[@]}" --artifact-type application/vnd.in-toto+json "$ref" \
      "provenance.intoto.json:application/vnd.in-toto+json" >/dev/null)
  echo "attached $name.spdx.json and provenance.intoto.json to $ref"
done
echo "release files in $out: $(cd "$out" && ls | tr '\n' ' ')"
