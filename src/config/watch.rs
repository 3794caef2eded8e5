//! `pullcheck watch`'s flags judged into a [`WatchConfig`], every problem reported at once (exit
//! 2), before anything talks to the API server. The graces and the decision's settings are data
//! here; what they mean (which grace a verdict gets) is the watcher's, in `watch/grace.rs`, and
//! the words `--grace-for` takes come from the watcher's tables as [`GraceKeys`], so that this
//! file needs nothing of `watch`.

use super::{ConfigErrors, judged};
use crate::cli::watch::WatchArgs;
use crate::manifests::names::{is_dns_subdomain, is_qualified_name};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// The shortest Lease: client-go's leader election refuses a lease duration not above its
/// renew deadline, and a Lease renewed every few hundred milliseconds only loads the API server.
const MIN_LEASE: Duration = Duration::from_secs(2);

/// The graces of one watcher, as its flags give them (their meaning: `watch::grace::of`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Graces {
    /// `--grace`: every permanent verdict's grace, when given, instead of its default.
    pub(crate) all: Option<Duration>,
    /// `--grace-for KEY=DURATION`, by reason word or waiting reason.
    pub(crate) by_key: BTreeMap<String, Duration>,
    /// `--report-after`: how long a transient or unknown cause lasts before it is reported.
    pub(crate) report_after: Duration,
}

/// What the watcher's decision (`watch::decide`) is given: the graces and the condition's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `--grace`, `--grace-for`, `--report-after`.
    pub(crate) graces: Graces,
    /// `--condition-type`.
    pub(crate) condition_type: String,
}

/// The keys `--grace-for` takes: the waiting reasons the watcher acts on and the words of the
/// reasons the kubelet's words can give (both the watcher's tables, in `watch/classify.rs`).
#[derive(Debug, Clone)]
pub(crate) struct GraceKeys {
    pub(crate) waiting: &'static [&'static str],
    pub(crate) words: Vec<&'static str>,
}

impl GraceKeys {
    /// Whether `key` may be given to `--grace-for`.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.waiting.contains(&key) || self.words.contains(&key)
    }
}

/// Everything `pullcheck watch` runs with.
#[derive(Debug, Clone)]
pub(crate) struct WatchConfig {
    /// The namespaces' label selector (`pullcheck.dev/watch=enabled`).
    pub(crate) namespace_label: String,
    /// Graces and the condition's type.
    pub(crate) settings: Settings,
    /// `--dry-run`.
    pub(crate) dry_run: bool,
    /// Whether a missing image is asked of its registry before the pod is failed.
    pub(crate) confirm: bool,
    /// Whether that look uses the pod's pull secrets.
    pub(crate) confirm_with_pull_secrets: bool,
    /// `--owner-failure-limit` and `--owner-failure-window`.
    pub(crate) owner_failure_limit: usize,
    pub(crate) owner_failure_window: Duration,
    /// `--listen`.
    pub(crate) listen: SocketAddr,
    /// The Lease's name and namespace.
    pub(crate) lease_name: String,
    pub(crate) namespace: String,
    /// `--lease-duration`.
    pub(crate) lease_duration: Duration,
    /// This replica's name in the Lease.
    pub(crate) identity: String,
}

impl WatchConfig {
    /// Judges the flags; `hostname` is `HOSTNAME` (the pod's name), the default identity;
    /// `keys` what `--grace-for` takes.
    pub(crate) fn from_args(
        args: WatchArgs,
        hostname: Option<String>,
        keys: &GraceKeys,
    ) -> Result<WatchConfig, ConfigErrors> {
        let mut errors = Vec::new();
        if let Err(e) = label_selector(&args.namespace_label) {
            errors.push(format!("--namespace-label {}: {e}", args.namespace_label));
        }
        let graces = graces(&args, keys, &mut errors);
        let owner_failure_limit = judged(
            "--owner-failure-limit",
            &args.owner_failure_limit,
            1,
            &mut errors,
        );
        let owner_failure_window = judged(
            "--owner-failure-window",
            &args.owner_failure_window,
            Duration::ZERO,
            &mut errors,
        );
        if !is_qualified_name(&args.condition_type) {
            errors.push(format!(
                "--condition-type {}: expected a condition type such as ConfigIssue (letters, digits, `-`, `_`, `.`, an optional DNS prefix and `/`)",
                args.condition_type
            ));
        }
        let listen =
            crate::config::values::listen_address(&args.listen, 8081).unwrap_or_else(|e| {
                errors.push(e.to_string());
                SocketAddr::from(([0, 0, 0, 0], 0))
            });
        if !is_dns_subdomain(&args.lease_name) {
            errors.push(format!(
                "--lease-name {}: not a Kubernetes object name (lower-case letters, digits, `-` and `.`)",
                args.lease_name
            ));
        }
        let namespace = match args.namespace {
            Some(ns) if crate::manifests::names::is_dns_label(&ns) => ns,
            Some(ns) => {
                errors.push(format!("--namespace {ns}: not a namespace name"));
                String::new()
            }
            None => {
                errors.push("the watcher's own namespace, where its Lease is, is needed: --namespace or PULLCHECK_WATCH_NAMESPACE (the chart sets it from the downward API)".to_string());
                String::new()
            }
        };
        let lease_duration = match args.lease_duration.value {
            Ok(d) if d >= MIN_LEASE => d,
            Ok(_) => {
                errors.push(format!(
                    "--lease-duration {}: must be at least {}s",
                    args.lease_duration.given,
                    MIN_LEASE.as_secs()
                ));
                MIN_LEASE
            }
            Err(e) => {
                errors.push(format!(
                    "--lease-duration {}: {e}",
                    args.lease_duration.given
                ));
                MIN_LEASE
            }
        };
        let identity = match args.identity.or(hostname).filter(|s| !s.trim().is_empty()) {
            Some(id) if id.len() <= 253 && !id.chars().any(char::is_control) => id,
            Some(id) => {
                errors.push(format!(
                    "--identity {}: at most 253 characters, none of them control characters",
                    crate::escape::escape(&id)
                ));
                String::new()
            }
            None => {
                errors.push("this replica's name in the Lease is needed: --identity, PULLCHECK_WATCH_IDENTITY or HOSTNAME".to_string());
                String::new()
            }
        };
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        Ok(WatchConfig {
            namespace_label: args.namespace_label,
            settings: Settings {
                graces,
                condition_type: args.condition_type,
            },
            dry_run: args.dry_run,
            confirm: !args.no_confirm,
            confirm_with_pull_secrets: args.confirm_with_pull_secrets,
            owner_failure_limit,
            owner_failure_window,
            listen,
            lease_name: args.lease_name,
            namespace,
            lease_duration,
            identity,
        })
    }
}

/// `--grace`, `--grace-for` and `--report-after` judged.
fn graces(args: &WatchArgs, keys: &GraceKeys, errors: &mut Vec<String>) -> Graces {
    let all = match &args.grace {
        None => None,
        Some(g) => match &g.value {
            Ok(d) => Some(*d),
            Err(e) => {
                errors.push(format!("--grace {}: {e}", g.given));
                None
            }
        },
    };
    let mut by_key = BTreeMap::new();
    for given in &args.grace_for {
        match grace_for_value(given, keys) {
            Ok((key, d)) => {
                by_key.insert(key, d);
            }
            Err(e) => errors.push(format!("--grace-for {given}: {e}")),
        }
    }
    let report_after = judged("--report-after", &args.report_after, Duration::ZERO, errors);
    Graces {
        all,
        by_key,
        report_after,
    }
}

/// `KEY=VALUE` or `KEY`, with Kubernetes' label syntax: an optional DNS prefix and `/`, then a
/// name of at most 63 characters; the value at most 63.
fn label_selector(s: &str) -> Result<(), LabelSelectorError> {
    let (key, value) = match s.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (s, None),
    };
    let name = match key.rsplit_once('/') {
        Some((prefix, name)) if is_dns_subdomain(prefix) => name,
        Some(_) => return Err(LabelSelectorError::Prefix),
        None => key,
    };
    if !is_label_value(name) || name.is_empty() {
        return Err(LabelSelectorError::Key);
    }
    if value.is_some_and(|v| !is_label_value(v)) {
        return Err(LabelSelectorError::Value);
    }
    Ok(())
}

/// What is wrong with a `--namespace-label` selector.
#[derive(Debug, thiserror::Error)]
enum LabelSelectorError {
    #[error("the key's prefix is not a DNS name")]
    Prefix,
    #[error("expected KEY=VALUE or KEY, with a label key such as pullcheck.dev/watch")]
    Key,
    #[error("the value is not a label value (at most 63 letters, digits, `-`, `_`, `.`)")]
    Value,
}

/// A label value: empty, or up to 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends.
fn is_label_value(s: &str) -> bool {
    s.is_empty()
        || (s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric()))
}

/// `KEY=DURATION`, for one of the watched waiting reasons or one of the reason words the
/// kubelet's words can give.
fn grace_for_value(s: &str, keys: &GraceKeys) -> Result<(String, Duration), GraceForError> {
    let Some((key, duration)) = s.split_once('=') else {
        return Err(GraceForError::NotKeyDuration);
    };
    let key = key.trim();
    if !keys.contains(key) {
        return Err(GraceForError::UnknownKey {
            key: key.to_string(),
            watched: keys.waiting.join(", "),
            words: keys.words.join(", "),
        });
    }
    let d =
        crate::cli::values::parse_duration_or_zero(duration).map_err(GraceForError::Duration)?;
    Ok((key.to_string(), d))
}

/// What is wrong with a `--grace-for` value.
#[derive(Debug, PartialEq, thiserror::Error)]
enum GraceForError {
    #[error("expected KEY=DURATION, e.g. manifest_missing=2m or CreateContainerConfigError=5m")]
    NotKeyDuration,
    #[error(
        "{key} is neither a waiting reason the watcher acts on ({watched}) nor one of its reasons ({words})"
    )]
    UnknownKey {
        key: String,
        watched: String,
        words: String,
    },
    /// The duration, in the words of the parser that `--grace` uses too (clap's).
    #[error("{0}")]
    Duration(crate::cli::values::ValueError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> GraceKeys {
        GraceKeys {
            waiting: &["ErrImagePull", "CreateContainerConfigError"],
            words: vec!["manifest_missing"],
        }
    }

    #[test]
    fn selectors_and_grace_for() {
        let keys = &keys();
        for ok in ["pullcheck.dev/watch=enabled", "team", "a.b/c=", "x=y_z.1"] {
            assert!(label_selector(ok).is_ok(), "{ok}");
        }
        for bad in ["", "=x", "a b=c", "UPPER_/x=y", "k=-x", "k=a,b"] {
            assert!(label_selector(bad).is_err(), "{bad}");
        }
        assert_eq!(
            grace_for_value("ErrImagePull=30s", keys),
            Ok(("ErrImagePull".into(), Duration::from_secs(30)))
        );
        assert!(grace_for_value("CrashLoopBackOff=30s", keys).is_err());
        assert_eq!(
            grace_for_value("ErrImagePull=0s", keys),
            Ok(("ErrImagePull".into(), Duration::ZERO))
        );
        assert_eq!(
            grace_for_value("manifest_missing=2m", keys),
            Ok(("manifest_missing".into(), Duration::from_secs(120)))
        );
        assert!(grace_for_value("connect=2m", keys).is_err());
        assert!(grace_for_value("ErrImagePull=-1s", keys).is_err());
        assert!(grace_for_value("ErrImagePull", keys).is_err());
        assert!(is_qualified_name("ConfigIssue"));
        assert!(is_qualified_name("example.com/Stuck"));
        assert!(!is_qualified_name("Config Issue"));
        assert_eq!(
            crate::config::values::listen_address(":8081", 8081)
                .unwrap()
                .to_string(),
            "0.0.0.0:8081"
        );
        assert!(crate::config::values::listen_address("8081", 8081).is_err());
    }
}
