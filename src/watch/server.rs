//! `/healthz`, `/readyz` and `/metrics` in plain HTTP: no secret crosses it, and the kubelet's
//! probes and Prometheus speak it. The webhook's server is TLS and routes admission reviews; the
//! answers both give are in `crate::serve`, a leaf that ties neither feature to the other.

use super::metrics::Metrics;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

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
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return std::io::Error::other("the connection semaphore closed");
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(route(&req, &shared)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(CLIENT_TIME)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn route(req: &Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    let ready = shared.ready.load(Ordering::SeqCst);
    crate::serve::probe(
        req.method(),
        req.uri().path(),
        ready,
        "the first list of pods and namespaces is not in yet",
        || shared.metrics.render(),
    )
    .unwrap_or_else(|| crate::serve::text(StatusCode::NOT_FOUND, "not found\n".into()))
}
