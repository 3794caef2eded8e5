//! `pullcheck webhook` (the `webhook` cargo feature): a mutating admission webhook that adds
//! the init container to Pods and batch/v1 Jobs as they are created, with the code of
//! `pullcheck inject` (`--mode init`, `both`), or only the Job rule on `pullcheck watch`'s
//! condition (`--mode watch`).
//!
//! - [`review`]: one AdmissionReview, read once from the body, for all that read it;
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
pub(crate) mod review;
pub(crate) mod server;
pub(crate) mod tls;
pub(crate) mod verdicts;
pub(crate) mod watch_mode;

use crate::cli::webhook::WebhookArgs;
use crate::cluster::door::Door;
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
    let admitter = admitter(adds, default_image, namespace, audit);
    let runtime = crate::cluster::serve::runtime()?;
    let (tx, rx) = tokio::sync::watch::channel(None);
    let ready = Arc::new(AtomicBool::new(false));
    let tls = tls::server_config(rx)?;
    runtime.block_on(async move {
        // The one door to the API server, lent to all that go through it.
        let door = Door::in_cluster();
        let source = certificate_source(certificates, door.as_ref().ok(), tx, &ready)?;
        let (listener, bound) = crate::cluster::serve::bind(listen).await?;
        log::info(Component::Webhook, &format!("listening on {bound}"));
        let limit_ranges = limit_range_reader(&door, admitter.injects());
        let metrics = metrics::Metrics::default();
        let verdicts = verdicts.map(|config| judging(config, door.ok(), &metrics));
        let shared = server::Shared::new(admitter, verdicts, limit_ranges, metrics, ready);
        serve_until_stopped(listener, tls, Arc::new(shared), source).await
    })
}

/// The admitter of the webhook's mode, said once in the log.
fn admitter(
    adds: Adds,
    default_image: bool,
    namespace: Option<String>,
    audit: bool,
) -> admit::Admitter {
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
    admitter
}

/// What keeps the served certificate current, to run beside the server: the files' watch, or
/// `--self-signed` through `door`. The files are loaded here first, so that a missing one
/// stops the start.
fn certificate_source(
    certificates: Certificates,
    door: Option<&Door>,
    tx: tokio::sync::watch::Sender<Option<Arc<rustls::sign::CertifiedKey>>>,
    ready: &Arc<AtomicBool>,
) -> Result<Source, StartError> {
    Ok(match certificates {
        Certificates::Files { cert, key } => {
            let files = tls::Files { cert, key };
            let stamp = files.first(&tx, ready)?;
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
            let (door, ready) = (door.cloned(), ready.clone());
            Box::pin(async move {
                cert::run(settings, door, tx, ready)
                    .await
                    .map_err(StartError::SelfSigned)
            })
        }
    })
}

/// The certificate's source: it runs until the webhook stops, and ends only on an error.
type Source = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StartError>>>>;

/// The LimitRanges' reader through `door`, keeping them in memory when the webhook injects
/// (in watch mode nothing is injected and no LimitRange is read: no watch of them either);
/// outside a cluster, none, said once.
fn limit_range_reader(door: &Result<Door, String>, injects: bool) -> limit_ranges::Reader {
    let mut reader = limit_ranges::Reader::new(door.as_ref().ok().cloned());
    if injects {
        reader.keep();
    }
    if let Err(why) = door {
        log::warning(
            Component::Webhook,
            &format!(
                "no in-cluster configuration ({why}): the namespaces' LimitRanges are not \
                 read, and the init container takes the requests and limits of one of each \
                 pod's own containers"
            ),
        );
    }
    reader
}

/// Serves until SIGTERM or SIGINT, then a while more not ready ([`DRAIN`]); an error of the
/// server or of the certificate's `source` stops it at once.
async fn serve_until_stopped(
    listener: tokio::net::TcpListener,
    tls: rustls::ServerConfig,
    shared: Arc<server::Shared>,
    source: Source,
) -> Result<ExitCode, StartError> {
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
}

/// The verdicts `config` asks for (said once in the log), reading the nodes and pull secrets
/// through the webhook's `door`, counting into the webhook's metrics.
fn judging(
    config: crate::config::VerdictConfig,
    door: Option<Door>,
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
    verdicts::Verdicts::new(config, door, metrics.verdicts.clone())
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
