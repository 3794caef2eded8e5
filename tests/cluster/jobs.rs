//! The seed case and its twin: a Job whose image tag does not exist fails on pullcheck's exit
//! code through the real Job controller's `podFailurePolicy`, while the same Job without
//! pullcheck still waits in `ErrImagePull`/`ImagePullBackOff` two minutes later; and a good Job
//! completes with pullcheck injected.

use crate::harness::{cluster, condition, inject, minutes, seconds_between, status_of, wait_for};
use std::time::Duration;

/// A `batch/v1` Job of one container, `hostNetwork` so that pullcheck reaches the registry on
/// the host's loopback as the kubelet does.
pub fn job(name: &str, image: &str, backoff_limit: u32) -> String {
    job_with(name, image, backoff_limit, "")
}

/// `job` with more lines of the pod spec (`pod_spec`, indented six spaces, each line ending in a
/// newline).
pub fn job_with(name: &str, image: &str, backoff_limit: u32, pod_spec: &str) -> String {
    format!(
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  backoffLimit: {backoff_limit}
  template:
    spec:
      restartPolicy: Never
      hostNetwork: true
{pod_spec}      containers:
      - name: app
        image: {image}
        imagePullPolicy: IfNotPresent
        command: ["true"]
"#
    )
}

/// `manifest` (of [`job`] or [`job_with`]) pulled on every start: `imagePullPolicy: Always`.
pub fn pulled_always(manifest: String) -> String {
    manifest.replace("imagePullPolicy: IfNotPresent", "imagePullPolicy: Always")
}

/// `yaml` put through `pullcheck inject --image <the cluster's pullcheck> --job-failure-policy
/// INJECT_ARGS… -- --plain-http <the cluster's registry> CHECK_ARGS…`.
pub fn injected(yaml: &str, inject_args: &[&str], check_args: &[&str]) -> String {
    let c = cluster();
    let image = c.pullcheck_image();
    let mut args = vec!["--image", image.as_str(), "--job-failure-policy"];
    args.extend_from_slice(inject_args);
    args.extend_from_slice(&["--", "--plain-http", c.registry.as_str()]);
    args.extend_from_slice(check_args);
    inject(yaml, &args).0
}

/// Waits for Job `name` to have condition `kind` (`Failed`, `Complete`); returns the Job.
/// Waits until the first pod of Job `name` in `ns` has its first container waiting on a pull
/// that failed (`ErrImagePull` or `ImagePullBackOff`), for at most `within`; that pod.
pub fn wait_pull_failing(ns: &str, name: &str, within: Duration) -> serde_json::Value {
    let c = cluster();
    wait_for(
        &format!("the pod of Job {ns}/{name} waiting on its failed pull"),
        within,
        || {
            let pods = c.job_pods(ns, name);
            let pod = pods.first();
            let reason = pod.and_then(|p| {
                p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"].as_str()
            });
            match (pod, reason) {
                (Some(p), Some("ErrImagePull" | "ImagePullBackOff")) => Ok(p.clone()),
                _ => Err(status_of(&pod.cloned())),
            }
        },
    )
}

pub fn wait_job(ns: &str, name: &str, kind: &str) -> serde_json::Value {
    let c = cluster();
    wait_for(&format!("Job {ns}/{name} {kind}"), minutes(5), || {
        let job = c.get(ns, &format!("job/{name}"));
        match &job {
            Some(j) if condition(j, kind).is_some() => Ok(j.clone()),
            _ => Err(format!(
                "job: {}\npods: {}",
                status_of(&job),
                serde_json::to_string_pretty(
                    &c.job_pods(ns, name)
                        .iter()
                        .map(|p| &p["status"])
                        .collect::<Vec<_>>()
                )
                .unwrap_or_default()
            )),
        }
    })
}

/// Seconds from the Job's creation to its condition `kind`, by the API server's clock.
pub fn seconds_to(job: &serde_json::Value, kind: &str) -> i64 {
    let created = job["metadata"]["creationTimestamp"]
        .as_str()
        .expect("creationTimestamp");
    let at = condition(job, kind).expect("condition")["lastTransitionTime"]
        .as_str()
        .expect("lastTransitionTime");
    seconds_between(created, at)
}

#[test]
fn seed_case_job_fails_on_pullchecks_exit_code_and_without_it_waits() {
    let c = cluster();
    let ns = c.namespace("pc-seed");
    let missing = format!("{}/tools:no-such-tag", c.registry);
    // Always: the miss is proven whatever the node holds (`proof.rs` has the IfNotPresent
    // twin, with the node readable).
    let always = |name: &str| pulled_always(job(name, &missing, 5));
    c.apply(&ns.name, &injected(&always("seed"), &[], &[]));
    c.apply(&ns.name, &always("seed-without"));

    let failed = wait_job(&ns.name, "seed", "Failed");
    let cond = condition(&failed, "Failed").expect("Failed");
    assert_eq!(cond["reason"], "PodFailurePolicy", "{cond}");
    let pods = c.job_pods(&ns.name, "seed");
    assert_eq!(pods.len(), 1, "FailJob stops the Job at its first pod");
    let init = &pods[0]["status"]["initContainerStatuses"][0];
    assert_eq!(init["name"], "pullcheck");
    let terminated = &init["state"]["terminated"];
    assert_eq!(terminated["exitCode"], 3, "{init}");
    let message = terminated["message"].as_str().expect("termination message");
    assert!(message.contains(&missing), "{message}");
    assert!(message.contains("no-such-tag"), "{message}");
    println!(
        "seed case: with pullcheck, Failed (PodFailurePolicy) {} s after creation",
        seconds_to(&failed, "Failed")
    );

    // The same Job without pullcheck: two minutes after its creation, not failed, its pod
    // waiting on the pull.
    let without = c.get(&ns.name, "job/seed-without").expect("job");
    let created = without["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .to_string();
    let left = 120 - job_age(&created);
    if left > 0 {
        std::thread::sleep(Duration::from_secs(left as u64 + 1));
    }
    let job = c.get(&ns.name, "job/seed-without").expect("job");
    assert!(
        condition(&job, "Failed").is_none(),
        "{}",
        status_of(&Some(job.clone()))
    );
    let pods = c.job_pods(&ns.name, "seed-without");
    assert_eq!(pods.len(), 1, "one pod, retried in place");
    let waiting = &pods[0]["status"]["containerStatuses"][0]["state"]["waiting"];
    let reason = waiting["reason"].as_str().unwrap_or_default();
    assert!(
        reason == "ErrImagePull" || reason == "ImagePullBackOff",
        "{}",
        pods[0]["status"]
    );
    assert_eq!(pods[0]["status"]["phase"], "Pending");
    println!(
        "seed case: without pullcheck, still not failed {} s after creation ({reason})",
        job_age(&created)
    );
}

/// Seconds since `created`, by this machine's clock (the API server runs on it).
fn job_age(created: &str) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    now - seconds_between("1970-01-01T00:00:00Z", created)
}

#[test]
fn good_job_completes_with_pullcheck_injected() {
    let c = cluster();
    let ns = c.namespace("pc-good");
    let image = c.tools_image();
    c.apply(&ns.name, &injected(&job("good", &image, 0), &[], &[]));
    c.apply(&ns.name, &job("good-without", &image, 0));
    let with = wait_job(&ns.name, "good", "Complete");
    let without = wait_job(&ns.name, "good-without", "Complete");
    let pod = &c.job_pods(&ns.name, "good")[0];
    let init = &pod["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["exitCode"], 0, "{init}");
    println!(
        "good job: Complete {} s after creation with pullcheck, {} s without",
        seconds_to(&with, "Complete"),
        seconds_to(&without, "Complete")
    );
}
