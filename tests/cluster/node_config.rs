//! The node's own registry configuration, read by the init container: `inject
//! --hosts-from-node` on containerd (its hosts directory, `hosts.toml` per host) and `inject
//! --registries-from-node` on CRI-O (its `/etc/containers`: `registries.conf`, its drop-ins
//! and `certs.d`), each mounted from the node as the runtime reads it. Four cases, each a Job
//! without pullcheck beside the same Job with it, whose outcomes must agree:
//!
//! - a mirror that has the image while its upstream lacks it (the node pulls from the mirror;
//!   pullcheck says `ok` from the same mirror);
//! - a TLS registry whose CA only the node's configuration holds;
//! - a plain-HTTP registry on the node's bridge address, plain only by the node's word;
//! - a tag neither the mirror nor the upstream has: the node waits in `ErrImagePull`, and
//!   pullcheck fails the Job, now on proof (without the node's configuration the first three
//!   are warnings, `proof.rs`).

use crate::common::proxy::Proxy;
use crate::common::{ALICE, ALICE_PASSWORD, plain_registry, token_registry};
use crate::harness::{cluster, minutes};
use crate::jobs::{injected, job_with, pulled_always, seconds_to, wait_job, wait_pull_failing};
use crate::proof::init_message;

#[test]
fn the_nodes_own_registry_configuration_gives_the_init_container_the_nodes_verdict() {
    let c = cluster();
    // The upstream lacks everything: the tests' plain registry behind a proxy of this test's
    // own, so that its hosts.toml (or drop-in) is this test's alone (mirror.rs names the
    // registry itself as an upstream). The mirror is the cluster's registry behind a proxy on
    // the node's bridge address, plain HTTP by the node's configuration alone.
    let upstream_proxy = Proxy::start(&plain_registry().host());
    let upstream = upstream_proxy.host();
    let mirror = c.bridge_proxy();
    let mirror_host = mirror.host();
    if c.is_crio() {
        c.crio_drop_in(
            "pc-node-config-mirror.conf",
            &format!(
                "[[registry]]\nlocation = \"{upstream}\"\ninsecure = true\n\n[[registry.mirror]]\nlocation = \"{mirror_host}\"\ninsecure = true\n"
            ),
        );
    } else {
        let dir = c.hosts_dir.join(&upstream);
        std::fs::create_dir_all(&dir).expect("hosts dir");
        std::fs::write(
            dir.join("hosts.toml"),
            format!(
                "server = \"http://{upstream}\"\n\n[host.\"http://{mirror_host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n\n[host.\"http://{upstream}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
            ),
        )
        .expect("write hosts.toml");
    }
    // The TLS registry with token auth, its CA in the node's configuration only.
    let tls = token_registry();
    let tls_host = tls.host();
    let private = c.copy_tools_into(tls, "private/node-config:1");
    c.trust_registry(&tls_host, tls.ca_pem_path().expect("CA"));

    let from_node = if c.is_crio() {
        format!("--registries-from-node={}", c.node_containers.display())
    } else {
        format!("--hosts-from-node={}", c.hosts_dir.display())
    };
    let ns = c.namespace("pc-node-config");
    c.pull_secret(&ns.name, "regcred", &tls_host, ALICE, ALICE_PASSWORD);
    let secret = "      imagePullSecrets: [{name: regcred}]\n";
    let cases = [
        ("mirrored", format!("{upstream}/tools:1"), ""),
        ("ca-only", private, secret),
        ("plain-http", format!("{mirror_host}/tools:1"), ""),
        ("missing", format!("{upstream}/tools:no-such-tag"), ""),
    ];
    for (name, image, spec) in &cases {
        let manifest = |n: &str| pulled_always(job_with(n, image, 0, spec));
        c.apply(&ns.name, &manifest(&format!("{name}-without")));
        c.apply(&ns.name, &injected(&manifest(name), &[&from_node], &[]));
    }

    for (name, image, _) in &cases[..3] {
        let without = wait_job(&ns.name, &format!("{name}-without"), "Complete");
        let with = wait_job(&ns.name, name, "Complete");
        let (code, message) = init_message(&ns.name, name);
        assert_eq!(code, 0, "{name}: {message}");
        assert!(!message.contains("not counted"), "{name}: {message}");
        println!(
            "{} node config, {name} ({image}): Complete {} s without pullcheck, {} s with; pullcheck: {message}",
            c.runtime,
            seconds_to(&without, "Complete"),
            seconds_to(&with, "Complete"),
        );
    }
    // The mirror served the node's pull and pullcheck's look.
    assert!(
        !mirror.requests_matching("/v2/tools/manifests/1").is_empty(),
        "the mirror was asked"
    );

    // Neither has the tag: the node waits, pullcheck fails the Job on its exit code.
    let pod = wait_pull_failing(&ns.name, "missing-without", minutes(3));
    let waiting = &pod["status"]["containerStatuses"][0]["state"]["waiting"];
    let failed = wait_job(&ns.name, "missing", "Failed");
    let (code, message) = init_message(&ns.name, "missing");
    assert_eq!(code, 3, "{message}");
    assert!(message.contains("no-such-tag"), "{message}");
    println!(
        "{} node config, missing tag: without pullcheck {} ({}); with it Failed {} s after creation, exit {code}",
        c.runtime,
        waiting["reason"],
        waiting["message"].as_str().unwrap_or_default(),
        seconds_to(&failed, "Failed"),
    );
}
