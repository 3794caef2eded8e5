#!/usr/bin/env bash
# Check, from inside the cluster, whether an image can be pulled: one throw-away pod running
# pullcheck, its report on the terminal, gone when it exits. It sees the network, DNS, proxies
# and node platform that the real pods see.
#
# Usage: [PULLCHECK_SECRET=regcred] examples/debug-pod.sh IMAGE [REFERENCE...]
#   IMAGE: where pullcheck's image was pushed, e.g. ghcr.io/example/pullcheck:0.1.0
#   REFERENCE: the images to check (default: nginx211, a repository that does not exist; Docker
#              Hub answers alike for missing and private repositories, so: exit 5)
#   PULLCHECK_SECRET: a pull secret of the namespace to check with (default: none, anonymous)
#
# The pod's exit code is pullcheck's (a test keeps this list equal to the code's):
#   0  every image can be pulled
#   2  usage or configuration error; nothing was checked
#   3  an image does not exist, or its reference is invalid
#   4  an image exists but has no variant for the node's platform
#   5  access refused: no credentials, credentials rejected, or no permission
#   6  a registry could not be reached, or kept failing (transient)
#   7  an image can be pulled, but a container using it will not start
#   8  a registry cannot be checked from this pod (plain HTTP asked over TLS, an untrusted
#      certificate, a name that does not resolve)
set -euo pipefail
IMAGE=${1:?usage: $0 IMAGE [REFERENCE...]}
shift
[ $# -gt 0 ] || set -- nginx211

if [ -z "${PULLCHECK_SECRET:-}" ]; then
  # Anonymous: public images, or what a registry says without credentials.
  exec kubectl run --rm -it pullcheck --image="$IMAGE" --restart=Never -- check "$@"
fi

# With a pull secret, mounted where pullcheck looks for them. --overrides replaces the whole
# container list, so it repeats what `kubectl run` would set (stdin and tty for -it).
SECRET=$PULLCHECK_SECRET
exec kubectl run --rm -it pullcheck --image="$IMAGE" --restart=Never --overrides="$(cat <<JSON
{
  "apiVersion": "v1",
  "spec": {
    "containers": [{
      "name": "pullcheck",
      "image": "$IMAGE",
      "args": ["check", "-o", "json"$(printf ', "%s"' "$@")],
      "stdin": true,
      "tty": true,
      "volumeMounts": [{"name": "secret", "mountPath": "/var/run/pullcheck/secrets/$SECRET", "readOnly": true}]
    }],
    "volumes": [{"name": "secret", "secret": {"secretName": "$SECRET", "optional": true}}]
  }
}
JSON
)"
