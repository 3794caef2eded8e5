//! Verdicts at `kubectl apply` (`admission.verdicts`, `admission.deny`) on the real cluster: the
//! webhook asks the registry of each image of a Job as it is created, and kubectl prints a proven
//! miss as a warning; with deny the Job is refused with that message; a good Job prints nothing.
//!
//! The registry is the cluster's own, behind a proxy on the node's bridge address (not
//! loopback, which is the node's own and never asked by the webhook), spoken to over plain HTTP
//! by containerd (its hosts.toml) and by the webhook (`admission.plainHttp`).

use crate::common::proxy::Proxy;
use crate::harness::cluster;
use crate::jobs::{job, pulled_always};
use crate::webhook::{install, opted_in};
use std::sync::OnceLock;

/// The proxy to the cluster's registry on the node's bridge address.
fn bridge_registry() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(|| {
        let c = cluster();
        let node_ip: std::net::IpAddr = c.node_ip.parse().expect("the node's IP");
        let proxy = Proxy::start_on(std::net::SocketAddr::new(node_ip, 0), &c.registry);
        c.plain_http_registry(&proxy.host());
        proxy
    })
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
