//! The init container's resources on the real cluster: in a namespace with a LimitRange
//! (`min` above pullcheck's own 10m/16Mi, `max` below its 200m, a `maxLimitRequestRatio`), and
//! in namespaces with a ResourceQuota on `requests.cpu` / `limits.cpu` (and memory) sized so
//! that the app's pod fits exactly, the same Job without pullcheck, with `inject` (told the
//! LimitRanges with `--limit-range-file`, and not told), and through the webhook, is admitted
//! and ends `Complete`: a pod the namespace admits without pullcheck is admitted with it.

use crate::harness::{cluster, inject};
use crate::jobs::{seconds_to, wait_job};
use crate::webhook::{Installed, install, opted_in};
use std::sync::OnceLock;

/// The LimitRange of the tests: every bound of it refuses pullcheck's fixed values of old.
const LIMIT_RANGE: &str = "apiVersion: v1
kind: LimitRange
metadata:
  name: strict
spec:
  limits:
  - type: Container
    min: {cpu: 50m, memory: 32Mi}
    max: {cpu: 150m, memory: 256Mi}
    maxLimitRequestRatio: {cpu: \"2\"}
";

/// A ResourceQuota that holds exactly one pod of `requests` and `limits` (CPU, memory).
fn quota(requests: (&str, &str), limits: (&str, &str)) -> String {
    format!(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: exact\nspec:\n  hard:\n    \
         requests.cpu: {}\n    requests.memory: {}\n    limits.cpu: {}\n    limits.memory: {}\n",
        requests.0, requests.1, limits.0, limits.1
    )
}

/// A Job of one app container of the tools image with `resources` (a flow mapping, or empty
/// for none), `hostNetwork` so that pullcheck reaches the registry on the host's loopback.
fn job(name: &str, resources: &str) -> String {
    let c = cluster();
    let resources = if resources.is_empty() {
        String::new()
    } else {
        format!("        resources: {resources}\n")
    };
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  backoffLimit: 0\n  template:\n    \
         spec:\n      restartPolicy: Never\n      hostNetwork: true\n      containers:\n      - name: app\n        \
         image: {}\n        imagePullPolicy: IfNotPresent\n        command: [\"true\"]\n{resources}",
        c.tools_image()
    )
}

/// `yaml` put through `pullcheck inject` with the cluster's image and registry, and `flags`.
fn injected(yaml: &str, flags: &[&str]) -> String {
    let c = cluster();
    let image = c.pullcheck_image();
    let mut args = vec!["--image", image.as_str(), "--job-failure-policy"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "--plain-http", c.registry.as_str()]);
    inject(yaml, &args).0
}

/// A file holding `text`, for `--limit-range-file`; removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("pullcheck-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("a temporary file");
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The release these tests share (`mode=both`, in case the chart's default mode changes).
fn release() -> &'static Installed {
    static RELEASE: OnceLock<Installed> = OnceLock::new();
    RELEASE.get_or_init(|| install("pc-webhook-resources", "resources", &["--set", "mode=both"]))
}

/// Job `name` created from `manifest` in `ns` ends `Complete`; prints how long it took and the
/// init container's resources as the API server stored them.
fn completes(ns: &str, name: &str, manifest: &str, what: &str) {
    let c = cluster();
    c.apply(ns, manifest);
    let done = wait_job(ns, name, "Complete");
    let pods = c.job_pods(ns, name);
    let init = pods
        .first()
        .and_then(|p| p["spec"]["initContainers"].as_array())
        .and_then(|l| l.iter().find(|c| c["name"] == "pullcheck"))
        .map(|c| c["resources"].to_string())
        .unwrap_or_else(|| "(no pullcheck)".to_string());
    println!(
        "{ns} {what}: Complete {} s after creation; pullcheck's resources: {init}",
        seconds_to(&done, "Complete")
    );
}

#[test]
fn a_limit_range_admits_the_job_with_pullcheck_as_without() {
    let c = cluster();
    let ns = c.namespace("pc-limitrange");
    c.apply(&ns.name, LIMIT_RANGE);
    let limit_ranges = c.kubectl(&["get", "limitrange", "-n", &ns.name, "-o", "yaml"]);
    let file = TempFile::new("limitranges.yaml", &limit_ranges);
    // An app container within the bounds, and one that sets nothing (the defaults: max).
    for (name, resources) in [
        (
            "sized",
            "{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 150m, memory: 128Mi}}",
        ),
        ("defaults", ""),
    ] {
        let manifest = job(name, resources);
        completes(
            &ns.name,
            name,
            &manifest,
            &format!("{name}, without pullcheck"),
        );
        let told = format!("{name}-told");
        let manifest = injected(&job(&told, resources), &["--limit-range-file", file.path()]);
        completes(
            &ns.name,
            &told,
            &manifest,
            &format!("{name}, inject --limit-range-file"),
        );
        let untold = format!("{name}-untold");
        let manifest = injected(&job(&untold, resources), &[]);
        completes(
            &ns.name,
            &untold,
            &manifest,
            &format!("{name}, inject without it"),
        );
    }
    // Through the webhook, which reads the namespace's LimitRanges itself.
    let through = opted_in("pc-limitrange-webhook", release());
    c.apply(&through.name, LIMIT_RANGE);
    for (name, resources) in [
        (
            "sized",
            "{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 150m, memory: 128Mi}}",
        ),
        ("defaults", ""),
    ] {
        completes(
            &through.name,
            name,
            &job(name, resources),
            &format!("{name}, webhook"),
        );
        let pod = &c.job_pods(&through.name, name)[0];
        let ours = &pod["spec"]["initContainers"][0];
        assert_eq!(ours["name"], "pullcheck", "{pod:#}");
    }
}

/// In namespace `name`, a ResourceQuota that holds exactly one pod of `resources` (`requests`,
/// `limits`), and Jobs of that pod one after the other (a finished pod no longer counts): without
/// pullcheck, with `inject` (with an empty `--limit-range-file`, and without it), and through the
/// webhook.
fn quota_case(name: &str, requests: (&str, &str), limits: (&str, &str)) {
    let c = cluster();
    let resources = format!(
        "{{requests: {{cpu: {}, memory: {}}}, limits: {{cpu: {}, memory: {}}}}}",
        requests.0, requests.1, limits.0, limits.1
    );
    let ns = c.namespace(name);
    c.apply(&ns.name, &quota(requests, limits));
    let none = TempFile::new(
        &format!("{name}-none.yaml"),
        "apiVersion: v1\nkind: List\nitems: []\n",
    );
    completes(
        &ns.name,
        "plain",
        &job("plain", &resources),
        "without pullcheck",
    );
    let manifest = injected(
        &job("told", &resources),
        &["--limit-range-file", none.path()],
    );
    completes(
        &ns.name,
        "told",
        &manifest,
        "inject --limit-range-file (none)",
    );
    let manifest = injected(&job("untold", &resources), &[]);
    completes(&ns.name, "untold", &manifest, "inject without it");
    // The webhook's namespace gets its quota once its pods are seen to pass through it (the
    // probe pods set no resources, which the quota would refuse).
    let through = opted_in(&format!("{name}-webhook"), release());
    c.apply(&through.name, &quota(requests, limits));
    completes(
        &through.name,
        "webhook",
        &job("webhook", &resources),
        "webhook",
    );
}

#[test]
fn a_quota_that_fits_the_burstable_pod_exactly_admits_it_with_pullcheck() {
    // Limits under pullcheck's own 200m: its fixed limit of old was counted and refused.
    quota_case("pc-quota", ("50m", "32Mi"), ("100m", "64Mi"));
}

#[test]
fn a_quota_that_fits_the_guaranteed_pod_exactly_admits_it_with_pullcheck() {
    // Requests equal to limits: pullcheck's raised request of old was counted and refused.
    quota_case("pc-quota-guaranteed", ("100m", "64Mi"), ("100m", "64Mi"));
}
