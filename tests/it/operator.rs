//! What the person waiting on a check sees, against the real registry and the fault proxy:
//! progress while it runs (`--verbose`, or a terminal), words that are true for their case, and
//! the termination message.

use crate::check::{Run, check};
use crate::common::proxy::{Fault, Proxy, Rule};
use crate::common::{plain_registry, pullcheck, tls_basic_registry};

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
        // Every request is listed, and no version check is sent before the HEADs.
        let ping = format!("pullcheck: GET http://{host}/v2/ ->");
        assert!(!run.stderr.contains(&ping), "{}", run.stderr);
        for want in [
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
    let out = pullcheck()
        .args([
            "check",
            "--secrets-dir",
            "/nonexistent",
            "--termination-log",
            "",
        ])
        .args(["--plain-http", &host, &ok])
        .env("PULLCHECK_VERBOSE", "1")
        .run();
    let stderr = out.stderr;
    assert!(stderr.contains("-> 200"), "{stderr}");
    let out = pullcheck()
        .args([
            "check",
            "--secrets-dir",
            "/nonexistent",
            "--termination-log",
            "",
        ])
        .args(["--plain-http", &host, &ok])
        .env("PULLCHECK_VERBOSE", "false")
        .run();
    assert_eq!(out.stderr, "");
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
    // The anonymous HEAD that learns the challenge is listed, then the one with the
    // credential; no version check.
    assert!(
        run.stderr.contains(&format!(
            "HEAD https://{host}/v2/private/verbose/manifests/v1 -> 401"
        )),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains(&format!("GET https://{host}/v2/ ->")),
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
    let out = pullcheck()
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
        .run();
    assert_eq!(out.code, 3);
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.len() <= 1024, "{} bytes", msg.len());
    let lines: Vec<_> = msg.lines().collect();
    assert_eq!(lines[0], "pullcheck: 15 of 15 images cannot be pulled");
    let listed = lines[1..]
        .iter()
        .filter(|l| l.contains(": tag_missing") || l.contains(": repository_missing"))
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

#[test]
fn the_termination_message_fits_the_kubelets_share_of_a_pod_with_many_containers() {
    let host = plain_host();
    let images = failures_for_termination(&host, 15);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let run = |extra: &[&str], containers: Option<String>| {
        let mut cmd = pullcheck()
            .without_env_prefix("PULLCHECK_")
            .args([
                "check",
                "--secrets-dir",
                "/nonexistent",
                "--plain-http",
                &host,
            ])
            .arg("--termination-log")
            .arg(&log)
            .args(extra)
            .args(&images);
        if let Some(c) = containers {
            cmd = cmd.env("PULLCHECK_CONTAINERS", c);
        }
        let out = cmd.run();
        assert_eq!(out.code, 3, "{}", out.stderr);
        std::fs::read_to_string(&log).unwrap()
    };
    // --pod-containers N: 12288 / N bytes at most (the kubelet's share), and the first line,
    // the summary, is whole.
    for (n, max) in [("13", 945), ("50", 245), ("100", 122), ("300", 40)] {
        let msg = run(&["--pod-containers", n], None);
        assert!(msg.len() <= max, "{n}: {} bytes: {msg}", msg.len());
        if max >= 122 {
            assert!(
                msg.starts_with("pullcheck: 15 of 15 images cannot be pulled\n"),
                "{n}: {msg}"
            );
        }
        if max >= 945 {
            // Most fit whole (each line also names a tag the repository has).
            assert!(msg.lines().count() >= 13, "{n}: {msg}");
        }
        if (122..945).contains(&max) {
            assert!(msg.ends_with(" more"), "{n}: {msg}");
        }
    }
    // Without the flag, the containers PULLCHECK_CONTAINERS lists and pullcheck: 49 + 1.
    let facts: Vec<String> = (0..49)
        .map(|i| {
            format!(
                r#"{{"name":"c{i}","image":"{}","command":true,"args":false}}"#,
                images[i % images.len()]
            )
        })
        .collect();
    let msg = run(&[], Some(format!("[{}]", facts.join(","))));
    assert!(msg.len() <= 245, "{} bytes: {msg}", msg.len());
    // A count of 0 is a usage error, not a division.
    let out = pullcheck()
        .args(["check", "--pod-containers", "0", "x"])
        .run();
    assert_eq!(out.code, 2);
}

// ---------------------------------------------------------------------------------------------
// Credentials that match nothing, and the spellings crane and skopeo users type

/// `pullcheck check ARGS` with `--secrets-dir SECRETS`, `HOME` in a temp dir (no workstation
/// config), no `DOCKER_CONFIG` and no `PULLCHECK_*` variable from the test run.
fn check_with_secrets(secrets: &std::path::Path, home: &std::path::Path, args: &[&str]) -> Run {
    pullcheck()
        .arg("check")
        .arg("--secrets-dir")
        .arg(secrets)
        .args(["--termination-log", ""])
        .args(args)
        .env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .without_env_prefix("PULLCHECK_")
        .run()
}

fn dockerconfigjson(key: &str, user: &str, password: &str) -> String {
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!(r#"{{"auths": {{"{key}": {{"auth": "{auth}"}}}}}}"#)
}

#[test]
fn credential_sources_that_match_nothing_are_each_named() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/sources", "v1");
    let image = format!("{host}/private/sources:v1");
    let password = crate::common::ALICE_PASSWORD;
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("secrets");
    let home = dir.path().join("home");
    let folder = |name: &str| {
        let d = secrets.join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    // An optional secret that does not exist: an empty folder (and the atomic writer's
    // `..data` link a real mount has would not count as a key).
    folder("a-missing");
    // A pull secret for other registries only.
    std::fs::write(
        folder("b-other-hosts").join(".dockerconfigjson"),
        dockerconfigjson("quay.io", "bob", password),
    )
    .unwrap();
    // A generic secret holding a Docker CLI `config.json`, with the right registry in it.
    std::fs::write(
        folder("c-config-json").join("config.json"),
        dockerconfigjson(&host, crate::common::ALICE, password),
    )
    .unwrap();

    let cases: [(&str, &[&str]); 3] = [
        ("text", &[]),
        ("json", &["-o", "json"]),
        ("verbose", &["-v"]),
    ];
    for (name, extra) in cases {
        let mut args = vec!["--ca-file", ca.as_str()];
        args.extend_from_slice(extra);
        args.push(&image);
        let run = check_with_secrets(&secrets, &home, &args);
        assert_eq!(run.code, 5, "{name}: {}{}", run.stdout, run.stderr);
        let warnings: Vec<_> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("pullcheck: warning: credential source "))
            .collect();
        assert_eq!(warnings.len(), 3, "{name}: {}", run.stderr);
        assert!(
            warnings[0].contains("secret a-missing (") && warnings[0].contains("empty folder"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[1].contains("secret b-other-hosts (")
                && warnings[1].contains(&format!(
                    "holds keys for quay.io only, none for the registries checked ({host})"
                )),
            "{}",
            warnings[1]
        );
        assert!(
            warnings[2].contains("secret c-config-json (")
                && warnings[2].contains("holds config.json, not .dockerconfigjson or .dockercfg"),
            "{}",
            warnings[2]
        );
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains(password), "{name}: {all}");
        assert!(!all.contains("bob"), "user names are not listed: {all}");
        if name == "json" {
            let json = run.json();
            let sources = json["credential_sources"].as_array().unwrap();
            let shown: Vec<(&str, Vec<&str>, bool, bool)> = sources
                .iter()
                .map(|s| {
                    (
                        s["source"].as_str().unwrap(),
                        s["keys"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|k| k.as_str().unwrap())
                            .collect(),
                        s["matches"].as_bool().unwrap(),
                        s.get("problem").is_some(),
                    )
                })
                .collect();
            assert_eq!(
                shown,
                [
                    ("secret a-missing", vec![], false, true),
                    ("secret b-other-hosts", vec!["quay.io"], false, false),
                    ("secret c-config-json", vec![], false, true),
                ],
                "{json:#}"
            );
            let r = run.image(&image);
            assert_eq!(r["reason"], "no_credentials");
            let message = r["message"].as_str().unwrap();
            assert!(
                message.contains("credential sources read: secret a-missing (empty folder")
                    && message.contains("secret b-other-hosts (keys: quay.io)")
                    && message.contains("secret c-config-json (holds config.json"),
                "{message}"
            );
            let hint = r["hint"].as_str().unwrap();
            assert!(
                hint.starts_with(&format!(
                    "None of the credential sources read has a key for {host}"
                )),
                "not 'mount the secrets' when they are mounted: {hint}"
            );
        }
    }

    // The right secret mounted: it matches, and no warning is given for it.
    std::fs::write(
        folder("d-right").join(".dockerconfigjson"),
        dockerconfigjson(&host, crate::common::ALICE, password),
    )
    .unwrap();
    let run = check_with_secrets(&secrets, &home, &["-o", "json", "--ca-file", &ca, &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("secret d-right"), "{}", run.stderr);
    let json = run.json();
    let d = json["credential_sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "secret d-right")
        .unwrap()
        .clone();
    assert_eq!(d["matches"], true, "{d:#}");
    assert_eq!(d["keys"], serde_json::json!([host]), "{d:#}");
    assert!(!run.stdout.contains(password));
}

#[test]
fn no_credential_source_at_all_says_so() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/no-sources", "v1");
    let image = format!("{host}/private/no-sources:v1");
    let dir = tempfile::tempdir().unwrap();
    let run = check_with_secrets(
        &dir.path().join("none"),
        dir.path(),
        &["-o", "json", "--ca-file", &ca, &image],
    );
    assert_eq!(run.code, 5);
    assert_eq!(run.json()["credential_sources"], serde_json::json!([]));
    let r = run.image(&image);
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("no credential source was read"),
        "{r:#}"
    );
    // Run by hand: no pod, so no pull secret to mount.
    assert!(
        r["hint"]
            .as_str()
            .unwrap()
            .starts_with("Log in to the registry (docker login"),
        "{r:#}"
    );
    assert_eq!(run.stderr, "");
}

/// `check` of `image` with `args`, by hand, or in a pod (`KUBERNETES_SERVICE_HOST` set, as in
/// every container of one).
fn check_in(in_pod: bool, home: &std::path::Path, args: &[&str]) -> Run {
    let cmd = pullcheck()
        .arg("check")
        .args(["--secrets-dir", "/nonexistent", "--termination-log", ""])
        .args(args)
        .env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .without_env_prefix("PULLCHECK_");
    match in_pod {
        true => cmd.env("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        false => cmd.env_remove("KUBERNETES_SERVICE_HOST"),
    }
    .run()
}

#[test]
fn the_words_fit_where_the_check_runs_a_pod_or_a_workstation() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    let image = format!("{host}/private/words:v1");
    let dir = tempfile::tempdir().unwrap();
    for (in_pod, here, hint) in [
        (true, "this pod", "Mount the pod's imagePullSecrets"),
        (
            false,
            "this machine",
            "Log in to the registry (docker login",
        ),
    ] {
        // No credential: the hint says where one comes from, there.
        let run = check_in(
            in_pod,
            dir.path(),
            &["-o", "json", "--ca-file", &ca, &image],
        );
        assert_eq!(run.code, 5, "{}{}", run.stdout, run.stderr);
        let r = run.image(&image);
        assert_eq!(r["reason"], "no_credentials", "{r:#}");
        assert!(r["hint"].as_str().unwrap().starts_with(hint), "{r:#}");
        // A CA not trusted (no --ca-file): cannot be checked from here, in the summary.
        let run = check_in(in_pod, dir.path(), &[&image]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert!(
            run.stdout
                .contains(&format!("not verified (cannot be checked from {here};")),
            "{in_pod}: {}",
            run.stdout
        );
        let other = if in_pod { "this machine" } else { "this pod" };
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains(other), "{in_pod}: {all}");
    }
}

#[test]
fn insecure_is_plain_http_as_an_alias() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("operator/insecure", "v1");
    let image = format!("{host}/operator/insecure:v1");
    let run = check(&["-o", "json", "--insecure", &host, &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["status"], "ok");
    // The report says which of crane's two meanings it took: plain HTTP.
    assert_eq!(run.image(&image)["plain_http"], true);
    let text = check(&["--insecure", &host, &image]);
    assert!(
        text.stdout
            .lines()
            .next()
            .unwrap_or("")
            .contains(" (plain HTTP)"),
        "{}",
        text.stdout
    );
    // Without it, HTTPS is spoken to a plain registry that is not on loopback (a name pinned
    // to it), and fails; a loopback registry is spoken to in plain HTTP as containerd does.
    let pinned = "plain.insecure.test/operator/insecure:v1";
    let out = pullcheck()
        .args([
            "check",
            "-o",
            "json",
            "--timeout",
            "2s",
            "--termination-log",
            "",
            "--on-unverifiable",
            "fail",
        ])
        .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
        .arg(pinned)
        .env_remove("DOCKER_CONFIG")
        .pin("plain.insecure.test", &host)
        .run();
    assert_ne!(out.code, 0);
    let run = check(&["-o", "json", "--timeout", "2s", &image]);
    assert_eq!(run.image(&image)["plain_http"], true, "{}", run.stdout);
    let help = pullcheck().args(["check", "--help"]).run().stdout;
    assert!(help.contains("--insecure"), "{help}");
    assert!(help.contains("--creds <USER:PASS>"), "{help}");
}

#[test]
fn creds_is_one_credential_for_one_run_never_shown_never_from_the_environment() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/creds", "v1");
    let image = format!("{host}/private/creds:v1");
    let password = crate::common::ALICE_PASSWORD;
    let good = format!("{}:{password}", crate::common::ALICE);
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("none");

    let run = check_with_secrets(
        &secrets,
        dir.path(),
        &["-o", "json", "--ca-file", &ca, "--creds", &good, &image],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["auth"], format!("--creds, key {host}"), "{r:#}");
    assert_eq!(
        run.json()["credential_sources"][0]["source"],
        "--creds",
        "{}",
        run.stdout
    );

    // Wrong: rejected, and neither the password nor the value is echoed anywhere.
    for (args, code) in [
        (vec!["--creds", "alice:wr0ng-Pa55word-x"], 5),
        (vec!["--creds", "no-colon-Pa55word-x"], 2),
        (vec!["--creds", "alice:wr0ng-Pa55word-x", "-v"], 5),
    ] {
        let mut all = vec!["--ca-file", ca.as_str()];
        all.extend(args);
        all.push(&image);
        let run = check_with_secrets(&secrets, dir.path(), &all);
        assert_eq!(run.code, code, "{}{}", run.stdout, run.stderr);
        let out = format!("{}{}", run.stdout, run.stderr);
        assert!(!out.contains("Pa55word-x"), "{out}");
    }

    // Two registries: one credential cannot say which, so it is a usage error.
    let run = check_with_secrets(
        &secrets,
        dir.path(),
        &[
            "--ca-file",
            &ca,
            "--creds",
            &good,
            &image,
            "quay.io/org/app:v1",
        ],
    );
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("--creds: the images are on 2 registries"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(password));

    // No environment variable reads it: PULLCHECK_CREDS is ignored.
    let out = pullcheck()
        .args([
            "check",
            "-o",
            "json",
            "--termination-log",
            "",
            "--ca-file",
            &ca,
        ])
        .arg("--secrets-dir")
        .arg(&secrets)
        .env("HOME", dir.path())
        .env("PULLCHECK_CREDS", &good)
        .arg(&image)
        .run();
    assert_eq!(out.code, 5, "{}", out.stdout);
}

#[test]
fn podman_and_skopeo_logins_are_read_on_a_workstation_and_never_in_a_pod() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/podman-login", "v1");
    let image = format!("{host}/private/podman-login:v1");
    // What `podman login` writes: `$XDG_RUNTIME_DIR/containers/auth.json`.
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(runtime.join("containers")).unwrap();
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{}:{}", crate::common::ALICE, crate::common::ALICE_PASSWORD),
    );
    let file = runtime.join("containers/auth.json");
    std::fs::write(
        &file,
        format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    let home = dir.path().join("home");
    let run = |in_pod: bool| {
        let cmd = pullcheck()
            .check(&["-o", "json", "--timeout", "5s", "--ca-file", &ca, &image])
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime);
        if in_pod {
            cmd.env("KUBERNETES_SERVICE_HOST", "10.96.0.1").run()
        } else {
            cmd.env_remove("KUBERNETES_SERVICE_HOST").run()
        }
    };
    let workstation = run(false);
    assert_eq!(
        workstation.code, 0,
        "{}{}",
        workstation.stdout, workstation.stderr
    );
    assert_eq!(
        workstation.image(&image)["auth"],
        format!("containers auth {}, key {host}", file.display()),
        "{}",
        workstation.stdout
    );
    // In a pod the kubelet would not have it: no credentials, as the node would pull.
    let pod = run(true);
    assert_eq!(pod.code, 5, "{}{}", pod.stdout, pod.stderr);
    assert_eq!(
        pod.image(&image)["reason"],
        "no_credentials",
        "{}",
        pod.stdout
    );
}

#[test]
fn a_short_password_leaves_the_hint_and_a_repository_of_that_word_intact() {
    // `--creds alice:wrong`: "wrong" is a word of the hint and of the repository's name; only
    // the registry's own answer (a tag named so) is scrubbed of it.
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("wrong/app", "v1");
    let image = format!("{host}/wrong/app:v1");
    let dir = tempfile::tempdir().unwrap();
    let termination = dir.path().join("termination");
    for output in ["json", "text"] {
        let run: Run = pullcheck()
            .arg("check")
            .args([
                "--secrets-dir",
                "/nonexistent",
                "-o",
                output,
                "--ca-file",
                &ca,
            ])
            .args(["--creds", "alice:wrong", "--termination-log"])
            .arg(&termination)
            .arg(&image)
            .env("HOME", dir.path())
            .env_remove("DOCKER_CONFIG")
            .without_env_prefix("PULLCHECK_")
            .run();
        assert_eq!(run.code, 5, "{}{}", run.stdout, run.stderr);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains("<redacted>"), "{output}: {all}");
        assert!(
            all.contains("password is wrong or expired"),
            "{output}: {all}"
        );
        assert!(all.contains(&image), "{output}: {all}");
        if output == "json" {
            let r = run.image(&image);
            assert_eq!(r["reason"], "credentials_rejected", "{r:#}");
        }
        let message = std::fs::read_to_string(&termination).unwrap();
        assert!(message.contains(&image), "{message}");
        assert!(!message.contains("<redacted>"), "{message}");
    }

    // The registry's answer names a tag after the password: that foreign text is scrubbed,
    // the repository's name beside it is not.
    let plain = plain_registry();
    let host = plain_host();
    plain.push_oci_manifest("wrong/tags", "wrong");
    let image = format!("{host}/wrong/tags:zzzzzzzzzz");
    let run: Run = pullcheck()
        .arg("check")
        .args(["--secrets-dir", "/nonexistent", "--termination-log", ""])
        .args([
            "-o",
            "json",
            "--plain-http",
            &host,
            "--creds",
            "alice:wrong",
        ])
        .arg(&image)
        .env("HOME", dir.path())
        .env_remove("DOCKER_CONFIG")
        .without_env_prefix("PULLCHECK_")
        .run();
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["reason"], "tag_missing", "{r:#}");
    let message = r["message"].as_str().unwrap();
    assert!(message.contains(&image), "{r:#}");
    assert!(message.contains("include <redacted>"), "{r:#}");
    assert_eq!(
        r["existing_tags"],
        serde_json::json!(["<redacted>"]),
        "{r:#}"
    );
}

/// `skopeo login` to the Basic-auth registry as [`crate::common::ALICE`], with `env` (and
/// `args`, such as `--authfile`), trusting the registry's CA through a `--cert-dir`.
fn skopeo_login(dir: &std::path::Path, env: &[(&str, &std::path::Path)], args: &[&str]) {
    let reg = tls_basic_registry();
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::copy(reg.ca_pem_path().unwrap(), certs.join("ca.crt")).unwrap();
    let mut cmd = std::process::Command::new("skopeo");
    cmd.arg("login")
        .args(["--cert-dir", certs.to_str().unwrap(), "--username"])
        .arg(crate::common::ALICE)
        .arg("--password-stdin")
        .args(args)
        .arg(reg.host())
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy");
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = crate::common::output_with_stdin(&mut cmd, crate::common::ALICE_PASSWORD.as_bytes());
    assert!(
        out.status.success(),
        "skopeo login (installed by .ci/run): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_real_skopeo_login_is_read_from_each_file_containers_auth_json_names() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/skopeo-login", "v1");
    let image = format!("{host}/private/skopeo-login:v1");
    let check = |home: &std::path::Path, env: &[(&str, &std::path::Path)], in_pod: bool| {
        let mut cmd = pullcheck()
            .check(&["-o", "json", "--timeout", "5s", "--ca-file", &ca, &image])
            .env("HOME", home)
            .env_remove("DOCKER_CONFIG")
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("XDG_CONFIG_HOME");
        for (name, value) in env {
            cmd = cmd.env(name, value);
        }
        match in_pod {
            true => cmd.env("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
            false => cmd.env_remove("KUBERNETES_SERVICE_HOST"),
        }
        .run()
    };
    // skopeo's three places, each written by skopeo itself: its default under
    // $XDG_RUNTIME_DIR, an --authfile at ~/.config/containers/auth.json, and one named by
    // REGISTRY_AUTH_FILE.
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let config = home.join(".config/containers/auth.json");
    let named = dir.path().join("named/auth.json");
    skopeo_login(
        dir.path(),
        &[("HOME", &home), ("XDG_RUNTIME_DIR", &runtime)],
        &[],
    );
    skopeo_login(
        dir.path(),
        &[("HOME", &home)],
        &["--authfile", config.to_str().unwrap()],
    );
    skopeo_login(
        dir.path(),
        &[("HOME", &home)],
        &["--authfile", named.to_str().unwrap()],
    );
    let in_runtime = runtime.join("containers/auth.json");
    assert!(
        in_runtime.is_file(),
        "skopeo wrote {}",
        in_runtime.display()
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    // The first of the files that has the key gives the credential, in containers-auth.json(5)'s
    // order: REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR's, ~/.config's.
    for (env, file) in [
        (
            vec![
                ("REGISTRY_AUTH_FILE", named.as_path()),
                ("XDG_RUNTIME_DIR", runtime.as_path()),
            ],
            &named,
        ),
        (vec![("XDG_RUNTIME_DIR", runtime.as_path())], &in_runtime),
        (vec![("XDG_RUNTIME_DIR", empty.as_path())], &config),
    ] {
        let run = check(&home, &env, false);
        assert_eq!(run.code, 0, "{env:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(
            run.image(&image)["auth"],
            format!("containers auth {}, key {host}", file.display()),
            "{env:?}: {}",
            run.stdout
        );
        // In a pod none is read: the kubelet reads none of them.
        let run = check(&home, &env, true);
        assert_eq!(run.code, 5, "{env:?}: {}{}", run.stdout, run.stderr);
        assert_eq!(
            run.image(&image)["reason"],
            "no_credentials",
            "{}",
            run.stdout
        );
    }
}
