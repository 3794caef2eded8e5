//! Argo Workflows v3.7.0 with pullcheck, on the real cluster: Argo's own CRDs and workflow
//! controller, built from its Go module (`tests/cluster/argo`, by `tests/cluster/build-argo.sh`)
//! and installed from the manifests the module ships, then:
//!
//! 1. a Workflow whose one step's image tag is missing ends `Failed`, in a namespace the chart's
//!    default install (`mode: watch`) watches (the step's pod failed by the kubelet,
//!    `DeadlineExceeded`, with the watcher's `ConfigIssue` condition) and in one of `mode: init`
//!    (failed by pullcheck's init container, whose words become the node's message); the pod is
//!    kept and Argo made it once: no re-created pods;
//! 2. a good Workflow (`tools:1`, `true`) `Succeeded` in a watched namespace, its pod untouched,
//!    timed against the same Workflow without pullcheck;
//! 3. the same missing tag in a namespace nobody watches: the Workflow still `Running` and its
//!    pod `Pending` after 120 s (what Argo does without pullcheck: wait for ever).
//!
//! # What Argo does, read in its source (module `github.com/argoproj/argo-workflows/v3@v3.7.0`)
//!
//! ## Building it (`tests/cluster/build-argo.sh`, measured 2026-12-05 on this machine, `nice 19`
//! beside a cargo build and a running cluster test)
//! - `workflow-controller` builds from the module as it is; **`argoexec` does not**:
//!   `workflow/executor/osspecific/command_unix.go:33:3: undefined: Setpgid`. In Argo's
//!   repository `workflow/executor/osspecific/signal_linux.go` is a symbolic link to
//!   `signal_darwin.go` (argoproj/argo-workflows#9590, #12603 show it as a link), and module zips
//!   leave symbolic links out (golang/go#27093). `go build -overlay` is refused beneath
//!   GOMODCACHE ("Files beneath GOMODCACHE … must not be replaced"), so the script builds both
//!   commands in a scratch copy of our module with `replace …/v3 => ./argo-workflows`, a copy of
//!   the module source with that file restored as a copy of its target.
//! - Cold (empty build cache for Argo's dependencies): 13 min 17 s wall up to the argoexec
//!   failure (5 min 22 s user, 1 min 9 s system CPU: the controller and most of argoexec's
//!   dependencies), then 2 min 59 s for the rest; a rebuild after a key change 3 min 15 s wall
//!   (43 s user CPU: mostly the two links); cached 0.1 s. `go mod tidy`: 34 s (downloads).
//! - Sizes (static, stripped): `workflow-controller` 79,216,802 B (75.5 MiB), `argoexec`
//!   113,537,186 B (108.3 MiB; it links every artifact driver: S3, GCS, Azure, OSS, HDFS, git);
//!   the cache folder 185 MiB; argoexec as a one-layer OCI archive 36 MB. Both report `v3.7.0`,
//!   commit d1d689b3, clean (`workflow-controller version`).
//!
//! ## The executor image, the ConfigMap, RBAC
//! - The controller takes the executor image from `--executor-image` first, then the ConfigMap's
//!   `executor.image`, else `quay.io/argoproj/argoexec:<argo.ImageTag()>` (the version ldflag;
//!   `latest` when untagged): `workflow/controller/config.go:106-114` (`executorImage()`). The
//!   flag is declared at `cmd/workflow-controller/main.go:194` (with `--executor-image-pull-policy`
//!   at :195, `--configmap` at :193); every flag can also be an env var `ARGO_<FLAG>`
//!   (`ARGO_EXECUTOR_IMAGE`, viper, main.go:211-227). The pull policy: the flag, else the
//!   ConfigMap's `executor.imagePullPolicy` (config.go:121-127), else Kubernetes' default.
//! - The ConfigMap is `workflow-controller-configmap` (`workflow/common/common.go:273`,
//!   `ConfigMapName`, the `--configmap` default), read in the controller's own namespace
//!   (`clientConfig.Namespace()`, main.go:97; `config/controller.go:55-63`). Each data key is a
//!   top-level field of `config.Config` (or one key `config` holding all): `config/controller.go:
//!   34-53`; so `data: {executor: "image: R/argoexec:v3.7.0\n"}` (`Config.Executor` is a whole
//!   `v1.Container`: `config/config.go:34-35`). The manifests ship the ConfigMap empty
//!   (`manifests/base/workflow-controller/workflow-controller-configmap.yaml`); the controller
//!   also needs it to exist. We use the flag (a kustomize JSON patch on the Deployment's args, as
//!   `manifests/namespace-install/overlays/workflow-controller-deployment.yaml` adds
//!   `--namespaced`).
//! - Controller RBAC, cluster install: `manifests/cluster-install-no-crds/workflow-controller-rbac/`
//!   (ClusterRole `argo-cluster-role` + ClusterRoleBinding `argo-binding` to ServiceAccount `argo`;
//!   Role `argo-role` for leases and secrets in its namespace; the aggregate-to-view/edit/admin
//!   ClusterRoles). The ClusterRoleBinding's subject has no namespace in the file: kustomize's
//!   `namespace:` fills it in (as it does for the rendered `manifests/quick-start-minimal.yaml`).
//!   Leader election is a Lease `workflow-controller` in the controller's namespace (main.go:131-149;
//!   the Deployment sets `LEADER_ELECTION_IDENTITY` to the pod name).
//! - A workflow's pods run as the Workflow's `serviceAccountName` (default: `default`). With the
//!   default executor (emissary) that account needs only the Role `executor`
//!   (`manifests/quick-start/base/executor/emissary/executor-role.yaml`: `argoproj.io`
//!   `workflowtaskresults` `create`, `patch`) bound to it
//!   (`manifests/quick-start/base/executor-default-rolebinding.yaml`: RoleBinding
//!   `executor-default` → ServiceAccount `default`), in each namespace that runs Workflows. The
//!   `wait` container creates its WorkflowTaskResult at start (`cmd/argoexec/commands/wait.go:40`,
//!   `InitializeOutput`) and marks it complete when it ends (`FinalizeOutput`, deferred at :35).
//!
//! ## The images (upstream `Dockerfile` in the module)
//! - `argoexec` (Dockerfile:83-104): `gcr.io/distroless/static`, plus `/etc/mime.types`,
//!   `/etc/ssh/ssh_known_hosts` (`hack/ssh_known_hosts`), `/etc/nsswitch.conf`
//!   (`hack/nsswitch.conf`, `hosts: files dns`); the binary at **`/bin/argoexec`**,
//!   `ENTRYPOINT ["argoexec"]`, user root (the `argoexec-nonroot` variant: `USER 8737`).
//! - `workflow-controller` (Dockerfile:108-116): distroless static, `USER 8737`, the same two
//!   `/etc` files, **`/bin/workflow-controller`**, `ENTRYPOINT ["workflow-controller"]`. The
//!   Deployment (`manifests/base/workflow-controller/workflow-controller-deployment.yaml`) runs
//!   `command: [workflow-controller]` with `runAsNonRoot: true`, `readOnlyRootFilesystem: true`,
//!   `priorityClassName: workflow-controller`, liveness `:6060/healthz` after 90 s: the image's
//!   user must be numeric and non-root (8737).
//! - Both commands are found by **PATH**: the controller writes the init and wait containers
//!   with `Command: ["argoexec", "init"|"wait", --loglevel …]`
//!   (`workflow/controller/workflowpod.go:617-626`), and `argoexec init` copies itself with
//!   `exec.LookPath("argoexec")` to `/var/run/argo/argoexec` (`workflow/executor/emissary/
//!   binary.go:12-31`). distroless sets `PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:
//!   /sbin:/bin`; a `buildah from scratch` image must set it (`--env PATH=…`). `/tmp` of the
//!   wait container is an emptyDir (workflowpod.go:421-428), so none is needed in the image.
//!   So one-layer images: `bin/argoexec`, `etc/nsswitch.conf`, `etc/ssh/ssh_known_hosts`,
//!   `tmp/` (1777); config `--entrypoint '["argoexec"]' --env PATH=…`; the controller's the same
//!   with `bin/workflow-controller` and `--user 8737`. `/etc/mime.types` (Alpine's `mailcap`) is
//!   only for artifact content types: left out.
//!
//! ## A step's pod
//! - One init container `init` (executor image, `argoexec init`), then the containers `wait`
//!   (executor image, `argoexec wait`) and `main` (the template's image) in that order
//!   (workflowpod.go:241-253, 272-273; names in `workflow/common/common.go:11-13`),
//!   `restartPolicy: Never` (:208), owned by the Workflow (`controller: true`, :203-205), labelled
//!   `workflows.argoproj.io/workflow=<name>` (:196). `main`'s command becomes
//!   `/var/run/argo/argoexec emissary … -- <command>` (:418-419). So with the executor image
//!   present, `init` completes, `wait` runs, and a missing main image is what sticks
//!   (`ErrImagePull`/`ImagePullBackOff` on `main`); the pod is `Pending` (a waiting container),
//!   which is what the watcher watches.
//! - A template **without `command`** makes the controller look up the image's entrypoint in the
//!   registry before it makes the pod (workflowpod.go:406-412): a missing image then fails the
//!   node at once ("failed to look-up entrypoint/cmd for image …"), with no pod to get stuck; the
//!   Workflows here give a command. (That look-up also runs from the controller's pod, whose
//!   127.0.0.1 is not the node's.)
//! - While the pod is `Pending` the node is `Pending` with the first waiting container's words:
//!   `"<reason>: <message>"` (`getPendingReason`, `workflow/controller/operator.go:1589-1597`,
//!   from `assessNodeStatus` :1381-1383), e.g. `ImagePullBackOff: Back-off pulling image …`.
//!
//! ## A pod the kubelet failed with `DeadlineExceeded`
//! - `assessNodeStatus`, pod phase `Failed` → `inferFailedReason` (operator.go:1399-1401); that
//!   returns **`NodeFailed` with the pod's `status.message`** whenever it is set
//!   (operator.go:1618-1622): the node reads `Failed`, "Pod was active on the node longer than
//!   the specified deadline". (Without a pod message a waiting container would give
//!   `NodeError` "Pod failed before main container starts due to …", :1652-1653; the kubelet's
//!   message comes first.) The main container's terminated exit code (137 for a never-started
//!   container, as FIELD-NOTES saw the kubelet write it) becomes the node's `outputs.exitCode` (`getExitCode`, :1544-1551, applied at :1481-1487).
//! - The wait container: a pod that is `Failed` does not wait for it (:1496); killed with a
//!   non-zero exit its task result is marked complete (:1499-1505), so the Workflow can complete
//!   (`markWorkflowPhase` holds a completed phase while task results are in progress, :2415).
//! - The Workflow: a steps template's failed step fails the step group with "child '<node id>'
//!   failed" (`workflow/controller/steps.go:359-362`), the steps node takes that message
//!   (steps.go:119-125), and the Workflow is marked `Failed` with the root node's message
//!   (operator.go:482-488, 506-508). So `status.message` is "child '…' failed" and the pod
//!   node's `message` is the kubelet's deadline sentence.
//! - Pods are kept: no `podGC` by default; Argo only labels them
//!   `workflows.argoproj.io/completed=true` (`workflow/controller/pod/cleanup.go:44-58`).
//!
//! ## Retries
//! - `retryStrategy.retryPolicy` defaults to **`OnFailure`** when there is no `expression`, and
//!   to **`Always`** when there is one (`RetryPolicyActual`,
//!   `pkg/apis/workflow/v1alpha1/workflow_types.go:2117-2126`). The deadline failure is a
//!   `Failed` node, so **`OnFailure` and `Always` retry it** (a new pod, stuck and failed
//!   again), `OnError` does not, and `OnTransientError` only when `TRANSIENT_ERROR_PATTERN`
//!   matches the message (operator.go:1075-1098; `util/errors/errors.go:45-72`). A
//!   `retryStrategy` with no `limit` retries for ever (operator.go:1105-1112); pullcheck's owner
//!   bound (`--owner-failure-limit`, 10 pods of one owner) is then what ends it.
//! - `retryStrategy.expression` sees `lastRetry.message` (the node's message: the deadline
//!   sentence), `lastRetry.status` (`Failed`), `lastRetry.exitCode` ("137") and
//!   `lastRetry.duration` (`buildRetryStrategyLocalScope`, operator.go:1885-1906; names in
//!   `workflow/common/common.go:247-254`; dotted names expanded into maps,
//!   `util/expr/env/env.go:20-21`), evaluated after the limit check (operator.go:1114-1124). So
//!   `expression: "!(lastRetry.message contains 'longer than the specified deadline')"` stops
//!   retrying a pod failed this way (and any pod failed by its own `activeDeadlineSeconds`).
//!
//! ## A pending pod that disappears
//! - `podReconciliation` (operator.go:1135): a Pod node that is not fulfilled and whose pod is
//!   not seen is logged "Workflow pod is missing" (:1241); **if the node is `Pending` it is left
//!   as it is** ("we want to try to submit it again instead of marking it as an error",
//!   :1244-1248); only a node past `Pending` (and not started within the last 10 s,
//!   `RECENTLY_STARTED_POD_DURATION`, :1278-1280) is marked `Error` "pod deleted" (:1262). The
//!   still-`Pending` node is executed again: `executeContainer` (operator.go:2957-2982) calls
//!   `createWorkflowPod`, which finds no pod for the node id in its informer (workflowpod.go:
//!   115-123, `podExists` :558) and **creates it again**, same name. So deleting a stuck Argo pod
//!   only makes another stuck pod: hence the watcher's deadline, never a delete.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{
    Controller, DEADLINE, DISTROLESS_PATH, Mode, figure, image_from, image_root, kustomized, tag_of,
};
use crate::harness::{
    Cluster, Namespace, built_by, cluster, condition, minutes, seconds_between, status_of, wait_for,
};
use crate::watch::PodWatch;

/// The Argo Workflows version `tests/cluster/argo/go.mod` requires.
const VERSION: &str = "v3.7.0";
/// The controller's namespace.
const NAMESPACE: &str = "pc-argo";
/// The controller's Deployment.
const CONTROLLER: Controller = Controller {
    namespace: NAMESPACE,
    deployments: &["deployment/workflow-controller"],
};

/// Argo installed: the controller up and leading.
pub struct Argo {
    /// The cache folder of `build-argo.sh` (binaries, `manifests/`, `hack/`).
    pub cache: PathBuf,
    /// The executor image (`--executor-image`).
    pub executor_image: String,
    _namespace: Namespace,
}

/// Pushes the controller's and the executor's images, one layer each from the static binaries
/// of `cache`, laid out as Argo's Dockerfile lays them out, to the cluster's registry, tagged
/// with the cache folder's key (`v3.7.0-<hash>`): a rebuilt binary is a new tag, so the node's
/// `IfNotPresent` never runs an old one. Returns (controller, executor).
pub fn argo_images(c: &Cluster, cache: &Path) -> (String, String) {
    // distroless's PATH: the controller names `argoexec` by PATH, and `argoexec init` finds
    // itself by it.
    let layout = |binary: &str| {
        image_root(&[
            (&cache.join(binary), &format!("bin/{binary}")),
            (&cache.join("hack/nsswitch.conf"), "etc/nsswitch.conf"),
            (
                &cache.join("hack/ssh_known_hosts"),
                "etc/ssh/ssh_known_hosts",
            ),
        ])
    };
    let tag = tag_of(cache, "argo");
    assert!(tag.starts_with(VERSION), "{tag}: built for Argo {VERSION}");
    let controller = format!("{}/argo/workflow-controller:{tag}", c.registry);
    let executor = format!("{}/argo/argoexec:{tag}", c.registry);
    image_from(
        layout("workflow-controller").path(),
        &controller,
        &[
            "--entrypoint",
            "[\"workflow-controller\"]",
            "--user",
            "8737",
            "--env",
            DISTROLESS_PATH,
        ],
    );
    image_from(
        layout("argoexec").path(),
        &executor,
        &["--entrypoint", "[\"argoexec\"]", "--env", DISTROLESS_PATH],
    );
    (controller, executor)
}

/// Argo's CRDs and workflow controller, installed once per test binary as the project ships
/// them (cluster install: it watches every namespace), from the manifests in the module:
/// kustomize (kubectl's own) over a copy of them, with our namespace, our image and
/// `--executor-image`.
pub fn argo() -> &'static Argo {
    static ARGO: OnceLock<Argo> = OnceLock::new();
    ARGO.get_or_init(|| {
        let c = cluster();
        let started = Instant::now();
        let cache = built_by("build-argo.sh", "workflow-controller")
            .parent()
            .expect("the cache folder")
            .to_path_buf();
        let (controller, executor) = argo_images(c, &cache);
        let namespace = c.namespace(NAMESPACE);
        let (repository, tag) = controller.rsplit_once(':').expect("a tag");
        let kustomization = format!(
            r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {NAMESPACE}
resources:
- manifests/base/crds/minimal
- manifests/base/workflow-controller
- manifests/cluster-install-no-crds/workflow-controller-rbac
images:
- name: quay.io/argoproj/workflow-controller
  newName: {repository}
  newTag: {tag}
patches:
- target: {{group: apps, version: v1, kind: Deployment, name: workflow-controller}}
  patch: |
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --executor-image={executor}
"#
        );
        let rendered = kustomized(&cache, &kustomization);
        c.apply(NAMESPACE, &rendered);
        c.kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/workflows.argoproj.io",
            "crd/workflowtaskresults.argoproj.io",
            "--timeout=60s",
        ]);
        // It acts only once it leads (Lease `workflow-controller`, main.go:131-149).
        let leader = CONTROLLER.started(&["lease/workflow-controller"]).join(", ");
        println!(
            "argo {VERSION}: controller {controller} leading ({leader}), executor {executor}, in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Argo {
            cache,
            executor_image: executor,
            _namespace: namespace,
        }
    })
}

/// Gives namespace `ns`'s `default` ServiceAccount what the emissary executor needs: Argo's own
/// Role `executor` and RoleBinding `executor-default`.
fn executor_rbac(ns: &str) {
    let a = argo();
    let read = |p: &str| {
        std::fs::read_to_string(a.cache.join("manifests").join(p))
            .unwrap_or_else(|e| panic!("read {p}: {e}"))
    };
    let role = read("quick-start/base/executor/emissary/executor-role.yaml");
    let binding = read("quick-start/base/executor-default-rolebinding.yaml");
    cluster().apply(ns, &format!("{role}\n---\n{binding}"));
}

/// A Workflow of one step (a steps template calling a container template) running `image` with
/// command `true`: the command given, so that the controller makes the pod without asking the
/// registry for the image's entrypoint.
fn workflow(name: &str, image: &str) -> String {
    workflow_with(name, image, "")
}

/// [`workflow`] with `template` (YAML lines at the container template's level, indented by
/// four spaces: a `retryStrategy`, say) added to its container template.
fn workflow_with(name: &str, image: &str, template: &str) -> String {
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  name: {name}
spec:
  entrypoint: run
  templates:
  - name: run
    steps:
    - - name: step
        template: main
  - name: main
{template}    container:
      image: {image}
      imagePullPolicy: Always
      command: ["true"]
"#
    )
}

/// The Workflow `name` in `ns`.
fn get_workflow(ns: &str, name: &str) -> Option<Value> {
    cluster().get(ns, &format!("workflows.argoproj.io/{name}"))
}

/// The pods of Workflow `name` (Argo's label), as JSON items.
fn workflow_pods(ns: &str, name: &str) -> Vec<Value> {
    let selector = format!("workflows.argoproj.io/workflow={name}");
    let out = cluster().kubectl(&["get", "pods", "-n", ns, "-l", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("pod list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The Workflow's one Pod node (`status.nodes`, type `Pod`).
fn pod_node(wf: &Value) -> Value {
    wf["status"]["nodes"]
        .as_object()
        .and_then(|nodes| nodes.values().find(|n| n["type"] == "Pod"))
        .cloned()
        .unwrap_or_else(|| panic!("a Pod node: {:#}", wf["status"]))
}

/// Waits for Workflow `name` to reach `phase`; fails at once on another completed phase.
fn wait_workflow(ns: &str, name: &str, phase: &str) -> Value {
    wait_for(&format!("Workflow {ns}/{name} {phase}"), minutes(5), || {
        let wf = get_workflow(ns, name);
        let now = wf.as_ref().map(|w| w["status"]["phase"].clone());
        let state = || {
            format!(
                "workflow: {}\npods: {}",
                status_of(&wf),
                serde_json::to_string_pretty(
                    &workflow_pods(ns, name)
                        .iter()
                        .map(|p| &p["status"])
                        .collect::<Vec<_>>()
                )
                .unwrap_or_default()
            )
        };
        match now.as_ref().and_then(Value::as_str) {
            Some(p) if p == phase => Ok(wf.clone().expect("the Workflow")),
            Some(p @ ("Succeeded" | "Failed" | "Error")) => {
                panic!("Workflow {ns}/{name} ended {p}, not {phase}:\n{}", state())
            }
            _ => Err(state()),
        }
    })
}

/// The missing-tag case in `mode`: the Workflow `Failed`, its one pod kept and never made
/// again; returns the seconds from the pod's creation to the Workflow's end, the node's message
/// and the pod.
fn missing_tag(mode: Mode, ns: &str) -> (i64, String, Value) {
    let c = cluster();
    executor_rbac(ns);
    let pods = PodWatch::start(ns);
    let image = format!("{}/tools:no-such-tag", mode.registry());
    c.apply(ns, &workflow("missing", &image));
    let failed = wait_workflow(ns, "missing", "Failed");
    let node = pod_node(&failed);
    assert_eq!(node["phase"], "Failed", "{node:#}");

    // One pod, kept, never made again: the same single pod from first to last, and none after
    // the end.
    std::thread::sleep(Duration::from_secs(15));
    let kept = workflow_pods(ns, "missing");
    assert_eq!(kept.len(), 1, "one pod kept: {kept:#?}");
    assert_eq!(
        pods.uids("missing-").len(),
        1,
        "one pod from first to last: {:?}",
        pods.uids("missing-")
    );
    let pod = kept.into_iter().next().expect("the pod");
    assert_eq!(pod["status"]["phase"], "Failed", "{:#}", pod["status"]);
    // Argo's layout (workflowpod.go:241-273): its init container `init` and the container
    // `wait` of the executor image, then `main` of the step's.
    let names = |key: &str| -> Vec<String> {
        pod["spec"][key]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| c["name"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(names("containers"), ["wait", "main"]);
    assert_eq!(
        pod["spec"]["containers"][0]["image"].as_str(),
        Some(argo().executor_image.as_str()),
        "the wait container runs our executor image"
    );
    let created = pod["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created");
    let finished = failed["status"]["finishedAt"].as_str().expect("finishedAt");
    let message = node["message"].as_str().unwrap_or_default().to_string();
    (seconds_between(created, finished), message, pod)
}

#[test]
fn a_workflow_step_with_a_missing_tag_fails_the_workflow_in_watch_mode() {
    let _ = argo();
    let ns = Mode::Watch.namespace("pc-argo-missing");
    let (seconds, message, pod) = missing_tag(Mode::Watch, &ns.name);
    // Failed by the kubelet, whose message Argo takes as the node's (inferFailedReason,
    // operator.go:1618-1622), with the watcher's condition kept beside it.
    assert_eq!(message, DEADLINE);
    assert_eq!(
        pod["status"]["reason"], "DeadlineExceeded",
        "{:#}",
        pod["status"]
    );
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 1);
    let issue = condition(&pod, "ConfigIssue").expect("the watcher's condition, kept");
    let words = issue["message"].as_str().unwrap_or_default();
    assert!(
        words.contains("no-such-tag") && words.contains("\"main\""),
        "the condition names the main container and its image: {words}"
    );
    // Argo's own init container ran (the executor image is there): the main image stuck.
    assert_eq!(
        pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"], 0,
        "{:#}",
        pod["status"]["initContainerStatuses"]
    );
    figure(
        "argo",
        Mode::Watch,
        "missing",
        &format!(
            "seconds={seconds} status=Failed node_message={message:?} condition={:?}",
            issue["reason"]
        ),
    );
}

#[test]
fn a_workflow_step_with_a_missing_tag_fails_the_workflow_in_init_mode() {
    let _ = argo();
    let ns = Mode::Init.namespace("pc-argo-missing-init");
    let (seconds, message, pod) = missing_tag(Mode::Init, &ns.name);
    // pullcheck's init container comes first and failed the pod; Argo takes the first failed
    // container's words, init containers first (operator.go:1637-1676): pullcheck's verdict.
    let first = &pod["status"]["initContainerStatuses"][0];
    assert_eq!(first["name"], "pullcheck", "{first:#}");
    assert_eq!(first["state"]["terminated"]["exitCode"], 3, "{first:#}");
    assert!(
        message.starts_with("pullcheck: Error (exit code 3): ") && message.contains("tag_missing"),
        "the node's message is pullcheck's verdict: {message}"
    );
    figure(
        "argo",
        Mode::Init,
        "missing",
        &format!("seconds={seconds} status=Failed node_message={message:?}"),
    );
}

/// The good Workflow in a namespace of `mode`: `Succeeded`, one pod; the seconds from the
/// Workflow's creation to its end, and its pod.
fn good(mode: Mode, name: &str) -> (i64, Value) {
    let c = cluster();
    let ns = mode.namespace(name);
    executor_rbac(&ns.name);
    c.apply(
        &ns.name,
        &workflow("good", &format!("{}/tools:1", mode.registry())),
    );
    let done = wait_workflow(&ns.name, "good", "Succeeded");
    assert_eq!(pod_node(&done)["phase"], "Succeeded");
    let pods = workflow_pods(&ns.name, "good");
    assert_eq!(pods.len(), 1, "{pods:#?}");
    let seconds = seconds_between(
        done["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        done["status"]["finishedAt"].as_str().expect("finishedAt"),
    );
    (seconds, pods.into_iter().next().expect("the pod"))
}

#[test]
fn a_good_workflow_succeeds_untouched_in_watch_mode() {
    let _ = argo();
    // A first run pays the executor's and the tools image's first pull; then the two timed.
    let _ = good(Mode::Without, "pc-argo-good-first");
    let (watched, pod) = good(Mode::Watch, "pc-argo-good");
    let (without, _) = good(Mode::Without, "pc-argo-good-without");
    assert!(
        condition(&pod, "ConfigIssue").is_none(),
        "never given the condition"
    );
    assert!(
        pod["spec"]["activeDeadlineSeconds"].is_null(),
        "no deadline set"
    );
    let inits: Vec<&str> = pod["spec"]["initContainers"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(inits, ["init"], "nothing added in watch mode");
    figure(
        "argo",
        Mode::Watch,
        "good",
        &format!("seconds={watched} without={without} status=Succeeded"),
    );
}

#[test]
fn a_workflow_in_a_namespace_not_watched_still_waits_after_two_minutes() {
    let _ = argo();
    let ns = Mode::Without.namespace("pc-argo-control");
    executor_rbac(&ns.name);
    let image = format!("{}/tools:no-such-tag", cluster().registry);
    cluster().apply(&ns.name, &workflow("control", &image));
    // From the pod's creation (the controller makes it within seconds).
    let pod = wait_for("the control Workflow's pod", minutes(1), || {
        workflow_pods(&ns.name, "control")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_workflow(&ns.name, "control")))
    });
    let made = Instant::now();
    std::thread::sleep(Duration::from_secs(120));
    let wf = get_workflow(&ns.name, "control").expect("the Workflow");
    assert_eq!(wf["status"]["phase"], "Running", "{:#}", wf["status"]);
    let node = pod_node(&wf);
    assert_eq!(node["phase"], "Pending", "{node:#}");
    let waiting = node["message"].as_str().unwrap_or_default();
    assert!(
        waiting.contains("ErrImagePull") || waiting.contains("ImagePullBackOff"),
        "the node says why it waits: {waiting}"
    );
    let now = workflow_pods(&ns.name, "control");
    assert_eq!(now.len(), 1, "{now:#?}");
    assert_eq!(
        now[0]["metadata"]["uid"], pod["metadata"]["uid"],
        "the same pod"
    );
    assert_eq!(now[0]["status"]["phase"], "Pending");
    figure(
        "argo",
        Mode::Without,
        "control",
        &format!(
            "seconds={:.0} status=Running node=Pending node_message={waiting:?}",
            made.elapsed().as_secs_f64()
        ),
    );
}

/// The `retryStrategy` docs/job-frameworks.md gives: retry what fails, but not a pod that
/// pullcheck failed (the kubelet's deadline sentence in watch mode, pullcheck's verdict as the
/// node's message in init mode).
const RETRY: &str = "    retryStrategy:
      limit: 2
      expression: \"!(lastRetry.message contains 'longer than the specified deadline' || lastRetry.message startsWith 'pullcheck: ')\"
";

#[test]
fn a_retry_strategy_retries_the_failed_pod_unless_its_expression_names_pullchecks_failure() {
    let c = cluster();
    let _ = argo();
    let ns = Mode::Watch.namespace("pc-argo-retry");
    executor_rbac(&ns.name);
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    // `limit` alone: retryPolicy OnFailure (workflow_types.go:2117-2126) retries the deadline's
    // `Failed` node; each new pod sticks and is failed again, three pods in all.
    let plain = "    retryStrategy:\n      limit: 2\n";
    c.apply(&ns.name, &workflow_with("plain", &image, plain));
    // With the expression: evaluated after the limit check (operator.go:1114-1124), it refuses.
    c.apply(&ns.name, &workflow_with("expr", &image, RETRY));
    let plain = wait_workflow(&ns.name, "plain", "Failed");
    let expr = wait_workflow(&ns.name, "expr", "Failed");
    std::thread::sleep(Duration::from_secs(10));
    let tried = |wf: &Value| -> usize {
        wf["status"]["nodes"]
            .as_object()
            .map(|nodes| nodes.values().filter(|n| n["type"] == "Pod").count())
            .unwrap_or_default()
    };
    assert_eq!(
        tried(&plain),
        3,
        "limit 2: three attempts: {:#}",
        plain["status"]
    );
    assert_eq!(pods.uids("plain-").len(), 3);
    assert_eq!(
        tried(&expr),
        1,
        "the expression stops at once: {:#}",
        expr["status"]
    );
    assert_eq!(pods.uids("expr-").len(), 1);
    figure(
        "argo",
        Mode::Watch,
        "retry",
        &format!(
            "limit_alone_pods=3 with_expression_pods=1 seconds_with_expression={}",
            seconds_between(
                expr["metadata"]["creationTimestamp"]
                    .as_str()
                    .expect("created"),
                expr["status"]["finishedAt"].as_str().expect("finishedAt")
            )
        ),
    );
}
