//! `pullcheck webhook`'s flags become one validated [`WebhookConfig`], every problem at once
//! (exit 2), before it listens: the address, what it adds (the init container, with `inject`'s
//! options validated once, or watch mode's Job rule), whether it only audits, and where its
//! certificate comes from.

use super::{ConfigErrors, InjectConfig, judged};
use crate::cli::webhook::{WebhookArgs, WebhookMode};
use crate::inject::ValidOptions;
use crate::manifests::names::is_qualified_name;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What the webhook adds.
#[derive(Debug)]
pub(crate) enum Adds {
    /// `--mode init` and `both`: the init container, as `inject` would add it (boxed: the
    /// options are large beside the other mode's one string).
    Inject(Box<ValidOptions>),
    /// `--mode watch`: only the Job rule `FailJob` on this condition type.
    Rule { condition_type: String },
}

/// Where the serving certificate comes from.
#[derive(Debug)]
pub(crate) enum Certificates {
    /// `--tls-cert-file` and `--tls-key-file`, read again when they change.
    Files { cert: PathBuf, key: PathBuf },
    /// `--self-signed`: its own CA, published in the configuration's caBundle.
    SelfSigned {
        service: String,
        namespace: String,
        configuration: String,
    },
}

/// The verdicts at admission (`--verdicts`, `--deny-missing`), validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VerdictConfig {
    /// How long a review waits for its verdicts.
    pub(crate) budget: Duration,
    /// Refuse a proven miss.
    pub(crate) deny: bool,
    /// Ask with the pods' own pull secrets (`--read-pull-secrets`).
    pub(crate) read_pull_secrets: bool,
    /// How long an image found is kept.
    pub(crate) hit_ttl: Duration,
    /// How long a miss, or nothing proven, is kept.
    pub(crate) miss_ttl: Duration,
    /// Lookups at once to one registry.
    pub(crate) per_registry: usize,
    /// Registries asked over plain HTTP.
    pub(crate) plain_http: Vec<String>,
    /// Tests only (the `test-hooks` feature): hosts connected to at a fixed address.
    pub(crate) resolve: Vec<(String, std::net::SocketAddr)>,
}

/// A validated `pullcheck webhook`.
#[derive(Debug)]
pub(crate) struct WebhookConfig {
    /// `--listen`.
    pub(crate) listen: SocketAddr,
    /// What it adds.
    pub(crate) adds: Adds,
    /// `--image` left at its default, which no registry serves (said at start in `init`).
    pub(crate) default_image: bool,
    /// Where its certificate comes from.
    pub(crate) certificates: Certificates,
    /// Its own namespace, whose objects it never edits.
    pub(crate) namespace: Option<String>,
    /// `--audit`: adds nothing, says what it would add.
    pub(crate) audit: bool,
    /// `--verdicts` (or `--deny-missing`): the images of what is created, judged.
    pub(crate) verdicts: Option<VerdictConfig>,
}

/// `--self-signed` without the namespace its certificate is made for.
const NO_NAMESPACE: &str = "--self-signed needs the webhook's namespace: --namespace or \
    PULLCHECK_WEBHOOK_NAMESPACE (the chart sets it from the downward API)";

impl WebhookConfig {
    /// Judges the flags; every problem is reported at once.
    pub(crate) fn from_args(args: WebhookArgs) -> Result<WebhookConfig, ConfigErrors> {
        let mut errors = Vec::new();
        let listen = crate::config::values::listen_address(&args.listen, 8443)
            .map_err(|e| errors.push(e.to_string()))
            .ok();
        let verdicts = verdict_config(&args, &mut errors);
        let watching = args.mode == WebhookMode::Watch;
        let inject = InjectConfig::from_args(args.inject)
            .map_err(|e| errors.extend(e.0))
            .ok();
        let default_image = inject.as_ref().is_some_and(|c| c.default_image);
        let adds = if watching {
            if !is_qualified_name(&args.condition_type) {
                errors.push(format!(
                    "--condition-type {}: expected a condition type such as ConfigIssue \
                     (letters, digits, `-`, `_`, `.`, an optional DNS prefix and `/`)",
                    args.condition_type
                ));
            }
            Some(Adds::Rule {
                condition_type: args.condition_type,
            })
        } else {
            // Checked once now, so that a bad flag is a usage error at start, not a warning
            // on every pod. In watch mode they are not used.
            inject.and_then(|c| {
                crate::inject::validate(c.options)
                    .map_err(|e| errors.extend(e.0))
                    .ok()
                    .map(|v| Adds::Inject(Box::new(v)))
            })
        };
        let namespace = args.namespace.filter(|n| !n.is_empty());
        let certificates = match (args.tls_cert_file, args.tls_key_file, args.self_signed) {
            (Some(cert), Some(key), false) => Some(Certificates::Files { cert, key }),
            (None, None, true) => match &namespace {
                Some(namespace) => Some(Certificates::SelfSigned {
                    service: args.service,
                    namespace: namespace.clone(),
                    configuration: args.webhook_configuration,
                }),
                None => {
                    errors.push(NO_NAMESPACE.to_string());
                    None
                }
            },
            _ => {
                errors.push("give --tls-cert-file and --tls-key-file, or --self-signed".into());
                None
            }
        };
        match (listen, adds, certificates) {
            (Some(listen), Some(adds), Some(certificates)) if errors.is_empty() => {
                Ok(WebhookConfig {
                    listen,
                    adds,
                    default_image,
                    certificates,
                    namespace,
                    audit: args.audit,
                    verdicts,
                })
            }
            _ => Err(ConfigErrors(errors)),
        }
    }
}

/// The verdicts' flags, judged (`None` when neither --verdicts nor --deny-missing is given;
/// their values are judged all the same, so that a bad one is said before it is needed).
fn verdict_config(args: &WebhookArgs, errors: &mut Vec<String>) -> Option<VerdictConfig> {
    let budget = judged(
        "--verdict-budget",
        &args.verdict_budget,
        Duration::ZERO,
        errors,
    );
    let hit_ttl = judged("--verdict-ttl", &args.verdict_ttl, Duration::ZERO, errors);
    let miss_ttl = judged(
        "--verdict-miss-ttl",
        &args.verdict_miss_ttl,
        Duration::ZERO,
        errors,
    );
    let mut plain_http = Vec::new();
    for host in &args.verdict_plain_http {
        let host = host.trim();
        if host.is_empty() || host.contains('/') || host.chars().any(char::is_whitespace) {
            errors.push(format!(
                "--verdict-plain-http {host:?}: expected a registry host, host:port"
            ));
        } else {
            plain_http.push(host.to_string());
        }
    }
    // Tests only, and only in a build with the `test-hooks` feature (src/test_hooks.rs).
    let resolve = crate::test_hooks::pinned_hosts(errors);
    (args.verdicts || args.deny_missing).then_some(VerdictConfig {
        budget,
        deny: args.deny_missing,
        read_pull_secrets: args.read_pull_secrets,
        hit_ttl,
        miss_ttl,
        per_registry: usize::from(args.verdict_registry_concurrency),
        plain_http,
        resolve,
    })
}
