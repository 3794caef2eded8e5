//! What the two cluster-wide servers share (`pullcheck webhook`, `pullcheck watch`): the
//! `--listen` address, the signals that stop them, and the `/healthz`, `/readyz` and `/metrics`
//! answers. A leaf that knows neither feature, so that sharing it ties neither to the other.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Response, StatusCode};
use std::net::SocketAddr;

/// `--listen`: `HOST:PORT`, or `:PORT` for every IPv4 address; `example` is the port the error
/// shows (the command's default).
pub(crate) fn listen_address(value: &str, example: u16) -> Result<SocketAddr, String> {
    let full = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_string(),
    };
    full.parse().map_err(|_| {
        format!("--listen {value}: not HOST:PORT or :PORT (e.g. :{example}, 127.0.0.1:{example})")
    })
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
    fn listen_addresses() {
        assert_eq!(
            listen_address(":8443", 8443).unwrap().to_string(),
            "0.0.0.0:8443"
        );
        assert_eq!(
            listen_address("[::1]:9", 8443).unwrap().to_string(),
            "[::1]:9"
        );
        assert!(listen_address("localhost", 8443).is_err());
        let e = listen_address("8081", 8081).unwrap_err();
        assert!(e.contains("e.g. :8081, 127.0.0.1:8081"), "{e}");
    }

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
