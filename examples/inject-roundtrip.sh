#!/usr/bin/env bash
# Add the pullcheck init container to a workload that already runs in the cluster:
#
#   kubectl get KIND/NAME -o yaml | pullcheck inject --image IMAGE | kubectl apply -f -
#
# Usage: examples/inject-roundtrip.sh IMAGE KIND/NAME [-- CHECK_ARGS...]
#   IMAGE      where pullcheck's image was pushed, e.g. ghcr.io/example/pullcheck:0.1.0: a
#              registry every node can pull from (a pod whose pullcheck image cannot be pulled
#              is stuck like any other)
#   KIND/NAME  deployment/web, statefulset/db, daemonset/agent, cronjob/nightly-report, or a
#              custom resource whose pod templates may change (pytorchjob/…, rayjob/…)
#   CHECK_ARGS flags for `pullcheck check` in the init container, e.g. --timeout 30s
# Environment: KUBECTL (default kubectl), PULLCHECK (default pullcheck), PULLCHECK_SECRETS
# (comma-separated pull secrets to mount besides the pods' own imagePullSecrets, e.g. those of
# their service account).
#
# Injecting twice changes nothing, so this can run in every deploy. Warnings (restartPolicy not
# Never, default image) go to stderr.
#
# Not for Jobs: a Job's spec.template cannot change once the Job exists, so the API server
# rejects the apply ("field is immutable"). Inject on the way in instead:
#   pullcheck inject -f job.yaml --image "$IMAGE" | kubectl apply -f -
#   kubectl create job once --from=cronjob/nightly-report --dry-run=client -o yaml \
#     | pullcheck inject --image "$IMAGE" | kubectl apply -f -
#   helm template rel ./chart | pullcheck inject --image "$IMAGE" | kubectl apply -f -
#   kubectl kustomize overlays/prod | pullcheck inject --image "$IMAGE" | kubectl apply -f -
set -euo pipefail
IMAGE=${1:?usage: $0 IMAGE KIND/NAME [-- CHECK_ARGS...]}
TARGET=${2:?usage: $0 IMAGE KIND/NAME [-- CHECK_ARGS...]}
shift 2
[ "${1:-}" != "--" ] || shift
KUBECTL=${KUBECTL:-kubectl}
PULLCHECK=${PULLCHECK:-pullcheck}

case "${TARGET%%/*}" in
  job | jobs | job.batch | jobs.batch)
    echo "$0: a Job's pod template is immutable: inject into its manifest before creating it" >&2
    exit 2
    ;;
esac

secrets=()
IFS=, read -r -a names <<<"${PULLCHECK_SECRETS:-}"
for name in "${names[@]}"; do
  [ -n "$name" ] && secrets+=(--secret "$name")
done

"$KUBECTL" get "$TARGET" -o yaml \
  | "$PULLCHECK" inject --image "$IMAGE" "${secrets[@]}" -- "$@" \
  | "$KUBECTL" apply -f -
