//! What the person waiting on a check sees, against the real registry and the fault proxy:
//! progress while it runs (`--verbose`, or a terminal), words that are true for their case, and
//! the termination message.

use crate::check::{Run, check};
use crate::common::proxy::{Fault, Proxy, Rule};
use crate::common::{plain_registry, pullcheck_cmd, tls_basic_registry};

/// The plain registry's host, for `--plain-http`.
fn plain_host() -> String {
    plain_registry().host()
}

// ---------------------------------------------------------------------------------------------
// Progress

#[test]
fn verbose_in_a_pod_like_run_lists_each_request_and_verdict_on_stderr() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("operator/verbose", "v1");
    let ok = format!("{host}/operator/verbose:v1");
    let missing = format!("{host}/operator/verbose:v2");
    // stdout and stderr are pipes here, as in a pod: nothing on stderr without --verbose.
    let quiet = check(&["--plain-http", &host, &ok, &missing]);
    assert_eq!(quiet.code, 3);
    assert_eq!(quiet.stderr, "", "no progress without a terminal or -v");

    for flag in [&["-v"][..], &["--verbose"][..]] {
        let mut args = vec!["--plain-http", host.as_str(), ok.as_str(), missing.as_str()];
        args.extend_from_slice(flag);
        let run = check(&args);
        assert_eq!(run.code, 3, "{}", run.stderr);
        for want in [
            format!("pullcheck: GET http://{host}/v2/ -> 200"),
            format!("pullcheck: HEAD http://{host}/v2/operator/verbose/manifests/v1 -> 200"),
            format!("pullcheck: HEAD http://{host}/v2/operator/verbose/manifests/v2 -> 404"),
            format!("pullcheck: GET http://{host}/v2/operator/verbose/tags/list?n=100 -> 200"),
            format!("pullcheck: ok {ok} (sha256:"),
            format!("pullcheck: not_found {missing}: tag \"v2\" not found"),
        ] {
            assert!(
                run.stderr.contains(&want),
                "missing {want:?}:\n{}",
                run.stderr
            );
        }
        // The report itself stays on stdout, whole.
        assert!(
            run.stdout
                .contains("pullcheck: 1 of 2 images cannot be pulled")
        );
        assert!(!run.stdout.contains("-> 200"), "{}", run.stdout);
    }

    // The environment variable does the same, and a false value turns it off.
    let mut cmd = pullcheck_cmd();
    let out = cmd
        .args([
            "check",
            "--secrets-dir",
            "/nonexistent",
            "--termination-log",
            "",
        ])
        .args(["--plain-http", &host, &ok])
        .env("PULLCHECK_VERBOSE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("-> 200"), "{stderr}");
    let out = pullcheck_cmd()
        .args([
            "check",
            "--secrets-dir",
            "/nonexistent",
            "--termination-log",
            "",
        ])
        .args(["--plain-http", &host, &ok])
        .env("PULLCHECK_VERBOSE", "false")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn verbose_never_shows_credentials() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/verbose", "v1");
    let dir = tempfile::tempdir().unwrap();
    let config = crate::check::docker_config(
        dir.path(),
        "c.json",
        &host,
        crate::common::ALICE,
        crate::common::ALICE_PASSWORD,
    );
    let run = check(&[
        "-v",
        "--ca-file",
        &ca,
        "--docker-config",
        config.to_str().unwrap(),
        &format!("{host}/private/verbose:v1"),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains(&format!("GET https://{host}/v2/ -> 401")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("-> 200"), "{}", run.stderr);
    assert!(!run.stderr.contains(crate::common::ALICE_PASSWORD));
    assert!(!run.stderr.to_ascii_lowercase().contains("authorization"));
    assert!(!run.stderr.contains("Basic "));
}

#[test]
fn each_retry_is_shown_with_its_reason_and_wait() {
    let reg = plain_registry();
    reg.push_oci_manifest("operator/flaky", "v1");
    let proxy = Proxy::start(&reg.host());
    let image = format!("{}/operator/flaky:v1", proxy.host());
    proxy.rule(
        Rule::contains("/manifests/", Fault::status(503))
            .method("HEAD")
            .times(2),
    );
    let run = check(&[
        "-v",
        "--timeout",
        "10s",
        "--plain-http",
        &proxy.host(),
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let retries: Vec<_> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("pullcheck: retrying "))
        .collect();
    assert_eq!(retries.len(), 2, "{}", run.stderr);
    for (i, line) in retries.iter().enumerate() {
        let prefix = format!("pullcheck: retrying {} in ", proxy.host());
        assert!(line.starts_with(&prefix), "{line}");
        assert!(
            line.contains(&format!("(attempt {} failed): server_error: ", i + 1)),
            "{line}"
        );
        assert!(line.contains("answered 503"), "{line}");
    }
    let heads: Vec<_> = run
        .stderr
        .lines()
        .filter(|l| l.contains(": HEAD "))
        .collect();
    assert_eq!(heads.len(), 3, "{}", run.stderr);
}

#[test]
fn on_a_terminal_verdicts_and_retries_are_shown_without_verbose() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("operator/tty", "v1");
    let image = format!("{host}/operator/tty:v1");
    // `script` (util-linux) gives the command a pseudo-terminal; what it prints is the terminal.
    let command = format!(
        "{} check --secrets-dir /nonexistent --termination-log '' --plain-http {host} {image} {host}/operator/tty:v9",
        crate::common::PULLCHECK_BIN
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("PULLCHECK_VERBOSE")
        .output()
        .expect("script (util-linux) gives the test a terminal");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains(&format!("pullcheck: ok {image} (sha256:")),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("pullcheck: not_found {host}/operator/tty:v9")),
        "{screen}"
    );
    assert!(
        !screen.contains("-> 200"),
        "requests only with -v: {screen}"
    );
}

// ---------------------------------------------------------------------------------------------
// Words that are true for their case

#[test]
fn fatal_only_on_failures_and_platform_checked_says_whether_it_was() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("operator/single", "v1");
    reg.push_oci_index("operator/index", "v1", &["linux/amd64", "linux/arm64/v8"]);
    let single = format!("{host}/operator/single:v1");
    let index = format!("{host}/operator/index:v1");
    let missing = format!("{host}/operator/single:v0");
    let platform = ["--platform", "linux/amd64"];
    let mut args = vec!["-o", "json", "--plain-http", host.as_str()];
    args.extend(platform);
    args.extend([single.as_str(), index.as_str(), missing.as_str()]);
    let run = check(&args);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let r = run.image(&single);
    assert!(r.get("fatal").is_none(), "{r:#}");
    assert_eq!(r["platform_checked"], false, "{r:#}");
    let r = run.image(&index);
    assert!(r.get("fatal").is_none(), "{r:#}");
    assert_eq!(r["platform_checked"], true, "{r:#}");
    let r = run.image(&missing);
    assert_eq!(r["fatal"], true, "{r:#}");
    assert!(r.get("platform_checked").is_none(), "{r:#}");

    let text = check(&[
        "--plain-http",
        &host,
        "--platform",
        "linux/amd64",
        &single,
        &index,
    ]);
    assert_eq!(text.code, 0);
    let line = text.stdout.lines().find(|l| l.contains(&single)).unwrap();
    assert!(
        line.ends_with("platform not checked (single manifest; --platform-check full checks it)"),
        "{line}"
    );
    let line = text.stdout.lines().find(|l| l.contains(&index)).unwrap();
    assert!(!line.contains("not checked"), "{line}");
    assert!(
        text.stdout
            .ends_with("pullcheck: all 2 images can be pulled\n"),
        "{}",
        text.stdout
    );

    // --platform-check full checks the single manifest.
    let run = check(&[
        "-o",
        "json",
        "--plain-http",
        &host,
        "--platform",
        "linux/amd64",
        "--platform-check",
        "full",
        &single,
    ]);
    assert_eq!(run.code, 0);
    assert_eq!(run.image(&single)["platform_checked"], true);
    let one = check(&[
        "--plain-http",
        &host,
        "--platform-check",
        "full",
        "--platform",
        "linux/amd64",
        &single,
    ]);
    assert!(
        one.stdout
            .ends_with("pullcheck: the 1 image can be pulled\n"),
        "{}",
        one.stdout
    );
}

#[test]
fn allowed_unauthenticated_images_are_not_said_to_be_pulled_nor_hinted_at_the_flag() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/words-a", "v1");
    reg.push_oci_manifest("private/words-b", "v1");
    let a = format!("{host}/private/words-a:v1");
    let b = format!("{host}/private/words-b:v1");
    let run = check(&["--ca-file", &ca, "--allow-unauthenticated", &host, &a, &b]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let summary = run.stdout.lines().last().unwrap();
    assert_eq!(
        summary,
        "pullcheck: no image failed; 2 images not verified (no credentials; not counted: --allow-unauthenticated)"
    );
    assert!(!run.stdout.contains("can be pulled"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("use --allow-unauthenticated"),
        "{}",
        run.stdout
    );
    let json = check(&[
        "-o",
        "json",
        "--ca-file",
        &ca,
        "--allow-unauthenticated",
        "*",
        &a,
    ]);
    let hint = json.image(&a)["hint"].as_str().unwrap().to_string();
    assert!(!hint.contains("--allow-unauthenticated"), "{hint}");
    assert!(hint.contains("nodes have credentials"), "{hint}");
}

#[test]
fn an_unknown_platform_variant_is_a_usage_error_unless_strict() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_index("operator/variant", "v1", &["linux/amd64"]);
    let image = format!("{host}/operator/variant:v1");
    let run = check(&[
        "--plain-http",
        &host,
        "--platform",
        "linux/amd64/v9",
        &image,
    ]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr
            .contains("\"v9\" is not a known variant of amd64 (known: v1, v2, v3, v4)"),
        "{}",
        run.stderr
    );
    let run = check(&[
        "--plain-http",
        &host,
        "--platform",
        "linux/arm64/v10",
        &image,
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("v8, v8.1"), "{}", run.stderr);

    // Strict: the user means it, the check runs, with a warning.
    let run = check(&[
        "--plain-http",
        &host,
        "--platform",
        "linux/amd64/v9",
        "--platform-match",
        "strict",
        &image,
    ]);
    assert_eq!(run.code, 4, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("pullcheck: warning: --platform linux/amd64/v9"),
        "{}",
        run.stderr
    );
}

/// Fifteen failing images: missing tags in an existing repository, and missing repositories.
fn failures_for_termination(host: &str, n: usize) -> Vec<String> {
    let reg = plain_registry();
    reg.push_oci_manifest("operator/app", "v1");
    (0..n)
        .map(|i| match i % 2 {
            0 => format!("{host}/operator/app:release-{i}"),
            _ => format!("{host}/operator/svc-{i}:v1"),
        })
        .collect()
}

/// The old termination message's rule, kept here to measure the change: one `status: message`
/// line per failure, greedily, within `max` bytes.
fn old_rule_fits(summary: &str, run: &Run, max: usize) -> usize {
    let mut len = summary.len();
    let images = run.json()["images"].as_array().unwrap().clone();
    let mut fit = 0;
    for (i, r) in images.iter().enumerate() {
        let line = format!(
            "\n{}: {}",
            r["status"].as_str().unwrap(),
            r["message"].as_str().unwrap()
        );
        let left = images.len() - i - 1;
        let reserve = if left == 0 {
            0
        } else {
            format!("\n… and {left} more").len()
        };
        if len + line.len() + reserve > max {
            break;
        }
        len += line.len();
        fit += 1;
    }
    fit
}

#[test]
fn the_termination_message_fits_many_more_failures_than_before() {
    let host = plain_host();
    let images = failures_for_termination(&host, 15);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let out = pullcheck_cmd()
        .args([
            "check",
            "--secrets-dir",
            "/nonexistent",
            "--plain-http",
            &host,
        ])
        .arg("--termination-log")
        .arg(&log)
        .args(&images)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.len() <= 1024, "{} bytes", msg.len());
    let lines: Vec<_> = msg.lines().collect();
    assert_eq!(lines[0], "pullcheck: 15 of 15 images cannot be pulled");
    let listed = lines[1..]
        .iter()
        .filter(|l| l.starts_with("tag_missing: ") || l.starts_with("repository_missing: "))
        .count();
    assert!(!msg.contains("http://"), "URLs stay in the logs: {msg}");
    assert!(!msg.contains("HEAD "), "{msg}");
    // Each reason's hint is given once, by its first clause.
    for hint in [
        "Check the tag or digest for a typo, or push the image",
        "Check the image name and registry",
    ] {
        assert_eq!(msg.matches(hint).count(), 1, "{hint}: {msg}");
    }

    let mut json_args = vec!["-o", "json", "--plain-http", host.as_str()];
    json_args.extend(images.iter().map(String::as_str));
    let run = check(&json_args);
    let before = old_rule_fits(lines[0], &run, 1024);
    println!("termination message, 15 failures in 1024 bytes: {before} before, {listed} now");
    assert!(before <= 5, "the old rule fitted {before}");
    assert_eq!(listed, 15, "{msg}");
}
