//! `pullcheck watch` (the `watch` cargo feature): the stuck-pod controller. It fails the pending
//! pods that no init container can save (a tag, a credential, a Secret or a command that is not
//! there), so that a Job's `podFailurePolicy` fails the Job, and only reports the others.
//!
//! - [`classify`]: the kubelet's words for a waiting container, permanent or transient;
//! - [`grace`]: how long each verdict stands before it is acted on;
//! - [`seen`]: what was seen of one pod: each container's verdict since when, and the
//!   kubelet's attempts from its Events (the evidence, and whether it is fresh);
//! - [`decide`]: what to do with one pod, from the pod, the time and what was seen (no I/O);
//! - [`breaker`]: the bound on owners that recreate what is failed (no I/O);
//! - `confirm`: the watcher's own manifest HEAD before a pod is failed for a missing image;
//! - the flags are judged, all problems at once, in `config/watch.rs` (`WatchConfig`);
//! - `run`: the watches, the tick, and the actions while this replica leads;
//! - `act`: the writes (condition, Event, activeDeadlineSeconds) and the read of the kubelet's Events;
//! - `lease`: leader election over a `coordination.k8s.io` Lease;
//! - `server`, `metrics`: `/healthz`, `/readyz`, `/metrics` in plain HTTP.

pub(crate) mod act;
pub(crate) mod breaker;
pub(crate) mod classify;
pub(crate) mod confirm;
pub(crate) mod decide;
pub(crate) mod grace;
pub(crate) mod lease;
pub(crate) mod metrics;
pub(crate) mod run;
pub(crate) mod seen;
pub(crate) mod server;

use crate::cli::watch::WatchArgs;
use crate::cluster::door::Door;
use crate::cluster::serve::ServeError;
use crate::config::WatchConfig;
use crate::log::{self, Component};
use crate::report::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Runs the watcher until SIGTERM or SIGINT.
pub(crate) fn run(args: WatchArgs) -> ExitCode {
    let hostname = std::env::var("HOSTNAME").ok();
    let config = WatchConfig::from_args(args, hostname, &grace::keys()).map_err(|p| p.0);
    crate::cluster::serve::run(config, start)
}

fn start(config: WatchConfig) -> Result<ExitCode, StartError> {
    let runtime = crate::cluster::serve::runtime()?;
    runtime.block_on(async move {
        let (listener, bound) = crate::cluster::serve::bind(config.listen).await?;
        // The one door to the API server, lent to all that go through it.
        let door = Door::inferred().await.map_err(StartError::NoClient)?;
        let grace = match config.settings.graces.all {
            Some(g) => format!("grace {g:?}"),
            None => "each verdict's own grace".to_string(),
        };
        let confirm = if config.confirm {
            ""
        } else {
            "; no registry confirmation"
        };
        let dry_run = if config.dry_run {
            "; dry run: nothing is written"
        } else {
            ""
        };
        let label = &config.namespace_label;
        log::info(
            Component::Watch,
            &format!(
                "listening on {bound}; namespaces labelled {label}; {grace}{confirm}{dry_run}"
            ),
        );
        let metrics = Arc::new(metrics::Metrics::default());
        let ready = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(server::Shared {
            metrics: metrics.clone(),
            ready: ready.clone(),
        });
        let elector = lease::Elector::new(
            &door,
            &config.namespace,
            &config.lease_name,
            &config.identity,
            config.lease_duration,
        );
        let (leading_tx, leading) = tokio::sync::watch::channel(false);
        let gauge = metrics.clone();
        let mut leading_gauge = leading.clone();
        let breaker = std::sync::Mutex::new(breaker::Breaker::new(
            config.owner_failure_limit,
            config.owner_failure_window,
        ));
        let watcher = run::Watcher {
            actor: act::Actor::new(door.clone(), &config.identity),
            breaker,
            config,
            metrics,
            ready,
            leading,
        };
        let releaser = elector.clone();
        let gauge_task = async move {
            while leading_gauge.changed().await.is_ok() {
                let leads = *leading_gauge.borrow();
                gauge
                    .leader
                    .store(u64::from(leads), std::sync::atomic::Ordering::Relaxed);
            }
            std::future::pending::<()>().await;
        };
        tokio::select! {
            e = server::serve(listener, shared) => return Err(ServeError::Stopped(e).into()),
            why = watcher.run(door.client()) => return Err(StartError::Watcher(why)),
            () = elector.run(leading_tx) => return Err(StartError::ElectionStopped),
            () = gauge_task => {}
            signal = crate::cluster::serve::stopped() => {
                log::info(Component::Watch, &format!("{signal}: giving the lease up and stopping"));
            }
        }
        // Bounded: an API server that does not answer must not hold the pod past its grace
        // period; the Lease then expires on its own.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), releaser.release()).await;
        Ok(ExitCode::Ok)
    })
}

/// Why the watcher could not start, or stopped.
#[derive(Debug, thiserror::Error)]
enum StartError {
    /// The runtime, the listener, or the server's end.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// No Kubernetes client configuration.
    #[error("cannot reach the API server (in-cluster config or KUBECONFIG): {0}")]
    NoClient(#[source] kube::Error),
    /// The watch ended, with its words.
    #[error("{0}")]
    Watcher(String),
    /// The leader election's loop ended (it never does but by a bug).
    #[error("the leader election stopped")]
    ElectionStopped,
}
