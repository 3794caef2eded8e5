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
//!
//! The binary under test runs through one builder, [`pullcheck`] (`pullcheck().check(&[..])
//! .env(..).run()`), which also reaches the stand-ins of cloud names through the `test-hooks`
//! build feature ([`Pullcheck::pin`]). The stand-ins written here share one HTTPS server
//! ([`tls`]); signals go through [`signal`]. A test that cannot run here calls [`cannot_run`]:
//! with `CI=true` that is a failure naming what is missing.
#![allow(dead_code, unused_imports)]

pub mod apiserver;
pub mod fixtures;
pub mod pki;
pub mod proxy;
pub mod registry;
pub mod seed;
pub mod signal;
pub mod tls;
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

/// The proxy variables of the machine: removed from every run, the registries are on loopback.
const PROXY_VARS: [&str; 8] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

/// A `Command` for the binary under test (`CARGO_BIN_EXE_pullcheck`), with proxy variables
/// removed (the registries are on loopback). Prefer [`pullcheck`]; this is for the tests that
/// hand the command to another program (`unshare`, `setpriv`, GNU `time`).
pub fn pullcheck_cmd() -> Command {
    let mut cmd = Command::new(PULLCHECK_BIN);
    for var in PROXY_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// The one way the integration tests run the binary under test: `pullcheck().args(..).env(..)`
/// then [`Pullcheck::run`] (waits, returns a [`Run`]), [`Pullcheck::spawn`] (for the tests that
/// signal it) or [`Pullcheck::command`] (to hand it to another program).
pub fn pullcheck() -> Pullcheck {
    Pullcheck {
        cmd: pullcheck_cmd(),
        stdin: Vec::new(),
        pinned: Vec::new(),
    }
}

/// A run of the binary under test being set up (see [`pullcheck`]).
pub struct Pullcheck {
    cmd: Command,
    stdin: Vec<u8>,
    pinned: Vec<String>,
}

/// The environment variables a run takes from the machine unless a test gives them: the
/// workstation's credentials and every cloud SDK's settings.
const MACHINE_VARS: [&str; 9] = [
    "PULLCHECK_",
    "AWS_",
    "GCE_",
    "AZURE_",
    "GOOGLE_",
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
];

impl Pullcheck {
    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Pullcheck {
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Pullcheck
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn env(
        mut self,
        key: impl AsRef<std::ffi::OsStr>,
        value: impl AsRef<std::ffi::OsStr>,
    ) -> Pullcheck {
        self.cmd.env(key, value);
        self
    }

    pub fn envs<I, K, V>(mut self, vars: I) -> Pullcheck
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<std::ffi::OsStr>,
        V: AsRef<std::ffi::OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<std::ffi::OsStr>) -> Pullcheck {
        self.cmd.env_remove(key);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<std::path::Path>) -> Pullcheck {
        self.cmd.current_dir(dir);
        self
    }

    /// `pullcheck check` with no credentials from the machine: no mounted pull secrets
    /// (`--secrets-dir` pointed nowhere), no `DOCKER_CONFIG` and none of the variables that
    /// point at the containers tools' `auth.json`; then `args`.
    pub fn check(self, args: &[&str]) -> Pullcheck {
        self.arg("check")
            .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
            .args(args)
            .env_remove("DOCKER_CONFIG")
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("XDG_CONFIG_HOME")
    }

    /// `pullcheck inject` with no `PULLCHECK_INJECT_*` variable from the test process.
    pub fn inject(self) -> Pullcheck {
        self.arg("inject").without_env_prefix("PULLCHECK_INJECT_")
    }

    /// Removes every variable of [`MACHINE_VARS`] that the test process has, so that only
    /// what the test gives is seen (nothing real is ever asked).
    pub fn without_machine_env(mut self) -> Pullcheck {
        for (name, _) in std::env::vars_os() {
            let n = name.to_string_lossy();
            if MACHINE_VARS.iter().any(|p| n.starts_with(p)) {
                self.cmd.env_remove(&name);
            }
        }
        self
    }

    /// Removes the variables of the test process whose names start with `prefix`.
    pub fn without_env_prefix(mut self, prefix: &str) -> Pullcheck {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with(prefix) {
                self.cmd.env_remove(&name);
            }
        }
        self
    }

    /// Connects to `host` at `addr` (a loopback `IP:PORT`) instead of resolving it, through
    /// the `test-hooks` build feature (`PULLCHECK_TEST_RESOLVE`, src/test_hooks.rs): fails the
    /// test at once, saying how to build, without it.
    pub fn pin(mut self, host: &str, addr: &str) -> Pullcheck {
        require_test_hooks();
        self.pinned.push(format!("{host}={addr}"));
        self
    }

    /// Sends ACR's token exchange to `url` (a loopback stand-in), through the `test-hooks`
    /// build feature (`PULLCHECK_TEST_ACR_EXCHANGE`, src/test_hooks.rs).
    pub fn acr_exchange(self, url: &str) -> Pullcheck {
        require_test_hooks();
        self.env("PULLCHECK_TEST_ACR_EXCHANGE", url)
    }

    /// Writes `stdin` to the run's standard input (else it reads an empty one).
    pub fn stdin(mut self, stdin: impl Into<Vec<u8>>) -> Pullcheck {
        self.stdin = stdin.into();
        self
    }

    /// The `Command`, for a test that hands it to another program or runs it its own way.
    pub fn command(mut self) -> Command {
        if !self.pinned.is_empty() {
            self.cmd
                .env("PULLCHECK_TEST_RESOLVE", self.pinned.join(","));
        }
        self.cmd
    }

    /// Runs it to the end and returns what it printed as bytes (for a test that asserts
    /// more of them than [`Run`]'s lossy text can show, e.g. that stdout is UTF-8).
    pub fn output(self) -> std::process::Output {
        let stdin = self.stdin.clone();
        output_with_stdin(&mut self.command(), &stdin)
    }

    /// [`Pullcheck::run`], failing the test when stdout is not UTF-8 (inject writes
    /// manifests: every byte of them must be the input's or valid text).
    pub fn run_utf8(self) -> Run {
        let out = self.output();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).expect("UTF-8 output"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs it to the end: exit code, stdout and stderr.
    pub fn run(self) -> Run {
        self.run_timed().0
    }

    /// [`Pullcheck::run`], with how long the process took.
    pub fn run_timed(self) -> (Run, std::time::Duration) {
        let stdin = self.stdin.clone();
        let mut cmd = self.command();
        let started = std::time::Instant::now();
        let out = output_with_stdin(&mut cmd, &stdin);
        let took = started.elapsed();
        (Run::from(out), took)
    }

    /// Starts it with stdin closed and stdout and stderr piped (for the tests that signal it:
    /// [`signal`]).
    pub fn spawn(self) -> std::process::Child {
        use std::process::Stdio;
        self.command()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run pullcheck")
    }
}

impl From<Pullcheck> for Command {
    fn from(p: Pullcheck) -> Command {
        p.command()
    }
}

/// How a run of the binary under test ended.
#[derive(Debug)]
pub struct Run {
    /// The exit code, -1 when a signal ended it.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Run {
    fn from(out: std::process::Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Each image's (image, status) of a `-o json` report, in its order.
pub fn statuses(report: &serde_json::Value) -> Vec<(String, String)> {
    report["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["image"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

impl Run {
    /// stdout as JSON (`-o json`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Each image's (image, status) of a `-o json` run, in the order of the report.
    pub fn statuses(&self) -> Vec<(String, String)> {
        statuses(&self.json())
    }

    /// The JSON result of one image, by the image as given.
    pub fn image(&self, image: &str) -> serde_json::Value {
        let json = self.json();
        json["images"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["image"] == image)
            .cloned()
            .unwrap_or_else(|| panic!("no result for {image}: {json:#}"))
    }
}

/// Fails the test unless the binary under test was built with the `test-hooks` feature, which
/// its stand-ins are reached through (src/test_hooks.rs). Never a skip: without it the run
/// would resolve cloud registry names for real.
pub fn require_test_hooks() {
    #[cfg(not(feature = "test-hooks"))]
    panic!(
        "this test reaches its stand-in through the `test-hooks` build feature \
         (src/test_hooks.rs), which this build lacks: run `scripts/test.sh`, or \
         `cargo test --features test-hooks`"
    );
}

/// Whether this is a CI run (`CI=true`): there, a test that cannot run fails.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// For a test that cannot run here for want of `missing` (root, containerd, IPv6, GNU `time`,
/// ...): with `CI=true` it fails, naming what is missing; elsewhere it says so on the terminal
/// (past the test harness's capture, so a skip never reads as a pass) and the caller returns.
pub fn cannot_run(test: &str, missing: &str) {
    assert!(
        !in_ci(),
        "{test}: cannot run, {missing} (CI=true: a test that cannot run fails)"
    );
    use std::io::Write;
    // Straight to the process's stderr: `eprintln!` is captured, and shown only on failure.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** NOT RUN, NOT PASSED: {test}: {missing} (with CI=true this fails)"
    );
}

/// Whether this process runs as root (uid 0).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Whether this process may make a private mount namespace (`unshare -m`).
pub fn can_unshare() -> bool {
    Command::new("unshare")
        .args(["-m", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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

/// A server on 127.0.0.1 that accepts connections and never answers; returns its `IP:PORT`.
pub fn black_hole() -> String {
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
