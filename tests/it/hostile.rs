//! Hostile registries and huge inputs: one test per defect an adversarial review found. Each
//! asserts the corrected behaviour: the exit code, the wall time (within `--timeout` + 1 s),
//! the exit within 1 s of SIGTERM, the peak RSS, and that no output holds a secret, its base64
//! forms or a raw control byte.

use crate::common::proxy::{Canned, Fault, Proxy, Rule};
use crate::common::pullcheck_cmd;
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
    cmd.arg("check");
    if !args.contains(&"--secrets-dir") {
        cmd.args(["--secrets-dir", "/nonexistent/pullcheck-secrets"]);
    }
    cmd.arg("--termination-log")
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
fn run_and_stop(dir: &Path, mut cmd: Command, after: Duration) -> (Outcome, Duration) {
    let started = Instant::now();
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run pullcheck");
    std::thread::sleep(after);
    let sent = Instant::now();
    terminate(&child);
    let status = wait_with_limit(child, Duration::from_secs(10)).status;
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

/// A server that accepts connections and never answers.
fn black_hole() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    addr
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
    let mut cmd = command(
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
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("PATH", path);
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

fn can_run_dns_tests() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        eprintln!("skipped: the resolver stand-in needs root (port 53, unshare -m, mount)");
        return false;
    }
    let unshare = Command::new("unshare")
        .args(["-m", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !unshare {
        eprintln!("skipped: unshare -m is not allowed here");
    }
    unshare
}

/// `pullcheck check ARGS` in a private mount namespace whose `/etc/resolv.conf` names only
/// `nameserver`.
fn with_resolver(dir: &Path, nameserver: &str, args: &[&str]) -> Command {
    let resolv = dir.join("resolv.conf");
    std::fs::write(&resolv, format!("nameserver {nameserver}\n")).unwrap();
    let inner = command(dir, args);
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
    if !can_run_dns_tests() {
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
    if !can_run_dns_tests() {
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
            &["-o", "json", "--timeout", "10s", image],
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
    let mut cmd = command(
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
    );
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok);
    let out = wait_with_limit(child, Duration::from_secs(5));
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
/// Kubernetes Secret holds 1 MiB). Without it, the pod's limit (32 MiB, as `inject` sets it):
/// the tests run the debug binary, whose own footprint is ~9 MiB above the release binary's
/// (13.5 MiB against 4.4 MiB for one image).
fn bound_kib(target_mib: u64) -> u64 {
    if std::env::var_os(MEMORY_BIN_ENV).is_some() {
        target_mib * 1024
    } else {
        32 * 1024
    }
}

fn measured(name: &str, dir: &Path, cmd: Command, code: i32, bound_kib: u64) -> Outcome {
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
        eprintln!("skipped: /usr/bin/time (Debian package `time`) is not installed");
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
        measured(
            name,
            dir.path(),
            command(dir.path(), &args),
            4,
            bound_kib(24),
        );
    }
}

#[test]
fn peak_memory_stays_bounded_for_huge_credential_files() {
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("skipped: /usr/bin/time (Debian package `time`) is not installed");
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
