//! The admission webhook end to end on the real cluster: the chart installed with the webhook's
//! image (`pullcheck:ci-webhook`, from scripts/build-image.sh), its own certificate in the
//! `caBundle`, and the real API server calling it at its pods (cluster.sh runs the API server
//! with `--enable-aggregator-routing`: no kube-proxy here). Then what the webhook promises:
//!
//! 1. a plain Job with a missing image, in an opted-in namespace, fails on the init container's
//!    exit code through the `podFailurePolicy` the webhook added;
//! 2. a Job with a good image completes;
//! 3. a Job in a namespace that is not opted in is untouched;
//! 4. a bare Pod and a ReplicaSet's Pod get the container, an annotated Pod does not, and a Pod
//!    of a service account with `imagePullSecrets` gets them mounted (the ServiceAccount
//!    admission runs before webhooks);
//! 5. with the webhook scaled to 0, pods are still created, within the webhook's timeout;
//! 6. admission latency over 500 pod creations with and without the webhook (printed, not
//!    asserted);
//! 7. every fixture pod spec and Job created through the API server with the webhook is what
//!    `inject` writes for it, created through the same API server without the webhook;
//! 8. in audit mode (`webhook.audit=true`) `kubectl apply` of a Job prints what the webhook
//!    would add, and the Job and its pod are stored without it.
//!
//! Each release selects namespaces by a label value of its own, so no other test's pods pass
//! through it.

use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::chart::{Release, chart, helm, helm_cmd};
use crate::harness::{Namespace, cluster, condition, minutes, wait_for};
use crate::jobs::{job, pulled_always, seconds_to, wait_job, wait_pull_failing};

/// The namespace label the releases select on (the chart's default key).
const LABEL: &str = "pullcheck.dev/inject";

/// A release of the chart whose webhook is up, its CA in the `caBundle`.
pub struct Installed {
    /// The release's name, also its namespace's.
    pub name: String,
    /// The label value it selects namespaces by.
    pub label: String,
    /// The webhook configuration's and the Deployment's name.
    pub fullname: String,
    // Dropped in this order: the release, then its namespace.
    _release: Release,
    _namespace: Namespace,
}

/// Installs release `name` (in a namespace of that name) in `mode: both` (the injection these
/// tests prove, and the watcher beside it, as before the modes), selecting namespaces labelled
/// `pullcheck.dev/inject=LABEL`, the injected container checking the cluster's plain-HTTP
/// registry; `extra` are more `helm install` arguments (a later `--set mode=…` wins). Returns
/// once `helm install --wait` saw both pods ready, which they are only once their CA is in the
/// `caBundle`.
pub fn install(name: &str, label: &str, extra: &[&str]) -> Installed {
    let c = cluster();
    let kubeconfig = c.kubeconfig.display().to_string();
    // A release left by an earlier run of the tests on a kept cluster.
    let _ = helm_cmd(&["uninstall", name, "-n", name, "--wait"])
        .env("KUBECONFIG", &c.kubeconfig)
        .output();
    let namespace = c.namespace(name);
    let webhook = c.webhook_image();
    let (repository, tag) = webhook.rsplit_once(':').expect("a tag");
    let set = format!(
        "mode=both,image.repository={repository},image.tag={tag},image.pullPolicy=Always,inject.image={},namespaceLabel.value={label}",
        c.pullcheck_image()
    );
    let check_args = json!(["--plain-http", c.registry]).to_string();
    let check_args = format!("inject.checkArgs={check_args}");
    let chart = chart();
    let mut args = vec![
        "install",
        name,
        &chart,
        "-n",
        name,
        "--kubeconfig",
        &kubeconfig,
        "--set",
        &set,
        "--set-json",
        &check_args,
        "--wait",
        "--timeout",
        "4m",
    ];
    args.extend_from_slice(extra);
    let release = Release {
        name: name.to_string(),
        namespace: name.to_string(),
        kubeconfig: c.kubeconfig.clone(),
    };
    let started = Instant::now();
    let out = helm(&args);
    assert!(out.contains("STATUS: deployed"), "{out}");
    let fullname = format!("{name}-pullcheck");
    let config = c
        .get("", &format!("mutatingwebhookconfiguration/{fullname}"))
        .expect("the MutatingWebhookConfiguration");
    for hook in config["webhooks"].as_array().expect("webhooks") {
        let bundle = hook["clientConfig"]["caBundle"].as_str().unwrap_or("");
        assert!(
            !bundle.is_empty(),
            "the pods are ready, so their CA is in the caBundle: {config:#}"
        );
    }
    println!(
        "release {name}: installed and ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Installed {
        name: name.to_string(),
        label: label.to_string(),
        fullname,
        _release: release,
        _namespace: namespace,
    }
}

/// The release most tests share: the chart's defaults (Job rules on), label value `enabled`.
fn shared() -> &'static Installed {
    static SHARED: OnceLock<Installed> = OnceLock::new();
    SHARED.get_or_init(|| install("pc-webhook", "enabled", &[]))
}

/// A namespace of the test's own, opted in to release `to` once its pods are seen to get the
/// container (the API server matches the label from its own cache of namespaces).
pub fn opted_in(name: &str, to: &Installed) -> Namespace {
    let c = cluster();
    let ns = c.namespace(name);
    c.kubectl(&["label", "namespace", name, &format!("{LABEL}={}", to.label)]);
    wait_for(
        &format!("pods of {name} to pass through {}", to.name),
        minutes(1),
        || {
            let (pod, _) = dry_run(name, &bare_pod("probe", "Never", ""));
            match pod {
                Ok(p) if has_pullcheck(&p) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    );
    ns
}

/// `kubectl create --dry-run=server -o json` of `manifest` in `ns`: the object as the API server
/// would store it (every admission plugin and webhook run), or its refusal; and the warnings.
pub fn dry_run(ns: &str, manifest: &str) -> (Result<Value, String>, String) {
    let c = cluster();
    let out = c.kubectl_output(
        &[
            "create",
            "--dry-run=server",
            "-o",
            "json",
            "-n",
            ns,
            "-f",
            "-",
        ],
        Some(manifest),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        let object = serde_json::from_slice(&out.stdout).expect("kubectl's JSON");
        (Ok(object), stderr)
    } else {
        (Err(stderr.clone()), stderr)
    }
}

/// A Pod of the tools image; `restart` is its restartPolicy (empty: unset), `metadata` more
/// lines of its metadata (indented two spaces).
fn bare_pod(name: &str, restart: &str, metadata: &str) -> String {
    let c = cluster();
    let restart = if restart.is_empty() {
        String::new()
    } else {
        format!("  restartPolicy: {restart}\n")
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{metadata}spec:\n{restart}  hostNetwork: true\n  \
         containers:\n  - name: app\n    image: {}\n    command: [\"true\"]\n",
        c.tools_image()
    )
}

/// The init containers of a pod (or of a pod spec) named `pullcheck`.
fn pullchecks(spec: &Value) -> usize {
    spec["initContainers"]
        .as_array()
        .map(|cs| cs.iter().filter(|c| c["name"] == "pullcheck").count())
        .unwrap_or(0)
}

fn has_pullcheck(pod: &Value) -> bool {
    pullchecks(&pod["spec"]) == 1
}

#[test]
fn an_opted_in_plain_job_with_a_missing_image_fails_on_the_init_containers_exit_code() {
    let c = cluster();
    let ns = opted_in("pc-wh-missing", shared());
    let missing = format!("{}/tools:no-such-tag", c.registry);
    // Always: a miss is proven whatever the node holds (an IfNotPresent one counts only where
    // the pod may read the node's list).
    let manifest = pulled_always(job("missing", &missing, 5));
    assert!(!manifest.contains("pullcheck"), "a plain Job: {manifest}");
    c.apply(&ns.name, &manifest);

    let stored = c.get(&ns.name, "job/missing").expect("the Job");
    assert_eq!(
        pullchecks(&stored["spec"]["template"]["spec"]),
        1,
        "the webhook added the container to the Job's template: {stored:#}"
    );
    let rules = stored["spec"]["podFailurePolicy"]["rules"]
        .as_array()
        .expect("the webhook added podFailurePolicy rules");
    assert!(
        rules
            .iter()
            .any(|r| r["onExitCodes"]["containerName"] == "pullcheck"),
        "{rules:#?}"
    );

    let failed = wait_job(&ns.name, "missing", "Failed");
    let cond = condition(&failed, "Failed").expect("Failed");
    assert_eq!(cond["reason"], "PodFailurePolicy", "{cond}");
    let pods = c.job_pods(&ns.name, "missing");
    assert_eq!(pods.len(), 1, "FailJob stops the Job at its first pod");
    // The Job's pod came with the container from its template: the webhook left it as it was.
    assert!(has_pullcheck(&pods[0]), "{:#}", pods[0]["spec"]);
    let init = &pods[0]["status"]["initContainerStatuses"][0];
    assert_eq!(init["name"], "pullcheck");
    let terminated = &init["state"]["terminated"];
    assert_eq!(terminated["exitCode"], 3, "{init}");
    let message = terminated["message"].as_str().expect("termination message");
    assert!(message.contains("no-such-tag"), "{message}");
    println!(
        "webhook, missing image: Job Failed (PodFailurePolicy) {} s after creation",
        seconds_to(&failed, "Failed")
    );
}

#[test]
fn an_opted_in_job_with_a_good_image_completes() {
    let c = cluster();
    let ns = opted_in("pc-wh-good", shared());
    c.apply(&ns.name, &job("good", &c.tools_image(), 0));
    let done = wait_job(&ns.name, "good", "Complete");
    let pods = c.job_pods(&ns.name, "good");
    let init = &pods[0]["status"]["initContainerStatuses"][0];
    assert_eq!(init["name"], "pullcheck", "{:#}", pods[0]["status"]);
    assert_eq!(init["state"]["terminated"]["exitCode"], 0, "{init}");
    println!(
        "webhook, good image: Job Complete {} s after creation",
        seconds_to(&done, "Complete")
    );
}

#[test]
fn a_job_in_a_namespace_not_opted_in_is_untouched() {
    let c = cluster();
    let _ = shared();
    let ns = c.namespace("pc-wh-not-opted");
    let missing = format!("{}/tools:no-such-tag", c.registry);
    c.apply(&ns.name, &job("untouched", &missing, 5));
    let stored = c.get(&ns.name, "job/untouched").expect("the Job");
    assert_eq!(pullchecks(&stored["spec"]["template"]["spec"]), 0);
    assert!(stored["spec"]["podFailurePolicy"].is_null(), "{stored:#}");
    // Its pod waits on the pull, as Kubernetes leaves it, with no init container.
    let pod = wait_pull_failing(&ns.name, "untouched", minutes(2));
    assert!(pod["spec"]["initContainers"].is_null(), "{:#}", pod["spec"]);
}

#[test]
fn bare_and_replicaset_pods_get_the_container_and_an_annotated_pod_does_not() {
    let c = cluster();
    let ns = opted_in("pc-wh-pods", shared());

    // A bare Pod, restartPolicy left to its default (Always): it gets the container, and
    // inject's reason to prefer Never comes back as an admission warning.
    let out = c.kubectl_output(
        &["apply", "-n", &ns.name, "-f", "-"],
        Some(&bare_pod("bare", "", "")),
    );
    assert!(out.status.success(), "{out:?}");
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        warnings.contains("Warning:") && warnings.contains("restartPolicy"),
        "kubectl shows the webhook's warning: {warnings}"
    );
    let bare = c.get(&ns.name, "pod/bare").expect("the Pod");
    assert!(has_pullcheck(&bare), "{:#}", bare["spec"]);

    let annotated = bare_pod(
        "annotated",
        "Never",
        "  annotations:\n    pullcheck.dev/inject: \"false\"\n",
    );
    c.apply(&ns.name, &annotated);
    let pod = c.get(&ns.name, "pod/annotated").expect("the Pod");
    assert_eq!(pullchecks(&pod["spec"]), 0, "{:#}", pod["spec"]);

    let replicaset = format!(
        r#"apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs
spec:
  replicas: 1
  selector:
    matchLabels: {{app: rs}}
  template:
    metadata:
      labels: {{app: rs}}
    spec:
      hostNetwork: true
      containers:
      - name: app
        image: {}
        command: ["sleep", "3600"]
"#,
        c.tools_image()
    );
    c.apply(&ns.name, &replicaset);
    let stored = c.get(&ns.name, "replicaset/rs").expect("the ReplicaSet");
    assert_eq!(
        pullchecks(&stored["spec"]["template"]["spec"]),
        0,
        "the webhook acts on Pods and Jobs, not on ReplicaSets"
    );
    let pod = wait_for("the ReplicaSet's pod", minutes(1), || {
        let out = c.kubectl(&["get", "pods", "-n", &ns.name, "-l", "app=rs", "-o", "json"]);
        let list: Value = serde_json::from_str(&out).expect("JSON");
        list["items"]
            .as_array()
            .and_then(|a| a.first().cloned())
            .ok_or(out)
    });
    assert!(has_pullcheck(&pod), "{:#}", pod["spec"]);
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
}

#[test]
fn a_service_accounts_pull_secrets_are_mounted_as_the_pods_own() {
    let c = cluster();
    let ns = opted_in("pc-wh-sa", shared());
    c.pull_secret(&ns.name, "regcred", &c.registry, "someone", "not-used");
    c.apply(
        &ns.name,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: puller\nimagePullSecrets:\n- name: regcred\n",
    );
    let manifest = bare_pod("with-sa", "Never", "").replace(
        "spec:\n",
        "spec:\n  serviceAccountName: puller\n  automountServiceAccountToken: false\n",
    );
    assert!(!manifest.contains("imagePullSecrets"));
    c.apply(&ns.name, &manifest);
    let pod = c.get(&ns.name, "pod/with-sa").expect("the Pod");
    assert_eq!(
        pod["spec"]["imagePullSecrets"],
        json!([{"name": "regcred"}]),
        "the ServiceAccount admission gave the pod its account's secrets"
    );
    // The webhook saw them: the init container mounts the secret.
    let volumes = pod["spec"]["volumes"].as_array().expect("volumes");
    let volume = volumes
        .iter()
        .find(|v| v["secret"]["secretName"] == "regcred")
        .unwrap_or_else(|| panic!("a volume of secret regcred: {volumes:#?}"));
    let init = &pod["spec"]["initContainers"][0];
    assert_eq!(init["name"], "pullcheck");
    let mounts = init["volumeMounts"].as_array().expect("mounts");
    assert!(
        mounts.iter().any(|m| m["name"] == volume["name"]),
        "{mounts:#?}"
    );
    // And the check read it: the pod passed its init container.
    wait_for("the pod's init container to finish", minutes(2), || {
        let pod = c.get(&ns.name, "pod/with-sa").expect("the Pod");
        let term = &pod["status"]["initContainerStatuses"][0]["state"]["terminated"];
        if term["exitCode"] == 0 {
            Ok(())
        } else {
            Err(format!("{:#}", pod["status"]))
        }
    });
}

/// Removes what differs between two creations of the same object: its identity, its time,
/// the server's bookkeeping, and its uid wherever it is repeated (a Job's selector).
fn normalized(mut object: Value) -> Value {
    let uid = object["metadata"]["uid"].as_str().unwrap_or("").to_string();
    if let Some(m) = object["metadata"].as_object_mut() {
        for k in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "managedFields",
            "generation",
            "namespace",
        ] {
            m.remove(k);
        }
    }
    let mut text = object.to_string();
    if !uid.is_empty() {
        text = text.replace(&uid, "UID");
    }
    // A name the API server made from generateName.
    if object["metadata"]["generateName"].is_string()
        && let Some(name) = object["metadata"]["name"].as_str()
    {
        text = text.replace(&format!("\"{name}\""), "\"NAME\"");
    }
    // The service account's token volume has a random suffix of five characters.
    let prefix = "kube-api-access-";
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find(prefix) {
        let end = (i + prefix.len() + 5).min(rest.len());
        out.push_str(&rest[..i + prefix.len()]);
        out.push_str("XXXXX");
        rest = &rest[end..];
    }
    out.push_str(rest);
    serde_json::from_str(&out).expect("JSON")
}

/// The fixture objects the webhook and `inject` are compared on: each pod spec as a Pod, and
/// each `batch/v1` Job.
fn fixture_objects() -> Vec<(String, Value)> {
    use crate::common::fixtures::{fixture_objects, pod_specs};
    let mut all = Vec::new();
    for (file, object) in fixture_objects() {
        let mut specs = Vec::new();
        pod_specs(&object, &mut specs);
        for (i, spec) in specs.into_iter().enumerate() {
            let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}")}, "spec": spec});
            all.push((format!("{file}: pod spec {i}"), pod));
        }
        if object["apiVersion"] == "batch/v1" && object["kind"] == "Job" {
            let mut job = object.clone();
            if let Some(m) = job["metadata"].as_object_mut() {
                m.remove("namespace");
            }
            all.push((format!("{file}: the Job"), job));
        }
    }
    all
}

/// Proof 7, then proof 5 on the same release (its own: these change what it is set to).
#[test]
fn fixtures_through_the_api_server_equal_inject_and_pods_pass_a_webhook_scaled_to_zero() {
    let c = cluster();
    // Every option whose output the comparison should cover, as the webhook test does:
    // secrets, node images, a route and Job rules.
    let release = install(
        "pc-webhook-fixtures",
        "fixtures",
        &[
            "--set",
            "inject.secrets={extra},inject.nodeImages=true,inject.hostsConfigMap=registry-hosts",
        ],
    );
    let with = opted_in("pc-wh-fixtures", &release);
    let without = c.namespace("pc-wh-fixtures-plain");
    let image = c.pullcheck_image();
    // The namespace has no LimitRange, which the webhook reads: `inject` is told so.
    let none = std::env::temp_dir().join(format!(
        "pullcheck-{}-no-limitranges.yaml",
        std::process::id()
    ));
    std::fs::write(&none, "apiVersion: v1\nkind: List\nitems: []\n").expect("a temporary file");
    let none = none.display().to_string();
    let base = [
        "--image",
        image.as_str(),
        "--secret",
        "extra",
        "--node-images",
        "--hosts-configmap",
        "registry-hosts",
        "--limit-range-file",
        none.as_str(),
    ];
    let (mut compared, mut injected, mut refused) = (0, 0, 0);
    for (what, object) in fixture_objects() {
        let manifest = object.to_string();
        // A Job with a podFailurePolicy of its own keeps it: the webhook adds no rule there.
        let mut flags = base.to_vec();
        if object["spec"]["podFailurePolicy"].is_null() {
            flags.push("--job-failure-policy");
        }
        flags.extend_from_slice(&["--", "--plain-http", c.registry.as_str()]);
        let (by_inject, _) = crate::harness::inject(&manifest, &flags);
        let (through_webhook, _) = dry_run(&with.name, &manifest);
        let (through_inject, _) = dry_run(&without.name, &by_inject);
        match (through_webhook, through_inject) {
            (Ok(w), Ok(i)) => {
                let (w, i) = (normalized(w), normalized(i));
                assert_eq!(w, i, "{what}: the webhook and inject differ");
                let spec = if w["kind"] == "Job" {
                    &w["spec"]["template"]["spec"]
                } else {
                    &w["spec"]
                };
                injected += pullchecks(spec);
                compared += 1;
            }
            (Err(_), Err(_)) => refused += 1,
            (w, i) => panic!("{what}: accepted one way only:\nwebhook: {w:?}\ninject: {i:?}"),
        }
    }
    println!(
        "fixtures through the API server: {compared} compared ({injected} injected), {refused} refused both ways"
    );
    assert!(
        compared >= 30 && injected >= 25,
        "{compared} compared, {injected} injected"
    );

    // Proof 5: no webhook pod left. The API server finds no endpoint, and failurePolicy
    // Ignore lets the pod through.
    c.kubectl(&[
        "scale",
        "deployment",
        &release.fullname,
        "-n",
        &release.name,
        "--replicas=0",
    ]);
    wait_for("the webhook's pods gone", minutes(2), || {
        let out = c.kubectl(&[
            "get",
            "pods",
            "-n",
            &release.name,
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ]);
        if out.trim().is_empty() {
            Ok(())
        } else {
            Err(out)
        }
    });
    let started = Instant::now();
    c.apply(&with.name, &bare_pod("while-scaled-down", "Never", ""));
    let took = started.elapsed();
    let pod = c
        .get(&with.name, "pod/while-scaled-down")
        .expect("the pod was created");
    assert_eq!(pullchecks(&pod["spec"]), 0, "{:#}", pod["spec"]);
    println!(
        "webhook scaled to 0: pod created without the container in {:.2} s (kubectl apply, its start included; the webhook's timeout is 2 s)",
        took.as_secs_f64()
    );
    assert!(took < Duration::from_secs(30), "it never hangs: {took:?}");
}

/// p50 and p99 of `samples` (seconds), in milliseconds.
pub fn percentiles(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 * q).ceil() as usize).saturating_sub(1)];
    (at(0.50) * 1000.0, at(0.99) * 1000.0)
}

/// `curl` POSTing `body` to `url` `count` times over one connection, as the cluster's admin;
/// each request's total time in seconds.
pub fn post_times(url: &str, body: &str, count: usize) -> Vec<f64> {
    let c = cluster();
    let pki = c.dir.join("pki");
    let dir = tempfile::tempdir().expect("tempdir");
    let body_file = dir.path().join("pod.json");
    std::fs::write(&body_file, body).expect("write");
    let mut config = String::new();
    for _ in 0..count {
        config.push_str(&format!("url = \"{url}\"\noutput = \"/dev/null\"\n"));
    }
    let config_file = dir.path().join("curl.conf");
    std::fs::write(&config_file, config).expect("write");
    let out = std::process::Command::new("curl")
        .args(["-sS", "--fail-with-body", "-X", "POST"])
        .args(["-H", "Content-Type: application/json"])
        .arg("--data-binary")
        .arg(format!("@{}", body_file.display()))
        .arg("--cacert")
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .args(["-w", "%{http_code} %{time_total}\\n", "-K"])
        .arg(&config_file)
        .output()
        .expect("run curl");
    assert!(out.status.success(), "curl: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (code, time) = l.split_once(' ').expect("code and time");
            assert_eq!(code, "201", "a pod created");
            time.parse().expect("seconds")
        })
        .collect()
}

#[test]
fn admission_latency_of_500_pod_creations_with_and_without_the_webhook() {
    let c = cluster();
    let with = opted_in("pc-wh-latency", shared());
    let without = c.namespace("pc-wh-latency-plain");
    let server = api_server(c);
    // Pods that are never scheduled (a scheduling gate no one lifts): a creation is the API
    // server's work alone, not the node's.
    let body = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "lat-"},
        "spec": {
            "schedulingGates": [{"name": "pullcheck.dev/never"}],
            "restartPolicy": "Never",
            "containers": [{"name": "app", "image": c.tools_image()}],
        },
    })
    .to_string();
    let url = |ns: &str| format!("{server}/api/v1/namespaces/{ns}/pods");
    // Warm both paths (connections, caches), then alternate blocks of 100 so that any drift
    // of the machine falls on both.
    post_times(&url(&with.name), &body, 20);
    post_times(&url(&without.name), &body, 20);
    let before = webhook_calls(c, "pods.pullcheck.dev");
    let mark = trace_mark();
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        on.extend(post_times(&url(&with.name), &body, 100));
        off.extend(post_times(&url(&without.name), &body, 100));
    }
    let after = webhook_calls(c, "pods.pullcheck.dev");
    let sample = c.kubectl(&["get", "pods", "-n", &with.name, "-o", "json"]);
    let list: Value = serde_json::from_str(&sample).expect("JSON");
    let pods = list["items"].as_array().expect("items");
    assert_eq!(pods.len(), 520);
    assert!(
        pods.iter().all(has_pullcheck),
        "every pod got the container"
    );
    let (on50, on99) = percentiles(&mut on);
    let (off50, off99) = percentiles(&mut off);
    println!(
        "pod creation through the API server, 500 each (curl, one connection): with the webhook p50 {on50:.1} ms, p99 {on99:.1} ms; without p50 {off50:.1} ms, p99 {off99:.1} ms"
    );
    let calls = after.count - before.count;
    println!(
        "the API server's own measure of its {calls:.0} calls to the webhook (apiserver_admission_webhook_admission_duration_seconds): mean {:.2} ms, {:.1} % within 5 ms, {:.1} % within 25 ms",
        (after.sum - before.sum) / calls * 1000.0,
        (after.within_5ms - before.within_5ms) / calls * 100.0,
        (after.within_25ms - before.within_25ms) / calls * 100.0,
    );
    let mut spans = webhook_spans(c, "pods.pullcheck.dev", mark, calls as usize);
    println!(
        "the API server's own timing of the same calls (its tracing spans): {}",
        span_figures(&mut spans)
    );
}

/// The API server's histogram of its calls to a webhook of pullcheck (every release names them
/// `pods.pullcheck.dev` and `jobs.pullcheck.dev`), as counters.
#[derive(Default)]
pub struct Calls {
    pub sum: f64,
    pub count: f64,
    pub within_5ms: f64,
    pub within_25ms: f64,
}

/// The API server's calls to the webhooks whose name ends in `name` (`pods.pullcheck.dev`,
/// or `.pullcheck.dev` for all of them).
pub fn webhook_calls(c: &crate::harness::Cluster, name: &str) -> Calls {
    let metrics = c.kubectl(&["get", "--raw", "/metrics"]);
    let mut calls = Calls::default();
    for line in metrics.lines() {
        let Some(rest) =
            line.strip_prefix("apiserver_admission_webhook_admission_duration_seconds")
        else {
            continue;
        };
        if !rest.contains(&format!("{name}\"")) || !rest.contains("type=\"admit\"") {
            continue;
        }
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        if rest.starts_with("_sum") {
            calls.sum += value;
        } else if rest.starts_with("_count") {
            calls.count += value;
        } else if rest.contains("le=\"0.005\"") {
            calls.within_5ms += value;
        } else if rest.contains("le=\"0.025\"") {
            calls.within_25ms += value;
        }
    }
    calls
}

/// Now, as the API server's spans time their calls (nanoseconds since the Unix epoch): the start
/// of a window for [`webhook_spans`].
pub fn trace_mark() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// The API server's own timing of its calls to the webhooks whose name ends in `name`, made
/// since `mark` ([`trace_mark`]) and until now, in seconds: the spans of its tracing ("Call
/// mutating webhook", "Call validating webhook"), at nanosecond grain, where its histogram
/// (`apiserver_admission_webhook_admission_duration_seconds`, [`webhook_calls`]) has no bucket
/// between 5 and 25 ms. The cluster's trace sink appends them to `traces/webhook-calls.jsonl`
/// (tests/cluster/cluster.sh). The API server exports its spans in batches, every few seconds:
/// waits until `calls` of them are in (the histogram's count of the same calls), at most a
/// minute, and gives what is in then (its exporter drops spans when its queue is full; the count
/// printed says so).
pub fn webhook_spans(c: &crate::harness::Cluster, name: &str, mark: u64, calls: usize) -> Vec<f64> {
    let until = trace_mark();
    let file = c.dir.join("traces").join("webhook-calls.jsonl");
    let read = || {
        std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|span| span["webhook"].as_str().is_some_and(|w| w.ends_with(name)))
            .filter(|span| {
                span["start_unix_nano"]
                    .as_u64()
                    .is_some_and(|at| (mark..=until).contains(&at))
            })
            .filter_map(|span| span["duration_nano"].as_u64())
            .map(|nanos| nanos as f64 / 1e9)
            .collect::<Vec<f64>>()
    };
    let start = std::time::Instant::now();
    loop {
        let spans = read();
        if spans.len() >= calls || start.elapsed() > std::time::Duration::from_secs(60) {
            return spans;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The figures of [`webhook_spans`]: their count, p50, p99 and the largest, in milliseconds.
pub fn span_figures(spans: &mut [f64]) -> String {
    if spans.is_empty() {
        return "no spans".into();
    }
    let (p50, p99) = percentiles(spans);
    let max = spans.iter().copied().fold(0.0, f64::max) * 1000.0;
    format!(
        "{} spans: p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        spans.len()
    )
}

/// The API server's URL, from the admin's kubeconfig.
pub fn api_server(c: &crate::harness::Cluster) -> String {
    let out = c.kubectl(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]);
    out.trim().to_string()
}

#[test]
fn audit_mode_prints_what_it_would_add_and_the_pod_has_no_init_container() {
    let c = cluster();
    let release = install("pc-audit", "audit", &["--set", "webhook.audit=true"]);
    let ns = c.namespace("pc-wh-audit");
    c.kubectl(&[
        "label",
        "namespace",
        &ns.name,
        &format!("{LABEL}={}", release.label),
    ]);
    let would = format!("Warning: pullcheck (audit): would add to Job {}/", ns.name);
    // The API server matches the label from its own cache of namespaces.
    let probe = job("probe", &c.tools_image(), 0);
    wait_for(
        &format!("Jobs of {} to be audited", ns.name),
        minutes(1),
        || {
            let (stored, said) = dry_run(&ns.name, &probe);
            stored?;
            if said.contains(&would) {
                Ok(())
            } else {
                Err(said)
            }
        },
    );
    let image = c.tools_image();
    let out = c.kubectl_output(
        &["apply", "-n", &ns.name, "-f", "-"],
        Some(&job("good", &image, 0)),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let container = format!(
        "Warning: pullcheck (audit): would add to Job {}/good the init container pullcheck \
         checking 1 image ({image})",
        ns.name
    );
    assert!(stderr.contains(&container), "kubectl prints: {stderr}");
    let rule = format!(
        "Warning: pullcheck (audit): would add to Job {}/good the podFailurePolicy rule FailJob \
         on exit codes ",
        ns.name
    );
    assert!(stderr.contains(&rule), "kubectl prints: {stderr}");
    println!("audit mode: kubectl apply printed:\n{}", stderr.trim());
    let stored = c.get(&ns.name, "job/good").expect("the Job");
    assert_eq!(
        pullchecks(&stored["spec"]["template"]["spec"]),
        0,
        "{stored:#}"
    );
    assert!(stored["spec"]["podFailurePolicy"].is_null(), "{stored:#}");
    wait_job(&ns.name, "good", "Complete");
    let pods = c.job_pods(&ns.name, "good");
    assert!(!pods.is_empty(), "the Job's pod");
    for pod in &pods {
        assert!(pod["spec"]["initContainers"].is_null(), "{:#}", pod["spec"]);
    }
}
