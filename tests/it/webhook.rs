//! `pullcheck webhook` (the `webhook` build feature), served over TLS on loopback with a
//! certificate from a throw-away CA, sent AdmissionReviews as the API server sends them.
//!
//! The patch it answers is applied here by a small RFC 6902 applier of the test's own, and the
//! result compared with what `pullcheck inject` writes for the same object: the two must never
//! differ. `--mode watch` is answered by another decision (the Job rule on the watcher's
//! condition, nothing for pods), tested at the end against the patch it must write. A build
//! without the feature has no `webhook` subcommand: every test here then fails at start, saying
//! so (`scripts/test.sh` turns the feature on).

use crate::common::fixtures::{fixture_objects, pod_specs};
use crate::common::pki::TestPki;
use crate::common::{http_client, pullcheck};
use base64::Engine;
use serde_json::{Value, json};
use std::io::BufRead;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const IMAGE: &str = "registry.example.com/pullcheck:1";

/// A running `pullcheck webhook` and a client that trusts its CA.
struct Webhook {
    child: Child,
    base: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
}

impl Webhook {
    /// Starts it on a free loopback port with a fresh certificate and `args` (the inject flags).
    fn start(args: &[&str]) -> Webhook {
        Webhook::start_from(pullcheck(), args)
    }

    /// The same, as `command` runs it (hosts pinned to loopback addresses).
    fn start_from(command: crate::common::Pullcheck, args: &[&str]) -> Webhook {
        let pki = TestPki::for_names(&["127.0.0.1"]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tls.crt"), &pki.server_cert_pem).unwrap();
        std::fs::write(dir.path().join("tls.key"), &pki.server_key_pem).unwrap();
        // The measurement runs a release build; every other test the binary under test.
        let mut cmd = match std::env::var_os("PULLCHECK_WEBHOOK_BENCH_BIN") {
            Some(bin) => std::process::Command::new(bin),
            None => command.without_machine_env().command(),
        };
        let mut child = cmd
            .arg("webhook")
            .args(["--listen", "127.0.0.1:0", "--image", IMAGE])
            .arg("--tls-cert-file")
            .arg(dir.path().join("tls.crt"))
            .arg("--tls-key-file")
            .arg(dir.path().join("tls.key"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        let addr = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => match line.strip_prefix("pullcheck: webhook: listening on ") {
                    Some(addr) => break addr.to_string(),
                    None => seen.push(line),
                },
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "`pullcheck webhook` did not start (a build without `--features webhook`? \
                         scripts/test.sh turns it on); its stderr:\n{}",
                        seen.join("\n")
                    );
                }
            }
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Webhook {
            child,
            base: format!("https://{addr}"),
            client: http_client(Some(&pki.ca_der)),
            runtime,
            dir,
        }
    }

    /// POSTs `body` to `/mutate`: the status and the body.
    fn post(&self, body: Vec<u8>) -> (u16, Vec<u8>) {
        self.try_post(body).unwrap()
    }

    /// The same, with the error of a request that got no answer.
    fn try_post(&self, body: Vec<u8>) -> Result<(u16, Vec<u8>), reqwest::Error> {
        self.runtime.block_on(async {
            let response = self
                .client
                .post(format!("{}/mutate", self.base))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await?;
            let status = response.status().as_u16();
            Ok((status, response.bytes().await?.to_vec()))
        })
    }

    /// The `response` of the review of `object`, checked to allow it and to name the uid.
    fn review(&self, operation: &str, object: &Value) -> Value {
        let review = review_of(operation, object);
        let (status, body) = self.post(serde_json::to_vec(&review).unwrap());
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
        let response = answer["response"].clone();
        assert_eq!(response["uid"], review["request"]["uid"]);
        assert_eq!(response["allowed"], true, "{response}");
        response
    }

    /// `object` after the review's patch (unchanged without one), and the warnings.
    fn admit(&self, object: &Value) -> (Value, Vec<String>) {
        let response = self.review("CREATE", object);
        let mut after = object.clone();
        if let Some(patch) = response["patch"].as_str() {
            assert_eq!(response["patchType"], "JSONPatch");
            let ops: Value = serde_json::from_slice(
                &base64::engine::general_purpose::STANDARD
                    .decode(patch)
                    .unwrap(),
            )
            .unwrap();
            apply(&mut after, ops.as_array().unwrap());
        } else {
            assert!(response["patchType"].is_null(), "{response}");
        }
        (after, warnings(&response))
    }

    fn get(&self, path: &str) -> (u16, String) {
        self.get_with(&self.client, path)
    }

    fn get_with(&self, client: &reqwest::Client, path: &str) -> (u16, String) {
        self.runtime.block_on(async {
            let response = client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        })
    }

    /// One counter of `/metrics` (`name{labels}`).
    fn metric(&self, series: &str) -> f64 {
        let (status, text) = self.get("/metrics");
        assert_eq!(status, 200);
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
            .parse()
            .unwrap()
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn warnings(response: &Value) -> Vec<String> {
    response["warnings"]
        .as_array()
        .map(|w| w.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// An AdmissionReview v1 of `object` as the API server sends it.
fn review_of(operation: &str, object: &Value) -> Value {
    let (group, version) = match object["apiVersion"]
        .as_str()
        .unwrap_or("v1")
        .split_once('/')
    {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (
            String::new(),
            object["apiVersion"].as_str().unwrap_or("v1").to_string(),
        ),
    };
    let kind = object["kind"].as_str().unwrap_or("Pod");
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or("team");
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{}", next_uid()),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": format!("{}s", kind.to_lowercase())},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:team:default"},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        }
    })
}

/// A different uid for each review.
fn next_uid() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Applies RFC 6902 `add`, `remove` and `replace` (all the webhook writes; anything else fails
/// the test).
fn apply(doc: &mut Value, ops: &[Value]) {
    for op in ops {
        let path = op["path"].as_str().unwrap();
        let tokens: Vec<String> = path
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        let (last, parents) = tokens.split_last().expect("a patch of the whole object");
        let mut target = &mut *doc;
        for t in parents {
            target = match target {
                Value::Object(m) => m.get_mut(t).unwrap_or_else(|| panic!("{path}: no {t}")),
                Value::Array(a) => &mut a[t.parse::<usize>().unwrap()],
                _ => panic!("{path}: {t} is in a scalar"),
            };
        }
        match (op["op"].as_str().unwrap(), target) {
            ("add", Value::Object(m)) => {
                m.insert(last.clone(), op["value"].clone());
            }
            ("add", Value::Array(a)) if last == "-" => a.push(op["value"].clone()),
            ("add", Value::Array(a)) => {
                let i: usize = last.parse().unwrap();
                assert!(i <= a.len(), "{path}: past the end");
                a.insert(i, op["value"].clone());
            }
            ("remove", Value::Object(m)) => {
                m.remove(last)
                    .unwrap_or_else(|| panic!("{path}: nothing to remove"));
            }
            ("remove", Value::Array(a)) => {
                a.remove(last.parse().unwrap());
            }
            ("replace", Value::Object(m)) => {
                let slot = m
                    .get_mut(last)
                    .unwrap_or_else(|| panic!("{path}: nothing to replace"));
                *slot = op["value"].clone();
            }
            ("replace", Value::Array(a)) => a[last.parse::<usize>().unwrap()] = op["value"].clone(),
            (other, _) => panic!("{path}: unexpected op {other}"),
        }
    }
}

/// What `pullcheck inject ARGS` writes for `object`, read back as JSON.
fn injected(object: &Value, args: &[&str]) -> Value {
    let run = pullcheck()
        .without_machine_env()
        .inject()
        .args(["--image", IMAGE])
        .args(args)
        .stdin(serde_json::to_vec_pretty(object).unwrap())
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

fn pod(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team"},
        "spec": spec,
    })
}

fn plain_pod(restart: &str) -> Value {
    pod(
        "p",
        json!({
            "restartPolicy": restart,
            "imagePullSecrets": [{"name": "from-the-service-account"}],
            "containers": [{"name": "app", "image": "registry.example.com/team/app:1"}],
        }),
    )
}

fn job(policy: Option<Value>) -> Value {
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "team"},
        "spec": {
            "backoffLimit": 2,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "registry.example.com/team/train:1"}],
            }},
        },
    });
    if let Some(policy) = policy {
        job["spec"]["podFailurePolicy"] = policy;
    }
    job
}

/// The inject flags the comparisons run with: secrets, node images, a route and Job rules, so
/// that every part of what `inject` writes is compared.
const INJECT_FLAGS: [&str; 6] = [
    "--secret",
    "extra",
    "--node-images",
    "--hosts-configmap",
    "registry-hosts",
    "--job-failure-policy",
];

#[test]
fn every_fixture_pod_spec_admitted_equals_what_inject_writes() {
    let webhook = Webhook::start(&INJECT_FLAGS);
    let mut injected_count = 0;
    let mut compared = 0;
    for (file, object) in fixture_objects() {
        let mut specs = Vec::new();
        pod_specs(&object, &mut specs);
        let mut admitted: Vec<(String, Value)> = specs
            .into_iter()
            .enumerate()
            .map(|(i, spec)| (format!("{file}: pod spec {i}"), pod(&format!("p{i}"), spec)))
            .collect();
        if object["apiVersion"] == "batch/v1" && object["kind"] == "Job" {
            let mut job = object.clone();
            job["metadata"]["namespace"] = json!("team");
            admitted.push((format!("{file}: the Job"), job));
        }
        for (what, object) in admitted {
            let (after, _) = webhook.admit(&object);
            // A Job with a podFailurePolicy of its own keeps it as it is: the webhook adds no
            // rule there (where `inject --job-failure-policy` adds its rules before the Job's).
            let flags: Vec<&str> = if object["spec"]["podFailurePolicy"].is_null() {
                INJECT_FLAGS.to_vec()
            } else {
                INJECT_FLAGS[..5].to_vec()
            };
            let expected = injected(&object, &flags);
            assert_eq!(after, expected, "{what}: the webhook and inject differ");
            if after != object {
                injected_count += 1;
            }
            compared += 1;
        }
    }
    println!("{compared} fixture pod specs and Jobs compared, {injected_count} injected");
    // The corpus has dozens of pod specs: a reader that found none would compare nothing.
    assert!(
        compared >= 30 && injected_count >= 25,
        "{compared} compared, {injected_count} injected"
    );
}

#[test]
fn the_nodes_own_registry_configuration_is_mounted_as_inject_mounts_it() {
    let flags = ["--registries-from-node", "/etc/crio/containers"];
    let webhook = Webhook::start(&flags);
    let object = job(None);
    let (after, _) = webhook.admit(&object);
    assert_eq!(after, injected(&object, &flags));
    let spec = &after["spec"]["template"]["spec"];
    assert_eq!(
        spec["volumes"][0]["hostPath"],
        json!({"path": "/etc/crio/containers", "type": "DirectoryOrCreate"})
    );
    assert_eq!(
        spec["initContainers"][0]["args"],
        json!([
            "check",
            "--registries-conf",
            "/etc/pullcheck/node-containers/registries.conf",
            "--registries-conf-dir",
            "/etc/pullcheck/node-containers/registries.conf.d",
            "--certs-dir",
            "/etc/pullcheck/node-containers/certs.d"
        ])
    );
}

#[test]
fn pods_get_the_container_and_inject_s_reasons_as_warnings() {
    let webhook = Webhook::start(&["--namespace", "pullcheck-system"]);
    // Never: the pod gets the container, its pull secret (the service account's, merged in by
    // the API server before webhooks) mounted, and no warning but the default-image one.
    let pod = plain_pod("Never");
    let (after, warnings) = webhook.admit(&pod);
    assert_eq!(after, injected(&pod, &[]));
    let init = &after["spec"]["initContainers"][0];
    assert_eq!(init["name"], "pullcheck");
    assert_eq!(init["image"], IMAGE);
    assert_eq!(
        after["spec"]["volumes"][0]["secret"]["secretName"],
        "from-the-service-account"
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    // Always (the API server's default): injected, with inject's reason as a warning.
    let pod = plain_pod("Always");
    let (after, warnings) = webhook.admit(&pod);
    assert_eq!(after, injected(&pod, &[]));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("pullcheck: Pod/p spec: restartPolicy is Always, not Never"),
        "{warnings:?}"
    );
    // A ReplicaSet's pod (a Deployment's): the container, with a warning that is true for it
    // (no advice to set Never, which a ReplicaSet refuses).
    let mut owned = plain_pod("Always");
    owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "web-7d9f8b6c5", "uid": "9c1e", "controller": true, "blockOwnerDeletion": true}]);
    let (after, warnings) = webhook.admit(&owned);
    assert_eq!(after, injected(&owned, &[]));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "pullcheck: Pod/p spec: restartPolicy is Always, as a ReplicaSet requires: a failed \
         check restarts with back-off (Init:CrashLoopBackOff) and never fails the pod; \
         `kubectl describe pod` shows why"
    );
    // A pod inject leaves alone: unchanged, with inject's reason.
    let mut taken = plain_pod("Never");
    taken["spec"]["containers"][0]["name"] = json!("pullcheck");
    let (after, warnings) = webhook.admit(&taken);
    assert_eq!(after, taken);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("already named pullcheck; left unchanged")),
        "{warnings:?}"
    );
    // generateName and no kind in the object (the review's kind says Pod).
    let mut generated = plain_pod("Never");
    generated["metadata"] = json!({"generateName": "web-", "namespace": "team"});
    let (after, _) = webhook.admit(&generated);
    assert_eq!(after["spec"]["initContainers"][0]["name"], "pullcheck");
}

#[test]
fn who_is_left_alone() {
    let webhook = Webhook::start(&["--namespace", "pullcheck-system", "--job-failure-policy"]);
    let unchanged = |object: &Value| {
        let (after, warnings) = webhook.admit(object);
        assert_eq!(&after, object);
        warnings
    };
    let mut opted_out = plain_pod("Never");
    opted_out["metadata"]["annotations"] = json!({"pullcheck.dev/inject": "false"});
    assert!(unchanged(&opted_out).is_empty());
    // A Job opted out on its own metadata: no container, and nothing but the same annotation
    // in its template, so that its pods (which carry the template's annotations, not the
    // Job's) are left alone too.
    let mut job_opted_out = job(None);
    job_opted_out["metadata"]["annotations"] = json!({"pullcheck.dev/inject": "false"});
    let (job_admitted, warnings) = webhook.admit(&job_opted_out);
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut want = job_opted_out.clone();
    want["spec"]["template"]["metadata"] =
        json!({"annotations": {"pullcheck.dev/inject": "false"}});
    assert_eq!(job_admitted, want);
    let mut template_opted_out = job(None);
    template_opted_out["spec"]["template"]["metadata"] =
        json!({"annotations": {"pullcheck.dev/inject": "false"}});
    assert!(unchanged(&template_opted_out).is_empty());
    let mut mirror = plain_pod("Never");
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "abc"});
    assert!(unchanged(&mirror).is_empty());
    let mut own = plain_pod("Never");
    own["metadata"]["namespace"] = json!("pullcheck-system");
    assert!(unchanged(&own).is_empty());
    // Not a CREATE, or another kind: unchanged (another kind with a warning).
    let response = webhook.review("UPDATE", &plain_pod("Never"));
    assert!(
        response["patch"].is_null() && response["warnings"].is_null(),
        "{response}"
    );
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "team"}, "spec": {}});
    let warnings = unchanged(&deployment);
    assert!(
        warnings[0].contains("not apps/v1 Deployment"),
        "{warnings:?}"
    );
    // Idempotent: what it admitted, admitted again, is left as it is.
    let (once, _) = webhook.admit(&plain_pod("Never"));
    assert!(unchanged(&once).is_empty());
    assert_eq!(
        webhook
            .metric("pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"opted-out\"}"),
        3.0
    );
    assert_eq!(
        webhook.metric(
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"mirror-pod\"}"
        ),
        1.0
    );
    assert_eq!(
        webhook.metric(
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"own-namespace\"}"
        ),
        1.0
    );
    assert_eq!(
        webhook.metric(
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"already-injected\"}"
        ),
        1.0
    );
    assert_eq!(
        webhook.metric(
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"not-create\"}"
        ),
        1.0
    );
    assert_eq!(
        webhook.metric(
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"other-kind\"}"
        ),
        1.0
    );
    assert_eq!(
        webhook.metric("pullcheck_webhook_admissions_total{outcome=\"injected\"}"),
        1.0
    );
    // The opted-out Job's pod, with its template's metadata as the Job controller writes it.
    let template = &job_admitted["spec"]["template"];
    let mut job_pod = pod("train-x", template["spec"].clone());
    job_pod["metadata"]["annotations"] = template["metadata"]["annotations"].clone();
    assert!(unchanged(&job_pod).is_empty());
}

#[test]
fn jobs_get_the_container_in_their_template_and_rules_only_without_their_own() {
    let webhook = Webhook::start(&["--job-failure-policy"]);
    let plain = job(None);
    let (after, _) = webhook.admit(&plain);
    assert_eq!(after, injected(&plain, &["--job-failure-policy"]));
    let template = &after["spec"]["template"]["spec"];
    assert_eq!(template["initContainers"][0]["name"], "pullcheck");
    let rules = after["spec"]["podFailurePolicy"]["rules"]
        .as_array()
        .unwrap();
    assert!(
        rules
            .iter()
            .all(|r| r["onExitCodes"]["containerName"] == "pullcheck"),
        "{rules:?}"
    );
    assert_eq!(rules[0]["action"], "FailJob");
    // Its own podFailurePolicy is kept as it is: the container only.
    let own =
        json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
    let with_own = job(Some(own.clone()));
    let (after, _) = webhook.admit(&with_own);
    assert_eq!(after["spec"]["podFailurePolicy"], own);
    assert_eq!(after, injected(&with_own, &[]));
    assert_eq!(
        after["spec"]["template"]["spec"]["initContainers"][0]["name"],
        "pullcheck"
    );
    // The pods the Job creates carry the container already: left as they are.
    let mut job_pod = pod("train-x", after["spec"]["template"]["spec"].clone());
    job_pod["metadata"]["labels"] = json!({"batch.kubernetes.io/job-name": "train"});
    let (again, warnings) = webhook.admit(&job_pod);
    assert_eq!(again, job_pod);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn what_cannot_be_read_is_admitted_or_refused_with_400_never_blocked() {
    let webhook = Webhook::start(&[]);
    // Objects that are not pods: admitted unchanged, with a warning.
    for object in [
        json!("a string"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": 7}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": []}),
    ] {
        let mut review = review_of("CREATE", &json!({"apiVersion": "v1", "kind": "Pod"}));
        review["request"]["object"] = object.clone();
        let (status, body) = webhook.post(serde_json::to_vec(&review).unwrap());
        assert_eq!(status, 200);
        let answer: Value = serde_json::from_slice(&body).unwrap();
        let response = &answer["response"];
        assert_eq!(response["allowed"], true, "{object}: {response}");
        assert!(response["patch"].is_null(), "{object}: {response}");
        assert!(!warnings(response).is_empty(), "{object}: {response}");
    }
    // A review without a kind: admitted, with a warning.
    let mut review = review_of("CREATE", &plain_pod("Never"));
    review["request"]["kind"] = Value::Null;
    let (status, body) = webhook.post(serde_json::to_vec(&review).unwrap());
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["allowed"], true);
    // No uid to answer to, or not JSON: 400 (the webhook's failurePolicy: Ignore admits it).
    assert_eq!(webhook.post(b"{\"request\": {}}".to_vec()).0, 400);
    assert_eq!(webhook.post(b"not json".to_vec()).0, 400);
    // Larger than the API server's own limit: refused unread, and the server goes on.
    // Refused from its Content-Length: 413, or, when the answer and the close come while the
    // client still writes, a broken pipe; never read, never admitted.
    match webhook.try_post(vec![b' '; 4 * 1024 * 1024]) {
        Ok((status, _)) => assert_eq!(status, 413),
        Err(e) => assert!(format!("{e:?}").contains("BodyWrite"), "{e:?}"),
    }
    let (after, _) = webhook.admit(&plain_pod("Never"));
    assert_eq!(after["spec"]["initContainers"][0]["name"], "pullcheck");
    // The object that is no JSON object, the review without a uid, the body not JSON, the one
    // too large; the pod specs inject cannot read are `skipped` with inject's warning.
    assert_eq!(
        webhook.metric("pullcheck_webhook_admissions_total{outcome=\"error\"}"),
        4.0
    );
    // A bad inject flag is a usage error at start, not a warning on every pod.
    let run = pullcheck()
        .without_machine_env()
        .args([
            "webhook",
            "--tls-cert-file",
            "/x",
            "--tls-key-file",
            "/y",
            "--",
            "--timout",
            "3s",
        ])
        .run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = pullcheck().without_machine_env().arg("webhook").run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--tls-cert-file and --tls-key-file, or --self-signed"),
        "{}",
        run.stderr
    );
    // --self-signed without the namespace its certificate names (or with an empty one): a
    // usage error before it listens.
    for namespace in [None, Some("")] {
        let mut command = pullcheck().without_machine_env().args([
            "webhook",
            "--self-signed",
            "--listen",
            "127.0.0.1:0",
        ]);
        if let Some(namespace) = namespace {
            command = command.env("PULLCHECK_WEBHOOK_NAMESPACE", namespace);
        }
        let run = command.run();
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("--self-signed needs the webhook's namespace")
                && !run.stderr.contains("listening on"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn health_readiness_and_metrics() {
    let webhook = Webhook::start(&[]);
    assert_eq!(webhook.get("/healthz"), (200, "ok\n".to_string()));
    assert_eq!(webhook.get("/readyz"), (200, "ok\n".to_string()));
    assert_eq!(webhook.get("/nothing").0, 404);
    for _ in 0..3 {
        webhook.admit(&plain_pod("Never"));
    }
    let mut opted_out = plain_pod("Never");
    opted_out["metadata"]["annotations"] = json!({"pullcheck.dev/inject": "false"});
    webhook.admit(&opted_out);
    webhook.post(b"not json".to_vec());
    let (_, text) = webhook.get("/metrics");
    for line in [
        "# TYPE pullcheck_webhook_admissions_total counter",
        "pullcheck_webhook_admissions_total{outcome=\"injected\"} 3",
        "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"opted-out\"} 1",
        "pullcheck_webhook_admissions_total{outcome=\"error\"} 1",
        "# TYPE pullcheck_webhook_admission_duration_seconds histogram",
        "pullcheck_webhook_admission_duration_seconds_bucket{le=\"+Inf\"} 5",
        "pullcheck_webhook_admission_duration_seconds_count 5",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }
    // Cumulative buckets never decrease.
    let buckets: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("pullcheck_webhook_admission_duration_seconds_bucket"))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    recorded_metrics("webhook.prom", &text, true);
}

/// `tests/fixtures/metrics/NAME`, the `/metrics` text a server really served, which the
/// chart's alerting rules are tested on (tests/cluster/alerts.rs): `PULLCHECK_BLESS=1` writes
/// `text` there; otherwise its families (the `# HELP` and `# TYPE` lines) must be the
/// recording's, and with `series` also every series' name and labels (the values are the
/// run's own), so that a metric renamed or relabelled in the code fails here until the
/// recording, and then the rules' tests, follow it.
pub fn recorded_metrics(name: &str, text: &str, series: bool) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metrics")
        .join(name);
    if std::env::var_os("PULLCHECK_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let shape = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| series || l.starts_with('#'))
            .map(|l| match l.starts_with('#') {
                true => l.to_string(),
                false => l.rsplit_once(' ').map_or(l, |(s, _)| s).to_string(),
            })
            .collect()
    };
    let recorded = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        shape(&recorded),
        shape(text),
        "{} is not what the server serves: run `PULLCHECK_BLESS=1 cargo test --test it \
         --features test-hooks,webhook,watch metrics`, commit it, and make the chart's alerting \
         rules (charts/pullcheck/files/prometheus-rules.yaml) and their tests follow",
        path.display()
    );
}

#[test]
fn a_renewed_certificate_in_the_files_is_served_without_a_restart() {
    let webhook = Webhook::start(&[]);
    assert_eq!(webhook.get("/healthz").0, 200);
    let renewed = TestPki::for_names(&["127.0.0.1"]);
    // The key first, then the chain: between the two the pair does not match, and the old one
    // stays in service.
    std::fs::write(webhook.dir.path().join("tls.key"), &renewed.server_key_pem).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        webhook.get("/healthz").0,
        200,
        "the old pair is still served"
    );
    std::fs::write(webhook.dir.path().join("tls.crt"), &renewed.server_cert_pem).unwrap();
    let new_client = http_client(Some(&renewed.ca_der));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let served = webhook.runtime.block_on(async {
            new_client
                .get(format!("{}/healthz", webhook.base))
                .send()
                .await
                .is_ok()
        });
        if served {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the renewed certificate was not served"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // A client that trusts only the old CA now fails its handshake.
    let old_client = http_client(Some(&TestPki::for_names(&["127.0.0.1"]).ca_der));
    let failed = webhook.runtime.block_on(async {
        old_client
            .get(format!("{}/healthz", webhook.base))
            .send()
            .await
            .is_err()
    });
    assert!(failed);
}

/// Admission latency over 500 Pod reviews on one keep-alive connection, as the API server
/// sends them; prints p50 and p99. `bench/webhook.sh` runs it against a release build
/// (`PULLCHECK_WEBHOOK_BENCH_BIN`); here it bounds a debug build loosely.
#[test]
#[ignore = "a measurement: bench/webhook.sh runs it"]
fn latency_of_500_pod_reviews() {
    let webhook = Webhook::start(&["--secret", "extra", "--job-failure-policy"]);
    let bodies = pod_reviews(500, None);
    let (p50, p99, max) = latency(&webhook, &bodies);
    println!(
        "webhook admission latency over {} Pod reviews (client round trip, one TLS connection): p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        bodies.len(),
    );
}

/// The webhook's memory under a flood of new images: 10,000 Pod reviews with `--verdicts`, each
/// of an image no review asked before (9 in 10 in a repository of its own that does not exist,
/// 1 in 10 a tag that does), sent one after another; the webhook's `VmRSS` and `VmHWM`
/// (`/proc/<pid>/status`) after every 1,000, with the registry requests its verdicts sent.
/// `PULLCHECK_WEBHOOK_BENCH_BIN` runs another build (an older commit's, for a before and after);
/// `PULLCHECK_FLOOD_REVIEWS` sends another number of reviews.
#[test]
#[ignore = "a measurement: the webhook's memory under a flood of new images"]
fn memory_under_a_flood_of_new_images() {
    let reviews: usize = std::env::var("PULLCHECK_FLOOD_REVIEWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let reg = crate::common::plain_registry();
    reg.push_oci_manifest("flood/app", "v1");
    let name = "flood.registry.test";
    let webhook = verdict_webhook(name, &["--verdicts"]);
    let status = |field: &str| -> f64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", webhook.child.id())).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB"))
            .map_or(0.0, |kb| kb.trim().parse::<f64>().unwrap_or(0.0) / 1024.0)
    };
    let started = Instant::now();
    println!(
        "webhook flood: reviews 0, VmRSS {:.1} MiB, VmHWM {:.1} MiB",
        status("VmRSS:"),
        status("VmHWM:")
    );
    for n in 0..reviews {
        let image = if n % 10 == 0 {
            format!("{name}/flood/app:v1")
        } else {
            format!("{name}/flood/r{n}:t{n}")
        };
        let mut pod = plain_pod("Never");
        pod["metadata"]["name"] = json!(format!("p{n}"));
        pod["spec"]["containers"][0]["image"] = json!(image);
        pod["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
        let (code, _) = webhook.post(serde_json::to_vec(&review_of("CREATE", &pod)).unwrap());
        assert_eq!(code, 200);
        if (n + 1) % 1000.min(reviews.max(1) / 4).max(1) == 0 {
            println!(
                "webhook flood: reviews {}, VmRSS {:.1} MiB, VmHWM {:.1} MiB, {:.1} s, registry \
                 requests {}",
                n + 1,
                status("VmRSS:"),
                status("VmHWM:"),
                started.elapsed().as_secs_f64(),
                webhook.metric("pullcheck_webhook_verdict_registry_requests_total")
            );
        }
    }
}

/// `n` reviews of bare Pods ([`plain_pod`]), each its own name; with `image`, of that image
/// pulled `Always`.
fn pod_reviews(n: usize, image: Option<&str>) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut pod = plain_pod("Never");
            pod["metadata"]["name"] = json!(format!("p{i}"));
            if let Some(image) = image {
                pod["spec"]["containers"][0]["image"] = json!(image);
                pod["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
            }
            serde_json::to_vec(&review_of("CREATE", &pod)).unwrap()
        })
        .collect()
}

/// The client's round trip of each of `bodies` after 20 to warm the connection and the code:
/// p50, p99 and max, in milliseconds.
fn latency(webhook: &Webhook, bodies: &[Vec<u8>]) -> (f64, f64, f64) {
    for body in bodies.iter().take(20) {
        webhook.post(body.clone());
    }
    let mut took: Vec<Duration> = bodies
        .iter()
        .map(|body| {
            let started = Instant::now();
            let (status, _) = webhook.post(body.clone());
            assert_eq!(status, 200);
            started.elapsed()
        })
        .collect();
    took.sort();
    let p = |q: f64| took[((took.len() as f64 * q).ceil() as usize).min(took.len()) - 1];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(p(0.50)), ms(p(0.99)), ms(took[took.len() - 1]))
}

#[test]
#[ignore = "a measurement: the verdicts' cost on reviews whose image they hold"]
fn latency_of_pod_reviews_with_and_without_verdicts_kept() {
    let reg = crate::common::plain_registry();
    reg.push_oci_manifest("verdicts/latency", "v1");
    let name = "latency.registry.test";
    let image = format!("{name}/verdicts/latency:v1");
    let args = ["--secret", "extra", "--job-failure-policy"];
    let off = Webhook::start_from(pullcheck().pin(name, &reg.host()), &args);
    let mut with = args.to_vec();
    with.extend(["--verdicts", "--verdict-plain-http", name]);
    let on = Webhook::start_from(pullcheck().pin(name, &reg.host()), &with);
    let bodies = pod_reviews(100, Some(&image));
    // In turn, five blocks of 100 each, so that any drift of the machine falls on both.
    let (mut off_p50, mut on_p50, mut off_p99, mut on_p99) = (vec![], vec![], vec![], vec![]);
    for _ in 0..5 {
        let (p50, p99, _) = latency(&off, &bodies);
        off_p50.push(p50);
        off_p99.push(p99);
        let (p50, p99, _) = latency(&on, &bodies);
        on_p50.push(p50);
        on_p99.push(p99);
    }
    assert!(
        on.metric("pullcheck_webhook_verdict_cache_total{result=\"hit\"}") >= 500.0,
        "the image's verdict was kept"
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, b, c, d) = (
        median(&mut off_p50),
        median(&mut on_p50),
        median(&mut off_p99),
        median(&mut on_p99),
    );
    println!(
        "webhook admission latency, 5 blocks of 100 Pod reviews each, medians of the blocks: without verdicts p50 {a:.2} ms, p99 {c:.2} ms; with verdicts (the image's kept) p50 {b:.2} ms, p99 {d:.2} ms; ratio with/without p50 {:.2}x, p99 {:.2}x",
        b / a,
        d / c
    );
}

#[test]
fn after_sigterm_it_serves_a_while_not_ready_then_exits() {
    let mut webhook = Webhook::start(&[]);
    assert_eq!(webhook.get("/readyz").0, 200);
    let pid = webhook.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    // Still answering reviews, but no longer ready, so that its endpoint is dropped first.
    let deadline = Instant::now() + Duration::from_secs(3);
    while webhook.get("/readyz").0 == 200 {
        assert!(Instant::now() < deadline, "still ready after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (after, _) = webhook.admit(&plain_pod("Never"));
    assert_eq!(after["spec"]["initContainers"][0]["name"], "pullcheck");
    let deadline = Instant::now() + Duration::from_secs(15);
    let code = loop {
        if let Some(status) = webhook.child.try_wait().unwrap() {
            break status.code();
        }
        assert!(
            Instant::now() < deadline,
            "still running 15 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(0));
}

/// A CronJob of [`job`]'s spec, as the API server sends it (its job template is not defaulted).
fn cron_job() -> Value {
    let mut spec = job(None)["spec"].clone();
    spec.as_object_mut().unwrap().remove("podReplacementPolicy");
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "team"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": spec}},
    })
}

/// `--mode watch`: the rule `FailJob` on the watcher's condition, the replacement policy the
/// API server then needs, and nothing else; pods as they came.
#[test]
fn watch_mode_adds_only_the_job_rule_and_leaves_pods_alone() {
    let webhook = Webhook::start(&["--mode", "watch"]);
    let rule = json!({"rules": [{"action": "FailJob",
        "onPodConditions": [{"type": "ConfigIssue", "status": "True"}]}]});

    // Pods: unchanged, not a word (in watch mode the chart sends none; one sent is let be).
    for restart in ["Never", "Always"] {
        let pod = plain_pod(restart);
        let (after, warnings) = webhook.admit(&pod);
        assert_eq!(after, pod, "{restart}");
        assert!(warnings.is_empty(), "{restart}: {warnings:?}");
    }

    // A Job as the API server sends it (podReplacementPolicy defaulted).
    let mut plain = job(None);
    plain["spec"]["podReplacementPolicy"] = json!("TerminatingOrFailed");
    let (after, warnings) = webhook.admit(&plain);
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut want = plain.clone();
    want["spec"]["podFailurePolicy"] = rule.clone();
    want["spec"]["podReplacementPolicy"] = json!("Failed");
    assert_eq!(
        after, want,
        "the rule and the replacement policy, nothing else"
    );
    assert_eq!(after["spec"]["template"], plain["spec"]["template"]);
    // Admitted again (a reinvocation): it has the rule, nothing more is added.
    let (again, warnings) = webhook.admit(&after);
    assert_eq!(again, after);
    assert!(warnings.is_empty(), "{warnings:?}");

    // A CronJob: the rule in its job template.
    let cron = cron_job();
    let (after, warnings) = webhook.admit(&cron);
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut want = cron.clone();
    want["spec"]["jobTemplate"]["spec"]["podFailurePolicy"] = rule.clone();
    assert_eq!(after, want);

    // Its own policy, OnFailure, the opt-out: as written; the first two say what that means.
    let own = job(Some(json!({"rules": [{"action": "FailJob",
        "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}]})));
    let (after, warnings) = webhook.admit(&own);
    assert_eq!(after, own);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("pullcheck: the Job has its own podFailurePolicy, left as written")
            && warnings[0]
                .ends_with("add first {action: FailJob, onPodConditions: [{type: ConfigIssue}]}"),
        "{warnings:?}"
    );
    let mut on_failure = job(None);
    on_failure["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    let (after, warnings) = webhook.admit(&on_failure);
    assert_eq!(after, on_failure);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("restartPolicy OnFailure, left as written"),
        "{warnings:?}"
    );
    let mut opted_out = job(None);
    opted_out["metadata"]["annotations"] = json!({"pullcheck.dev/inject": "false"});
    let (after, warnings) = webhook.admit(&opted_out);
    assert_eq!(
        after, opted_out,
        "an opted-out Job gets nothing, not even the template's annotation"
    );
    assert!(warnings.is_empty(), "{warnings:?}");

    for (series, want) in [
        (
            "pullcheck_webhook_admissions_total{outcome=\"rule-added\"}",
            2.0,
        ),
        (
            "pullcheck_webhook_admissions_total{outcome=\"injected\"}",
            0.0,
        ),
        (
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"pod-in-watch-mode\"}",
            2.0,
        ),
        (
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"has-condition-rule\"}",
            1.0,
        ),
        (
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"own-pod-failure-policy\"}",
            1.0,
        ),
        (
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"restart-policy-not-never\"}",
            1.0,
        ),
        (
            "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"opted-out\"}",
            1.0,
        ),
    ] {
        assert_eq!(webhook.metric(series), want, "{series}");
    }
}

/// `--condition-type` names the rule's condition; `init`, the binary's default, and `both`
/// inject as before.
#[test]
fn watch_mode_s_condition_type_and_the_other_modes() {
    let webhook = Webhook::start(&["--mode", "watch", "--condition-type", "example.com/Stuck"]);
    let (after, _) = webhook.admit(&job(None));
    assert_eq!(
        after["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"],
        json!([{"type": "example.com/Stuck", "status": "True"}])
    );
    drop(webhook);
    let pod = plain_pod("Never");
    let want = injected(&pod, &[]);
    for args in [&[][..], &["--mode", "init"][..], &["--mode", "both"][..]] {
        let webhook = Webhook::start(args);
        let (after, _) = webhook.admit(&pod);
        assert_eq!(after, want, "{args:?}: what inject writes");
    }
}

/// A bad mode or condition type is a usage error at start (exit 2), from the flags or from
/// their environment variables.
#[test]
fn watch_mode_s_bad_values_are_usage_errors() {
    /// A case's name, arguments, environment and what stderr says.
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (
            "a condition type with a space",
            &["--mode", "watch", "--condition-type", "Config Issue"],
            &[],
            "--condition-type Config Issue: expected a condition type",
        ),
        (
            "the same from the environment",
            &[],
            &[
                ("PULLCHECK_WEBHOOK_MODE", "watch"),
                ("PULLCHECK_WEBHOOK_CONDITION_TYPE", "Config Issue"),
            ],
            "--condition-type Config Issue: expected a condition type",
        ),
        (
            "a mode that is none",
            &["--mode", "sidecar"],
            &[],
            "invalid value 'sidecar' for '--mode <MODE>'",
        ),
    ];
    for (name, args, env, want) in cases {
        let run = pullcheck()
            .without_machine_env()
            .envs(env.iter().copied())
            .arg("webhook")
            .args(["--listen", "127.0.0.1:0", "--self-signed"])
            .args(*args)
            .run();
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{name}: {}", run.stderr);
    }
}

#[test]
fn audit_mode_patches_nothing_and_says_what_it_would_add() {
    let webhook = Webhook::start(&["--audit", "--job-failure-policy", "--secret", "extra"]);
    // A pod the enforcing webhook would inject (restartPolicy Always: with inject's advice).
    let response = webhook.review("CREATE", &plain_pod("Always"));
    assert!(response["patch"].is_null(), "{response}");
    assert!(response["patchType"].is_null(), "{response}");
    let said = warnings(&response);
    assert_eq!(
        said[0],
        "pullcheck (audit): would add to Pod team/p the init container pullcheck checking 1 \
         image (registry.example.com/team/app:1)",
        "{said:?}"
    );
    assert!(
        said[1..]
            .iter()
            .all(|w| w.starts_with("pullcheck (audit): ")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|w| w.contains("set restartPolicy: Never")),
        "inject's advice, as audit's: {said:?}"
    );
    // A Job: the container and each rule named.
    let response = webhook.review("CREATE", &job(None));
    assert!(response["patch"].is_null(), "{response}");
    let said = warnings(&response);
    assert!(
        said[0].starts_with(
            "pullcheck (audit): would add to Job team/train the init container pullcheck \
             checking 1 image (registry.example.com/team/train:1)"
        ),
        "{said:?}"
    );
    assert!(
        said.iter().any(|w| w.starts_with(
            "pullcheck (audit): would add to Job team/train the podFailurePolicy rule FailJob \
             on exit codes "
        ) && w.ends_with(" of pullcheck")),
        "{said:?}"
    );
    // What enforcing leaves alone is answered as enforcing answers it.
    let mut opted_out = plain_pod("Never");
    opted_out["metadata"]["annotations"] = json!({"pullcheck.dev/inject": "false"});
    let response = webhook.review("CREATE", &opted_out);
    assert!(
        response["patch"].is_null() && response["warnings"].is_null(),
        "{response}"
    );
    let (_, text) = webhook.get("/metrics");
    for line in [
        "pullcheck_webhook_admissions_total{outcome=\"injected\"} 0",
        "pullcheck_webhook_admissions_total{outcome=\"audited\",would=\"injected\"} 2",
        "pullcheck_webhook_admissions_total{outcome=\"audited\",would=\"rule-added\"} 0",
        "pullcheck_webhook_admissions_total{outcome=\"skipped\",reason=\"opted-out\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }

    // Watch mode: the Job rule, said and not added.
    let webhook = Webhook::start(&["--mode", "watch", "--audit"]);
    let response = webhook.review("CREATE", &job(None));
    assert!(response["patch"].is_null(), "{response}");
    assert_eq!(
        warnings(&response),
        [
            "pullcheck (audit): would add to Job team/train the podFailurePolicy rule FailJob on \
          condition ConfigIssue"
        ]
    );
    let (_, text) = webhook.get("/metrics");
    let line = "pullcheck_webhook_admissions_total{outcome=\"audited\",would=\"rule-added\"} 1";
    assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
}

// ---------------------------------------------------------------------------------------------
// Verdicts at admission (--verdicts, --deny-missing)

/// A review of `object` with `operation` and, for an UPDATE, the object before it.
fn review_with_old(operation: &str, object: &Value, old: Value) -> Vec<u8> {
    let mut review = review_of(operation, object);
    review["request"]["oldObject"] = old;
    serde_json::to_vec(&review).unwrap()
}

/// The webhook in watch mode with `args`, the registry name `name` pinned to the plain
/// registry (a name, so that it is not the webhook's loopback) and asked over plain HTTP.
fn verdict_webhook(name: &str, args: &[&str]) -> Webhook {
    let host = crate::common::plain_registry().host();
    let mut all = vec!["--mode", "watch", "--verdict-plain-http", name];
    all.extend_from_slice(args);
    Webhook::start_from(pullcheck().pin(name, &host), &all)
}

fn pod_of(images: &[(&str, &str)]) -> Value {
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(n, (image, policy))| {
            json!({"name": format!("c{n}"), "image": image, "imagePullPolicy": policy})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team"},
        "spec": {"restartPolicy": "Never", "containers": containers}})
}

fn job_of(image: &str, suspend: Option<bool>) -> Value {
    let mut job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "team"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "app", "image": image, "imagePullPolicy": "Always"}]}}}});
    if let Some(s) = suspend {
        job["spec"]["suspend"] = json!(s);
    }
    job
}

#[test]
fn verdicts_warn_of_proven_misses_only_and_keep_them_in_one_cache() {
    let reg = crate::common::plain_registry();
    reg.push_oci_manifest("verdicts/app", "v1.1");
    let name = "verdicts.registry.test";
    let webhook = verdict_webhook(name, &["--verdicts"]);
    let good = format!("{name}/verdicts/app:v1.1");
    let missing = format!("{name}/verdicts/app:v1.2");
    let repo_missing = format!("{name}/verdicts/nothing-here:v1");
    // A missing tag of an Always image, a missing repository, and a good image: the two
    // misses are said, with the registry and the close tag, the good image says nothing.
    let object = pod_of(&[
        (&good, "Always"),
        (&missing, "Always"),
        (&repo_missing, "Always"),
    ]);
    let response = webhook.review("CREATE", &object);
    assert_eq!(
        warnings(&response),
        [
            format!("pullcheck: image {missing}: tag not found at {name} (did you mean v1.1?)"),
            format!("pullcheck: image {repo_missing}: repository not found at {name}"),
        ],
        "{response}"
    );
    assert!(
        response["patch"].is_null(),
        "watch mode adds nothing to pods"
    );
    // The same again: every verdict from the cache, no request.
    let requests = webhook.metric("pullcheck_webhook_verdict_registry_requests_total");
    let response = webhook.review("CREATE", &object);
    assert_eq!(warnings(&response).len(), 2, "{response}");
    assert_eq!(
        webhook.metric("pullcheck_webhook_verdict_registry_requests_total"),
        requests
    );
    assert_eq!(
        webhook.metric("pullcheck_webhook_verdict_cache_total{result=\"hit\"}"),
        3.0
    );
    assert_eq!(
        webhook.metric("pullcheck_webhook_verdict_cache_total{result=\"miss\"}"),
        3.0
    );
    assert_eq!(
        webhook.metric("pullcheck_webhook_verdicts_total{action=\"warned\"}"),
        4.0
    );
    // What is not proven says nothing: an IfNotPresent miss outside a cluster (no node lists),
    // a Never image, a registry on loopback (the node's), and a pod a controller owns.
    let host = reg.host();
    let loopback = format!("{host}/verdicts/app:v9");
    let response = webhook.review(
        "CREATE",
        &pod_of(&[
            (&format!("{name}/verdicts/app:v7"), "IfNotPresent"),
            (&format!("{name}/verdicts/app:v8"), "Never"),
            (&loopback, "Always"),
        ]),
    );
    assert_eq!(warnings(&response), Vec::<String>::new(), "{response}");
    let mut owned = pod_of(&[(&missing, "Always")]);
    owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": true}]);
    assert_eq!(
        warnings(&webhook.review("CREATE", &owned)),
        Vec::<String>::new()
    );
    // A reference no runtime parses is said without a request.
    let response = webhook.review("CREATE", &pod_of(&[("Upper/Case:v1", "Always")]));
    assert_eq!(
        warnings(&response),
        ["pullcheck: image Upper/Case:v1: not a valid image reference"]
    );
    // A Job is judged when created and when released from suspension, not on other updates.
    let (_, said) = webhook.admit(&job_of(&missing, None));
    assert!(said.iter().any(|w| w.contains("tag not found")), "{said:?}");
    let released = review_with_old(
        "UPDATE",
        &job_of(&missing, Some(false)),
        job_of(&missing, Some(true)),
    );
    let (status, body) = webhook.post(released);
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        warnings(&answer["response"])
            .iter()
            .any(|w| w.contains("tag not found")),
        "{answer}"
    );
    let relabelled = review_with_old(
        "UPDATE",
        &job_of(&missing, Some(false)),
        job_of(&missing, Some(false)),
    );
    let answer: Value = serde_json::from_slice(&webhook.post(relabelled).1).unwrap();
    assert_eq!(
        warnings(&answer["response"]),
        Vec::<String>::new(),
        "{answer}"
    );
}

#[test]
fn deny_missing_refuses_a_proven_miss_and_audit_only_says_it_would() {
    let reg = crate::common::plain_registry();
    reg.push_oci_manifest("verdicts/deny", "v1");
    let name = "deny.registry.test";
    let missing = format!("{name}/verdicts/deny:v2");
    let good = format!("{name}/verdicts/deny:v1");
    let webhook = verdict_webhook(name, &["--deny-missing"]);
    let review = serde_json::to_vec(&review_of("CREATE", &job_of(&missing, None))).unwrap();
    let (status, body) = webhook.post(review);
    assert_eq!(status, 200);
    let response = serde_json::from_slice::<Value>(&body).unwrap()["response"].clone();
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(
        response["status"]["message"],
        format!(
            "pullcheck (--deny-missing): image {missing}: tag not found at {name} (did you mean v1?)"
        )
    );
    assert!(response["patch"].is_null());
    assert_eq!(
        webhook.metric("pullcheck_webhook_admissions_total{outcome=\"denied\"}"),
        1.0
    );
    // A good Job passes, with its rule and no word of the verdicts.
    let (after, said) = webhook.admit(&job_of(&good, None));
    assert!(said.is_empty(), "{said:?}");
    assert!(!after["spec"]["podFailurePolicy"].is_null());
    // An IfNotPresent miss is never refused (no node lists here: not even said).
    let mut job = job_of(&missing, None);
    job["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    webhook.admit(&job);
    drop(webhook);
    // In audit mode, the refusal is a warning.
    let webhook = verdict_webhook(name, &["--deny-missing", "--audit"]);
    let (_, said) = webhook.admit(&job_of(&missing, None));
    assert!(
        said.iter()
            .any(|w| w
                .starts_with("pullcheck (audit): would refuse: pullcheck (--deny-missing): image")),
        "{said:?}"
    );
}

#[test]
fn a_hung_registry_costs_a_review_its_budget_and_no_more() {
    let hole = crate::common::black_hole();
    let name = "hung.registry.test";
    let webhook = Webhook::start_from(
        pullcheck().pin(name, &hole),
        &[
            "--mode",
            "watch",
            "--verdicts",
            "--verdict-budget",
            "500ms",
            "--verdict-plain-http",
            name,
        ],
    );
    let object = job_of(&format!("{name}/app:v1"), None);
    for _ in 0..3 {
        let started = Instant::now();
        let (_, said) = webhook.admit(&object);
        let took = started.elapsed();
        assert!(said.is_empty(), "nothing proven: {said:?}");
        // Not a timing assertion: a review that waited for the hung lookup would take its 3 s.
        assert!(
            took < Duration::from_millis(2500),
            "the review took {took:?}: it waited for the registry, past its budget of 500 ms"
        );
        println!(
            "a review against a hung registry, budget 500 ms: answered in {:.0} ms",
            took.as_secs_f64() * 1000.0
        );
    }
    assert!(webhook.metric("pullcheck_webhook_verdict_budget_exceeded_total") >= 1.0);
}

#[test]
fn a_registry_that_says_429_is_not_asked_again_while_it_cools_down() {
    use crate::common::proxy::{Fault, Proxy, Rule};
    let reg = crate::common::plain_registry();
    let proxy = Proxy::start(&reg.host());
    proxy.rule(Rule::contains("/manifests/", Fault::rate_limited("1")));
    let name = "limited.registry.test";
    let webhook = Webhook::start_from(
        pullcheck().pin(name, &proxy.host()),
        &[
            "--mode",
            "watch",
            "--verdicts",
            "--verdict-budget",
            "5s",
            "--verdict-plain-http",
            name,
        ],
    );
    let (_, said) = webhook.admit(&job_of(&format!("{name}/verdicts/a:v1"), None));
    assert!(said.is_empty(), "a 429 proves nothing: {said:?}");
    let asked = proxy.requests().len();
    assert!(asked >= 1);
    // Another image of the same registry: no request while it cools down.
    let (_, said) = webhook.admit(&job_of(&format!("{name}/verdicts/b:v1"), None));
    assert!(said.is_empty(), "{said:?}");
    assert_eq!(
        proxy.requests().len(),
        asked,
        "asked again while cooling down"
    );
}
