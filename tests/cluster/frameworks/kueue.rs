//! Kueue v0.17.0 with pullcheck, on the real cluster: Kueue's own CRDs, webhooks and controller
//! manager (`cmd/kueue`), built from its Go module (`tests/cluster/kueue`, by
//! `tests/cluster/build-kueue.sh`) and installed from the kustomize tree the module ships
//! (`config/default`), with `waitForPodsReady` on in its Configuration; then, for a `batch/v1`
//! Job and for a plain pod (Kueue's `pod` integration), each labelled
//! `kueue.x-k8s.io/queue-name` and admitted by a LocalQueue → ClusterQueue → ResourceFlavor with
//! quota to spare:
//!
//! 1. an image tag that is missing ends the Workload `Finished` (reason `Failed`), in a namespace the chart's default install (`mode: watch`) watches (the
//!    pod failed by the kubelet, `DeadlineExceeded`, with the watcher's `ConfigIssue`; the Job by
//!    the `FailJob` rule the watch-mode webhook added) and in one of `mode: init` (failed by
//!    pullcheck's init container; the Job by inject's `FailJob` rule on its exit codes); one pod,
//!    kept, never made again, never evicted;
//! 2. a good Job and a good pod `Finished` (`Succeeded`) in a watched namespace, nothing added to
//!    their pods, timed against the same without pullcheck;
//! 3. the same missing tag in a namespace nobody watches: both still admitted and waiting, the
//!    same pods `Pending`, after 120 s;
//! 4. and what Kueue does on its own after that (`waitForPodsReady`): the Job evicted at the
//!    timeout, its pod deleted, re-admitted after the backoff with a new pod, and deactivated once
//!    `backoffLimitCount` is spent (suspended, never `Failed`); the plain pod deleted at the first
//!    timeout, its Workload with it.
//!
//! # What Kueue does, read in its source (module `sigs.k8s.io/kueue@v0.17.0`)
//!
//! ## Building it (`tests/cluster/build-kueue.sh`, measured 2026-12-06 on this machine)
//! - `cmd/kueue` builds from the module as it is (Kueue's go.mod has no `replace`). Cold (empty
//!   build cache for Kueue's dependencies, `nice 10`, beside three other frameworks' Go builds and
//!   a cargo build, load average up to 20 on 2 cores): 13 min 22 s wall, 5 min 55 s user,
//!   1 min 12 s system CPU; a rebuild after a key change 8 s; cached 0.02 s. `go mod tidy`: 18 s.
//! - `manager`: 87,228,578 B (83.2 MiB, static, stripped); the cache folder 86 MiB. It logs
//!   `gitVersion v0.17.0`, `buildDate 2026-03-31T10:20:15Z` (the tag's time, from the proxy);
//!   `gitCommit` stays `abcd01234` (`pkg/version/version.go`'s fallback): this proxy's `.info`
//!   carries no `Origin`, so the script finds no commit to set. Its `--help` lists Ginkgo's test
//!   flags (`--ginkgo.seed`, …): the manager links a test package.
//!
//! ## The image, the install
//! - Upstream image (`Dockerfile`): `gcr.io/distroless/static:nonroot`, the binary at
//!   **`/manager`**, `USER 65532:65532`, `ENTRYPOINT ["/manager"]`; the Deployment
//!   (`config/components/manager/manager.yaml`) runs `command: [/manager]`, `runAsNonRoot`,
//!   `readOnlyRootFilesystem`. Ours: `/manager` and `/tmp` (1777), `--user 65532:65532`,
//!   distroless's `PATH`; no CA certificates (it speaks TLS only to the API server, with the
//!   service account's CA) and no `/etc/passwd` (the user is numeric).
//! - `config/default/kustomization.yaml`: namespace `kueue-system`, prefix `kueue-`, the CRDs,
//!   RBAC, the manager with its ConfigMap `kueue-manager-config` (key
//!   `controller_manager_config.yaml`, mounted at `/controller_manager_config.yaml` and passed as
//!   `--config`: `config/default/manager_config_patch.yaml`), 43 webhooks
//!   (`config/components/webhook/manifests.yaml`, all `failurePolicy: Fail`), the Secret
//!   `kueue-webhook-server-cert` (`config/components/internalcert/`), the visibility API server's
//!   two APIServices. The image is named `us-central1-docker.pkg.dev/k8s-staging-images/kueue/
//!   kueue` (`config/components/manager/kustomization.yaml`).
//! - The webhook's certificate: internal cert management is on by default
//!   (`apis/config/v1beta2/defaults.go:86-91`); the manager makes a CA and a serving certificate
//!   for `<webhookServiceName>.<its own namespace>.svc` (`pkg/util/cert/cert.go:131`), writes
//!   them into the Secret and injects the CA into both webhook configurations and five CRDs'
//!   conversion webhooks (cert.go:145-166) before it starts its controllers (cert.go:45-98,
//!   logged "Certificates ready and CA bundles injected"): kept as it is, and the namespace is
//!   its own (`cfg.Namespace`, defaults.go:69), so `pc-kueue` needs nothing more.
//! - What we change, and why (`kueue()`):
//!   - the namespace, `pc-kueue`; the RoleBinding that `config/default` moves to `kube-system`
//!     (`role_binding_visibility_transformer.yaml`, applied again after our namespace) keeps
//!     `kueue-system` as its subject's namespace: patched to ours;
//!   - the image, ours;
//!   - the Configuration: the shipped `controller_manager_config.yaml`, read from the cache,
//!     with [`CONFIGURATION`] appended (`waitForPodsReady`, `managedJobsNamespaceSelector`; the
//!     shipped file has both only as comments);
//!   - every webhook's `namespaceSelector` → the label [`MANAGED`]: the cluster is shared, and
//!     as shipped Kueue's pod, Job, RayJob, JobSet, … webhooks (`failurePolicy: Fail`) would
//!     stand between every namespace but `kube-system`/`kueue-system` and the API server (the
//!     pod webhooks' selectors are the shipped kustomization's own patch,
//!     `config/components/webhook/kustomization.yaml`); with our namespace not excluded, the
//!     manager's own pod would even need its own webhook to be created;
//!   - the two visibility APIServices left out: this test cluster's API server has no
//!     front-proxy (`requestheader-*`) configuration, so the aggregator's discovery calls reach
//!     Kueue's visibility server unauthenticated and get 403 (`FailedDiscoveryCheck`); an
//!     unavailable APIService fails discovery cluster-wide, and the namespace controller then
//!     holds every namespace deletion (`NamespaceDeletionDiscoveryFailure`, seen on another
//!     framework's namespace while they were installed). They serve only `kubectl kueue list`'s
//!     pending-workload positions.
//!
//! ## waitForPodsReady, as configured here
//! - On when the `waitForPodsReady` section is present (`pkg/util/waitforpodsready/
//!   waitforpodsready.go:21`, `cfg != nil`; v1beta2 has no `enable`), `timeout` required
//!   (`apis/config/v1beta2/configuration_types.go:272-297`); defaults: `blockAdmission: false`,
//!   `recoveryTimeout` = `timeout`, `requeuingStrategy.timestamp: Eviction`,
//!   `backoffBaseSeconds: 60`, `backoffMaxSeconds: 3600` (defaults.go:97-104),
//!   `backoffLimitCount` null = requeue for ever (configuration_types.go:365-379).
//! - The Job's integration writes the Workload's `PodsReady` condition on each reconcile:
//!   `False`/`WaitForStart` "Not all pods are ready or succeeded" until `ready + succeeded >=
//!   parallelism` (`pkg/controller/jobframework/reconciler.go:545-577`,
//!   `generatePodsReadyCondition` :1611-1670; `Job.PodsReady`,
//!   `pkg/controller/jobs/job/job_controller.go:322-329`). A pod stuck on its image is never
//!   ready.
//! - The workload controller evicts an admitted Workload whose `PodsReady` is not `True`
//!   `timeout` after its `Admitted` condition's last transition (`admittedNotReadyWorkload`,
//!   `pkg/controller/core/workload_controller.go:1255-1280`; `reconcileNotReadyTimeout`
//!   :951-982): `Evicted` reason `PodsReadyTimeout`, "Exceeded the PodsReady timeout
//!   <ns>/<workload>", and `requeueState` `count + 1`, `requeueAt` = now + `base·2^(count-1)`
//!   capped at `backoffMaxSeconds` (`UpdateRequeueState`, `pkg/workload/workload.go:726-741`).
//!   Once `count + 1` would pass `backoffLimitCount` it sets `DeactivationTarget` instead
//!   (`triggerDeactivation` :987-1000), then `spec.active: false` (:368-372) and `Evicted`
//!   reason `DeactivatedDueToRequeuingLimitExceeded` "The workload is deactivated due to
//!   exceeding the maximum number of re-queuing retries" (:437-470; `ReasonWithCause`,
//!   workload.go:1791-1793).
//! - An `Evicted` Workload stops its job (reconciler.go:579-603): a Job is suspended
//!   (`Job.Stop`, job_controller.go:165-200), and Kubernetes' Job controller deletes its active
//!   pods; after the backoff the Workload is queued again (workload_controller.go:375-403),
//!   admitted, the Job resumed, and the Job controller **makes a new pod**, which sticks again.
//!   A deactivated Workload's Job stays suspended: not `Failed`, the Workload not `Finished`
//!   (only `objectRetentionPolicies.workloads.afterDeactivatedByKueue` deletes the Job,
//!   reconciler.go:699-727).
//! - A plain pod cannot be suspended: `Pod.Stop` gives it the condition `TerminationTarget`
//!   (reason `WorkloadEvictedDueToPodsReadyTimeout`, reconciler.go:1305-1310) and **deletes it**
//!   (`pkg/controller/jobs/pod/pod_controller.go:474-523`); the pod gone, its Workload's
//!   finalizer is dropped (reconciler.go:304-327) and the garbage collector removes the Workload
//!   (owned by the pod). Nothing makes the pod again; nothing of it is left to read but Events.
//! - A `Finished` Workload is never timed out (workload_controller.go:218-221): pullcheck's
//!   failure, seconds after the pod's creation, ends it long before any `timeout` worth setting
//!   (Kueue's own example is 5m, `controller_manager_config.yaml`), so no eviction, no second
//!   pod. A `timeout` shorter than pullcheck's few seconds would evict first (the pod deleted).
//!
//! ## A failed Job, a failed pod
//! - `Job.Finished` is the Job's `Complete` or `Failed` condition, with its message
//!   (job_controller.go:312-320); the reconciler then sets the Workload's `Finished` condition,
//!   reason `Failed` (or `Succeeded`) and **the Job condition's message** (reconciler.go:484-503,
//!   `workload.Finish` workload.go:1629-1640, `SetFinishedCondition` :963-973). The Job's
//!   `Failed` comes first (`FailureTarget` and `Failed` together, when the pod is already
//!   failed), the Workload's `Finished` up to a second later.
//! - A plain pod: `Pod.Finished` is its phase `Succeeded`/`Failed`, with the pod's
//!   `status.message` (pod_controller.go:342-356): the kubelet's deadline sentence in watch
//!   mode; **empty** in init mode (a pod failed by an init container has no message).
//! - Pod integration: the pod webhook acts only in namespaces that match
//!   `managedJobsNamespaceSelector` (`pkg/controller/jobs/pod/pod_webhook.go:112-120`; default
//!   "not `kube-system` nor Kueue's own", defaults.go:111-119; for pods the selector is a hard
//!   limit, configuration_types.go:52-67) and to pods with a queue name, or any pod when the
//!   namespace has a LocalQueue named `default` (:150-157): it labels the pod
//!   `kueue.x-k8s.io/managed=true`, adds the finalizer `kueue.x-k8s.io/managed` and the
//!   scheduling gate `kueue.x-k8s.io/admission` (:158-190), lifted at admission. Pods owned by a
//!   job Kueue manages (the Job's own) are left alone (:145-148). So for the pod integration:
//!   `pod` in `integrations.frameworks` (shipped), the namespace selected by
//!   `managedJobsNamespaceSelector` (here the label [`MANAGED`]) and by the pod webhooks'
//!   `namespaceSelector`, and no LocalQueue named `default` unless every pod should queue.
//!
//! ## Where a Kueue user reads the reason
//! - `kubectl get workloads`: QUEUE, RESERVED IN, ADMITTED, FINISHED (`True`), AGE (the CRD's
//!   printer columns, `apis/kueue/v1beta2/workload_types.go:1101-1105`): no reason.
//! - `kubectl describe workload <job-…|pod-…>`: the `Finished` condition, reason `Failed`, and
//!   its message: the Job's (watch: "Pod <ns>/<pod> has condition ConfigIssue matching FailJob
//!   rule at index 0"; init: "Container pullcheck for pod <ns>/<pod> failed with exit code 3
//!   matching FailJob rule at index 0"), or the pod's (watch: "Pod was active on the node longer
//!   than the specified deadline"; init: nothing). pullcheck's own words are on the pod: the
//!   `ConfigIssue` condition and the Event (watch), the init container's termination message
//!   and `kubectl logs <pod> -c pullcheck` (init). Kueue's pods are kept (its finalizer is
//!   removed once the Workload is finished).
//! - `kubectl kueue list workloads` (kueuectl): STATUS `FINISHED`, EXEC TIME
//!   (`cmd/kueuectl/app/list/list_workload_printer.go:72-80, 127-165`; `workload.Status`,
//!   workload.go:95-106): no reason either.
//!
//! ## What keeps Kueue from retrying for ever
//! - With pullcheck nothing at Kueue's level retries: the failed Job or pod finishes its
//!   Workload. The Job's own retries are Kubernetes' (`backoffLimit`, `podFailurePolicy`): the
//!   watch-mode webhook adds `FailJob` on `ConfigIssue`, the init-mode one `FailJob` on
//!   pullcheck's exit codes.
//! - Without it, `waitForPodsReady` evicts, suspends and re-admits for ever unless
//!   `requeuingStrategy.backoffLimitCount` is set (then the Workload is deactivated, the Job left
//!   suspended); `objectRetentionPolicies.workloads.afterDeactivatedByKueue` then deletes such
//!   Jobs. Note `objectRetentionPolicies.workloads.afterFinished` deletes finished Workloads,
//!   and with them the `Finished` condition that carries the Job's message.

use serde_json::Value;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{Controller, DEADLINE, DISTROLESS_PATH, Mode, figure, kustomized, manager_image};
use crate::harness::{
    Namespace, built_by, cluster, condition, minutes, seconds_between, status_of, wait_for,
};
use crate::watch::PodWatch;

/// The Kueue version `tests/cluster/kueue/go.mod` requires.
const VERSION: &str = "v0.17.0";
/// The manager's namespace.
const NAMESPACE: &str = "pc-kueue";
/// The namespace label Kueue's webhooks and `managedJobsNamespaceSelector` select (see the
/// module doc for why every webhook's selector is changed to it).
const MANAGED: &str = "pc-kueue/managed";
/// The ClusterQueue and its ResourceFlavor (cluster-scoped, shared by the tests).
const CLUSTER_QUEUE: &str = "pc-kueue";
const FLAVOR: &str = "pc-kueue-flavor";
/// Each test namespace's LocalQueue (not `default`: that name queues every pod of the
/// namespace, pod_webhook.go:150-157).
const QUEUE: &str = "queue";
/// `waitForPodsReady.timeout` of [`CONFIGURATION`], in seconds.
const TIMEOUT: u64 = 150;
/// The manager's Deployment.
const CONTROLLER: Controller = Controller {
    namespace: NAMESPACE,
    deployments: &["deployment/kueue-controller-manager"],
};

/// Appended to the shipped `controller_manager_config.yaml` (the Configuration, kind
/// `config.kueue.x-k8s.io/v1beta2`): the pod integration's namespaces, and `waitForPodsReady`
/// with a timeout longer than the 120-s control, a 10-s backoff base (60 by default) and one
/// requeue (unbounded by default), so that Kueue's own handling of a pod that never gets ready
/// is seen to its end within minutes.
const CONFIGURATION: &str = r#"
# The cluster tests' additions (tests/cluster/frameworks/kueue.rs).
managedJobsNamespaceSelector:
  matchLabels:
    pc-kueue/managed: "true"
waitForPodsReady:
  timeout: 150s
  requeuingStrategy:
    backoffBaseSeconds: 10
    backoffLimitCount: 1
"#;

/// Kueue installed: the manager up, leading, its webhooks serving, the ClusterQueue active.
pub struct Kueue {
    /// The manager's image.
    pub image: String,
    _namespace: Namespace,
}

/// `text` indented by `n` spaces (empty lines left empty), for a YAML block scalar.
fn indented(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Kueue's CRDs, webhooks and manager, installed once per test binary as the project ships them
/// (`config/default`), with the changes the module doc lists, then the ResourceFlavor and the
/// ClusterQueue the tests share.
pub fn kueue() -> &'static Kueue {
    static KUEUE: OnceLock<Kueue> = OnceLock::new();
    KUEUE.get_or_init(|| {
        let c = cluster();
        let started = Instant::now();
        let cache = built_by("build-kueue.sh", "manager")
            .parent()
            .expect("the cache folder")
            .to_path_buf();
        // One layer, laid out as the Dockerfile lays it out (`/manager`, user 65532).
        let image = manager_image(&cache, "kueue", VERSION, "kueue", &["--env", DISTROLESS_PATH]);
        let namespace = c.namespace(NAMESPACE);
        let (repository, tag) = image.rsplit_once(':').expect("a tag");
        let shipped = std::fs::read_to_string(
            cache.join("manifests/config/components/manager/controller_manager_config.yaml"),
        )
        .expect("read the shipped controller_manager_config.yaml");
        let configuration = indented(&format!("{}\n{CONFIGURATION}", shipped.trim_end()), 8);
        let kustomization = format!(
            r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {NAMESPACE}
resources:
- manifests/config/default
# config/default's own: the visibility server's RoleBinding back to kube-system after our namespace.
transformers:
- manifests/config/default/role_binding_visibility_transformer.yaml
images:
- name: us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue
  newName: {repository}
  newTag: {tag}
patches:
- target: {{group: rbac.authorization.k8s.io, version: v1, kind: RoleBinding, name: kueue-visibility-server-auth-reader}}
  patch: |
    - op: replace
      path: /subjects/0/namespace
      value: {NAMESPACE}
- target: {{version: v1, kind: ConfigMap, name: kueue-manager-config}}
  patch: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: kueue-manager-config
    data:
      controller_manager_config.yaml: |
{configuration}
- patch: |
    apiVersion: admissionregistration.k8s.io/v1
    kind: MutatingWebhookConfiguration
    metadata:
      name: kueue-mutating-webhook-configuration
    webhooks:
    - name: mpod.kb.io
      namespaceSelector:
        $patch: replace
        matchLabels:
          {MANAGED}: "true"
- patch: |
    $patch: delete
    apiVersion: apiregistration.k8s.io/v1
    kind: APIService
    metadata:
      name: v1beta1.visibility.kueue.x-k8s.io
- patch: |
    $patch: delete
    apiVersion: apiregistration.k8s.io/v1
    kind: APIService
    metadata:
      name: v1beta2.visibility.kueue.x-k8s.io
# mpod's selector, as patched above, copied to every webhook of both configurations.
replacements:
- source:
    kind: MutatingWebhookConfiguration
    name: kueue-mutating-webhook-configuration
    fieldPath: webhooks.[name=mpod.kb.io].namespaceSelector
  targets:
  - select: {{kind: MutatingWebhookConfiguration, name: kueue-mutating-webhook-configuration}}
    fieldPaths: [webhooks.*.namespaceSelector]
    options: {{create: true}}
  - select: {{kind: ValidatingWebhookConfiguration, name: kueue-validating-webhook-configuration}}
    fieldPaths: [webhooks.*.namespaceSelector]
    options: {{create: true}}
"#
        );
        let rendered = kustomized(&cache, &kustomization);
        assert!(
            !rendered.contains("kind: APIService"),
            "the visibility APIServices are left out"
        );
        let out = c.kubectl_output(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            Some(&rendered),
        );
        assert!(
            out.status.success(),
            "apply Kueue's manifests: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Our Configuration is what the manager will read.
        let config = c
            .get(NAMESPACE, "configmap/kueue-manager-config")
            .expect("the manager's ConfigMap");
        let text = config["data"]["controller_manager_config.yaml"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.trim_end().ends_with(CONFIGURATION.trim_end()),
            "the Configuration ends with ours: {text}"
        );
        // Every webhook selects our label only.
        for kind in [
            "mutatingwebhookconfiguration/kueue-mutating-webhook-configuration",
            "validatingwebhookconfiguration/kueue-validating-webhook-configuration",
        ] {
            let hooks = c.get("", kind).expect("Kueue's webhook configuration");
            let all = hooks["webhooks"].as_array().expect("webhooks");
            assert!(
                all.iter().all(|w| w["namespaceSelector"]["matchLabels"][MANAGED] == "true"),
                "{kind}: {hooks:#}"
            );
        }
        c.kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/workloads.kueue.x-k8s.io",
            "crd/clusterqueues.kueue.x-k8s.io",
            "crd/localqueues.kueue.x-k8s.io",
            "crd/resourceflavors.kueue.x-k8s.io",
            "--timeout=60s",
        ]);
        // It reconciles only once it leads (the Lease is `leaderElection.resourceName`).
        let leader = CONTROLLER.started(&["lease/c1f6bfd2.kueue.x-k8s.io"]).join(", ");
        // The ClusterQueue passes Kueue's webhook: retried until the webhook serves.
        let queues = format!(
            r#"apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {FLAVOR}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {CLUSTER_QUEUE}
spec:
  namespaceSelector:
    matchLabels:
      {MANAGED}: "true"
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: {FLAVOR}
      resources:
      - name: cpu
        nominalQuota: "4"
      - name: memory
        nominalQuota: 4Gi
"#
        );
        wait_for("the ClusterQueue applied", minutes(2), || {
            let out = c.kubectl_output(&["apply", "--server-side", "-f", "-"], Some(&queues));
            if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            }
        });
        wait_for("the ClusterQueue Active", minutes(1), || {
            let cq = c.get("", &format!("clusterqueue.kueue.x-k8s.io/{CLUSTER_QUEUE}"));
            match cq.as_ref().and_then(|q| condition(q, "Active")) {
                Some(_) => Ok(()),
                None => Err(status_of(&cq)),
            }
        });
        println!(
            "kueue {VERSION}: manager {image} leading ({leader}), in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Kueue {
            image,
            _namespace: namespace,
        }
    })
}

/// A namespace of `mode` whose Jobs and pods Kueue queues: labelled [`MANAGED`], with the
/// LocalQueue [`QUEUE`]; ready once Kueue's pod webhook gates a pod there (a server-side dry
/// run: the manager reads the namespace's labels from its cache).
fn queued(mode: Mode, name: &str) -> Namespace {
    let _ = kueue();
    let c = cluster();
    let ns = mode.namespace(name);
    c.kubectl(&["label", "namespace", name, &format!("{MANAGED}=true")]);
    c.apply(
        name,
        &format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: {QUEUE}\nspec:\n  clusterQueue: {CLUSTER_QUEUE}\n"
        ),
    );
    let probe = pod("probe", &format!("{}/tools:1", mode.registry()));
    wait_for(
        &format!("Kueue's pod webhook to gate pods in {name}"),
        minutes(1),
        || {
            let out = c.kubectl_output(
                &[
                    "create",
                    "--dry-run=server",
                    "-n",
                    name,
                    "-o",
                    "json",
                    "-f",
                    "-",
                ],
                Some(&probe),
            );
            let stored: Value = serde_json::from_slice(&out.stdout)
                .map_err(|_| String::from_utf8_lossy(&out.stderr).into_owned())?;
            let gated = stored["spec"]["schedulingGates"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == "kueue.x-k8s.io/admission"));
            if gated {
                Ok(())
            } else {
                Err(format!("{:#}", stored["spec"]))
            }
        },
    );
    ns
}

/// A Job of one pod running `image` with command `true`, queued (`kueue.x-k8s.io/queue-name`),
/// `restartPolicy: Never`, `backoffLimit` left to its default (6).
fn job(name: &str, image: &str) -> String {
    format!(
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  labels:
    kueue.x-k8s.io/queue-name: {QUEUE}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: {image}
        imagePullPolicy: Always
        command: ["true"]
        resources:
          requests: {{cpu: 10m, memory: 16Mi}}
"#
    )
}

/// A plain pod running `image` with command `true`, queued, `restartPolicy: Never`.
fn pod(name: &str, image: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels:
    kueue.x-k8s.io/queue-name: {QUEUE}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Always
    command: ["true"]
    resources:
      requests: {{cpu: 10m, memory: 16Mi}}
"#
    )
}

/// The Workload Kueue made for the `kind` (`Job` or `Pod`) named `name` (its owner).
fn workload_of(ns: &str, kind: &str, name: &str) -> Option<Value> {
    let out = cluster().kubectl(&["get", "workloads.kueue.x-k8s.io", "-n", ns, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("workload list JSON");
    list["items"].as_array()?.iter().find_map(|w| {
        w["metadata"]["ownerReferences"]
            .as_array()?
            .iter()
            .any(|o| o["kind"] == kind && o["name"] == name)
            .then(|| w.clone())
    })
}

/// The condition of `kind` in an object's `status.conditions`, whatever its status.
fn any_condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// Waits for the Workload of `kind`/`name` to be `Finished` with `reason`.
fn wait_finished(ns: &str, kind: &str, name: &str, reason: &str) -> Value {
    wait_for(
        &format!("the Workload of {kind} {ns}/{name} Finished ({reason})"),
        minutes(3),
        || {
            let wl = workload_of(ns, kind, name);
            match wl.as_ref().and_then(|w| condition(w, "Finished")) {
                Some(f) if f["reason"] == reason => Ok(wl.clone().expect("the Workload")),
                Some(f) => panic!("Workload of {kind} {ns}/{name} finished {f}, not {reason}"),
                None => Err(status_of(&wl)),
            }
        },
    )
}

/// The pods of the Job or pod `name` (`Job`: its pods, by the Job's label; `Pod`: the pod).
fn pods_of(ns: &str, kind: &str, name: &str) -> Vec<Value> {
    let c = cluster();
    match kind {
        "Job" => c.job_pods(ns, name),
        _ => c.get(ns, &format!("pod/{name}")).into_iter().collect(),
    }
}

/// What the missing-tag case leaves, in either mode and for either kind.
struct Missing {
    /// Seconds from the pod's creation to the Workload's `Finished`.
    finished: i64,
    /// For a Job: seconds from the pod's creation to the Job's `Failed` condition.
    job_failed: Option<i64>,
    /// The Workload's `Finished` message.
    message: String,
    /// The one pod, as it ends.
    pod: Value,
}

/// The missing-tag case in `mode` for a `kind` (`Job` or `Pod`) named `name`: the Workload
/// `Finished`/`Failed`, never evicted nor requeued; one pod, kept, failed, never made again.
fn missing(mode: Mode, ns: &str, kind: &str, name: &str) -> Missing {
    let c = cluster();
    let pods = PodWatch::start(ns);
    let image = format!("{}/tools:no-such-tag", mode.registry());
    let manifest = match kind {
        "Job" => job(name, &image),
        _ => pod(name, &image),
    };
    c.apply(ns, &manifest);
    let wl = wait_finished(ns, kind, name, "Failed");
    let finished = condition(&wl, "Finished").expect("Finished").clone();
    // Never evicted nor requeued: pullcheck's failure came first (workload_controller.go:218).
    for never in ["Evicted", "Requeued", "DeactivationTarget"] {
        assert!(
            condition(&wl, never).is_none(),
            "{never}: {:#}",
            wl["status"]
        );
    }
    assert!(wl["status"]["requeueState"].is_null(), "{:#}", wl["status"]);
    assert!(
        condition(&wl, "Admitted").is_some(),
        "admitted: {:#}",
        wl["status"]
    );

    // One pod, kept, never made again: the same single pod from first to last.
    std::thread::sleep(Duration::from_secs(15));
    let prefix = if kind == "Job" {
        format!("{name}-")
    } else {
        name.to_string()
    };
    assert_eq!(
        pods.uids(&prefix).len(),
        1,
        "one pod from first to last: {:?}",
        pods.uids(&prefix)
    );
    let kept = pods_of(ns, kind, name);
    assert_eq!(kept.len(), 1, "one pod kept: {kept:#?}");
    let pod = kept.into_iter().next().expect("the pod");
    assert_eq!(pod["status"]["phase"], "Failed", "{:#}", pod["status"]);
    // Kueue's finalizer is gone once the Workload finished (the pod integration's own).
    assert!(
        !pod["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "kueue.x-k8s.io/managed")),
        "{:#}",
        pod["metadata"]
    );
    let created = pod["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created")
        .to_string();
    let at = |c: &Value| {
        seconds_between(
            &created,
            c["lastTransitionTime"]
                .as_str()
                .expect("lastTransitionTime"),
        )
    };
    let job_failed = (kind == "Job").then(|| {
        let j = c.get(ns, &format!("job/{name}")).expect("the Job");
        let failed = condition(&j, "Failed").expect("the Job's Failed condition");
        assert_eq!(failed["reason"], "PodFailurePolicy", "{failed}");
        // The Workload carries the Job's message (reconciler.go:484-497).
        assert_eq!(
            failed["message"], finished["message"],
            "{failed} / {finished}"
        );
        at(failed)
    });
    let seconds = at(&finished);
    Missing {
        finished: seconds,
        job_failed,
        message: finished["message"].as_str().unwrap_or_default().to_string(),
        pod,
    }
}

/// Watch mode's marks on a pod: failed by the kubelet past the deadline the watcher set, with
/// its condition naming container `main` and the image. Returns the condition's reason.
fn assert_failed_by_watcher(pod: &Value) -> String {
    assert_eq!(
        pod["status"]["reason"], "DeadlineExceeded",
        "{:#}",
        pod["status"]
    );
    assert_eq!(pod["status"]["message"], DEADLINE);
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 1);
    let issue = condition(pod, "ConfigIssue").expect("the watcher's condition, kept");
    let words = issue["message"].as_str().unwrap_or_default();
    assert!(
        words.contains("no-such-tag") && words.contains("\"main\""),
        "the condition names the container and its image: {words}"
    );
    issue["reason"].as_str().unwrap_or_default().to_string()
}

/// Init mode's marks on a pod: its first init container, pullcheck's, ended with exit code 3
/// and its verdict as termination message. Returns that message.
fn assert_failed_by_init(pod: &Value) -> String {
    let first = &pod["status"]["initContainerStatuses"][0];
    assert_eq!(first["name"], "pullcheck", "{first:#}");
    let ended = &first["state"]["terminated"];
    assert_eq!(ended["exitCode"], 3, "{first:#}");
    let words = ended["message"].as_str().unwrap_or_default();
    assert!(
        words.contains("no-such-tag") && words.contains("tag_missing"),
        "pullcheck's verdict: {words}"
    );
    words.to_string()
}

#[test]
fn a_job_with_a_missing_tag_finishes_its_workload_failed_in_watch_mode() {
    let ns = queued(Mode::Watch, "pc-kueue-job-watch");
    let m = missing(Mode::Watch, &ns.name, "Job", "missing");
    let reason = assert_failed_by_watcher(&m.pod);
    let pod_name = m.pod["metadata"]["name"].as_str().expect("name");
    assert_eq!(
        m.message,
        format!(
            "Pod {}/{pod_name} has condition ConfigIssue matching FailJob rule at index 0",
            ns.name
        )
    );
    figure(
        "kueue",
        Mode::Watch,
        "missing-job",
        &format!(
            "seconds={} job_failed={} workload=Finished/Failed message={:?} condition={reason:?}",
            m.finished,
            m.job_failed.expect("the Job's"),
            m.message
        ),
    );
}

#[test]
fn a_job_with_a_missing_tag_finishes_its_workload_failed_in_init_mode() {
    let ns = queued(Mode::Init, "pc-kueue-job-init");
    let m = missing(Mode::Init, &ns.name, "Job", "missing");
    let verdict = assert_failed_by_init(&m.pod);
    let pod_name = m.pod["metadata"]["name"].as_str().expect("name");
    assert_eq!(
        m.message,
        format!(
            "Container pullcheck for pod {}/{pod_name} failed with exit code 3 matching FailJob rule at index 0",
            ns.name
        )
    );
    figure(
        "kueue",
        Mode::Init,
        "missing-job",
        &format!(
            "seconds={} job_failed={} workload=Finished/Failed message={:?} verdict={verdict:?}",
            m.finished,
            m.job_failed.expect("the Job's"),
            m.message
        ),
    );
}

#[test]
fn a_plain_pod_with_a_missing_tag_finishes_its_workload_failed_in_watch_mode() {
    let ns = queued(Mode::Watch, "pc-kueue-pod-watch");
    let m = missing(Mode::Watch, &ns.name, "Pod", "missing");
    let reason = assert_failed_by_watcher(&m.pod);
    // The pod's own message (pod_controller.go:342-356).
    assert_eq!(m.message, DEADLINE);
    figure(
        "kueue",
        Mode::Watch,
        "missing-pod",
        &format!(
            "seconds={} workload=Finished/Failed message={:?} condition={reason:?}",
            m.finished, m.message
        ),
    );
}

#[test]
fn a_plain_pod_with_a_missing_tag_finishes_its_workload_failed_in_init_mode() {
    let ns = queued(Mode::Init, "pc-kueue-pod-init");
    let m = missing(Mode::Init, &ns.name, "Pod", "missing");
    let verdict = assert_failed_by_init(&m.pod);
    // A pod failed by an init container has no status.message: the Workload says nothing.
    assert_eq!(m.message, "", "the Workload's message");
    figure(
        "kueue",
        Mode::Init,
        "missing-pod",
        &format!(
            "seconds={} workload=Finished/Failed message=\"\" verdict={verdict:?}",
            m.finished
        ),
    );
}

/// A good Job and a good pod in a namespace of `mode`: both Workloads `Finished`
/// (`Succeeded`); the seconds from each one's creation to its Workload's end, and their pods.
fn good(mode: Mode, name: &str) -> ((i64, i64), Vec<Value>) {
    let c = cluster();
    let ns = queued(mode, name);
    let image = format!("{}/tools:1", mode.registry());
    c.apply(&ns.name, &job("good", &image));
    c.apply(&ns.name, &pod("good-pod", &image));
    let mut seconds = Vec::new();
    let mut pods = Vec::new();
    for (kind, object) in [("Job", "good"), ("Pod", "good-pod")] {
        let wl = wait_finished(&ns.name, kind, object, "Succeeded");
        let what = format!("{}/{object}", kind.to_lowercase());
        let made = c.get(&ns.name, &what).expect("the object");
        let finished = condition(&wl, "Finished").expect("Finished");
        seconds.push(seconds_between(
            made["metadata"]["creationTimestamp"]
                .as_str()
                .expect("created"),
            finished["lastTransitionTime"]
                .as_str()
                .expect("lastTransitionTime"),
        ));
        let ps = pods_of(&ns.name, kind, object);
        assert_eq!(ps.len(), 1, "{ps:#?}");
        assert_eq!(
            ps[0]["status"]["phase"], "Succeeded",
            "{:#}",
            ps[0]["status"]
        );
        pods.extend(ps);
    }
    ((seconds[0], seconds[1]), pods)
}

#[test]
fn a_good_job_and_a_good_pod_finish_untouched_in_watch_mode() {
    // Without first: the tools image's first pull is paid there.
    let ((job_without, pod_without), _) = good(Mode::Without, "pc-kueue-good-without");
    let ((job_watched, pod_watched), pods) = good(Mode::Watch, "pc-kueue-good");
    // The manager that admitted them is the one built from the module.
    let deployed = cluster()
        .get(NAMESPACE, "deployment/kueue-controller-manager")
        .expect("Kueue's Deployment");
    assert_eq!(
        deployed["spec"]["template"]["spec"]["containers"][0]["image"],
        kueue().image.as_str()
    );
    for p in &pods {
        assert!(
            condition(p, "ConfigIssue").is_none(),
            "never given the condition"
        );
        assert!(
            p["spec"]["activeDeadlineSeconds"].is_null(),
            "no deadline set"
        );
        assert!(
            p["spec"]["initContainers"].is_null(),
            "nothing added in watch mode: {:#}",
            p["spec"]
        );
    }
    figure(
        "kueue",
        Mode::Watch,
        "good-job",
        &format!("seconds={job_watched} without={job_without} workload=Finished/Succeeded"),
    );
    figure(
        "kueue",
        Mode::Watch,
        "good-pod",
        &format!("seconds={pod_watched} without={pod_without} workload=Finished/Succeeded"),
    );
}

/// The control's Job and pod: applied in `ns` (no pullcheck), their pods seen; returns the
/// first pod of each (`control-job-…`, `control-pod`).
fn stuck(ns: &str) -> (Value, Value) {
    let c = cluster();
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(ns, &job("control-job", &image));
    c.apply(ns, &pod("control-pod", &image));
    let job_pod = wait_for("the control Job's pod", minutes(1), || {
        c.job_pods(ns, "control-job")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&workload_of(ns, "Job", "control-job")))
    });
    let pod = c.get(ns, "pod/control-pod").expect("the control pod");
    (job_pod, pod)
}

#[test]
fn a_job_and_a_pod_in_a_namespace_not_watched_still_wait_after_two_minutes() {
    let c = cluster();
    // Queued by Kueue, never looked at by pullcheck.
    let ns = queued(Mode::Without, "pc-kueue-control");
    let (job_pod, pod) = stuck(&ns.name);
    let made = Instant::now();
    std::thread::sleep(Duration::from_secs(120));
    // Shorter than waitForPodsReady's timeout (150 s from admission): Kueue waits too.
    assert!(
        made.elapsed().as_secs() < TIMEOUT,
        "checked before the timeout"
    );
    for (kind, name, first) in [
        ("Job", "control-job", &job_pod),
        ("Pod", "control-pod", &pod),
    ] {
        let wl = workload_of(&ns.name, kind, name).expect("the Workload");
        assert!(condition(&wl, "Admitted").is_some(), "{:#}", wl["status"]);
        for never in ["Finished", "Evicted"] {
            assert!(
                condition(&wl, never).is_none(),
                "{never}: {:#}",
                wl["status"]
            );
        }
        let ready = any_condition(&wl, "PodsReady").expect("PodsReady");
        assert_eq!(ready["status"], "False", "{ready}");
        assert_eq!(ready["reason"], "WaitForStart", "{ready}");
        let now = pods_of(&ns.name, kind, name);
        assert_eq!(now.len(), 1, "{now:#?}");
        assert_eq!(
            now[0]["metadata"]["uid"], first["metadata"]["uid"],
            "the same pod"
        );
        assert_eq!(now[0]["status"]["phase"], "Pending");
        assert!(condition(&now[0], "ConfigIssue").is_none());
        let waiting = now[0]["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            waiting == "ErrImagePull" || waiting == "ImagePullBackOff",
            "the pod waits on its image: {:#}",
            now[0]["status"]
        );
        if kind == "Job" {
            let j = c.get(&ns.name, "job/control-job").expect("the Job");
            assert!(condition(&j, "Failed").is_none(), "{:#}", j["status"]);
        }
        figure(
            "kueue",
            Mode::Without,
            &format!("control-{}", kind.to_lowercase()),
            &format!(
                "seconds={:.0} workload=Admitted PodsReady=False/WaitForStart pod=Pending/{waiting}",
                made.elapsed().as_secs_f64()
            ),
        );
    }
}

#[test]
fn without_pullcheck_wait_for_pods_ready_remakes_the_jobs_pod_and_deletes_the_plain_pod() {
    let c = cluster();
    let ns = queued(Mode::Without, "pc-kueue-evicted");
    let pods = PodWatch::start(&ns.name);
    let (job_pod, pod) = stuck(&ns.name);
    let created = job_pod["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created")
        .to_string();

    // The plain pod: evicted at the timeout, given TerminationTarget, deleted, its Workload
    // with it (pod_controller.go:474-523; the garbage collector, the pod being its owner).
    wait_for(
        "the plain pod and its Workload deleted",
        Duration::from_secs(TIMEOUT + 120),
        || match (
            c.get(&ns.name, "pod/control-pod"),
            workload_of(&ns.name, "Pod", "control-pod"),
        ) {
            (None, None) => Ok(()),
            (p, w) => Err(format!(
                "pod: {}\nworkload: {}",
                status_of(&p),
                status_of(&w)
            )),
        },
    );
    // Kueue's word on it: the Event `Stopped` (reconciler.go:1291-1313), the pod's last trace.
    let stopped = crate::watch::events(&ns.name, "Stopped", "control-pod");
    let stopped = stopped
        .first()
        .expect("Kueue's Stopped Event about the pod");
    let words = stopped["message"].as_str().unwrap_or_default();
    assert!(
        words.starts_with("Exceeded the PodsReady timeout"),
        "{stopped:#}"
    );
    assert_eq!(
        pods.uids("control-pod"),
        vec![pod["metadata"]["uid"].as_str().expect("uid").to_string()],
        "never made again"
    );
    let pod_stopped = seconds_between(
        pod["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        stopped["lastTimestamp"]
            .as_str()
            .expect("the Event's lastTimestamp"),
    );

    // The Job: evicted, re-admitted with a new pod, then deactivated (backoffLimitCount: 1).
    let wl = wait_for(
        "the Job's Workload deactivated",
        Duration::from_secs(2 * TIMEOUT + 180),
        || {
            let wl = workload_of(&ns.name, "Job", "control-job");
            match wl.as_ref().and_then(|w| condition(w, "Evicted")) {
                Some(e) if e["reason"] == "DeactivatedDueToRequeuingLimitExceeded" => {
                    Ok(wl.clone().expect("the Workload"))
                }
                _ => Err(status_of(&wl)),
            }
        },
    );
    assert_eq!(wl["spec"]["active"], false, "{:#}", wl["spec"]);
    assert!(condition(&wl, "Finished").is_none(), "{:#}", wl["status"]);
    let evicted = condition(&wl, "Evicted").expect("Evicted").clone();
    // Suspended, its pods deleted by the Job controller, and not Failed.
    let j = wait_for("the Job suspended", minutes(1), || {
        let j = c.get(&ns.name, "job/control-job");
        match j.as_ref().and_then(|j| condition(j, "Suspended")) {
            Some(_) if c.job_pods(&ns.name, "control-job").is_empty() => {
                Ok(j.clone().expect("the Job"))
            }
            _ => Err(status_of(&j)),
        }
    });
    assert!(condition(&j, "Failed").is_none(), "{:#}", j["status"]);
    let made = pods.uids("control-job-");
    assert_eq!(made.len(), 2, "one pod per admission: {made:?}");
    let deactivated = seconds_between(
        &created,
        evicted["lastTransitionTime"]
            .as_str()
            .expect("lastTransitionTime"),
    );
    figure(
        "kueue",
        Mode::Without,
        "wait-for-pods-ready",
        &format!(
            "timeout={TIMEOUT} job_pods={} job_deactivated_after={deactivated} job=Suspended \
             workload=Evicted/DeactivatedDueToRequeuingLimitExceeded \
             plain_pod_deleted_after={pod_stopped} plain_pod_workload=deleted",
            made.len()
        ),
    );
}
