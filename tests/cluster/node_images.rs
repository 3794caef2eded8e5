//! Images the node already has: an image imported only into containerd's `k8s.io` namespace,
//! `IfNotPresent`, which the kubelet starts without a pull. pullcheck put in by `inject` and by
//! the webhook (both look the node up by default), with `examples/node-images-rbac.yaml` applied
//! for real (for the webhook's namespace, the same ClusterRole bound to its service account),
//! reads the Node and says `ok` from it; without the RBAC it says once that it could not look,
//! the registry's miss is not counted (`may_be_on_node`, seen in `kubectl describe`), and the
//! Job completes as it does without pullcheck.
//!
//! From Kubernetes 1.35 (KEP-2535: the gate `KubeletEnsureSecretPulledImages`, on by default)
//! the kubelet re-verifies a pod's credentials before it starts an image the node holds, unless
//! its records say the pod may use it or its policy exempts it (`NeverVerifyPreloadedImages`,
//! the default, exempts images it did not pull). pullcheck tells from the Node's
//! `kubeletVersion`: on v1.35+ it asks the registry of a held image with the pod's credentials
//! and does not count a refusal (`held_by_node`); before, it says `present_on_node` unasked.
//! Both tests here assert, on the cluster's version, what the real kubelet does and what
//! pullcheck says: the preloaded image above still starts on v1.37; a private image pulled
//! with a pull secret is pulled again, and refused, for a pod without it on v1.35+ only.

use crate::common::{ALICE, ALICE_PASSWORD, token_registry};
use crate::harness::{cluster, condition, minutes, repo, status_of, wait_for};
use crate::jobs::{injected, job, job_with, seconds_to, wait_job, wait_pull_failing};
use crate::proof::{grant_node_read, release};
use crate::webhook::opted_in;

#[test]
fn an_image_only_the_node_has_is_not_failed_with_the_examples_rbac() {
    let c = cluster();
    // The image: of its own content, under a name the registry does not have (cluster.sh made
    // the archive), imported with ctr as a preloaded image would be.
    let image = format!("{}/node-only:1", c.registry);
    let archive = c.dir.join("images/node-only.tar");
    c.import_on_node(&archive, &image);
    wait_for("the Node to list the imported image", minutes(3), || {
        let node = c.get("default", &format!("node/{}", c.node));
        let listed = node.as_ref().is_some_and(|n| {
            n["status"]["images"].as_array().is_some_and(|l| {
                l.iter().any(|i| {
                    i["names"]
                        .as_array()
                        .is_some_and(|n| n.iter().any(|n| n == image.as_str()))
                })
            })
        });
        if listed {
            Ok(())
        } else {
            Err(
                serde_json::to_string_pretty(&node.map(|n| n["status"]["images"].clone()))
                    .unwrap_or_default(),
            )
        }
    });

    // The example's subject is the default service account of namespace `ci`: applied as it is.
    // The webhook's twins: one namespace granted the same, one not.
    let ns = c.namespace("ci");
    let rbac = std::fs::read_to_string(repo().join("examples/node-images-rbac.yaml")).unwrap();
    c.apply("default", &rbac);
    let norbac = c.namespace("pc-node-norbac");
    let admitted = opted_in("pc-node-rbac-wh", release());
    grant_node_read(&admitted.name);
    let admitted_norbac = opted_in("pc-node-norbac-wh", release());

    let manifest = injected(&job("node-only", &image, 0), &[], &[]);
    c.apply(&ns.name, &manifest);
    c.apply(&norbac.name, &manifest);
    c.apply(&norbac.name, &job("node-only-without", &image, 0));
    c.apply(&admitted.name, &job("node-only", &image, 0));
    c.apply(&admitted_norbac.name, &job("node-only", &image, 0));

    // The kubelet starts the imported image on every version (from v1.35 its default policy,
    // NeverVerifyPreloadedImages, does not verify images it did not pull); pullcheck says so
    // from the node before v1.35, and on v1.35+ asks the registry, which lacks it: not counted.
    let reverifies = re_verifies(&kubernetes_version());
    for (ns, by) in [(&ns, "inject"), (&admitted, "the webhook")] {
        let done = wait_job(&ns.name, "node-only", "Complete");
        let (code, logs, _) = finished(&ns.name);
        assert_eq!(code, 0, "{logs}");
        assert!(!logs.contains("node images not looked up"), "{logs}");
        let said = if reverifies {
            "not counted (held_by_node)"
        } else {
            "on the node; its registry was not asked"
        };
        assert!(logs.contains(said), "{logs}");
        println!(
            "with the RBAC, pullcheck put in by {by}: exit 0 ({said}), Complete {} s",
            seconds_to(&done, "Complete")
        );
    }

    // Without the binding: the API server answers 403, pullcheck says so once and asks the
    // registry, which does not have the image: not counted, since the node may hold it.
    let without = wait_job(&norbac.name, "node-only-without", "Complete");
    println!(
        "without the RBAC, without pullcheck: Complete {} s",
        seconds_to(&without, "Complete")
    );
    for (ns, by) in [(&norbac, "inject"), (&admitted_norbac, "the webhook")] {
        let (code, logs, described) = finished(&ns.name);
        assert_eq!(
            logs.matches("node images not looked up").count(),
            1,
            "{logs}"
        );
        assert!(logs.contains("403") || logs.contains("forbidden"), "{logs}");
        assert!(logs.contains("not counted (may_be_on_node)"), "{logs}");
        assert_eq!(code, 0, "{logs}");
        assert!(described.contains("not counted"), "{described}");
        let with = wait_job(&ns.name, "node-only", "Complete");
        println!(
            "without the RBAC, pullcheck put in by {by}: exit 0, Complete {} s; {logs}",
            seconds_to(&with, "Complete")
        );
    }
}

/// Once the init container of Job `node-only`'s pod in `ns` has ended: its exit code, its log
/// and `kubectl describe` of the pod.
fn finished(ns: &str) -> (i64, String, String) {
    init_finished(ns, "node-only")
}

/// [`finished`] for Job `job`.
fn init_finished(ns: &str, job: &str) -> (i64, String, String) {
    let c = cluster();
    let pod = wait_for(
        &format!("the init container of {ns}/{job} to end"),
        minutes(5),
        || {
            let pods = c.job_pods(ns, job);
            match pods.first() {
                Some(p)
                    if !p["status"]["initContainerStatuses"][0]["state"]["terminated"]
                        .is_null() =>
                {
                    Ok(p.clone())
                }
                other => Err(status_of(&other.cloned())),
            }
        },
    );
    let name = pod["metadata"]["name"].as_str().unwrap();
    let logs = c.kubectl(&["logs", "-n", ns, name, "-c", "pullcheck"]);
    let described = c.kubectl(&["describe", "pod", "-n", ns, name]);
    let code = pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"]
        .as_i64()
        .unwrap_or(-1);
    (code, logs, described)
}

/// Kubernetes 1.35+ re-verifies a pod's credentials before it starts an image the node holds;
/// pullcheck tells by the Node's `kubeletVersion`. A private image of the token registry is
/// pulled by pod A with the pull secret (`IfNotPresent`); then pod B runs the same image,
/// `IfNotPresent`, without the secret, with pullcheck injected (which reads the Node). On
/// v1.35+ the kubelet pulls for B with B's own credentials (none) and the registry refuses it,
/// while pullcheck asked the registry too and did not count its refusal (`held_by_node`, exit
/// 0: the kubelet's records, not the pod, decide). Before v1.35 the kubelet starts B from the
/// node's copy, and pullcheck said `present_on_node` without asking.
#[test]
fn from_kubernetes_1_35_a_held_private_image_is_pulled_again_for_a_pod_without_its_secret() {
    let c = cluster();
    let version = kubernetes_version();
    let reverifies = re_verifies(&version);
    // What pullcheck reads is the kubelet this harness built.
    let node = c
        .get("default", &format!("node/{}", c.node))
        .expect("the Node");
    assert_eq!(
        node["status"]["nodeInfo"]["kubeletVersion"],
        version.as_str(),
        "{:#}",
        node["status"]["nodeInfo"]
    );

    let registry = token_registry();
    let host = registry.host();
    let ca = registry.ca_pem_path().expect("CA").to_path_buf();
    // An image of its own content: the Node lists at most five names of an image, and the
    // tests beside this one pull tools:1 under many.
    let image = c.copy_into(
        registry,
        &format!("{}/tools-reverify:1", c.registry),
        "private/reverify-tools:1",
    );
    c.trust_registry(&host, &ca);
    let ns = c.namespace("pc-reverify");
    c.pull_secret(&ns.name, "regcred", &host, ALICE, ALICE_PASSWORD);
    c.kubectl(&[
        "create",
        "configmap",
        "registry-ca",
        "-n",
        &ns.name,
        &format!("--from-file=ca.crt={}", ca.display()),
    ]);
    grant_node_read(&ns.name);

    // Pod A: the kubelet pulls the image with the secret (from v1.35 it records with which).
    c.apply(
        &ns.name,
        &job_with(
            "reverify-a",
            &image,
            0,
            "      imagePullSecrets: [{name: regcred}]\n",
        ),
    );
    wait_job(&ns.name, "reverify-a", "Complete");
    wait_listed(&image);

    // Pod B: the same image, without the secret.
    let b = injected(
        &job("reverify-b", &image, 0),
        &["--ca-configmap", "registry-ca"],
        &["--ca-file", "/etc/pullcheck/ca/ca.crt"],
    );
    c.apply(&ns.name, &b);
    let (code, logs, _) = init_finished(&ns.name, "reverify-b");
    assert_eq!(code, 0, "{version}: {logs}");
    assert!(!logs.contains("node images not looked up"), "{logs}");
    if reverifies {
        assert!(
            logs.contains("not counted (held_by_node)"),
            "{version}: {logs}"
        );
        let pod = wait_pull_failing(&ns.name, "reverify-b", minutes(3));
        let waiting = &pod["status"]["containerStatuses"][0]["state"]["waiting"];
        let words = waiting["message"].as_str().unwrap_or_default();
        assert!(
            ["authoriz", "denied", "401"]
                .iter()
                .any(|w| words.contains(w)),
            "{version}: the kubelet's pull for B was refused for its credentials: {waiting:#}"
        );
        // Not proof, so not failed by pullcheck: the Job waits on the kubelet, as without it.
        let job = c.get(&ns.name, "job/reverify-b").expect("Job reverify-b");
        assert!(condition(&job, "Failed").is_none(), "{:#}", job["status"]);
        println!(
            "Kubernetes {version}: pod B without the secret: the kubelet pulled again and was refused ({}); pullcheck exit 0, not counted (held_by_node)",
            waiting["reason"]
        );
    } else {
        assert!(
            logs.contains("on the node; its registry was not asked"),
            "{version}: {logs}"
        );
        let done = wait_job(&ns.name, "reverify-b", "Complete");
        println!(
            "Kubernetes {version}: pod B without the secret started from the node's copy, Complete {} s; pullcheck exit 0, present_on_node",
            seconds_to(&done, "Complete")
        );
    }
}

/// The cluster's Kubernetes version: what `cluster.sh up` keeps in the state folder
/// (`kubernetes`), else `PULLCHECK_CLUSTER_KUBERNETES`, else cluster.sh's default.
fn kubernetes_version() -> String {
    let c = cluster();
    std::fs::read_to_string(c.dir.join("kubernetes"))
        .ok()
        .or_else(|| std::env::var("PULLCHECK_CLUSTER_KUBERNETES").ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "v1.34.4".to_string())
}

/// Whether the kubelet of `version` (`v1.37.2`) re-verifies credentials by default: the gate
/// `KubeletEnsureSecretPulledImages` is beta and on from v1.35 (the test cluster's kubelet
/// configuration leaves it and the policy at their defaults).
fn re_verifies(version: &str) -> bool {
    let mut parts = version.trim_start_matches('v').split('.');
    let mut next = || -> u32 {
        parts
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("not a Kubernetes version: {version}"))
    };
    (next(), next()) >= (1, 35)
}

/// Waits until the Node lists `image` (the kubelet refreshes its list every few seconds).
fn wait_listed(image: &str) {
    let c = cluster();
    wait_for(&format!("the Node to list {image}"), minutes(3), || {
        let node = c.get("default", &format!("node/{}", c.node));
        let listed = node.as_ref().is_some_and(|n| {
            n["status"]["images"].as_array().is_some_and(|l| {
                l.iter().any(|i| {
                    i["names"]
                        .as_array()
                        .is_some_and(|n| n.iter().any(|n| n == image))
                })
            })
        });
        match listed {
            true => Ok(()),
            false => Err(format!(
                "{} images listed",
                node.map_or(0, |n| n["status"]["images"].as_array().map_or(0, Vec::len))
            )),
        }
    });
}
