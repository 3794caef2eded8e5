//! Docker credential helpers (`docker-credential-<name> get`), run the way the Docker CLI runs
//! them, but inside a time limit: a helper waiting on a locked keychain, a password prompt or a
//! hardware token must not hold the check past `--timeout`. A helper still running at its limit
//! is killed.
//!
//! What a helper prints is never shown: a failing helper may well have printed the secret.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The most of a helper's answer read.
const MAX_ANSWER: u64 = 64 * 1024;
/// How often a helper that closed its output is looked at until it exits.
const POLL: Duration = Duration::from_millis(5);

/// What a helper gave.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum HelperAnswer {
    /// A user name and secret.
    Password(String, String),
    /// An identity token (user `<token>`), which a manifest check cannot use.
    IdentityToken,
}

/// Why a helper gave nothing, in words that never repeat its output.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Failure {
    /// The program could not be started (not on `PATH`, not executable, a bad name).
    NotRun,
    /// It ran past its share of the deadline and was killed.
    TimedOut(Duration),
    /// It said it holds no credential for the server.
    NoCredential,
    /// It exited with an error.
    Failed,
    /// Its answer is not the JSON of the protocol.
    Malformed,
}

impl Failure {
    pub(super) fn describe(&self, helper: &str) -> String {
        match self {
            Failure::NotRun => {
                format!("the credential helper docker-credential-{helper} could not be run")
            }
            Failure::TimedOut(limit) => format!(
                "the credential helper docker-credential-{helper} did not answer within {} and was stopped",
                humantime::format_duration(*limit)
            ),
            Failure::NoCredential => "no credential is stored for it".to_string(),
            Failure::Failed => format!(
                "the credential helper docker-credential-{helper} failed (its output is not shown: it may hold a secret)"
            ),
            Failure::Malformed => "the credential helper gave a malformed answer".to_string(),
        }
    }
}

#[derive(serde::Deserialize)]
struct Reply {
    #[serde(rename = "Username", default)]
    username: String,
    #[serde(rename = "Secret", default)]
    secret: String,
}

/// Runs `docker-credential-<helper> get` for `server`, and waits at most `limit`.
pub(super) fn get(helper: &str, server: &str, limit: Duration) -> Result<HelperAnswer, Failure> {
    // A name with a path in it would run another program than `docker-credential-*`.
    if helper.is_empty() || helper.contains(['/', '\0']) {
        return Err(Failure::NotRun);
    }
    let started = Instant::now();
    let mut child = Command::new(format!("docker-credential-{helper}"))
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|_| Failure::NotRun)?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that exits without reading closes the pipe: its exit status tells.
        let _ = stdin.write_all(server.as_bytes());
    }
    // Read on a thread, so that the wait can end at the limit: a helper (or a child it left)
    // may hold its output open for ever.
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.take(MAX_ANSWER).read_to_end(&mut out);
            let _ = tx.send(out);
        });
    }
    let killed = |child: &mut std::process::Child| {
        let _ = child.kill();
        let _ = child.wait();
        Failure::TimedOut(limit)
    };
    let Ok(out) = rx.recv_timeout(limit.saturating_sub(started.elapsed())) else {
        return Err(killed(&mut child));
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < limit => std::thread::sleep(POLL),
            Ok(None) => return Err(killed(&mut child)),
            Err(_) => return Err(Failure::Failed),
        }
    };
    if !status.success() {
        // The protocol's "not found" answer, as the Docker CLI reads it.
        let text = String::from_utf8_lossy(&out);
        return Err(if text.contains("credentials not found") {
            Failure::NoCredential
        } else {
            Failure::Failed
        });
    }
    let reply: Reply = serde_json::from_slice(&out).map_err(|_| Failure::Malformed)?;
    if reply.username == "<token>" {
        return Ok(HelperAnswer::IdentityToken);
    }
    if reply.username.is_empty() && reply.secret.is_empty() {
        return Err(Failure::NoCredential);
    }
    Ok(HelperAnswer::Password(reply.username, reply.secret))
}
