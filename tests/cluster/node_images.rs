//! Images the node already has: an image imported only into containerd's `k8s.io` namespace,
//! `IfNotPresent`, which the kubelet starts without a pull. pullcheck put in by `inject` and by
//! the webhook (both look the node up by default), with `examples/node-images-rbac.yaml` applied
//! for real (for the webhook's namespace, the same ClusterRole bound to its service account),
//! reads the Node and says `ok` from it; without the RBAC it says once that it could not look,
//! the registry's miss is not counted (`may_be_on_node`, seen in `kubectl describe`), and the
//! Job completes as it does without pullcheck.

use crate::harness::{cluster, minutes, repo, status_of, wait_for};
use crate::jobs::{injected, job, seconds_to, wait_job};
use crate::proof::{grant_node_read, release};
use crate::webhook::opted_in;

#[test]
fn an_image_only_the_node_has_is_not_failed_with_the_examples_rbac() {
    let c = cluster();
    // The image: of its own content, under a name the registry does not have (cluster.sh made
    // the archive), imported with ctr as a preloaded image would be.
    let image = format!("{}/node-only:1", c.registry);
    let archive = c.dir.join("images/node-only.tar");
    c.ctr(&["images", "import", archive.to_str().unwrap()]);
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

    for (ns, by) in [(&ns, "inject"), (&admitted, "the webhook")] {
        let done = wait_job(&ns.name, "node-only", "Complete");
        let (code, logs, _) = finished(&ns.name);
        assert_eq!(code, 0, "{logs}");
        assert!(!logs.contains("node images not looked up"), "{logs}");
        println!(
            "with the RBAC, pullcheck put in by {by}: exit 0, ok from the node, Complete {} s",
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
    let c = cluster();
    let pod = wait_for(
        &format!("the init container of {ns}/node-only to end"),
        minutes(5),
        || {
            let pods = c.job_pods(ns, "node-only");
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
