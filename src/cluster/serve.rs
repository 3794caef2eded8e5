//! What the two cluster-wide servers share (`pullcheck webhook`, `pullcheck watch`): the
//! `--listen` address, the runtime, the whole run (flags judged, then started), the accept
//! loop (TLS or not) with its bounds, the signals that stop them, the `/healthz`, `/readyz` and
//! `/metrics` answers, and the metric types both write in Prometheus' text format (a
//! histogram, a counter family). A leaf that knows neither feature, so that sharing it ties
//! neither to the other.

use crate::log::{self, Component};
use crate::report::ExitCode;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
#[cfg(feature = "watch")]
use std::collections::BTreeMap;
use std::fmt::Write;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
#[cfg(feature = "watch")]
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// What bounds one server's connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Connections served at once; the next waits to be accepted.
    pub(crate) connections: usize,
    /// The handshake (`handshake`'s own bound) and a request's head must each come within
    /// this.
    pub(crate) client_time: Duration,
}

/// Accepts connections for ever (the error: why it stopped): each is opened by `handshake`
/// (TLS, or the stream as it is; `None`: dropped) and then served HTTP/1.1 by `answer`.
pub(crate) async fn accept<Io, Hs, HsFut, An, AnFut>(
    listener: TcpListener,
    bounds: Bounds,
    handshake: Hs,
    answer: An,
) -> std::io::Error
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    Hs: Fn(TcpStream) -> HsFut + Clone + Send + 'static,
    HsFut: Future<Output = Option<Io>> + Send,
    An: Fn(Request<Incoming>) -> AnFut + Clone + Send + Sync + 'static,
    AnFut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(bounds.connections));
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
        let (handshake, answer) = (handshake.clone(), answer.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let Some(io) = handshake(stream).await else {
                return;
            };
            let service = hyper::service::service_fn(move |req| {
                let answer = answer.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(bounds.client_time)
                .serve_connection(TokioIo::new(io), service)
                .await;
        });
    }
}

/// One counter family of fixed series in the text format: its HELP and TYPE lines, then each
/// series (its labels as written, `{key="value"}` or nothing, and its value).
#[cfg(feature = "webhook")]
pub(crate) fn family<L: std::fmt::Display>(
    out: &mut String,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, u64)>,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} counter");
    for (labels, value) in series {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

/// A Prometheus counter family: one counter per set of label values seen (`N` labels),
/// written in the text format in the order of the values. (The webhook's outcomes are a fixed
/// list, every one written even at 0: plain atomics there.)
#[cfg(feature = "watch")]
#[derive(Debug)]
pub(crate) struct Counters<const N: usize> {
    labels: [&'static str; N],
    counts: Mutex<BTreeMap<[&'static str; N], u64>>,
}

#[cfg(feature = "watch")]
impl<const N: usize> Counters<N> {
    /// An empty family with these label names.
    pub(crate) fn new(labels: [&'static str; N]) -> Counters<N> {
        Counters {
            labels,
            counts: Mutex::default(),
        }
    }

    /// Counts one, for these label values.
    pub(crate) fn add(&self, values: [&'static str; N]) {
        if let Ok(mut counts) = self.counts.lock() {
            let count = counts.entry(values).or_default();
            *count = count.saturating_add(1);
        }
    }

    /// Writes the family `name` with its `help` line: one line per set of values seen.
    pub(crate) fn write(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        let Ok(counts) = self.counts.lock() else {
            return;
        };
        for (values, n) in counts.iter() {
            let labels: Vec<String> = self
                .labels
                .iter()
                .zip(values)
                .map(|(label, value)| format!("{label}=\"{value}\""))
                .collect();
            let _ = writeln!(out, "{name}{{{}}} {n}", labels.join(","));
        }
    }
}

/// A server's whole run: its flags judged (`Err`: every problem, one line each, exit 2), then
/// `start` until it stops (an error it stops with is a usage error too: the address in use, no
/// in-cluster configuration).
pub(crate) fn run<C, E: std::fmt::Display>(
    config: Result<C, Vec<String>>,
    start: impl FnOnce(C) -> Result<ExitCode, E>,
) -> ExitCode {
    let config = match config {
        Ok(config) => config,
        Err(problems) => {
            for problem in &problems {
                log::error(Component::Command, problem);
            }
            return ExitCode::Usage;
        }
    };
    match start(config) {
        Ok(code) => code,
        Err(e) => {
            log::error(Component::Command, &e.to_string());
            ExitCode::Usage
        }
    }
}

/// The single-threaded runtime each server runs on (a server's work is I/O: one thread
/// answers in well under a millisecond, and the pod asks for a fraction of a core).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ServeError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)
}

/// Why a server could not start, or stopped: what both servers' starts share.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServeError {
    /// The runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// `--listen`'s address could not be bound.
    #[error("--listen {address}: {source}")]
    Listen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The bound socket has no local address (the system's words only).
    #[error("{0}")]
    LocalAddress(#[source] std::io::Error),
    /// The accept loop ended.
    #[error("the server stopped: {0}")]
    Stopped(#[source] std::io::Error),
}

/// Binds `address`: the listener and the address it is bound to (the port chosen for `:0`).
pub(crate) async fn bind(address: SocketAddr) -> Result<(TcpListener, SocketAddr), ServeError> {
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| ServeError::Listen { address, source })?;
    let bound = listener.local_addr().map_err(ServeError::LocalAddress)?;
    Ok((listener, bound))
}

/// A Prometheus histogram of durations, in seconds, written in the text format by hand (a
/// dozen lines; a metrics crate would bring a registry and its own types for no more).
#[derive(Debug)]
pub(crate) struct Histogram {
    /// The upper bounds, in seconds, ascending.
    bounds: &'static [f64],
    /// Per bucket (not cumulative), then the overflow.
    buckets: Vec<AtomicU64>,
    /// The sum of the durations, in nanoseconds (saturating: 584 years).
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// An empty histogram with these upper bounds (seconds, ascending).
    pub(crate) fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
        }
    }

    /// Counts one duration.
    pub(crate) fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let bucket = self
            .bounds
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(self.bounds.len());
        if let Some(count) = self.buckets.get(bucket) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .sum_nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |sum| {
                Some(sum.saturating_add(nanos))
            });
    }

    /// Writes the family `name` with its `help` line: the cumulative buckets, `+Inf`, the sum
    /// in seconds and the count.
    pub(crate) fn write(&self, out: &mut String, name: &str, help: &str) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut cumulative = 0u64;
        for (bound, count) in self.bounds.iter().zip(&self.buckets) {
            cumulative = cumulative.saturating_add(get(count));
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        if let Some(overflow) = self.buckets.last() {
            cumulative = cumulative.saturating_add(get(overflow));
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "{name}_sum {}", get(&self.sum_nanos) as f64 / 1e9);
        let _ = writeln!(out, "{name}_count {cumulative}");
    }
}

/// Completes on SIGTERM (the pod stopped) or SIGINT, with the signal's name.
pub(crate) async fn stopped() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        },
        _ => std::future::pending().await,
    }
}

/// A plain-text answer.
pub(crate) fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}

/// The answer to `GET /healthz` (always ok), `GET /readyz` (ok when `ready`, else 503 with
/// `not_ready`) and `GET /metrics` (what `metrics` renders, in Prometheus' text format); `None`
/// for any other request.
pub(crate) fn probe(
    method: &Method,
    path: &str,
    ready: bool,
    not_ready: &str,
    metrics: impl FnOnce() -> String,
) -> Option<Response<Full<Bytes>>> {
    if method != Method::GET {
        return None;
    }
    Some(match path {
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" if ready => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, format!("{not_ready}\n")),
        "/metrics" => {
            let mut response = text(StatusCode::OK, metrics());
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            response
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes() {
        let status = |path: &str, ready: bool| {
            probe(&Method::GET, path, ready, "not yet", String::new).map(|r| r.status())
        };
        assert_eq!(status("/healthz", false), Some(StatusCode::OK));
        assert_eq!(status("/readyz", true), Some(StatusCode::OK));
        assert_eq!(
            status("/readyz", false),
            Some(StatusCode::SERVICE_UNAVAILABLE)
        );
        assert_eq!(status("/metrics", false), Some(StatusCode::OK));
        assert_eq!(status("/mutate", true), None);
        assert!(probe(&Method::POST, "/healthz", true, "", String::new).is_none());
    }
}
