//! Verdicts at `kubectl apply` (`admission.verdicts`, `admission.deny`) on the real cluster: the
//! webhook asks the registry of each image of a Job as it is created, and kubectl prints a proven
//! miss as a warning; with deny the Job is refused with that message; a good Job prints nothing.
//!
//! The registry is the cluster's own, behind a proxy on the node's bridge address (not
//! loopback, which is the node's own and never asked by the webhook), spoken to over plain HTTP
//! by containerd (its hosts.toml) and by the webhook (`admission.plainHttp`).

use crate::common::proxy::{Fault, Proxy, Rule};
use crate::harness::cluster;
use crate::jobs::{job, job_with, pulled_always};
use crate::webhook::{
    api_server, install, opted_in, percentiles, post_times, span_figures, trace_mark,
    webhook_calls, webhook_spans,
};
use std::sync::OnceLock;

/// The proxy to the cluster's registry on the node's bridge address.
fn bridge_registry() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(|| cluster().bridge_proxy())
}

/// `kubectl apply` of `manifest` in `ns`: whether it was applied, and kubectl's stderr.
fn apply(ns: &str, manifest: &str) -> (bool, String) {
    let out = cluster().kubectl_output(&["apply", "-n", ns, "-f", "-"], Some(manifest));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kubectl_apply_prints_a_proven_miss_and_deny_refuses_it() {
    let host = bridge_registry().host();
    let plain = format!("admission.plainHttp=[\"{host}\"]");
    let missing = format!("{host}/tools:no-such-tag");
    let good = format!("{host}/tools:1");
    let warning = format!("Warning: pullcheck: image {missing}: tag not found at {host}");

    let warned = install(
        "pc-verdicts",
        "verdicts",
        &["--set", "admission.verdicts=true", "--set-json", &plain],
    );
    let ns = opted_in("verdicts-warn", &warned);
    let (applied, stderr) = apply(&ns.name, &pulled_always(job("missing", &missing, 0)));
    println!("kubectl apply of the missing-tag Job, its stderr:\n{stderr}");
    assert!(applied, "a warning does not refuse: {stderr}");
    assert!(stderr.contains(&warning), "{stderr}");
    let (applied, stderr) = apply(&ns.name, &pulled_always(job("good", &good, 0)));
    assert!(applied, "{stderr}");
    assert!(
        !stderr.contains("pullcheck: image"),
        "a good Job says nothing of its image: {stderr}"
    );
    // An IfNotPresent image: said only when the node's list is complete (fewer images than the
    // kubelet lists at most, none at its cap of names), which after the other tests it may
    // not be.
    let (applied, stderr) = apply(&ns.name, &job("missing-ifnp", &missing, 0));
    assert!(applied, "{stderr}");
    let complete = node_list_is_complete();
    println!("the node's image list is complete: {complete}");
    assert_eq!(
        stderr.contains(&format!("{warning}, and no node holds it")),
        complete,
        "{stderr}"
    );
    cached_pods_cost_the_api_server_little(&ns.name, &good);
    drop(ns);
    drop(warned);

    let denying = install(
        "pc-verdicts-deny",
        "verdicts-deny",
        &["--set", "admission.deny=true", "--set-json", &plain],
    );
    let ns = opted_in("verdicts-deny", &denying);
    let (applied, stderr) = apply(&ns.name, &pulled_always(job("missing", &missing, 0)));
    println!("kubectl apply with admission.deny, its stderr:\n{stderr}");
    assert!(!applied, "refused: {stderr}");
    assert!(
        stderr.contains(&format!(
            "denied the request: pullcheck (--deny-missing): image {missing}: tag not found at {host}"
        )),
        "{stderr}"
    );
    assert!(
        cluster().get(&ns.name, "job/missing").is_none(),
        "the refused Job is not stored"
    );
    let (applied, stderr) = apply(&ns.name, &pulled_always(job("good", &good, 0)));
    assert!(applied, "{stderr}");
    // An IfNotPresent miss is never refused (the nodes' lists may lag): stored.
    let (applied, stderr) = apply(&ns.name, &job("missing-ifnp", &missing, 0));
    assert!(applied, "{stderr}");
}

/// With `admission.readPullSecrets`, the verdicts ask with the pods' own pull secrets: a
/// registry that answers 401 to a request without credentials (a proxy in front of the
/// cluster's, which takes any) says nothing anonymously, and with the Job's secret (in its
/// template, or its service account's) its miss is said. The credential reached the registry
/// from the webhook, and no other release's verdict answered for it.
#[test]
fn the_pods_own_pull_secrets_let_the_verdicts_see_a_private_registry() {
    let c = cluster();
    let proxy = c.bridge_proxy();
    proxy.rule(Rule::any(Fault::basic_challenge()).unauthenticated());
    let host = proxy.host();
    let plain = format!("admission.plainHttp=[\"{host}\"]");
    let with_secret = |name: &str, tag: &str| {
        pulled_always(job_with(
            name,
            &format!("{host}/tools:{tag}"),
            0,
            "      imagePullSecrets: [{name: regcred}]\n",
        ))
    };

    // Anonymous: the 401 proves nothing, and nothing is said.
    let anonymous = install(
        "pc-verdicts-anon",
        "verdicts-anon",
        &["--set", "admission.verdicts=true", "--set-json", &plain],
    );
    let ns = opted_in("verdicts-anon", &anonymous);
    c.pull_secret(&ns.name, "regcred", &host, "alice", "any-password");
    let (applied, stderr) = apply(&ns.name, &with_secret("missing", "no-such-tag"));
    assert!(applied, "{stderr}");
    assert!(!stderr.contains("pullcheck: image"), "{stderr}");
    drop(ns);
    drop(anonymous);

    let reading = install(
        "pc-verdicts-secrets",
        "verdicts-secrets",
        &[
            "--set",
            "admission.verdicts=true,admission.readPullSecrets.enabled=true",
            "--set-json",
            &plain,
        ],
    );
    let ns = opted_in("verdicts-secrets", &reading);
    c.pull_secret(&ns.name, "regcred", &host, "alice", "any-password");
    // The template's secret.
    let (applied, stderr) = apply(&ns.name, &with_secret("missing", "no-such-tag"));
    println!("kubectl apply with the Job's own pull secret, its stderr:\n{stderr}");
    assert!(applied, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "Warning: pullcheck: image {host}/tools:no-such-tag: tag not found at {host}"
        )),
        "{stderr}"
    );
    // The service account's secret, for a Job whose template names none.
    c.kubectl(&["create", "serviceaccount", "runner", "-n", &ns.name]);
    c.kubectl(&[
        "patch",
        "serviceaccount",
        "runner",
        "-n",
        &ns.name,
        "-p",
        r#"{"imagePullSecrets": [{"name": "regcred"}]}"#,
    ]);
    let by_account = pulled_always(job_with(
        "missing-sa",
        &format!("{host}/tools:no-such-tag-either"),
        0,
        "      serviceAccountName: runner\n",
    ));
    let (applied, stderr) = apply(&ns.name, &by_account);
    assert!(applied, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "pullcheck: image {host}/tools:no-such-tag-either: tag not found at {host}"
        )),
        "{stderr}"
    );
    let sent = proxy.requests().iter().any(|r| {
        r.authorization.is_some()
            && r.headers.iter().any(|(name, value)| {
                name.eq_ignore_ascii_case("user-agent") && value.contains("pullcheck")
            })
    });
    assert!(
        sent,
        "pullcheck's requests carried the pull secret's credential"
    );
}

/// Whether the Node's image list can prove an image absent: fewer images than the kubelet's
/// default `nodeStatusMaxImages` (50), and none listed with its cap of 5 names.
fn node_list_is_complete() -> bool {
    let c = cluster();
    let node = c.get("", &format!("node/{}", c.node)).expect("the Node");
    let images = node["status"]["images"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    images.len() < 50
        && images
            .iter()
            .all(|i| i["names"].as_array().map_or(0, Vec::len) < 5)
}

/// 500 Pod creations in `ns` whose one image (`image`) has its verdict in the cache: what the
/// API server measures of its calls to the webhook, printed (the figure of the issue: p99 at most
/// 10 ms for cached images). Pods with a scheduling gate no one lifts: the API server's work
/// alone.
fn cached_pods_cost_the_api_server_little(ns: &str, image: &str) {
    let c = cluster();
    let server = api_server(c);
    let body = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "cached-"},
        "spec": {
            "schedulingGates": [{"name": "pullcheck.dev/never"}],
            "restartPolicy": "Never",
            "containers": [{"name": "app", "image": image, "imagePullPolicy": "Always"}],
        },
    })
    .to_string();
    let url = format!("{server}/api/v1/namespaces/{ns}/pods");
    post_times(&url, &body, 10);
    let before = webhook_calls(c, "pods.pullcheck.dev");
    let mark = trace_mark();
    let mut times = post_times(&url, &body, 500);
    let after = webhook_calls(c, "pods.pullcheck.dev");
    let (p50, p99) = percentiles(&mut times);
    let calls = after.count - before.count;
    println!(
        "verdicts on, image cached: 500 pod creations p50 {p50:.1} ms, p99 {p99:.1} ms (curl); the \
         API server's measure of its {calls:.0} calls to the pods webhook: mean {:.2} ms, {:.1} % \
         within 5 ms, {:.1} % within 25 ms",
        (after.sum - before.sum) / calls * 1000.0,
        (after.within_5ms - before.within_5ms) / calls * 100.0,
        (after.within_25ms - before.within_25ms) / calls * 100.0,
    );
    let mut spans = webhook_spans(c, "pods.pullcheck.dev", mark, calls as usize);
    println!(
        "verdicts on, image cached: the API server's own timing of the same calls (its tracing \
         spans): {}",
        span_figures(&mut spans)
    );
}
