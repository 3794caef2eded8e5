//! Hostile registries and huge inputs: one test per defect an adversarial review found. Each
//! asserts the corrected behaviour: the exit code, the wall time (within `--timeout` + 1 s),
//! the exit within 1 s of SIGTERM, the peak RSS, and that no output holds a secret, its base64
//! forms or a raw control byte.

use crate::common::proxy::{Canned, Fault, Proxy, Rule};
use crate::common::signal;
use crate::common::{Pullcheck, black_hole, cannot_run, pullcheck};
use base64::Engine;
use serde_json::Value;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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
fn command(dir: &Path, args: &[&str]) -> Pullcheck {
    let mut cmd = pullcheck().arg("check");
    if !args.contains(&"--secrets-dir") {
        cmd = cmd.args(["--secrets-dir", "/nonexistent/pullcheck-secrets"]);
    }
    cmd.arg("--termination-log")
        .arg(dir.join("termination-log"))
        .args(args)
        .env_remove("DOCKER_CONFIG")
        .env("HOME", dir)
}

/// Runs `cmd`; with `measure`, under GNU time for the peak RSS.
fn run(dir: &Path, cmd: impl Into<Command>, measure: bool) -> Outcome {
    let cmd = cmd.into();
    let mut cmd = if measure {
        let rss = dir.join("rss");
        let mut timed = Command::new("/usr/bin/time");
        timed.args(["-f", "%M", "-o"]).arg(&rss);
        match std::env::var_os(MEMORY_BIN_ENV) {
            Some(bin) => timed.arg(bin),
            None => timed.arg(cmd.get_program()),
        };
        timed.args(cmd.get_args());
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

/// Starts `cmd`, sends SIGTERM after `after`, and returns the outcome and how long the process
/// took to exit after the signal. Outputs go to files: a full pipe would stop the process.
fn run_and_stop(dir: &Path, cmd: impl Into<Command>, after: Duration) -> (Outcome, Duration) {
    let started = Instant::now();
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let child = cmd
        .into()
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run pullcheck");
    std::thread::sleep(after);
    let sent = Instant::now();
    signal::terminate(&child);
    let status = signal::output_within(child, Duration::from_secs(10)).status;
    let after_signal = sent.elapsed();
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    let outcome = Outcome {
        code: status.code().unwrap_or(-1),
        stdout: read(&out_path),
        stderr: read(&err_path),
        termination: std::fs::read_to_string(dir.join("termination-log")).unwrap_or_default(),
        took: started.elapsed(),
        peak_kib: None,
    };
    (outcome, after_signal)
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

/// A stand-in registry's challenge to its first manifest `HEAD`, which comes without
/// credentials: no version check (`GET /v2/`) is sent before it, so that `HEAD` learns how to
/// authenticate (the stand-in cannot tell who asks, so it challenges by count).
fn challenge_first_head(challenge: Fault) -> Rule {
    Rule::contains("/manifests/", challenge)
        .method("HEAD")
        .times(1)
}

/// A registry (standalone proxy) that asks for Bearer tokens from its own `/token`; `first`
/// is tried before its own rules.
fn token_registry(token_body: &str, first: Option<Rule>) -> Proxy {
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    if let Some(rule) = first {
        proxy.rule(rule);
    }
    let realm = format!("{}/token", proxy.url());
    proxy.rule(challenge_first_head(Fault::bearer_challenge(&realm)));
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
fn retry_after_u64_max_on_the_first_head_a_token_head_and_the_token_server_is_no_panic() {
    // The first request of a run is the anonymous HEAD (no version check comes before it);
    // then, once challenged, the HEAD with the token, and the token server.
    for (name, path) in [
        ("first HEAD", "/manifests/"),
        ("HEAD with the token", "/manifests/ after the challenge"),
        ("token", "/token"),
    ] {
        for status in [429, 503] {
            let fault = Fault::respond(Canned::new(status).header("Retry-After", U64_MAX));
            let rule = match path {
                "/token" => Rule::prefix(path, fault),
                "/manifests/" => Rule::contains(path, fault),
                _ => Rule::contains("/manifests/", fault).skip(1),
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
                    .starts_with("pullcheck: the 1 image cannot be pulled"),
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
        // The challenged anonymous HEAD, then one HEAD, with the token.
        let heads = proxy.requests_matching("/manifests/");
        assert_eq!(heads.len(), 2, "{body}: {heads:#?}");
        assert_eq!(heads[0].authorization, None, "{body}: {heads:#?}");
        assert_eq!(
            heads[1].authorization.as_deref(),
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
    proxy.rule(challenge_first_head(Fault::bearer_challenge(&realm)));
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
        heads.len(),
        2,
        "the challenged HEAD, then the one with a token: {heads:#?}"
    );
    assert_eq!(heads[0].authorization, None, "{heads:#?}");
    assert_eq!(
        heads[1].authorization.as_deref(),
        Some("Bearer faults-token")
    );

    // A realm that is not a URL at all: said as such, not "no challenge".
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    proxy.rule(challenge_first_head(Fault::bearer_challenge(
        "https://tok\u{f6}en host/x",
    )));
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
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{SECRET}"));
    let dir = tempdir();
    for output in ["text", "json"] {
        // A registry of its own for each run, whose first HEAD is challenged, so that the
        // credential is sent, and echoed back in the digest header.
        let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
        proxy.rule(challenge_first_head(Fault::basic_challenge()));
        proxy.rule(Rule::contains(
            "/manifests/",
            Fault::respond(
                Canned::new(200)
                    .header("Docker-Content-Digest", &format!("Basic {basic}"))
                    .header("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
            ),
        ));
        let config = write_config(
            dir.path(),
            &format!(r#"{{"auths":{{"{}":{{"auth":"{basic}"}}}}}}"#, proxy.host()),
        );
        let image = format!("{}/hostile/digest:v1", proxy.host());
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
        let sent = format!("Basic {basic}");
        assert!(
            proxy
                .requests_matching("/manifests/")
                .iter()
                .any(|r| r.authorization.as_deref() == Some(sent.as_str())),
            "{output}: the credential was sent, and echoed"
        );
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

// ---------------------------------------------------------------------------------------------
// 3. A 4 MiB index with 85,000 distinct platforms.
// ---------------------------------------------------------------------------------------------

/// An index of `n` distinct platforms (`x/<4 letters>`), none for a Linux node: 46 bytes per
/// entry, so 85,000 entries fit in the 4 MiB read limit.
fn huge_index(n: usize) -> Vec<u8> {
    let mut body = String::with_capacity(n * 50 + 64);
    body.push_str(r#"{"schemaVersion":2,"manifests":["#);
    for i in 0..n {
        if i > 0 {
            body.push(',');
        }
        let mut name = String::new();
        let mut k = i;
        for _ in 0..4 {
            name.push((b'a' + (k % 26) as u8) as char);
            k /= 26;
        }
        body.push_str(&format!(
            r#"{{"platform":{{"os":"x","architecture":"{name}"}}}}"#
        ));
    }
    body.push_str("]}");
    assert!(body.len() <= 4 << 20, "{} bytes", body.len());
    body.into_bytes()
}

fn huge_index_registry() -> Proxy {
    index_registry(Fault::respond(
        Canned::new(200)
            .header("Content-Type", "application/vnd.oci.image.index.v1+json")
            .body(huge_index(85_000)),
    ))
}

fn images_on(proxy: &Proxy, n: usize, repo: &str) -> Vec<String> {
    (0..n)
        .map(|i| format!("{}/hostile/{repo}{i}:v1", proxy.host()))
        .collect()
}

#[test]
fn a_4_mib_index_of_85000_platforms_is_linear_capped_and_within_the_deadline() {
    let proxy = huge_index_registry();
    let dir = tempdir();
    let image = format!("{}/hostile/huge-index:v1", proxy.host());
    let out = run(
        dir.path(),
        command(
            dir.path(),
            &[
                "-o",
                "json",
                "--timeout",
                "5s",
                "--platform",
                "linux/amd64",
                "--plain-http",
                &proxy.host(),
                &image,
            ],
        ),
        false,
    );
    out.assert_no_panic();
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    within(out.took, 5);
    let r = out.first();
    assert_eq!(r["status"], "wrong_platform", "{r:#}");
    assert_eq!(r["available_platforms"].as_array().unwrap().len(), 32);
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("and 84968 more"), "{message}");
    eprintln!("85,000 platforms: {:?}", out.took);
}

#[test]
fn sigterm_while_sixteen_huge_indexes_are_read_exits_within_a_second() {
    let proxy = huge_index_registry();
    let dir = tempdir();
    let images = images_on(&proxy, 16, "huge-index-term");
    let mut args = vec!["--timeout", "60s", "--platform", "linux/amd64"];
    let host = proxy.host();
    args.extend(["--plain-http", &host]);
    args.extend(images.iter().map(String::as_str));
    let (out, after_signal) = run_and_stop(
        dir.path(),
        command(dir.path(), &args),
        Duration::from_millis(1500),
    );
    assert!(
        after_signal < Duration::from_secs(1),
        "exited {after_signal:?} after SIGTERM"
    );
    assert!(
        out.termination.starts_with("pullcheck: stopped by SIGTERM"),
        "{}",
        out.termination
    );
    assert!(
        out.code == 4 || out.code == 6,
        "{}{}",
        out.stdout,
        out.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// 4. A 1 MiB pull secret; 10,000 images with a 1,000-entry config.
// ---------------------------------------------------------------------------------------------

/// A `.dockerconfigjson` of `n` entries on hosts that match nothing checked, plus one for
/// `host` (with `user`): `{"auths":{"rNNNNN.example.com":{"auth":"…"}, …}}`.
fn big_config(n: usize, host: &str) -> String {
    let auth = base64::engine::general_purpose::STANDARD.encode("u:p");
    let mut s = String::from(r#"{"auths":{"#);
    for i in 0..n {
        s.push_str(&format!(r#""r{i}.example.com":{{"auth":"{auth}"}},"#));
    }
    s.push_str(&format!(r#""{host}/hostile":{{"auth":"{auth}"}}}}}}"#));
    s
}

/// A registry without auth that has every manifest.
fn open_registry() -> Proxy {
    let proxy = Proxy::standalone("127.0.0.1", Fault::manifest(&format!("sha256:{HEX64}")));
    proxy.rule(Rule::exact("/v2/", Fault::status(200)));
    proxy
}

#[test]
fn a_1_mib_pull_secret_with_16_images_is_checked_within_the_deadline() {
    let proxy = open_registry();
    let dir = tempdir();
    let secret = dir.path().join("secrets/big");
    std::fs::create_dir_all(&secret).unwrap();
    let config = big_config(28_700, &proxy.host());
    assert!(config.len() > 1 << 20, "{} bytes", config.len());
    std::fs::write(secret.join(".dockerconfigjson"), &config).unwrap();
    let images = images_on(&proxy, 16, "big-secret");
    let host = proxy.host();
    let secrets = dir.path().join("secrets");
    let mut args = vec![
        "-o",
        "json",
        "--timeout",
        "3s",
        "--plain-http",
        &host,
        "--secrets-dir",
        secrets.to_str().unwrap(),
    ];
    args.extend(images.iter().map(String::as_str));
    let out = run(dir.path(), command(dir.path(), &args), false);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    within(out.took, 3);
    eprintln!("1 MiB pull secret, 16 images: {:?}", out.took);
}

fn ten_thousand_images(dir: &Path, hole: &str) -> (PathBuf, PathBuf) {
    // 1,000 keys, a fifth of them on the images' own host with path prefixes.
    let auth = base64::engine::general_purpose::STANDARD.encode("u:p");
    let mut s = String::from(r#"{"auths":{"#);
    for i in 0..1000 {
        let key = if i % 5 == 0 {
            format!("{hole}/team/app{i}")
        } else {
            format!("r{i}.example.com")
        };
        s.push_str(&format!(r#""{key}":{{"auth":"{auth}"}},"#));
    }
    s.push_str(r#""*.example.org":{"auth":"dTpw"}}}"#);
    let config = dir.join("config.json");
    std::fs::write(&config, s).unwrap();
    let list: Vec<String> = (0..10_000)
        .map(|i| format!("{hole}/team/app{i}:v1"))
        .collect();
    let images = dir.join("images.txt");
    std::fs::write(&images, list.join("\n")).unwrap();
    (config, images)
}

#[test]
fn ten_thousand_images_with_a_1000_entry_config_end_within_the_deadline() {
    let hole = black_hole();
    let dir = tempdir();
    let (config, images) = ten_thousand_images(dir.path(), &hole);
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
                &hole,
                "--docker-config",
                config.to_str().unwrap(),
                "--images-file",
                images.to_str().unwrap(),
            ],
        ),
        false,
    );
    assert_eq!(out.code, 6, "{}", out.stderr);
    // The tests run the debug binary, ~10x slower at building and writing 10,000 results than
    // the release binary (5.2 s for this run): one more second for that.
    assert!(out.took < Duration::from_secs(7), "took {:?}", out.took);
    assert_eq!(out.json()["images"].as_array().unwrap().len(), 10_000);
    eprintln!("10,000 images, 1,000 keys: {:?}", out.took);
}

#[test]
fn sigterm_with_ten_thousand_images_and_a_1000_entry_config_writes_the_termination_message() {
    let hole = black_hole();
    let dir = tempdir();
    let (config, images) = ten_thousand_images(dir.path(), &hole);
    for after in [Duration::from_millis(30), Duration::from_millis(800)] {
        let (out, after_signal) = run_and_stop(
            dir.path(),
            command(
                dir.path(),
                &[
                    "--timeout",
                    "60s",
                    "--plain-http",
                    &hole,
                    "--docker-config",
                    config.to_str().unwrap(),
                    "--images-file",
                    images.to_str().unwrap(),
                ],
            ),
            after,
        );
        // A signal while the images are still being read (30 ms in) is acted on when the
        // check starts; the debug binary needs up to a second more for that than the release
        // binary (70 ms from signal to exit once checking).
        let limit = if after < Duration::from_millis(500) {
            2
        } else {
            1
        };
        assert!(
            after_signal < Duration::from_secs(limit),
            "{after:?}: exited {after_signal:?} after SIGTERM"
        );
        assert_eq!(out.code, 6, "{after:?}: {}", out.stderr);
        assert!(
            out.termination.starts_with("pullcheck: stopped by SIGTERM"),
            "{after:?}: {:?}",
            out.termination
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 5. A credential helper that never returns.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_credential_helper_that_never_returns_is_stopped_within_its_share() {
    let proxy = open_registry();
    let dir = tempdir();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let helper = bin.join("docker-credential-pullcheck-sleepy");
    std::fs::write(&helper, "#!/bin/sh\nexec sleep 1000\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let docker = dir.path().join(".docker");
    std::fs::create_dir(&docker).unwrap();
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths":{{"{}":{{}}}},"credsStore":"pullcheck-sleepy"}}"#,
            proxy.host()
        ),
    )
    .unwrap();
    let image = format!("{}/hostile/helper:v1", proxy.host());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let cmd = command(
        dir.path(),
        &[
            "-o",
            "json",
            "--timeout",
            "4s",
            "--plain-http",
            &proxy.host(),
            &image,
        ],
    )
    .env("PATH", path);
    let out = run(dir.path(), cmd, false);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    within(out.took, 4);
    assert!(out.took < Duration::from_secs(2), "took {:?}", out.took);
    assert!(
        out.stderr.contains("did not answer within") && out.stderr.contains("checking anonymously"),
        "{}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// 2. DNS that never answers; NXDOMAIN and SERVFAIL from a resolver stand-in.
// ---------------------------------------------------------------------------------------------

/// How the stand-in nameserver answers.
#[derive(Clone, Copy)]
enum Dns {
    /// Reads every query and answers none.
    Silent,
    /// RCODE 3: the name does not exist.
    NxDomain,
    /// RCODE 2: the server failed (transient).
    ServFail,
}

/// A loopback address of this test process's own for a stand-in nameserver (`n` tells the
/// stand-ins of one process apart): two runs of the suite at once must not share port 53.
fn nameserver_ip(n: u8) -> String {
    let pid = std::process::id();
    format!("127.{}.{}.{n}", 100 + (pid >> 8) % 100, pid & 0xff)
}

/// A nameserver on `ip`:53 (UDP) that answers as `mode` says. Needs root for port 53.
fn nameserver(ip: &str, mode: Dns) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let socket = UdpSocket::bind((ip, 53)).expect("bind a nameserver on port 53");
    let queries = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = queries.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let rcode = match mode {
                Dns::Silent => continue,
                Dns::NxDomain => 3,
                Dns::ServFail => 2,
            };
            if let Some(answer) = dns_answer(&buf[..n], rcode) {
                let _ = socket.send_to(&answer, from);
            }
        }
    });
    queries
}

/// An answer with no records and `rcode` to a query: its ID, flags QR|RD|RA, the question
/// copied back (12-byte header, then the name's labels up to the empty one, then type and
/// class).
fn dns_answer(query: &[u8], rcode: u8) -> Option<Vec<u8>> {
    let mut i = 12;
    loop {
        let len = *query.get(i)? as usize;
        i += 1 + len;
        if len == 0 {
            break;
        }
    }
    let end = i + 4;
    let question = query.get(12..end)?;
    let mut out = Vec::with_capacity(end);
    out.extend_from_slice(query.get(0..2)?);
    out.push(0x81 | (query.get(2)? & 0x01)); // QR, opcode 0, RD as asked
    out.push(0x80 | rcode); // RA, the rcode
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(question);
    Some(out)
}

fn can_run_dns_tests(test: &str) -> bool {
    if !crate::common::is_root() {
        cannot_run(
            test,
            "the resolver stand-in needs root (port 53, unshare -m, mount)",
        );
        return false;
    }
    let unshare = crate::common::can_unshare();
    if !unshare {
        cannot_run(test, "unshare -m is not allowed here");
    }
    unshare
}

/// `pullcheck check ARGS` in a private mount namespace whose `/etc/resolv.conf` names only
/// `nameserver`.
fn with_resolver(dir: &Path, nameserver: &str, args: &[&str]) -> Command {
    let resolv = dir.join("resolv.conf");
    std::fs::write(&resolv, format!("nameserver {nameserver}\n")).unwrap();
    let inner = command(dir, args).command();
    let mut cmd = Command::new("unshare");
    cmd.args([
        "-m",
        "sh",
        "-c",
        r#"mount --bind "$0" /etc/resolv.conf && exec "$@""#,
    ])
    .arg(&resolv)
    .arg(inner.get_program())
    .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

#[test]
fn a_dns_server_that_never_answers_ends_at_the_deadline_and_at_sigterm() {
    if !can_run_dns_tests("a_dns_server_that_never_answers_ends_at_the_deadline_and_at_sigterm") {
        return;
    }
    let silent = nameserver_ip(71);
    let queries = nameserver(&silent, Dns::Silent);
    let dir = tempdir();
    let image = "registry.pullcheck-silent.test/team/app:v1";
    let out = run(
        dir.path(),
        with_resolver(
            dir.path(),
            &silent,
            &["-o", "json", "--timeout", "3s", image],
        ),
        false,
    );
    assert_eq!(out.code, 6, "{}{}", out.stdout, out.stderr);
    within(out.took, 3);
    let r = out.first();
    assert_eq!(r["status"], "unreachable", "{r:#}");
    assert!(
        queries.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "the stand-in was asked"
    );
    assert!(
        out.termination.starts_with("pullcheck: the 1 image"),
        "{}",
        out.termination
    );

    let (out, after_signal) = run_and_stop(
        dir.path(),
        with_resolver(dir.path(), &silent, &["--timeout", "60s", image]),
        Duration::from_millis(1500),
    );
    assert!(
        after_signal < Duration::from_secs(1),
        "exited {after_signal:?} after SIGTERM"
    );
    assert_eq!(out.code, 6, "{}{}", out.stdout, out.stderr);
    assert!(
        out.termination.starts_with("pullcheck: stopped by SIGTERM"),
        "{}",
        out.termination
    );
}

#[test]
fn nxdomain_twice_stops_retrying_and_servfail_is_retried() {
    if !can_run_dns_tests("nxdomain_twice_stops_retrying_and_servfail_is_retried") {
        return;
    }
    let (nxdomain, servfail) = (nameserver_ip(72), nameserver_ip(73));
    nameserver(&nxdomain, Dns::NxDomain);
    nameserver(&servfail, Dns::ServFail);
    let dir = tempdir();
    let image = "registry.invalid/team/app:v1";
    let out = run(
        dir.path(),
        with_resolver(
            dir.path(),
            &nxdomain,
            &[
                "-o",
                "json",
                "--timeout",
                "10s",
                "--on-unverifiable",
                "fail",
                image,
            ],
        ),
        false,
    );
    assert_eq!(out.code, 8, "{}{}", out.stdout, out.stderr);
    let r = out.first();
    assert_eq!(r["status"], "unverifiable", "{r:#}");
    assert_eq!(r["reason"], "no_such_host", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
    assert!(
        out.took < Duration::from_secs(3),
        "not retried for long: {:?}",
        out.took
    );

    let out = run(
        dir.path(),
        with_resolver(
            dir.path(),
            &servfail,
            &["-o", "json", "--timeout", "3s", image],
        ),
        false,
    );
    assert_eq!(out.code, 6, "{}{}", out.stdout, out.stderr);
    within(out.took, 3);
    let r = out.first();
    assert_eq!(r["reason"], "connect", "{r:#}");
    assert!(
        r["attempts"].as_u64().unwrap() > 2,
        "transient: retried: {r:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 13 §2. SIGINT while an image is being retried reports its last error.
// ---------------------------------------------------------------------------------------------

#[test]
fn sigint_while_retrying_reports_the_last_error_seen() {
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(503));
    let fresh = black_hole();
    let dir = tempdir();
    let retried = format!("{}/hostile/retried:v1", proxy.host());
    let never = format!("{fresh}/hostile/never:v1");
    let child = command(
        dir.path(),
        &[
            "-o",
            "json",
            "--timeout",
            "60s",
            "--concurrency",
            "1",
            "--plain-http",
            &proxy.host(),
            "--plain-http",
            &fresh,
            &retried,
            &never,
        ],
    )
    .spawn();
    std::thread::sleep(Duration::from_millis(1500));
    signal::interrupt(&child);
    let out = signal::output_within(child, Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(6));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = |image: &str| {
        json["images"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["image"] == image)
            .cloned()
            .unwrap()
    };
    let r = find(&retried);
    assert_eq!(r["status"], "unreachable", "{r:#}");
    assert_eq!(r["reason"], "server_error", "{r:#}");
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("stopped by SIGINT after"), "{message}");
    assert!(message.contains("answered 503"), "{message}");
    assert!(r["attempts"].as_u64().unwrap() >= 2, "{r:#}");
    // Never started (one slot, held by the other image): today's wording.
    let n = find(&never);
    assert_eq!(n["reason"], "stopped", "{n:#}");
    assert!(
        n["message"].as_str().unwrap().contains("not checked"),
        "{n:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Peak memory, measured with GNU time on the binary under test.
// ---------------------------------------------------------------------------------------------

/// The binary measured instead of the one under test (`bench/memory.sh` sets it to the release
/// binary), and then the target bounds are asserted.
const MEMORY_BIN_ENV: &str = "PULLCHECK_MEMORY_BIN";

/// The bound for a case: with [`MEMORY_BIN_ENV`] (the release binary), the target, 24 MiB, or
/// 32 MiB for a 4 MiB docker config (only a workstation's `--docker-config` can be that big: a
/// Kubernetes Secret holds 1 MiB). Without it, the tests run the debug binary, whose own
/// footprint is ~9 MiB above the release binary's (13.5 MiB against 4.4 MiB for one image): 32
/// MiB for the pod's cases, and the workstation's 4 MiB config its target plus that footprint
/// (it measured 32.1 MiB there, 128 KiB past a bound of 32 MiB that held no margin for the
/// debug build's own growth).
fn bound_kib(target_mib: u64) -> u64 {
    if std::env::var_os(MEMORY_BIN_ENV).is_some() {
        target_mib * 1024
    } else {
        target_mib.max(24) * 1024 + 8 * 1024
    }
}

fn measured(name: &str, dir: &Path, cmd: Pullcheck, code: i32, bound_kib: u64) -> Outcome {
    let out = run(dir, cmd, true);
    assert_eq!(out.code, code, "{name}: {}{}", out.stdout, out.stderr);
    let peak = out.peak_kib.unwrap_or_default();
    eprintln!(
        "peak RSS {name}: {:.1} MiB in {:?}",
        peak as f64 / 1024.0,
        out.took
    );
    assert!(
        peak <= bound_kib,
        "{name}: peak RSS {peak} KiB > {bound_kib} KiB"
    );
    out
}

#[test]
fn peak_memory_stays_bounded_for_huge_indexes() {
    if !Path::new("/usr/bin/time").exists() {
        cannot_run(
            "peak_memory_stays_bounded_for_huge_indexes",
            "/usr/bin/time (Debian package `time`) is not installed",
        );
        return;
    }
    let proxy = huge_index_registry();
    let host = proxy.host();
    for (name, n, concurrency) in [
        ("one 4 MiB index", 1, "16"),
        ("16 images with 4 MiB indexes", 16, "16"),
        ("64 images with 4 MiB indexes, --concurrency 64", 64, "64"),
    ] {
        let dir = tempdir();
        let images = images_on(&proxy, n, &format!("mem{n}-"));
        let mut args = vec![
            "-o",
            "json",
            "--timeout",
            "120s",
            "--concurrency",
            concurrency,
            "--platform",
            "linux/amd64",
            "--plain-http",
            &host,
        ];
        args.extend(images.iter().map(String::as_str));
        // The bodies are bounded by the body budget whatever --concurrency; what grows with it
        // is each open connection's own state and buffers, 64 of them at once here. Measured
        // for the debug binary on two cores: 26 to 37 MiB over four runs, against 23 to 24 MiB
        // for one and for 16 images: 192 KiB per connection beyond 16 covers that spread with
        // room.
        let connections = u64::try_from(n.saturating_sub(16)).unwrap_or(0);
        measured(
            name,
            dir.path(),
            command(dir.path(), &args),
            4,
            bound_kib(24) + connections * 192,
        );
    }
}

#[test]
fn peak_memory_stays_bounded_for_huge_credential_files() {
    if !Path::new("/usr/bin/time").exists() {
        cannot_run(
            "peak_memory_stays_bounded_for_huge_credential_files",
            "/usr/bin/time (Debian package `time`) is not installed",
        );
        return;
    }
    let proxy = open_registry();
    let host = proxy.host();
    let images = images_on(&proxy, 16, "mem-config");
    for (name, entries, bound) in [
        ("a 1 MiB pull secret, 16 images", 28_700, bound_kib(24)),
        ("a 4 MiB docker config, 16 images", 110_000, bound_kib(32)),
    ] {
        let dir = tempdir();
        let config = big_config(entries, &host);
        assert!(config.len() <= 4 << 20, "{} bytes", config.len());
        let path = write_config(dir.path(), &config);
        let mut args = vec![
            "-o",
            "json",
            "--timeout",
            "30s",
            "--plain-http",
            &host,
            "--docker-config",
            path.to_str().unwrap(),
        ];
        args.extend(images.iter().map(String::as_str));
        measured(name, dir.path(), command(dir.path(), &args), 0, bound);
    }
}

// ---------------------------------------------------------------------------------------------
// 14. A FIFO where a file is expected.
// ---------------------------------------------------------------------------------------------

/// A FIFO that no process ever opens for writing: `open` of it blocks for ever.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let ok = Command::new("mkfifo")
        .arg(&path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {}", path.display());
    path
}

#[test]
fn a_fifo_for_any_file_read_at_start_is_a_usage_error_at_once() {
    let proxy = open_registry();
    let host = proxy.host();
    let image = format!("{host}/hostile/fifo:v1");
    let dir = tempdir();
    let fifo = fifo(dir.path(), "fifo");
    let f = fifo.to_str().unwrap();
    // hosts.toml whose `ca`, then `client`, is the FIFO.
    let hosts_dir = |key: &str| {
        let d = dir.path().join(format!("hosts-{key}"));
        std::fs::create_dir_all(d.join(&host)).unwrap();
        std::fs::write(
            d.join(&host).join("hosts.toml"),
            format!("server = \"http://{host}\"\n[host.\"http://{host}\"]\n{key} = \"{f}\"\n"),
        )
        .unwrap();
        d
    };
    let (ca_dir, client_dir) = (hosts_dir("ca"), hosts_dir("client"));
    let cases: &[(&str, Vec<&str>)] = &[
        ("--ca-file", vec!["--ca-file", f]),
        ("--docker-config", vec!["--docker-config", f]),
        ("--registries-conf", vec!["--registries-conf", f]),
        (
            "hosts.toml ca",
            vec!["--hosts-dir", ca_dir.to_str().unwrap()],
        ),
        (
            "hosts.toml client",
            vec!["--hosts-dir", client_dir.to_str().unwrap()],
        ),
        (
            "--image-credential-provider-config",
            vec![
                "--image-credential-provider-config",
                f,
                "--image-credential-provider-bin-dir",
                "/nonexistent",
            ],
        ),
    ];
    for (name, flags) in cases {
        let mut args = vec!["--timeout", "5s", "--plain-http", &host];
        args.extend(flags.iter().copied());
        args.push(&image);
        let out = run(dir.path(), command(dir.path(), &args), false);
        out.assert_no_panic();
        assert_eq!(out.code, 2, "{name}: {}{}", out.stdout, out.stderr);
        assert!(out.stdout.is_empty(), "{name}: {}", out.stdout);
        assert!(
            out.stderr.contains(f) && out.stderr.contains("a FIFO, not a regular file"),
            "{name}: {}",
            out.stderr
        );
        assert!(
            out.took < Duration::from_secs(1),
            "{name}: took {:?}",
            out.took
        );
    }
}

#[test]
fn a_fifo_for_the_service_account_or_web_identity_token_fails_that_source_only() {
    let proxy = open_registry();
    let host = proxy.host();
    let dir = tempdir();
    let sa = dir.path().join("sa");
    std::fs::create_dir(&sa).unwrap();
    fifo(&sa, "token");
    let web = fifo(dir.path(), "web-identity-token");
    // The node lookup reads the service-account token: the FIFO fails it, the image is asked
    // at its registry.
    let image = format!("{host}/hostile/fifo-sa:v1");
    let cmd = command(
        dir.path(),
        &[
            "-o",
            "json",
            "--timeout",
            "3s",
            "--plain-http",
            &host,
            "--node",
            "kind-worker",
            "--if-not-present",
            &image,
        ],
    )
    .env("PULLCHECK_SERVICE_ACCOUNT_DIR", &sa)
    .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    .env("KUBERNETES_SERVICE_PORT", "1");
    let out = run(dir.path(), cmd, false);
    out.assert_no_panic();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    within(out.took, 3);
    assert!(
        out.stderr.contains("no service-account token")
            && out.stderr.contains("a FIFO, not a regular file"),
        "{}",
        out.stderr
    );
    // An ECR image (resolved to a loopback registry that wants credentials) with IRSA whose
    // token file is the FIFO: the provider is unavailable, and the verdict says why.
    let refusing = refusing_registry();
    let host = refusing.host();
    let ecr = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
    let image = format!("{ecr}/hostile/fifo-web:v1");
    let closed = format!("http://{}", closed_loopback_port());
    let cmd = command(
        dir.path(),
        &["-o", "json", "--timeout", "3s", "--plain-http", ecr, &image],
    )
    .without_env_prefix("AWS_")
    .pin(ecr, &host)
    .env("AWS_WEB_IDENTITY_TOKEN_FILE", &web)
    .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/x")
    .env("AWS_ENDPOINT_URL_STS", format!("{closed}/sts"))
    .env("AWS_ENDPOINT_URL_ECR", format!("{closed}/ecr"))
    .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &closed);
    let out = run(dir.path(), cmd, false);
    out.assert_no_panic();
    // No credential could be had from the pod's cloud identity: not counted (the node pulls
    // ECR images with its own), so exit 0, with the cause named.
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    within(out.took, 3);
    let r = out.first();
    assert_eq!(r["status"], "unauthorized", "{r:#}");
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
    assert!(
        r["message"]
            .as_str()
            .is_some_and(|m| m.contains("a FIFO, not a regular file")),
        "{r:#}"
    );
}

/// A loopback port nothing listens on.
fn closed_loopback_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    addr
}

// ---------------------------------------------------------------------------------------------
// 15. A 4 MiB Node object with a million image names.
// ---------------------------------------------------------------------------------------------

/// A Node of 4 MiB: the image `HOST/hostile/app:v1.0`, then `names` of one million `"A"` (no
/// reference) or of `HOST/hostile/app:vN` (each parsed: its repository is the one asked
/// about). Its kubelet is v1.34.4, which starts an image the node holds for any pod, so holding
/// it is proof without a registry request.
fn huge_node(host: &str, alike: bool) -> Vec<u8> {
    let mut body = format!(
        r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"big"}},"status":{{"nodeInfo":{{"kubeletVersion":"v1.34.4"}},"images":[{{"names":["{host}/hostile/app:v1.0"]}},{{"names":["#
    );
    let mut i = 0;
    while body.len() < (4 << 20) - 64 {
        if i > 0 {
            body.push(',');
        }
        if alike {
            body.push_str(&format!("\"{host}/hostile/app:v{i}\""));
        } else {
            body.push_str("\"A\"");
        }
        i += 1;
    }
    body.push_str("]}]}}");
    assert!(body.len() <= 4 << 20, "{} bytes", body.len());
    body.into_bytes()
}

/// `check` of `HOST/hostile/app:v1.0` (IfNotPresent, on the node; `HOST` a loopback registry
/// that has it, should the lookup fail), with the node `big` served by `api`.
fn node_command(
    dir: &Path,
    api: &crate::common::apiserver::ApiServer,
    image: &str,
    args: &[&str],
) -> Pullcheck {
    let mut all = vec!["--node", "big", "--if-not-present", image];
    all.extend(args);
    command(dir, &all)
        .env("PULLCHECK_SERVICE_ACCOUNT_DIR", api.service_account_dir())
        .env("KUBERNETES_SERVICE_HOST", api.host())
        .env("KUBERNETES_SERVICE_PORT", api.port())
}

#[test]
fn a_4_mib_node_of_a_million_names_keeps_the_asked_ones_within_the_deadline_and_memory() {
    use crate::common::apiserver::{ApiServer, Mode};
    let proxy = open_registry();
    let host = proxy.host();
    let image = format!("{host}/hostile/app:v1.0");
    // The release binary (bench/memory.sh) reads the Node within a quarter of --timeout 1s;
    // the debug binary is ~10x slower at parsing 4 MiB, so it gets --timeout 20s.
    let (timeout, secs) = if std::env::var_os(MEMORY_BIN_ENV).is_some() {
        ("1s", 1)
    } else {
        ("20s", 20)
    };
    for (name, alike) in [
        (
            "a 4 MiB Node of a million names that are no reference",
            false,
        ),
        (
            "a 4 MiB Node of 140,000 names of the asked repository",
            true,
        ),
    ] {
        let api = ApiServer::start(Mode::Serve);
        api.add_raw_node("big", huge_node(&host, alike));
        let dir = tempdir();
        let out = measured(
            name,
            dir.path(),
            node_command(
                dir.path(),
                &api,
                &image,
                &["-o", "json", "--timeout", timeout, "--plain-http", &host],
            ),
            0,
            bound_kib(24),
        );
        out.assert_no_panic();
        within(out.took, secs);
        let r = out.first();
        assert_eq!(r["reason"], "present_on_node", "{name}: {r:#}");
        assert!(out.stderr.is_empty(), "{name}: {}", out.stderr);
        assert!(proxy.requests_matching("/hostile/app").is_empty());
    }
}

#[test]
fn sigterm_while_a_4_mib_node_is_read_exits_within_a_second() {
    use crate::common::apiserver::{ApiServer, Mode};
    let api = ApiServer::start(Mode::Serve);
    let hole = black_hole();
    api.add_raw_node("big", huge_node(&hole, false));
    let dir = tempdir();
    let image = format!("{hole}/hostile/app:v1.0");
    let other = format!("{hole}/hostile/node-term:v1");
    for after in [Duration::from_millis(100), Duration::from_millis(600)] {
        let cmd = node_command(
            dir.path(),
            &api,
            &image,
            &["--timeout", "60s", "--plain-http", &hole, &other],
        );
        let (out, after_signal) = run_and_stop(dir.path(), cmd, after);
        out.assert_no_panic();
        assert!(
            after_signal < Duration::from_secs(1),
            "{after:?}: exited {after_signal:?} after SIGTERM"
        );
        assert!(
            out.termination.starts_with("pullcheck: stopped by SIGTERM"),
            "{after:?}: {}",
            out.termination
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 16. Credential-provider plugins: a 1 MiB answer of 100,000 entries; a child that keeps
// stdout open.
// ---------------------------------------------------------------------------------------------

/// A bin dir with the plugin `hostile-plugin` (the shell script `script`) and a config that
/// runs it for every image of `host`. Returns the flags for `check`.
fn plugin_flags(dir: &Path, host: &str, script: &str) -> Vec<String> {
    let bin = dir.join("plugin-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let plugin = bin.join("hostile-plugin");
    std::fs::write(&plugin, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.join("provider-config.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: hostile-plugin\n    matchImages: [\"{host}\"]\n    defaultCacheDuration: 1h\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
        ),
    )
    .unwrap();
    let registry = crate::common::tls_basic_registry();
    vec![
        "--cloud-credentials".into(),
        "off".into(),
        "--ca-file".into(),
        registry.ca_pem_path().unwrap().display().to_string(),
        "--image-credential-provider-config".into(),
        config.display().to_string(),
        "--image-credential-provider-bin-dir".into(),
        bin.display().to_string(),
    ]
}

/// A CredentialProviderResponse of 100,000 entries for other hosts (1 MiB), then the one for
/// `host` with Alice's credentials.
fn huge_plugin_answer(host: &str) -> String {
    let mut s = String::from(
        r#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","auth":{"#,
    );
    // Keys of base 36 (at most 4 characters), so that 100,000 entries fit in 1 MiB.
    for i in 0..100_000u32 {
        let (mut k, mut key) = (i, String::new());
        loop {
            key.push(char::from_digit(k % 36, 36).unwrap());
            k /= 36;
            if k == 0 {
                break;
            }
        }
        s.push_str(&format!(r#""{key}":{{}},"#));
    }
    s.push_str(&format!(
        r#""{host}":{{"username":"{}","password":"{}"}}}}}}"#,
        crate::common::ALICE,
        crate::common::ALICE_PASSWORD
    ));
    assert!(s.len() <= 1 << 20, "{} bytes", s.len());
    s
}

#[test]
fn a_plugin_answer_of_100000_entries_keeps_the_one_that_serves_within_memory() {
    let registry = crate::common::tls_basic_registry();
    let host = registry.host();
    let images: Vec<String> = (0..16)
        .map(|i| {
            registry.push_oci_manifest(&format!("hostile/plugin-big{i}"), "v1");
            format!("{host}/hostile/plugin-big{i}:v1")
        })
        .collect();
    let dir = tempdir();
    let answer = dir.path().join("answer.json");
    std::fs::write(&answer, huge_plugin_answer(&host)).unwrap();
    let script = format!("#!/bin/sh\ncat >/dev/null\ncat '{}'\n", answer.display());
    let flags = plugin_flags(dir.path(), &host, &script);
    let mut args: Vec<&str> = vec!["-o", "json", "--timeout", "10s"];
    args.extend(flags.iter().map(String::as_str));
    args.extend(images.iter().map(String::as_str));
    let out = measured(
        "a plugin answer of 100,000 entries (1 MiB), 16 images",
        dir.path(),
        command(dir.path(), &args),
        0,
        bound_kib(24),
    );
    within(out.took, 10);
    assert_eq!(
        out.first()["auth"],
        format!("credential provider hostile-plugin ({host})"),
        "{}",
        out.stdout
    );
    out.assert_never_shows(crate::common::ALICE, crate::common::ALICE_PASSWORD);
}

#[test]
fn a_plugin_whose_child_keeps_stdout_open_is_heard_and_its_group_is_killed() {
    let registry = crate::common::tls_basic_registry();
    registry.push_oci_manifest("hostile/plugin-child", "v1");
    let host = registry.host();
    let image = format!("{host}/hostile/plugin-child:v1");
    let dir = tempdir();
    let pid_file = dir.path().join("child.pid");
    // The answer, then a child that inherits stdout and lives on; the plugin itself exits.
    let script = format!(
        "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{{\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"kind\":\"CredentialProviderResponse\",\"cacheKeyType\":\"Registry\",\"auth\":{{\"{host}\":{{\"username\":\"{}\",\"password\":\"{}\"}}}}}}'\nsleep 300 &\necho $! > '{}'\nexit 0\n",
        crate::common::ALICE,
        crate::common::ALICE_PASSWORD,
        pid_file.display()
    );
    let flags = plugin_flags(dir.path(), &host, &script);
    let mut args: Vec<&str> = vec!["-o", "json", "--timeout", "6s"];
    args.extend(flags.iter().map(String::as_str));
    args.push(&image);
    let out = run(dir.path(), command(dir.path(), &args), false);
    out.assert_no_panic();
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.took < Duration::from_secs(2),
        "waited for the child: {:?}",
        out.took
    );
    assert_eq!(
        out.first()["auth"],
        format!("credential provider hostile-plugin ({host})")
    );
    // The child is gone (or a zombie no one reaps here: PID 1 of a container may not).
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(
        stat.is_empty() || state.starts_with('Z'),
        "the plugin's child outlived pullcheck: {stat}"
    );
}

// ---------------------------------------------------------------------------------------------
// 17. hosts.toml and registries.conf of 1 MiB; 48,000 registries.
// ---------------------------------------------------------------------------------------------

/// A hosts directory for `host` whose hosts.toml is `text`.
fn hosts_dir_with(dir: &Path, host: &str, text: &str) -> PathBuf {
    let d = dir.join("hosts.d");
    std::fs::create_dir_all(d.join(host)).unwrap();
    std::fs::write(d.join(host).join("hosts.toml"), text).unwrap();
    d
}

/// `[host."http://127.0.0.1:PORT"]` entries (closed loopback ports only) up to `bytes`.
fn many_hosts(server: &str, bytes: usize) -> String {
    let mut s = format!("server = \"http://{server}\"\n");
    let mut i = 0u32;
    while s.len() < bytes - 64 {
        s.push_str(&format!("[host.\"http://127.0.0.1:{}\"]\n", 1 + i % 60_000));
        i += 1;
    }
    s
}

/// `[[registry]]` entries of distinct loopback locations up to `bytes`; with `conflict`, the
/// last repeats the first with another `insecure`.
fn many_registries(bytes: usize, conflict: bool) -> String {
    let mut s = String::new();
    let mut i = 0u32;
    while s.len() < bytes - 128 {
        s.push_str(&format!(
            "[[registry]]\nlocation = \"127.0.{}.{}:5000\"\n",
            i / 250,
            i % 250
        ));
        i += 1;
    }
    if conflict {
        s.push_str("[[registry]]\nlocation = \"127.0.0.0:5000\"\ninsecure = true\n");
    }
    s
}

#[test]
fn a_1_mib_hosts_toml_or_registries_conf_is_refused_naming_the_file_and_the_cap() {
    let proxy = open_registry();
    let host = proxy.host();
    let image = format!("{host}/hostile/big-route:v1");
    let dir = tempdir();
    let hosts = hosts_dir_with(dir.path(), &host, &many_hosts(&host, 1 << 20));
    let conf = dir.path().join("registries.conf");
    std::fs::write(&conf, many_registries(1 << 20, true)).unwrap();
    for (name, flag, path, file) in [
        (
            "a 1 MiB hosts.toml of 40,000 hosts",
            "--hosts-dir",
            hosts.clone(),
            hosts.join(&host).join("hosts.toml"),
        ),
        (
            "a 1 MiB registries.conf of 34,000 registries",
            "--registries-conf",
            conf.clone(),
            conf.clone(),
        ),
    ] {
        let out = measured(
            name,
            dir.path(),
            command(
                dir.path(),
                &[
                    "--timeout",
                    "5s",
                    "--plain-http",
                    &host,
                    flag,
                    path.to_str().unwrap(),
                    &image,
                ],
            ),
            2,
            bound_kib(24),
        );
        out.assert_no_panic();
        assert!(
            out.stderr.contains(file.to_str().unwrap())
                && out
                    .stderr
                    .contains("more than the 10000 pullcheck reads in one file"),
            "{name}: {}",
            out.stderr
        );
        assert!(out.took < Duration::from_secs(1), "{name}: {:?}", out.took);
        assert!(proxy.requests_matching("big-route").is_empty());
    }
}

#[test]
fn files_at_the_caps_are_read_within_memory_and_the_conflict_check_is_linear() {
    let proxy = open_registry();
    let host = proxy.host();
    let image = format!("{host}/hostile/capped-route:v1");
    let dir = tempdir();
    // 100 hosts (the cap) on closed loopback ports, then the registry itself.
    let mut text = format!("server = \"http://{host}\"\n");
    let mut ports = std::collections::BTreeSet::new();
    while ports.len() < 100 {
        ports.insert(closed_loopback_port());
    }
    for (i, addr) in ports.iter().enumerate() {
        text.push_str(&format!(
            "[host.\"http://{addr}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  [host.\"http://{addr}\".header]\n    x-mirror-token = \"t{i}\"\n"
        ));
    }
    // One more host is refused.
    let over = format!("{text}[host.\"http://127.0.0.1:2\"]\n");
    let hosts = hosts_dir_with(dir.path(), &host, &text);
    let out = measured(
        "a hosts.toml of 100 hosts",
        dir.path(),
        command(
            dir.path(),
            &[
                "--timeout",
                "10s",
                "--plain-http",
                &host,
                "--hosts-dir",
                hosts.to_str().unwrap(),
                &image,
            ],
        ),
        0,
        bound_kib(24),
    );
    within(out.took, 10);
    assert!(!out.stderr.contains("ignored"), "{}", out.stderr);
    let hosts = hosts_dir_with(dir.path(), &host, &over);
    let out = run(
        dir.path(),
        command(
            dir.path(),
            &[
                "--timeout",
                "5s",
                "--plain-http",
                &host,
                "--hosts-dir",
                hosts.to_str().unwrap(),
                &image,
            ],
        ),
        false,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("101 hosts, more than the 100 pullcheck reads in one hosts.toml"),
        "{}",
        out.stderr
    );
    // 1,000 registries (the cap), the last in conflict with the first: found at once.
    let conf = dir.path().join("registries.conf");
    let mut text = String::new();
    for i in 0..999 {
        text.push_str(&format!(
            "[[registry]]\nlocation = \"127.0.{}.{}:5000\"\n",
            i / 250,
            i % 250
        ));
    }
    text.push_str("[[registry]]\nlocation = \"127.0.0.0:5000\"\ninsecure = true\n");
    std::fs::write(&conf, &text).unwrap();
    let out = measured(
        "a registries.conf of 1,000 registries in conflict",
        dir.path(),
        command(
            dir.path(),
            &[
                "--timeout",
                "5s",
                "--plain-http",
                &host,
                "--registries-conf",
                conf.to_str().unwrap(),
                &image,
            ],
        ),
        2,
        bound_kib(24),
    );
    assert!(
        out.stderr.contains(
            "registry '127.0.0.0:5000' is defined multiple times with conflicting 'insecure' setting"
        ),
        "{}",
        out.stderr
    );
    assert!(out.took < Duration::from_secs(1), "{:?}", out.took);
}

// ---------------------------------------------------------------------------------------------
// 18. The metadata budget: one second for all of IMDS.
// ---------------------------------------------------------------------------------------------

/// An instance metadata stand-in on loopback that answers each step just inside the time
/// each step used to get: the session token after 0.45 s, the role after 0.9 s, and never the
/// keys. Each answer alone is in time; the three together took 2.35 s.
fn slow_imds() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                let (delay, body) = if line.starts_with("PUT /latest/api/token") {
                    (450, "imds-session")
                } else if line.ends_with("/security-credentials/ HTTP/1.1") {
                    (900, "hostile-role")
                } else {
                    std::thread::sleep(Duration::from_secs(30));
                    return;
                };
                std::thread::sleep(Duration::from_millis(delay));
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn instance_metadata_gets_one_second_in_all() {
    let refusing = refusing_registry();
    let ecr = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
    let image = format!("{ecr}/hostile/imds-budget:v1");
    let dir = tempdir();
    let closed = format!("http://{}", closed_loopback_port());
    let cmd = command(
        dir.path(),
        &[
            "-o",
            "json",
            "--timeout",
            "10s",
            "--plain-http",
            ecr,
            &image,
        ],
    )
    .without_env_prefix("AWS_")
    .pin(ecr, &refusing.host())
    .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", slow_imds())
    .env("AWS_ENDPOINT_URL_STS", format!("{closed}/sts"))
    .env("AWS_ENDPOINT_URL_ECR", format!("{closed}/ecr"));
    let out = run(dir.path(), cmd, false);
    out.assert_no_panic();
    // No cloud credential: the 401 is not counted (exit 0), with the cause named.
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let r = out.first();
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
    assert!(
        r["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not answer in time")),
        "{r:#}"
    );
    // One second for IMDS, the rest for the registry's 401s (the debug binary, on loopback).
    assert!(
        out.took < Duration::from_millis(1600),
        "took {:?}: more than IMDS's second",
        out.took
    );
}

// ---------------------------------------------------------------------------------------------
// 19. A hosts.toml header on a redirect to another host.
// ---------------------------------------------------------------------------------------------

const MIRROR_HEADER_SECRET: &str = "mirror-header-S3cret-0123456789abcdef";

#[test]
fn a_hosts_toml_header_is_not_sent_along_a_redirect_to_another_host() {
    let storage = open_registry();
    let mirror = Proxy::standalone("127.0.0.1", Fault::status(404));
    mirror.rule(Rule::exact("/v2/", Fault::status(200)));
    let target = format!("{}/v2/hostile/redirect/manifests/v1", storage.url());
    mirror.rule(Rule::contains("/manifests/", Fault::redirect(&target)));
    // The image's own registry: a closed loopback port (only the mirror is asked).
    let upstream = closed_loopback_port();
    let dir = tempdir();
    let hosts = hosts_dir_with(
        dir.path(),
        &upstream,
        &format!(
            "server = \"http://{upstream}\"\n[host.\"http://{}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  [host.\"http://{}\".header]\n    x-mirror-token = \"{MIRROR_HEADER_SECRET}\"\n",
            mirror.host(),
            mirror.host()
        ),
    );
    let image = format!("{upstream}/hostile/redirect:v1");
    for output in ["text", "json"] {
        let out = run(
            dir.path(),
            command(
                dir.path(),
                &[
                    "-o",
                    output,
                    "--verbose",
                    "--timeout",
                    "5s",
                    "--hosts-dir",
                    hosts.to_str().unwrap(),
                    &image,
                ],
            ),
            false,
        );
        out.assert_no_panic();
        assert_eq!(out.code, 0, "{output}: {}{}", out.stdout, out.stderr);
        assert!(!out.all().contains(MIRROR_HEADER_SECRET), "{}", out.all());
    }
    let at_mirror = mirror.requests_matching("/manifests/");
    assert!(
        !at_mirror.is_empty()
            && at_mirror.iter().all(|r| r.headers.iter().any(|(n, v)| n
                .eq_ignore_ascii_case("x-mirror-token")
                && v == MIRROR_HEADER_SECRET)),
        "the mirror gets its header: {at_mirror:#?}"
    );
    let at_storage = storage.requests_matching("/hostile/redirect/");
    assert!(!at_storage.is_empty(), "the redirect was followed");
    for r in &at_storage {
        assert!(
            !r.headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("x-mirror-token")
                    || v.contains(MIRROR_HEADER_SECRET)),
            "the mirror's header went to another host: {r:#?}"
        );
        assert_eq!(r.authorization, None, "{r:#?}");
    }
}

// ---------------------------------------------------------------------------------------------
// 20. An image name that looks like flags of the init container.
// ---------------------------------------------------------------------------------------------

#[test]
fn an_image_that_looks_like_flags_is_checked_as_an_invalid_image_by_the_injected_container() {
    let images = [
        "--allow-unauthenticated=*,x y",
        "-o=json --timeout=1s",
        "a,b",
        "<CHANGE ME>",
    ];
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| serde_json::json!({"name": format!("c{i}"), "image": image}))
        .collect();
    let pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"restartPolicy": "Never", "containers": containers},
    })
    .to_string();
    let dir = tempdir();
    let out = pullcheck()
        .args([
            "inject",
            "--image",
            "pullcheck:test",
            "--",
            "--timeout",
            "5s",
        ])
        .stdin(pod)
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let injected: Value = serde_json::from_str(&out.stdout).unwrap();
    let init = &injected["spec"]["initContainers"][0];
    let args: Vec<String> = init["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    // The init container's own command line and environment, run as the kubelet would.
    // The test's own flags right after `check`, before the init container's arguments.
    let mut cmd = pullcheck()
        .arg(&args[0])
        .args([
            "-o",
            "json",
            "--secrets-dir",
            "/nonexistent/pullcheck-secrets",
        ])
        .arg("--termination-log")
        .arg(dir.path().join("termination-log"))
        .args(&args[1..])
        .env_remove("DOCKER_CONFIG")
        .env("HOME", dir.path())
        .without_env_prefix("PULLCHECK_");
    for e in init["env"].as_array().unwrap() {
        if let Some(v) = e["value"].as_str() {
            cmd = cmd.env(e["name"].as_str().unwrap(), v);
        }
    }
    let out = run(dir.path(), cmd, false);
    out.assert_no_panic();
    assert_eq!(out.code, 3, "args {args:?}: {}{}", out.stdout, out.stderr);
    let checked = crate::common::statuses(&out.json());
    for image in images {
        assert!(
            checked.contains(&(image.to_string(), "invalid_reference".to_string())),
            "{image:?} is not checked as one invalid image: {checked:?} (args {args:?})"
        );
    }
    assert_eq!(checked.len(), images.len(), "{checked:?}");
}

// ---------------------------------------------------------------------------------------------
// 21. inject on tens of thousands of documents.
// ---------------------------------------------------------------------------------------------

/// `n` Pod documents of one container each (~140 bytes a document).
fn pod_documents(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec:\n  restartPolicy: Never\n  containers: [{{name: c, image: \"reg.example/app:{i}\"}}]\n"
            )
        })
        .collect()
}

/// The bound docs/performance.md states for inject on these Pods: 8 times the input, plus the binary's
/// own 16 MiB (it was 48 times, when the whole input's tree was held).
fn inject_bound_kib(input_bytes: usize) -> u64 {
    (8 * input_bytes as u64 + (16 << 20)) / 1024
}

#[test]
fn inject_on_30000_documents_is_linear_and_its_memory_a_multiple_of_the_input() {
    let mut took = Vec::new();
    for n in [10_000, 30_000] {
        let dir = tempdir();
        let input = dir.path().join("pods.yaml");
        let text = pod_documents(n);
        std::fs::write(&input, &text).unwrap();
        let cmd = pullcheck()
            .args(["inject", "--image", "pullcheck:test", "-f"])
            .arg(&input);
        let out = measured(
            &format!("inject, {n} documents ({} bytes)", text.len()),
            dir.path(),
            cmd,
            0,
            inject_bound_kib(text.len()),
        );
        took.push(out.took);
    }
    // Three times the documents: about three times the time (it was quadratic: 60 s for
    // 100,000 against 0.57 s for 10,000).
    assert!(
        took[1] < took[0] * 5,
        "10,000 documents {:?}, 30,000 {:?}",
        took[0],
        took[1]
    );
}

// ---------------------------------------------------------------------------------------------
// 22. Echoed secrets, redacted by value.
// ---------------------------------------------------------------------------------------------

/// A web identity token (a JWT's shape), longer than anything a message keeps whole.
const WEB_IDENTITY_JWT: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6Imhvc3RpbGUifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6aG9zdGlsZSJ9.c2lnbmF0dXJlLW9mLXRoZS1ob3N0aWxlLXRva2Vu";

/// No output holds `secret`, nor any 16 characters of it from its start.
fn assert_no_prefix(out: &Outcome, what: &str, secret: &str) {
    let all = out.all();
    assert!(
        !all.contains(&secret[..16]),
        "{what}: a prefix of the secret shows in:\n{all}"
    );
}

/// Runs the check in text, JSON and `--verbose` output against an STS that answers 400 and
/// quotes the token it was sent (whole in `Message`, `code_echo` in `Code`), with `token` as
/// the pod's web identity and also pasted into an image. Asserts what every output must show
/// (exit 3, the pasted image redacted in the termination message, the echo redacted, `token`
/// nowhere) and returns each output's outcome for the caller's own checks.
fn sts_echo_runs(token: &str, code_echo: &str) -> Vec<(&'static str, Outcome)> {
    let sts = Proxy::standalone(
        "127.0.0.1",
        Fault::respond(Canned::new(400).body(format!(
            "<ErrorResponse><Error><Code>InvalidIdentityToken {code_echo}</Code><Message>token {token} is not valid</Message></Error></ErrorResponse>"
        ))),
    );
    let refusing = refusing_registry();
    let ecr = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
    let image = format!("{ecr}/hostile/echo:v1");
    // The termination message shows images as given: one that holds the token (a pod spec
    // pasted with a secret in it) is redacted there too.
    let pasted = format!("echo/{token}");
    let dir = tempdir();
    let token_file = dir.path().join("web-identity-token");
    std::fs::write(&token_file, token).unwrap();
    let mut outcomes = Vec::new();
    for (what, flags) in [
        ("text", vec!["-o", "text"]),
        ("json", vec!["-o", "json"]),
        ("--verbose", vec!["-o", "text", "--verbose"]),
    ] {
        let mut args = flags.clone();
        // The pasted image's verdict comes before the provider reads the token: the token is
        // registered at the start, so that this --verbose line is redacted too.
        args.extend(["--timeout", "5s", "--plain-http", ecr, &image, &pasted]);
        let cmd = command(dir.path(), &args)
            .without_env_prefix("AWS_")
            .pin(ecr, &refusing.host())
            .env("AWS_WEB_IDENTITY_TOKEN_FILE", &token_file)
            .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/x")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL_STS", sts.url())
            .env(
                "AWS_ENDPOINT_URL_ECR",
                format!("http://{}", closed_loopback_port()),
            );
        let out = run(dir.path(), cmd, false);
        out.assert_no_panic();
        assert!(!sts.requests().is_empty(), "{what}: STS was asked");
        // 3: the pasted image is an invalid reference (which outranks the 401).
        assert_eq!(out.code, 3, "{what}: {}{}", out.stdout, out.stderr);
        assert!(
            out.termination.contains("echo/<redacted>"),
            "{what}: termination message: {}",
            out.termination
        );
        assert!(
            out.all().contains("<redacted>"),
            "{what}: the echo is in the message, redacted: {}",
            out.all()
        );
        out.assert_never_shows("x", token);
        outcomes.push((what, out));
    }
    outcomes
}

#[test]
fn a_token_echoed_by_sts_is_redacted_in_text_json_verbose_and_the_termination_message() {
    for (what, out) in sts_echo_runs(WEB_IDENTITY_JWT, &WEB_IDENTITY_JWT[..40]) {
        assert_no_prefix(&out, what, WEB_IDENTITY_JWT);
    }
}

#[test]
fn a_short_token_echoed_by_sts_is_redacted_where_it_stands_as_a_token_in_every_output() {
    // Shorter than 8 characters: replaced where it stands as a whole token (the echo, the
    // pasted image's last component), not inside words. Upper case: `echo/Pw-7x` is no valid
    // reference, so it is never looked up.
    const SHORT_TOKEN: &str = "Pw-7x";
    for (what, out) in sts_echo_runs(SHORT_TOKEN, SHORT_TOKEN) {
        assert!(
            out.stderr.contains("<redacted>") || out.stdout.contains("<redacted>"),
            "{what}: the report or stderr shows the echo redacted: {}",
            out.all()
        );
    }
}

#[test]
fn a_secret_flag_value_is_never_shown_in_the_argument_errors() {
    // A password that starts with `--` reads as a flag: clap's error quotes it.
    let dir = tempdir();
    for args in [
        vec!["--creds", "--hunter2:pw", "reg.example/a:1"],
        vec![
            "--creds",
            "user:--pw1",
            "--creds",
            "--pw1",
            "reg.example/a:1",
        ],
        vec!["--creds=--x:Sekrit-pw", "--creds", "a:b", "reg.example/a:1"],
    ] {
        let cmd = pullcheck().arg("check").args(&args);
        let out = run(dir.path(), cmd, false);
        out.assert_no_panic();
        assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("error"), "{args:?}: {}", out.stderr);
        for secret in ["hunter2", "--pw1", "Sekrit"] {
            assert!(
                !out.all().contains(secret),
                "{args:?}: {secret} shows in:\n{}",
                out.all()
            );
        }
    }
}

#[test]
fn a_service_account_token_echoed_by_the_api_server_is_redacted_in_the_node_warning() {
    use crate::common::apiserver::{ApiServer, Mode};
    let proxy = open_registry();
    let host = proxy.host();
    let image = format!("{host}/hostile/echo-node:v1");
    let api = ApiServer::start(Mode::Serve);
    // A 200 that is no Node, quoting the token: serde's message quotes the value.
    api.add_raw_node(
        "big",
        format!(
            r#"{{"kind":"Node","status":{{"images":"echo {}"}}}}"#,
            api.token()
        )
        .into_bytes(),
    );
    let dir = tempdir();
    for output in ["text", "json"] {
        let out = run(
            dir.path(),
            node_command(
                dir.path(),
                &api,
                &image,
                &["-o", output, "--timeout", "5s", "--plain-http", &host],
            ),
            false,
        );
        out.assert_no_panic();
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("node images not looked up") && out.stderr.contains("<redacted>"),
            "{output}: {}",
            out.stderr
        );
        assert!(
            api.token().len() > 16,
            "the stand-in's token is long enough"
        );
        out.assert_never_shows("x", api.token());
        assert_no_prefix(&out, output, api.token());
    }
}
