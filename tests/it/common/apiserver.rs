//! A Kubernetes API server stand-in on 127.0.0.1: enough of `GET /api/v1/nodes/NAME` for
//! pullcheck's node lookup, as the real one answers it (no kube-apiserver package exists for
//! these machines).
//!
//! HTTPS with a certificate from a CA generated per server ([`TestPki`]), a bearer token
//! required, answers in the API's exact shapes: the Node object, or a `Status` object for 401,
//! 403 and 404. Its service-account directory (`token`, `ca.crt`) is what a pod would have
//! mounted. The Node served is [`kind_node`]: a kind control-plane node as `kubectl get node -o
//! json` shows it (the shape documented in the Kubernetes API reference; digests and IDs are
//! stand-ins), with the images a test loads into it. One std thread accepts, one thread per
//! connection, one request per connection (`Connection: close`), every request recorded.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use super::pki::TestPki;
use super::tls::{Reply, TlsServer};

/// The recorded Node object.
const KIND_NODE: &str = include_str!("kind-node.json");

/// How the stand-in answers a request with the right token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The Node object, or 404 for a node it does not know.
    Serve,
    /// 401, as for an expired or revoked token.
    Unauthorized,
    /// 403, as for a service account without `get` on `nodes`.
    Forbidden,
    /// Reads the request and never answers (an API server under a partition).
    Hang,
}

/// One request, as the stand-in saw and answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    /// `GET`.
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// `Authorization` was `Bearer <the token>`.
    pub bearer_ok: bool,
    /// The status answered.
    pub status: u16,
}

struct State {
    token: String,
    mode: Mode,
    nodes: Mutex<HashMap<String, Vec<u8>>>,
    log: Mutex<Vec<ApiRequest>>,
}

/// A running stand-in. Dropping it stops accepting connections and removes its directory.
pub struct ApiServer {
    server: TlsServer,
    state: Arc<State>,
    dir: tempfile::TempDir,
}

impl ApiServer {
    /// Starts a stand-in on `127.0.0.1:0` answering as `mode`, with a fresh CA and token.
    pub fn start(mode: Mode) -> ApiServer {
        ApiServer::start_on("127.0.0.1:0", mode)
    }

    /// [`ApiServer::start`] on another loopback address (`[::1]:0`).
    pub fn start_on(bind: &str, mode: Mode) -> ApiServer {
        let pki = TestPki::generate();
        let dir = tempfile::tempdir().expect("service-account dir");
        let token = format!("eyJhbGciOiJSUzI1NiJ9.sa-token-{}", std::process::id());
        std::fs::write(dir.path().join("token"), &token).expect("write token");
        std::fs::write(dir.path().join("ca.crt"), &pki.ca_pem).expect("write ca.crt");
        std::fs::write(dir.path().join("namespace"), "ci").expect("write namespace");

        let state = Arc::new(State {
            token,
            mode,
            nodes: Mutex::new(HashMap::new()),
            log: Mutex::new(Vec::new()),
        });
        let server = {
            let state = state.clone();
            TlsServer::start(
                bind,
                &pki.server_cert_pem,
                &pki.server_key_pem,
                "api-server",
                move |head| {
                    let (status, body) = answer(head, &state);
                    if state.mode == Mode::Hang {
                        // Hold the connection open without a word, longer than any test's
                        // deadline.
                        std::thread::sleep(Duration::from_secs(60));
                        return None;
                    }
                    Some(Reply {
                        status,
                        headers: String::new(),
                        body,
                    })
                },
            )
        };
        ApiServer { server, state, dir }
    }

    /// Serves `node` (a Node object) under its `metadata.name`.
    pub fn add_node(&self, node: &Value) {
        let name = node["metadata"]["name"].as_str().expect("metadata.name");
        self.add_raw_node(name, serde_json::to_vec(node).expect("node JSON"));
    }

    /// Serves these bytes as node `name`, whatever they are.
    pub fn add_raw_node(&self, name: &str, body: Vec<u8>) {
        self.state
            .nodes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_string(), body);
    }

    /// `KUBERNETES_SERVICE_HOST`: an IPv6 address without brackets, as Kubernetes sets it.
    pub fn host(&self) -> String {
        self.server.addr().ip().to_string()
    }

    /// `KUBERNETES_SERVICE_PORT`.
    pub fn port(&self) -> String {
        self.server.addr().port().to_string()
    }

    /// The service-account directory: `token`, `ca.crt`, `namespace`.
    pub fn service_account_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The token a request must carry.
    pub fn token(&self) -> &str {
        &self.state.token
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<ApiRequest> {
        self.state
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The recorded kind node, renamed `name`, with `loaded` images added (each a list of names, as
/// `kind load docker-image` leaves them) and the list in the kubelet's order, largest first.
pub fn kind_node(name: &str, loaded: &[&[&str]]) -> Value {
    let mut node: Value = serde_json::from_str(KIND_NODE).expect("kind-node.json");
    node["metadata"]["name"] = json!(name);
    node["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
    let images = node["status"]["images"]
        .as_array_mut()
        .expect("status.images");
    for (i, names) in loaded.iter().enumerate() {
        // Sizes between the system images', distinct so that the order is stable.
        images.push(json!({"names": names, "sizeBytes": 25_000_000 - i as u64 * 1000}));
    }
    images.sort_by_key(|i| std::cmp::Reverse(i["sizeBytes"].as_u64().unwrap_or(0)));
    node
}

/// Pads a node's image list with other images (smaller than any already there) until it holds
/// `count`, as a busy node's list does when the kubelet cuts it at `nodeStatusMaxImages`.
pub fn pad_images(node: &mut Value, count: usize) {
    let images = node["status"]["images"]
        .as_array_mut()
        .expect("status.images");
    let mut i = 0u64;
    while images.len() < count {
        images.push(json!({
            "names": [format!("docker.io/library/cached-{i}:1.0")],
            "sizeBytes": 200_000 - i,
        }));
        i += 1;
    }
}

/// (status, body) for one request head, recorded.
fn answer(head: &str, state: &State) -> (u16, Vec<u8>) {
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split(' ');
    let (method, path) = (
        parts.next().unwrap_or_default().to_string(),
        parts.next().unwrap_or_default().to_string(),
    );
    let bearer_ok = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
        .is_some_and(|(_, v)| v.trim() == format!("Bearer {}", state.token));
    let name = path
        .strip_prefix("/api/v1/nodes/")
        .map(|n| n.split('?').next().unwrap_or(n).to_string());
    let mode = state.mode;
    let (status, body) = match (bearer_ok, mode, name) {
        (false, _, _) | (true, Mode::Unauthorized, _) => {
            (401, status_body(401, "Unauthorized", "Unauthorized", None))
        }
        (true, Mode::Forbidden, Some(name)) => (
            403,
            status_body(
                403,
                "Forbidden",
                &format!(
                    "nodes \"{name}\" is forbidden: User \"system:serviceaccount:ci:default\" cannot get resource \"nodes\" in API group \"\" at the cluster scope"
                ),
                Some(&name),
            ),
        ),
        (true, Mode::Serve | Mode::Hang, Some(name)) if method == "GET" => {
            let nodes = state.nodes.lock().unwrap_or_else(PoisonError::into_inner);
            match nodes.get(&name) {
                Some(body) => (200, body.clone()),
                None => (
                    404,
                    status_body(
                        404,
                        "NotFound",
                        &format!("nodes \"{name}\" not found"),
                        Some(&name),
                    ),
                ),
            }
        }
        _ => (
            404,
            status_body(
                404,
                "NotFound",
                "the server could not find the requested resource",
                None,
            ),
        ),
    };
    state
        .log
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(ApiRequest {
            method,
            path,
            bearer_ok,
            status,
        });
    (status, body)
}

/// A `Status` object, as the API server writes for a failed request.
fn status_body(code: u16, reason: &str, message: &str, name: Option<&str>) -> Vec<u8> {
    let mut status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(name) = name {
        status["details"] = json!({"name": name, "kind": "nodes"});
    }
    serde_json::to_vec(&status).expect("Status JSON")
}
