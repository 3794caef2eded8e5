//! `pullcheck doctor` (the `webhook` or `watch` cargo feature): whether the chart works on a
//! cluster, one `ok` / `no` line per check and the fix under each `no`. `read` asks the API
//! server (the only I/O), `selector` and `sample` read back what it answered, `decide` turns it
//! into the checks; here they are run and written, as text for a person or `-o json`.

mod decide;
mod probe;
mod read;
mod runtimes;
mod sample;
mod selector;

use crate::cli::doctor::DoctorArgs;
use crate::config::DoctorConfig;
use crate::log::{self, Component};
use crate::report::ExitCode;
use decide::Check;
use std::io::Write;

/// Runs `pullcheck doctor`: 0 when every check is ok, [`ExitCode::Unhealthy`] when one is not
/// (an API server that does not answer among them), 2 for bad flags or a kubeconfig that
/// cannot be read.
pub(crate) fn run(args: DoctorArgs) -> ExitCode {
    let config = match DoctorConfig::from_args(args) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors.0 {
                log::error(Component::Command, e);
            }
            return ExitCode::Usage;
        }
    };
    let runtime = match crate::cluster::serve::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            log::error(Component::Command, &e.to_string());
            return ExitCode::Usage;
        }
    };
    let checks = runtime.block_on(async {
        let door = read::door(&config).await?;
        let seen = read::read(&door, &config).await?;
        let probe = match &config.probe {
            Some((namespace, bound)) => {
                let image = seen.deployment.as_ref().and_then(|d| d.image.as_deref());
                Some(probe::run(&door.client(), namespace, image, *bound).await)
            }
            None => None,
        };
        Ok::<_, read::ReadError>((seen, probe))
    });
    // A kubeconfig that cannot be read is a usage error (nothing was asked); an API server
    // that does not answer is a `no` like any other.
    let usage = matches!(checks, Err(read::ReadError::Config(_)));
    let checks = match checks {
        Ok((seen, probe)) => {
            let mut checks = decide::checks(&seen);
            checks.extend(seen.runtimes.as_ref().map(runtimes::check));
            checks.extend(probe.map(|p| p.check()));
            checks
        }
        Err(e) => vec![unread(&e)],
    };
    let text = if config.json {
        json(&checks)
    } else {
        text(&checks)
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    if usage {
        ExitCode::Usage
    } else if checks.iter().all(|c| c.ok) {
        ExitCode::Ok
    } else {
        ExitCode::Unhealthy
    }
}

/// The one check when nothing could be read.
fn unread(e: &read::ReadError) -> Check {
    let fix = match e {
        read::ReadError::Config(_) => {
            "give --kubeconfig and --context (or KUBECONFIG) of the cluster, as kubectl takes them"
        }
        read::ReadError::Api { .. } => {
            "check that `kubectl get deployments,mutatingwebhookconfigurations,namespaces` works \
             with this kubeconfig; doctor needs the read rights listed in docs/doctor.md"
        }
    };
    Check {
        check: "cluster",
        ok: false,
        says: crate::redact::foreign(&e.to_string()),
        fix: Some(fix.to_string()),
    }
}

/// One line per check (`ok`/`no`, the check, what was found), the fix indented under a `no`.
fn text(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        let word = if c.ok { "ok" } else { "no" };
        let says = crate::escape::escape(&c.says);
        out.push_str(&format!("{word}  {:<16} {says}\n", c.check));
        if let Some(fix) = &c.fix {
            out.push_str(&format!("    fix: {}\n", crate::escape::escape(fix)));
        }
    }
    let bad = checks.iter().filter(|c| !c.ok).count();
    if bad == 0 {
        out.push_str("every check is ok\n");
    } else {
        out.push_str(&format!("{bad} of {} checks say no\n", checks.len()));
    }
    out
}

/// `{"ok": …, "checks": [{"check", "ok", "says", "fix"?}]}`.
fn json(checks: &[Check]) -> String {
    let value = serde_json::json!({
        "ok": checks.iter().all(|c| c.ok),
        "checks": checks,
    });
    format!("{value}\n")
}
