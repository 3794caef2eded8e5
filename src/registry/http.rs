//! One request on the wire ([`Wire`]): sent and reported (`--verbose`), redirects to another
//! origin followed without the endpoint's own headers or credentials, bodies read within a
//! bound, and a failed request turned into a [`Fact::Transport`] that says what went wrong (a
//! plain-HTTP answer, a certificate, a time-out, a refused redirect, no such host).

use super::{Fact, MAX_SERVER_WAIT, Step, TlsFailure, dns, error_chain};
use crate::progress::Events;
use reqwest::header::{self, HeaderMap, HeaderValue};
use std::time::Duration;

/// The wire of a run: every request of every part goes out through it, and is reported there.
pub(super) struct Wire {
    /// The run's plain client (no endpoint's own headers or TLS settings): it follows a
    /// redirect that an endpoint's client hands back.
    http: reqwest::Client,
    /// Where each request is reported (`--verbose`).
    events: Events,
}

impl Wire {
    /// The wire over the run's plain client, reporting nowhere until [`Wire::set_events`].
    pub(super) fn new(http: reqwest::Client) -> Wire {
        Wire {
            http,
            events: Events::default(),
        }
    }

    /// Reports every request to `events` (shown with `--verbose`).
    pub(super) fn set_events(&mut self, events: Events) {
        self.events = events;
    }

    /// Sends a request and reports its method, URL and status (never its headers).
    pub(super) async fn send(
        &self,
        req: reqwest::RequestBuilder,
        method: &str,
        url: &str,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let answer = self.execute(req).await;
        if self.events.shows_requests() {
            let shown = match &answer {
                Ok(r) => Ok(r.status().as_u16()),
                Err(e) => Err(match std::error::Error::source(e) {
                    Some(cause) => error_chain(cause),
                    None => error_chain(e),
                }),
            };
            self.events
                .request(method, url, shown.as_ref().copied().map_err(String::as_str));
        }
        answer
    }

    /// Sends a request, following redirects as [`redirect_policy`](super::redirect_policy) allows.
    ///
    /// An endpoint's own client (hosts.toml `header`, `ca`, `client`, `skip_verify`) stops at
    /// a redirect to another origin: those settings belong to their host, and reqwest would
    /// send the configured headers along (it strips only `Authorization` and cookies). The
    /// redirect is then followed here with the run's plain client, without them and without
    /// `Authorization`, as a registry's redirect to its storage is followed.
    pub(super) async fn execute(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let (client, req) = req.build_split();
        let req = req?;
        let again = req.try_clone();
        let answer = client.execute(req).await;
        let (Ok(resp), Some(mut again)) = (&answer, again) else {
            return answer;
        };
        let Some(target) = elsewhere(resp) else {
            return answer;
        };
        if resp.status() == reqwest::StatusCode::SEE_OTHER
            && again.method() != reqwest::Method::HEAD
        {
            *again.method_mut() = reqwest::Method::GET;
        }
        *again.url_mut() = target;
        for name in [
            header::AUTHORIZATION,
            header::COOKIE,
            header::PROXY_AUTHORIZATION,
        ] {
            again.headers_mut().remove(name);
        }
        self.http.execute(again).await
    }
}

/// Adds an `Authorization` header, when there is one, marked sensitive.
pub(super) fn authorized(
    req: reqwest::RequestBuilder,
    authorization: Option<&str>,
) -> reqwest::RequestBuilder {
    match authorization {
        Some(a) => req.header(header::AUTHORIZATION, sensitive(a)),
        None => req,
    }
}

/// A header value marked sensitive, so that no `Debug` of a request shows it.
fn sensitive(value: &str) -> HeaderValue {
    let mut v = HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static(""));
    v.set_sensitive(true);
    v
}

/// Every `WWW-Authenticate` header, joined, as bytes: `HeaderValue::to_str` refuses any
/// non-ASCII byte, which would drop a whole challenge for one odd byte in its realm.
pub(super) fn www_authenticate(headers: &HeaderMap) -> Option<Vec<u8>> {
    let all: Vec<&[u8]> = headers
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .map(HeaderValue::as_bytes)
        .collect();
    (!all.is_empty()).then(|| all.join(&b", "[..]))
}

/// `Retry-After` as seconds or an HTTP date, at most [`MAX_SERVER_WAIT`]: the number is the
/// server's, and `Instant + Duration` panics on overflow.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = if v.bytes().all(|b| b.is_ascii_digit()) && !v.is_empty() {
        // More digits than a u64 holds is still "a very long time", not "no header".
        Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX))
    } else {
        let when = httpdate::parse_http_date(v).ok()?;
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO)
    };
    Some(wait.min(MAX_SERVER_WAIT))
}

/// The target of a redirect that an endpoint's client handed back ([`redirect_policy`](super::redirect_policy)): a
/// 301, 302, 303, 307 or 308 whose `Location` is on another origin than the answer's, and
/// not a downgrade from HTTPS to plain HTTP (which is left as the answer, refused).
fn elsewhere(resp: &reqwest::Response) -> Option<reqwest::Url> {
    if !matches!(resp.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = resp.headers().get(header::LOCATION)?.to_str().ok()?;
    let target = resp.url().join(location).ok()?;
    let downgrade = resp.url().scheme() == "https" && target.scheme() == "http";
    (target.origin() != resp.url().origin() && !downgrade).then_some(target)
}

pub(super) async fn read_limited(
    resp: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    read_body(resp, max, 0).await
}

/// Reads at most `max` bytes of a body into a buffer sized for `expected` (its announced
/// length): one allocation of the right size rather than doublings that leave a large body's
/// memory fragmented.
pub(super) async fn read_body(
    mut resp: reqwest::Response,
    max: usize,
    expected: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut out = Vec::with_capacity(expected.min(max));
    while let Some(chunk) = resp.chunk().await? {
        let room = max.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= max {
            break;
        }
    }
    Ok(out)
}

pub(super) fn transport(step: Step, method: &'static str, url: &str, e: &reqwest::Error) -> Fact {
    // reqwest's own message repeats the URL, which the verdict already names: start at its cause.
    let detail = match std::error::Error::source(e) {
        Some(cause) => error_chain(cause),
        None => error_chain(e),
    };
    Fact::Transport {
        step,
        method,
        url: url.to_string(),
        detail,
        tls: tls_failure(e),
        timeout: e.is_timeout(),
        redirect: e.is_redirect(),
        no_such_host: dns::dns_error(e).is_some_and(|d| d.no_such_host),
    }
}

/// The TLS failure (a plain-HTTP answer, a certificate that does not verify, a handshake
/// refused) in the error's causes, if any. `io::Error::source` skips the error it wraps, and
/// the TLS stack nests one `io::Error` in another, so each one is opened down to what it wraps.
fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<TlsFailure> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        let mut inner = c;
        loop {
            if let Some(r) = inner.downcast_ref::<rustls::Error>() {
                return Some(match r {
                    rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
                        TlsFailure::PlainHttpAnswer
                    }
                    rustls::Error::InvalidCertificate(_) => TlsFailure::Certificate,
                    _ => TlsFailure::Other,
                });
            }
            match inner
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
            {
                Some(wrapped) => inner = wrapped,
                None => break,
            }
        }
        cur = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            header::RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        for huge in ["18446744073709551615", "99999999999999999999999999"] {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static(huge));
            assert_eq!(retry_after(&h), Some(MAX_SERVER_WAIT), "{huge}");
        }
    }

    #[test]
    fn basic_auth_header_is_sensitive() {
        let v = sensitive("Basic c2VjcmV0");
        assert!(v.is_sensitive());
        assert!(!format!("{v:?}").contains("c2VjcmV0"));
    }
}
