//! `pullcheck watch` (the `watch` build feature) without a cluster: its flags and environment
//! variables, `--help`, bad values as usage errors (exit 2, all at once), and its health and
//! metrics served while the API server cannot be reached (a closed loopback port). What it does
//! to pods is tested on the real cluster (tests/cluster/). A build without the feature has no
//! `watch` subcommand: every test here then fails, saying so.

use crate::common::pullcheck;
use crate::common::signal::{exit_within, terminate};
use std::io::{BufRead, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Every flag, and the variable it reads.
const FLAGS: [(&str, &str); 15] = [
    ("--namespace-label", "PULLCHECK_WATCH_NAMESPACE_LABEL"),
    ("--grace", "PULLCHECK_WATCH_GRACE"),
    ("--grace-for", "PULLCHECK_WATCH_GRACE_FOR"),
    ("--report-after", "PULLCHECK_WATCH_REPORT_AFTER"),
    ("--no-confirm", "PULLCHECK_WATCH_NO_CONFIRM"),
    (
        "--confirm-with-pull-secrets",
        "PULLCHECK_WATCH_CONFIRM_WITH_PULL_SECRETS",
    ),
    (
        "--owner-failure-limit",
        "PULLCHECK_WATCH_OWNER_FAILURE_LIMIT",
    ),
    (
        "--owner-failure-window",
        "PULLCHECK_WATCH_OWNER_FAILURE_WINDOW",
    ),
    ("--condition-type", "PULLCHECK_WATCH_CONDITION_TYPE"),
    ("--dry-run", "PULLCHECK_WATCH_DRY_RUN"),
    ("--listen", "PULLCHECK_WATCH_LISTEN"),
    ("--lease-name", "PULLCHECK_WATCH_LEASE_NAME"),
    ("--namespace", "PULLCHECK_WATCH_NAMESPACE"),
    ("--lease-duration", "PULLCHECK_WATCH_LEASE_DURATION"),
    ("--identity", "PULLCHECK_WATCH_IDENTITY"),
];

/// `pullcheck watch` with no variable of the machine's, no kubeconfig and no HOSTNAME.
fn watch() -> crate::common::Pullcheck {
    pullcheck()
        .without_machine_env()
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("HOSTNAME")
        .arg("watch")
}

fn no_feature(stderr: &str) -> String {
    format!(
        "a build without `--features watch`? (`cargo test --features test-hooks,webhook,watch`); stderr:\n{stderr}"
    )
}

#[test]
fn help_names_every_flag_its_variable_and_default() {
    let run = watch().arg("--help").run();
    assert_eq!(run.code, 0, "{}", no_feature(&run.stderr));
    for (flag, env) in FLAGS {
        assert!(run.stdout.contains(flag), "{flag}:\n{}", run.stdout);
        assert!(
            run.stdout.contains(&format!("[env: {env}]")),
            "{env}:\n{}",
            run.stdout
        );
    }
    for default in [
        "pullcheck.dev/watch=enabled",
        "[default: 2m]",
        "[default: 10]",
        "[default: 10m]",
        "[default: ConfigIssue]",
        "[default: :8081]",
        "[default: pullcheck-watch]",
        "[default: 15s]",
    ] {
        assert!(run.stdout.contains(default), "{default}:\n{}", run.stdout);
    }
    let short = watch().arg("-h").run();
    assert_eq!(short.code, 0);
    assert!(short.stdout.len() < run.stdout.len());
    assert!(pullcheck().arg("--help").run().stdout.contains("watch"));
}

#[test]
fn bad_values_are_usage_errors_all_at_once() {
    let run = watch()
        .args(["--namespace-label", "a b", "--grace", "soon"])
        .args([
            "--grace-for",
            "CrashLoopBackOff=1m",
            "--grace-for",
            "ErrImagePull",
        ])
        .args(["--condition-type", "Config Issue", "--listen", "8081"])
        .args(["--lease-name", "Not_A_Name", "--lease-duration", "1s"])
        .args(["--owner-failure-limit", "0", "--report-after", "later"])
        .run();
    assert_eq!(run.code, 2, "{}", no_feature(&run.stderr));
    for words in [
        "--namespace-label a b: expected KEY=VALUE or KEY",
        "--grace soon: ",
        "--grace-for CrashLoopBackOff=1m: CrashLoopBackOff is neither a waiting reason the watcher acts on",
        "--grace-for ErrImagePull: expected KEY=DURATION",
        "--owner-failure-limit 0: expected a whole number from 1 to 10000",
        "--report-after later: ",
        "--condition-type Config Issue: expected a condition type",
        "--listen 8081: not HOST:PORT or :PORT",
        "--lease-name Not_A_Name: not a Kubernetes object name",
        "--lease-duration 1s: must be at least 2s",
        "--namespace or PULLCHECK_WATCH_NAMESPACE",
        "--identity, PULLCHECK_WATCH_IDENTITY or HOSTNAME",
    ] {
        assert!(run.stderr.contains(words), "{words}:\n{}", run.stderr);
    }
    assert_eq!(run.stderr.lines().count(), 12, "{}", run.stderr);
    // A grace of zero acts at the first look: not an error.
    let run = watch()
        .args(["--grace", "0s", "--grace-for", "manifest_missing=0s"])
        .run();
    assert!(!run.stderr.contains("--grace"), "{}", run.stderr);
    // clap's own errors are usage errors too.
    let run = watch().arg("--no-such-flag").run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = watch().arg("--grace").run();
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn every_flag_reads_its_environment_variable() {
    let run = watch()
        .env("PULLCHECK_WATCH_NAMESPACE_LABEL", "a b")
        .env("PULLCHECK_WATCH_GRACE", "soon")
        .env("PULLCHECK_WATCH_GRACE_FOR", "ErrImagePull=30s,Nope=1m")
        .env("PULLCHECK_WATCH_CONDITION_TYPE", "a=b")
        .env("PULLCHECK_WATCH_LISTEN", "nowhere")
        .env("PULLCHECK_WATCH_LEASE_NAME", "UPPER")
        .env("PULLCHECK_WATCH_NAMESPACE", "Bad_Namespace")
        .env("PULLCHECK_WATCH_LEASE_DURATION", "0s")
        .env("PULLCHECK_WATCH_IDENTITY", "x\ny")
        .env("PULLCHECK_WATCH_DRY_RUN", "true")
        .env("PULLCHECK_WATCH_NO_CONFIRM", "true")
        .env("PULLCHECK_WATCH_REPORT_AFTER", "later")
        .env("PULLCHECK_WATCH_OWNER_FAILURE_LIMIT", "many")
        .env("PULLCHECK_WATCH_OWNER_FAILURE_WINDOW", "0s")
        .run();
    assert_eq!(run.code, 2, "{}", no_feature(&run.stderr));
    for words in [
        "--namespace-label a b:",
        "--grace soon:",
        "--grace-for Nope=1m:",
        "--condition-type a=b:",
        "--listen nowhere:",
        "--lease-name UPPER:",
        "--namespace Bad_Namespace:",
        "--lease-duration 0s:",
        "--identity x\\ny:",
        "--report-after later:",
        "--owner-failure-limit many:",
        "--owner-failure-window 0s:",
    ] {
        assert!(run.stderr.contains(words), "{words}:\n{}", run.stderr);
    }
    assert!(!run.stderr.contains("ErrImagePull=30s"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 12, "{}", run.stderr);
}

/// A kubeconfig whose API server is a loopback port nothing listens on.
fn unreachable_kubeconfig(dir: &std::path::Path) -> std::path::PathBuf {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user: {{}}\n"
        ),
    )
    .unwrap();
    path
}

/// `GET path` over plain HTTP/1.1: the status and the body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn health_and_metrics_are_served_while_the_api_server_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = watch()
        .env("KUBECONFIG", unreachable_kubeconfig(dir.path()))
        .env("HOSTNAME", "pullcheck-watch-7d9f-abcde")
        .env("PULLCHECK_WATCH_NAMESPACE", "pullcheck")
        .args(["--listen", "127.0.0.1:0", "--dry-run"])
        .spawn();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    let addr = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => match line.strip_prefix("pullcheck: watch: listening on ") {
                Some(rest) => break rest.split(';').next().unwrap().to_string(),
                None => seen.push(line),
            },
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "`pullcheck watch` did not start: {}",
                    no_feature(&seen.join("\n"))
                );
            }
        }
    };
    assert_eq!(get(&addr, "/healthz"), (200, "ok\n".to_string()));
    // Not ready: no list of pods or namespaces came in.
    assert_eq!(get(&addr, "/readyz").0, 503);
    let (status, metrics) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    for line in ["pullcheck_watch_leader 0", "pullcheck_watch_pending_pods 0"] {
        assert!(metrics.lines().any(|l| l == line), "{line}:\n{metrics}");
    }
    for family in [
        "pullcheck_watch_stuck_pods_total",
        "pullcheck_watch_pods_failed_total",
        "pullcheck_watch_action_delay_seconds",
        "pullcheck_watch_api_errors_total",
    ] {
        assert!(
            metrics.contains(&format!("# TYPE {family} ")),
            "{family}:\n{metrics}"
        );
    }
    crate::webhook::recorded_metrics("watch.prom", &metrics, false);
    assert_eq!(get(&addr, "/nope").0, 404);
    terminate(&child);
    let status = exit_within(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("SIGTERM: giving the lease up and stopping")),
        "{rest:?}"
    );
    // Every line it wrote is the watcher's own.
    assert!(
        seen.iter()
            .chain(&rest)
            .all(|l| l.starts_with("pullcheck: watch")),
        "{seen:?} {rest:?}"
    );
}
