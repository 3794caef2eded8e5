//! `pullcheck webhook` (the `webhook` cargo feature): a mutating admission webhook that adds
//! the init container to Pods and batch/v1 Jobs as they are created, with the code of
//! `pullcheck inject` (`--mode init`, `both`), or only the Job rule on `pullcheck watch`'s
//! condition (`--mode watch`).
//!
//! - [`admit`]: one AdmissionReview in, its answer out (who gets the container, the patch);
//! - [`watch_mode`]: `--mode watch`'s decision, from a Job or CronJob to its patch;
//! - [`decision`]: what a review comes to, which both of those decide, and the outcome the
//!   metrics count;
//! - [`patch`]: the JSON patch between the object and what `inject` made of it;
//! - [`server`]: HTTPS, the routes, the bounds on what a client sends;
//! - [`tls`]: the serving certificate, from a watch channel its sources send into;
//! - [`metrics`]: the Prometheus text at `/metrics`;
//! - [`limit_ranges`]: each namespace's LimitRanges, which the init container's resources
//!   must pass, read within a bound;
//! - [`cert`]: the webhook's own TLS certificate (`--self-signed`): a CA and a serving
//!   certificate made in memory, the CA written into the `MutatingWebhookConfiguration`'s
//!   `caBundle`, renewed before expiry without a restart.

pub(crate) mod admit;
pub mod cert;
pub(crate) mod decision;
pub(crate) mod limit_ranges;
pub(crate) mod metrics;
pub(crate) mod patch;
pub(crate) mod server;
pub(crate) mod tls;
pub(crate) mod watch_mode;

use crate::cli::webhook::{WebhookArgs, WebhookMode};
use crate::config::InjectConfig;
use crate::log::{self, Component};
use crate::report::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// How long the webhook serves after SIGTERM: endpoints take a few seconds to drop a pod, well
/// within a pod's default 30 s grace period.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the webhook until SIGTERM or SIGINT.
pub(crate) fn run(args: WebhookArgs) -> ExitCode {
    match start(args) {
        Ok(code) => code,
        Err(e) => {
            log::error(Component::Command, &e);
            ExitCode::Usage
        }
    }
}

fn start(args: WebhookArgs) -> Result<ExitCode, String> {
    let listen = crate::serve::listen_address(&args.listen, 8443)?;
    let config = InjectConfig::from_args(args.inject).map_err(|e| e.0.join("; "))?;
    let watching = args.mode == WebhookMode::Watch;
    if watching && !watch_mode::is_condition_type(&args.condition_type) {
        return Err(format!(
            "--condition-type {}: expected a condition type such as ConfigIssue (letters, \
             digits, `-`, `_`, `.`, an optional DNS prefix and `/`)",
            args.condition_type
        ));
    }
    if config.default_image && !watching {
        // Said at start for the operator, who reads this log; the pods' creators see inject's
        // warning of it on every pod admitted.
        log::warning(
            Component::Webhook,
            &format!(
                "--image left at its default {}, which no registry \
             serves: every pod it admits would wait on an init container that cannot be pulled",
                crate::cli::DEFAULT_INJECT_IMAGE
            ),
        );
    }
    let admitter = if watching {
        log::info(
            Component::Webhook,
            &format!(
                "mode watch: pods admitted unchanged; Jobs and CronJobs get \
             the podFailurePolicy rule FailJob on {}",
                &args.condition_type
            ),
        );
        admit::Admitter::watching(args.condition_type.clone(), args.namespace.clone())
    } else {
        // Checked once now, so that a bad flag is a usage error at start, not a warning on
        // every pod. In watch mode they are not used.
        let options = crate::inject::validate(config.options).map_err(|e| e.0)?;
        admit::Admitter::injecting(options, args.namespace.clone())
    };
    let runtime = crate::serve::runtime()?;
    let (tx, rx) = tokio::sync::watch::channel(None);
    let ready = Arc::new(AtomicBool::new(false));
    let tls = tls::server_config(rx)?;
    runtime.block_on(async move {
        let source: std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>>>> =
            match (&args.tls_cert_file, &args.tls_key_file, args.self_signed) {
                (Some(cert), Some(key), false) => {
                    let files = tls::Files {
                        cert: cert.clone(),
                        key: key.clone(),
                    };
                    let stamp = files.first(&tx, &ready)?;
                    Box::pin(async move {
                        files.watch(stamp, tx).await;
                        Ok(())
                    })
                }
                (None, None, true) => {
                    let namespace = args.namespace.as_deref().filter(|n| !n.is_empty());
                    let Some(namespace) = namespace else {
                        return Err(NO_NAMESPACE.into());
                    };
                    let settings = cert::SelfSigned::new(
                        &args.service,
                        namespace,
                        &args.webhook_configuration,
                    );
                    Box::pin(cert::run(settings, tx, ready.clone()))
                }
                _ => {
                    return Err("give --tls-cert-file and --tls-key-file, or --self-signed".into());
                }
            };
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("--listen {listen}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        log::info(Component::Webhook, &format!("listening on {bound}"));
        let (limit_ranges, no_client) = limit_ranges::Reader::in_cluster();
        if let Some(why) = no_client {
            log::warning(
                Component::Webhook,
                &format!(
                    "no in-cluster configuration ({why}): the namespaces' LimitRanges are not \
                     read, and the init container takes the requests and limits of one of each \
                     pod's own containers"
                ),
            );
        }
        let shared = Arc::new(server::Shared::new(admitter, limit_ranges, ready));
        let ready = shared.ready.clone();
        let serving = server::serve(listener, tls, shared);
        tokio::pin!(serving);
        let signal = tokio::select! {
            e = &mut serving => return Err(format!("the server stopped: {e}")),
            r = source => return Err(r.err().unwrap_or_else(|| "the certificate source stopped".into())),
            signal = crate::serve::stopped() => signal,
        };
        // The API server may still send reviews here until the endpoints drop this pod, and
        // with failurePolicy Ignore those pods would be created without the container: keep
        // serving a while, not ready, then stop.
        log::info(
            Component::Webhook,
            &format!("{signal}: not ready; serving {DRAIN:?} more, then stopping"),
        );
        ready.store(false, std::sync::atomic::Ordering::SeqCst);
        let _ = tokio::time::timeout(DRAIN, &mut serving).await;
        Ok(ExitCode::Ok)
    })
}

/// `--self-signed` without the namespace its certificate is made for.
const NO_NAMESPACE: &str = "--self-signed needs the webhook's namespace: --namespace or \
    PULLCHECK_WEBHOOK_NAMESPACE (the chart sets it from the downward API)";
