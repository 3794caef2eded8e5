//! Integration-test harness: a real CNCF distribution registry (`docker-registry`, Debian's
//! 2.8.2) on 127.0.0.1, image fixtures pushed through its API, and its access log.
//!
//! Use from an integration test as `mod common;` (from `tests/<dir>/main.rs`:
//! `#[path = "../common/mod.rs"] mod common;`). Needs `docker-registry` on PATH (Debian package
//! `docker-registry`) or [`registry::REGISTRY_BIN_ENV`]. Each test binary gets its own shared
//! registries ([`plain_registry`], [`tls_basic_registry`], [`token_registry`]); tests in a binary
//! run concurrently, so give every test its own repository name and filter
//! [`Registry::requests`] by it (or use [`Registry::requests_for`], and
//! [`TokenServer::requests_for`] for token requests).
#![allow(dead_code, unused_imports)]

pub mod apiserver;
pub mod pki;
pub mod proxy;
pub mod registry;
pub mod seed;
pub mod token;

use std::process::Command;
use std::sync::OnceLock;

pub use registry::{ManifestHead, Registry, RegistryOptions, Request, http_client};
pub use seed::{PushedIndex, RunSettings, media, sha256_digest};
pub use token::{TokenRequest, TokenServer};

/// The Basic-auth user of [`tls_basic_registry`].
pub const ALICE: &str = "alice";
/// Alice's password on [`tls_basic_registry`].
pub const ALICE_PASSWORD: &str = "s3cret-Pa55";

/// A plain-HTTP, anonymous registry shared by all tests of this test binary (started on first
/// use). It stops when the test process exits.
pub fn plain_registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::start(RegistryOptions::plain()))
}

/// An HTTPS registry with Basic auth for [`ALICE`] / [`ALICE_PASSWORD`], shared by all tests of
/// this test binary (started on first use). Its CA is at [`Registry::ca_pem_path`]. It stops when
/// the test process exits.
pub fn tls_basic_registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::start(RegistryOptions::tls_basic(ALICE, ALICE_PASSWORD)))
}

/// An HTTPS registry with distribution's token auth and its token server
/// ([`Registry::start_token_auth`]): [`ALICE`] / [`ALICE_PASSWORD`] may pull (and push)
/// everything, anonymous clients may pull `public/*` only. Shared by all tests of this test
/// binary (started on first use); its CA, at [`Registry::ca_pem_path`], also signed the token
/// server's certificate.
pub fn token_registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::start_token_auth(ALICE, ALICE_PASSWORD))
}

/// The binary under test.
pub const PULLCHECK_BIN: &str = env!("CARGO_BIN_EXE_pullcheck");

/// A `Command` for the binary under test (`CARGO_BIN_EXE_pullcheck`), with proxy variables
/// removed (the registries are on loopback).
pub fn pullcheck_cmd() -> Command {
    let mut cmd = Command::new(PULLCHECK_BIN);
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `cmd` with `stdin` written to its standard input, and waits for its output.
pub fn output_with_stdin(cmd: &mut Command, stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pullcheck");
    // A child that exits without reading its input closes the pipe: not an error here.
    let _ = child.stdin.take().expect("piped stdin").write_all(stdin);
    child.wait_with_output().expect("wait for pullcheck")
}

/// Runs a future to completion on a fresh current-thread tokio runtime. Safe to call from inside
/// another runtime (e.g. a `#[tokio::test]`): the future then runs on a scoped helper thread.
pub fn block_on<F>(fut: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    let run = move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build tokio runtime")
            .block_on(fut)
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| {
            s.spawn(run)
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    } else {
        run()
    }
}

/// The document as it was before `pullcheck inject` (for the tests that compare inject's output
/// with its input: tests/it/manifests.rs, tests/cluster/yaml.rs): its init container, its volumes and its volume mounts
/// (Spark's driver and executor) taken out, lists left empty by that removed.
pub fn strip_pullcheck(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, value) in map {
                let mut value = strip_pullcheck(value);
                if matches!(k.as_str(), "initContainers" | "volumes" | "volumeMounts")
                    && let serde_json::Value::Array(items) = &mut value
                {
                    items.retain(|item| {
                        let name = item["name"].as_str().unwrap_or("");
                        !(name == "pullcheck"
                            || name.starts_with("pullcheck-secret-")
                            || name == "pullcheck-ca"
                            || name == "pullcheck-hosts"
                            || name == "pullcheck-serviceaccount")
                    });
                    if items.is_empty() {
                        continue;
                    }
                }
                out.insert(k.clone(), value);
            }
            serde_json::Value::Object(out)
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(strip_pullcheck).collect())
        }
        other => other.clone(),
    }
}
