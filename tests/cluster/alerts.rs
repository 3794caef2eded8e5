//! The chart's alerting rules (`prometheusRule.enabled`: the PrometheusRule of
//! `charts/pullcheck/files/prometheus-rules.yaml`), as `helm template` renders them: `promtool
//! check rules`, and `promtool test rules` with the unit tests of
//! `tests/fixtures/metrics/alerts-test.yaml`, whose series are the ones the servers serve; and
//! every metric and label a rule or a test series names, against the `/metrics` text recorded
//! from the real servers (`tests/fixtures/metrics/*.prom`, which tests/it checks against the
//! servers), so that a metric renamed in the code fails here.
//!
//! These need `helm` and `promtool` (Debian's `prometheus` package's; `.ci/run` installs it),
//! not the cluster.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::chart::{chart, helm};
use crate::harness::repo;

/// The labels the Prometheus Operator gives the targets of the chart's ServiceMonitor: not the
/// servers' own.
const TARGET_LABELS: [&str; 7] = [
    "job",
    "namespace",
    "service",
    "pod",
    "container",
    "endpoint",
    "instance",
];

/// The PrometheusRule's `spec` for a release `pullcheck` in namespace `pullcheck`.
fn rendered(args: &[&str]) -> Value {
    use serde::Deserialize;
    let chart = chart();
    let mut all = vec![
        "template",
        "pullcheck",
        &chart,
        "--namespace",
        "pullcheck",
        "--set",
        "prometheusRule.enabled=true",
    ];
    all.extend_from_slice(args);
    let yaml = helm(&all);
    let rules: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|doc| Value::deserialize(doc).expect("helm renders YAML"))
        .filter(|d| d["kind"] == "PrometheusRule")
        .collect();
    assert_eq!(rules.len(), 1, "one PrometheusRule in:\n{yaml}");
    assert_eq!(rules[0]["apiVersion"], "monitoring.coreos.com/v1");
    rules[0].clone()
}

/// `promtool`, or a failure that names what to install.
fn promtool() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("promtool"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "promtool is missing: the alerting rules' tests run `promtool test rules` \
             (Debian 12: /usr/bin/promtool of the `prometheus` package; .ci/run extracts it)"
        )
    })
}

/// `promtool ARGS…` in `dir`, which must succeed.
fn run_promtool(dir: &Path, args: &[&str]) {
    let out = Command::new(promtool())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run promtool");
    assert!(
        out.status.success(),
        "promtool {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_alerting_rules_pass_promtool_and_their_unit_tests() {
    let spec = &rendered(&[])["spec"];
    let dir = tempfile::tempdir().unwrap();
    let rules = serde_yaml_ng::to_string(spec).unwrap();
    std::fs::write(dir.path().join("rules.yaml"), rules).unwrap();
    std::fs::copy(
        repo().join("tests/fixtures/metrics/alerts-test.yaml"),
        dir.path().join("alerts-test.yaml"),
    )
    .unwrap();
    run_promtool(dir.path(), &["check", "rules", "rules.yaml"]);
    run_promtool(dir.path(), &["test", "rules", "alerts-test.yaml"]);
}

/// Every alert the rules hold, and every alert the unit tests test: the same, so that a new
/// rule cannot go untested.
#[test]
fn every_alert_has_unit_tests_and_mode_init_has_no_watcher_alerts() {
    let alerts = |spec: &Value| -> BTreeSet<String> {
        spec["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap())
            .map(|r| r["alert"].as_str().unwrap().to_string())
            .collect()
    };
    let watch = alerts(&rendered(&[])["spec"]);
    let tests: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/metrics/alerts-test.yaml")).unwrap(),
    )
    .unwrap();
    let tested: BTreeSet<String> = tests["tests"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().unwrap())
        .map(|a| a["alertname"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(watch, tested);
    let init = rendered(&[
        "--set",
        "mode=init",
        "--set",
        "prometheusRule.labels.release=kps",
    ]);
    assert_eq!(
        alerts(&init["spec"]),
        BTreeSet::from(
            [
                "PullcheckDown",
                "PullcheckWebhookErrors",
                "PullcheckWebhookSlow"
            ]
            .map(String::from)
        )
    );
    assert_eq!(init["metadata"]["labels"]["release"], "kps");
    // `--set` gives a decimal as a string: accepted, and written into the rule as it is.
    let slow = rendered(&["--set", "prometheusRule.webhookLatencySeconds=1.5"]);
    let exprs = serde_json::to_string(&slow["spec"]).unwrap();
    assert!(exprs.contains(")\\n  > 1.5\""), "{exprs}");
    // The schema: a mistyped key or a threshold of the wrong type fails.
    for bad in [
        "prometheusRule.webhookLatencySecond=1",
        "prometheusRule.downFor=5",
        "prometheusRule.webhookErrorRatio=2",
        "prometheusRule.webhookLatencySeconds=fast",
    ] {
        let out = crate::chart::helm_cmd(&["template", "pullcheck", &chart(), "--set", bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad} was accepted");
    }
}

/// What the recordings of the servers' `/metrics` hold: each series name (a histogram's
/// `_bucket`, `_sum` and `_count`) and the label names its series carry (empty: none recorded).
fn served() -> BTreeMap<String, BTreeSet<String>> {
    let mut names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in ["webhook.prom", "watch.prom"] {
        let text =
            std::fs::read_to_string(repo().join("tests/fixtures/metrics").join(file)).unwrap();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                let suffixes: &[&str] = match kind {
                    "histogram" => &["_bucket", "_sum", "_count"],
                    _ => &[""],
                };
                for suffix in suffixes {
                    names.entry(format!("{name}{suffix}")).or_default();
                }
            } else if !line.starts_with('#') {
                let series = line.rsplit_once(' ').unwrap().0;
                let (name, labels) = series.split_once('{').unwrap_or((series, ""));
                let entry = names.entry(name.to_string()).or_default();
                entry.extend(label_names(labels.trim_end_matches('}')));
            }
        }
    }
    names
}

/// The label names of `a="x",b!~"y"`.
fn label_names(matchers: &str) -> Vec<String> {
    matchers
        .split(',')
        .filter_map(|m| {
            let end = m.find(['=', '!'])?;
            Some(m[..end].trim().to_string())
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// The label names each family's counters are made with in src/cluster/watch/metrics.rs
/// (`Counters::new([...])`): the code's list, for the families the recording has no series of
/// (a counter is served from its first count on).
fn counter_labels() -> BTreeMap<String, BTreeSet<String>> {
    let code = std::fs::read_to_string(repo().join("src/cluster/watch/metrics.rs")).unwrap();
    let mut fields = BTreeMap::new();
    for line in code.lines() {
        if let Some((field, rest)) = line.trim().split_once(": Counters::new([") {
            let labels = rest.split(']').next().unwrap();
            fields.insert(
                field.to_string(),
                labels
                    .split(',')
                    .map(|l| l.trim().trim_matches('"').to_string())
                    .collect::<BTreeSet<_>>(),
            );
        }
    }
    let mut out = BTreeMap::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("self.") {
        rest = &rest[at + 5..];
        let field = rest.split('.').next().unwrap();
        if let Some(labels) = fields.get(field)
            && let Some(after) = rest.strip_prefix(&format!("{field}.write("))
            && let Some(name) = after.split('"').nth(1)
        {
            out.insert(name.to_string(), labels.clone());
        }
    }
    assert!(
        !out.is_empty(),
        "no Counters family found in src/cluster/watch/metrics.rs"
    );
    out
}

/// Each selector of a PromQL expression: the metric's name and its matchers' label names.
fn selectors(expr: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let chars: Vec<(usize, char)> = expr.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !(c.is_ascii_alphabetic() || c == '_') || (i > 0 && ident(chars[i - 1].1)) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && ident(chars[j].1) {
            j += 1;
        }
        let end = chars.get(j).map_or(expr.len(), |&(at, _)| at);
        let word = &expr[start..end];
        let labels = match expr[end..].strip_prefix('{') {
            Some(inside) => label_names(inside.split('}').next().unwrap()),
            None => Vec::new(),
        };
        if word.starts_with("pullcheck_") || word == "up" {
            out.push((word.to_string(), labels));
        }
        i = j;
    }
    out
}

/// Whether `label` of `name` is the servers' own (recorded, or in the code's list) or a
/// target's.
fn check_label(
    served: &BTreeMap<String, BTreeSet<String>>,
    code: &BTreeMap<String, BTreeSet<String>>,
    name: &str,
    label: &str,
    whose: &str,
) {
    if TARGET_LABELS.contains(&label) || name == "up" {
        return;
    }
    let family = name.trim_end_matches("_bucket");
    let known = match served.get(name) {
        Some(labels) if !labels.is_empty() => labels.contains(label),
        _ => code.get(family).is_some_and(|l| l.contains(label)),
    } || (name.ends_with("_bucket") && label == "le");
    assert!(known, "{whose}: {name} has no label {label}");
}

#[test]
fn every_metric_and_label_the_rules_and_their_tests_name_is_served() {
    let served = served();
    let code = counter_labels();
    let spec = rendered(&[])["spec"].clone();
    let mut used = BTreeSet::new();
    for rule in spec["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
    {
        let alert = rule["alert"].as_str().unwrap();
        let found = selectors(rule["expr"].as_str().unwrap());
        assert!(!found.is_empty(), "{alert} reads no metric");
        for (name, labels) in found {
            // `up` is Prometheus' own, one per target.
            assert!(
                name == "up" || served.contains_key(&name),
                "{alert} reads {name}, which neither server serves (tests/fixtures/metrics)"
            );
            for label in &labels {
                check_label(&served, &code, &name, label, alert);
            }
            used.insert(name);
        }
    }
    let tests: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/metrics/alerts-test.yaml")).unwrap(),
    )
    .unwrap();
    for series in tests["tests"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["input_series"].as_array().unwrap())
    {
        let series = series["series"].as_str().unwrap();
        let (name, labels) = &selectors(series)[0];
        assert!(
            name == "up" || served.contains_key(name),
            "alerts-test.yaml's {series}: no server serves {name}"
        );
        for label in labels {
            check_label(&served, &code, name, label, "alerts-test.yaml");
        }
    }
    // Each server's metrics are read by some rule.
    for prefix in ["pullcheck_webhook_", "pullcheck_watch_"] {
        assert!(
            used.iter().any(|n| n.starts_with(prefix)),
            "{prefix}: {used:?}"
        );
    }
}
