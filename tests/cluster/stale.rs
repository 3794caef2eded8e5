//! `pullcheck watch` on the kubelet's stale words, on the real cluster: the three ways a watcher
//! that trusted the waiting message failed Jobs that would have run, each with a fault proxy in
//! front of the cluster's registry, and each Job now `Complete`:
//!
//! 1. **a pull under way**: the registry answers 404 to three attempts, then holds the kubelet's
//!    next manifest request for 150 s before serving it; through it the pod shows the previous
//!    attempt's `not found`. The watcher's own HEAD is answered 404 too, so only the `Pulling`
//!    Event (newer than the last failure) keeps the pod;
//! 2. **the image pushed within the grace**: 404 until the test switches the proxy to serve
//!    the image, right after the kubelet's fourth attempt; past the grace (2 minutes, before
//!    the kubelet's next attempt) the watcher's own HEAD finds it, and the pod is spared;
//! 3. **one 404 after an outage**: 503, 503, 503, one 404, then served: with the default grace (none
//!    for a missing image) the 404 is acted on at once, and the watcher's HEAD finds the image;
//!    and the same with the watcher's own HEAD refused throughout: a 404 right after transient
//!    words that the watcher cannot confirm waits for the kubelet's next attempt, which is
//!    served.
//!
//! And the bound on owners that recreate what is failed: a test controller that makes a new
//! pod each time the last one is gone or failed, stopped after `--owner-failure-limit` pods.
//!
//! The releases here run `hostNetwork` with one replica, so that the watcher asks the registry
//! from where the node pulls (its loopback), as it does for a kind or k3d local registry.

use crate::common::proxy::{Fault, Proxy, Rule};
use crate::harness::{Namespace, cluster, condition, minutes, wait_for};
use crate::jobs::{pulled_always, seconds_to, wait_job};
use crate::watch::{PodWatch, events, stuck_job};
use crate::webhook::{Installed, install};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A release that acts on a missing image only after 2 minutes (the setting), for the
/// cases whose stale words came after the first ones.
fn slow() -> &'static Installed {
    static RELEASE: OnceLock<Installed> = OnceLock::new();
    RELEASE.get_or_init(|| {
        install(
            "pc-stale",
            "stale-tests-select-none",
            &[
                "--set",
                "hostNetwork=true,replicas=1,webhook.port=18443,watch.port=18081,\
                 watch.namespaceLabel=pullcheck.dev/watch=stale,watch.leaseDuration=6s",
                "--set-json",
                "watch.graceFor=[\"manifest_missing=2m\"]",
            ],
        )
    })
}

/// A release with the watcher's default graces.
fn fast() -> &'static Installed {
    static RELEASE: OnceLock<Installed> = OnceLock::new();
    RELEASE.get_or_init(|| {
        install(
            "pc-stale-fast",
            "stale-fast-tests-select-none",
            &[
                "--set",
                "hostNetwork=true,replicas=1,webhook.port=18444,watch.port=18082,\
                 watch.namespaceLabel=pullcheck.dev/watch=stale-fast,watch.leaseDuration=6s",
            ],
        )
    })
}

/// A namespace of the test's own, watched by `release`'s label.
fn watched(release: &Installed, label: &str, name: &str) -> Namespace {
    let _ = release;
    let c = cluster();
    let ns = c.namespace(name);
    c.kubectl(&[
        "label",
        "namespace",
        name,
        &format!("pullcheck.dev/watch={label}"),
    ]);
    ns
}

/// A proxy in front of the cluster's registry that containerd pulls from over plain HTTP.
fn proxy() -> Proxy {
    let c = cluster();
    let proxy = Proxy::start(&c.registry);
    c.plain_http_registry(&proxy.host());
    proxy
}

/// How many manifest HEADs containerd sends in one attempt of the kubelet's: the hosts.toml
/// names the proxy as its `[host]` and as its `server` (containerd 1.6 needs both), and a
/// failure of the first makes it ask the second.
const HEADS_PER_ATTEMPT: usize = 2;

/// The kubelet's (containerd's) manifest requests.
fn kubelet_heads(fault: Fault) -> Rule {
    Rule::contains("/manifests/", fault)
        .method("HEAD")
        .user_agent("containerd")
}

/// The Job of `image` on `proxy`, pulled on every try, failed only through the watcher.
fn job(name: &str, image: &str) -> String {
    pulled_always(stuck_job(name, image, ""))
}

/// Waits for the Job to complete with one pod from first to last and no condition.
fn completes(ns: &str, pods: &PodWatch, name: &str, what: &str) {
    let done = wait_job(ns, name, "Complete");
    assert!(
        pods.conditioned(&format!("{name}-")).is_none(),
        "{what}: the pod was never given the condition"
    );
    assert_eq!(
        pods.uids(&format!("{name}-")).len(),
        1,
        "{what}: one pod from first to last, never deleted"
    );
    println!(
        "stale words: {what}: the Job Complete {} s after creation",
        seconds_to(&done, "Complete")
    );
}

#[test]
fn a_pull_under_way_is_waited_for_though_the_pod_shows_the_last_attempts_not_found() {
    let release = slow();
    let ns = watched(release, "stale", "pc-stale-pulling");
    let pods = PodWatch::start(&ns.name);
    let proxy = proxy();
    // The watcher's own look always says "not found": only the kubelet's attempts can keep
    // the pod.
    proxy.rule(Rule::contains("/manifests/", Fault::status(404)).user_agent("pullcheck"));
    proxy.rule(kubelet_heads(Fault::status(404)).times(3 * HEADS_PER_ATTEMPT));
    proxy.rule(kubelet_heads(Fault::Delay(Duration::from_secs(150))).times(1));
    let image = format!("{}/tools:1", proxy.host());
    let started = Instant::now();
    cluster().apply(&ns.name, &job("pulling", &image));
    completes(&ns.name, &pods, "pulling", "a 150 s pull after three 404s");
    let heads = proxy.requests_matching("/manifests/");
    let kubelet = heads
        .iter()
        .filter(|s| s.method == "HEAD" && !is_pullcheck(s))
        .count();
    println!(
        "stale words: a pull under way: {kubelet} kubelet HEADs, {} of the watcher's, {:.0} s in all",
        heads.iter().filter(|s| is_pullcheck(s)).count(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        kubelet > 3 * HEADS_PER_ATTEMPT,
        "three 404s and the held pull: {heads:#?}"
    );
}

#[test]
fn an_image_pushed_within_the_grace_is_found_by_the_watchers_own_look() {
    let release = slow();
    let ns = watched(release, "stale", "pc-stale-pushed");
    let pods = PodWatch::start(&ns.name);
    let proxy = proxy();
    proxy.rule(Rule::contains("/manifests/", Fault::status(404)));
    let image = format!("{}/tools:1", proxy.host());
    cluster().apply(&ns.name, &job("pushed", &image));
    let created = Instant::now();
    // Pushed right after the kubelet's fourth attempt (at about 75 s): its next comes some 80 s
    // later, past the grace of 2 minutes from the first.
    let attempts = |p: &Proxy| {
        p.requests_matching("/manifests/")
            .iter()
            .filter(|s| s.method == "HEAD" && !is_pullcheck(s))
            .count()
            / HEADS_PER_ATTEMPT
    };
    wait_for("the kubelet's fourth attempt", minutes(3), || {
        let n = attempts(&proxy);
        if n >= 4 {
            Ok(())
        } else {
            Err(format!("{n} attempts"))
        }
    });
    proxy.clear_rules();
    println!(
        "stale words: the image served from {:.0} s, after {} attempts answered 404",
        created.elapsed().as_secs_f64(),
        attempts(&proxy)
    );
    completes(
        &ns.name,
        &pods,
        "pushed",
        "404 until after the fourth attempt, grace 2 m",
    );
    let looked = proxy
        .requests_matching("/manifests/")
        .into_iter()
        .filter(is_pullcheck)
        .count();
    assert!(
        looked >= 1,
        "the watcher asked the registry itself before acting"
    );
}

#[test]
fn one_404_after_an_outage_is_not_acted_on_once_the_image_is_served() {
    let release = fast();
    let ns = watched(release, "stale-fast", "pc-stale-outage");
    let pods = PodWatch::start(&ns.name);
    let proxy = proxy();
    proxy.rule(kubelet_heads(Fault::status(503)).times(3 * HEADS_PER_ATTEMPT));
    proxy.rule(kubelet_heads(Fault::status(404)).times(HEADS_PER_ATTEMPT));
    let image = format!("{}/tools:1", proxy.host());
    cluster().apply(&ns.name, &job("outage", &image));
    let job_done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        completes(
            &ns.name,
            &pods,
            "outage",
            "503, 503, 503, one 404, then served",
        )
    }));
    // The proxy's view of every manifest request, for the record (and the diagnosis).
    for s in proxy.requests_matching("/manifests/") {
        let from = if is_pullcheck(&s) {
            "pullcheck"
        } else {
            "containerd"
        };
        println!(
            "stale words: outage: {} {} {} ({from})",
            s.method, s.path, s.fault
        );
    }
    if let Err(e) = job_done {
        std::panic::resume_unwind(e);
    }
    let looked = proxy
        .requests_matching("/manifests/")
        .into_iter()
        .filter(is_pullcheck)
        .count();
    assert!(looked >= 1, "the watcher asked the registry after the 404");
    let transient = events(&ns.name, "StuckTransient", "outage-");
    println!(
        "stale words: one 404 after an outage: the watcher looked {looked} time(s); {} StuckTransient Event(s)",
        transient.len()
    );
}

#[test]
fn one_404_after_an_outage_that_the_watcher_cannot_confirm_waits_for_the_next_attempt() {
    let release = fast();
    let ns = watched(release, "stale-fast", "pc-stale-outage-blind");
    let pods = PodWatch::start(&ns.name);
    let proxy = proxy();
    proxy.rule(kubelet_heads(Fault::status(503)).times(3 * HEADS_PER_ATTEMPT));
    proxy.rule(kubelet_heads(Fault::status(404)).times(HEADS_PER_ATTEMPT));
    // The watcher's own look is refused throughout: it cannot see the image served.
    proxy.rule(
        Rule::contains("/manifests/", Fault::status(503))
            .method("HEAD")
            .user_agent("pullcheck"),
    );
    let image = format!("{}/tools:1", proxy.host());
    cluster().apply(&ns.name, &job("blind", &image));
    completes(
        &ns.name,
        &pods,
        "blind",
        "503, 503, 503, one 404, then served; the watcher's look refused",
    );
    let looked = proxy
        .requests_matching("/manifests/")
        .into_iter()
        .filter(is_pullcheck)
        .count();
    let kubelet = proxy
        .requests_matching("/manifests/")
        .into_iter()
        .filter(|s| !is_pullcheck(s))
        .count();
    assert!(looked >= 1, "the watcher tried to look after the 404");
    println!(
        "stale words: one 404 after an outage, the watcher's look refused ({looked} HEAD(s)): waited for the kubelet's next attempt ({kubelet} HEADs of the node's in all)"
    );
}

#[test]
fn an_owner_that_recreates_what_is_failed_is_stopped_after_the_limit() {
    let release = fast();
    let c = cluster();
    let ns = watched(release, "stale-fast", "pc-stale-recreate");
    let pods = PodWatch::start(&ns.name);
    // The owner: a ConfigMap, standing for a framework's own resource (a RayCluster).
    c.kubectl(&["create", "configmap", "framework", "-n", &ns.name]);
    let owner = c
        .get(&ns.name, "configmap/framework")
        .expect("the ConfigMap");
    let uid = owner["metadata"]["uid"].as_str().expect("uid").to_string();
    let image = format!("{}/tools:no-such-tag", c.registry);
    let pod = |i: usize| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: head-{i}\n  annotations: {{pullcheck.dev/fail-when-stuck: \"true\"}}\n  \
             ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: framework, uid: {uid}, controller: true}}\n\
             spec:\n  restartPolicy: Never\n  hostNetwork: true\n  containers:\n  - name: head\n    image: {image}\n    command: [\"true\"]\n"
        )
    };
    // The test controller: a new pod each time the last one is gone or failed, as KubeRay
    // deletes and recreates a failed head pod.
    let limit = 10;
    let mut made = 0;
    let started = Instant::now();
    while started.elapsed() < minutes(4) {
        let last = format!("head-{made}");
        let gone = made == 0
            || c.get(&ns.name, &format!("pod/{last}"))
                .is_none_or(|p| p["status"]["phase"] == "Failed");
        if gone {
            made += 1;
            c.apply(&ns.name, &pod(made));
        }
        if !events(&ns.name, "OwnerFailureLimit", "head-").is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    let said = events(&ns.name, "OwnerFailureLimit", "head-");
    assert_eq!(
        said.len(),
        1,
        "one Event says the owner was stopped: {said:#?}"
    );
    let failed = (1..=made)
        .filter(|i| pods.conditioned(&format!("head-{i}")).is_some())
        .count();
    assert_eq!(failed, limit, "{made} pods made");
    // The last pod stays, left to the kubelet.
    std::thread::sleep(Duration::from_secs(10));
    let last = c.get(&ns.name, &format!("pod/head-{made}"));
    assert!(
        last.as_ref().is_some_and(
            |p| p["status"]["phase"] == "Pending" && condition(p, "ConfigIssue").is_none()
        ),
        "the pod after the limit is neither failed nor given the condition: {last:#?}"
    );
    println!(
        "watch: an owner that recreates: {failed} pods failed, then stopped ({made} made in {:.0} s): {}",
        started.elapsed().as_secs_f64(),
        said[0]["message"]
    );
}

#[test]
fn an_unschedulable_pod_is_never_touched() {
    let release = fast();
    let c = cluster();
    let ns = watched(release, "stale-fast", "pc-stale-unschedulable");
    let pods = PodWatch::start(&ns.name);
    let job = job("nowhere", &c.tools_image()).replace(
        "      restartPolicy: Never\n",
        "      restartPolicy: Never\n      nodeSelector: {pullcheck.dev/no-such-node: \"true\"}\n",
    );
    c.apply(&ns.name, &job);
    std::thread::sleep(Duration::from_secs(40));
    assert!(pods.conditioned("nowhere-").is_none());
    assert_eq!(pods.uids("nowhere-").len(), 1);
    let pending = wait_for("the pod, still pending", minutes(1), || {
        c.get(&ns.name, "job/nowhere")
            .filter(|j| j["status"]["failed"].is_null())
            .ok_or_else(|| "the Job has failed pods".to_string())
    });
    println!(
        "watch: an unschedulable pod untouched after 40 s: {}",
        pending["status"]
    );
}

/// Whether a request came from pullcheck (the watcher's own look).
fn is_pullcheck(s: &crate::common::proxy::Seen) -> bool {
    s.headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("user-agent") && v.contains("pullcheck"))
}

#[test]
fn an_init_container_whose_own_image_is_missing_fails_the_job() {
    let release = fast();
    let c = cluster();
    let ns = watched(release, "stale-fast", "pc-stale-init");
    let pods = PodWatch::start(&ns.name);
    let missing = format!("{}/tools:no-such-tag", c.registry);
    let init = format!(
        "      initContainers:\n      - name: setup\n        image: {missing}\n        command: [\"true\"]\n"
    );
    c.apply(&ns.name, &stuck_job("setup", &c.tools_image(), &init));
    let failed = wait_job(&ns.name, "setup", "Failed");
    let pod = pods.wait_conditioned("setup-");
    let message = crate::harness::condition(&pod, "ConfigIssue").expect("the condition")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("\"setup\"") && message.contains(&missing),
        "the init container and its image are named: {message}"
    );
    println!(
        "watch: an init container's missing image: the Job Failed {} s after creation: {message}",
        seconds_to(&failed, "Failed")
    );
}

#[test]
fn a_registry_that_rate_limits_for_minutes_is_waited_for() {
    let release = fast();
    let ns = watched(release, "stale-fast", "pc-stale-limited");
    let pods = PodWatch::start(&ns.name);
    let proxy = proxy();
    proxy.rule(kubelet_heads(Fault::rate_limited("30")));
    let image = format!("{}/tools:1", proxy.host());
    cluster().apply(&ns.name, &job("limited", &image));
    std::thread::sleep(Duration::from_secs(150));
    assert!(pods.conditioned("limited-").is_none(), "429 is transient");
    proxy.clear_rules();
    completes(&ns.name, &pods, "limited", "429 for 150 s, then served");
}

#[test]
fn a_slow_first_pull_is_not_a_wait_the_watcher_acts_on() {
    let release = fast();
    let ns = watched(release, "stale-fast", "pc-stale-slow");
    let pods = PodWatch::start(&ns.name);
    let proxy = proxy();
    proxy.rule(kubelet_heads(Fault::Delay(Duration::from_secs(30))).times(HEADS_PER_ATTEMPT));
    let image = format!("{}/tools:1", proxy.host());
    cluster().apply(&ns.name, &job("slow", &image));
    completes(
        &ns.name,
        &pods,
        "slow",
        "a first pull held 60 s (two HEADs of 30 s), with no grace for a missing image",
    );
}
