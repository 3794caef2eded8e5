//! `pullcheck check` end to end, as a user runs it, against a real distribution registry.

use crate::common::{
    ALICE, ALICE_PASSWORD, Registry, RegistryOptions, plain_registry, pullcheck, tls_basic_registry,
};
use base64::Engine;
use std::path::{Path, PathBuf};

/// What one run of the binary gave (kept here for the files that name it `check::Run`).
pub use crate::common::Run;

/// Runs `pullcheck check ARGS` with no credentials or termination log from the machine.
pub fn check(args: &[&str]) -> Run {
    check_with_stdin(args, "")
}

pub fn check_with_stdin(args: &[&str], stdin: &str) -> Run {
    pullcheck()
        .check(&["--termination-log", ""])
        .args(args)
        .stdin(stdin)
        .run()
}

/// A docker config file granting `user:password` on `key`.
pub fn docker_config(dir: &Path, name: &str, key: &str, user: &str, password: &str) -> PathBuf {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(r#"{{"auths": {{"{key}": {{"auth": "{auth}"}}}}}}"#),
    )
    .unwrap();
    path
}

fn plain() -> (&'static Registry, String) {
    let r = plain_registry();
    (r, r.host())
}

#[test]
fn present_tags_and_digests_are_ok_with_their_digests() {
    let (reg, host) = plain();
    let oci = reg.push_oci_manifest("check/present", "oci");
    let schema2 = reg.push_docker_schema2("check/present", "schema2");
    let index = reg.push_oci_index("check/present", "index", &["linux/amd64", "linux/arm64/v8"]);
    let list = reg.push_docker_manifest_list("check/present", "list", &["linux/amd64"]);
    let images = [
        (format!("{host}/check/present:oci"), &oci),
        (format!("{host}/check/present:schema2"), &schema2),
        (format!("{host}/check/present:index"), &index),
        (format!("{host}/check/present:list"), &list),
        (format!("{host}/check/present@{oci}"), &oci),
        // A digest wins over a tag, as in the runtime: the tag here does not exist.
        (
            format!("{host}/check/present:no-such-tag@{schema2}"),
            &schema2,
        ),
    ];
    let mut args = vec!["-o", "json", "--plain-http", &host];
    args.extend(images.iter().map(|(i, _)| i.as_str()));
    let run = check(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for (image, digest) in &images {
        let r = run.image(image);
        assert_eq!(r["status"], "ok", "{r:#}");
        // The schema2 digest proves the Accept header: without it distribution rewrites the
        // manifest to schema1 and answers another digest.
        assert_eq!(r["digest"], digest.as_str(), "{r:#}");
        assert_eq!(r["attempts"], 1);
        assert_eq!(r["auth"], "anonymous");
    }
}

#[test]
fn missing_tag_repository_and_digest_are_told_apart() {
    let (reg, host) = plain();
    reg.push_oci_manifest("check/missing", "v1");
    let absent_digest = format!("sha256:{}", "0".repeat(64));
    let tag = format!("{host}/check/missing:v2");
    let repo = format!("{host}/check/no-such-repo:v1");
    let digest = format!("{host}/check/missing@{absent_digest}");
    let run = check(&["-o", "json", "--plain-http", &host, &tag, &repo, &digest]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let cases = [
        (&tag, "tag_missing", "tag \"v2\""),
        (
            &repo,
            "repository_missing",
            "repository check/no-such-repo does not exist",
        ),
        (&digest, "digest_missing", absent_digest.as_str()),
    ];
    for (image, reason, words) in cases {
        let r = run.image(image);
        assert_eq!(r["status"], "not_found", "{r:#}");
        assert_eq!(r["reason"], reason, "{r:#}");
        let message = r["message"].as_str().unwrap();
        assert!(message.contains(words), "{message}");
        assert!(message.contains(&host), "names the registry: {message}");
        assert!(
            message.contains("HEAD http://"),
            "names what was tried: {message}"
        );
        assert!(!r["hint"].as_str().unwrap().is_empty());
        assert_eq!(r["attempts"], 1, "a 404 is never retried");
    }
}

#[test]
fn one_existing_image_costs_one_head_and_no_ping() {
    // A registry of its own, so that no other test's requests are counted.
    let reg = Registry::start(RegistryOptions {
        tls: false,
        basic_auth: None,
    });
    let host = reg.host();
    reg.push_oci_manifest("count/app", "v1");
    let before = reg.requests().len();
    let run = check(&["--plain-http", &host, &format!("{host}/count/app:v1")]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    reg.wait_for_requests(|all| all.len() > before);
    // Settled: a version check, had one been sent, is in the log too.
    let requests = reg.requests();
    let ours: Vec<_> = requests[before..]
        .iter()
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect();
    // One round trip: no `GET /v2/` before the HEAD, as the runtime sends none.
    assert_eq!(ours, ["HEAD /v2/count/app/manifests/v1 200"]);
}

#[test]
fn many_images_on_one_registry_send_no_ping() {
    let reg = Registry::start(RegistryOptions {
        tls: false,
        basic_auth: None,
    });
    let host = reg.host();
    reg.push_oci_manifest("many/app", "v1");
    let before = reg.requests().len();
    let images: Vec<String> = (0..20).map(|i| format!("{host}/many/app:t{i}")).collect();
    let mut args = vec!["--plain-http", host.as_str()];
    args.extend(images.iter().map(String::as_str));
    args.push("--quiet");
    let run = check(&args);
    assert_eq!(run.code, 3, "{}", run.stdout);
    // 20 HEADs and 20 tags/list after their 404s, settled.
    reg.wait_for_requests(|all| all.len() >= before + 40);
    let requests = reg.requests();
    let pings = requests[before..]
        .iter()
        .filter(|r| r.path == "/v2/")
        .count();
    let heads = requests[before..]
        .iter()
        .filter(|r| r.method == "HEAD")
        .count();
    assert_eq!(pings, 0, "{requests:#?}");
    assert_eq!(heads, 20);
    assert_eq!(requests.len() - before, 40, "{requests:#?}");
}

#[test]
fn basic_auth_right_wrong_and_none() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    let digest = reg.push_oci_manifest("private/app", "v1");
    let image = format!("{host}/private/app:v1");
    let dir = tempfile::tempdir().unwrap();
    let good = docker_config(dir.path(), "good.json", &host, ALICE, ALICE_PASSWORD);
    let bad = docker_config(dir.path(), "bad.json", &host, ALICE, "wrong-password");

    let run = check(&[
        "-o",
        "json",
        "--ca-file",
        &ca,
        "--docker-config",
        good.to_str().unwrap(),
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["digest"], digest.as_str());
    let auth = r["auth"].as_str().unwrap();
    assert!(auth.contains("good.json") && auth.contains(&host), "{auth}");

    let run = check(&[
        "-o",
        "json",
        "--ca-file",
        &ca,
        "--docker-config",
        bad.to_str().unwrap(),
        &image,
    ]);
    assert_eq!(run.code, 5, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["status"], "unauthorized");
    assert_eq!(r["reason"], "credentials_rejected");
    assert!(
        r["message"].as_str().unwrap().contains("user alice"),
        "{r:#}"
    );

    let run = check(&["-o", "json", "--ca-file", &ca, &image]);
    assert_eq!(run.code, 5, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["reason"], "no_credentials");
    assert_eq!(r["auth"], "anonymous");
}

#[test]
fn tls_needs_the_ca_and_a_certificate_error_is_not_retried() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let image = format!("{host}/private/app:v1");
    // Permanent for this pod, maybe not for the node (which may trust the CA): a warning by
    // default, exit 8 with --on-unverifiable fail.
    let run = check(&["-o", "json", "--timeout", "20s", &image]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["fatal"], false, "{r:#}");
    assert_eq!(r["not_counted"], "on_unverifiable_warn", "{r:#}");
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "20s",
        "--on-unverifiable",
        "fail",
        &image,
    ]);
    assert_eq!(run.code, 8, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["status"], "unverifiable");
    assert_eq!(r["reason"], "tls");
    assert_eq!(r["attempts"], 1, "a certificate error will not heal: {r:#}");
    assert!(r["elapsed_ms"].as_u64().unwrap() < 20_000);
    assert!(r["hint"].as_str().unwrap().contains("--ca-file"));
}

#[test]
fn plain_http_only_when_asked() {
    let (reg, host) = plain();
    reg.push_oci_manifest("check/plain", "v1");
    // A registry that is not on loopback (a name pinned to the loopback registry): without
    // --plain-http pullcheck speaks TLS, which a plain-HTTP registry cannot answer, and says so.
    let name = "plain.registry.test";
    let image = format!("{name}/check/plain:v1");
    let pinned = |args: &[&str]| {
        pullcheck()
            .check(&["--termination-log", ""])
            .args(args)
            .pin(name, &host)
            .run()
    };
    let run = pinned(&["-o", "json", "--on-unverifiable", "fail", &image]);
    assert_eq!(run.code, 8, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["status"], "unverifiable", "{r:#}");
    assert_eq!(r["reason"], "plain_http", "{r:#}");
    assert_eq!(r["attempts"], 1, "not retried: {r:#}");
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("https://"), "{message}");
    assert!(
        message.contains(&format!(
            "{name} answers in plain HTTP: add --plain-http {name}"
        )),
        "{message}"
    );
    assert!(
        r["hint"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Add --plain-http {name}")),
        "{r:#}"
    );
    let run = pinned(&["-o", "json", "--plain-http", name, &image]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.image(&image)["plain_http"], true);

    // On loopback, plain HTTP without asking, as containerd speaks to loopback registries
    // (route::loopback_registries_are_spoken_to_in_plain_http_as_containerd_does).
    let image = format!("{host}/check/plain:v1");
    let run = check(&["-o", "json", &image]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.image(&image)["plain_http"], true, "{}", run.stdout);
}

#[test]
fn an_invalid_reference_does_not_stop_the_others() {
    let (reg, host) = plain();
    reg.push_oci_manifest("check/mixed", "v1");
    let good = format!("{host}/check/mixed:v1");
    let bad = format!("{host}/check/Mixed:v1");
    let run = check(&["-o", "json", "--plain-http", &host, &bad, &good]);
    assert_eq!(run.code, 3);
    assert_eq!(run.image(&good)["status"], "ok");
    let r = run.image(&bad);
    assert_eq!(r["status"], "invalid_reference");
    assert!(
        r["message"].as_str().unwrap().contains("lowercase"),
        "{r:#}"
    );
}

#[test]
fn exit_code_precedence_lowest_of_3_to_6_wins() {
    let (reg, host) = plain();
    reg.push_oci_manifest("check/prec", "v1");
    let tls = tls_basic_registry();
    let ca = tls.ca_pem_path().unwrap().to_str().unwrap().to_string();
    let missing = format!("{host}/check/prec:nope");
    let private = format!("{}/private/app:v1", tls.host());
    let dead = "127.0.0.1:9/x/y:z".to_string();
    let base = [
        "--plain-http",
        host.as_str(),
        "--plain-http",
        "127.0.0.1:9",
        "--ca-file",
        ca.as_str(),
        "--timeout",
        "1s",
    ];
    let run_with = |images: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(images);
        check(&args).code
    };
    assert_eq!(run_with(&[&dead, &private, &missing]), 3);
    assert_eq!(run_with(&[&dead, &private]), 5);
    assert_eq!(run_with(&[&dead]), 6);
}

#[test]
fn json_report_shape() {
    let (reg, host) = plain();
    reg.push_oci_manifest("check/json", "v1");
    let image = format!("{host}/check/json:v1");
    let run = check(&[
        "-o",
        "json",
        "--plain-http",
        &host,
        &image,
        "nginx@sha256:abc",
    ]);
    let json = run.json();
    assert!(json["version"].is_string());
    assert_eq!(json["exit_code"], 3);
    for r in json["images"].as_array().unwrap() {
        for (key, kind) in [
            ("image", "string"),
            ("reference", "string"),
            ("registry", "string"),
            ("status", "string"),
            ("message", "string"),
            ("hint", "string"),
            ("attempts", "number"),
            ("elapsed_ms", "number"),
            ("fatal", "bool"),
            ("auth", "string"),
        ] {
            if key == "fatal" && r["status"] == "ok" {
                assert!(r.get("fatal").is_none(), "fatal only on failures: {r:#}");
                continue;
            }
            // No empty `"hint": ""`: an image that is fine has none.
            if key == "hint" && r["status"] == "ok" {
                assert!(r.get("hint").is_none(), "no empty hint: {r:#}");
                continue;
            }
            let v = &r[key];
            let ok = match kind {
                "string" => v.is_string(),
                "number" => v.is_u64(),
                _ => v.is_boolean(),
            };
            assert!(ok, "{key} should be a {kind}: {r:#}");
        }
    }
    let ok = run.image(&image);
    assert_eq!(ok["reference"], format!("{host}/check/json:v1"));
    assert_eq!(ok["registry"], host.as_str());
    assert!(ok["digest"].as_str().unwrap().starts_with("sha256:"));
    let bad = run.image("nginx@sha256:abc");
    assert_eq!(bad["status"], "invalid_reference");
    assert!(bad.get("digest").is_none());
}

#[test]
fn termination_message_is_small_and_cut_cleanly() {
    let (_, host) = plain();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let images: Vec<String> = (0..60)
        .map(|i| format!("{host}/check/termination-{i}-with-a-rather-long-repository-name:tag"))
        .collect();
    let mut cmd_args = vec!["--plain-http", host.as_str(), "--quiet"];
    cmd_args.extend(images.iter().map(String::as_str));
    let out = pullcheck()
        .args([
            "check",
            "--secrets-dir",
            "/nonexistent",
            "--termination-log",
        ])
        .arg(&log)
        .args(&cmd_args)
        .run();
    assert_eq!(out.code, 3);
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.len() <= 1024, "{} bytes", msg.len());
    let lines: Vec<_> = msg.lines().collect();
    assert_eq!(lines[0], "pullcheck: 60 of 60 images cannot be pulled");
    // The image first, then its reason.
    assert!(
        lines[1].starts_with(&format!("{host}/check/termination-"))
            && lines[1].contains(": repository_missing"),
        "{msg}"
    );
    assert!(
        lines.last().unwrap().starts_with("… and ") && msg.ends_with(" more"),
        "{msg}"
    );

    // All well: one line.
    let reg = plain_registry();
    reg.push_oci_manifest("check/termination-ok", "v1");
    let out = pullcheck()
        .arg("check")
        .args([
            "--secrets-dir",
            "/nonexistent",
            "--plain-http",
            &host,
            "--termination-log",
        ])
        .arg(&log)
        .arg(format!("{host}/check/termination-ok:v1"))
        .run();
    assert_eq!(out.code, 0);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "pullcheck: the 1 image can be pulled"
    );
}

#[test]
fn pod_spec_images_are_checked_from_stdin() {
    let (reg, host) = plain();
    reg.push_oci_manifest("check/pod-app", "v1");
    reg.push_oci_manifest("check/pod-init", "v1");
    let pod = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: train}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      initContainers:\n      - {{name: pullcheck, image: {host}/not/checked:v1}}\n      - {{name: init, image: {host}/check/pod-init:v1}}\n      containers:\n      - {{name: app, image: {host}/check/pod-app:v1}}\n      - {{name: local, image: {host}/not/pulled:v1, imagePullPolicy: Never}}\n"
    );
    let run = check_with_stdin(
        &["-o", "json", "--plain-http", &host, "--pod-spec", "-"],
        &pod,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let checked: Vec<_> = run.json()["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["image"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        checked,
        [
            format!("{host}/check/pod-init:v1"),
            format!("{host}/check/pod-app:v1")
        ]
    );
}

#[test]
fn text_report_lists_problems_first_with_hints() {
    let (reg, host) = plain();
    reg.push_oci_manifest("check/text", "v1");
    let run = check(&[
        "--plain-http",
        &host,
        &format!("{host}/check/text:v1"),
        &format!("{host}/check/text:v9"),
    ]);
    assert_eq!(run.code, 3);
    let lines: Vec<_> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert!(
        lines[0].starts_with("not_found") && lines[0].contains("Hint: "),
        "{}",
        run.stdout
    );
    assert!(lines[1].starts_with("ok"), "{}", run.stdout);
    assert_eq!(lines[2], "pullcheck: 1 of 2 images cannot be pulled");
    assert!(
        run.stderr.is_empty(),
        "diagnostics only on stderr: {}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2_and_check_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("config.json");
    std::fs::write(&broken, r#"{"auths": {"r.io": {"auth": "!!c2VjcmV0!!"}}}"#).unwrap();
    let cases: &[(&str, &[&str], &str)] = &[
        ("bad duration", &["--timeout", "10x", "nginx"], "--timeout"),
        (
            "negative duration",
            &["--timeout", "-1s", "nginx"],
            "--timeout",
        ),
        ("no images", &[], "no images to check"),
        ("unknown flag", &["--bogus", "nginx"], "--bogus"),
        (
            "missing docker config",
            &["--docker-config", "/nonexistent.json", "nginx"],
            "/nonexistent.json",
        ),
        (
            "broken docker config",
            &["--docker-config", broken.to_str().unwrap(), "nginx"],
            "entry r.io",
        ),
        // A Secret is only a document without a pod spec; unreadable input is an error.
        (
            "pod spec is a template",
            &["--pod-spec", "-"],
            "unrendered Helm template",
        ),
    ];
    for (name, args, words) in cases {
        let stdin = if *name == "pod spec is a template" {
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: {{ .Values.password }}}\n"
        } else {
            ""
        };
        let run = check_with_stdin(args, stdin);
        assert_eq!(run.code, 2, "{name}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stdout.is_empty(),
            "{name}: nothing on stdout: {}",
            run.stdout
        );
        assert!(run.stderr.contains(words), "{name}: {}", run.stderr);
        assert!(
            !run.stderr.contains("c2VjcmV0"),
            "{name}: echoed a secret: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{name}: {}", run.stderr);
    }
}

#[test]
fn no_output_contains_the_password() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/leak", "v1");
    let dir = tempfile::tempdir().unwrap();
    let good = docker_config(dir.path(), "good.json", &host, ALICE, ALICE_PASSWORD);
    let bad = docker_config(dir.path(), "bad.json", &host, ALICE, "wrong-Pa55word");
    let b64 = |p: &str| base64::engine::general_purpose::STANDARD.encode(format!("{ALICE}:{p}"));
    for config in [&good, &bad] {
        for output in ["json", "text"] {
            for image in ["private/leak:v1", "private/leak:v2", "private/none:v1"] {
                let run = check(&[
                    "-o",
                    output,
                    "--ca-file",
                    &ca,
                    "--docker-config",
                    config.to_str().unwrap(),
                    &format!("{host}/{image}"),
                ]);
                let all = format!("{}{}", run.stdout, run.stderr);
                for secret in [ALICE_PASSWORD, "wrong-Pa55word"] {
                    assert!(!all.contains(secret), "{all}");
                    assert!(!all.contains(&b64(secret)), "{all}");
                }
            }
        }
    }
}

#[test]
fn allow_unauthenticated_turns_missing_pod_credentials_into_a_warning() {
    let reg = tls_basic_registry();
    let host = reg.host();
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    reg.push_oci_manifest("private/node-creds", "v1");
    let image = format!("{host}/private/node-creds:v1");

    let run = check(&[
        "-o",
        "json",
        "--ca-file",
        &ca,
        "--allow-unauthenticated",
        &host,
        &image,
    ]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let r = run.image(&image);
    assert_eq!(r["status"], "unauthorized");
    assert_eq!(r["fatal"], false);
    assert!(
        r["message"].as_str().unwrap().contains("not counted"),
        "{r:#}"
    );
    assert_eq!(r["not_counted"], "allow_unauthenticated", "{r:#}");
    let text = check(&["--ca-file", &ca, "--allow-unauthenticated", "*", &image]);
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.contains("unauthorized (warning)"),
        "{}",
        text.stdout
    );

    // With pod credentials that the registry rejects, the verdict still counts.
    let dir = tempfile::tempdir().unwrap();
    let bad = docker_config(dir.path(), "bad.json", &host, ALICE, "wrong");
    let run = check(&[
        "-o",
        "json",
        "--ca-file",
        &ca,
        "--allow-unauthenticated",
        "*",
        "--docker-config",
        bad.to_str().unwrap(),
        &image,
    ]);
    assert_eq!(run.code, 5, "{}", run.stdout);
    assert_eq!(run.image(&image)["fatal"], true);
}
