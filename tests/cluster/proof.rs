//! A pod is failed only on proof: the places where a pod sees less than its node, each as the
//! same Job (or bare Pod) three ways, without pullcheck, put in by `inject` and put in by the
//! webhook (mode `init`), which must all end the same way, `Complete`; and the seed case beside
//! them, a missing tag, which still fails fast (`Always`, and `IfNotPresent` with the node
//! readable). The figures are printed, never asserted.
//!
//! Rows of `docs/reference/what-fails.md` covered here: a registry on the node's loopback from a
//! pod that is not `hostNetwork`; a registry whose CA only containerd knows; a registry that
//! speaks plain HTTP, on an address that is not loopback, which only containerd's `hosts.toml`
//! says; a registry answering 503 for 90 s, then recovering (a bare `restartPolicy: Never` pod
//! and a `backoffLimit: 0` Job); the seed case. The image only the node holds, with and without
//! the RBAC example, is `node_images.rs`; the LimitRange and the quotas, `resources.rs`.

use crate::common::proxy::{Fault, Proxy, Rule};
use crate::common::{ALICE, ALICE_PASSWORD};
use crate::harness::{Namespace, cluster, condition, minutes, status_of, wait_for};
use crate::jobs::{injected, job, job_with, pulled_always, seconds_to, wait_job};
use crate::webhook::{Installed, install, opted_in};
use std::sync::OnceLock;
use std::time::Duration;

/// The outage row's proxy in front of the cluster's registry, made once so that the release's
/// check arguments can name it.
fn outage_proxy() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(|| Proxy::start(&cluster().registry))
}

/// The release these rows share: the webhook in mode `init`, its container checking the
/// cluster's registry and the outage proxy over plain HTTP (as `inject` is told below) and
/// nothing else the node knows.
pub fn release() -> &'static Installed {
    static RELEASE: OnceLock<Installed> = OnceLock::new();
    RELEASE.get_or_init(|| {
        let c = cluster();
        let check_args = serde_json::json!([
            "--plain-http",
            c.registry,
            "--plain-http",
            outage_proxy().host()
        ]);
        install(
            "pc-proof",
            "proof",
            &[
                "--set",
                "mode=init",
                "--set-json",
                &format!("inject.checkArgs={check_args}"),
            ],
        )
    })
}

/// A row's two namespaces: `plain`, which the webhook leaves alone (the Job without pullcheck,
/// and the Job put in by `inject`), and `admitted`, opted in to [`release`] (the same Job, put
/// in by the webhook).
pub struct Row {
    pub plain: Namespace,
    pub admitted: Namespace,
}

impl Row {
    /// The namespaces `pc-proof-NAME` and `pc-proof-NAME-wh`.
    pub fn new(name: &str) -> Row {
        Row {
            plain: cluster().namespace(&format!("pc-proof-{name}")),
            admitted: opted_in(&format!("pc-proof-{name}-wh"), release()),
        }
    }

    /// Creates `manifest(NAME)` three ways: as `NAME-without` and, through `inject` with
    /// `check_args` after the cluster's, as `NAME` in `plain`; as `NAME` in `admitted`.
    pub fn create(&self, name: &str, manifest: impl Fn(&str) -> String, check_args: &[&str]) {
        let c = cluster();
        c.apply(&self.plain.name, &manifest(&format!("{name}-without")));
        c.apply(
            &self.plain.name,
            &injected(&manifest(name), &[], check_args),
        );
        c.apply(&self.admitted.name, &manifest(name));
    }

    /// Waits for the three Jobs `create` made to be `Complete` and prints how long each took;
    /// the termination messages of pullcheck's container, `inject`'s then the webhook's, each
    /// asserted to have exited 0 with the verdict not counted.
    pub fn complete(&self, name: &str, what: &str) -> [String; 2] {
        let without = wait_job(&self.plain.name, &format!("{name}-without"), "Complete");
        let with = wait_job(&self.plain.name, name, "Complete");
        let admitted = wait_job(&self.admitted.name, name, "Complete");
        println!(
            "{what}: Complete {} s without pullcheck, {} s with inject's, {} s with the webhook's",
            seconds_to(&without, "Complete"),
            seconds_to(&with, "Complete"),
            seconds_to(&admitted, "Complete")
        );
        [&self.plain, &self.admitted].map(|ns| {
            let (code, message) = init_message(&ns.name, name);
            assert_eq!(code, 0, "{}/{name}: {message}", ns.name);
            assert!(
                message.contains("not counted"),
                "{}/{name}: {message}",
                ns.name
            );
            message
        })
    }
}

/// Lets the default service account of `ns` get nodes, as `examples/node-images-rbac.yaml`
/// does for namespace `ci`: the example's ClusterRole, bound for this namespace.
pub fn grant_node_read(ns: &str) {
    let c = cluster();
    let rbac =
        std::fs::read_to_string(crate::harness::repo().join("examples/node-images-rbac.yaml"))
            .unwrap();
    c.apply("default", &rbac);
    c.apply(
        "default",
        &format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pullcheck-node-images-{ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: pullcheck-node-images\nsubjects:\n- kind: ServiceAccount\n  name: default\n  namespace: {ns}\n"
        ),
    );
}

/// The init container's termination message of the first pod of Job `name`, once it ended.
pub fn init_message(ns: &str, name: &str) -> (i64, String) {
    let c = cluster();
    let pods = c.job_pods(ns, name);
    let init = &pods[0]["status"]["initContainerStatuses"][0];
    let terminated = &init["state"]["terminated"];
    (
        terminated["exitCode"].as_i64().unwrap_or(-1),
        terminated["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[test]
fn the_seed_case_still_fails_fast_always_and_if_not_present_with_the_node_readable() {
    let c = cluster();
    // The node's list proves an absence only while it is complete (fewer images than the
    // kubelet's nodeStatusMaxImages, 50).
    let listed = c
        .get("default", &format!("node/{}", c.node))
        .and_then(|n| n["status"]["images"].as_array().map(Vec::len))
        .unwrap_or_default();
    println!("seed case: the node lists {listed} images (a list of 50 is truncated)");
    let row = Row::new("seed");
    grant_node_read(&row.plain.name);
    grant_node_read(&row.admitted.name);
    let missing = format!("{}/tools:no-such-tag", c.registry);
    // IfNotPresent, the node readable: its complete list lacks the image, so the miss counts.
    for manifest in [
        pulled_always(job("seed-always", &missing, 5)),
        job("seed-ifnotpresent", &missing, 5),
    ] {
        c.apply(&row.plain.name, &injected(&manifest, &[], &[]));
        c.apply(&row.admitted.name, &manifest);
    }
    for name in ["seed-always", "seed-ifnotpresent"] {
        for (ns, by) in [(&row.plain, "inject"), (&row.admitted, "the webhook")] {
            let failed = wait_job(&ns.name, name, "Failed");
            let cond = condition(&failed, "Failed").expect("Failed");
            assert_eq!(cond["reason"], "PodFailurePolicy", "{name}: {cond}");
            let (code, message) = init_message(&ns.name, name);
            assert_eq!(code, 3, "{}/{name}: {message}", ns.name);
            assert!(message.contains("no-such-tag"), "{name}: {message}");
            println!(
                "seed case, {name}, pullcheck put in by {by}: Failed (PodFailurePolicy) {} s after creation",
                seconds_to(&failed, "Failed")
            );
        }
    }
}

/// `manifest` with the pod on the pods' network (not `hostNetwork`), pulled `Always`.
fn pod_network(manifest: String) -> String {
    pulled_always(manifest.replace("      hostNetwork: true\n", ""))
}

#[test]
fn a_registry_on_the_nodes_loopback_is_not_asked_from_the_pods_network() {
    let c = cluster();
    assert!(
        pullcheck::proof::is_loopback_host(&c.registry),
        "the cluster's registry {} is on the host's loopback, as kind's local registry",
        c.registry
    );
    // Not hostNetwork: the pod's 127.0.0.1 is its own, the kubelet pulls from the node's. Both
    // `inject` and the release pass `--plain-http` for the cluster's registry: a pod that asked
    // it would be refused on its own loopback (exit 6 before).
    let row = Row::new("loopback");
    row.create(
        "loopback",
        |name| pod_network(job(name, &c.tools_image(), 0)),
        &[],
    );
    for message in row.complete("loopback", "loopback registry, pod network") {
        assert!(message.contains("loopback"), "{message}");
    }
}

#[test]
fn plain_http_only_containerd_knows_is_a_warning_and_the_node_pulls() {
    // The cluster's registry at the node's address on the bridge (not loopback: the pods'
    // network reaches it) over plain HTTP, which only containerd's hosts.toml says; neither
    // `inject` nor the release is told.
    let proxy = cluster().bridge_proxy();
    let image = format!("{}/tools:1", proxy.host());
    let row = Row::new("plain-http");
    row.create("plain-http", |name| pod_network(job(name, &image, 0)), &[]);
    for message in row.complete("plain-http", "plain HTTP only containerd knows") {
        assert!(message.contains("plain_http"), "{message}");
    }
    assert!(
        !proxy.requests_matching("/v2/").is_empty(),
        "the node pulled through the proxy"
    );
}

/// A bare Pod of one container, `restartPolicy: Never` (as Argo, Tekton, Airflow and Spark
/// make them), `hostNetwork` to reach the proxy on the host's loopback.
fn bare_pod(name: &str, image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  restartPolicy: Never\n  hostNetwork: true\n  containers:\n  - name: app\n    image: {image}\n    imagePullPolicy: Always\n    command: [\"true\"]\n"
    )
}

/// Waits for Pod `name` of `ns` to have `Succeeded`; panics at once if it `Failed`.
fn wait_succeeded(ns: &str, name: &str) {
    let c = cluster();
    wait_for(&format!("Pod {ns}/{name} Succeeded"), minutes(8), || {
        let pod = c.get(ns, &format!("pod/{name}"));
        match &pod {
            Some(p) if p["status"]["phase"] == "Succeeded" => Ok(()),
            Some(p) if p["status"]["phase"] == "Failed" => {
                panic!("Pod {ns}/{name} Failed: {}", status_of(&pod.clone()))
            }
            _ => Err(status_of(&pod)),
        }
    });
}

#[test]
fn a_registry_answering_503_for_90_s_is_waited_out_as_without_pullcheck() {
    let c = cluster();
    // The cluster's registry behind a proxy that answers 503 to everything until the outage
    // ends, then passes every request through.
    let proxy = outage_proxy();
    let row = Row::new("outage");
    proxy.rule(Rule::any(Fault::status(503)));
    let image = format!("{}/tools:1", proxy.host());
    let plain = ["--plain-http", proxy.host().as_str()].map(str::to_string);
    let plain: Vec<&str> = plain.iter().map(String::as_str).collect();
    row.create("outage", |name| pulled_always(job(name, &image, 0)), &plain);
    c.apply(&row.plain.name, &bare_pod("outage-pod-without", &image));
    c.apply(
        &row.plain.name,
        &injected(&bare_pod("outage-pod", &image), &[], &plain),
    );
    c.apply(&row.admitted.name, &bare_pod("outage-pod", &image));
    std::thread::sleep(Duration::from_secs(90));
    proxy.clear_rules();
    row.complete("outage", "503 for 90 s, Job");
    for (ns, name) in [
        (&row.plain, "outage-pod-without"),
        (&row.plain, "outage-pod"),
        (&row.admitted, "outage-pod"),
    ] {
        wait_succeeded(&ns.name, name);
        println!("503 for 90 s, bare Pod {}/{name}: Succeeded", ns.name);
    }
}

#[test]
fn unverifiable_from_the_pod_is_a_warning_and_the_node_pulls() {
    // The registry's CA only containerd knows (its hosts.toml `ca`): the pod cannot verify the
    // certificate (`tls`), the node can.
    let c = cluster();
    let registry = crate::common::token_registry();
    let host = registry.host();
    let ca = registry.ca_pem_path().expect("CA").to_path_buf();
    let image = c.copy_tools_into(registry, "private/ca-only-node:1");
    c.trust_registry(&host, &ca);
    let row = Row::new("ca");
    for ns in [&row.plain, &row.admitted] {
        c.pull_secret(&ns.name, "regcred", &host, ALICE, ALICE_PASSWORD);
    }
    row.create(
        "ca",
        |name| {
            pulled_always(job_with(
                name,
                &image,
                0,
                "      imagePullSecrets: [{name: regcred}]\n",
            ))
        },
        &[],
    );
    for message in row.complete("ca", "CA only containerd knows") {
        assert!(message.contains("tls"), "{message}");
    }
}
