//! A pod is failed only on proof: the places where a pod sees less than its node, each as the
//! same Job (or bare Pod) without pullcheck and with it (put in by `inject`), which must end the
//! same way, `Complete`; and the seed case beside them, a missing tag, which still fails fast
//! (`Always`, and `IfNotPresent` with the node readable). The figures are printed, never
//! asserted.
//!
//! Rows of `docs/reference/what-fails.md` covered here: a registry on the node's loopback from a
//! pod that is not `hostNetwork`; a registry answering 503 for 90 s, then recovering (a bare
//! `restartPolicy: Never` pod and a `backoffLimit: 0` Job); the seed case. The image only the
//! node holds, with and without the RBAC example, is `node_images.rs`.

use crate::common::proxy::{Fault, Proxy, Rule};
use crate::harness::{cluster, condition, minutes, status_of, wait_for};
use crate::jobs::{injected, job, job_with, seconds_to, wait_job};
use std::time::Duration;

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
fn init_message(ns: &str, name: &str) -> (i64, String) {
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
    let ns = c.namespace("pc-proof-seed");
    grant_node_read(&ns.name);
    let missing = format!("{}/tools:no-such-tag", c.registry);
    // The node's list proves an absence only while it is complete (fewer images than the
    // kubelet's nodeStatusMaxImages, 50).
    let listed = c
        .get("default", &format!("node/{}", c.node))
        .and_then(|n| n["status"]["images"].as_array().map(Vec::len))
        .unwrap_or_default();
    println!("seed case: the node lists {listed} images (a list of 50 is truncated)");
    let always = job("seed-always", &missing, 5)
        .replace("imagePullPolicy: IfNotPresent", "imagePullPolicy: Always");
    c.apply(&ns.name, &injected(&always, &[], &[]));
    // IfNotPresent, the node readable: its complete list lacks the image, so the miss counts.
    c.apply(
        &ns.name,
        &injected(&job("seed-ifnotpresent", &missing, 5), &[], &[]),
    );
    for name in ["seed-always", "seed-ifnotpresent"] {
        let failed = wait_job(&ns.name, name, "Failed");
        let cond = condition(&failed, "Failed").expect("Failed");
        assert_eq!(cond["reason"], "PodFailurePolicy", "{name}: {cond}");
        let (code, message) = init_message(&ns.name, name);
        assert_eq!(code, 3, "{name}: {message}");
        assert!(message.contains("no-such-tag"), "{name}: {message}");
        println!(
            "seed case, {name}: Failed (PodFailurePolicy) {} s after creation",
            seconds_to(&failed, "Failed")
        );
    }
}

#[test]
fn a_registry_on_the_nodes_loopback_is_not_asked_from_the_pods_network() {
    let c = cluster();
    assert!(
        pullcheck::proof::is_loopback_host(&c.registry),
        "the cluster's registry {} is on the host's loopback, as kind's local registry",
        c.registry
    );
    let ns = c.namespace("pc-proof-loopback");
    // Not hostNetwork: the pod's 127.0.0.1 is its own, the kubelet pulls from the node's.
    let pod_network =
        |name: &str| job(name, &c.tools_image(), 0).replace("      hostNetwork: true\n", "");
    c.apply(&ns.name, &pod_network("loopback-without"));
    // `injected` passes `--plain-http` for the cluster's registry: a pod that asked it would
    // be refused on its own loopback (exit 6 before).
    c.apply(&ns.name, &injected(&pod_network("loopback"), &[], &[]));
    let without = wait_job(&ns.name, "loopback-without", "Complete");
    let with = wait_job(&ns.name, "loopback", "Complete");
    let (code, message) = init_message(&ns.name, "loopback");
    assert_eq!(code, 0, "{message}");
    assert!(message.contains("loopback"), "{message}");
    assert!(message.contains("not counted"), "{message}");
    println!(
        "loopback registry, pod network: Complete {} s with pullcheck, {} s without",
        seconds_to(&with, "Complete"),
        seconds_to(&without, "Complete")
    );
}

/// A bare Pod of one container, `restartPolicy: Never` (as Argo, Tekton, Airflow and Spark
/// make them), `hostNetwork` to reach the proxy on the host's loopback.
fn bare_pod(name: &str, image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  restartPolicy: Never\n  hostNetwork: true\n  containers:\n  - name: app\n    image: {image}\n    imagePullPolicy: Always\n    command: [\"true\"]\n"
    )
}

#[test]
fn a_registry_answering_503_for_90_s_is_waited_out_as_without_pullcheck() {
    let c = cluster();
    let ns = c.namespace("pc-proof-outage");
    // The cluster's registry behind a proxy that answers 503 to everything until the outage
    // ends, then passes every request through.
    let proxy = Proxy::start(&c.registry);
    proxy.rule(Rule::any(Fault::status(503)));
    let image = format!("{}/tools:1", proxy.host());
    let plain = ["--plain-http", proxy.host().as_str()].map(str::to_string);
    let plain: Vec<&str> = plain.iter().map(String::as_str).collect();
    let job0 = |name: &str| {
        job(name, &image, 0).replace("imagePullPolicy: IfNotPresent", "imagePullPolicy: Always")
    };
    c.apply(&ns.name, &job0("outage-without"));
    c.apply(&ns.name, &injected(&job0("outage"), &[], &plain));
    c.apply(&ns.name, &bare_pod("outage-pod-without", &image));
    c.apply(
        &ns.name,
        &injected(&bare_pod("outage-pod", &image), &[], &plain),
    );
    std::thread::sleep(Duration::from_secs(90));
    proxy.clear_rules();
    for name in ["outage-without", "outage"] {
        let done = wait_job(&ns.name, name, "Complete");
        println!(
            "503 for 90 s, Job {name}: Complete {} s after creation",
            seconds_to(&done, "Complete")
        );
    }
    let (code, message) = init_message(&ns.name, "outage");
    assert_eq!(code, 0, "{message}");
    assert!(message.contains("not counted"), "{message}");
    for name in ["outage-pod-without", "outage-pod"] {
        let pod = wait_for(&format!("Pod {name} Succeeded"), minutes(8), || {
            let pod = c.get(&ns.name, &format!("pod/{name}"));
            match &pod {
                Some(p) if p["status"]["phase"] == "Succeeded" => Ok(p.clone()),
                Some(p) if p["status"]["phase"] == "Failed" => {
                    panic!("Pod {name} Failed: {}", status_of(&pod.clone()))
                }
                _ => Err(status_of(&pod)),
            }
        });
        println!("503 for 90 s, bare Pod {name}: {}", pod["status"]["phase"]);
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
    let ns = c.namespace("pc-proof-ca");
    c.kubectl(&[
        "create",
        "secret",
        "docker-registry",
        "regcred",
        "-n",
        &ns.name,
        &format!("--docker-server={host}"),
        &format!("--docker-username={}", crate::common::ALICE),
        &format!("--docker-password={}", crate::common::ALICE_PASSWORD),
    ]);
    let with_secret = |name: &str| {
        job_with(
            name,
            &image,
            0,
            "      imagePullSecrets: [{name: regcred}]\n",
        )
        .replace("imagePullPolicy: IfNotPresent", "imagePullPolicy: Always")
    };
    c.apply(&ns.name, &with_secret("ca-without"));
    c.apply(&ns.name, &injected(&with_secret("ca"), &[], &[]));
    let without = wait_job(&ns.name, "ca-without", "Complete");
    let with = wait_job(&ns.name, "ca", "Complete");
    let (code, message) = init_message(&ns.name, "ca");
    assert_eq!(code, 0, "{message}");
    assert!(message.contains("tls"), "{message}");
    assert!(message.contains("not counted"), "{message}");
    println!(
        "CA only containerd knows: Complete {} s with pullcheck, {} s without",
        seconds_to(&with, "Complete"),
        seconds_to(&without, "Complete")
    );
}
