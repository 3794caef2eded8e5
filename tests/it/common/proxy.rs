//! A scriptable fault-injecting HTTP/1.1 proxy on loopback, in front of a real registry (or of
//! nothing: a *standalone* listener that answers every request the same way and records it), and
//! a TLS endpoint with a certificate of our choosing.
//!
//! Plain `std` threads and sockets. Each test starts its own [`Proxy`]; dropping it stops the
//! listener and every connection it holds (black holes and stalls included) within ~100 ms.
//!
//! How a request is handled: the [`Rule`]s are tried in the order they were added, and the first
//! that matches (method, path) and has uses left decides the [`Fault`]; otherwise the default
//! (pass through, for a proxy; the canned answer, for a standalone listener). Every request is
//! recorded ([`Seen`]): method, path, whether `Authorization` came, the fault applied and when.
//!
//! Every answer says `Connection: close` and the connection is closed after it, so each request
//! comes on a connection of its own and a fault never leaks into the next request.
//!
//! ```ignore
//! let proxy = Proxy::start(&plain_registry().host());
//! proxy.rule(Rule::contains("/manifests/", Fault::status(503)).times(2));
//! proxy.rule(Rule::exact("/v2/", Fault::basic_challenge()));
//! // ... run pullcheck against proxy.host() ...
//! assert_eq!(proxy.requests_matching("/manifests/").len(), 3);
//! ```

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The largest request head read from a client.
const MAX_HEAD: usize = 64 * 1024;
/// The largest upstream answer read.
const MAX_UPSTREAM: usize = 16 * 1024 * 1024;
/// How often held connections look at the stop flag.
const POLL: Duration = Duration::from_millis(10);
/// Upstream connect and read limits (the upstream is a local registry: it answers in ms).
const UPSTREAM_CONNECT: Duration = Duration::from_secs(2);
const UPSTREAM_READ: Duration = Duration::from_secs(10);

/// A canned answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canned {
    /// The status code.
    pub status: u16,
    /// Headers besides `Content-Length` and `Connection`.
    pub headers: Vec<(String, String)>,
    /// The body (not sent to a `HEAD`; its length still is).
    pub body: Vec<u8>,
    /// Send only this many bytes of the body, then close (the `Content-Length` stays whole).
    pub cut_body_at: Option<usize>,
}

impl Canned {
    /// An answer with this status, no headers, an empty body.
    pub fn new(status: u16) -> Canned {
        Canned {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            cut_body_at: None,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Canned {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Canned {
        self.body = body.into();
        self
    }

    /// Sends only the first `n` bytes of the body, then closes the connection.
    pub fn cut_body_at(mut self, n: usize) -> Canned {
        self.cut_body_at = Some(n);
        self
    }
}

/// What the proxy does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Forward to the upstream and relay its answer.
    Pass,
    /// Wait, then [`Fault::Pass`].
    Delay(Duration),
    /// Accept the request and never answer (the connection stays open until the proxy stops).
    BlackHole,
    /// Relay the first half of the upstream answer's head (status line and some headers), then
    /// send nothing more and keep the connection open: a stall mid-response.
    Stall,
    /// Send the start of a status line, then close while the request is still unread, so the
    /// kernel resets the connection (RST) instead of closing it cleanly.
    Reset,
    /// Relay the upstream answer's head, then close without its body.
    CloseAfterHeaders,
    /// Relay the upstream answer's head and half its body, then close.
    Truncate,
    /// Relay the upstream answer's status and headers with this body instead (the
    /// `Content-Length` fits it).
    Body(Vec<u8>),
    /// Answer this, without asking the upstream.
    Respond(Canned),
}

impl Fault {
    /// A bare status.
    pub fn status(status: u16) -> Fault {
        Fault::Respond(Canned::new(status))
    }

    /// A canned answer.
    pub fn respond(canned: Canned) -> Fault {
        Fault::Respond(canned)
    }

    /// `307 Temporary Redirect` to `location`.
    pub fn redirect(location: &str) -> Fault {
        Fault::Respond(Canned::new(307).header("Location", location))
    }

    /// `429 Too Many Requests` with `Retry-After: retry_after`.
    pub fn rate_limited(retry_after: &str) -> Fault {
        Fault::Respond(
            Canned::new(429)
                .header("Retry-After", retry_after)
                .header("Content-Type", "application/json")
                .body(r#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#),
        )
    }

    /// `401` with `WWW-Authenticate: Basic realm="x"` (what a registry with htpasswd answers to
    /// the ping).
    pub fn basic_challenge() -> Fault {
        Fault::Respond(
            Canned::new(401)
                .header("WWW-Authenticate", r#"Basic realm="x""#)
                .header("Docker-Distribution-API-Version", "registry/2.0"),
        )
    }

    /// `401` with a Bearer challenge naming `realm` (what a registry with a token server answers
    /// to the ping).
    pub fn bearer_challenge(realm: &str) -> Fault {
        Fault::Respond(
            Canned::new(401)
                .header(
                    "WWW-Authenticate",
                    &format!(r#"Bearer realm="{realm}",service="pullcheck-faults""#),
                )
                .header("Docker-Distribution-API-Version", "registry/2.0"),
        )
    }

    /// A token server's `200` with a token.
    pub fn token() -> Fault {
        Fault::Respond(
            Canned::new(200)
                .header("Content-Type", "application/json")
                .body(r#"{"token":"faults-token","expires_in":300}"#),
        )
    }

    /// A manifest `200` with a `Docker-Content-Digest` (for a standalone listener).
    pub fn manifest(digest: &str) -> Fault {
        Fault::Respond(
            Canned::new(200)
                .header("Docker-Content-Digest", digest)
                .header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                .body("{}"),
        )
    }

    fn name(&self) -> String {
        match self {
            Fault::Respond(c) => format!("respond {}", c.status),
            Fault::Body(b) => format!("body of {} bytes", b.len()),
            other => format!("{other:?}").to_lowercase(),
        }
    }
}

/// Which requests get which fault. Built with [`Rule::any`], [`Rule::exact`], [`Rule::prefix`]
/// or [`Rule::contains`], then narrowed with [`Rule::method`], [`Rule::skip`] and
/// [`Rule::times`].
#[derive(Debug, Clone)]
pub struct Rule {
    method: Option<String>,
    /// A part the request's `User-Agent` must hold.
    user_agent: Option<String>,
    /// Only requests that carry no `Authorization` header.
    unauthenticated: bool,
    path: PathMatch,
    skip: usize,
    times: Option<usize>,
    /// With [`Rule::past_per_second`]: how many matching requests a second pass untouched.
    per_second: Option<usize>,
    /// The current second's start and how many matched in it.
    second: Option<(Instant, usize)>,
    fault: Fault,
    /// Requests that matched so far (skipped ones included).
    matched: usize,
}

#[derive(Debug, Clone)]
enum PathMatch {
    Any,
    Exact(String),
    Prefix(String),
    Contains(String),
}

impl Rule {
    fn new(path: PathMatch, fault: Fault) -> Rule {
        Rule {
            method: None,
            user_agent: None,
            unauthenticated: false,
            path,
            skip: 0,
            times: None,
            per_second: None,
            second: None,
            fault,
            matched: 0,
        }
    }

    /// Every request.
    pub fn any(fault: Fault) -> Rule {
        Rule::new(PathMatch::Any, fault)
    }

    /// Requests whose path (with query) is exactly `path`, e.g. `/v2/`.
    pub fn exact(path: &str, fault: Fault) -> Rule {
        Rule::new(PathMatch::Exact(path.to_string()), fault)
    }

    /// Requests whose path starts with `prefix`.
    pub fn prefix(prefix: &str, fault: Fault) -> Rule {
        Rule::new(PathMatch::Prefix(prefix.to_string()), fault)
    }

    /// Requests whose path contains `part`.
    pub fn contains(part: &str, fault: Fault) -> Rule {
        Rule::new(PathMatch::Contains(part.to_string()), fault)
    }

    /// Only requests with this method (`GET`, `HEAD`).
    pub fn method(mut self, method: &str) -> Rule {
        self.method = Some(method.to_ascii_uppercase());
        self
    }

    /// Only requests whose `User-Agent` holds `part` (`containerd`, `pullcheck`): one client's
    /// requests told from another's at the same registry.
    pub fn user_agent(mut self, part: &str) -> Rule {
        self.user_agent = Some(part.to_string());
        self
    }

    /// Only requests without an `Authorization` header: with [`Fault::basic_challenge`], a
    /// registry that wants credentials in front of one that does not (any credential passes).
    pub fn unauthenticated(mut self) -> Rule {
        self.unauthenticated = true;
        self
    }

    /// Leaves the first `n` matching requests alone (the rule applies from the `n+1`-th).
    pub fn skip(mut self, n: usize) -> Rule {
        self.skip = n;
        self
    }

    /// Applies only past `n` matching requests in the same second (a rate limit: the first `n`
    /// of each second pass, the rest get the fault).
    pub fn past_per_second(mut self, n: usize) -> Rule {
        self.per_second = Some(n);
        self
    }

    /// Applies to `n` requests, then no more.
    pub fn times(mut self, n: usize) -> Rule {
        self.times = Some(n);
        self
    }

    fn matches(
        &self,
        method: &str,
        path: &str,
        user_agent: Option<&str>,
        authorization: Option<&str>,
    ) -> bool {
        if self.method.as_deref().is_some_and(|m| m != method) {
            return false;
        }
        if self.unauthenticated && authorization.is_some() {
            return false;
        }
        if let Some(part) = &self.user_agent
            && !user_agent.is_some_and(|u| u.contains(part.as_str()))
        {
            return false;
        }
        match &self.path {
            PathMatch::Any => true,
            PathMatch::Exact(p) => path == p,
            PathMatch::Prefix(p) => path.starts_with(p.as_str()),
            PathMatch::Contains(p) => path.contains(p.as_str()),
        }
    }

    /// Counts the request; the fault when this one is in the rule's window.
    fn take(
        &mut self,
        method: &str,
        path: &str,
        user_agent: Option<&str>,
        authorization: Option<&str>,
    ) -> Option<Fault> {
        if !self.matches(method, path, user_agent, authorization) {
            return None;
        }
        self.matched += 1;
        let index = self.matched - 1;
        if index < self.skip {
            return None;
        }
        if self.times.is_some_and(|t| index - self.skip >= t) {
            return None;
        }
        if let Some(n) = self.per_second {
            let now = Instant::now();
            let (start, count) = match self.second {
                Some((start, count)) if now.duration_since(start) < Duration::from_secs(1) => {
                    (start, count + 1)
                }
                _ => (now, 1),
            };
            self.second = Some((start, count));
            if count <= n {
                return None;
            }
        }
        Some(self.fault.clone())
    }
}

/// One request the proxy received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The path with its query, as sent.
    pub path: String,
    /// The `Authorization` header, when one came.
    pub authorization: Option<String>,
    /// The `Host` header.
    pub host: Option<String>,
    /// Every header, as sent (for what must not reach this host).
    pub headers: Vec<(String, String)>,
    /// What was done with it (`pass`, `respond 503`, `blackhole`, ...).
    pub fault: String,
    /// When its head had arrived.
    pub at: Instant,
}

struct Shared {
    upstream: Option<String>,
    default: Fault,
    rules: Mutex<Vec<Rule>>,
    seen: Mutex<Vec<Seen>>,
    connections: AtomicUsize,
    stop: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Keeps `stream` open, sending nothing, until the proxy stops.
    fn hold(&self, stream: TcpStream) {
        while !self.stopped() {
            std::thread::sleep(POLL);
        }
        drop(stream);
    }

    fn sleep(&self, d: Duration) {
        let until = Instant::now() + d;
        while !self.stopped() && Instant::now() < until {
            std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
    }
}

/// A fault-injecting proxy (or standalone recording listener) on loopback. Stops when dropped.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    /// A proxy on `127.0.0.1` in front of `upstream` (`host:port`, plain HTTP), passing every
    /// request through until rules say otherwise.
    pub fn start(upstream: &str) -> Proxy {
        Proxy::bind("127.0.0.1", Some(upstream.to_string()), Fault::Pass)
    }

    /// [`Proxy::start`] on a given address (e.g. the one of a proxy dropped before: a registry
    /// that comes back where it was).
    pub fn start_on(addr: SocketAddr, upstream: &str) -> Proxy {
        Proxy::bind_on(addr, Some(upstream.to_string()), Fault::Pass)
    }

    /// A listener on `ip` (`127.0.0.1`, `127.0.0.2`, `::1`) with no upstream: every request
    /// gets `default` unless a rule says otherwise ([`Fault::Pass`] answers 502 here).
    pub fn standalone(ip: &str, default: Fault) -> Proxy {
        Proxy::bind(ip, None, default)
    }

    fn bind(ip: &str, upstream: Option<String>, default: Fault) -> Proxy {
        let ip: std::net::IpAddr = ip.parse().expect("an IP address");
        Proxy::bind_on(SocketAddr::new(ip, 0), upstream, default)
    }

    fn bind_on(addr: SocketAddr, upstream: Option<String>, default: Fault) -> Proxy {
        let listener = TcpListener::bind(addr).expect("bind the fault proxy");
        let addr = listener.local_addr().expect("fault proxy address");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let shared = Arc::new(Shared {
            upstream,
            default,
            rules: Mutex::new(Vec::new()),
            seen: Mutex::new(Vec::new()),
            connections: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
        });
        let accept = {
            let shared = shared.clone();
            std::thread::spawn(move || accept_loop(&listener, &shared))
        };
        Proxy {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `IP:PORT` (`[::1]:PORT` for IPv6), as an image reference names the registry.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// `http://IP:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// Adds a rule, tried after the ones added before it.
    pub fn rule(&self, rule: Rule) -> &Proxy {
        lock(&self.shared.rules).push(rule);
        self
    }

    /// Drops every rule: from now on each request passes (a registry that was switched to
    /// serve the image).
    pub fn clear_rules(&self) -> &Proxy {
        lock(&self.shared.rules).clear();
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        lock(&self.shared.seen).clone()
    }

    /// The requests whose path contains `part`.
    pub fn requests_matching(&self, part: &str) -> Vec<Seen> {
        self.requests()
            .into_iter()
            .filter(|s| s.path.contains(part))
            .collect()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let workers = std::mem::take(&mut *lock(&self.shared.workers));
        for w in workers {
            let _ = w.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stopped() {
        match listener.accept() {
            Ok((stream, _)) => {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let worker = {
                    let shared = shared.clone();
                    std::thread::spawn(move || serve(&shared, stream))
                };
                lock(&shared.workers).push(worker);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// A parsed request head.
struct Head {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    /// Bytes of the head, final blank line included.
    len: usize,
    content_length: usize,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn find_blank_line(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Waits for a whole request head without consuming it (so that [`Fault::Reset`] can close
/// with the request unread). `None` at EOF, on an error, an oversized head, or when stopping.
fn peek_head(shared: &Shared, stream: &TcpStream) -> Option<Head> {
    let mut buf = vec![0u8; MAX_HEAD];
    loop {
        if shared.stopped() {
            return None;
        }
        match stream.peek(&mut buf) {
            Ok(0) => return None,
            Ok(n) => {
                // A TLS ClientHello (a handshake record, 0x16) to this plain-HTTP listener:
                // answered as the Go registries' net/http answers a request it cannot parse,
                // so that a client that tries TLS first learns at once that it is plain HTTP.
                if buf[0] == 0x16 {
                    let mut out = stream;
                    let _ = out.write_all(
                        b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
                          Connection: close\r\n\r\n400 Bad Request",
                    );
                    return None;
                }
                if let Some(len) = find_blank_line(&buf[..n]) {
                    return parse_head(&buf[..len], len);
                }
                if n == buf.len() {
                    return None;
                }
                // Part of the head is there: wait for the rest.
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

fn parse_head(bytes: &[u8], len: usize) -> Option<Head> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let content_length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    Some(Head {
        method,
        path,
        headers,
        len,
        content_length,
    })
}

/// Consumes the request (head and body) from the socket.
fn consume(stream: &mut TcpStream, head: &Head) -> bool {
    let mut rest = vec![0u8; head.len + head.content_length];
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = 0;
    while got < rest.len() {
        match stream.read(&mut rest[got..]) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) && Instant::now() < deadline => {}
            Err(_) => return false,
        }
    }
    true
}

fn serve(shared: &Shared, mut client: TcpStream) {
    let _ = client.set_nonblocking(false);
    // Short reads so that a waiting connection notices the stop flag.
    let _ = client.set_read_timeout(Some(Duration::from_millis(100)));
    let _ = client.set_write_timeout(Some(Duration::from_secs(5)));
    let Some(head) = peek_head(shared, &client) else {
        return;
    };
    let fault = {
        let mut rules = lock(&shared.rules);
        rules
            .iter_mut()
            .find_map(|r| {
                r.take(
                    &head.method,
                    &head.path,
                    head.header("user-agent"),
                    head.header("authorization"),
                )
            })
            .unwrap_or_else(|| shared.default.clone())
    };
    lock(&shared.seen).push(Seen {
        method: head.method.clone(),
        path: head.path.clone(),
        authorization: head.header("authorization").map(str::to_string),
        host: head.header("host").map(str::to_string),
        headers: head.headers.clone(),
        fault: fault.name(),
        at: Instant::now(),
    });
    if fault == Fault::Reset {
        // The request stays unread: closing now makes the kernel send RST.
        let _ = client.write_all(b"HTTP/1.1 200 OK\r\nContent-Ty");
        let _ = client.flush();
        drop(client);
        return;
    }
    if !consume(&mut client, &head) {
        return;
    }
    let is_head = head.method == "HEAD";
    match fault {
        Fault::BlackHole => shared.hold(client),
        Fault::Respond(canned) => {
            let _ = write_canned(&mut client, &canned, is_head);
        }
        Fault::Delay(d) => {
            shared.sleep(d);
            if !shared.stopped() {
                relay(shared, &mut client, &head, &Fault::Pass);
            }
        }
        other => {
            if let Some(keep) = relay(shared, &mut client, &head, &other) {
                shared.hold(keep);
            }
        }
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        307 => "Temporary Redirect",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn write_canned(client: &mut TcpStream, canned: &Canned, is_head: bool) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        canned.status,
        reason_phrase(canned.status)
    );
    for (k, v) in &canned.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        canned.body.len()
    ));
    client.write_all(out.as_bytes())?;
    if !is_head {
        let sent = canned
            .cut_body_at
            .unwrap_or(canned.body.len())
            .min(canned.body.len());
        client.write_all(&canned.body[..sent])?;
    }
    client.flush()
}

/// The upstream's answer, split.
struct Answer {
    /// Status line and headers, each ending in CRLF, without the blank line.
    lines: Vec<String>,
    /// The body bytes as they came (chunked framing kept).
    body: Vec<u8>,
}

fn ask_upstream(upstream: &str, head: &Head) -> std::io::Result<Answer> {
    let addr: SocketAddr = upstream
        .parse()
        .map_err(|_| std::io::Error::new(ErrorKind::InvalidInput, "upstream is not IP:PORT"))?;
    let mut up = TcpStream::connect_timeout(&addr, UPSTREAM_CONNECT)?;
    up.set_read_timeout(Some(UPSTREAM_READ))?;
    up.set_write_timeout(Some(UPSTREAM_READ))?;
    let mut req = format!(
        "{} {} HTTP/1.1\r\nHost: {upstream}\r\n",
        head.method, head.path
    );
    for (k, v) in &head.headers {
        let hop = [
            "host",
            "connection",
            "keep-alive",
            "proxy-connection",
            "te",
            "upgrade",
        ];
        if !hop.iter().any(|h| k.eq_ignore_ascii_case(h)) {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    req.push_str("Connection: close\r\n\r\n");
    up.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    up.take(MAX_UPSTREAM as u64).read_to_end(&mut raw)?;
    let end = find_blank_line(&raw)
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidData, "no answer head"))?;
    let text = String::from_utf8_lossy(&raw[..end - 4]).into_owned();
    Ok(Answer {
        lines: text.split("\r\n").map(str::to_string).collect(),
        body: raw[end..].to_vec(),
    })
}

/// Relays the upstream answer as `fault` says. Returns the client connection when it must be
/// held open (a stall).
fn relay(shared: &Shared, client: &mut TcpStream, head: &Head, fault: &Fault) -> Option<TcpStream> {
    let answer = match shared.upstream.as_deref().map(|u| ask_upstream(u, head)) {
        Some(Ok(a)) => a,
        Some(Err(e)) => {
            let _ = write_canned(
                client,
                &Canned::new(502).body(format!("fault proxy: upstream failed: {e}")),
                head.method == "HEAD",
            );
            return None;
        }
        None => {
            let _ = write_canned(
                client,
                &Canned::new(502).body("fault proxy: no upstream"),
                head.method == "HEAD",
            );
            return None;
        }
    };
    let is_framing = |l: &str| {
        let name = l.split(':').next().unwrap_or("").trim();
        ["connection", "keep-alive"]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
    };
    let mut lines: Vec<String> = answer
        .lines
        .iter()
        .filter(|l| !is_framing(l))
        .cloned()
        .collect();
    let mut body = answer.body;
    if let Fault::Body(replacement) = fault {
        lines.retain(|l| {
            let name = l.split(':').next().unwrap_or("").trim();
            !name.eq_ignore_ascii_case("content-length")
                && !name.eq_ignore_ascii_case("transfer-encoding")
        });
        lines.push(format!("Content-Length: {}", replacement.len()));
        body.clone_from(replacement);
    }
    lines.push("Connection: close".to_string());
    let mut head_bytes = lines.join("\r\n").into_bytes();
    head_bytes.extend_from_slice(b"\r\n\r\n");
    let result = match fault {
        Fault::Stall => {
            let half = head_bytes.len() / 2;
            client
                .write_all(&head_bytes[..half])
                .and_then(|()| client.flush())
                .ok()
                .and_then(|()| client.try_clone().ok())
        }
        Fault::CloseAfterHeaders => {
            let _ = client.write_all(&head_bytes);
            None
        }
        Fault::Truncate => {
            let _ = client.write_all(&head_bytes);
            let _ = client.write_all(&body[..body.len() / 2]);
            None
        }
        _ => {
            let _ = client.write_all(&head_bytes);
            let _ = client.write_all(&body);
            None
        }
    };
    let _ = client.flush();
    result
}

/// A TLS listener on `127.0.0.1` with a certificate for chosen names, signed by a CA made for it
/// (the tests' one HTTPS stand-in, [`super::tls`]). It records how many connections came and how
/// many handshakes succeeded, and answers any request after a good handshake with `200 {}`.
/// Stops when dropped.
pub struct TlsEndpoint {
    server: super::tls::TlsServer,
    _dir: tempfile::TempDir,
    ca_pem_path: PathBuf,
}

impl TlsEndpoint {
    /// Starts a listener whose certificate names exactly `names` (DNS names or IP addresses).
    pub fn start(names: &[&str]) -> TlsEndpoint {
        let pki = super::pki::TestPki::for_names(names);
        let dir = tempfile::tempdir().expect("TLS endpoint dir");
        let ca_pem_path = dir.path().join("ca.pem");
        std::fs::write(&ca_pem_path, &pki.ca_pem).expect("write ca.pem");
        let server = super::tls::TlsServer::start(
            "127.0.0.1:0",
            &pki.server_cert_pem,
            &pki.server_key_pem,
            "tls-endpoint",
            |_| {
                Some(super::tls::Reply {
                    status: 200,
                    headers: String::new(),
                    body: b"{}".to_vec(),
                })
            },
        );
        TlsEndpoint {
            server,
            _dir: dir,
            ca_pem_path,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.server.addr().to_string()
    }

    /// The PEM of the CA that signed the certificate.
    pub fn ca_pem_path(&self) -> &Path {
        &self.ca_pem_path
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.server.connections()
    }

    /// TLS handshakes that completed.
    pub fn handshakes(&self) -> usize {
        self.server.handshakes()
    }
}
