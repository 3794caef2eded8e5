//! Tekton Pipelines v1.0.0 under pullcheck, on the real cluster: Tekton's own CRDs, controller
//! and webhook, built from its Go module (`tests/cluster/tekton`, by
//! `tests/cluster/build-tekton.sh`) with the images a TaskRun's pod is made of (entrypoint, nop,
//! workingdirinit, sidecarlogresults), installed from the `config/` manifests the module ships;
//! then a TaskRun of one step (`command: ["true"]`) whose image is the case's:
//!
//! 1. a missing tag in a watched namespace (`mode: watch`): the TaskRun ends `Succeeded=False`
//!    and Tekton made one pod. Two routes end it, and which one wins is a race (see "Two rules
//!    race" below): the watcher's (`reason: Failed`, the kubelet's deadline sentence, the pod
//!    kept with its `ConfigIssue`), 13 of the 15 watched pods measured, or Tekton's own
//!    `ImagePullBackOff` rule (`reason: TaskRunImagePullFailed`, the pod deleted by Tekton);
//! 2. a missing tag in an injected namespace (`mode: init`): `reason: Failed`, `init container
//!    failed, "pullcheck" exited with code 3` 2 to 3 s after the pod's creation, the pod kept;
//! 3. a good TaskRun `Succeeded` in a watched namespace, its pod untouched, in the same time
//!    as in a namespace without pullcheck;
//! 4. the control, a namespace nobody watches: Tekton fails the TaskRun **itself** (`reason:
//!    TaskRunImagePullFailed`) at the step's first `ImagePullBackOff`, 38 to 42 s after the
//!    pod's creation, and deletes the pod: it does not wait for ever, with its shipped
//!    configuration (`default-imagepullbackoff-timeout` unset, that is 0);
//! 5. a PipelineRun of one task with `retries: 1` in a watched namespace: one pod per attempt
//!    (`<taskrun>-pod`, `<taskrun>-pod-retry1`), then `Failed`.
//!
//! # What Tekton does, read in its source (module `github.com/tektoncd/pipeline@v1.0.0`)
//!
//! ## Building it (`tests/cluster/build-tekton.sh`)
//! - Six commands from the module as it is (no quirk): `controller`, `webhook`, and the pod's
//!   `entrypoint`, `nop`, `workingdirinit`, `sidecarlogresults`. The controller refuses to start
//!   without all six image flags (`-entrypoint-image`, `-nop-image`, `-sidecarlogresults-image`,
//!   `-workingdirinit-image`, `-shell-image`, `-shell-image-win`: cmd/controller/main.go:53-58,
//!   checked by `Images.Validate`, pkg/apis/pipeline/images.go:44-65, main.go:64).
//! - Tekton has no version ldflag; its one version stamp is knative's changeset
//!   (`knative.dev/pkg/changeset.Get`, the `vcs.revision` Go stamps in a git checkout), which the
//!   controller writes into every pod's and TaskRun's `pipeline.tekton.dev/release` annotation
//!   (pkg/pod/pod.go:463, pkg/reconciler/taskrun/taskrun.go:729) and its logs' `commit`. The
//!   module proxy records no origin commit for v1.0.0, so the script sets it to `v1.0.0` (-X).
//! - Measured: cold build 10 min 5 s wall (4 min 9 s user, 57 s system; load average 10 to 20
//!   from other builds on 2 cores); after a change of the key 30 s (the Go build cache; the same
//!   binaries, byte for byte); cached 0.05 s. Sizes (static, stripped): controller
//!   78,160,034 B, webhook 60,891,298 B, sidecarlogresults 50,700,450 B, entrypoint 45,322,402 B,
//!   workingdirinit 1,700,002 B, nop 1,667,234 B; the cache folder 230 MiB.
//!
//! ## The images (ko, `.ko.yaml` and tekton/publish.yaml in the module)
//! - ko puts a command at `/ko-app/<name>` (mode 0555), makes it the entrypoint, appends
//!   `/ko-app` to the base's `PATH`, sets `KO_DATA_PATH=/var/run/ko` and always adds that
//!   folder (the command's `kodata/`, if any: none of Tekton's has one in the module). The
//!   base is `cgr.dev/chainguard/static` (user 65532 `nonroot`, `/tmp` 1777, `/etc/passwd`);
//!   entrypoint, nop and workingdirinit get a Linux+Windows "combined" image of the same base
//!   (tekton/publish.yaml:116-133). So ours: one layer with `ko-app/<name>`, `var/run/ko/`,
//!   `tmp/` (1777), `etc/passwd` and `etc/group` (root, nonroot 65532), user 65532, the
//!   entrypoint and env as ko sets them. No CA certificates: nothing here speaks TLS outward.
//! - The paths are load-bearing: the controller's pod runs `/ko-app/entrypoint init
//!   /ko-app/entrypoint /tekton/bin/entrypoint step-…` in the init container `prepare`
//!   (pkg/pod/pod.go:583-607), `/ko-app/workingdirinit` (pkg/pod/workingdir_init.go:67),
//!   `/ko-app/sidecarlogresults` (pod.go:633).
//!
//! ## The install (config/, changes explained)
//! - Every file of `config/` but `events.yaml` (the CloudEvents controller, `cmd/events`, not
//!   built: nothing here sends events) and `resolvers/` (remote resolution, its own namespace and
//!   a git base image), through kustomize with `namespace: pc-tekton` (it also rewrites the
//!   bindings' subjects, the webhooks' and CRD conversion's service namespace).
//! - Images: the controller's and webhook's `ko://…` images, and the controller's args list
//!   (config/controller.yaml:65-81) replaced whole: our entrypoint, nop, sidecarlogresults and
//!   workingdirinit images; `-shell-image` the cluster's `tools:1` (busybox-like: `sh`, `cat`,
//!   `touch`, `chmod`, what the `place-scripts` init container of a `script:` step runs,
//!   pkg/pod/script.go:81-101, 180-196) instead of `cgr.dev/chainguard/busybox`, which the node
//!   cannot pull here; `-shell-image-win` as shipped (only for Windows nodes).
//! - The webhook's ClusterRole may `get` the namespace `tekton-pipelines` and update its
//!   finalizers, by name (config/200-clusterrole.yaml:128-138): knative's webhook makes that
//!   namespace the owner of its webhook configurations. kustomize does not rewrite
//!   `resourceNames`, so both rules name `pc-tekton` (else the webhook logs "failed to fetch
//!   namespace … forbidden" on every reconcile). With it, deleting `pc-tekton` also deletes the
//!   three webhook configurations (their owner).
//! - `config-defaults` and `feature-flags` as shipped: the control is Tekton's default.
//! - Remove it all: `kubectl delete namespace pc-tekton`, then `kubectl delete
//!   crd,clusterrole,clusterrolebinding -l app.kubernetes.io/part-of=tekton-pipelines` and
//!   `kubectl delete crd resolutionrequests.resolution.tekton.dev` (unlabelled).
//!
//! ## A TaskRun's pod
//! - Name `<taskrun>-pod` (`-pod-retry<N>` for a retry: pod.go:476-488), label
//!   `tekton.dev/taskRun=<taskrun>`, owned by the TaskRun, `restartPolicy: Never` (pod.go:497),
//!   `activeDeadlineSeconds` the TaskRun's timeout × 1.5 (5400 for the default 60 min,
//!   pod.go:470; the watcher lowers it to 1). Init container `prepare` (the entrypoint image),
//!   then `place-scripts` for a `script:` step, then one container `step-<name>` per step.
//! - A step without `command` makes the controller ask the registry for the image's entrypoint
//!   before it makes a pod (pkg/pod/entrypoint_lookup.go:53-83): the TaskRuns here give one.
//! - While the pod waits on a pull, the TaskRun reads `Succeeded=Unknown`, `reason:
//!   PullImageFailed`, "build step \"step-run\" is pending with reason \"<the kubelet's
//!   message>\"" (pkg/pod/status.go:631-632, 847-853).
//!
//! ## Tekton's own rule for `ImagePullBackOff` (the control's expectation)
//! - Every reconcile, before it reads the pod, `checkPodFailed` looks at the steps' waiting
//!   reasons **as the TaskRun's status last recorded them** (taskrun.go:192, 243-301):
//!   `ImagePullBackOff` or `InvalidImageName` (taskrun.go:106-109) fails the TaskRun, `reason:
//!   TaskRunImagePullFailed`, "the step \"run\" in TaskRun \"…\" failed to pull the image \"\".
//!   The pod errored with the message: \"Back-off pulling image …\"" (taskrun.go:268-270; the
//!   image is the step's `imageID`, empty for a container that never started), unless
//!   `default-imagepullbackoff-timeout` (config-defaults; unset = 0 = "fail fast",
//!   config/config-defaults.yaml:90-93, pkg/apis/config/default.go:52, 207-212) is not 0: then
//!   it waits that long from the pod's `Initialized`/`PodReadyToStartContainers` transition
//!   (taskrun.go:251-266). `ErrImagePull` alone never fails it.
//! - Failing it (`failTaskRun`, taskrun.go:785-821) **deletes the pod** (:813): the kubelet's and
//!   pullcheck's words on it go with it (the Events stay, an hour).
//! - Measured, shipped defaults, control: `TaskRunImagePullFailed` 41, 42 and 38 s after the
//!   pod's creation, the pod deleted. With `default-imagepullbackoff-timeout: 5m` (set by hand,
//!   then removed): still `Unknown`/`PullImageFailed` after 130 s, failed 362 s after the pod's
//!   creation (the first reconcile past 5 min: the next `ImagePullBackOff` flip).
//!
//! ## A pod the kubelet failed (`DeadlineExceeded`, or an init container)
//! - The reconcile reads the pod by `status.podName` (taskrun.go:586-588) and converts its
//!   status: a pod `Failed` makes `DidTaskRunFail` true (pkg/pod/status.go:666-668), so
//!   `Succeeded=False`, `reason: Failed` (status.go:602-609) with `getFailureMessage`
//!   (status.go:734-773): an evicted pod's message; else the first init container that
//!   terminated non-zero, "init container failed, \"<name>\" exited with code <n>"
//!   (:744-747, 776-792); else a step terminated non-zero; else **the pod's `status.message`**
//!   (:757-759): "Pod was active on the node longer than the specified deadline" (the step
//!   container is still `waiting` when Tekton first sees the pod `Failed`; the kubelet marks it
//!   `ContainerStatusUnknown`, 137, a moment later, after the TaskRun is done).
//! - The pod is **kept**: a done TaskRun only stops sidecars (taskrun.go:148-181); nothing
//!   deletes it but the TaskRun's deletion (owner reference).
//! - No pod is made again for a running TaskRun while the pod named in its status exists;
//!   Tekton **re-creates a missing one** (the pod `NotFound` "will result in the Pod being
//!   created below", taskrun.go:586-590, 648-655), hence the watcher's deadline, never a
//!   delete.
//! - pullcheck's init container's termination message (its verdict) is read by
//!   `termination.ParseMessage` as Tekton results JSON and ignored: only its exit code reaches
//!   the TaskRun (status.go:776-792). Its words: `kubectl logs <taskrun>-pod -c pullcheck`.
//!
//! ## Two rules race, in watch mode
//! The kubelet publishes a failed pull in the pod's status at its *next* sync of the pod: it
//! computes the status before it starts containers (k8s.io/kubernetes v1.37.2
//! pkg/kubelet/kubelet.go:2108) and records the pull's error after (:2267-2268); with nothing
//! else changing in the pod the next sync comes after the back-off of a failed sync, 10 s with
//! a 50 % jitter (kubelet.go:223, pod_workers.go:1535-1547). A Tekton pod's step is started in
//! the sync that sees `prepare` end, so its `ErrImagePull` appears 12 to 17 s after the pod's
//! creation (the kubelet's `Failed` Event at 1 to 2 s); a bare pod whose init container runs 2 s
//! shows the same (18 s). Then:
//! - the watcher sees `ErrImagePull` (0 s grace for a missing manifest) and sets the deadline
//!   within about a second; the kubelet fails the pod and Tekton marks the TaskRun `Failed` 1 to
//!   2 s later: 14 to 19 s after the pod's creation (median 16 s, 12 first pods; a retry's
//!   pod 5 s), 13 of 15 pods;
//! - but if the kubelet publishes `ImagePullBackOff` before it fails the pod (one run: the two
//!   1 s apart), `checkPodFailed` acts on the recorded `ImagePullBackOff` first and the TaskRun
//!   ends `TaskRunImagePullFailed`, the pod deleted (4 s after its creation, that run); and once
//!   the watcher logged its look at the pod 24 s after the kubelet showed `ErrImagePull`, 1 s
//!   after Tekton's own rule had ended the TaskRun (41 s) and deleted the pod.
//!
//! So the test accepts both reasons, and checks the watcher's marks when the pod is kept.
//!
//! ## Retries
//! - `spec.retries` (TaskRun) or `retries` (a PipelineTask, copied to its TaskRun's
//!   `spec.retries`, pkg/reconciler/pipelinerun/pipelinerun.go:1016) is a count, 0 by default:
//!   a TaskRun `Succeeded=False` that is not cancelled is retried while
//!   `len(status.retriesStatus) < spec.retries` (taskrun.go:366-368,
//!   pkg/apis/pipeline/v1/taskrun_types.go:483-486); `retryTaskRun` archives the status, clears
//!   `podName` (taskrun.go:1127-1137) and the next reconcile makes `<taskrun>-pod-retry<N>`.
//!   There is no condition on the reason: every attempt makes a pod that is failed again. Never
//!   for ever: at most `retries` + 1 pods. Leave `retries` unset (0) for steps whose image may
//!   be missing; pullcheck's owner bound (10 pods of one owner) matters only from `retries: 9`.

use serde_json::Value;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{Controller, DEADLINE, Mode, figure, image_from, image_root, kustomized, tag_of};
use crate::harness::{
    Cluster, Namespace, built_by, cluster, condition, minutes, seconds_between, status_of, wait_for,
};
use crate::watch::PodWatch;

/// The Tekton Pipelines version `tests/cluster/tekton/go.mod` requires.
const VERSION: &str = "v1.0.0";
/// The controller's and webhook's namespace.
const NAMESPACE: &str = "pc-tekton";
/// The controller's and the webhook's Deployments.
const CONTROLLER: Controller = Controller {
    namespace: NAMESPACE,
    deployments: &[
        "deployment/tekton-pipelines-controller",
        "deployment/tekton-pipelines-webhook",
    ],
};
/// ko's environment: chainguard/static's PATH with `/ko-app` appended, and `KO_DATA_PATH`.
const PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/ko-app";
const KO_DATA_PATH: &str = "KO_DATA_PATH=/var/run/ko";
/// The user of ko's base image (`nonroot`), which the Deployments also ask for.
const NONROOT: &str = "65532";
/// The commands build-tekton.sh builds, each an image of its own.
const COMMANDS: [&str; 6] = [
    "controller",
    "webhook",
    "entrypoint",
    "nop",
    "workingdirinit",
    "sidecarlogresults",
];
/// The files of `config/` installed (kustomize takes files or kustomizations, and `config/`
/// has no kustomization): all but `events.yaml` and `resolvers/`.
const CONFIG: [&str; 32] = [
    "100-namespace/100-namespace.yaml",
    "200-clusterrole.yaml",
    "200-role.yaml",
    "200-serviceaccount.yaml",
    "201-clusterrolebinding.yaml",
    "201-rolebinding.yaml",
    "300-crds/300-customrun.yaml",
    "300-crds/300-pipeline.yaml",
    "300-crds/300-pipelinerun.yaml",
    "300-crds/300-resolutionrequest.yaml",
    "300-crds/300-stepaction.yaml",
    "300-crds/300-task.yaml",
    "300-crds/300-taskrun.yaml",
    "300-crds/300-verificationpolicy.yaml",
    "500-webhooks.yaml",
    "clusterrole-aggregate-edit.yaml",
    "clusterrole-aggregate-view.yaml",
    "config-defaults.yaml",
    "config-events.yaml",
    "config-feature-flags.yaml",
    "config-info.yaml",
    "config-leader-election-controller.yaml",
    "config-leader-election-events.yaml",
    "config-leader-election-webhook.yaml",
    "config-logging.yaml",
    "config-observability.yaml",
    "config-registry-cert.yaml",
    "config-spire.yaml",
    "config-tracing.yaml",
    "controller.yaml",
    "webhook.yaml",
    "webhook-hpa.yaml",
];
/// The Windows shell image as config/controller.yaml:80 names it (never pulled on Linux).
const SHELL_WIN: &str = "mcr.microsoft.com/powershell:nanoserver@sha256:b6d5ff841b78bdf2dfed7550000fd4f3437385b8fa686ec0f010be24777654d6";
/// The TaskRun reconciler's leader-election Lease (knative: one bucket).
const TASKRUN_LEASE: &str = "tekton-pipelines-controller.github.com.tektoncd.pipeline.pkg.reconciler.taskrun.reconciler.00-of-01";
const PIPELINERUN_LEASE: &str = "tekton-pipelines-controller.github.com.tektoncd.pipeline.pkg.reconciler.pipelinerun.reconciler.00-of-01";

/// Tekton installed: controller leading, webhook admitting.
pub struct Tekton {
    /// The image of each command, by name.
    pub images: Vec<(&'static str, String)>,
    _namespace: Namespace,
}

impl Tekton {
    /// The image of command `name`.
    pub fn image(&self, name: &str) -> &str {
        self.images
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, i)| i.as_str())
            .unwrap_or_else(|| panic!("no image for {name}"))
    }
}

/// Pushes one image per command of `cache`, laid out as ko lays them out (the module doc), to
/// the cluster's registry, tagged with the cache folder's key (`v1.0.0-<hash>`).
pub fn tekton_images(c: &Cluster, cache: &Path) -> Vec<(&'static str, String)> {
    use std::os::unix::fs::PermissionsExt;
    let tag = tag_of(cache, "tekton");
    assert!(
        tag.starts_with(VERSION),
        "{tag}: built for Tekton {VERSION}"
    );
    COMMANDS
        .iter()
        .map(|&name| {
            let root = image_root(&[(&cache.join(name), &format!("ko-app/{name}"))]);
            let root = root.path();
            // ko's layout: the binary 0555, an empty KO_DATA_PATH, the base's users.
            std::fs::set_permissions(
                root.join("ko-app").join(name),
                std::fs::Permissions::from_mode(0o555),
            )
            .expect("chmod the binary");
            std::fs::create_dir_all(root.join("var/run/ko")).expect("var/run/ko");
            std::fs::create_dir_all(root.join("etc")).expect("etc");
            std::fs::write(
                root.join("etc/passwd"),
                "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
            )
            .expect("write etc/passwd");
            std::fs::write(root.join("etc/group"), "root:x:0:\nnonroot:x:65532:\n")
                .expect("write etc/group");
            let image = format!("{}/tekton/{name}:{tag}", c.registry);
            let entrypoint = format!("[\"/ko-app/{name}\"]");
            image_from(
                root,
                &image,
                &[
                    "--entrypoint",
                    &entrypoint,
                    "--user",
                    NONROOT,
                    "--env",
                    PATH,
                    "--env",
                    KO_DATA_PATH,
                ],
            );
            (name, image)
        })
        .collect()
}

/// The kustomization over `manifests/config`: our namespace, our images and the controller's
/// image flags, the webhook's namespace rules (the module doc says why each).
fn kustomization(t: &dyn Fn(&str) -> String, shell: &str) -> String {
    let resources: String = CONFIG
        .iter()
        .map(|f| format!("- manifests/config/{f}\n"))
        .collect();
    format!(
        r#"apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {NAMESPACE}
resources:
{resources}patches:
- target: {{group: apps, version: v1, kind: Deployment, name: tekton-pipelines-controller}}
  patch: |
    - op: replace
      path: /spec/template/spec/containers/0/image
      value: {controller}
    - op: replace
      path: /spec/template/spec/containers/0/args
      value:
      - -entrypoint-image
      - {entrypoint}
      - -nop-image
      - {nop}
      - -sidecarlogresults-image
      - {sidecarlogresults}
      - -workingdirinit-image
      - {workingdirinit}
      - -shell-image
      - {shell}
      - -shell-image-win
      - "{SHELL_WIN}"
- target: {{group: apps, version: v1, kind: Deployment, name: tekton-pipelines-webhook}}
  patch: |
    - op: replace
      path: /spec/template/spec/containers/0/image
      value: {webhook}
- target: {{group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole, name: tekton-pipelines-webhook-cluster-access}}
  patch: |
    - op: test
      path: /rules/5/resources/0
      value: namespaces
    - op: replace
      path: /rules/5/resourceNames
      value: [{NAMESPACE}]
    - op: test
      path: /rules/6/resources/0
      value: namespaces/finalizers
    - op: replace
      path: /rules/6/resourceNames
      value: [{NAMESPACE}]
"#,
        controller = t("controller"),
        webhook = t("webhook"),
        entrypoint = t("entrypoint"),
        nop = t("nop"),
        sidecarlogresults = t("sidecarlogresults"),
        workingdirinit = t("workingdirinit"),
    )
}

/// Tekton installed once per test binary as the project ships it (every namespace watched),
/// from the manifests in the module, by `kubectl apply --server-side` (the CRDs are too big for
/// a client-side apply's annotation; `--force-conflicts`: a re-run takes back what the webhook
/// wrote in objects that outlive the namespace).
pub fn tekton() -> &'static Tekton {
    static TEKTON: OnceLock<Tekton> = OnceLock::new();
    TEKTON.get_or_init(|| {
        let c = cluster();
        let started = Instant::now();
        let cache = built_by("build-tekton.sh", "controller")
            .parent()
            .expect("the cache folder")
            .to_path_buf();
        let images = tekton_images(c, &cache);
        let namespace = c.namespace(NAMESPACE);
        let image = |name: &str| -> String {
            images
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, i)| i.clone())
                .unwrap_or_else(|| panic!("no image for {name}"))
        };
        let rendered = kustomized(&cache, &kustomization(&image, &c.tools_image()));
        assert!(
            !rendered.contains("ko://"),
            "every ko:// image replaced:\n{rendered}"
        );
        let out = c.kubectl_output(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            Some(&rendered),
        );
        assert!(
            out.status.success(),
            "kubectl apply --server-side of Tekton's config/: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        c.kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/taskruns.tekton.dev",
            "crd/pipelineruns.tekton.dev",
            "--timeout=60s",
        ]);
        // The reconcilers act only once they lead (knative's leader election, one Lease each).
        CONTROLLER.started(&[
            &format!("lease/{TASKRUN_LEASE}"),
            &format!("lease/{PIPELINERUN_LEASE}"),
        ]);
        // The webhook admits TaskRuns once it has made its certificate and configured its
        // webhooks (knative): a server-side dry run goes through it.
        let probe = taskrun("probe", &c.tools_image(), None);
        wait_for("the webhook to admit a TaskRun", minutes(2), || {
            let out = c.kubectl_output(
                &["create", "--dry-run=server", "-n", NAMESPACE, "-f", "-"],
                Some(&probe),
            );
            if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            }
        });
        println!(
            "tekton {VERSION}: controller {} leading, webhook admitting, in {:.1} s",
            image("controller"),
            started.elapsed().as_secs_f64()
        );
        Tekton {
            images,
            _namespace: namespace,
        }
    })
}

/// A TaskRun of one step `run` running `image` with command `true` (given, so that the
/// controller makes the pod without asking the registry for the image's entrypoint), with the
/// step's `imagePullPolicy` if any.
fn taskrun(name: &str, image: &str, pull_policy: Option<&str>) -> String {
    let policy = pull_policy
        .map(|p| format!("      imagePullPolicy: {p}\n"))
        .unwrap_or_default();
    format!(
        r#"apiVersion: tekton.dev/v1
kind: TaskRun
metadata:
  name: {name}
spec:
  taskSpec:
    steps:
    - name: run
      image: {image}
{policy}      command: ["true"]
"#
    )
}

/// The TaskRun `name` in `ns`.
fn get_taskrun(ns: &str, name: &str) -> Option<Value> {
    cluster().get(ns, &format!("taskruns.tekton.dev/{name}"))
}

/// The pods of TaskRun `name` (Tekton's label), as JSON items.
fn taskrun_pods(ns: &str, name: &str) -> Vec<Value> {
    let selector = format!("tekton.dev/taskRun={name}");
    let out = cluster().kubectl(&["get", "pods", "-n", ns, "-l", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("pod list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The `Succeeded` condition of a Tekton run (TaskRun or PipelineRun), whatever its status.
fn succeeded(run: &Value) -> Option<&Value> {
    run["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Succeeded")
}

/// Waits for the TaskRun (`kind` `taskruns`) or PipelineRun (`pipelineruns`) `name` to be done
/// (`Succeeded` `True` or `False`) within `bound`; returns it.
fn wait_done(ns: &str, kind: &str, name: &str, bound: Duration) -> Value {
    wait_for(&format!("{kind} {ns}/{name} done"), bound, || {
        let run = cluster().get(ns, &format!("{kind}.tekton.dev/{name}"));
        let status = run
            .as_ref()
            .and_then(|r| succeeded(r))
            .and_then(|c| c["status"].as_str().map(String::from));
        match (run, status.as_deref()) {
            (Some(r), Some("True" | "False")) => Ok(r),
            (run, _) => Err(status_of(&run)),
        }
    })
}

/// Field `field` of the `Succeeded` condition, as a string ("" when absent).
fn cond(run: &Value, field: &str) -> String {
    succeeded(run)
        .and_then(|c| c[field].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The missing-tag case in `mode` (a TaskRun `missing`, `pull_policy` on its step): waits for
/// its end, checks that Tekton made one pod and never another; returns the TaskRun, the pod's
/// creation time, and the pod as it is at the end (`None`: deleted, by Tekton's own rule).
fn missing_tag(mode: Mode, ns: &str, pull_policy: Option<&str>) -> (Value, String, Option<Value>) {
    let c = cluster();
    let pods = PodWatch::start(ns);
    let image = format!("{}/tools:no-such-tag", mode.registry());
    c.apply(ns, &taskrun("missing", &image, pull_policy));
    let pod = wait_for("the TaskRun's pod", minutes(1), || {
        taskrun_pods(ns, "missing")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_taskrun(ns, "missing")))
    });
    let created = pod["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created")
        .to_string();
    let done = wait_done(ns, "taskruns", "missing", minutes(3));
    assert_eq!(cond(&done, "status"), "False", "{:#}", done["status"]);
    assert_eq!(done["status"]["podName"], "missing-pod");
    // Never made again: the same single pod from first to last, and none after the end.
    std::thread::sleep(Duration::from_secs(15));
    let uids = pods.uids("missing-pod");
    assert_eq!(uids.len(), 1, "one pod from first to last: {uids:?}");
    assert_eq!(
        uids[0],
        pod["metadata"]["uid"].as_str().unwrap_or_default(),
        "the pod first seen"
    );
    let now = taskrun_pods(ns, "missing");
    assert!(now.len() <= 1, "{now:#?}");
    (done, created, now.into_iter().next())
}

#[test]
fn a_taskrun_step_with_a_missing_tag_fails_the_taskrun_in_watch_mode() {
    let _ = tekton();
    let ns = Mode::Watch.namespace("pc-tekton-missing");
    let (done, created, kept) = missing_tag(Mode::Watch, &ns.name, None);
    let reason = cond(&done, "reason");
    let message = cond(&done, "message");
    let ended = cond(&done, "lastTransitionTime");
    let seconds = seconds_between(&created, &ended);
    let detail = match reason.as_str() {
        // The watcher's route: the kubelet failed the pod, Tekton took the pod's message
        // (getFailureMessage, pkg/pod/status.go:757-759) and kept the pod.
        "Failed" => {
            assert_eq!(message, DEADLINE, "{:#}", done["status"]);
            let pod = kept.expect("the pod kept (a done TaskRun deletes no pod)");
            assert_eq!(pod["status"]["phase"], "Failed", "{:#}", pod["status"]);
            assert_eq!(
                pod["status"]["reason"], "DeadlineExceeded",
                "{:#}",
                pod["status"]
            );
            assert_eq!(pod["spec"]["activeDeadlineSeconds"], 1);
            let issue = condition(&pod, "ConfigIssue").expect("the watcher's condition, kept");
            let words = issue["message"].as_str().unwrap_or_default();
            assert!(
                words.contains("no-such-tag") && words.contains("\"step-run\""),
                "the condition names the step's container and its image: {words}"
            );
            // Tekton's own init container ran (our entrypoint image is there): the step's
            // image is what stuck.
            let prepare = &pod["status"]["initContainerStatuses"][0];
            assert_eq!(prepare["name"], "prepare", "{prepare:#}");
            assert_eq!(prepare["state"]["terminated"]["exitCode"], 0, "{prepare:#}");
            let after = seconds_between(
                issue["lastTransitionTime"]
                    .as_str()
                    .expect("condition time"),
                &ended,
            );
            assert!(
                after <= 5,
                "the TaskRun ended {after} s after the watcher's condition"
            );
            format!(
                "condition={:?} condition_to_end={after}",
                issue["reason"].as_str().unwrap_or_default()
            )
        }
        // Tekton's own route won the race (the module doc): the step's ImagePullBackOff,
        // recorded before the kubelet failed the pod; Tekton deleted the pod.
        "TaskRunImagePullFailed" => {
            assert!(
                message.contains("no-such-tag") && message.contains("Back-off pulling image"),
                "{message}"
            );
            assert!(kept.is_none(), "Tekton deletes the pod (taskrun.go:813)");
            "pod=deleted_by_tekton".to_string()
        }
        other => panic!("reason {other}: {:#}", done["status"]),
    };
    figure(
        "tekton",
        Mode::Watch,
        "missing",
        &format!("seconds={seconds} status=False reason={reason} message={message:?} {detail}"),
    );
}

#[test]
fn a_taskrun_step_with_a_missing_tag_fails_the_taskrun_in_init_mode() {
    let _ = tekton();
    let ns = Mode::Init.namespace("pc-tekton-missing-init");
    // `Always`: the init container then needs no proof that the node lacks the image; the
    // node's list of image names (at most 5 per image) cannot give it once the shared tools
    // image is listed under 5 names (one per registry address the tests used).
    let (done, created, kept) = missing_tag(Mode::Init, &ns.name, Some("Always"));
    let seconds = seconds_between(&created, &cond(&done, "lastTransitionTime"));
    let message = cond(&done, "message");
    assert_eq!(cond(&done, "reason"), "Failed", "{:#}", done["status"]);
    // The first init container that failed (getFailureMessage, status.go:744-747): pullcheck,
    // which comes first.
    assert_eq!(
        message, "init container failed, \"pullcheck\" exited with code 3",
        "{:#}",
        done["status"]
    );
    let pod = kept.expect("the pod kept");
    assert_eq!(pod["status"]["phase"], "Failed", "{:#}", pod["status"]);
    let first = &pod["status"]["initContainerStatuses"][0];
    assert_eq!(first["name"], "pullcheck", "{first:#}");
    assert_eq!(first["state"]["terminated"]["exitCode"], 3, "{first:#}");
    let verdict = first["state"]["terminated"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        verdict.contains("no-such-tag") && verdict.contains("tag_missing"),
        "pullcheck's verdict in its termination message: {verdict}"
    );
    // Tekton's `prepare` never ran; its step never pulled.
    assert!(
        pod["status"]["initContainerStatuses"][1]["state"]["terminated"].is_null(),
        "{:#}",
        pod["status"]["initContainerStatuses"]
    );
    figure(
        "tekton",
        Mode::Init,
        "missing",
        &format!("seconds={seconds} status=False reason=Failed message={message:?}"),
    );
}

/// A good TaskRun in a namespace of `mode`: `Succeeded`, one pod; the seconds from the
/// TaskRun's creation to its end, and its pod.
fn good(mode: Mode, name: &str) -> (i64, Value) {
    let c = cluster();
    let ns = mode.namespace(name);
    c.apply(
        &ns.name,
        &taskrun("good", &format!("{}/tools:1", mode.registry()), None),
    );
    let done = wait_done(&ns.name, "taskruns", "good", minutes(3));
    assert_eq!(cond(&done, "status"), "True", "{:#}", done["status"]);
    assert_eq!(cond(&done, "reason"), "Succeeded");
    let pods = taskrun_pods(&ns.name, "good");
    assert_eq!(pods.len(), 1, "{pods:#?}");
    let seconds = seconds_between(
        done["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        done["status"]["completionTime"]
            .as_str()
            .expect("completionTime"),
    );
    (seconds, pods.into_iter().next().expect("the pod"))
}

#[test]
fn a_good_taskrun_succeeds_untouched_in_watch_mode() {
    let t = tekton();
    // A first run pays the entrypoint's and the tools image's first pull; then the two timed.
    let _ = good(Mode::Without, "pc-tekton-good-first");
    let (watched, pod) = good(Mode::Watch, "pc-tekton-good");
    let (without, _) = good(Mode::Without, "pc-tekton-good-without");
    assert!(
        condition(&pod, "ConfigIssue").is_none(),
        "never given the condition"
    );
    // Tekton's own deadline (60 min × 1.5, pod.go:470), untouched.
    assert_eq!(
        pod["spec"]["activeDeadlineSeconds"], 5400,
        "no deadline set"
    );
    let inits: Vec<&str> = pod["spec"]["initContainers"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(inits, ["prepare"], "nothing added in watch mode");
    assert_eq!(
        pod["spec"]["initContainers"][0]["image"].as_str(),
        Some(t.image("entrypoint")),
        "prepare runs our entrypoint image"
    );
    assert_eq!(
        pod["metadata"]["annotations"]["pipeline.tekton.dev/release"], VERSION,
        "the changeset build-tekton.sh sets"
    );
    figure(
        "tekton",
        Mode::Watch,
        "good",
        &format!("seconds={watched} without={without} status=Succeeded"),
    );
}

#[test]
fn without_pullcheck_tekton_fails_a_missing_tag_itself_at_the_first_image_pull_back_off() {
    let c = cluster();
    let _ = tekton();
    let ns = Mode::Without.namespace("pc-tekton-control");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(&ns.name, &taskrun("control", &image, None));
    let pod = wait_for("the control TaskRun's pod", minutes(1), || {
        taskrun_pods(&ns.name, "control")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_taskrun(&ns.name, "control")))
    });
    let made = Instant::now();
    let created = pod["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created")
        .to_string();
    // Tekton's own rule (checkPodFailed, taskrun.go:243-270, default-imagepullbackoff-timeout
    // 0): the first ImagePullBackOff the TaskRun recorded fails it. Measured 38 to 42 s.
    let done = wait_done(&ns.name, "taskruns", "control", minutes(2));
    let seconds = seconds_between(&created, &cond(&done, "lastTransitionTime"));
    let reason = cond(&done, "reason");
    let message = cond(&done, "message");
    assert_eq!(cond(&done, "status"), "False", "{:#}", done["status"]);
    assert_eq!(reason, "TaskRunImagePullFailed", "{:#}", done["status"]);
    assert!(
        message.starts_with("the step \"run\" in TaskRun \"control\" failed to pull the image")
            && message.contains("Back-off pulling image")
            && message.contains("no-such-tag"),
        "{message}"
    );
    // Until two minutes after the pod's creation: the pod deleted by Tekton (failTaskRun,
    // taskrun.go:813), none made again, never the watcher's condition.
    std::thread::sleep(Duration::from_secs(120).saturating_sub(made.elapsed()));
    assert!(
        taskrun_pods(&ns.name, "control").is_empty(),
        "Tekton deletes the pod"
    );
    assert_eq!(
        pods.uids("control-pod").len(),
        1,
        "one pod, never made again"
    );
    assert!(pods.conditioned("control-pod").is_none());
    let after = get_taskrun(&ns.name, "control").expect("the TaskRun");
    assert_eq!(cond(&after, "reason"), "TaskRunImagePullFailed");
    figure(
        "tekton",
        Mode::Without,
        "control",
        &format!(
            "seconds={seconds} status=False reason={reason} pod=deleted_by_tekton message={message:?}"
        ),
    );
}

#[test]
fn a_pipeline_task_with_retries_makes_one_pod_per_attempt_in_watch_mode() {
    let c = cluster();
    let _ = tekton();
    let ns = Mode::Watch.namespace("pc-tekton-retries");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(
        &ns.name,
        &format!(
            r#"apiVersion: tekton.dev/v1
kind: PipelineRun
metadata:
  name: retried
spec:
  pipelineSpec:
    tasks:
    - name: build
      retries: 1
      taskSpec:
        steps:
        - name: run
          image: {image}
          command: ["true"]
"#
        ),
    );
    let done = wait_done(&ns.name, "pipelineruns", "retried", minutes(3));
    assert_eq!(cond(&done, "status"), "False", "{:#}", done["status"]);
    assert_eq!(cond(&done, "reason"), "Failed", "{:#}", done["status"]);
    // The PipelineTask's TaskRun (`<pipelinerun>-<task>`), retried once (taskrun.go:366-368).
    let tr = get_taskrun(&ns.name, "retried-build").expect("the PipelineTask's TaskRun");
    assert_eq!(tr["spec"]["retries"], 1);
    let archived = tr["status"]["retriesStatus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(archived.len(), 1, "{:#}", tr["status"]);
    assert_eq!(archived[0]["podName"], "retried-build-pod");
    assert_eq!(tr["status"]["podName"], "retried-build-pod-retry1");
    std::thread::sleep(Duration::from_secs(15));
    let first = pods.uids("retried-build-pod");
    // `uids` matches by prefix: the retry's pod too.
    assert_eq!(
        first.len(),
        2,
        "two pods in all, one per attempt: {first:?}"
    );
    assert_eq!(pods.uids("retried-build-pod-retry").len(), 1);
    let created = done["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created");
    let seconds = seconds_between(created, &cond(&done, "lastTransitionTime"));
    figure(
        "tekton",
        Mode::Watch,
        "retries",
        &format!(
            "seconds={seconds} status=False pods=2 taskrun_reason={} taskrun_message={:?}",
            cond(&tr, "reason"),
            cond(&tr, "message")
        ),
    );
}
