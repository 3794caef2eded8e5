//! `pullcheck webhook` (the `webhook` cargo feature): a mutating admission webhook that adds
//! the init container to Pods and batch/v1 Jobs as they are created, with the code of
//! `pullcheck inject` (`--mode init`, `both`), or only the Job rule on `pullcheck watch`'s
//! condition (`--mode watch`).
//!
//! - [`admit`]: one AdmissionReview in, its answer out (who gets the container, the patch);
//! - [`watch_mode`]: `--mode watch`'s decision, from a Job or CronJob to its patch;
//! - [`audit`]: `--audit`'s decision, from what would be patched to the warnings that say it;
//! - [`decision`]: what a review comes to, which both of those decide, and the outcome the
//!   metrics count;
//! - [`patch`]: the JSON patch between the object and what `inject` made of it;
//! - [`server`]: HTTPS, the routes, the bounds on what a client sends;
//! - [`tls`]: the serving certificate, from a watch channel its sources send into;
//! - [`metrics`]: the Prometheus text at `/metrics`;
//! - [`verdicts`]: `--verdicts` and `--deny-missing`: the images of what is created, asked of
//!   their registries through one cache, and a proven miss said as a warning or a refusal;
//! - [`limit_ranges`]: each namespace's LimitRanges, which the init container's resources
//!   must pass: the cluster's, kept in memory by a watch, or listed within a bound;
//! - [`cert`]: the webhook's own TLS certificate (`--self-signed`): a CA and a serving
//!   certificate made in memory, the CA written into the `MutatingWebhookConfiguration`'s
//!   `caBundle`, renewed before expiry without a restart.

pub(crate) mod admit;
pub(crate) mod audit;
pub mod cert;
pub(crate) mod decision;
pub(crate) mod limit_ranges;
pub(crate) mod metrics;
pub(crate) mod patch;
pub(crate) mod server;
pub(crate) mod tls;
pub(crate) mod verdicts;
pub(crate) mod watch_mode;

use crate::cli::webhook::WebhookArgs;
use crate::config::{Adds, Certificates, WebhookConfig};
use crate::log::{self, Component};
use crate::report::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// How long the webhook serves after SIGTERM: endpoints take a few seconds to drop a pod, well
/// within a pod's default 30 s grace period.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the webhook until SIGTERM or SIGINT.
pub(crate) fn run(args: WebhookArgs) -> ExitCode {
    let config = WebhookConfig::from_args(args).map_err(|problems| problems.0);
    crate::cluster::serve::run(config, start)
}

fn start(config: WebhookConfig) -> Result<ExitCode, StartError> {
    let WebhookConfig {
        listen,
        adds,
        default_image,
        certificates,
        namespace,
        audit,
        verdicts,
    } = config;
    let admitter = match adds {
        Adds::Inject(options) => {
            if default_image {
                // Said at start for the operator, who reads this log; the pods' creators see
                // inject's warning of it on every pod admitted.
                log::warning(
                    Component::Webhook,
                    &format!(
                        "--image left at its default {}, which no registry serves: every pod \
                         it admits would wait on an init container that cannot be pulled",
                        crate::cli::DEFAULT_INJECT_IMAGE
                    ),
                );
            }
            admit::Admitter::injecting(*options, namespace)
        }
        Adds::Rule { condition_type } => {
            log::info(
                Component::Webhook,
                &format!(
                    "mode watch: pods admitted unchanged; Jobs and CronJobs get the \
                     podFailurePolicy rule FailJob on {condition_type}"
                ),
            );
            admit::Admitter::watching(condition_type, namespace)
        }
    }
    .auditing(audit);
    if audit {
        log::info(
            Component::Webhook,
            "audit mode (--audit): nothing is added; each object it would change is admitted \
             unchanged, with warnings of what it would add (counted as outcome=\"audited\")",
        );
    }
    let runtime = crate::cluster::serve::runtime()?;
    let (tx, rx) = tokio::sync::watch::channel(None);
    let ready = Arc::new(AtomicBool::new(false));
    let tls = tls::server_config(rx)?;
    runtime.block_on(async move {
        let source: std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StartError>>>> =
            match certificates {
                Certificates::Files { cert, key } => {
                    let files = tls::Files { cert, key };
                    let stamp = files.first(&tx, &ready)?;
                    Box::pin(async move {
                        files.watch(stamp, tx).await;
                        Ok(())
                    })
                }
                Certificates::SelfSigned {
                    service,
                    namespace,
                    configuration,
                } => {
                    let settings = cert::SelfSigned::new(&service, &namespace, &configuration);
                    let ready = ready.clone();
                    Box::pin(async move {
                        cert::run(settings, tx, ready)
                            .await
                            .map_err(StartError::SelfSigned)
                    })
                }
            };
        let (listener, bound) = crate::cluster::serve::bind(listen).await?;
        log::info(Component::Webhook, &format!("listening on {bound}"));
        let (mut limit_ranges, no_client) = limit_ranges::Reader::in_cluster();
        // In watch mode nothing is injected and no LimitRange is read: no watch of them either.
        if admitter.injects() {
            limit_ranges.keep();
        }
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
        let metrics = metrics::Metrics::default();
        let verdicts = verdicts.map(|config| judging(config, &limit_ranges, &metrics));
        let shared = Arc::new(server::Shared::new(
            admitter,
            verdicts,
            limit_ranges,
            metrics,
            ready,
        ));
        let ready = shared.ready.clone();
        let serving = server::serve(listener, tls, shared);
        tokio::pin!(serving);
        let signal = tokio::select! {
            e = &mut serving => return Err(crate::cluster::serve::ServeError::Stopped(e).into()),
            r = source => return Err(r.err().unwrap_or(StartError::SourceStopped)),
            signal = crate::cluster::serve::stopped() => signal,
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

/// The verdicts `config` asks for (said once in the log), reading the nodes with the client
/// the LimitRanges are read with, counting into the webhook's metrics.
fn judging(
    config: crate::config::VerdictConfig,
    limit_ranges: &limit_ranges::Reader,
    metrics: &metrics::Metrics,
) -> verdicts::Verdicts {
    log::info(
        Component::Webhook,
        &format!(
            "verdicts at admission: the images of new Pods, Jobs and CronJobs are asked of \
             their registries (budget {:?} a review); a proven miss is {}",
            config.budget,
            if config.deny {
                "refused (--deny-missing)"
            } else {
                "a warning"
            }
        ),
    );
    verdicts::Verdicts::new(config, limit_ranges.client(), metrics.verdicts.clone())
}

/// Why the webhook could not start, or stopped.
#[derive(Debug, thiserror::Error)]
enum StartError {
    /// The runtime, the listener, or the server's end.
    #[error(transparent)]
    Serve(#[from] crate::cluster::serve::ServeError),
    /// rustls refused the server's configuration.
    #[error("{0}")]
    Tls(#[from] rustls::Error),
    /// The certificate files could not be loaded at start.
    #[error(transparent)]
    Files(#[from] tls::LoadError),
    /// `--self-signed` cannot go on.
    #[error(transparent)]
    SelfSigned(cert::SelfSignedError),
    /// The certificate source ended without an error (it never does but by a bug).
    #[error("the certificate source stopped")]
    SourceStopped,
}
