//! Hostile registries and huge inputs: one test per defect an adversarial review found. Each
//! asserts the corrected behaviour: the exit code, the wall time (within `--timeout` + 1 s),
//! the exit within 1 s of SIGTERM, the peak RSS, and that no output holds a secret, its base64
//! forms or a raw control byte.

use crate::common::proxy::{Canned, Fault, Proxy, Rule};
use crate::common::{PULLCHECK_BIN, pullcheck_cmd};
use base64::Engine;
use serde_json::Value;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HEX64: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// What one run gave: the three outputs, the exit code, the wall time and, when measured, the
/// peak RSS.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    termination: String,
    took: Duration,
    peak_kib: Option<u64>,
}

impl Outcome {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", self.stdout, self.stderr))
    }

    fn first(&self) -> Value {
        self.json()["images"][0].clone()
    }

    /// Every output, for scans.
    fn all(&self) -> String {
        format!("{}\n{}\n{}", self.stdout, self.stderr, self.termination)
    }

    fn assert_no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked") && self.code != 134 && self.code != 101,
            "exit {}: {}",
            self.code,
            self.stderr
        );
    }

    /// No raw control character (but newlines) in stdout, stderr or the termination message.
    fn assert_no_control_bytes(&self) {
        for (name, text) in [
            ("stdout", &self.stdout),
            ("stderr", &self.stderr),
            ("termination", &self.termination),
        ] {
            let bad: Vec<char> = text
                .chars()
                .filter(|c| (c.is_control() && *c != '\n') || ('\u{80}'..='\u{9f}').contains(c))
                .collect();
            assert!(bad.is_empty(), "{name} holds {bad:?}:\n{text}");
        }
    }

    /// None of `secret`, its base64 forms (alone and as `user:secret`) in any output.
    fn assert_never_shows(&self, user: &str, secret: &str) {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let b64url = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let all = self.all();
        for form in [
            secret.to_string(),
            b64(secret),
            b64(&format!("{user}:{secret}")),
            b64url(&format!("{user}:{secret}")),
            b64(&format!("{user}:{secret}"))
                .trim_end_matches('=')
                .to_string(),
        ] {
            assert!(!all.contains(&form), "{form:?} shows in:\n{all}");
        }
    }
}

/// `pullcheck check ARGS` with a termination log, no mounted secrets and no workstation config.
fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = pullcheck_cmd();
    cmd.arg("check")
        .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
        .arg("--termination-log")
        .arg(dir.join("termination-log"))
        .args(args)
        .env_remove("DOCKER_CONFIG")
        .env("HOME", dir);
    cmd
}

/// Runs `cmd`; with `measure`, under GNU time for the peak RSS.
fn run(dir: &Path, cmd: Command, measure: bool) -> Outcome {
    let mut cmd = if measure {
        let rss = dir.join("rss");
        let mut timed = Command::new("/usr/bin/time");
        timed.args(["-f", "%M", "-o"]).arg(&rss);
        timed.arg(cmd.get_program()).args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => timed.env(k, v),
                None => timed.env_remove(k),
            };
        }
        timed
    } else {
        cmd
    };
    let started = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .expect("run pullcheck (and /usr/bin/time: Debian package `time`)");
    let took = started.elapsed();
    let peak_kib = measure.then(|| {
        let text = std::fs::read_to_string(dir.join("rss")).unwrap_or_default();
        // GNU time writes "Command exited with non-zero status N" first when it did.
        text.lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("no peak RSS from /usr/bin/time: {text:?}"))
    });
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        termination: std::fs::read_to_string(dir.join("termination-log")).unwrap_or_default(),
        took,
        peak_kib,
    }
}

/// Starts `cmd`, sends SIGTERM once `ready` (or after `after`), and returns the outcome and how
/// long the process took to exit after the signal.
fn run_and_stop(dir: &Path, mut cmd: Command, after: Duration) -> (Outcome, Duration) {
    let started = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pullcheck");
    std::thread::sleep(after);
    let sent = Instant::now();
    terminate(&child);
    let out = wait_with_limit(child, Duration::from_secs(10));
    let after_signal = sent.elapsed();
    let outcome = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        termination: std::fs::read_to_string(dir.join("termination-log")).unwrap_or_default(),
        took: started.elapsed(),
        peak_kib: None,
    };
    (outcome, after_signal)
}

fn terminate(child: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -TERM");
}

/// Waits for the child, killing it past `limit` (so that a failing test does not hang).
fn wait_with_limit(mut child: Child, limit: Duration) -> std::process::Output {
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn within(took: Duration, timeout_secs: u64) {
    assert!(
        took < Duration::from_secs(timeout_secs + 1),
        "took {took:?}, past --timeout {timeout_secs}s + 1s"
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Numbers from a server saturate.
// ---------------------------------------------------------------------------------------------

const U64_MAX: &str = "18446744073709551615";

/// A registry (standalone proxy) that asks for Bearer tokens from its own `/token`; `first`
/// is tried before its own rules.
fn token_registry(token_body: &str, first: Option<Rule>) -> Proxy {
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    if let Some(rule) = first {
        proxy.rule(rule);
    }
    let realm = format!("{}/token", proxy.url());
    proxy.rule(Rule::exact("/v2/", Fault::bearer_challenge(&realm)));
    proxy.rule(Rule::prefix(
        "/token",
        Fault::respond(
            Canned::new(200)
                .header("Content-Type", "application/json")
                .body(token_body.to_string()),
        ),
    ));
    proxy.rule(Rule::contains(
        "/manifests/",
        Fault::manifest(&format!("sha256:{HEX64}")),
    ));
    proxy
}

#[test]
fn retry_after_u64_max_on_ping_head_and_token_server_is_no_panic() {
    for (name, path) in [
        ("ping", "/v2/"),
        ("HEAD", "/manifests/"),
        ("token", "/token"),
    ] {
        for status in [429, 503] {
            let fault = Fault::respond(Canned::new(status).header("Retry-After", U64_MAX));
            let rule = match path {
                "/v2/" => Rule::exact(path, fault),
                "/token" => Rule::prefix(path, fault),
                _ => Rule::contains(path, fault),
            };
            let proxy = token_registry(r#"{"token":"t","expires_in":300}"#, Some(rule));
            let dir = tempdir();
            let image = format!("{}/hostile/retry-after:v1", proxy.host());
            let out = run(
                dir.path(),
                command(
                    dir.path(),
                    &[
                        "-o",
                        "json",
                        "--timeout",
                        "3s",
                        "--plain-http",
                        &proxy.host(),
                        &image,
                    ],
                ),
                false,
            );
            out.assert_no_panic();
            assert_eq!(out.code, 6, "{name} {status}: {}{}", out.stdout, out.stderr);
            within(out.took, 3);
            let r = out.first();
            let reason = if status == 429 {
                "rate_limited"
            } else {
                "server_error"
            };
            assert_eq!(r["reason"], reason, "{name} {status}: {r:#}");
            assert!(
                out.termination
                    .starts_with("pullcheck: 1 of 1 image cannot be pulled"),
                "{}",
                out.termination
            );
        }
    }
}

#[test]
fn an_expires_in_of_u64_max_is_no_panic_and_the_token_is_used() {
    let proxy = token_registry(&format!(r#"{{"token":"t","expires_in":{U64_MAX}}}"#), None);
    let dir = tempdir();
    let image = format!("{}/hostile/expires:v1", proxy.host());
    let out = run(
        dir.path(),
        command(
            dir.path(),
            &[
                "-o",
                "json",
                "--timeout",
                "3s",
                "--plain-http",
                &proxy.host(),
                &image,
            ],
        ),
        false,
    );
    out.assert_no_panic();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    within(out.took, 3);
}

// ---------------------------------------------------------------------------------------------
// 7–10. Verdicts.
// ---------------------------------------------------------------------------------------------

/// A registry without auth whose `HEAD` finds an index and whose index `GET` answers `get`.
fn index_registry(get: Fault) -> Proxy {
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    proxy.rule(Rule::exact("/v2/", Fault::status(200)));
    proxy.rule(
        Rule::contains(
            "/manifests/",
            Fault::respond(
                Canned::new(200)
                    .header("Docker-Content-Digest", &format!("sha256:{HEX64}"))
                    .header("Content-Type", "application/vnd.oci.image.index.v1+json"),
            ),
        )
        .method("HEAD"),
    );
    proxy.rule(Rule::contains("/manifests/", get).method("GET"));
    proxy
}

#[test]
fn an_index_get_refused_or_missing_is_classified_like_the_head() {
    for (status, code, verdict, reason) in [
        (401, 5, "unauthorized", "index_unauthorized"),
        (403, 5, "denied", "index_denied"),
        (404, 3, "not_found", "index_missing"),
    ] {
        let proxy = index_registry(Fault::status(status));
        let dir = tempdir();
        let image = format!("{}/hostile/index-get:v1", proxy.host());
        let out = run(
            dir.path(),
            command(
                dir.path(),
                &[
                    "-o",
                    "json",
                    "--timeout",
                    "5s",
                    "--plain-http",
                    &proxy.host(),
                    &image,
                ],
            ),
            false,
        );
        assert_eq!(out.code, code, "{status}: {}{}", out.stdout, out.stderr);
        let r = out.first();
        assert_eq!(r["status"], verdict, "{status}: {r:#}");
        assert_eq!(r["reason"], reason, "{status}: {r:#}");
        assert_eq!(r["attempts"], 1, "{status}: not retried: {r:#}");
        let message = r["message"].as_str().unwrap();
        assert!(message.contains(&format!("answered {status}")), "{message}");
    }
}

#[test]
fn an_expires_in_of_minus_one_zero_or_absent_is_the_default_lifetime() {
    for body in [
        r#"{"token":"t","expires_in":-1}"#,
        r#"{"token":"t","expires_in":0}"#,
        r#"{"token":"t"}"#,
        r#"{"access_token":"t","expires_in":-1}"#,
    ] {
        let proxy = token_registry(body, None);
        let dir = tempdir();
        let image = format!("{}/hostile/expires:v1", proxy.host());
        let out = run(
            dir.path(),
            command(
                dir.path(),
                &[
                    "-o",
                    "json",
                    "--timeout",
                    "5s",
                    "--plain-http",
                    &proxy.host(),
                    &image,
                ],
            ),
            false,
        );
        assert_eq!(out.code, 0, "{body}: {}{}", out.stdout, out.stderr);
        assert_eq!(out.first()["status"], "ok", "{body}");
        let heads = proxy.requests_matching("/manifests/");
        assert_eq!(heads.len(), 1, "{body}: {heads:#?}");
        assert_eq!(
            heads[0].authorization.as_deref(),
            Some("Bearer t"),
            "{body}"
        );
    }
}

#[test]
fn a_non_ascii_realm_keeps_its_challenge_and_the_realm_is_judged_on_its_own() {
    // A realm with non-ASCII bytes in its path: a valid URL (percent-encoded when sent).
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    let realm = format!("{}/t\u{f6}ken", proxy.url());
    proxy.rule(Rule::exact("/v2/", Fault::bearer_challenge(&realm)));
    proxy.rule(Rule::prefix("/t%C3%B6ken", Fault::token()));
    proxy.rule(Rule::contains(
        "/manifests/",
        Fault::manifest(&format!("sha256:{HEX64}")),
    ));
    let dir = tempdir();
    let image = format!("{}/hostile/realm:v1", proxy.host());
    let out = run(
        dir.path(),
        command(
            dir.path(),
            &[
                "-o",
                "json",
                "--timeout",
                "5s",
                "--plain-http",
                &proxy.host(),
                &image,
            ],
        ),
        false,
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let heads = proxy.requests_matching("/manifests/");
    assert_eq!(
        heads[0].authorization.as_deref(),
        Some("Bearer faults-token")
    );

    // A realm that is not a URL at all: said as such, not "no challenge".
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    proxy.rule(Rule::exact(
        "/v2/",
        Fault::bearer_challenge("https://tok\u{f6}en host/x"),
    ));
    let image = format!("{}/hostile/realm:v1", proxy.host());
    let out = run(
        dir.path(),
        command(
            dir.path(),
            &["--timeout", "5s", "--plain-http", &proxy.host(), &image],
        ),
        false,
    );
    assert_eq!(out.code, 5, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("not a valid URL"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("no WWW-Authenticate"),
        "{}",
        out.stdout
    );
    out.assert_no_control_bytes();
}

#[test]
fn a_port_above_65535_is_an_invalid_reference() {
    let dir = tempdir();
    let out = run(
        dir.path(),
        command(
            dir.path(),
            &["-o", "json", "--timeout", "5s", "127.0.0.1:99999/a:1"],
        ),
        false,
    );
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    let r = out.first();
    assert_eq!(r["status"], "invalid_reference", "{r:#}");
    assert!(r["message"].as_str().unwrap().contains("port"), "{r:#}");
    assert!(
        out.took < Duration::from_secs(2),
        "not retried: {:?}",
        out.took
    );
}

// ---------------------------------------------------------------------------------------------
// 11–13. Leaks and forged output.
// ---------------------------------------------------------------------------------------------

const USER: &str = "bob";
const SECRET: &str = "hunter2-S3cret";

/// A Basic-auth registry (standalone) that refuses every credential.
fn refusing_registry() -> Proxy {
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    proxy.rule(Rule::exact("/v2/", Fault::basic_challenge()));
    proxy.rule(Rule::contains("/manifests/", Fault::basic_challenge()));
    proxy
}

fn write_config(dir: &Path, json: &str) -> PathBuf {
    let path = dir.join("config.json");
    std::fs::write(&path, json).unwrap();
    path
}

#[test]
fn user_info_in_a_docker_config_key_never_shows() {
    let proxy = refusing_registry();
    let dir = tempdir();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{SECRET}"));
    let config = write_config(
        dir.path(),
        &format!(
            r#"{{"auths":{{"https://{USER}:{SECRET}@{}":{{"auth":"{auth}"}}}}}}"#,
            proxy.host()
        ),
    );
    let image = format!("{}/hostile/userinfo:v1", proxy.host());
    for output in ["text", "json"] {
        let out = run(
            dir.path(),
            command(
                dir.path(),
                &[
                    "-o",
                    output,
                    "--timeout",
                    "5s",
                    "--plain-http",
                    &proxy.host(),
                    "--docker-config",
                    config.to_str().unwrap(),
                    &image,
                ],
            ),
            false,
        );
        assert_eq!(out.code, 5, "{output}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stdout
                .contains(&format!("key https://{}", proxy.host())),
            "the key shows without its user info: {}",
            out.stdout
        );
        out.assert_never_shows(USER, SECRET);
    }
}

#[test]
fn a_digest_header_echoing_the_credential_is_not_shown() {
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{SECRET}"));
    proxy.rule(Rule::exact("/v2/", Fault::basic_challenge()));
    proxy.rule(Rule::contains(
        "/manifests/",
        Fault::respond(
            Canned::new(200)
                .header("Docker-Content-Digest", &format!("Basic {basic}"))
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
        ),
    ));
    let dir = tempdir();
    let config = write_config(
        dir.path(),
        &format!(r#"{{"auths":{{"{}":{{"auth":"{basic}"}}}}}}"#, proxy.host()),
    );
    let image = format!("{}/hostile/digest:v1", proxy.host());
    for output in ["text", "json"] {
        let out = run(
            dir.path(),
            command(
                dir.path(),
                &[
                    "-o",
                    output,
                    "--timeout",
                    "5s",
                    "--plain-http",
                    &proxy.host(),
                    "--docker-config",
                    config.to_str().unwrap(),
                    &image,
                ],
            ),
            false,
        );
        assert_eq!(out.code, 0, "{output}: {}{}", out.stdout, out.stderr);
        out.assert_never_shows(USER, SECRET);
        if output == "json" {
            let r = out.first();
            assert!(r.get("digest").is_none(), "{r:#}");
            assert!(
                r["message"]
                    .as_str()
                    .unwrap()
                    .contains("invalid Docker-Content-Digest"),
                "{r:#}"
            );
        }
    }
}

#[test]
fn control_characters_from_a_pull_secret_cannot_forge_lines() {
    let proxy = refusing_registry();
    let dir = tempdir();
    // No ':' in it: it is the user name of `user:password`.
    let forged = "x\nok                127.0.0.1/fake sha256\u{1b}[2K\u{9b}\u{7f}\r";
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{forged}:{SECRET}"));
    let config = write_config(
        dir.path(),
        &format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, proxy.host()),
    );
    let image = format!("{}/hostile/forged:v1", proxy.host());
    for output in ["text", "json"] {
        let out = run(
            dir.path(),
            command(
                dir.path(),
                &[
                    "-o",
                    output,
                    "--timeout",
                    "5s",
                    "--plain-http",
                    &proxy.host(),
                    "--docker-config",
                    config.to_str().unwrap(),
                    &image,
                ],
            ),
            false,
        );
        assert_eq!(out.code, 5, "{output}: {}{}", out.stdout, out.stderr);
        out.assert_no_control_bytes();
        out.assert_never_shows(forged, SECRET);
        assert!(
            !out.stdout.lines().any(|l| l.starts_with("ok ")),
            "a forged ok line: {}",
            out.stdout
        );
        assert_eq!(out.termination.lines().count(), 2, "{}", out.termination);
        if output == "json" {
            // serde_json escaped C0; DEL and C1 are escaped too, and the value reads back.
            let r = out.first();
            assert!(r["message"].as_str().unwrap().contains(forged), "{r:#}");
        }
    }
}
