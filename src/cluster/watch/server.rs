//! `/healthz`, `/readyz` and `/metrics` in plain HTTP: no secret crosses it, and the kubelet's
//! probes and Prometheus speak it. The webhook's server is TLS and routes admission reviews; the
//! answers both give are in `crate::cluster::serve`, a leaf that ties neither feature to the other.

use super::metrics::Metrics;
use crate::cluster::serve::Bounds;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// Connections at once: probes and a scraper use a few.
const MAX_CONNECTIONS: usize = 64;
/// A request's head must come within this.
const CLIENT_TIME: Duration = Duration::from_secs(10);

/// What the routes read.
pub(crate) struct Shared {
    pub(crate) metrics: Arc<Metrics>,
    /// Set once the first list of pending pods and namespaces is in.
    pub(crate) ready: Arc<AtomicBool>,
}

/// Accepts connections for ever.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) -> std::io::Error {
    let bounds = Bounds {
        connections: MAX_CONNECTIONS,
        client_time: CLIENT_TIME,
    };
    let plain = |stream: TcpStream| async move { Some(stream) };
    let answer = move |req: Request<Incoming>| {
        let shared = shared.clone();
        async move { route(&req, &shared) }
    };
    crate::cluster::serve::accept(listener, bounds, plain, answer).await
}

fn route(req: &Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    let ready = shared.ready.load(Ordering::SeqCst);
    crate::cluster::serve::probe(
        req.method(),
        req.uri().path(),
        ready,
        "the first list of pods and namespaces is not in yet",
        || shared.metrics.render(),
    )
    .unwrap_or_else(|| crate::cluster::serve::text(StatusCode::NOT_FOUND, "not found\n".into()))
}
