//! `pullcheck watch`, the stuck-pod controller, on the real cluster: the chart's release (the
//! watcher is a second container of the webhook's two pods, with a Lease between them), a short
//! grace, and pods that no init container was injected into, as the real kubelet leaves them:
//!
//! 1. a Job with a missing tag and a `podFailurePolicy` rule `FailJob` on `ConfigIssue` fails
//!    after the grace; the pod's condition and Event carry the reason, the Job names the rule,
//!    and the pod is kept, failed by the kubelet (`DeadlineExceeded`) once the watcher set its
//!    `activeDeadlineSeconds`; so are a bare `restartPolicy: Never` pod and a pod a custom
//!    resource owns, while a `restartPolicy: Always` pod and one annotated
//!    `pullcheck.dev/fail-when-stuck: "false"` get an Event only;
//! 2. a registry stopped for 3 minutes while such a Job's pod waits: the pod is never failed,
//!    and starts once the registry is back;
//! 3. an env var from a missing Secret: failed after the grace; a Secret created within the
//!    grace, or at the moment the watcher means to act (it waits for the kubelet's next attempt
//!    to say the same): the pod starts and is left alone;
//! 4. each start-check cause fails its pod after the grace; a `workingDir` that is a file and a
//!    command that is not there end the pod by themselves under `restartPolicy: Never`, as the
//!    kubelet reports them, with nothing for the watcher to do;
//! 5. a Deployment's stuck pod gets an Event and is kept, never failed;
//! 6. the leader killed: the other replica takes the Lease and acts on the next stuck pod;
//! 7. `--dry-run` only reports: the log says what it would do, and nothing is written.
//!
//! The watcher watches namespaces labelled `pullcheck.dev/watch=e2e` only, so no other test's
//! pods are looked at.

use serde_json::Value;
use std::io::BufReader;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::common::proxy::Proxy;
use crate::harness::{Namespace, cluster, condition, minutes, status_of, wait_for};
use crate::jobs::{job_with, pulled_always, seconds_to, wait_job};
use crate::webhook::{Installed, install};

/// The watcher's grace in these tests.
const GRACE_SECONDS: i64 = 10;
/// Its grace for CreateContainerConfigError: longer than the kubelet's retry.
const CONFIG_GRACE_SECONDS: i64 = 30;

/// The release the watch tests share: its webhook selects no namespace.
fn release() -> &'static Installed {
    static RELEASE: OnceLock<Installed> = OnceLock::new();
    RELEASE.get_or_init(|| {
        install(
            "pc-watch",
            "watch-tests-select-none",
            &[
                "--set",
                "watch.grace=10s,watch.namespaceLabel=pullcheck.dev/watch=e2e,watch.leaseDuration=6s",
                // The kubelet tries a pod that cannot start again 10 to 15 s later (its pod
                // worker's back-off): a Secret made in time is seen only then.
                "--set-json",
                &format!("watch.graceFor=[\"CreateContainerConfigError={CONFIG_GRACE_SECONDS}s\"]"),
            ],
        )
    })
}

/// A namespace of the test's own, watched.
fn watched(name: &str) -> Namespace {
    let _ = release();
    let c = cluster();
    let ns = c.namespace(name);
    c.kubectl(&["label", "namespace", name, "pullcheck.dev/watch=e2e"]);
    ns
}

/// A Job of `image` (`pod_spec`: more lines of its pod spec) with the rule that fails it on the
/// watcher's condition.
pub fn stuck_job(name: &str, image: &str, pod_spec: &str) -> String {
    job_with(name, image, 3, pod_spec).replace(
        "spec:\n  backoffLimit: 3\n",
        "spec:\n  backoffLimit: 3\n  podFailurePolicy:\n    rules:\n    - action: FailJob\n      \
         onPodConditions: [{type: ConfigIssue}]\n",
    )
}

/// Every version of every pod of a namespace, as `kubectl get pods --watch` streams them: each
/// version the watcher and the kubelet wrote, in order.
pub struct PodWatch {
    child: Child,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl PodWatch {
    pub fn start(ns: &str) -> PodWatch {
        PodWatch::of(ns, "pods")
    }

    /// Every version of every object of `resource` (`pods`, `rayclusters.ray.io`, …) in `ns`.
    pub fn of(ns: &str, resource: &str) -> PodWatch {
        let c = cluster();
        let mut child = Command::new(&c.kube)
            .args([
                "kubectl", "get", resource, "-n", ns, "--watch", "-o", "json",
            ])
            .env("KUBECONFIG", &c.kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl get --watch");
        let out = child.stdout.take().expect("stdout");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        std::thread::spawn(move || {
            let stream = serde_json::Deserializer::from_reader(BufReader::new(out));
            for pod in stream.into_iter::<Value>().map_while(Result::ok) {
                into.lock().unwrap().push(pod);
            }
        });
        PodWatch { child, seen }
    }

    /// The versions seen so far, in order.
    pub fn all(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }

    /// The first version of a pod with the watcher's condition, once one is seen.
    pub fn conditioned(&self, name_prefix: &str) -> Option<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .find(|p| {
                p["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(name_prefix))
                    && condition(p, "ConfigIssue").is_some()
            })
            .cloned()
    }

    pub fn wait_conditioned(&self, name_prefix: &str) -> Value {
        wait_for(
            &format!("a pod {name_prefix}… with the ConfigIssue condition"),
            minutes(4),
            || {
                self.conditioned(name_prefix)
                    .ok_or_else(|| format!("{} versions seen", self.seen.lock().unwrap().len()))
            },
        )
    }

    /// The uids of the pods seen whose name starts with `name_prefix`.
    pub fn uids(&self, name_prefix: &str) -> Vec<String> {
        let mut uids: Vec<String> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|p| {
                p["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(name_prefix))
            })
            .filter_map(|p| p["metadata"]["uid"].as_str().map(String::from))
            .collect();
        uids.sort();
        uids.dedup();
        uids
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Events of namespace `ns` with reason `reason` about pods whose name starts with
/// `name_prefix`.
pub fn events(ns: &str, reason: &str, name_prefix: &str) -> Vec<Value> {
    let c = cluster();
    let out = c.kubectl(&["get", "events", "-n", ns, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("events JSON");
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e["reason"] == reason
                && e["involvedObject"]["kind"] == "Pod"
                && e["involvedObject"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(name_prefix))
        })
        .collect()
}

/// Waits for Job `job` to fail on the watcher's condition: the Job's Failed condition names
/// the rule, the pod's condition has a reason among `reasons` and names `image`, and a Warning
/// Event says the same. Returns the pod's condition.
fn fails_on_config_issue(
    ns: &str,
    pods: &PodWatch,
    job: &str,
    image: &str,
    reasons: &[&str],
) -> Value {
    let failed = wait_job(ns, job, "Failed");
    let cond = condition(&failed, "Failed").expect("Failed").clone();
    assert_eq!(cond["reason"], "PodFailurePolicy", "{job}: {cond}");
    let message = cond["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("ConfigIssue") && message.contains("FailJob rule at index 0"),
        "{job}: the Job's status names the rule: {message}"
    );
    let seconds = seconds_to(&failed, "Failed");
    assert!(
        seconds >= GRACE_SECONDS,
        "{job}: failed {seconds} s after creation, before the grace of {GRACE_SECONDS} s"
    );
    let pod = pods.wait_conditioned(&format!("{job}-"));
    let issue = condition(&pod, "ConfigIssue")
        .expect("the condition")
        .clone();
    assert_eq!(issue["status"], "True", "{job}: {issue}");
    let reason = issue["reason"].as_str().unwrap_or_default();
    assert!(
        reasons.contains(&reason),
        "{job}: reason {reason}, expected one of {reasons:?}: {issue}"
    );
    let words = issue["message"].as_str().unwrap_or_default();
    assert!(
        words.contains(image),
        "{job}: the message names the image: {words}"
    );
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let warned = events(ns, "ConfigIssue", pod_name);
    assert!(
        warned.iter().any(|e| e["type"] == "Warning"),
        "{job}: a Warning Event on the pod: {warned:#?}"
    );
    // Failed by the kubelet's own hand, and kept: the deadline the watcher set, the phase and
    // reason the kubelet wrote.
    let kept = wait_for(
        &format!("pod {pod_name} failed by the kubelet"),
        minutes(1),
        || {
            let now = cluster().get(ns, &format!("pod/{pod_name}"));
            match &now {
                Some(p) if p["status"]["phase"] == "Failed" => Ok(p.clone()),
                _ => Err(status_of(&now)),
            }
        },
    );
    assert_eq!(kept["spec"]["activeDeadlineSeconds"], 1, "{pod_name}");
    assert_eq!(
        kept["status"]["reason"], "DeadlineExceeded",
        "{pod_name}: {:#}",
        kept["status"]
    );
    println!(
        "watch: Job {job} Failed (PodFailurePolicy on ConfigIssue, reason {reason}) {seconds} s after creation (grace {GRACE_SECONDS} s), its pod kept, Failed by the kubelet (DeadlineExceeded): {words}"
    );
    issue
}

#[test]
fn a_job_with_a_missing_tag_fails_through_its_config_issue_rule() {
    let c = cluster();
    let ns = watched("pc-watch-missing");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(&ns.name, &stuck_job("missing", &image, ""));
    fails_on_config_issue(
        &ns.name,
        &pods,
        "missing",
        &image,
        &["manifest_missing", "tag_missing"],
    );
}

#[test]
fn a_registry_stopped_for_three_minutes_is_waited_for_and_the_pod_then_starts() {
    let c = cluster();
    let ns = watched("pc-watch-stopped");
    let pods = PodWatch::start(&ns.name);
    // The registry, as the node reaches it, behind a proxy of the test's own: stopped, nothing
    // listens there (connection refused), started again at the same address.
    let proxy = Proxy::start(&c.registry);
    let addr = proxy.addr();
    let host = proxy.host();
    drop(proxy);
    c.plain_http_registry(&host);
    let image = format!("{host}/tools:1");
    let job = pulled_always(stuck_job("stopped", &image, ""));
    c.apply(&ns.name, &job);

    let stopped = Instant::now();
    let mut transient = Vec::new();
    while stopped.elapsed() < Duration::from_secs(180) {
        std::thread::sleep(Duration::from_secs(5));
        assert!(
            pods.conditioned("stopped-").is_none(),
            "a refused connection is transient: never acted on"
        );
        let job = c.get(&ns.name, "job/stopped").expect("the Job");
        assert!(condition(&job, "Failed").is_none(), "{job:#}");
        if transient.is_empty() {
            transient = events(&ns.name, "StuckTransient", "stopped-");
        }
    }
    assert!(
        !transient.is_empty(),
        "after the grace, a Warning Event says why the pod waits"
    );
    println!(
        "watch: registry stopped 180 s, the pod kept, its Event: {}",
        transient[0]["message"]
    );
    let _back = Proxy::start_on(addr, &c.registry);
    let back = Instant::now();
    // The kubelet's back-off has grown to minutes by now (at most 5).
    let done = wait_job(&ns.name, "stopped", "Complete");
    assert_eq!(
        pods.uids("stopped-").len(),
        1,
        "one pod from first to last: never deleted"
    );
    println!(
        "watch: registry back; the same pod ran, the Job Complete {:.0} s later ({} s after creation)",
        back.elapsed().as_secs_f64(),
        seconds_to(&done, "Complete")
    );
}

/// [`stuck_job`] of `image` whose container's env var `TOKEN` comes from key `token` of
/// Secret `secret`.
fn secret_env_job(name: &str, image: &str, secret: &str) -> String {
    let base = stuck_job(name, image, "");
    let at = base.find("      containers:\n").expect("containers");
    format!(
        "{}      containers:\n      - name: app\n        image: {image}\n        command: [\"true\"]\n        \
         env:\n        - name: TOKEN\n          valueFrom:\n            secretKeyRef: {{name: {secret}, key: token}}\n",
        &base[..at]
    )
}

/// Creates Secret `name` in `ns` with the key `token`.
fn make_secret(ns: &str, name: &str) {
    cluster().kubectl(&[
        "create",
        "secret",
        "generic",
        name,
        "-n",
        ns,
        "--from-literal=token=x",
    ]);
}

/// The whole log of the `watch` containers of release `release`'s pods.
fn watcher_log(release: &str) -> String {
    cluster().kubectl(&[
        "logs",
        "-n",
        release,
        "-l",
        &format!("app.kubernetes.io/instance={release}"),
        "-c",
        "watch",
        "--tail=-1",
    ])
}

#[test]
fn a_missing_secret_fails_the_pod_after_the_grace_and_one_made_in_time_does_not() {
    let c = cluster();
    let ns = watched("pc-watch-secret");
    let pods = PodWatch::start(&ns.name);
    let image = c.tools_image();
    c.apply(&ns.name, &secret_env_job("absent", &image, "never-made"));
    let created = Instant::now();
    c.apply(&ns.name, &secret_env_job("late", &image, "made-late"));
    // Within the grace: the kubelet's next try finds it, and the pod starts.
    std::thread::sleep(Duration::from_secs(3));
    make_secret(&ns.name, "made-late");
    assert!(created.elapsed() < Duration::from_secs(CONFIG_GRACE_SECONDS as u64));
    fails_on_config_issue(&ns.name, &pods, "absent", &image, &["secret_missing"]);
    wait_job(&ns.name, "late", "Complete");
    assert!(pods.conditioned("late-").is_none());
    assert_eq!(pods.uids("late-").len(), 1, "never deleted");
}

#[test]
fn a_secret_made_when_the_watcher_means_to_act_is_found_by_the_kubelets_next_attempt() {
    let c = cluster();
    let r = release();
    let ns = watched("pc-watch-secret-late");
    let pods = PodWatch::start(&ns.name);
    let image = c.tools_image();
    c.apply(&ns.name, &secret_env_job("late", &image, "made-late"));
    let created = Instant::now();
    // Past the grace the watcher means to act, holds back, and says so: the Secret is made
    // at that moment, after the kubelet's last attempt and before its next.
    let said = wait_for(
        "the watcher holding back on the missing Secret",
        minutes(3),
        || {
            watcher_log(&r.name)
                .lines()
                .find(|l| l.contains(&ns.name) && l.contains("may have been created since"))
                .map(String::from)
                .ok_or_else(|| "not yet".to_string())
        },
    );
    make_secret(&ns.name, "made-late");
    let made = created.elapsed().as_secs_f64();
    let done = wait_job(&ns.name, "late", "Complete");
    assert!(
        pods.conditioned("late-").is_none(),
        "never given the condition"
    );
    assert_eq!(pods.uids("late-").len(), 1, "one pod from first to last");
    println!(
        "watch: a Secret made {made:.0} s after the Job, as the watcher held back: the Job Complete {} s after creation; {said}",
        seconds_to(&done, "Complete")
    );
}

#[test]
fn a_working_dir_that_is_a_file_a_missing_command_and_the_start_check_causes() {
    let c = cluster();
    let ns = watched("pc-watch-start");
    let pods = PodWatch::start(&ns.name);
    let tools = c.tools_image();
    let nobody = format!("{}/tools-nobody:1", c.registry);
    let nocmd = format!("{}/tools-nocmd:1", c.registry);
    let non_root = "      securityContext: {runAsNonRoot: true}\n";
    // The start check's causes: the container waits (CreateContainerConfigError,
    // CreateContainerError) until the watcher fails the pod.
    let waiting: Vec<(&str, String, String, &[&str])> = vec![
        (
            "root",
            tools.clone(),
            stuck_job("root", &tools, non_root),
            &["runs_as_root"],
        ),
        (
            "named",
            nobody.clone(),
            stuck_job("named", &nobody, non_root),
            &["non_numeric_user"],
        ),
        (
            "nocmd",
            nocmd.clone(),
            stuck_job("nocmd", &nocmd, "").replace("        command: [\"true\"]\n", ""),
            &["no_command"],
        ),
    ];
    // A workingDir that is a file, a command that is not there: runc fails the start, and under
    // restartPolicy Never (which podFailurePolicy needs) the kubelet ends the container
    // (StartError) and the pod with it. No container waits: the Job fails by itself, and the
    // watcher has nothing to do.
    let ending = [
        (
            "workdir",
            job_with("workdir", &tools, 0, "").replace(
                "command: [\"true\"]",
                "command: [\"true\"]\n        workingDir: /bin/busybox",
            ),
        ),
        (
            "nocommand",
            job_with("nocommand", &tools, 0, "").replace("[\"true\"]", "[\"/no/such/command\"]"),
        ),
    ];
    for (_, _, job, _) in &waiting {
        c.apply(&ns.name, job);
    }
    for (_, job) in &ending {
        c.apply(&ns.name, job);
    }
    for (name, image, _, reasons) in &waiting {
        fails_on_config_issue(&ns.name, &pods, name, image, reasons);
    }
    for (name, _) in &ending {
        let failed = wait_job(&ns.name, name, "Failed");
        assert_eq!(
            condition(&failed, "Failed").expect("Failed")["reason"],
            "BackoffLimitExceeded"
        );
        let ended = pods.seen.lock().unwrap().iter().any(|p| {
            p["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("{name}-")))
                && p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"]
                    == "StartError"
        });
        assert!(ended, "{name}: the container ended with StartError");
        assert!(pods.conditioned(&format!("{name}-")).is_none());
        println!(
            "watch: {name}: the kubelet ended the pod itself (StartError); the Job Failed (BackoffLimitExceeded)"
        );
    }
}

#[test]
fn a_deployments_stuck_pod_gets_an_event_and_is_kept() {
    let c = cluster();
    let ns = watched("pc-watch-deployment");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(
        &ns.name,
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  \
             selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    \
             spec:\n      hostNetwork: true\n      containers:\n      - name: app\n        image: {image}\n"
        ),
    );
    let event = wait_for("the watcher's Event on the pod", minutes(3), || {
        events(&ns.name, "StuckPermanent", "web-")
            .into_iter()
            .next()
            .ok_or_else(|| "none yet".to_string())
    });
    let message = event["message"].as_str().unwrap_or_default();
    assert!(message.contains(&image), "{message}");
    // Well past the grace and the Event: the same pod, no condition.
    std::thread::sleep(Duration::from_secs(GRACE_SECONDS as u64 + 5));
    assert_eq!(pods.uids("web-").len(), 1, "the pod was never replaced");
    assert!(pods.conditioned("web-").is_none());
    println!("watch: a Deployment's stuck pod kept, its Event: {message}");
}

#[test]
fn a_bare_pod_and_a_custom_owners_pod_are_failed_by_the_kubelet_and_kept() {
    let c = cluster();
    let ns = watched("pc-watch-owners");
    let pods = PodWatch::start(&ns.name);
    // The owner: a ConfigMap, standing for a framework's own resource (a Workflow, a TaskRun).
    c.kubectl(&["create", "configmap", "framework", "-n", &ns.name]);
    let uid = c
        .get(&ns.name, "configmap/framework")
        .expect("the ConfigMap")["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let image = format!("{}/tools:no-such-tag", c.registry);
    let pod = |name: &str, policy: &str, owned: bool, annotations: &str| {
        let owner = if owned {
            format!(
                "  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: framework, uid: {uid}, controller: true}}\n"
            )
        } else {
            String::new()
        };
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{annotations}{owner}spec:\n  restartPolicy: {policy}\n  \
             hostNetwork: true\n  containers:\n  - name: app\n    image: {image}\n    command: [\"true\"]\n"
        )
    };
    let opted_out = "  annotations: {pullcheck.dev/fail-when-stuck: \"false\"}\n";
    let created = Instant::now();
    c.apply(&ns.name, &pod("bare", "Never", false, ""));
    c.apply(&ns.name, &pod("owned", "OnFailure", true, ""));
    c.apply(&ns.name, &pod("always", "Always", false, ""));
    c.apply(&ns.name, &pod("opted-out", "Never", false, opted_out));
    for name in ["bare", "owned"] {
        let failed = wait_for(
            &format!("pod {name} failed by the kubelet"),
            minutes(3),
            || {
                let now = c.get(&ns.name, &format!("pod/{name}"));
                match &now {
                    Some(p) if p["status"]["phase"] == "Failed" => Ok(p.clone()),
                    _ => Err(status_of(&now)),
                }
            },
        );
        let after = created.elapsed().as_secs_f64();
        assert_eq!(failed["spec"]["activeDeadlineSeconds"], 1, "{name}");
        assert_eq!(failed["status"]["reason"], "DeadlineExceeded", "{name}");
        let issue = condition(&failed, "ConfigIssue").expect("the watcher's condition kept");
        assert_eq!(issue["reason"], "manifest_missing", "{name}: {issue}");
        println!(
            "watch: {name} pod ({}) Failed by the kubelet (DeadlineExceeded) {after:.0} s after creation (grace {GRACE_SECONDS} s), kept; {}",
            failed["spec"]["restartPolicy"], issue["message"]
        );
    }
    // restartPolicy Always, and the opt-out: an Event, never failed.
    for name in ["always", "opted-out"] {
        let event = wait_for(
            &format!("the watcher's Event on pod {name}"),
            minutes(3),
            || {
                events(&ns.name, "StuckPermanent", name)
                    .into_iter()
                    .next()
                    .ok_or_else(|| "none yet".to_string())
            },
        );
        let message = event["message"].as_str().unwrap_or_default().to_string();
        let now = c.get(&ns.name, &format!("pod/{name}")).expect("kept");
        assert_eq!(now["status"]["phase"], "Pending", "{name}");
        assert!(now["spec"]["activeDeadlineSeconds"].is_null(), "{name}");
        assert!(pods.conditioned(name).is_none(), "{name}");
        println!("watch: {name} pod kept Pending, its Event: {message}");
    }
}

#[test]
fn the_leader_killed_the_other_replica_takes_the_lease_and_acts() {
    let c = cluster();
    let r = release();
    let lease_name = format!("{}-watch", r.fullname);
    let holder = |c: &crate::harness::Cluster| -> Option<String> {
        c.get(&r.name, &format!("lease/{lease_name}"))?["spec"]["holderIdentity"]
            .as_str()
            .map(String::from)
    };
    let leader = wait_for("a leader", minutes(1), || {
        holder(c).ok_or_else(|| "no holder yet".to_string())
    });
    // Killed: its process gets SIGKILL, with no time to give the Lease up. The kubelet starts
    // the container again in the same pod, a new candidate (the Lease names the process:
    // `<pod>_<random>`), which waits for the lease to expire like the other replica.
    let pod_name = leader.rsplit_once('_').map_or(leader.as_str(), |(p, _)| p);
    let pod = c
        .get(&r.name, &format!("pod/{pod_name}"))
        .expect("the leader's pod");
    let id = pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|cs| cs.iter().find(|s| s["name"] == "watch"))
        .and_then(|s| s["containerID"].as_str())
        .and_then(|id| id.strip_prefix("containerd://"))
        .expect("the watch container's id")
        .to_string();
    let killed = Instant::now();
    c.ctr(&["tasks", "kill", "--signal", "SIGKILL", &id]);
    let next = wait_for("another holder of the Lease", minutes(1), || {
        match holder(c) {
            Some(h) if h != leader => Ok(h),
            other => Err(format!("{other:?}")),
        }
    });
    let took = killed.elapsed();
    println!(
        "watch: leader {leader} killed (SIGKILL); {next} holds the Lease {:.1} s later (lease 6 s)",
        took.as_secs_f64()
    );
    assert!(
        took >= Duration::from_secs(4),
        "a killed leader gives nothing up: the Lease is taken only once it expires ({took:?})"
    );
    let ns = watched("pc-watch-leader");
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(&ns.name, &stuck_job("after", &image, ""));
    fails_on_config_issue(
        &ns.name,
        &pods,
        "after",
        &image,
        &["manifest_missing", "tag_missing"],
    );
    assert_ne!(holder(c).as_deref(), Some(leader.as_str()));
}

#[test]
fn dry_run_only_reports() {
    let c = cluster();
    // A release of its own, watching namespaces of another label, that writes nothing.
    let release = install(
        "pc-watch-dry",
        "watch-dry-select-none",
        &[
            "--set",
            "watch.grace=10s,watch.namespaceLabel=pullcheck.dev/watch=dry,watch.dryRun=true",
        ],
    );
    let ns = c.namespace("pc-watch-dry-run");
    c.kubectl(&["label", "namespace", &ns.name, "pullcheck.dev/watch=dry"]);
    let pods = PodWatch::start(&ns.name);
    let image = format!("{}/tools:no-such-tag", c.registry);
    c.apply(&ns.name, &stuck_job("dry", &image, ""));
    // The leader's log says what it would have done, once the grace is past.
    let said = wait_for("the watcher's dry-run report", minutes(2), || {
        let out = watcher_log(&release.name);
        out.lines()
            .find(|l| l.contains("would fail the pod (dry run)") && l.contains("no-such-tag"))
            .map(String::from)
            .ok_or(out)
    });
    // Past the grace and the report: no condition, no Event of its own, no delete.
    std::thread::sleep(Duration::from_secs(GRACE_SECONDS as u64));
    assert!(pods.conditioned("dry-").is_none());
    assert_eq!(pods.uids("dry-").len(), 1, "the pod was never deleted");
    let job = c.get(&ns.name, "job/dry").expect("the Job");
    assert!(condition(&job, "Failed").is_none(), "{job:#}");
    for reason in ["ConfigIssue", "StuckPermanent", "StuckTransient"] {
        assert!(
            events(&ns.name, reason, "dry-").is_empty(),
            "no {reason} Event"
        );
    }
    println!("watch --dry-run: {said}");
}
