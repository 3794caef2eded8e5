//! The HTTPS server: TLS from the certificate channel, `/mutate` for AdmissionReviews,
//! `/healthz`, `/readyz` and `/metrics`, with bounds on everything a client controls: the
//! body's size, the connections at once, and the time of a handshake, a request and its body.

use super::admit::{Admitter, Outcome};
use super::metrics::Metrics;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The largest body read: the API server's own limit on a request (3 MiB), so any object it
/// accepted fits.
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;
/// Connections served at once; the next waits to be accepted. The API server keeps a few
/// connections per replica open, so this bounds only a flood.
const MAX_CONNECTIONS: usize = 256;
/// A TLS handshake, the request's head, and its body each must come within this: the API
/// server gives up after `timeoutSeconds` (at most 30 s, 2 s in the chart).
const CLIENT_TIME: Duration = Duration::from_secs(10);

/// What every connection shares.
pub(crate) struct Shared {
    pub(crate) admitter: Admitter,
    pub(crate) metrics: Metrics,
    pub(crate) ready: Arc<AtomicBool>,
}

/// Accepts connections for ever.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: rustls::ServerConfig,
    shared: Arc<Shared>,
) -> std::io::Error {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return std::io::Error::other("the connection semaphore closed");
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let shared = shared.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let Ok(Ok(tls)) = tokio::time::timeout(CLIENT_TIME, acceptor.accept(stream)).await
            else {
                return;
            };
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(route(req, &shared).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(CLIENT_TIME)
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn route(req: Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok\n".into()),
        (&Method::GET, "/readyz") if shared.ready.load(Ordering::SeqCst) => {
            text(StatusCode::OK, "ok\n".into())
        }
        (&Method::GET, "/readyz") => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "no certificate served yet\n".into(),
        ),
        (&Method::GET, "/metrics") => {
            let mut response = text(StatusCode::OK, shared.metrics.render());
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            response
        }
        (&Method::POST, "/mutate") => mutate(req, shared).await,
        _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
    }
}

async fn mutate(req: Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        shared.metrics.record(Outcome::Error, started.elapsed());
        return text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a review is at most {MAX_BODY} bytes\n"),
        );
    }
    let body = Limited::new(req.into_body(), MAX_BODY).collect();
    let body = match tokio::time::timeout(CLIENT_TIME, body).await {
        Ok(Ok(body)) => body.to_bytes(),
        Ok(Err(e)) => {
            shared.metrics.record(Outcome::Error, started.elapsed());
            let status = if e.is::<http_body_util::LengthLimitError>() {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                StatusCode::BAD_REQUEST
            };
            return text(status, format!("cannot read the request body: {e}\n"));
        }
        Err(_) => {
            shared.metrics.record(Outcome::Error, started.elapsed());
            return text(
                StatusCode::REQUEST_TIMEOUT,
                "the body came too slowly\n".into(),
            );
        }
    };
    match shared.admitter.review(&body) {
        Ok(answer) => {
            shared.metrics.record(answer.outcome, started.elapsed());
            let mut response = Response::new(Full::new(Bytes::from(answer.body)));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => {
            shared.metrics.record(Outcome::Error, started.elapsed());
            text(StatusCode::BAD_REQUEST, format!("{}\n", e.0))
        }
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}
