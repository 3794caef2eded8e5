//! JobSet v0.8.0 under pullcheck, on the real cluster: JobSet's CRD, controller manager and
//! webhooks, built from its Go module (`tests/cluster/jobset`, by `tests/cluster/build-jobset.sh`)
//! and installed from the kustomize tree the module ships (`config/default`), then:
//!
//! 1. a JobSet of one replicated Job whose image tag is missing, in a namespace the chart's
//!    `mode: watch` release watches, ends `Failed` (its `Failed` condition; the seconds from its
//!    pod's creation printed): the child Job was given pullcheck's `podFailurePolicy` rule at admission,
//!    the watcher's `ConfigIssue` condition fails it (`PodFailurePolicy`), and the JobSet's
//!    default failure handling fails the JobSet; one pod, kept;
//! 2. the same in a namespace of the `mode: init` release: the injected init container exits 3,
//!    the Job's `onExitCodes` rule fails it, the JobSet fails; one pod, kept;
//! 3. with `failurePolicy.maxRestarts: 1` the JobSet restarts once (a new Job, a new pod: the
//!    first, failed pod is deleted with its Job) before it fails; with a rule `FailJobSet` on
//!    `onJobFailureReasons: [PodFailurePolicy]` it fails at the first failure whatever
//!    `maxRestarts` says;
//! 4. a good JobSet (`tools:1`, `true`) completes in each mode as in a namespace without
//!    pullcheck; in watch mode nothing is added to its pod;
//! 5. without pullcheck (a namespace nobody watches) the JobSet has no condition and its pod is
//!    `Pending` after 120 s;
//! 6. JobSet's own default `restartPolicy: OnFailure` leaves the Job without a podFailurePolicy
//!    (it needs `Never`), so a pod the watcher fails is replaced by the Job controller: the JobSet
//!    does not fail until `backoffLimit` is spent (minutes), hence `restartPolicy: Never`.
//!
//! # What JobSet does, read in its source (module `sigs.k8s.io/jobset@v0.8.0`)
//!
//! ## Building it (`tests/cluster/build-jobset.sh`, measured 2026-12-06 on this machine, `nice 10`,
//! load average about 20 from the other builds and tests)
//! - The controller manager is the `main` package at the module's root (`main.go`; there is no
//!   `cmd/`): `tool sigs.k8s.io/jobset` in our go.mod, `go build … sigs.k8s.io/jobset`. The Makefile
//!   builds it with `CGO_ENABLED ?= 0` (Makefile:34) and `go build -ldflags="$(LD_FLAGS)" -o
//!   bin/manager main.go` (:152), LD_FLAGS setting `sigs.k8s.io/jobset/pkg/version.GitVersion`
//!   and `.GitCommit` (:63-65); the manager logs both at start (main.go:114).
//! - Cold: 7 min 30 s wall (2 min 47 s user, 41 s system CPU); a rebuild after a change of the
//!   key 5 s; cached 0.02-0.2 s. `manager` 52,248,738 B (49.8 MiB), static, stripped; it reports
//!   `gitVersion: v0.8.0`, `gitCommit: 09b5128d…` (the tag's commit, from the module proxy).
//!
//! ## The image and the install
//! - Dockerfile: `gcr.io/distroless/static:nonroot`, `COPY … /workspace/bin/manager .` at `/`
//!   (`WORKDIR /`), `USER 65532:65532`, `ENTRYPOINT ["/manager"]`. The Deployment runs
//!   `command: [/manager]` with `runAsNonRoot: true` (config/components/manager/manager.yaml), so
//!   the user must be numeric and non-root. Ours: one layer, `/manager` and `/tmp` (1777);
//!   `--entrypoint ["/manager"] --user 65532:65532 --workingdir / --env PATH=…` (distroless's PATH;
//!   the manager names nothing by PATH). No `/etc/passwd` (numeric user), no CA certificates
//!   (it talks TLS only to the API server, with the service account's CA).
//! - `config/default/kustomization.yaml`: namespace `jobset-system`, `namePrefix: jobset-`, the
//!   CRD (with a conversion-webhook patch), RBAC, the manager (Deployment + ConfigMap
//!   `manager-config`: `controller_manager_config.yaml`, `leaderElect: true`), the webhooks
//!   (`components/webhook`) and `components/internalcert` (an empty Secret
//!   `webhook-server-cert`), the metrics Service; `manager_webhook_patch.yaml` mounts that Secret
//!   at `/tmp/k8s-webhook-server/serving-certs`, `manager_config_patch.yaml` adds
//!   `--config=/controller_manager_config.yaml --zap-log-level=2`. The image is named
//!   `us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:main`
//!   (config/components/manager/kustomization.yaml). Our overlay changes only the namespace
//!   (`pc-jobset`) and that image; kustomize carries the namespace into the webhooks' and the
//!   CRD's service references and the ClusterRoleBindings' subjects. Requests (cpu 500m, memory
//!   128Mi) are kept: the node has room for them.
//! - The JobSet CRD is ~9,000 lines: client-side `kubectl apply` would store it whole in the
//!   `last-applied-configuration` annotation (262,144-byte limit); hence `apply --server-side`.
//! - Internal certificates: with `internalCertManagement.enable` (the default), main.go:177-185
//!   starts `cert.CertsManager` (pkg/util/cert/cert.go:51-78), open-policy-agent's cert-controller
//!   rotator: it writes a CA and a serving certificate for `jobset-webhook-service.<ns>.svc` into
//!   Secret `jobset-webhook-server-cert` of the manager's own namespace (read from the service
//!   account's `namespace` file, cert.go:37-44; names defaulted in
//!   api/config/v1alpha1/defaults.go:27-28), and the CA into the webhook configurations whose
//!   names are **fixed**: `jobset-validating-webhook-configuration`,
//!   `jobset-mutating-webhook-configuration` (cert.go:31-32). So the `jobset-` prefix must stay,
//!   and one install per cluster. The controllers and webhooks are set up only once the
//!   certificates are in place (main.go:200, 211-250), and `/readyz` fails until then
//!   (main.go:267-273): `rollout status` is the signal. Measured: the Deployment ready 10 s after
//!   `apply`, certificates ready 2 s after the manager started (the kubelet refreshed the Secret
//!   volume at once); one harmless "the object has been modified" conflict of the rotator,
//!   retried.
//! - Leader election: Lease `6d4f6a47.jobset.x-k8s.io` in the manager's namespace
//!   (defaults.go:32).
//! - The webhooks (config/components/webhook/manifests.yaml and its patches): `mjobset`/`vjobset`
//!   on JobSets, and `mpod`/`vpod` on pods **labelled `jobset.sigs.k8s.io/jobset-name`**, all
//!   `failurePolicy: Fail`. None matches batch/v1 Jobs: **the JobSet webhooks never see the Jobs
//!   the controller creates**, so nothing objects to pullcheck's Job rule. The pod webhooks only
//!   act on exclusive-placement pods (pkg/webhooks/pod_mutating_webhook.go:65-78,
//!   pod_admission_webhook.go:30-46): a pod with pullcheck's init container is admitted as is.
//!
//! ## A JobSet's Jobs and pods
//! - Defaulting (pkg/webhooks/jobset_webhook.go:105-150): `completionMode: Indexed` (:118-120)
//!   and **`restartPolicy: OnFailure` when the pod template has none (:122-125)**; the success
//!   policy `All`, DNS hostnames on.
//! - Each Job is the replicated Job's template copied whole (`Spec:
//!   *rjob.Template.Spec.DeepCopy()`, pkg/controllers/jobset_controller.go:702), named
//!   `<jobset>-<replicatedJob>-<index>`, labelled and annotated with `jobset.sigs.k8s.io/
//!   jobset-name`, `…/replicatedjob-name`, `…/restart-attempt` (the JobSet's `status.restarts`)
//!   and more, on the Job and its pod template (:765-790); created by the controller, so
//!   admission warnings about it reach only the controller's log (`KubeAPIWarningLogger`), never
//!   the JobSet's author.
//! - pullcheck's Job rule (watch mode: `podFailurePolicy` `FailJob` on `ConfigIssue`, and
//!   `podReplacementPolicy: Failed`; init mode: `FailJob` `onExitCodes` of container `pullcheck`
//!   `In [3, 4, 5, 7]`) is added at the Job's admission **only when its pod template says
//!   `restartPolicy: Never`**: a podFailurePolicy needs it. With JobSet's default `OnFailure` the
//!   Job is left as written (pullcheck warns, in the controller's log only).
//!
//! ## Failure handling (pkg/controllers/failure_policy.go, jobset_controller.go)
//! - A child Job counts as failed when it has the `Failed` condition (`JobFinished`,
//!   jobset_controller.go:818-825; classified at :303-311), whatever its reason.
//! - **No `failurePolicy`** (the default): the first failed Job fails the JobSet, condition
//!   `Failed`, reason `FailedJobs`, message "jobset failed due to one or more job failures (first
//!   failed job: <job>)" (failure_policy.go:47-57; constants.go:47-48; the message built at
//!   failure_policy.go:310-312), `status.terminalState: Failed` (:258-264), and a Warning Event
//!   of the same reason and message on the JobSet (jobset_controller.go:923-946). The condition's
//!   `lastTransitionTime` is the controller's clock at that moment (:961).
//! - A failed JobSet: its **active** Jobs are deleted (foreground), its failed Job is kept with
//!   its pods (:162-177), so the pod pullcheck failed stays for `kubectl describe`.
//! - **With a `failurePolicy`**, the rules are tried in order against the failed Jobs (the Job's
//!   `Failed` condition's `reason`: `onJobFailureReasons`; its replicated Job:
//!   `targetReplicatedJobs`; failure_policy.go:79-112, 133-152, 266-278); **no matching rule means
//!   `RestartJobSet`** (:39-40, 64-66). `RestartJobSet` fails the JobSet with `ReachedMaxRestarts`
//!   once `status.restartsCountTowardsMax >= maxRestarts` (:192-200), otherwise it increments
//!   `status.restarts` (:154-175) with a Warning Event `RestartJobSetFailurePolicyAction`; every
//!   Job whose `restart-attempt` label is below `status.restarts` is then deleted **with
//!   foreground propagation, its pods too** (jobset_controller.go:179-183, 288-299, 589-613), and
//!   the Jobs are created again under the same names (:674-692, 741-753). So a restart deletes the
//!   pod pullcheck failed (and every other pod of the JobSet) and makes new ones, which fail the
//!   same way: `maxRestarts: N` costs N+1 rounds of pods. `RestartJobSetAndIgnoreMaxRestarts`
//!   restarts without counting (:216-230): with a missing image, for ever.
//! - `FailJobSet` fails the JobSet at once, reason `FailJobSetFailurePolicyAction`, message
//!   "applying FailJobSet failure policy action (first failed job: <job>)" (:181-189;
//!   constants.go:87-88). `onJobFailureReasons` accepts `BackoffLimitExceeded`,
//!   `DeadlineExceeded`, `FailedIndexes`, `MaxFailedIndexesExceeded` and **`PodFailurePolicy`**
//!   (jobset_webhook.go:68-74, checked at :339-344). A Job failed by pullcheck's rule (either
//!   mode) has reason `PodFailurePolicy`; so
//!   `failurePolicy: {maxRestarts: N, rules: [{action: FailJobSet, onJobFailureReasons:
//!   [PodFailurePolicy]}]}` keeps restarts for other failures and fails at once on a pull
//!   failure (and on any other podFailurePolicy `FailJob` of the template). The rule's `name` is
//!   defaulted to `failurePolicyRule<i>` (jobset_webhook.go:140-147). `failurePolicy` is
//!   immutable (jobset_types.go:102-107, CEL).
//! - `restartStrategy: BlockingRecreate` (jobset_types.go:364-374) only waits for the old Jobs to
//!   be gone before creating new ones (jobset_controller.go:676-681).
//!
//! ## What the user sees
//! - `kubectl get jobsets`: columns TerminalState (`status.terminalState`), Restarts, Completed,
//!   Suspended, Age (jobset_types.go:203-207): `Failed`. There is no JobSet CLI.
//! - The JobSet's `Failed` condition (and Event) names the first failed Job only, never why it
//!   failed. The reason is one level down: the child Job's `Failed` condition, reason
//!   `PodFailurePolicy`, message "Pod <ns>/<pod> has condition ConfigIssue matching FailJob rule
//!   at index 0" (watch) or "Container pullcheck for pod <ns>/<pod> failed with exit code 3
//!   matching FailJob rule at index 0" (init); then the pod: its `ConfigIssue` condition and
//!   Warning Event (watch), the init container's termination message (init).

use serde_json::Value;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{Controller, DEADLINE, DISTROLESS_PATH, Mode, kustomized, manager_image};
use crate::harness::{
    Namespace, built_by, cluster, condition, minutes, seconds_between, status_of, wait_for,
};
use crate::watch::PodWatch;

/// The JobSet version `tests/cluster/jobset/go.mod` requires.
const VERSION: &str = "v0.8.0";
/// The controller manager's namespace.
const NAMESPACE: &str = "pc-jobset";
/// The Deployment `config/default` makes (`namePrefix: jobset-`).
const CONTROLLER: Controller = Controller {
    namespace: NAMESPACE,
    deployments: &["deployment/jobset-controller-manager"],
};
/// The leader election Lease (api/config/v1alpha1/defaults.go:32).
const LEASE: &str = "lease/6d4f6a47.jobset.x-k8s.io";
/// The image `config/components/manager/kustomization.yaml` names.
const UPSTREAM_IMAGE: &str = "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset";
/// The label the controller puts on a JobSet's Jobs and pods.
const NAME_LABEL: &str = "jobset.sigs.k8s.io/jobset-name";
/// The failure policy a JobSet user should write: restarts for other failures, none for a
/// failure pullcheck's podFailurePolicy rule made.
const FAIL_ON_POD_FAILURE_POLICY: &str =
    "{maxRestarts: 3, rules: [{action: FailJobSet, onJobFailureReasons: [PodFailurePolicy]}]}";

/// JobSet installed: the manager up, leading, its webhooks answering.
pub struct JobSet {
    _namespace: Namespace,
}

/// JobSet's CRD, manager and webhooks, installed once per test binary as the project ships them
/// (`config/default`), with our namespace and our image; server-side apply (the CRD is too big
/// for client-side apply's annotation).
pub fn jobset() -> &'static JobSet {
    static JOBSET: OnceLock<JobSet> = OnceLock::new();
    JOBSET.get_or_init(|| {
        let c = cluster();
        let started = Instant::now();
        let cache = built_by("build-jobset.sh", "manager")
            .parent()
            .expect("the cache folder")
            .to_path_buf();
        // One layer, laid out as the Dockerfile lays it out (`/manager`, user 65532).
        let image = manager_image(
            &cache,
            "jobset",
            VERSION,
            "manager",
            &["--workingdir", "/", "--env", DISTROLESS_PATH],
        );
        let namespace = c.namespace(NAMESPACE);
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
- name: {UPSTREAM_IMAGE}
  newName: {repository}
  newTag: {tag}
"#
            ),
        );
        assert!(
            rendered.contains(&format!("image: {image}")) && !rendered.contains(UPSTREAM_IMAGE),
            "the manager's image replaced in the render:\n{}",
            rendered
                .lines()
                .filter(|l| l.contains("image:"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let applied = c.kubectl_output(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            Some(&rendered),
        );
        assert!(
            applied.status.success(),
            "kubectl apply --server-side of JobSet's config/default: {}\n{}",
            applied.status,
            String::from_utf8_lossy(&applied.stderr)
        );
        c.kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/jobsets.jobset.x-k8s.io",
            "--timeout=60s",
        ]);
        // Ready only once the certificates are in place and the webhook server listens
        // (main.go:267-273).
        let leader = CONTROLLER.started(&[LEASE]).join(", ");
        // The webhooks answer (their CA injected): a server-side dry run of a JobSet passes
        // `mjobset` and `vjobset`.
        wait_for("JobSet's webhooks to answer", minutes(1), || {
            let out = c.kubectl_output(
                &["create", "--dry-run=server", "-n", NAMESPACE, "-f", "-"],
                Some(&jobset_yaml("probe", &c.tools_image(), Some("Never"), None)),
            );
            if out.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            }
        });
        println!(
            "jobset {VERSION}: manager {image} leading ({leader}), in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        JobSet {
            _namespace: namespace,
        }
    })
}

/// A JobSet of one replicated Job `workers` (one Job, one pod) running `image` with command
/// `true`; `restart_policy` for its pod template (None: JobSet's default, OnFailure),
/// `failure_policy` as a YAML flow mapping (None: JobSet's default, fail at the first failed Job).
fn jobset_yaml(
    name: &str,
    image: &str,
    restart_policy: Option<&str>,
    failure_policy: Option<&str>,
) -> String {
    let failure = failure_policy
        .map(|p| format!("  failurePolicy: {p}\n"))
        .unwrap_or_default();
    let restart = restart_policy
        .map(|p| format!("            restartPolicy: {p}\n"))
        .unwrap_or_default();
    format!(
        r#"apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
spec:
{failure}  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
{restart}            containers:
            - name: main
              image: {image}
              imagePullPolicy: Always
              command: ["true"]
"#
    )
}

/// The JobSet `name` in `ns`.
fn get_jobset(ns: &str, name: &str) -> Option<Value> {
    cluster().get(ns, &format!("jobsets.jobset.x-k8s.io/{name}"))
}

/// The `kind` objects (jobs, pods) of JobSet `name`, by the controller's label, as JSON items.
fn owned(ns: &str, kind: &str, name: &str) -> Vec<Value> {
    let selector = format!("{NAME_LABEL}={name}");
    let out = cluster().kubectl(&["get", kind, "-n", ns, "-l", &selector, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The one item of `items`, or a failure naming `what`.
fn only(items: Vec<Value>, what: &str) -> Value {
    assert_eq!(items.len(), 1, "one {what}: {items:#?}");
    items.into_iter().next().expect("one item")
}

/// Waits for JobSet `name`'s `status.terminalState` to be `state` (`Failed`, `Completed`); fails
/// at once on the other one.
fn wait_jobset(ns: &str, name: &str, state: &str) -> Value {
    wait_for(&format!("JobSet {ns}/{name} {state}"), minutes(3), || {
        let js = get_jobset(ns, name);
        let describe = || {
            format!(
                "jobset: {}\njobs: {}\npods: {}",
                status_of(&js),
                serde_json::to_string_pretty(
                    &owned(ns, "jobs", name)
                        .iter()
                        .map(|j| &j["status"])
                        .collect::<Vec<_>>()
                )
                .unwrap_or_default(),
                serde_json::to_string_pretty(
                    &owned(ns, "pods", name)
                        .iter()
                        .map(|p| &p["status"])
                        .collect::<Vec<_>>()
                )
                .unwrap_or_default()
            )
        };
        match js
            .as_ref()
            .and_then(|j| j["status"]["terminalState"].as_str())
        {
            Some(s) if s == state => Ok(js.clone().expect("the JobSet")),
            Some(other @ ("Failed" | "Completed")) => {
                panic!(
                    "JobSet {ns}/{name} ended {other}, not {state}:\n{}",
                    describe()
                )
            }
            _ => Err(describe()),
        }
    })
}

/// The `lastTransitionTime` of the JobSet's condition `kind` (status True).
fn transition(js: &Value, kind: &str) -> String {
    condition(js, kind)
        .and_then(|c| c["lastTransitionTime"].as_str())
        .unwrap_or_else(|| panic!("a {kind} condition: {:#}", js["status"]))
        .to_string()
}

/// The `podFailurePolicy` rules of a Job.
fn rules(job: &Value) -> Vec<Value> {
    job["spec"]["podFailurePolicy"]["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_jobset_with_a_missing_tag_fails_in_watch_mode_and_its_pod_is_kept() {
    let c = cluster();
    let _ = jobset();
    let ns = Mode::Watch.namespace("pc-jobset-watch");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(
        &ns.name,
        &jobset_yaml("missing", &image, Some("Never"), None),
    );
    let failed = wait_jobset(&ns.name, "missing", "Failed");

    // The JobSet: no failurePolicy, so the first failed Job fails it (failure_policy.go:47-57).
    let cond = condition(&failed, "Failed").expect("the Failed condition");
    assert_eq!(cond["reason"], "FailedJobs", "{cond}");
    assert_eq!(
        cond["message"],
        "jobset failed due to one or more job failures (first failed job: missing-workers-0)"
    );

    // The child Job: given pullcheck's rule at admission (the JobSet webhooks do not see Jobs),
    // failed by it.
    let job = only(owned(&ns.name, "jobs", "missing"), "Job");
    let rule = rules(&job);
    assert!(
        rule.iter()
            .any(|r| r["action"] == "FailJob" && r["onPodConditions"][0]["type"] == "ConfigIssue"),
        "pullcheck's rule on the JobSet's Job: {:#}",
        job["spec"]
    );
    assert_eq!(job["spec"]["podReplacementPolicy"], "Failed");
    let job_failed = condition(&job, "Failed").expect("the Job failed");
    assert_eq!(job_failed["reason"], "PodFailurePolicy", "{job_failed}");
    let job_words = job_failed["message"].as_str().unwrap_or_default();
    assert!(
        job_words.contains("has condition ConfigIssue matching FailJob rule"),
        "{job_words}"
    );

    // One pod, kept: failed by the kubelet, with the watcher's condition.
    let pod = only(owned(&ns.name, "pods", "missing"), "pod");
    let pod_name = pod["metadata"]["name"].as_str().expect("name").to_string();
    assert_eq!(pod["status"]["phase"], "Failed", "{:#}", pod["status"]);
    assert_eq!(
        pod["status"]["reason"], "DeadlineExceeded",
        "{:#}",
        pod["status"]
    );
    assert_eq!(pod["status"]["message"], DEADLINE);
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 1, "{pod_name}");
    let issue = condition(&pod, "ConfigIssue").expect("the watcher's condition, kept");
    let reason = issue["reason"].as_str().unwrap_or_default();
    assert!(
        ["manifest_missing", "tag_missing"].contains(&reason),
        "reason {reason}: {issue}"
    );
    let words = issue["message"].as_str().unwrap_or_default();
    assert!(
        words.contains(&image) && words.contains("\"main\""),
        "the condition names the container and its image: {words}"
    );

    // Never re-created.
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(
        pods.uids("missing-").len(),
        1,
        "one pod from first to last: {:?}",
        pods.uids("missing-")
    );
    assert_eq!(owned(&ns.name, "pods", "missing").len(), 1);

    let created = pod["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created");
    let seconds = seconds_between(created, &transition(&failed, "Failed"));
    println!(
        "framework: jobset mode=watch case=missing seconds={seconds} status=Failed; JobSet missing Failed {seconds} s after its pod's creation: {}; Job: {} \
         {job_words}; pod {pod_name} kept (DeadlineExceeded), ConfigIssue {reason}: {words}",
        cond["message"], job_failed["reason"],
    );
}

#[test]
fn a_jobset_with_a_missing_tag_fails_in_init_mode() {
    let c = cluster();
    let _ = jobset();
    let ns = Mode::Init.namespace("pc-jobset-init");
    let registry = Mode::Init.registry();
    let pods = PodWatch::start(&ns.name);
    let image = format!("{registry}/tools:no-such-tag");
    c.apply(
        &ns.name,
        &jobset_yaml("missing", &image, Some("Never"), None),
    );
    let failed = wait_jobset(&ns.name, "missing", "Failed");
    let cond = condition(&failed, "Failed").expect("the Failed condition");
    assert_eq!(cond["reason"], "FailedJobs", "{cond}");

    // The Job: pullcheck's exit-code rule for its init container, which failed it.
    let job = only(owned(&ns.name, "jobs", "missing"), "Job");
    assert!(
        rules(&job)
            .iter()
            .any(|r| r["action"] == "FailJob" && r["onExitCodes"]["containerName"] == "pullcheck"),
        "pullcheck's exit-code rule: {:#}",
        job["spec"]
    );
    let job_failed = condition(&job, "Failed").expect("the Job failed");
    assert_eq!(job_failed["reason"], "PodFailurePolicy", "{job_failed}");
    let job_words = job_failed["message"].as_str().unwrap_or_default();
    assert!(
        job_words.contains("Container pullcheck") && job_words.contains("exit code 3"),
        "{job_words}"
    );

    // The pod: failed by its init container `pullcheck` (exit 3, tag_missing); main never ran.
    let pod = only(owned(&ns.name, "pods", "missing"), "pod");
    assert_eq!(pod["status"]["phase"], "Failed", "{:#}", pod["status"]);
    let init = pod["status"]["initContainerStatuses"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "pullcheck"))
        .cloned()
        .unwrap_or_else(|| panic!("pullcheck's init container: {:#}", pod["status"]));
    assert_eq!(init["state"]["terminated"]["exitCode"], 3, "{init:#}");
    let words = init["state"]["terminated"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        words.contains("tag_missing") && words.contains(&image),
        "the termination message: {words}"
    );

    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(
        pods.uids("missing-").len(),
        1,
        "{:?}",
        pods.uids("missing-")
    );

    let created = pod["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created");
    let seconds = seconds_between(created, &transition(&failed, "Failed"));
    println!(
        "framework: jobset mode=init case=missing seconds={seconds} status=Failed; JobSet missing Failed {seconds} s after its pod's creation: {}; Job: \
         {job_words}; init container: {words}",
        cond["message"]
    );
}

#[test]
fn a_restart_recreates_the_pods_and_a_failjobset_rule_prevents_it() {
    let c = cluster();
    let _ = jobset();
    let ns = Mode::Watch.namespace("pc-jobset-restarts");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(
        &ns.name,
        &jobset_yaml("restart", &image, Some("Never"), Some("{maxRestarts: 1}")),
    );
    c.apply(
        &ns.name,
        &jobset_yaml(
            "rule",
            &image,
            Some("Never"),
            Some(FAIL_ON_POD_FAILURE_POLICY),
        ),
    );

    // maxRestarts 1, no rule: RestartJobSet (the default action) once, then ReachedMaxRestarts.
    let restart = wait_jobset(&ns.name, "restart", "Failed");
    let cond = condition(&restart, "Failed").expect("the Failed condition");
    assert_eq!(cond["reason"], "ReachedMaxRestarts", "{cond}");
    assert_eq!(restart["status"]["restarts"], 1, "{:#}", restart["status"]);
    // The restart deleted the first Job with its pod (foreground) and made both again.
    let job = only(owned(&ns.name, "jobs", "restart"), "Job");
    assert_eq!(
        job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"], "1",
        "{:#}",
        job["metadata"]
    );
    let first = pods
        .conditioned("restart-")
        .expect("the first pod, failed by the watcher");
    std::thread::sleep(Duration::from_secs(10));
    let uids = pods.uids("restart-");
    assert_eq!(uids.len(), 2, "a pod per round: {uids:?}");
    let kept = only(owned(&ns.name, "pods", "restart"), "pod kept");
    assert_ne!(
        kept["metadata"]["uid"], first["metadata"]["uid"],
        "the first round's pod was deleted with its Job"
    );
    let restart_seconds = seconds_between(
        first["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        &transition(&restart, "Failed"),
    );

    // The rule: FailJobSet on a Job failed by a podFailurePolicy, at the first failure.
    let rule = wait_jobset(&ns.name, "rule", "Failed");
    let cond = condition(&rule, "Failed").expect("the Failed condition");
    assert_eq!(cond["reason"], "FailJobSetFailurePolicyAction", "{cond}");
    assert_eq!(
        cond["message"],
        "applying FailJobSet failure policy action (first failed job: rule-workers-0)"
    );
    assert!(
        rule["status"]["restarts"].as_i64().unwrap_or(0) == 0,
        "{:#}",
        rule["status"]
    );
    assert_eq!(pods.uids("rule-").len(), 1, "{:?}", pods.uids("rule-"));
    let pod = only(owned(&ns.name, "pods", "rule"), "pod");
    let rule_seconds = seconds_between(
        pod["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        &transition(&rule, "Failed"),
    );
    println!(
        "framework: jobset mode=watch case=restarts seconds={rule_seconds} status=Failed; maxRestarts 1 → ReachedMaxRestarts {restart_seconds} s after the first pod, 2 \
         pods (the first deleted); FailJobSet on PodFailurePolicy → Failed {rule_seconds} s \
         after its pod, 1 pod"
    );
}

/// A good JobSet in `mode`'s namespace `name`: Completed; the seconds from its pod's creation to
/// the `Completed` condition, and the pod.
fn good_in(mode: Mode, name: &str) -> (i64, Value) {
    let c = cluster();
    let ns = mode.namespace(name);
    let registry = mode.registry();
    let pods = PodWatch::start(&ns.name);
    let image = format!("{registry}/tools:1");
    c.apply(&ns.name, &jobset_yaml("good", &image, Some("Never"), None));
    let done = wait_jobset(&ns.name, "good", "Completed");
    let pod = only(owned(&ns.name, "pods", "good"), "pod");
    assert_eq!(pod["status"]["phase"], "Succeeded", "{:#}", pod["status"]);
    assert!(
        pods.conditioned("good-").is_none(),
        "never given the condition"
    );
    assert_eq!(pods.uids("good-").len(), 1);
    let seconds = seconds_between(
        pod["metadata"]["creationTimestamp"]
            .as_str()
            .expect("created"),
        &transition(&done, "Completed"),
    );
    (seconds, pod)
}

#[test]
fn a_good_jobset_completes_in_each_mode_as_without_pullcheck() {
    let _ = jobset();
    let (without, _) = good_in(Mode::Without, "pc-jobset-good-control");
    let (watch, pod) = good_in(Mode::Watch, "pc-jobset-good-watch");
    // Watch mode adds nothing to the pod: no deadline, no init container, the one container.
    assert!(
        pod["spec"]["activeDeadlineSeconds"].is_null(),
        "no deadline set"
    );
    assert!(pod["spec"]["initContainers"].is_null(), "{:#}", pod["spec"]);
    let containers = pod["spec"]["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0]["name"], "main");
    let (init, pod) = good_in(Mode::Init, "pc-jobset-good-init");
    let check = pod["status"]["initContainerStatuses"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "pullcheck"))
        .cloned()
        .unwrap_or_else(|| panic!("pullcheck's init container: {:#}", pod["status"]));
    assert_eq!(check["state"]["terminated"]["exitCode"], 0, "{check:#}");
    println!(
        "framework: jobset mode=watch case=good seconds={watch} without={without} init={init} status=Completed; a good JobSet Completed {without} s after its pod's creation without pullcheck, \
         {watch} s in watch mode, {init} s in init mode"
    );
}

#[test]
fn a_jobset_in_a_namespace_not_watched_still_waits_after_two_minutes() {
    let c = cluster();
    let _ = jobset();
    let ns = Mode::Without.namespace("pc-jobset-control");
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(
        &ns.name,
        &jobset_yaml("control", &image, Some("Never"), None),
    );
    let pod = wait_for("the control JobSet's pod", minutes(1), || {
        owned(&ns.name, "pods", "control")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_jobset(&ns.name, "control")))
    });
    let made = Instant::now();
    std::thread::sleep(Duration::from_secs(120));
    let js = get_jobset(&ns.name, "control").expect("the JobSet");
    assert!(
        js["status"]["terminalState"].is_null(),
        "{:#}",
        js["status"]
    );
    assert!(condition(&js, "Failed").is_none(), "{:#}", js["status"]);
    let job = only(owned(&ns.name, "jobs", "control"), "Job");
    assert!(rules(&job).is_empty(), "no rule added: {:#}", job["spec"]);
    assert!(condition(&job, "Failed").is_none(), "{:#}", job["status"]);
    let now = only(owned(&ns.name, "pods", "control"), "pod");
    assert_eq!(
        now["metadata"]["uid"], pod["metadata"]["uid"],
        "the same pod"
    );
    assert_eq!(now["status"]["phase"], "Pending");
    assert!(condition(&now, "ConfigIssue").is_none());
    let waiting = &now["status"]["containerStatuses"][0]["state"]["waiting"];
    let why = waiting["reason"].as_str().unwrap_or_default();
    assert!(
        why == "ErrImagePull" || why == "ImagePullBackOff",
        "{waiting:#}"
    );
    println!(
        "framework: jobset mode=without case=control seconds={:.0} status=none; JobSet control has no condition that long after its pod's \
         creation (replicatedJobsStatus {}), the pod Pending: {why}: {}",
        made.elapsed().as_secs_f64(),
        js["status"]["replicatedJobsStatus"],
        waiting["message"]
    );
}

#[test]
fn jobsets_default_restart_policy_on_failure_replaces_the_failed_pod() {
    let c = cluster();
    let _ = jobset();
    let ns = Mode::Watch.namespace("pc-jobset-onfailure");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    // No restartPolicy: JobSet's webhook writes OnFailure (jobset_webhook.go:122-125).
    c.apply(&ns.name, &jobset_yaml("onfailure", &image, None, None));
    let js = get_jobset(&ns.name, "onfailure").expect("the JobSet");
    assert_eq!(
        js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["restartPolicy"],
        "OnFailure"
    );
    // A podFailurePolicy needs Never: pullcheck leaves the Job as written.
    let job = wait_for("the Job", minutes(1), || {
        owned(&ns.name, "jobs", "onfailure")
            .into_iter()
            .next()
            .ok_or_else(|| status_of(&get_jobset(&ns.name, "onfailure")))
    });
    assert!(rules(&job).is_empty(), "no rule: {:#}", job["spec"]);
    // The watcher fails the pod; the Job controller makes another (after its 10 s back-off).
    let replaced = wait_for("a second pod", minutes(2), || {
        let uids = pods.uids("onfailure-");
        if uids.len() >= 2 {
            Ok(uids)
        } else {
            Err(format!("{uids:?}"))
        }
    });
    let js = get_jobset(&ns.name, "onfailure").expect("the JobSet");
    assert!(
        js["status"]["terminalState"].is_null(),
        "not failed: {:#}",
        js["status"]
    );
    assert!(
        pods.conditioned("onfailure-").is_some(),
        "the watcher failed the first"
    );
    println!(
        "jobset: restartPolicy OnFailure (JobSet's default): {} pods, the JobSet still running; \
         it fails only when the Job's backoffLimit is spent",
        replaced.len()
    );
}
