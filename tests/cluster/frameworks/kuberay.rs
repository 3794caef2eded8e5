//! KubeRay v1.5.0 with pullcheck, on the real cluster: KubeRay's own CRDs and operator, built from
//! its Go module (`tests/cluster/kuberay`, by `tests/cluster/build-kuberay.sh`) and installed from
//! the kustomization the module ships (`config/default`), then:
//!
//! 1. a RayCluster whose head image tag is missing, head `restartPolicy: Never`, in a namespace the
//!    chart's default install (`mode: watch`) watches: the head pod is failed by the kubelet
//!    (`DeadlineExceeded`, with the watcher's `ConfigIssue` condition) and the RayCluster says
//!    `HeadPodReady=False`, reason `PodFailed`, within seconds of the pod's creation; then KubeRay
//!    deletes the failed head and makes another, which is failed again, every ~3.4 s, until the
//!    watcher's owner bound (`--owner-failure-limit`, 10) holds: the 11th head is left waiting,
//!    with an `OwnerFailureLimit` Event, and no 12th comes within 3 minutes;
//! 2. the same in a namespace of `mode: init`: the webhook adds no init container to the head
//!    (`remade_when_failed`, src/inject/job.rs): a failed check would make KubeRay make a new
//!    head every ~3 s for ever (measured before that rule: 62 heads in 196 s, until
//!    `spec.suspend: true`; kuberay#4637), so the head waits as it would without pullcheck, one
//!    pod;
//! 3. a RayJob of that head with `activeDeadlineSeconds` (and `shutdownAfterJobFinishes`) in init
//!    mode: `jobDeploymentStatus: Failed`, reason `DeadlineExceeded`, at the deadline (KubeRay's
//!    own bound); its RayCluster deleted; not retried under `backoffLimit`;
//! 4. a good RayCluster (`tools:1`, `sleep`, the head's command kept by
//!    `ray.io/overwrite-container-cmd`) becomes `ready` in a watched namespace, its pod untouched,
//!    timed against the same without pullcheck;
//! 5. a head left at KubeRay's default `restartPolicy` (`Always`) in a watched namespace: reported
//!    (`StuckPermanent` Event), not failed, one pod;
//! 6. the missing tag in a namespace nobody watches: one head pod still `Pending` after 120 s, the
//!    RayCluster `HeadPodReady=False` (`ContainersNotReady`), no state.
//!
//! # What KubeRay does, read in its source
//!
//! Module `github.com/ray-project/kuberay/ray-operator@v1.5.0`; paths are the module's.
//!
//! ## Building it (`tests/cluster/build-kuberay.sh`, measured 2026-12-06 on this machine,
//! `nice 10`, load 15-19 from other builds on 2 cores)
//! - The operator is the module's root package (`main.go`, the `manager` of its Dockerfile); it
//!   builds from the module as it is. Cold (our cache folder empty; Go's build cache shared with
//!   earlier Kubernetes builds): 7 min 37 s wall, 2 min 46 s user, 39 s system CPU; with an empty
//!   Go build cache too (`nice 19`, load ~5): 4 min 22 s wall, 3 min 36 s user, 54 s system, the
//!   same bytes; cached 0.04 s.
//!   `go get` + `go mod tidy`: 7 s. Static, stripped: `manager` 46,756,002 B (44.6 MiB); the cache
//!   folder 48 MiB (with the manifests).
//! - The Dockerfile builds `manager` with cgo for a FIPS runtime (`CGO_ENABLED=1 go build -tags
//!   strictfipsruntime -a`, Dockerfile:23; no Go file of the module uses that tag); we build it
//!   without cgo, static. The Makefile's ldflags (`-X main._buildTime_`, `-X main._commitId_`,
//!   Makefile:107-113) name variables v1.5.0's `main.go` no longer declares: the operator reports
//!   no version.
//!
//! ## The image, the install
//! - Upstream (Dockerfile:34-39): `gcr.io/distroless/base-debian12:nonroot`, `/manager` at the
//!   root, `USER 65532:65532`, `ENTRYPOINT ["/manager"]`. The Deployment
//!   (`config/manager/manager.yaml`) runs `command: [/manager]` with `runAsNonRoot: true`, so the
//!   user must be numeric. Ours: one layer, `/manager` and `/tmp` (1777), `--user 65532:65532`;
//!   no CA certificates (it speaks only to the API server, with the service account's CA).
//! - `config/default/kustomization.yaml`: `../crd` (RayCluster, RayJob, RayService), `../rbac`
//!   (ServiceAccount, ClusterRole(Binding) `kuberay-operator`, the leader-election Role(Binding)),
//!   `../manager` (Deployment, Service), namespace `default`, image
//!   `quay.io/kuberay/operator:v1.5.0`; no webhook (`config/default-with-webhooks` adds one;
//!   `main.go:290-293` sets it up only with `ENABLE_WEBHOOKS=true`). Ours wraps it with
//!   `namespace: pc-kuberay` (kustomize also fixes the bindings' subjects) and our image: nothing
//!   else changed. The CRDs are too large for a client-side apply (rayjobs 1.3 MB, above the
//!   last-applied annotation's 256 KiB): `kubectl apply --server-side`, the CRDs first (an
//!   operator started before its CRDs are served logs "if kind is a CRD, it should be installed
//!   before calling Start" and starts those controllers ~10 s late).
//! - It leads before it acts: leader election is on by default
//!   (`apis/config/v1alpha1/defaults.go:11`), Lease `ray-operator-leader` (`main.go:210`) in its
//!   own namespace. The manager's args: `--feature-gates=RayClusterStatusConditions=true` (the
//!   default since v1.3 anyway): the conditions below exist only with that gate.
//!
//! ## A RayCluster's head pod
//! - Built from `headGroupSpec.template` (`common/pod.go:161-225`, `BuildPod` :436-524):
//!   generateName `<cluster>-head-` (:167-171), labels `ray.io/cluster=<name>`,
//!   `ray.io/node-type=head` (:629-638), owned by the RayCluster (`controller: true`). KubeRay
//!   keeps the template's `restartPolicy` as it is (it forces `Never` only for autoscaler v2,
//!   :206-209, and a RayJob's `SidecarMode`, `rayjob_controller.go:958`); unset, the API server's
//!   default is `Always`. No init container on a head (only workers get `wait-gcs-ready`,
//!   :262-300).
//! - The container's command is replaced by `/bin/bash -c -- "<cmd> && ulimit -n 65536; ray start
//!   --head …"` (pod.go:471-505, `utils.GetContainerCommand`, `utils/util.go:829-837`) unless the
//!   RayCluster has the annotation **`ray.io/overwrite-container-cmd: "true"`** (pod.go:57-71,
//!   484-491; `utils/constant.go:60`) or the command already contains `ray start` (:491). With
//!   the annotation, `sleep 3600` of `tools:1` runs as given.
//! - Probes: KubeRay adds `bash -c "wget … /api/local_raylet_healthz && … /api/gcs_healthz"`
//!   liveness and readiness probes (pod.go:364-433, 512-521) **unless the container has its own**
//!   (:388, :404) or the operator has `ENABLE_PROBES_INJECTION=false`. `tools:1` has no bash: our
//!   head gives `exec: [true]` probes of its own.
//!
//! ## A failed head pod
//! - `reconcilePods` (raycluster_controller.go:549-647) lists the head pods; with one, it asks
//!   `shouldDeletePod` (:1034-1084): **a pod in phase `Failed` or `Succeeded` is deleted, whatever
//!   its `restartPolicy`** (:1039-1045: "… is a terminal state. KubeRay will delete the Pod and
//!   create new Pods in the next reconciliation if necessary"). It deletes it (:606-619, Event
//!   `DeletedHeadPod` "Deleted head Pod ns/name; Pod status: Failed; Pod restart policy: Never;
//!   Ray container terminated status: nil", `utils/constant.go:319`) and returns that sentence as
//!   the reconcile error, which requeues in 2 s (:337-339, `DefaultRequeueDuration`, :49). With no
//!   head pod, it makes one (:621-636, `CreatedHeadPod`, :1160-1183): no count, no back-off, no
//!   limit. The only exception: a RayJob's RayCluster that was once `RayClusterProvisioned`
//!   (:622-631), never the case for a head that never ran. The controller `Owns(&corev1.Pod{})`
//!   (:1377): each pod change reconciles at once. Hence the ~3 s cycle: pull error, pullcheck's
//!   verdict, the kubelet's (or the init container's) failure, KubeRay's delete and create.
//! - The status (`calculateStatus`, :1397-1563): `state` is only ever `ready` or `suspended`
//!   (:1444-1449, :1540-1542); `failed` is deprecated and never written
//!   (`apis/ray/v1/raycluster_types.go:207-213`). `HeadPodReady` copies the head pod's `Ready`
//!   condition (:1451-1468, `FindHeadPodReadyCondition`, `utils/util.go:79-109`): for a failed pod
//!   the kubelet writes `Ready=False`, reason **`PodFailed`**, which is the RayCluster's only word
//!   of the failure, for the second before the delete; then `HeadPodNotFound`, then the new pod's
//!   `ContainersNotReady`. Its `lastTransitionTime` stays at the first `False` (status unchanged):
//!   the time of the `PodFailed` version is its `status.lastUpdateTime` (:1552-1553).
//!   `RayClusterProvisioned` stays `False` (`RayClusterPodsProvisioning`, :1471-1489). The delete
//!   sentence is a plain error, so no `ReplicaFailure` condition (:1409-1417,
//!   `utils/constant.go:300-306`).
//! - `kubectl get raycluster` prints `.status.state` as STATUS (raycluster_types.go:350): empty
//!   while it loops. `kubectl describe raycluster` shows only `CreatedHeadPod`/`DeletedHeadPod`
//!   (the recorder folds them after 10: "(combined from similar events)"). pullcheck's words are
//!   on the pods' Events (`ConfigIssue`, `OwnerFailureLimit`), which outlive the deleted pods.
//!
//! ## What ends it (KubeRay's configuration)
//! - RayCluster: nothing in v1.5.0 bounds the re-creation of a failed head (no backoff, no limit;
//!   the `ray.io/disable-provisioned-head-restart` of later versions does not exist here). What a
//!   user can set: the head's `restartPolicy` left unset (`Always`), so that no head pod ever fails
//!   (watch mode then reports it, `StuckPermanent`, and does not fail it; init mode's init
//!   container is restarted in place by the kubelet, `Init:CrashLoopBackOff`, pullcheck's words in
//!   its termination message), or `spec.suspend: true`, which deletes the pods and stops
//!   (:552-578; state `suspended`).
//! - RayJob: in `Initializing` it waits for its RayCluster's `state: ready`
//!   (rayjob_controller.go:179-208) and fails only by **`activeDeadlineSeconds`**
//!   (:184, `checkActiveDeadlineAndUpdateStatusIfNeeded` :1113-1124: `Failed`, reason
//!   `DeadlineExceeded`, message "The RayJob has passed the activeDeadlineSeconds. …"); a failed
//!   head never fails it (kuberay#4637). `backoffLimit` does not retry a `DeadlineExceeded`
//!   failure (:510-519). With **`shutdownAfterJobFinishes: true`** the RayCluster is deleted
//!   `ttlSecondsAfterFinished` (default 0) after the end (:410-411, :1300-1341), which ends the
//!   loop; without it the RayCluster stays and keeps re-creating its head.
//! - In watch mode pullcheck's own bound ends the loop: after `--owner-failure-limit` (10) pods
//!   of one owner within `--owner-failure-window` (10 m), the next head is left to the kubelet
//!   (`src/cluster/watch/breaker.rs`).

use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{Controller, DEADLINE, Mode, figure, kustomized, manager_image};
use crate::harness::{
    Cluster, Namespace, built_by, cluster, condition, minutes, seconds_between, status_of, wait_for,
};
use crate::watch::PodWatch;

/// The KubeRay version `tests/cluster/kuberay/go.mod` requires.
const VERSION: &str = "v1.5.0";
/// The operator's namespace.
const NAMESPACE: &str = "pc-kuberay";
/// The operator's Deployment.
const CONTROLLER: Controller = Controller {
    namespace: NAMESPACE,
    deployments: &["deployment/kuberay-operator"],
};
/// The watcher's `--owner-failure-limit` as the chart leaves it (the flag's default): the pods
/// of one owner it fails for one cause within the window before it stops.
const OWNER_LIMIT: usize = 10;

/// KubeRay installed: the operator up and leading (its namespace kept for the test binary's life).
pub struct KubeRay {
    _namespace: Namespace,
}

/// `kubectl apply --server-side` of `yaml`: KubeRay's CRDs are too large for the last-applied
/// annotation of a client-side apply. `--force-conflicts`: a re-run takes the fields over from
/// an earlier install's field manager.
fn apply_server_side(c: &Cluster, yaml: &str) {
    let out = c.kubectl_output(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(yaml),
    );
    assert!(
        out.status.success(),
        "kubectl apply --server-side: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// KubeRay's CRDs and operator, installed once per test binary as the project ships them
/// (`config/default`: every namespace watched), with our namespace and image.
pub fn kuberay() -> &'static KubeRay {
    static KUBERAY: OnceLock<KubeRay> = OnceLock::new();
    KUBERAY.get_or_init(|| {
        let c = cluster();
        let started = Instant::now();
        // build-kuberay.sh's folder: `manager`, `manifests/`, `Dockerfile`.
        let cache: PathBuf = built_by("build-kuberay.sh", "manager")
            .parent()
            .expect("the cache folder")
            .to_path_buf();
        // One layer, laid out as the Dockerfile lays it out (`/manager`, user 65532).
        let image = manager_image(
            &cache,
            "kuberay",
            VERSION,
            "operator",
            &["--workingdir", "/"],
        );
        let namespace = c.namespace(NAMESPACE);
        // The CRDs first, served before the operator starts its informers.
        let crds = kustomized(
            &cache,
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources:\n- manifests/config/crd\n",
        );
        apply_server_side(c, &crds);
        c.kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/rayclusters.ray.io",
            "crd/rayjobs.ray.io",
            "crd/rayservices.ray.io",
            "--timeout=60s",
        ]);
        let (repository, tag) = image.rsplit_once(':').expect("a tag");
        let rendered = kustomized(
            &cache,
            &format!(
                r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {NAMESPACE}
resources:
- manifests/config/default
images:
- name: quay.io/kuberay/operator
  newName: {repository}
  newTag: {tag}
"#
            ),
        );
        apply_server_side(c, &rendered);
        // It acts only once it leads (Lease `ray-operator-leader`, main.go:210).
        let leader = CONTROLLER
            .started(&["lease/ray-operator-leader"])
            .join(", ");
        println!(
            "kuberay {VERSION}: operator {image} leading ({leader}), in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        KubeRay {
            _namespace: namespace,
        }
    })
}

/// The head's pod template: `tools:1`-like `image` running `sleep 3600` as given (the
/// annotation on the RayCluster or RayJob keeps KubeRay from wrapping it in `ray start`), with
/// probes of its own (KubeRay's use bash and wget), and `restart_policy` if any.
fn head_template(image: &str, restart_policy: Option<&str>, indent: &str) -> String {
    let policy = restart_policy
        .map(|p| format!("{indent}    restartPolicy: {p}\n"))
        .unwrap_or_default();
    format!(
        r#"{indent}rayStartParams: {{}}
{indent}template:
{indent}  spec:
{policy}{indent}    containers:
{indent}    - name: ray-head
{indent}      image: {image}
{indent}      command: ["sleep", "3600"]
{indent}      readinessProbe:
{indent}        exec: {{command: ["true"]}}
{indent}        periodSeconds: 2
{indent}      livenessProbe:
{indent}        exec: {{command: ["true"]}}
{indent}        periodSeconds: 10
"#
    )
}

/// A RayCluster of a head alone (no worker group).
fn ray_cluster(name: &str, image: &str, restart_policy: Option<&str>) -> String {
    format!(
        r#"apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {name}
  annotations:
    ray.io/overwrite-container-cmd: "true"
spec:
  headGroupSpec:
{}"#,
        head_template(image, restart_policy, "    ")
    )
}

/// A RayJob of that head (`restartPolicy: Never`), failed after `deadline` seconds, its
/// RayCluster deleted when it ends, with a `backoffLimit` (which a deadline does not use).
fn ray_job(name: &str, image: &str, deadline: u32) -> String {
    format!(
        r#"apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: {name}
  annotations:
    ray.io/overwrite-container-cmd: "true"
spec:
  entrypoint: "true"
  activeDeadlineSeconds: {deadline}
  backoffLimit: 1
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
{}"#,
        head_template(image, Some("Never"), "      ")
    )
}

/// One head pod as its versions showed it.
#[derive(Debug)]
struct Head {
    name: String,
    created: String,
    /// `status.reason` once `Failed` (`DeadlineExceeded` in watch mode; none in init mode).
    failed: Option<String>,
    /// `status.message` once `Failed`.
    message: Option<String>,
    /// The watcher's `ConfigIssue` condition, once given.
    issue: Option<Value>,
    /// `spec.activeDeadlineSeconds`, once set.
    deadline: Option<i64>,
    /// pullcheck's init container, once terminated: (exit code, termination message).
    init: Option<(i64, String)>,
    /// Whether a version with `deletionTimestamp` (or the watch's delete) was seen.
    deleted: bool,
}

/// The head pods of `versions` whose name starts with `prefix`, in their order of creation.
fn heads(versions: &[Value], prefix: &str) -> Vec<Head> {
    let mut heads: Vec<(String, Head)> = Vec::new();
    for p in versions {
        let name = p["metadata"]["name"].as_str().unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        let uid = p["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let at = match heads.iter().position(|(u, _)| *u == uid) {
            Some(at) => at,
            None => {
                heads.push((
                    uid,
                    Head {
                        name: name.to_string(),
                        created: p["metadata"]["creationTimestamp"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        failed: None,
                        message: None,
                        issue: None,
                        deadline: None,
                        init: None,
                        deleted: false,
                    },
                ));
                heads.len() - 1
            }
        };
        let h = &mut heads[at].1;
        if p["status"]["phase"] == "Failed" && h.failed.is_none() {
            h.failed = Some(p["status"]["reason"].as_str().unwrap_or("").to_string());
            h.message = p["status"]["message"].as_str().map(String::from);
        }
        if h.issue.is_none() {
            h.issue = condition(p, "ConfigIssue").cloned();
        }
        if let Some(d) = p["spec"]["activeDeadlineSeconds"].as_i64() {
            h.deadline = Some(d);
        }
        if h.init.is_none() {
            if let Some(t) = p["status"]["initContainerStatuses"]
                .as_array()
                .and_then(|s| s.iter().find(|s| s["name"] == "pullcheck"))
                .map(|s| &s["state"]["terminated"])
                .filter(|t| !t.is_null())
            {
                h.init = Some((
                    t["exitCode"].as_i64().unwrap_or(-1),
                    t["message"].as_str().unwrap_or_default().to_string(),
                ));
            }
        }
        if !p["metadata"]["deletionTimestamp"].is_null() {
            h.deleted = true;
        }
    }
    let mut heads: Vec<Head> = heads.into_iter().map(|(_, h)| h).collect();
    heads.sort_by(|a, b| a.created.cmp(&b.created));
    heads
}

/// The condition `kind` of an object's `status.conditions`, whatever its status.
fn cond<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// `HeadPodReady`'s (status, reason) of a RayCluster version.
fn head_ready(rc: &Value) -> (String, String) {
    let c = cond(rc, "HeadPodReady");
    let s = |f: &str| {
        c.and_then(|c| c[f].as_str())
            .unwrap_or_default()
            .to_string()
    };
    (s("status"), s("reason"))
}

/// The RayCluster `name` in `ns`.
fn get_cluster(ns: &str, name: &str) -> Option<Value> {
    cluster().get(ns, &format!("rayclusters.ray.io/{name}"))
}

/// The head pods of RayCluster `name` now (KubeRay's labels), as JSON items.
fn head_pods(ns: &str, name: &str) -> Vec<Value> {
    let selector = format!("ray.io/cluster={name},ray.io/node-type=head");
    let out = cluster().kubectl(&["get", "pods", "-n", ns, "-l", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("pod list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The Events of `ns` about objects of `kind` with reason `reason`, as JSON items.
fn events_of(ns: &str, kind: &str, reason: &str) -> Vec<Value> {
    let selector = format!("involvedObject.kind={kind},reason={reason}");
    let out = cluster().kubectl(&[
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        &selector,
        "-o",
        "json",
    ]);
    let list: Value = serde_json::from_str(&out).expect("event list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Waits for the first version of RayCluster `name` whose `HeadPodReady` says `PodFailed` for the
/// head pod `first` (the kubelet's `Ready` reason of a failed pod, copied by
/// raycluster_controller.go:1466-1467); returns it.
fn wait_pod_failed(rcs: &PodWatch, ns: &str, name: &str, first: &str) -> Value {
    wait_for(
        &format!("RayCluster {ns}/{name} HeadPodReady PodFailed for {first}"),
        minutes(1),
        || {
            rcs.all()
                .into_iter()
                .find(|rc| {
                    rc["metadata"]["name"] == name
                        && head_ready(rc) == ("False".to_string(), "PodFailed".to_string())
                        && rc["status"]["head"]["podName"] == first
                })
                .ok_or_else(|| status_of(&get_cluster(ns, name)))
        },
    )
}

/// The missing-tag RayCluster in `mode`, up to the first head's failure in KubeRay's status:
/// returns the versions of pods and RayClusters (still streaming), the seconds from the first
/// head's creation to the RayCluster's `PodFailed` version, and that version.
fn missing_head(mode: Mode, ns: &str) -> (PodWatch, PodWatch, i64, Value) {
    let c = cluster();
    let pods = PodWatch::start(ns);
    let rcs = PodWatch::of(ns, "rayclusters.ray.io");
    let image = format!("{}/tools:no-such-tag", mode.registry());
    c.apply(ns, &ray_cluster("missing", &image, Some("Never")));
    let first = wait_for("the first head pod", minutes(1), || {
        heads(&pods.all(), "missing-head-")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_cluster(ns, "missing")))
    });
    let failed = wait_pod_failed(&rcs, ns, "missing", &first.name);
    let updated = failed["status"]["lastUpdateTime"]
        .as_str()
        .expect("lastUpdateTime");
    let seconds = seconds_between(&first.created, updated);
    // No state: `failed` is never written (raycluster_types.go:211-212).
    assert!(
        failed["status"]["state"].is_null(),
        "{:#}",
        failed["status"]
    );
    (pods, rcs, seconds, failed)
}

/// The mean seconds between the creations of consecutive heads.
fn cycle(heads: &[Head]) -> f64 {
    match (heads.first(), heads.last()) {
        (Some(a), Some(b)) if heads.len() > 1 => {
            seconds_between(&a.created, &b.created) as f64 / (heads.len() - 1) as f64
        }
        _ => 0.0,
    }
}

#[test]
fn a_ray_head_with_a_missing_tag_is_failed_until_the_owner_bound_in_watch_mode() {
    let _ = kuberay();
    let ns = Mode::Watch.namespace("pc-kuberay-missing");
    let started = Instant::now();
    let (pods, _rcs, seconds, _) = missing_head(Mode::Watch, &ns.name);

    // KubeRay deletes each failed head and makes another (shouldDeletePod,
    // raycluster_controller.go:1039-1045); the watcher fails OWNER_LIMIT of them, then leaves
    // the next to the kubelet and says so once.
    let held = wait_for("the watcher's OwnerFailureLimit Event", minutes(2), || {
        crate::watch::events(&ns.name, "OwnerFailureLimit", "missing-head-")
            .into_iter()
            .next()
            .ok_or_else(|| format!("{} heads so far", heads(&pods.all(), "missing-head-").len()))
    });
    // Three minutes in all from the RayCluster's creation: no head after the held one.
    std::thread::sleep(Duration::from_secs(180).saturating_sub(started.elapsed()));
    let all = heads(&pods.all(), "missing-head-");
    assert_eq!(all.len(), OWNER_LIMIT + 1, "{all:#?}");
    let (failed, last) = all.split_at(OWNER_LIMIT);
    for h in failed {
        assert_eq!(h.failed.as_deref(), Some("DeadlineExceeded"), "{h:#?}");
        assert_eq!(h.message.as_deref(), Some(DEADLINE), "{h:#?}");
        assert_eq!(h.deadline, Some(1), "{h:#?}");
        let issue = h.issue.as_ref().expect("the watcher's condition");
        let words = issue["message"].as_str().unwrap_or_default();
        assert!(
            words.contains("no-such-tag") && words.contains("\"ray-head\""),
            "the condition names the head container and its image: {words}"
        );
        assert!(h.deleted, "KubeRay deleted the failed head: {h:#?}");
    }
    let held_pod = &last[0];
    assert_eq!(
        held["involvedObject"]["name"].as_str(),
        Some(held_pod.name.as_str()),
        "the Event is on the held head: {held:#}"
    );
    let note = held["message"].as_str().unwrap_or_default();
    assert!(
        note.contains(&format!("RayCluster/missing had {OWNER_LIMIT} pods failed")),
        "{note}"
    );
    // The held head waits as it would without pullcheck.
    let now = head_pods(&ns.name, "missing");
    assert_eq!(now.len(), 1, "{now:#?}");
    assert_eq!(
        now[0]["metadata"]["name"].as_str(),
        Some(held_pod.name.as_str())
    );
    assert_eq!(
        now[0]["status"]["phase"], "Pending",
        "{:#}",
        now[0]["status"]
    );
    assert!(now[0]["spec"]["activeDeadlineSeconds"].is_null());
    assert!(condition(&now[0], "ConfigIssue").is_none());
    let rc = get_cluster(&ns.name, "missing").expect("the RayCluster");
    assert_eq!(
        head_ready(&rc),
        ("False".to_string(), "ContainersNotReady".to_string()),
        "{:#}",
        rc["status"]
    );
    // KubeRay's own Events: each delete says the pod's phase and restart policy, not why.
    let deleted = events_of(&ns.name, "RayCluster", "DeletedHeadPod");
    let said = deleted
        .iter()
        .filter_map(|e| e["message"].as_str())
        .any(|m| m.contains("Pod status: Failed; Pod restart policy: Never"));
    assert!(said, "{deleted:#?}");
    figure(
        "kuberay",
        Mode::Watch,
        "missing",
        &format!(
            "seconds={seconds} status=HeadPodReady=False/PodFailed pods={} failed={OWNER_LIMIT} \
             cycle_seconds={:.1} then=held(OwnerFailureLimit) over_seconds=180",
            all.len(),
            cycle(failed)
        ),
    );
}

#[test]
fn a_ray_head_that_a_failed_check_would_have_made_again_for_ever_gets_no_init_container() {
    let c = cluster();
    let _ = kuberay();
    let ns = Mode::Init.namespace("pc-kuberay-missing-init");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", Mode::Init.registry());
    c.apply(&ns.name, &ray_cluster("missing", &image, Some("Never")));
    let first = wait_for("the first head pod", minutes(1), || {
        heads(&pods.all(), "missing-head-")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_cluster(&ns.name, "missing")))
    });
    std::thread::sleep(Duration::from_secs(60));
    // One head, never failed, without pullcheck's container: as without pullcheck.
    let all = heads(&pods.all(), "missing-head-");
    assert_eq!(all.len(), 1, "{all:#?}");
    let now = head_pods(&ns.name, "missing");
    assert_eq!(now.len(), 1, "{now:#?}");
    assert_eq!(
        now[0]["metadata"]["name"].as_str(),
        Some(first.name.as_str())
    );
    assert_eq!(
        now[0]["status"]["phase"], "Pending",
        "{:#}",
        now[0]["status"]
    );
    assert!(
        now[0]["spec"]["initContainers"].is_null(),
        "{:#}",
        now[0]["spec"]
    );
    figure(
        "kuberay",
        Mode::Init,
        "missing",
        "seconds=none status=HeadPodReady=False/ContainersNotReady pods=1 \
         then=waits(no init container) over_seconds=60",
    );
}

#[test]
fn a_ray_job_with_active_deadline_seconds_fails_at_its_deadline_in_init_mode() {
    let c = cluster();
    let _ = kuberay();
    let ns = Mode::Init.namespace("pc-kuberay-job-init");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", Mode::Init.registry());
    c.apply(&ns.name, &ray_job("job", &image, 20));
    let failed = wait_for("RayJob job Failed", minutes(2), || {
        let job = c.get(&ns.name, "rayjobs.ray.io/job");
        match job
            .as_ref()
            .map(|j| j["status"]["jobDeploymentStatus"].clone())
        {
            Some(Value::String(s)) if s == "Failed" => Ok(job.clone().expect("the RayJob")),
            _ => Err(status_of(&job)),
        }
    });
    let status = &failed["status"];
    // checkActiveDeadlineAndUpdateStatusIfNeeded, rayjob_controller.go:1113-1124.
    assert_eq!(status["reason"], "DeadlineExceeded", "{status:#}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("The RayJob has passed the activeDeadlineSeconds."),
        "{message}"
    );
    let cluster_name = status["rayClusterName"].as_str().expect("rayClusterName");
    let prefix = format!("{cluster_name}-head-");
    // shutdownAfterJobFinishes: the RayCluster goes, and with it the re-creation.
    wait_for(
        "the RayJob's RayCluster deleted",
        minutes(1),
        || match get_cluster(&ns.name, cluster_name) {
            None => Ok(()),
            Some(rc) => Err(format!("{:#}", rc["status"])),
        },
    );
    wait_for("no head pod left", minutes(1), || {
        let left = head_pods(&ns.name, cluster_name);
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{} left", left.len()))
        }
    });
    let made = heads(&pods.all(), &prefix);
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(heads(&pods.all(), &prefix).len(), made.len());
    // backoffLimit 1 does not retry a DeadlineExceeded failure (rayjob_controller.go:510-519).
    let job = c.get(&ns.name, "rayjobs.ray.io/job").expect("the RayJob");
    assert_eq!(job["status"]["jobDeploymentStatus"], "Failed");
    assert_eq!(job["status"]["failed"], 1, "{:#}", job["status"]);
    let seconds = seconds_between(
        failed["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        status["endTime"].as_str().expect("endTime"),
    );
    figure(
        "kuberay",
        Mode::Init,
        "rayjob-deadline",
        &format!(
            "seconds={seconds} status=Failed/DeadlineExceeded active_deadline_seconds=20 pods={} \
             then=RayCluster_deleted(shutdownAfterJobFinishes)",
            made.len()
        ),
    );
}

/// The good RayCluster in a namespace of `mode`: `ready`; the seconds from its creation to
/// `stateTransitionTimes.ready`, and its head pod.
fn good(mode: Mode, name: &str) -> (i64, Value) {
    let c = cluster();
    let ns = mode.namespace(name);
    c.apply(
        &ns.name,
        &ray_cluster(
            "good",
            &format!("{}/tools:1", mode.registry()),
            Some("Never"),
        ),
    );
    let ready = wait_for("RayCluster good ready", minutes(2), || {
        let rc = get_cluster(&ns.name, "good");
        match rc.as_ref().map(|r| r["status"]["state"].clone()) {
            Some(Value::String(s)) if s == "ready" => Ok(rc.clone().expect("the RayCluster")),
            _ => Err(format!(
                "{}\n{:#?}",
                status_of(&rc),
                head_pods(&ns.name, "good")
                    .iter()
                    .map(|p| p["status"].clone())
                    .collect::<Vec<_>>()
            )),
        }
    });
    assert_eq!(
        head_ready(&ready),
        ("True".to_string(), "HeadPodRunningAndReady".to_string())
    );
    assert!(
        cond(&ready, "RayClusterProvisioned").is_some_and(|c| c["status"] == "True"),
        "{:#}",
        ready["status"]
    );
    // One head, kept running.
    let first = head_pods(&ns.name, "good");
    std::thread::sleep(Duration::from_secs(10));
    let pods = head_pods(&ns.name, "good");
    assert_eq!(pods.len(), 1, "{pods:#?}");
    assert_eq!(first.len(), 1, "{first:#?}");
    assert_eq!(pods[0]["metadata"]["uid"], first[0]["metadata"]["uid"]);
    assert_eq!(pods[0]["status"]["phase"], "Running");
    let seconds = seconds_between(
        ready["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        ready["status"]["stateTransitionTimes"]["ready"]
            .as_str()
            .expect("stateTransitionTimes.ready"),
    );
    (seconds, pods.into_iter().next().expect("the head pod"))
}

#[test]
fn a_good_ray_cluster_becomes_ready_untouched_in_watch_mode() {
    let _ = kuberay();
    // A first run pays the tools image's first pull; then the two timed.
    let _ = good(Mode::Without, "pc-kuberay-good-first");
    let (watched, pod) = good(Mode::Watch, "pc-kuberay-good");
    let (without, _) = good(Mode::Without, "pc-kuberay-good-without");
    assert!(
        condition(&pod, "ConfigIssue").is_none(),
        "never given the condition"
    );
    assert!(
        pod["spec"]["activeDeadlineSeconds"].is_null(),
        "no deadline set"
    );
    assert!(
        pod["spec"]["initContainers"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "nothing added in watch mode (and KubeRay adds no init container to a head): {:#}",
        pod["spec"]["initContainers"]
    );
    // The annotation kept the command (pod.go:484-505).
    assert_eq!(
        pod["spec"]["containers"][0]["command"],
        serde_json::json!(["sleep", "3600"])
    );
    figure(
        "kuberay",
        Mode::Watch,
        "good",
        &format!("seconds={watched} without={without} status=ready"),
    );
}

#[test]
fn a_ray_head_left_at_restart_policy_always_is_reported_not_failed_in_watch_mode() {
    let c = cluster();
    let _ = kuberay();
    let ns = Mode::Watch.namespace("pc-kuberay-always");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    // No restartPolicy: KubeRay leaves the API server's default, Always.
    c.apply(&ns.name, &ray_cluster("always", &image, None));
    let said = wait_for("the watcher's StuckPermanent Event", minutes(1), || {
        crate::watch::events(&ns.name, "StuckPermanent", "always-head-")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_cluster(&ns.name, "always")))
    });
    let words = said["message"].as_str().unwrap_or_default().to_string();
    assert!(words.contains("restartPolicy Always"), "{words}");
    std::thread::sleep(Duration::from_secs(20));
    let all = heads(&pods.all(), "always-head-");
    assert_eq!(all.len(), 1, "{all:#?}");
    assert!(
        all[0].failed.is_none() && all[0].deadline.is_none(),
        "{all:#?}"
    );
    let now = head_pods(&ns.name, "always");
    assert_eq!(now.len(), 1);
    assert_eq!(now[0]["spec"]["restartPolicy"], "Always");
    assert_eq!(now[0]["status"]["phase"], "Pending");
    figure(
        "kuberay",
        Mode::Watch,
        "restart-always",
        &format!(
            "pods=1 status=HeadPodReady=False/ContainersNotReady event=StuckPermanent {words:?}"
        ),
    );
}

#[test]
fn a_ray_cluster_in_a_namespace_not_watched_still_waits_after_two_minutes() {
    let _ = kuberay();
    let ns = Mode::Without.namespace("pc-kuberay-control");
    let image = format!("{}/tools:no-such-tag", cluster().registry);
    cluster().apply(&ns.name, &ray_cluster("control", &image, Some("Never")));
    // From the head's creation (the operator makes it within a second).
    let pod = wait_for("the control RayCluster's head", minutes(1), || {
        head_pods(&ns.name, "control")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_cluster(&ns.name, "control")))
    });
    let made = Instant::now();
    std::thread::sleep(Duration::from_secs(120));
    let rc = get_cluster(&ns.name, "control").expect("the RayCluster");
    assert!(rc["status"]["state"].is_null(), "{:#}", rc["status"]);
    assert_eq!(
        head_ready(&rc),
        ("False".to_string(), "ContainersNotReady".to_string()),
        "{:#}",
        rc["status"]
    );
    let now = head_pods(&ns.name, "control");
    assert_eq!(now.len(), 1, "{now:#?}");
    assert_eq!(
        now[0]["metadata"]["uid"], pod["metadata"]["uid"],
        "the same head"
    );
    assert_eq!(now[0]["status"]["phase"], "Pending");
    let waiting = now[0]["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        waiting == "ErrImagePull" || waiting == "ImagePullBackOff",
        "{:#}",
        now[0]["status"]
    );
    figure(
        "kuberay",
        Mode::Without,
        "control",
        &format!(
            "seconds={:.0} status=HeadPodReady=False/ContainersNotReady state=none pods=1 \
             head={waiting}",
            made.elapsed().as_secs_f64()
        ),
    );
}
