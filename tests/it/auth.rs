//! Credentials exactly as the kubelet uses them, against a real token-auth registry.
//!
//! The registry is distribution 2.8.2 with `auth: token`; its token server runs in this process
//! (`common::token`): anonymous clients may pull `public/*` only (for anything else they get a
//! token without access, so the registry answers 401 `insufficient_scope`, as Docker Hub does for
//! private and missing repositories alike), alice may pull everything, a wrong password is a 401
//! from the token server. Every run of pullcheck here is checked for leaked secrets: no password,
//! no base64 `user:password`, no token the token server issued, on stdout or stderr.

use crate::check::Run;
use crate::common::{
    ALICE, ALICE_PASSWORD, Registry, Request, TokenRequest, TokenServer, block_on, media,
    pullcheck,
    token::{TOKEN_ISSUER, TOKEN_LIFETIME_SECS, TOKEN_SERVICE},
    token_registry,
};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The wrong password used against alice.
const WRONG_PASSWORD: &str = "wr0ng-Pa55word";

/// A token-auth registry, its CA file and a temp dir for docker configs; pullcheck runs with
/// `HOME` = `<dir>/home` (no workstation docker config unless a test writes one) and no
/// `DOCKER_CONFIG`, so the machine's own `~/.docker/config.json` never takes part.
struct Env<'a> {
    reg: &'a Registry,
    host: String,
    ca: String,
    dir: tempfile::TempDir,
    /// Put first on `PATH` (fake credential helpers).
    bin: Option<PathBuf>,
}

fn env() -> Env<'static> {
    env_of(token_registry())
}

fn env_of(reg: &Registry) -> Env<'_> {
    Env {
        reg,
        host: reg.host(),
        ca: reg.ca_pem_path().unwrap().to_str().unwrap().to_string(),
        dir: tempfile::tempdir().unwrap(),
        bin: None,
    }
}

impl Env<'_> {
    fn tokens(&self) -> &TokenServer {
        self.reg.token_server().unwrap()
    }

    /// `127.0.0.1:PORT/<path>`.
    fn image(&self, path: &str) -> String {
        format!("{}/{path}", self.host)
    }

    /// A docker config file with the given `(key, password)` entries for alice, in order.
    fn config(&self, name: &str, entries: &[(&str, &str)]) -> PathBuf {
        let auths: Vec<String> = entries
            .iter()
            .map(|(key, password)| {
                format!(
                    r#""{key}": {{"auth": "{}"}}"#,
                    STANDARD.encode(format!("{ALICE}:{password}"))
                )
            })
            .collect();
        self.raw_config(name, &format!(r#"{{"auths": {{{}}}}}"#, auths.join(", ")))
    }

    /// `HOME` of the runs.
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn raw_config(&self, name: &str, json: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, json).unwrap();
        path
    }

    /// `pullcheck check -o OUTPUT --ca-file CA [--docker-config C]... IMAGES`, no secrets dir,
    /// checked for leaks.
    fn run(&self, output: &str, configs: &[&Path], images: &[&str]) -> Run {
        self.run_in(output, Creds::Configs(configs), images)
    }

    /// Like [`Env::run`], with credentials from docker configs or a secrets dir (as mounted
    /// pull secrets). No `DOCKER_CONFIG`, no `PULLCHECK_*` variable, no termination log.
    fn run_in(&self, output: &str, creds: Creds<'_>, images: &[&str]) -> Run {
        let mut cmd = pullcheck()
            .arg("check")
            .args(["-o", output, "--ca-file", self.ca.as_str()])
            .args(["--termination-log", ""])
            .env("HOME", self.home())
            .env_remove("DOCKER_CONFIG")
            // No setting from the environment of the test run.
            .without_env_prefix("PULLCHECK_");
        if let Some(bin) = &self.bin {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut dirs = vec![bin.clone()];
            dirs.extend(std::env::split_paths(&path));
            cmd = cmd.env("PATH", std::env::join_paths(dirs).unwrap());
        }
        match creds {
            Creds::Configs(configs) => {
                cmd = cmd.args(["--secrets-dir", "/nonexistent/pullcheck-secrets"]);
                for c in configs {
                    cmd = cmd.arg("--docker-config").arg(c);
                }
            }
            Creds::SecretsDir(dir) => {
                cmd = cmd.arg("--secrets-dir").arg(dir);
            }
        }
        let run = cmd.args(images).run();
        assert_no_secrets(self.tokens(), &run);
        run
    }

    /// Runs one image as text, then as JSON; asserts the exit code and the status word of both
    /// and the reason in the JSON, and returns the JSON result of the image.
    fn expect(
        &self,
        configs: &[&Path],
        image: &str,
        code: i32,
        status: &str,
        reason: &str,
    ) -> Value {
        self.expect_in(Creds::Configs(configs), image, code, status, reason)
    }

    /// [`Env::expect`] with any [`Creds`].
    fn expect_in(
        &self,
        creds: Creds<'_>,
        image: &str,
        code: i32,
        status: &str,
        reason: &str,
    ) -> Value {
        let text = self.run_in("text", creds, &[image]);
        assert_eq!(
            text.code, code,
            "{creds:?}, text: {}{}",
            text.stdout, text.stderr
        );
        assert!(
            text.stdout.starts_with(&format!("{status} ")),
            "text: {}",
            text.stdout
        );
        let json = self.run_in("json", creds, &[image]);
        assert_eq!(json.code, code, "json: {}{}", json.stdout, json.stderr);
        assert_eq!(json.json()["exit_code"], code);
        let r = json.image(image);
        assert_eq!(r["status"], status, "{r:#}");
        assert_eq!(r["reason"], reason, "{r:#}");
        r
    }
}

/// Where pullcheck gets credentials from in a run.
#[derive(Debug, Clone, Copy)]
enum Creds<'a> {
    /// `--docker-config` files, in order (and no secrets dir).
    Configs(&'a [&'a Path]),
    /// `--secrets-dir` (and no docker config).
    SecretsDir(&'a Path),
}

fn basic(password: &str) -> String {
    STANDARD.encode(format!("{ALICE}:{password}"))
}

/// No password, base64 `user:password` or issued token (nor its claims or signature part) on
/// stdout or stderr.
fn assert_no_secrets(tokens: &TokenServer, run: &Run) {
    let all = format!("{}\n{}", run.stdout, run.stderr);
    for secret in [
        ALICE_PASSWORD.to_string(),
        WRONG_PASSWORD.to_string(),
        basic(ALICE_PASSWORD),
        basic(WRONG_PASSWORD),
    ] {
        assert!(!all.contains(&secret), "leaked {secret:?}:\n{all}");
    }
    for token in tokens.issued_tokens() {
        let parts: Vec<&str> = token.split('.').collect();
        for secret in [token.as_str(), parts[1], parts[2]] {
            assert!(!all.contains(secret), "leaked a token:\n{all}");
        }
    }
}

/// The pull-token requests (scope exactly `repository:<repo>:pull`), oldest first.
fn pull_tokens(tokens: &TokenServer, repo: &str) -> Vec<TokenRequest> {
    tokens
        .requests_for(repo)
        .into_iter()
        .filter(|r| r.is_pull_of(repo))
        .collect()
}

/// `METHOD PATH STATUS` of the registry's requests for `repo`, excluding the fixture pushes;
/// the path without its query (`tags/list?n=…` may ask for any page size).
fn reads(reg: &Registry, repo: &str) -> Vec<String> {
    reg.requests_for(repo)
        .iter()
        .filter(|r| r.method == "HEAD" || r.method == "GET")
        .map(|r| {
            let path = r.path.split_once('?').map_or(r.path.as_str(), |(p, _)| p);
            format!("{} {path} {}", r.method, r.status)
        })
        .collect()
}

fn decode_segment(segment: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).unwrap()).unwrap()
}

// --- The harness's token server and the real registry agree ---------------------------------

#[test]
fn token_server_speaks_distributions_token_auth() {
    let e = env();
    let ts = e.tokens();
    let private = "private/selftest";
    let public = "public/selftest";
    let digest = e.reg.push_oci_manifest(private, "v1");
    e.reg.push_oci_manifest(public, "v1");
    let client = e.reg.http_client();
    let base = e.reg.base_url();
    let head = |repo: &str, token: &str| {
        block_on(async {
            let resp = client
                .head(format!("{base}/v2/{repo}/manifests/v1"))
                .header("Accept", media::ACCEPT_ALL)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            let challenge = resp
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_string());
            let digest = resp
                .headers()
                .get("docker-content-digest")
                .map(|v| v.to_str().unwrap().to_string());
            (resp.status().as_u16(), challenge, digest)
        })
    };

    // The ping names the realm and the service, with no scope.
    let ping = block_on(async {
        let resp = client.get(format!("{base}/v2/")).send().await.unwrap();
        let h = resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_string();
        (resp.status().as_u16(), h)
    });
    assert_eq!(
        ping,
        (
            401,
            format!(
                "Bearer realm=\"{}\",service=\"{TOKEN_SERVICE}\"",
                ts.realm()
            )
        )
    );

    // alice's token: ES256 with x5c, aud a plain string, access as granted.
    let alice = ts.fetch_token(
        &client,
        Some((ALICE, ALICE_PASSWORD)),
        &format!("repository:{private}:pull"),
    );
    let parts: Vec<&str> = alice.split('.').collect();
    assert_eq!(parts.len(), 3);
    let header = decode_segment(parts[0]);
    assert_eq!(header["alg"], "ES256");
    assert_eq!(header["typ"], "JWT");
    assert_eq!(header["x5c"].as_array().unwrap().len(), 1);
    assert_eq!(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().len(), 64, "r||s");
    let claims = decode_segment(parts[1]);
    assert_eq!(claims["iss"], TOKEN_ISSUER);
    assert_eq!(claims["aud"], TOKEN_SERVICE);
    assert_eq!(claims["sub"], ALICE);
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        TOKEN_LIFETIME_SECS as i64
    );
    assert_eq!(
        claims["access"],
        serde_json::json!([{"type": "repository", "name": private, "actions": ["pull"]}])
    );
    assert_eq!(head(private, &alice), (200, None, Some(digest.clone())));

    // Anonymous: pull on public/*, a token without access elsewhere, which the registry refuses
    // with insufficient_scope.
    let anon_public = ts.fetch_token(&client, None, &format!("repository:{public}:pull"));
    assert_eq!(head(public, &anon_public).0, 200);
    let anon_private = ts.fetch_token(&client, None, &format!("repository:{private}:pull"));
    let claims = decode_segment(anon_private.split('.').nth(1).unwrap());
    assert_eq!(claims["access"], serde_json::json!([]));
    assert_eq!(claims["sub"], "");
    let (status, challenge, _) = head(private, &anon_private);
    assert_eq!(status, 401);
    assert_eq!(
        challenge.unwrap(),
        format!(
            "Bearer realm=\"{}\",service=\"{TOKEN_SERVICE}\",scope=\"repository:{private}:pull\",error=\"insufficient_scope\"",
            ts.realm()
        )
    );

    // An expired token (beyond distribution's 60 s leeway): invalid_token.
    ts.expire_next_token_for(private);
    let expired = ts.fetch_token(
        &client,
        Some((ALICE, ALICE_PASSWORD)),
        &format!("repository:{private}:pull"),
    );
    let (status, challenge, _) = head(private, &expired);
    assert_eq!(status, 401);
    assert!(
        challenge.unwrap().ends_with(",error=\"invalid_token\""),
        "expired token"
    );
    // The next one is fresh again.
    let fresh = ts.fetch_token(
        &client,
        Some((ALICE, ALICE_PASSWORD)),
        &format!("repository:{private}:pull"),
    );
    assert_eq!(head(private, &fresh).0, 200);

    // The token answer, and a wrong password.
    let mut url = reqwest::Url::parse(&ts.realm()).unwrap();
    url.query_pairs_mut()
        .append_pair("service", TOKEN_SERVICE)
        .append_pair("scope", &format!("repository:{private}:pull"))
        .append_pair("scope", &format!("repository:{public}:pull"));
    let answer = |password: &str| {
        let url = url.clone();
        block_on(async {
            let resp = client
                .get(url)
                .basic_auth(ALICE, Some(password))
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
            (status, body)
        })
    };
    let (status, body) = answer(ALICE_PASSWORD);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token"], body["access_token"]);
    assert_eq!(body["expires_in"], TOKEN_LIFETIME_SECS);
    let issued_at = body["issued_at"].as_str().unwrap();
    assert!(
        issued_at.len() == 20 && issued_at.ends_with('Z') && issued_at.as_bytes()[10] == b'T',
        "{issued_at}"
    );
    let claims = decode_segment(body["token"].as_str().unwrap().split('.').nth(1).unwrap());
    assert_eq!(claims["access"].as_array().unwrap().len(), 2, "{claims}");
    let (status, body) = answer(WRONG_PASSWORD);
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["errors"][0]["code"], "UNAUTHORIZED");

    // All recorded, with their tokens; the wrong password has none.
    let log = ts.requests_for(private);
    let last = log.last().unwrap();
    assert_eq!(
        (last.user.as_deref(), last.status, last.token.is_none()),
        (Some(ALICE), 401, true)
    );
    assert!(log.iter().any(|r| r.expired));
    let tokens = ts.issued_tokens();
    for t in [&alice, &anon_public, &anon_private, &expired, &fresh] {
        assert!(tokens.contains(t));
    }
    let unique: std::collections::HashSet<_> = tokens.iter().collect();
    assert_eq!(unique.len(), tokens.len(), "every token is unique (jti)");
}

// --- pullcheck against it -------------------------------------------------------------------

#[test]
fn anonymous_pulls_a_public_image() {
    let e = env();
    let repo = "public/anon-app";
    let digest = e.reg.push_oci_manifest(repo, "v1");
    let image = e.image(&format!("{repo}:v1"));
    let r = e.expect(&[], &image, 0, "ok", "found");
    assert_eq!(r["digest"], digest.as_str());
    assert_eq!(r["auth"], "anonymous");
    let tokens = pull_tokens(e.tokens(), repo);
    assert!(!tokens.is_empty());
    for t in &tokens {
        assert_eq!(t.user, None, "anonymous token request: {t:?}");
        assert_eq!(t.granted, [(repo.to_string(), vec!["pull".to_string()])]);
    }
    // A missing tag of a public repository: anonymous may list its tags, so it is told apart.
    let missing = e.image(&format!("{repo}:v9"));
    e.expect(&[], &missing, 3, "not_found", "tag_missing");
}

#[test]
fn anonymous_gets_insufficient_scope_for_private_and_missing_repositories() {
    let e = env();
    e.reg.push_oci_manifest("private/anon-app", "v1");
    for image in [
        e.image("private/anon-app:v1"),
        e.image("private/anon-missing:v1"),
    ] {
        let r = e.expect(&[], &image, 5, "unauthorized", "insufficient_scope");
        assert_eq!(r["auth"], "anonymous");
        let message = r["message"].as_str().unwrap();
        assert!(message.contains(&e.host), "names the registry: {message}");
        assert!(
            message.contains("does not exist") && message.contains("private"),
            "says missing or private: {message}"
        );
        assert!(!r["hint"].as_str().unwrap().is_empty());
        assert_eq!(r["attempts"], 1, "a refusal is not retried: {r:#}");
    }
    // What the registry saw: HEADs refused for scope, no manifest GET.
    let seen = reads(e.reg, "private/anon-app");
    assert!(
        seen.iter()
            .all(|r| r == "HEAD /v2/private/anon-app/manifests/v1 401"),
        "{seen:#?}"
    );
    let tokens = pull_tokens(e.tokens(), "private/anon-missing");
    assert!(
        tokens
            .iter()
            .all(|t| t.user.is_none() && t.granted.is_empty())
    );
}

#[test]
fn alice_pulls_private_images_with_a_docker_config() {
    let e = env();
    let repo = "private/alice-app";
    let digest = e.reg.push_oci_manifest(repo, "v1");
    let config = e.config("alice.json", &[(&e.host, ALICE_PASSWORD)]);
    let image = e.image(&format!("{repo}:v1"));
    let r = e.expect(&[&config], &image, 0, "ok", "found");
    assert_eq!(r["digest"], digest.as_str());
    let auth = r["auth"].as_str().unwrap();
    assert!(
        auth.contains("alice.json") && auth.ends_with(&format!("key {}", e.host)),
        "names the file and the key: {auth}"
    );
    let tokens = pull_tokens(e.tokens(), repo);
    assert!(
        tokens
            .iter()
            .all(|t| t.user.as_deref() == Some(ALICE) && t.status == 200)
    );
}

#[test]
fn alice_sees_missing_repositories_and_tags_as_not_found() {
    let e = env();
    e.reg.push_oci_manifest("private/alice-tags", "v1");
    let config = e.config("alice.json", &[(&e.host, ALICE_PASSWORD)]);

    // distribution: the manifest HEAD answers 404 (MANIFEST_UNKNOWN), tags/list NAME_UNKNOWN.
    let missing_repo = e.image("private/alice-missing:v1");
    let r = e.expect(
        &[&config],
        &missing_repo,
        3,
        "not_found",
        "repository_missing",
    );
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("repository private/alice-missing does not exist"),
        "{message}"
    );
    assert!(message.contains(ALICE), "says who asked: {message}");
    // Two runs (text, JSON), each an anonymous HEAD (challenged: no version check comes
    // first), a HEAD with alice's token and a tags/list (access-log order is not request
    // order).
    let mut seen = reads(e.reg, "private/alice-missing");
    seen.sort();
    assert_eq!(
        seen,
        [
            "GET /v2/private/alice-missing/tags/list 404",
            "GET /v2/private/alice-missing/tags/list 404",
            "HEAD /v2/private/alice-missing/manifests/v1 401",
            "HEAD /v2/private/alice-missing/manifests/v1 401",
            "HEAD /v2/private/alice-missing/manifests/v1 404",
            "HEAD /v2/private/alice-missing/manifests/v1 404",
        ]
    );

    let missing_tag = e.image("private/alice-tags:v2");
    let r = e.expect(&[&config], &missing_tag, 3, "not_found", "tag_missing");
    assert!(
        r["message"].as_str().unwrap().contains("tag \"v2\""),
        "{r:#}"
    );
}

#[test]
fn a_wrong_password_is_rejected_by_the_token_server() {
    let e = env();
    let repo = "private/wrong-pw";
    e.reg.push_oci_manifest(repo, "v1");
    let config = e.config("wrong.json", &[(&e.host, WRONG_PASSWORD)]);
    let image = e.image(&format!("{repo}:v1"));
    let r = e.expect(
        &[&config],
        &image,
        5,
        "unauthorized",
        "credentials_rejected",
    );
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("user alice"), "{message}");
    assert!(message.contains(&e.host), "{message}");
    assert!(
        message.contains("wrong.json"),
        "names the source: {message}"
    );
    assert_eq!(r["attempts"], 1, "a rejection is not retried: {r:#}");
    let tokens = pull_tokens(e.tokens(), repo);
    assert_eq!(tokens.len(), 2, "one per run (text, JSON): {tokens:#?}");
    assert!(
        tokens
            .iter()
            .all(|t| t.status == 401 && t.user.as_deref() == Some(ALICE))
    );
    // The registry saw only the anonymous HEAD that learnt its challenge, once per run: with
    // no token, no HEAD as alice.
    assert_eq!(
        reads(e.reg, repo),
        [
            format!("HEAD /v2/{repo}/manifests/v1 401"),
            format!("HEAD /v2/{repo}/manifests/v1 401"),
        ]
    );
}

#[test]
fn an_expired_token_is_fetched_again_once() {
    let e = env();
    let config = e.config("alice.json", &[(&e.host, ALICE_PASSWORD)]);
    for (repo, configs) in [
        ("private/expired", vec![config.as_path()]),
        ("public/expired", vec![]),
    ] {
        e.reg.push_oci_manifest(repo, "v1");
        let image = e.image(&format!("{repo}:v1"));
        e.tokens().expire_next_token_for(repo);
        let run = e.run("json", &configs, &[&image]);
        assert_eq!(run.code, 0, "{repo}: {}{}", run.stdout, run.stderr);
        assert_eq!(run.image(&image)["status"], "ok");
        let tokens = pull_tokens(e.tokens(), repo);
        let expired: Vec<bool> = tokens.iter().map(|t| t.expired).collect();
        assert_eq!(
            expired,
            [true, false],
            "{repo}: exactly one more token: {tokens:#?}"
        );
        let mut seen = reads(e.reg, repo);
        seen.sort();
        assert_eq!(
            seen,
            [
                format!("HEAD /v2/{repo}/manifests/v1 200"),
                format!("HEAD /v2/{repo}/manifests/v1 401"),
                format!("HEAD /v2/{repo}/manifests/v1 401"),
            ],
            "{repo}: the anonymous HEAD challenged, the expired token refused, the fresh one taken"
        );
    }
}

#[test]
fn requests_are_one_head_per_image_after_the_challenge_and_one_token_request_per_run() {
    // A registry of its own, so that no other test's requests are counted.
    let reg = Registry::start_token_auth(ALICE, ALICE_PASSWORD);
    let reg = &reg;
    let e = env_of(reg);
    let config = e.config("alice.json", &[(&e.host, ALICE_PASSWORD)]);
    for (repo, tag) in [
        ("private/count-a", "v1"),
        ("private/count-a", "v2"),
        ("private/count-b", "v1"),
        ("public/count-c", "v1"),
    ] {
        reg.push_oci_manifest(repo, tag);
    }
    let log_lines = |from: usize| -> Vec<Request> {
        let all = reg.requests();
        all[from..].to_vec()
    };

    // One image, anonymous.
    let before = reg.requests().len();
    let tokens_before = e.tokens().requests().len();
    let image = e.image("public/count-c:v1");
    let run = e.run("json", &[], &[&image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    reg.wait_for_requests(|all| all.len() >= before + 2);
    let ours: Vec<String> = log_lines(before)
        .iter()
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect();
    // No version check: the HEAD itself is challenged, then sent with the token.
    assert_eq!(
        ours,
        [
            "HEAD /v2/public/count-c/manifests/v1 401",
            "HEAD /v2/public/count-c/manifests/v1 200"
        ]
    );
    let tokens = &e.tokens().requests()[tokens_before..];
    assert_eq!(tokens.len(), 1, "{tokens:#?}");
    assert!(tokens[0].is_pull_of("public/count-c"));

    // Four images in three repositories, as alice, in one run.
    let before = reg.requests().len();
    let tokens_before = e.tokens().requests().len();
    let images = [
        e.image("private/count-a:v1"),
        e.image("private/count-a:v2"),
        e.image("private/count-b:v1"),
        e.image("public/count-c:v1"),
    ];
    let image_refs: Vec<&str> = images.iter().map(String::as_str).collect();
    let run = e.run("json", &[&config], &image_refs);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    reg.wait_for_requests(|all| all.len() >= before + 5);
    let mut ours: Vec<String> = log_lines(before)
        .iter()
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect();
    ours.sort();
    // The images start together, so each one that starts before the registry's challenge is
    // known asks anonymously once (at least the first, at most all four); then one HEAD each,
    // with the one token. No version check.
    let (challenged, answered): (Vec<String>, Vec<String>) =
        ours.into_iter().partition(|l| l.ends_with(" 401"));
    assert_eq!(
        answered,
        [
            "HEAD /v2/private/count-a/manifests/v1 200",
            "HEAD /v2/private/count-a/manifests/v2 200",
            "HEAD /v2/private/count-b/manifests/v1 200",
            "HEAD /v2/public/count-c/manifests/v1 200",
        ]
    );
    let mut once = challenged.clone();
    once.dedup();
    assert!(
        (1..=4).contains(&challenged.len())
            && once == challenged
            && challenged.iter().all(|l| {
                let head = l.replace(" 401", " 200");
                l.starts_with("HEAD ") && answered.contains(&head)
            }),
        "one anonymous HEAD at most per image: {challenged:#?}"
    );
    let tokens = &e.tokens().requests()[tokens_before..];
    assert_eq!(
        tokens.len(),
        1,
        "one token request for the run: {tokens:#?}"
    );
    let mut scopes = tokens[0].scopes.clone();
    scopes.sort();
    assert_eq!(
        scopes,
        [
            "repository:private/count-a:pull",
            "repository:private/count-b:pull",
            "repository:public/count-c:pull",
        ],
        "every repository in one request, several scopes: {tokens:#?}"
    );
    assert!(tokens.iter().all(|t| t.user.as_deref() == Some(ALICE)));
}

#[test]
fn the_more_specific_key_is_tried_first_then_the_host_key() {
    let e = env();
    let path_key = format!("{}/private", e.host);

    // One file, two entries: the path key with a wrong password, the host key with the right one.
    let repo = "private/keys-one-file";
    e.reg.push_oci_manifest(repo, "v1");
    let both = e.config(
        "both.json",
        &[(&path_key, WRONG_PASSWORD), (&e.host, ALICE_PASSWORD)],
    );
    let image = e.image(&format!("{repo}:v1"));
    let r = e.expect(&[&both], &image, 0, "ok", "found");
    let auth = r["auth"].as_str().unwrap();
    assert!(
        auth.contains("both.json") && auth.ends_with(&format!("key {}", e.host)),
        "the host key succeeded: {auth}"
    );
    let statuses: Vec<u16> = pull_tokens(e.tokens(), repo)
        .iter()
        .map(|t| t.status)
        .collect();
    assert_eq!(
        statuses,
        [401, 200, 401, 200],
        "path key first (text, JSON)"
    );

    // Two files, the host-key file given first: the path key is still tried first.
    let repo = "private/keys-two-files";
    e.reg.push_oci_manifest(repo, "v1");
    let host_file = e.config("host.json", &[(&e.host, ALICE_PASSWORD)]);
    let path_file = e.config("path.json", &[(&path_key, WRONG_PASSWORD)]);
    let image = e.image(&format!("{repo}:v1"));
    let r = e.expect(&[&host_file, &path_file], &image, 0, "ok", "found");
    let auth = r["auth"].as_str().unwrap();
    assert!(auth.contains("host.json"), "{auth}");
    let statuses: Vec<u16> = pull_tokens(e.tokens(), repo)
        .iter()
        .map(|t| t.status)
        .collect();
    assert_eq!(
        statuses,
        [401, 200, 401, 200],
        "path key first (text, JSON)"
    );

    // The path key right and the host key wrong: the host key is never tried.
    let repo = "private/keys-path-right";
    e.reg.push_oci_manifest(repo, "v1");
    let config = e.config(
        "path-right.json",
        &[(&e.host, WRONG_PASSWORD), (&path_key, ALICE_PASSWORD)],
    );
    let image = e.image(&format!("{repo}:v1"));
    let r = e.expect(&[&config], &image, 0, "ok", "found");
    assert!(
        r["auth"]
            .as_str()
            .unwrap()
            .ends_with(&format!("key {path_key}")),
        "{r:#}"
    );
    let statuses: Vec<u16> = pull_tokens(e.tokens(), repo)
        .iter()
        .map(|t| t.status)
        .collect();
    assert_eq!(statuses, [200, 200], "one token per run");

    // Both wrong: refused, and the message names both attempts.
    let repo = "private/keys-both-wrong";
    e.reg.push_oci_manifest(repo, "v1");
    let config = e.config(
        "both-wrong.json",
        &[(&path_key, WRONG_PASSWORD), (&e.host, WRONG_PASSWORD)],
    );
    let image = e.image(&format!("{repo}:v1"));
    let r = e.expect(
        &[&config],
        &image,
        5,
        "unauthorized",
        "credentials_rejected",
    );
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("key {path_key}"))
            && message.contains(&format!("key {}", e.host)),
        "names both credentials tried: {message}"
    );
}

#[test]
fn key_forms_match_as_in_the_kubelet() {
    let e = env();
    let repo = "private/key-forms";
    e.reg.push_oci_manifest(repo, "v1");
    let image = e.image(&format!("{repo}:v1"));
    let host = &e.host;
    let port = host.rsplit_once(':').unwrap().1;
    let matching = [
        format!("https://{host}"),
        format!("http://{host}"),
        format!("{host}/v2/"),
        format!("https://{host}/v1/"),
        format!("https://{host}/v2/private"),
        format!("127.0.0.*:{port}"),
        format!("*.0.0.1:{port}"),
        format!("1[0-9]7.0.0.[^2-9]:{port}"),
        format!("{host}/private/"),
        format!("{host}/{repo}"),
        // The kubelet compares paths as strings: a key path that ends inside a component matches.
        format!("{host}/priv"),
    ];
    for (i, key) in matching.iter().enumerate() {
        let config = e.config(&format!("match-{i}.json"), &[(key, ALICE_PASSWORD)]);
        let r = e.expect(&[&config], &image, 0, "ok", "found");
        assert!(
            r["auth"].as_str().unwrap().ends_with(&format!("key {key}")),
            "key {key}: {r:#}"
        );
    }
    let not_matching = [
        "127.0.0.1".to_string(),
        "127.0.0.1:1".to_string(),
        format!("localhost:{port}"),
        format!("*:{port}"),
        format!("*.*.*.*.*:{port}"),
        format!("{host}/public"),
        format!("{host}/{repo}/sub"),
        format!("{host}/Private"),
        // Go's filepath.Match negates a class with `^` only: `!` is a plain character.
        format!("127.0.0.[!2-9]:{port}"),
    ];
    for (i, key) in not_matching.iter().enumerate() {
        let config = e.config(&format!("other-{i}.json"), &[(key, ALICE_PASSWORD)]);
        let r = e.expect(&[&config], &image, 5, "unauthorized", "insufficient_scope");
        assert_eq!(r["auth"], "anonymous", "key {key} must not match: {r:#}");
    }
    // `username` and `password` fields instead of `auth`.
    let fields = e.raw_config(
        "fields.json",
        &format!(r#"{{"auths": {{"{host}": {{"username": "{ALICE}", "password": "{ALICE_PASSWORD}"}}}}}}"#),
    );
    e.expect(&[&fields], &image, 0, "ok", "found");
}

/// The kubelet parses each key with Go's `url.Parse` (after adding `https://`) and keeps host
/// and path: user info, a query and a fragment fall away, and an entry that does not parse is
/// logged and ignored ("Entry %q in dockercfg invalid (%v), ignoring",
/// pkg/credentialprovider/keyring.go). Either way the other entries are still used and the pull
/// goes on, so pullcheck must not stop with a configuration error.
#[test]
fn keys_the_kubelet_trims_or_ignores_do_not_stop_the_check() {
    let e = env();
    let repo = "private/odd-keys";
    e.reg.push_oci_manifest(repo, "v1");
    let image = e.image(&format!("{repo}:v1"));
    let host = &e.host;
    let odd_keys = [
        // url.Parse fails ("invalid character \" \" in host name"): ignored.
        format!("my registry.example:{}", host.rsplit_once(':').unwrap().1),
        // Parsed as host + query / fragment / user info: the key is the host.
        format!("{host}?tenant=a"),
        format!("{host}#a"),
        format!("someone@{host}"),
    ];
    let mut wrong = Vec::new();
    for (i, key) in odd_keys.iter().enumerate() {
        let config = e.config(
            &format!("odd-{i}.json"),
            &[(key, WRONG_PASSWORD), (host, ALICE_PASSWORD)],
        );
        for output in ["text", "json"] {
            let run = e.run(output, &[&config], &[&image]);
            if run.code != 0 {
                wrong.push(format!(
                    "key {key:?} ({output}): exit {}: {}{}",
                    run.code, run.stdout, run.stderr
                ));
            } else if output == "json" {
                assert_eq!(run.image(&image)["status"], "ok");
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn mounted_pull_secrets_are_tried_in_turn() {
    let e = env();
    let repo = "private/secrets-dir";
    e.reg.push_oci_manifest(repo, "v1");
    let image = e.image(&format!("{repo}:v1"));
    let secrets = e.dir.path().join("secrets");
    let folder = |name: &str| {
        let dir = secrets.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    };
    // Same key in two secrets: the first (by name) has a wrong password, the second, a legacy
    // `.dockercfg` (the bare map), the right one; an optional secret that does not exist is an
    // empty folder.
    std::fs::write(
        folder("a-wrong").join(".dockerconfigjson"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{}"}}}}}}"#,
            e.host,
            basic(WRONG_PASSWORD)
        ),
    )
    .unwrap();
    std::fs::write(
        folder("b-right").join(".dockercfg"),
        format!(
            r#"{{"https://{}": {{"auth": "{}", "email": "alice@example.com"}}}}"#,
            e.host,
            basic(ALICE_PASSWORD)
        ),
    )
    .unwrap();
    folder("c-optional-missing");
    let r = e.expect_in(Creds::SecretsDir(&secrets), &image, 0, "ok", "found");
    assert_eq!(
        r["auth"],
        format!("secret b-right, key https://{}", e.host),
        "{r:#}"
    );
    let statuses: Vec<u16> = pull_tokens(e.tokens(), repo)
        .iter()
        .map(|t| t.status)
        .collect();
    assert_eq!(statuses, [401, 200, 401, 200], "a-wrong, then b-right");
}

#[test]
fn a_rejected_credential_is_asked_once_per_repository() {
    let e = env();
    let repo = "private/rejected-many";
    let tags: Vec<String> = (0..8).map(|i| format!("v{i}")).collect();
    for tag in &tags {
        e.reg.push_oci_manifest(repo, tag);
    }
    let config = e.config(
        "kubelet.json",
        &[
            (&format!("{}/private", e.host), WRONG_PASSWORD),
            (&e.host, ALICE_PASSWORD),
        ],
    );
    let images: Vec<String> = tags
        .iter()
        .map(|t| e.image(&format!("{repo}:{t}")))
        .collect();
    let refs: Vec<&str> = images.iter().map(String::as_str).collect();
    let run = e.run("json", &[&config], &refs);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let tokens = pull_tokens(e.tokens(), repo);
    let rejected = tokens.iter().filter(|t| t.status == 401).count();
    let issued = tokens.iter().filter(|t| t.status == 200).count();
    assert_eq!(
        (rejected, issued),
        (1, 1),
        "{} images of one repository: the wrong password should be sent once, not once per \
         image (a registry may lock the account), and one token shared: {tokens:#?}",
        images.len()
    );
}

#[test]
fn configs_with_only_credential_helpers_are_anonymous() {
    let e = env();
    e.reg.push_oci_manifest("public/helpers", "v1");
    e.reg.push_oci_manifest("private/helpers", "v1");
    let host = &e.host;
    let configs = [
        // Helper names that exist on no machine (a real `docker-credential-pass` could prompt).
        e.raw_config(
            "helpers.json",
            &format!(r#"{{"credHelpers": {{"{host}": "pullcheck-test-absent"}}}}"#),
        ),
        e.raw_config("store.json", r#"{"credsStore": "pullcheck-test-absent"}"#),
        e.raw_config(
            "store-and-entry.json",
            &format!(r#"{{"auths": {{"{host}": {{}}}}, "credsStore": "pullcheck-test-absent"}}"#),
        ),
        e.raw_config(
            "helpers-and-empty-auths.json",
            &format!(r#"{{"auths": {{}}, "credHelpers": {{"{host}": "pullcheck-test-absent"}}}}"#),
        ),
    ];
    for config in &configs {
        let r = e.expect(&[config], &e.image("public/helpers:v1"), 0, "ok", "found");
        assert_eq!(r["auth"], "anonymous", "{}", config.display());
        let r = e.expect(
            &[config],
            &e.image("private/helpers:v1"),
            5,
            "unauthorized",
            "insufficient_scope",
        );
        assert_eq!(r["auth"], "anonymous", "{}", config.display());
    }
}

/// A fake `docker-credential-<name>` in `bin`: logs each server it is asked for to
/// `<bin>/<name>.log`, answers `alice` / `password` and exits with `code`.
fn fake_helper(bin: &Path, name: &str, password: &str, code: i32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(bin).unwrap();
    let log = bin.join(format!("{name}.log"));
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread -r server || true\necho \"$server\" >> '{}'\n\
         printf '{{\"ServerURL\":\"%s\",\"Username\":\"{ALICE}\",\"Secret\":\"{password}\"}}' \"$server\"\n\
         exit {code}\n",
        log.display()
    );
    let path = bin.join(format!("docker-credential-{name}"));
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

fn helper_calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A test env with fake credential helpers on `PATH` (`pullcheck-good` answers alice's
/// password, `pullcheck-other` a wrong one, `pullcheck-failing` alice's password and exit 1), a
/// pushed `private/<repo>:v1`, and a workstation config (`$HOME/.docker/config.json`) naming
/// `workstation_helper` for the registry. Returns the env, the image, and the helpers' logs
/// (good, other, failing).
fn helper_env(repo: &str, workstation_helper: &str) -> (Env<'static>, String, [PathBuf; 3]) {
    let mut e = env();
    e.reg.push_oci_manifest(repo, "v1");
    let image = e.image(&format!("{repo}:v1"));
    let bin = e.dir.path().join("bin");
    let logs = [
        fake_helper(&bin, "pullcheck-good", ALICE_PASSWORD, 0),
        fake_helper(&bin, "pullcheck-other", WRONG_PASSWORD, 0),
        fake_helper(&bin, "pullcheck-failing", ALICE_PASSWORD, 1),
    ];
    e.bin = Some(bin);
    let docker = e.home().join(".docker");
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"credHelpers": {{"{}": "{workstation_helper}"}}}}"#,
            e.host
        ),
    )
    .unwrap();
    (e, image, logs)
}

/// The workstation's `config.json` (`$HOME/.docker/config.json`) may name credential helpers,
/// which are run for the registries checked, and their credential used.
#[test]
fn the_workstations_credential_helper_is_asked() {
    let (e, image, [good, ..]) = helper_env("private/helper-good", "pullcheck-good");
    let r = e.expect(&[], &image, 0, "ok", "found");
    let auth = r["auth"].as_str().unwrap();
    assert!(
        auth.contains(".docker/config.json") && auth.contains(&format!("helper for {}", e.host)),
        "{auth}"
    );
    assert_eq!(
        helper_calls(&good),
        [e.host.clone(), e.host.clone()],
        "once per run (text, JSON)"
    );
}

/// A helper that fails means anonymous, with a warning; the warning must not repeat what the
/// helper printed, which may hold the secret (stderr ends up in the pod's log and, with
/// `FallbackToLogsOnError`, in its termination message).
#[test]
fn a_failing_credential_helper_is_anonymous_and_its_output_is_not_repeated() {
    let (e, image, [.., failing]) = helper_env("private/helper-failing", "pullcheck-failing");
    let r = e.expect(&[], &image, 5, "unauthorized", "insufficient_scope");
    assert_eq!(r["auth"], "anonymous");
    assert_eq!(helper_calls(&failing).len(), 2);
}

/// A credential helper named in a pull secret or a `--docker-config` file is not the
/// workstation's: the kubelet reads only `auths` from pull secrets and never runs a helper. Its
/// entry must not be answered by the workstation's helper under the file's name either.
#[test]
fn a_helper_named_in_a_docker_config_file_is_not_the_workstations() {
    let (e, image, [good, other, _]) = helper_env("private/helper-file", "pullcheck-good");
    let file = e.raw_config(
        "pod-secret.json",
        &format!(r#"{{"credHelpers": {{"{}": "pullcheck-other"}}}}"#, e.host),
    );
    let run = e.run("json", &[&file], &[&image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let auth = run.image(&image)["auth"].as_str().unwrap().to_string();
    let good_calls = helper_calls(&good).len();
    let other_calls = helper_calls(&other).len();
    assert!(
        !auth.contains("pod-secret.json") && good_calls == 1 && other_calls == 0,
        "the credential came from the workstation's helper, yet pullcheck says {auth:?}; \
         workstation helper run {good_calls} times (want 1), the file's helper {other_calls} \
         times (want 0: the kubelet runs no helper from a pull secret); stderr: {}",
        run.stderr
    );
}

#[test]
fn no_output_contains_a_password_or_a_token() {
    let e = env();
    e.reg.push_oci_manifest("public/leak", "v1");
    e.reg.push_oci_manifest("private/leak", "v1");
    let host = e.host.clone();
    let path_key = format!("{host}/private");
    let good = e.config("good.json", &[(&host, ALICE_PASSWORD)]);
    let bad = e.config("bad.json", &[(&host, WRONG_PASSWORD)]);
    let kubelet = e.config(
        "kubelet.json",
        &[(&path_key, WRONG_PASSWORD), (&host, ALICE_PASSWORD)],
    );
    let (none, good, bad, kubelet): (&[&Path], &[&Path], &[&Path], &[&Path]) =
        (&[], &[&good], &[&bad], &[&kubelet]);
    let cases: Vec<(&[&Path], &str, i32, bool)> = vec![
        (none, "public/leak:v1", 0, false),
        (none, "public/leak:v9", 3, false),
        (none, "private/leak:v1", 5, false),
        (none, "private/leak-none:v1", 5, false),
        (good, "private/leak:v1", 0, false),
        (good, "private/leak:v9", 3, false),
        (good, "private/leak-none:v1", 3, false),
        (bad, "private/leak:v1", 5, false),
        (kubelet, "private/leak:v1", 0, false),
        (good, "private/leak:v1", 0, true),
        (none, "public/leak:v1", 0, true),
    ];
    let mut runs = Vec::new();
    for (configs, image, code, expire) in &cases {
        for output in ["json", "text"] {
            if *expire {
                let repo = image.split(':').next().unwrap();
                e.tokens().expire_next_token_for(repo);
            }
            let run = e.run(output, configs, &[&e.image(image)]);
            assert_eq!(run.code, *code, "{image} {output}: {}", run.stdout);
            runs.push(run);
        }
    }
    // Once more against every token issued by now (also by the other tests).
    assert!(!e.tokens().issued_tokens().is_empty());
    for run in &runs {
        assert_no_secrets(e.tokens(), run);
    }
}
