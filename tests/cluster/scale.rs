//! 300 pods of one Job at once (parallelism 300, completions 300), in each of pullcheck's modes,
//! against a registry behind a fault proxy that rate-limits (429 with `Retry-After: 1` past
//! [`PER_SECOND`] requests a second): `init` (the webhook adds the init container), `watch` (the
//! chart's default: nothing in the pod) and `verdicts` (watch with the verdicts at admission).
//! For each: the requests pullcheck added at the registry (its user agent in the proxy's log),
//! the seconds from the Job's creation to its first and last pod's app container running, the
//! pods that failed (false failures: the image is good, so there must be none), and the API
//! server's own measure of its calls to the webhook. Printed, one line a mode; asserted only
//! what is not a time: no failure, the Job complete, watch adds no request, the verdicts at most
//! one lookup per image.
//!
//! The pods are `hostNetwork` (the pod range is a /24, fewer addresses than pods) and their
//! image is on the node already (`IfNotPresent`), so that the registry's requests are
//! pullcheck's alone. The kubelet's `maxPods` is raised for this (tests/cluster/cluster.sh).
//! tests/cluster/test.sh runs this test alone, last: 300 pods would slow every other test.

use crate::common::proxy::{Fault, Proxy, Rule};
use crate::harness::{Namespace, cluster, condition, minutes, wait_for};
use crate::jobs::{job, pulled_always, wait_job};
use crate::webhook::{
    Calls, dry_run, install, opted_in, span_figures, trace_mark, webhook_calls, webhook_spans,
};

/// The pods of the Job.
const PODS: usize = 300;
/// Requests a second the registry answers before it says 429.
const PER_SECOND: usize = 3;

/// The Job: `PODS` pods at once of `image`, each exits 0 at once; one failure fails it.
fn wide_job(name: &str, image: &str) -> String {
    format!(
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  parallelism: {PODS}
  completions: {PODS}
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      hostNetwork: true
      terminationGracePeriodSeconds: 0
      containers:
      - name: app
        image: {image}
        imagePullPolicy: IfNotPresent
        command: ["true"]
"#
    )
}

/// Seconds from `from` to `to`, two RFC 3339 times of the API server (whole seconds).
fn seconds(from: &str, to: &str) -> i64 {
    crate::harness::seconds_between(from, to)
}

/// One mode's run: the Job in `ns`, and what it cost. `mode` names the line printed.
fn run(mode: &str, ns: &Namespace, proxy: &Proxy, image: &str) -> usize {
    let c = cluster();
    let before = proxy.requests().len();
    let calls_before = webhook_calls(c, ".pullcheck.dev");
    let mark = trace_mark();
    c.apply(&ns.name, &wide_job("wide", image));
    let job = wait_for(&format!("Job {}/wide to end", ns.name), minutes(15), || {
        let job = c.get(&ns.name, "job/wide").ok_or("no Job")?;
        match (condition(&job, "Complete"), condition(&job, "Failed")) {
            (None, None) => Err(format!("{:#}", job["status"])),
            _ => Ok(job),
        }
    });
    let calls_after = webhook_calls(c, ".pullcheck.dev");
    let ours: Vec<_> = proxy.requests()[before..]
        .iter()
        .filter(|r| {
            r.headers.iter().any(|(name, value)| {
                name.eq_ignore_ascii_case("user-agent") && value.contains("pullcheck")
            })
        })
        .cloned()
        .collect();
    let added = ours.len();
    let limited = ours.iter().filter(|r| r.fault.contains("429")).count();
    let pods = c.job_pods(&ns.name, "wide");
    let failed = pods
        .iter()
        .filter(|p| p["status"]["phase"] == "Failed")
        .count();
    let created = job["metadata"]["creationTimestamp"]
        .as_str()
        .expect("created")
        .to_string();
    let mut started: Vec<i64> = pods
        .iter()
        .filter_map(|p| {
            p["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"].as_str()
        })
        .map(|at| seconds(&created, at))
        .collect();
    started.sort_unstable();
    let webhook = Calls {
        sum: calls_after.sum - calls_before.sum,
        count: calls_after.count - calls_before.count,
        within_5ms: calls_after.within_5ms - calls_before.within_5ms,
        within_25ms: calls_after.within_25ms - calls_before.within_25ms,
    };
    let share = |n: f64| {
        if webhook.count > 0.0 {
            format!("{:.1} %", n / webhook.count * 100.0)
        } else {
            "-".into()
        }
    };
    println!(
        "scale, mode {mode}: {PODS} pods; registry requests pullcheck added: {added} ({:.2} per pod), {limited} of them answered 429; first pod running {} s, last {} s after the Job's creation; pods failed: {failed}; the API server's calls to the webhook: {:.0}, {} within 5 ms, {} within 25 ms",
        added as f64 / PODS as f64,
        started.first().copied().unwrap_or(-1),
        started.last().copied().unwrap_or(-1),
        webhook.count,
        share(webhook.within_5ms),
        share(webhook.within_25ms),
    );
    let mut spans = webhook_spans(c, ".pullcheck.dev", mark, webhook.count as usize);
    println!(
        "scale, mode {mode}: the API server's own timing of its calls to the webhook (its tracing \
         spans): {}",
        span_figures(&mut spans)
    );
    assert_eq!(failed, 0, "{mode}: false failures");
    assert!(
        condition(&job, "Complete").is_some(),
        "{mode}: {:#}",
        job["status"]
    );
    assert_eq!(started.len(), PODS, "{mode}: every pod ran");
    added
}

#[test]
fn three_hundred_pods_at_once_in_each_mode_against_a_rate_limiting_registry() {
    let c = cluster();
    let proxy = c.bridge_proxy();
    let image = format!("{}/tools:1", proxy.host());
    // The image onto the node under the proxy's name, before the limit: the pods then start
    // it without a pull, and the registry sees pullcheck alone.
    {
        let warm = c.namespace("pc-scale-warm");
        c.apply(&warm.name, &pulled_always(job("warm", &image, 0)));
        wait_job(&warm.name, "warm", "Complete");
    }
    proxy.rule(Rule::any(Fault::rate_limited("1")).past_per_second(PER_SECOND));
    let plain = format!("inject.checkArgs=[\"--plain-http\",\"{}\"]", proxy.host());

    // init: the init container in every pod.
    {
        let release = install(
            "pc-scale-init",
            "scale-init",
            &["--set", "mode=init", "--set-json", &plain],
        );
        let ns = opted_in("pc-scale-init-jobs", &release);
        run("init", &ns, &proxy, &image);
    }
    // watch, then watch with the verdicts: nothing in the pod.
    for (mode, extra) in [
        ("watch", Vec::new()),
        (
            "verdicts",
            vec![
                "--set".to_string(),
                "admission.verdicts=true".to_string(),
                "--set-json".to_string(),
                format!("admission.plainHttp=[\"{}\"]", proxy.host()),
            ],
        ),
    ] {
        let label = format!("pullcheck.dev/watch=scale-{mode}");
        let mut args = vec![
            "--set".to_string(),
            format!("mode=watch,watch.namespaceLabel={label}"),
        ];
        args.extend(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _release = install(&format!("pc-scale-{mode}"), "scale-none", &args);
        let ns = c.namespace(&format!("pc-scale-{mode}-jobs"));
        c.kubectl(&["label", "namespace", &ns.name, &label]);
        let probe = job("probe", &c.tools_image(), 0);
        wait_for(
            &format!("Jobs of {} to get the rule", ns.name),
            minutes(1),
            || {
                let stored = dry_run(&ns.name, &probe).0?;
                match stored["spec"]["podFailurePolicy"].is_null() {
                    false => Ok(()),
                    true => Err(format!("{:#}", stored["spec"])),
                }
            },
        );
        let added = run(mode, &ns, &proxy, &image);
        match mode {
            "watch" => assert_eq!(added, 0, "watch adds no request"),
            // One lookup for the image, at the Job's creation (its pods are not judged): a
            // manifest HEAD, and the registry's API root where the client asks it first.
            _ => assert!(added <= 2, "verdicts: {added} requests for one image"),
        }
    }
}
