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
# The pod's exit code is pullcheck's: 0 ok, 2 usage error, 3 not found, 4 no platform variant,
# 5 refused, 6 unreachable, 7 pulled but a container will not start, 8 cannot be checked from
# this pod (plain HTTP asked over TLS, an untrusted certificate, a name that does not resolve).
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
