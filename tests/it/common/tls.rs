//! The one HTTPS stand-in behind the servers the tests write themselves (the Kubernetes API
//! server, distribution's token server, the fault proxy's [`super::proxy::TlsEndpoint`]): TLS
//! on a loopback address with a given certificate,
//! one blocking std thread accepting connections and one thread per connection, rustls
//! `ServerConnection` + `StreamOwned`, a minimal HTTP/1.1 (one request per connection,
//! `Connection: close`). What is answered is the caller's: a function of the request head. It
//! counts the connections it accepted and the handshakes that completed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// Read and write time-out of one connection.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// One answer: `Content-Type: application/json`, `Content-Length` and `Connection: close` are
/// always sent.
pub struct Reply {
    pub status: u16,
    /// More header lines, each ending in CRLF.
    pub headers: String,
    pub body: Vec<u8>,
}

/// What a stand-in answers to one request head (request line and headers, without the blank
/// line); `None` closes the connection without a word.
pub type Handler = dyn Fn(&str) -> Option<Reply> + Send + Sync;

/// A running HTTPS stand-in. Dropping it stops accepting connections.
pub struct TlsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    counts: Arc<Counts>,
}

/// What a stand-in has seen.
#[derive(Default)]
struct Counts {
    connections: AtomicUsize,
    handshakes: AtomicUsize,
}

impl TlsServer {
    /// Starts serving on `bind` (`127.0.0.1:0`, `[::1]:0`) with the leaf `cert_pem` and its
    /// PKCS#8 `key_pem`; `name` names its threads.
    pub fn start(
        bind: &str,
        cert_pem: &str,
        key_pem: &str,
        name: &str,
        handler: impl Fn(&str) -> Option<Reply> + Send + Sync + 'static,
    ) -> TlsServer {
        let certs =
            vec![CertificateDer::from_pem_slice(cert_pem.as_bytes()).expect("server certificate")];
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("server key");
        let mut config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("rustls protocol versions")
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .expect("server TLS config");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        let handler: Arc<Handler> = Arc::new(handler);
        let listener = TcpListener::bind(bind).unwrap_or_else(|e| panic!("bind {name}: {e}"));
        let addr = listener.local_addr().expect("server address");
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let thread = {
            let (stop, counts) = (stop.clone(), counts.clone());
            let name = name.to_string();
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || accept_loop(&listener, &config, &handler, &stop, &counts, &name))
                .expect("spawn server")
        };
        TlsServer {
            addr,
            stop,
            thread: Some(thread),
            counts,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.counts.connections.load(Ordering::SeqCst)
    }

    /// TLS handshakes that completed so far.
    pub fn handshakes(&self) -> usize {
        self.counts.handshakes.load(Ordering::SeqCst)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: &TcpListener,
    config: &Arc<ServerConfig>,
    handler: &Arc<Handler>,
    stop: &AtomicBool,
    counts: &Arc<Counts>,
    name: &str,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        counts.connections.fetch_add(1, Ordering::SeqCst);
        let (config, handler, counts) = (config.clone(), handler.clone(), counts.clone());
        let _ = std::thread::Builder::new()
            .name(format!("{name}-conn"))
            .spawn(move || serve_connection(stream, config, &*handler, &counts));
    }
}

/// One request on one connection, then close. Any I/O or TLS error just drops the connection.
fn serve_connection(
    mut stream: TcpStream,
    config: Arc<ServerConfig>,
    handler: &Handler,
    counts: &Counts,
) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let Ok(mut conn) = ServerConnection::new(config) else {
        return;
    };
    // The handshake first, on its own, so that a client refusing the certificate is seen.
    while conn.is_handshaking() {
        if conn.complete_io(&mut stream).is_err() {
            return;
        }
    }
    counts.handshakes.fetch_add(1, Ordering::SeqCst);
    let mut tls = StreamOwned::new(conn, stream);
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if head.len() > MAX_HEAD {
            return;
        }
        match tls.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&head[..end]).into_owned();
    let Some(reply) = handler(&head) else {
        return;
    };
    let status = reply.status;
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Error",
    };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
        reply.body.len(),
        reply.headers
    )
    .into_bytes();
    response.extend_from_slice(&reply.body);
    if tls.write_all(&response).is_ok() {
        let _ = tls.flush();
        tls.conn.send_close_notify();
        let _ = tls.flush();
    }
}
