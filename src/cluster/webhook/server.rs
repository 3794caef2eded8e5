//! The HTTPS server: TLS from the certificate channel, `/mutate` for AdmissionReviews,
//! `/healthz`, `/readyz` and `/metrics`, with bounds on everything a client controls: the
//! body's size, the bytes of all the bodies held at once, the connections at once, and the
//! time of a handshake, a request and its body.

use super::admit::{Admitter, Unreadable};
use super::decision::ReviewOutcome;
use super::metrics::Metrics;
use super::review::Review;
use crate::cluster::serve::Bounds;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The largest body read: the API server's own limit on a request (3 MiB), so any object it
/// accepted fits.
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;
/// Connections served at once; the next waits to be accepted. The API server keeps a few
/// connections per replica open, so this bounds only a flood.
const MAX_CONNECTIONS: usize = 256;
/// A TLS handshake, the request's head, and its body each must come within this: the API
/// server gives up after `timeoutSeconds` (at most 30 s, 2 s in the chart).
const CLIENT_TIME: Duration = Duration::from_secs(10);

/// The bytes of all the large review bodies held at once, in KiB. Without it, 256 connections
/// of 3 MiB each are 768 MiB, past the chart's memory limit (128 Mi), and the webhook would be
/// killed. Reviews are answered one at a time (one thread); one of 2.9 MB took 75 MB more at
/// its peak (a pod of 18,000 variables, in a unit test's `VmHWM`). This budget (four of the
/// largest bodies), the small bodies (at most 256 × 64 KiB), one review's work and the binary
/// stay under the limit.
const BODY_BUDGET_KIB: u32 = 12 * 1024;
/// A body up to this size takes nothing from the budget: a pod's review is a few KiB, so they
/// never wait behind a flood of large ones, and [`MAX_CONNECTIONS`] bounds them.
const SMALL_BODY: u64 = 64 * 1024;
/// How long a body waits for room in that budget: the chart's `timeoutSeconds`, after which
/// the API server has given up (and admitted the object, with `failurePolicy: Ignore`).
const BUDGET_WAIT: Duration = Duration::from_secs(2);

/// What every connection shares.
pub(crate) struct Shared {
    pub(crate) admitter: Admitter,
    /// `--verdicts`: the images of what is created, judged.
    pub(crate) verdicts: Option<super::verdicts::Verdicts>,
    /// The namespaces' LimitRanges, read for each review that may inject (from the store a
    /// watch keeps, or listed).
    pub(crate) limit_ranges: super::limit_ranges::Reader,
    pub(crate) metrics: Metrics,
    pub(crate) ready: Arc<AtomicBool>,
    /// [`BODY_BUDGET_KIB`], taken for each body as it is read.
    bodies: Arc<Semaphore>,
}

impl Shared {
    pub(crate) fn new(
        admitter: Admitter,
        verdicts: Option<super::verdicts::Verdicts>,
        limit_ranges: super::limit_ranges::Reader,
        metrics: Metrics,
        ready: Arc<AtomicBool>,
    ) -> Shared {
        Shared {
            admitter,
            verdicts,
            limit_ranges,
            metrics,
            ready,
            bodies: Arc::new(Semaphore::new(BODY_BUDGET_KIB as usize)),
        }
    }
}

/// The share of the body budget a request takes: its Content-Length, or the largest body when
/// it has none (chunked), in KiB rounded up; none for a small body.
fn share_kib(declared: Option<u64>) -> u32 {
    let bytes = declared.unwrap_or(MAX_BODY as u64).min(MAX_BODY as u64);
    if bytes <= SMALL_BODY {
        return 0;
    }
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// Room for a body of `declared` bytes in the budget, waiting at most [`BUDGET_WAIT`].
async fn reserve(budget: &Arc<Semaphore>, declared: Option<u64>) -> Option<OwnedSemaphorePermit> {
    let share = budget.clone().acquire_many_owned(share_kib(declared));
    tokio::time::timeout(BUDGET_WAIT, share).await.ok()?.ok()
}

/// Accepts connections for ever.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: rustls::ServerConfig,
    shared: Arc<Shared>,
) -> std::io::Error {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let bounds = Bounds {
        connections: MAX_CONNECTIONS,
        client_time: CLIENT_TIME,
    };
    let handshake = move |stream: TcpStream| {
        let acceptor = acceptor.clone();
        async move {
            tokio::time::timeout(CLIENT_TIME, acceptor.accept(stream))
                .await
                .ok()?
                .ok()
        }
    };
    let answer = move |req: Request<Incoming>| {
        let shared = shared.clone();
        async move { route(req, &shared).await }
    };
    crate::cluster::serve::accept(listener, bounds, handshake, answer).await
}

async fn route(req: Request<Incoming>, shared: &Arc<Shared>) -> Response<Full<Bytes>> {
    let ready = shared.ready.load(Ordering::SeqCst);
    let probed = crate::cluster::serve::probe(
        req.method(),
        req.uri().path(),
        ready,
        "no certificate served yet",
        || shared.metrics.render(),
    );
    if let Some(answer) = probed {
        return answer;
    }
    match (req.method(), req.uri().path()) {
        (&Method::POST, "/mutate") => mutate(req, shared).await,
        _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
    }
}

async fn mutate(req: Request<Incoming>, shared: &Arc<Shared>) -> Response<Full<Bytes>> {
    let started = Instant::now();
    // The body's room in the budget is held until the review is answered.
    let (outcome, response) = match body_of(req, &shared.bodies).await {
        Ok((body, _room)) => answer_review(body, shared).await,
        Err(refused) => (ReviewOutcome::Error, refused),
    };
    shared.metrics.record(outcome, started.elapsed());
    response
}

/// The request's body, within [`MAX_BODY`], [`CLIENT_TIME`] and the room of `budget` it
/// takes (held by the caller while it answers); `Err`: the answer that refuses it.
async fn body_of(
    req: Request<Incoming>,
    budget: &Arc<Semaphore>,
) -> Result<(Bytes, OwnedSemaphorePermit), Response<Full<Bytes>>> {
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a review is at most {MAX_BODY} bytes\n"),
        ));
    }
    let Some(room) = reserve(budget, declared).await else {
        return Err(text(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many large reviews at once\n".into(),
        ));
    };
    let body = Limited::new(req.into_body(), MAX_BODY).collect();
    match tokio::time::timeout(CLIENT_TIME, body).await {
        Ok(Ok(body)) => Ok((body.to_bytes(), room)),
        Ok(Err(e)) => {
            let status = if e.is::<http_body_util::LengthLimitError>() {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                StatusCode::BAD_REQUEST
            };
            Err(text(status, format!("cannot read the request body: {e}\n")))
        }
        Err(_) => Err(text(
            StatusCode::REQUEST_TIMEOUT,
            "the body came too slowly\n".into(),
        )),
    }
}

/// One review's body read, judged and answered: what came of it, and the answer.
async fn answer_review(
    body: Bytes,
    shared: &Arc<Shared>,
) -> (ReviewOutcome, Response<Full<Bytes>>) {
    // The server runs on one thread: a large review (up to 3 MiB, most of a second in a debug
    // build) is read and decided on the blocking pool, so that small reviews and the probes go
    // on meanwhile. It is read once, and what it asks given to the LimitRange reader, the
    // verdicts and the admitter.
    let large = body.len() as u64 > SMALL_BODY;
    let review = if large {
        tokio::task::spawn_blocking(move || Review::read(&body))
            .await
            .ok()
    } else {
        Some(Review::read(&body))
    };
    let Some(review) = review else {
        return (
            ReviewOutcome::Error,
            text(
                StatusCode::BAD_REQUEST,
                "the review's decision failed\n".into(),
            ),
        );
    };
    // The LimitRanges first (from memory, or a list bounded by `limit_ranges::READ_TIME`), so
    // that the decision itself does no I/O.
    // In watch mode nothing is injected, so there are no resources to fit: no read.
    let injects = shared.admitter.injects();
    // The verdicts beside them, within their own budget.
    let ranges = async {
        match super::limit_ranges::namespace_of(&review).filter(|_| injects) {
            Some(namespace) => {
                let (read, source) = shared.limit_ranges.read(namespace).await;
                if let Some(source) = source {
                    shared.metrics.limit_ranges_read(source);
                }
                Some(read)
            }
            None => None,
        }
    };
    let judged = async {
        match &shared.verdicts {
            Some(verdicts) => verdicts.judge(&review).await,
            None => super::verdicts::Judged::default(),
        }
    };
    let (ranges, judged) = tokio::join!(ranges, judged);
    let decided = if large {
        let shared = shared.clone();
        tokio::task::spawn_blocking(move || shared.admitter.answer(&review, ranges, judged))
            .await
            .unwrap_or_else(|_| Err(Unreadable("the review's decision failed".into())))
    } else {
        shared.admitter.answer(&review, ranges, judged)
    };
    match decided {
        Ok(answer) => {
            let mut response = Response::new(Full::new(Bytes::from(answer.body)));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            (answer.outcome, response)
        }
        Err(e) => (
            ReviewOutcome::Error,
            text(StatusCode::BAD_REQUEST, format!("{}\n", e.0)),
        ),
    }
}

use crate::cluster::serve::text;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_takes_its_size_from_the_budget() {
        assert_eq!(share_kib(Some(0)), 0);
        assert_eq!(share_kib(Some(SMALL_BODY)), 0);
        assert_eq!(share_kib(Some(SMALL_BODY + 1)), 65);
        assert_eq!(share_kib(Some(1024 * 1024)), 1024);
        // No Content-Length (chunked): the largest body it may become.
        assert_eq!(share_kib(None), 3 * 1024);
        assert_eq!(share_kib(Some(u64::MAX)), 3 * 1024);
        // The largest bodies the budget holds at once, where 256 connections could bring 256.
        assert_eq!(BODY_BUDGET_KIB / share_kib(None), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_budget_a_large_body_waits_then_is_refused_and_small_ones_still_pass() {
        let budget = Arc::new(Semaphore::new(BODY_BUDGET_KIB as usize));
        let mut large = Vec::new();
        for _ in 0..4 {
            large.push(
                reserve(&budget, None)
                    .await
                    .expect("room for 4 large bodies"),
            );
        }
        // The fifth waits BUDGET_WAIT, then is refused (503: the API server admits the object).
        let started = tokio::time::Instant::now();
        assert!(reserve(&budget, Some(MAX_BODY as u64)).await.is_none());
        assert_eq!(started.elapsed(), BUDGET_WAIT);
        // A pod's review does not wait behind them.
        assert!(reserve(&budget, Some(4096)).await.is_some());
        assert_eq!(started.elapsed(), BUDGET_WAIT);
        // One freed: room again.
        large.pop();
        assert!(reserve(&budget, Some(MAX_BODY as u64)).await.is_some());
    }
}
