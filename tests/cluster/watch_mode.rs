//! `mode: watch`, the chart's default, on the real cluster: the webhook adds nothing to pods and
//! to each Job only the rule `FailJob` on the watcher's condition; the watcher beside it fails
//! the stuck pods. A release of the chart with its default values but two: the cluster's
//! images, and a namespace label of its own (`pullcheck.dev/watch=mode-e2e`, which in this
//! mode selects the namespaces of the webhook and of the watcher alike), so that no other
//! test's pods pass through it.
//!
//! 1. a plain Job with a missing tag, no init container, ends `Failed` (`PodFailurePolicy`), 5
//!    times over: each time to `Failed` and the median are printed;
//! 2. the good Job's time to `Complete`, against the same Job in a namespace without the label
//!    (no pullcheck at all), 7 interleaved pairs: each pair and the median ratio are printed;
//!    no pod of the good Job has an init container or the watcher's condition;
//! 3. a Job with a `podFailurePolicy` of its own, and one with `restartPolicy: OnFailure`, are
//!    stored as written, and kubectl prints the webhook's warning; a CronJob is stored with the
//!    rule in its job template.
//!
//! Figures are printed, not asserted (`tests/cluster/test.sh watch_mode:: --nocapture`).

use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::Instant;

use crate::harness::{Namespace, cluster, condition, minutes, status_of, wait_for};
use crate::jobs::{job, job_with, seconds_to};
use crate::webhook::{Installed, dry_run, install};

/// The namespace label of this file's release: the watcher's, and in watch mode the webhook's.
const LABEL: &str = "pullcheck.dev/watch=mode-e2e";

/// The release the watch-mode tests share: the chart's defaults (`mode: watch`), its own label.
fn release() -> &'static Installed {
    static RELEASE: OnceLock<Installed> = OnceLock::new();
    RELEASE.get_or_init(|| {
        let set = format!("mode=watch,watch.namespaceLabel={LABEL}");
        install("pc-watch-mode", "watch-mode-select-none", &["--set", &set])
    })
}

/// The rule the webhook adds in watch mode, as the API server stores it.
fn the_rule() -> Value {
    json!({"rules": [{"action": "FailJob",
        "onPodConditions": [{"type": "ConfigIssue", "status": "True"}]}]})
}

/// A namespace of the test's own with the one label, once its Jobs are seen to get the rule
/// (the API server matches the label from its own cache of namespaces).
pub fn watched(name: &str) -> Namespace {
    let _ = release();
    let c = cluster();
    let ns = c.namespace(name);
    c.kubectl(&["label", "namespace", name, LABEL]);
    let probe = job("probe", &c.tools_image(), 0);
    wait_for(
        &format!("Jobs of {name} to get the rule"),
        minutes(1),
        || {
            let stored = dry_run(name, &probe).0?;
            if stored["spec"]["podFailurePolicy"] == the_rule() {
                Ok(())
            } else {
                Err(format!("{:#}", stored["spec"]))
            }
        },
    );
    ns
}

/// `kubectl apply` of Job `name` in `ns`, then `kubectl wait` for its condition `kind` (a
/// watch: no polling gap): the seconds between the two, as `bench/cluster.sh` measures them.
fn seconds_until(ns: &str, name: &str, manifest: &str, kind: &str) -> f64 {
    let c = cluster();
    let started = Instant::now();
    c.apply(ns, manifest);
    let out = c.kubectl_output(
        &[
            "wait",
            "-n",
            ns,
            &format!("--for=condition={kind}"),
            &format!("job/{name}"),
            "--timeout=300s",
        ],
        None,
    );
    let took = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "Job {ns}/{name} not {kind} within 300 s: {}\njob: {}\npods: {:#?}{}",
        String::from_utf8_lossy(&out.stderr),
        status_of(&c.get(ns, &format!("job/{name}"))),
        c.job_pods(ns, name)
            .iter()
            .map(|p| p["status"].clone())
            .collect::<Vec<_>>(),
        c.pullcheck_said(ns)
    );
    took
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

#[test]
fn watch_mode_fails_a_missing_tag_job_that_has_no_init_container() {
    let c = cluster();
    let ns = watched("pc-wm-missing");
    let missing = format!("{}/tools:no-such-tag", c.registry);
    let mut times = Vec::new();
    for i in 0..5 {
        let name = format!("missing-{i}");
        let manifest = job(&name, &missing, 5);
        assert!(
            !manifest.contains("pullcheck") && !manifest.contains("podFailurePolicy"),
            "a plain Job: {manifest}"
        );
        let took = seconds_until(&ns.name, &name, &manifest, "Failed");
        let failed = c.get(&ns.name, &format!("job/{name}")).expect("the Job");
        let cond = condition(&failed, "Failed").expect("Failed");
        assert_eq!(cond["reason"], "PodFailurePolicy", "{name}: {cond}");
        let message = cond["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("ConfigIssue") && message.contains("FailJob rule at index 0"),
            "{name}: the Job failed on the rule the webhook added: {message}"
        );
        let spec = &failed["spec"];
        assert_eq!(spec["podFailurePolicy"], the_rule(), "{name}: {spec:#}");
        assert_eq!(spec["podReplacementPolicy"], "Failed", "{name}");
        assert!(
            spec["template"]["spec"]["initContainers"].is_null(),
            "{name}: nothing added to its pods: {spec:#}"
        );
        println!(
            "watch mode: missing-tag Job {}/5: Failed {took:.2} s after kubectl apply ({} s by \
             the API server's clock)",
            i + 1,
            seconds_to(&failed, "Failed")
        );
        times.push(took);
    }
    println!(
        "watch mode: missing-tag Job: median time to Failed {:.2} s over 5 ({times:.2?}; the issue \
         asks at most 5 s)",
        median(&times)
    );
}

#[test]
fn watch_mode_costs_a_good_job_nothing_and_touches_none_of_its_pods() {
    let c = cluster();
    let ns = watched("pc-wm-good");
    // The same Job with no pullcheck at all: a namespace without the label.
    let plain = c.namespace("pc-wm-good-plain");
    let image = c.tools_image();
    // One run first, not counted, so that the image is on the node for every counted one.
    seconds_until(&plain.name, "warm", &job("warm", &image, 0), "Complete");
    let (mut with, mut without, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..7 {
        let name = format!("good-{i}");
        let manifest = job(&name, &image, 0);
        let run = |namespace: &str| seconds_until(namespace, &name, &manifest, "Complete");
        // Interleaved, each side first in turn, so that the machine's load falls on both alike.
        let (w, wo) = if i % 2 == 0 {
            let w = run(&ns.name);
            (w, run(&plain.name))
        } else {
            let wo = run(&plain.name);
            (run(&ns.name), wo)
        };
        println!(
            "watch mode: good Job pair {}/7: {w:.2} s watched, {wo:.2} s without pullcheck \
             ({:.3}x)",
            i + 1,
            w / wo
        );
        with.push(w);
        without.push(wo);
        ratios.push(w / wo);

        let stored = c.get(&ns.name, &format!("job/{name}")).expect("the Job");
        assert_eq!(stored["spec"]["podFailurePolicy"], the_rule(), "{name}");
        let unwatched = c
            .get(&plain.name, &format!("job/{name}"))
            .expect("the plain Job");
        assert!(
            unwatched["spec"]["podFailurePolicy"].is_null(),
            "the namespace without the label is not the webhook's: {:#}",
            unwatched["spec"]
        );
        let pods = c.job_pods(&ns.name, &name);
        assert!(!pods.is_empty(), "{name}: its pod is kept after Complete");
        for pod in pods {
            let pod_name = pod["metadata"]["name"].as_str().unwrap_or("?").to_string();
            assert!(
                pod["spec"]["initContainers"].is_null(),
                "{pod_name}: no init container: {:#}",
                pod["spec"]
            );
            let conditions = pod["status"]["conditions"].as_array().cloned();
            assert!(
                !conditions
                    .unwrap_or_default()
                    .iter()
                    .any(|cond| cond["type"] == "ConfigIssue"),
                "{pod_name}: no condition of the watcher's: {:#}",
                pod["status"]
            );
        }
    }
    println!(
        "watch mode: good Job to Complete, median of 7 interleaved pairs: {:.2} s watched, {:.2} s \
         without pullcheck; median ratio {:.3}x (the issue asks at most 1.02x)",
        median(&with),
        median(&without),
        median(&ratios)
    );
}

#[test]
fn watch_mode_leaves_a_job_with_its_own_policy_as_written_and_kubectl_prints_why() {
    let c = cluster();
    let ns = watched("pc-wm-own");
    let image = c.tools_image();
    let own_policy = json!({"rules": [{"action": "FailJob",
        "onExitCodes": {"containerName": "app", "operator": "In", "values": [42]}}]});
    let own = job("own", &image, 2).replace(
        "spec:\n  backoffLimit: 2\n",
        "spec:\n  backoffLimit: 2\n  podFailurePolicy:\n    rules:\n    - action: FailJob\n      \
         onExitCodes: {containerName: app, operator: In, values: [42]}\n",
    );
    assert!(own.contains("podFailurePolicy"), "{own}");
    let on_failure =
        job("on-failure", &image, 2).replace("restartPolicy: Never", "restartPolicy: OnFailure");
    for (name, manifest, warning) in [
        (
            "own",
            &own,
            "Warning: pullcheck: the Job has its own podFailurePolicy, left as written",
        ),
        (
            "on-failure",
            &on_failure,
            "Warning: pullcheck: the Job has restartPolicy OnFailure, left as written",
        ),
    ] {
        let out = c.kubectl_output(&["create", "-n", &ns.name, "-f", "-"], Some(manifest));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert!(
            stderr.contains(warning),
            "{name}: kubectl prints the webhook's warning: {stderr}"
        );
        println!(
            "watch mode: kubectl create of the Job {name} printed: {}",
            stderr.trim()
        );
        let stored = c.get(&ns.name, &format!("job/{name}")).expect("the Job");
        let want = if name == "own" {
            own_policy.clone()
        } else {
            Value::Null
        };
        assert_eq!(
            stored["spec"]["podFailurePolicy"], want,
            "{name}: stored as written: {:#}",
            stored["spec"]
        );
        assert!(stored["spec"]["template"]["spec"]["initContainers"].is_null());
    }
    let said = c
        .kubectl_output(
            &["create", "-n", &ns.name, "-f", "-"],
            Some(&own.replace("name: own", "name: own-2")),
        )
        .stderr;
    assert!(
        String::from_utf8_lossy(&said)
            .contains("add first {action: FailJob, onPodConditions: [{type: ConfigIssue}]}"),
        "the warning says what to add: {}",
        String::from_utf8_lossy(&said)
    );

    // A CronJob (suspended: it never runs here): the rule is in its job template.
    let template = job_with("unused", &image, 2, "");
    let job_spec = template
        .split_once("spec:\n")
        .map(|(_, spec)| spec)
        .expect("a Job's spec");
    let indented: String = job_spec.lines().map(|l| format!("    {l}\n")).collect();
    let cron = format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\nspec:\n  schedule: \"0 3 * * *\"\n  \
         suspend: true\n  jobTemplate:\n    spec:\n{indented}"
    );
    c.apply(&ns.name, &cron);
    let stored = c.get(&ns.name, "cronjob/nightly").expect("the CronJob");
    let spec = &stored["spec"]["jobTemplate"]["spec"];
    assert_eq!(spec["podFailurePolicy"], the_rule(), "{spec:#}");
    assert!(
        spec["template"]["spec"]["initContainers"].is_null(),
        "{spec:#}"
    );
}
