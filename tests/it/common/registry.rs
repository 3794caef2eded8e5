//! A real CNCF distribution registry (`docker-registry serve`, Debian's 2.8.2) on 127.0.0.1.
//!
//! Life cycle: the registry is started by a tiny `sh` supervisor whose stdin is a pipe held by the
//! test process. When the pipe closes — because [`Registry`] is dropped, or because the test
//! process exits and the kernel closes its descriptors (the shared registries live in statics,
//! which are never dropped) — the supervisor kills the registry, waits for it and removes the
//! registry's temp dir. No `unsafe`, no signal handling in the test process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rustls_pki_types::CertificateDer;

use super::pki::TestPki;
use super::token::{TOKEN_ISSUER, TOKEN_SERVICE, TokenServer};

/// Environment variable that overrides the registry binary (default: `docker-registry` on PATH).
pub const REGISTRY_BIN_ENV: &str = "PULLCHECK_TEST_REGISTRY_BIN";

/// How long [`Registry::start`] waits for the registry to answer `/v2/`.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Start attempts when the port is already taken.
const START_ATTEMPTS: usize = 3;
/// [`Registry::requests`] returns once the access log has been quiet for this long...
const LOG_QUIET: Duration = Duration::from_millis(100);
/// ...or after this long at most.
const LOG_SETTLE_MAX: Duration = Duration::from_secs(1);
/// [`Registry::wait_for_requests`] gives up after this long.
const WAIT_FOR_REQUESTS_TIMEOUT: Duration = Duration::from_secs(5);

/// The supervisor. `$1` registry binary, `$2` config file, `$3` the registry's temp dir.
/// SIGINT/SIGQUIT are ignored (a Ctrl-C kills the test process, which closes the pipe, which is
/// what stops the registry); the registry, started in the background of a non-interactive shell,
/// gets /dev/null as stdin so only `cat` holds the pipe.
const SUPERVISOR: &str = r#"trap '' INT QUIT
"$1" serve "$2" &
p=$!
echo "$p" > "$3/registry.pid"
cat >/dev/null
kill "$p" 2>/dev/null
wait "$p"
rm -rf "$3"
"#;

/// How to start a [`Registry`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryOptions {
    /// Serve HTTPS with a certificate from a CA generated for this registry.
    pub tls: bool,
    /// htpasswd Basic auth with this one user: (user, password).
    pub basic_auth: Option<(String, String)>,
}

impl RegistryOptions {
    /// Plain HTTP, anonymous.
    pub fn plain() -> RegistryOptions {
        RegistryOptions::default()
    }

    /// HTTPS with Basic auth for `user`/`password`.
    pub fn tls_basic(user: &str, password: &str) -> RegistryOptions {
        RegistryOptions {
            tls: true,
            basic_auth: Some((user.to_string(), password.to_string())),
        }
    }
}

/// One HTTP request served by the registry, from its access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// Path with query string, exactly as sent, e.g. `/v2/team/app/manifests/v1`.
    pub path: String,
    /// Response status.
    pub status: u16,
}

/// What a `HEAD /v2/<repo>/manifests/<reference>` answered (see [`Registry::head_manifest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestHead {
    pub status: u16,
    /// `Docker-Content-Digest`.
    pub digest: Option<String>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `WWW-Authenticate`.
    pub www_authenticate: Option<String>,
}

struct Tls {
    ca_pem_path: PathBuf,
    ca_der: CertificateDer<'static>,
    /// With [`Registry::start_mutual_tls`]: the client certificate the registry asks for.
    client: Option<ClientCertificate>,
}

/// A client certificate and its key, as files (for the clients under test) and PEM (for the
/// harness's own client).
struct ClientCertificate {
    cert_path: PathBuf,
    key_path: PathBuf,
    cert_pem: String,
    key_pem: String,
}

/// A running `docker-registry` process. Dropping it stops the process and removes its temp dir.
pub struct Registry {
    /// The `sh` supervisor.
    child: Child,
    /// The supervisor's stdin: the registry lives as long as this pipe is open.
    lifeline: Option<ChildStdin>,
    /// Owner of the temp dir (also removed by the supervisor when it stops).
    temp: Option<tempfile::TempDir>,
    dir: PathBuf,
    host: String,
    pid: u32,
    tls: Option<Tls>,
    basic_auth: Option<(String, String)>,
    /// With token auth: the token server, and the user the harness pushes as.
    token: Option<TokenAuth>,
}

struct TokenAuth {
    server: Arc<TokenServer>,
    push_user: (String, String),
}

/// What [`Registry::try_start`] takes besides the options: a CA to reuse, a token server,
/// whether a client certificate is required.
#[derive(Default)]
struct Extras<'a> {
    pki: Option<&'a TestPki>,
    token_server: Option<&'a TokenServer>,
    client_auth: bool,
}

enum StartError {
    /// The port was taken: try again.
    PortClash(String),
    /// Anything else: give up.
    Fatal(String),
}

impl Registry {
    /// Starts `docker-registry` on 127.0.0.1 (port chosen by the registry itself: `http.addr` is
    /// `127.0.0.1:0` and the real port is read from its "listening on" log line), filesystem
    /// storage in a fresh temp dir, TLS and/or htpasswd Basic auth as asked, access log on.
    /// Returns once it answers `GET /v2/` (200, or 401 with auth). Panics with the registry's own
    /// log if it does not come up within 10 s. Retries if the port is taken.
    pub fn start(opts: RegistryOptions) -> Registry {
        let bin = registry_bin();
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            match Registry::try_start(&opts, &bin, &Extras::default()) {
                Ok(registry) => return registry,
                Err(StartError::PortClash(log)) => last = log,
                Err(StartError::Fatal(msg)) => panic!("{msg}"),
            }
        }
        panic!("docker-registry: port clash {START_ATTEMPTS} times in a row; last log:\n{last}");
    }

    /// Starts an HTTPS registry with distribution's token auth (`auth: token`) and, in this
    /// process, its token server ([`TokenServer`], HTTPS with the same CA and server
    /// certificate, so one `--ca-file` trusts both). The token server knows `user`/`password`
    /// (pull and push on everything) and lets anonymous clients pull `public/*` only. Fixtures
    /// are pushed with a `pull,push` token for `user`. Otherwise like [`Registry::start`]. The
    /// token server stops when the registry is dropped.
    pub fn start_token_auth(user: &str, password: &str) -> Registry {
        let bin = registry_bin();
        let pki = TestPki::generate();
        let server = Arc::new(TokenServer::start(
            &pki.server_cert_pem,
            &pki.server_key_pem,
            &[(user, password)],
        ));
        let opts = RegistryOptions {
            tls: true,
            basic_auth: None,
        };
        let extras = Extras {
            pki: Some(&pki),
            token_server: Some(&server),
            client_auth: false,
        };
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            match Registry::try_start(&opts, &bin, &extras) {
                Ok(mut registry) => {
                    registry.token = Some(TokenAuth {
                        server,
                        push_user: (user.to_string(), password.to_string()),
                    });
                    return registry;
                }
                Err(StartError::PortClash(log)) => last = log,
                Err(StartError::Fatal(msg)) => panic!("{msg}"),
            }
        }
        panic!("docker-registry: port clash {START_ATTEMPTS} times in a row; last log:\n{last}");
    }

    /// Starts an HTTPS registry, anonymous, that refuses any client without a certificate its
    /// CA signed (distribution's `http.tls.clientcas`): the certificate and key are at
    /// [`Registry::client_cert_path`] and [`Registry::client_key_path`]; the harness's own
    /// client presents them. Otherwise like [`Registry::start`].
    pub fn start_mutual_tls() -> Registry {
        let bin = registry_bin();
        let opts = RegistryOptions {
            tls: true,
            basic_auth: None,
        };
        let extras = Extras {
            client_auth: true,
            ..Extras::default()
        };
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            match Registry::try_start(&opts, &bin, &extras) {
                Ok(registry) => return registry,
                Err(StartError::PortClash(log)) => last = log,
                Err(StartError::Fatal(msg)) => panic!("{msg}"),
            }
        }
        panic!("docker-registry: port clash {START_ATTEMPTS} times in a row; last log:\n{last}");
    }

    fn try_start(
        opts: &RegistryOptions,
        bin: &str,
        extras: &Extras<'_>,
    ) -> Result<Registry, StartError> {
        let temp = tempfile::Builder::new()
            .prefix("pullcheck-registry-")
            .tempdir()
            .expect("create registry temp dir");
        let dir = temp.path().to_path_buf();
        let storage = dir.join("storage");
        fs::create_dir(&storage).expect("create storage dir");

        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: info\n  accesslog:\n    disabled: false\n\
             storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n  \
             maintenance:\n    uploadpurging:\n      enabled: false\n\
             health:\n  storagedriver:\n    enabled: false\n\
             http:\n  addr: 127.0.0.1:0\n  secret: pullcheck-test-secret\n",
            storage = yaml_str(&storage),
        );
        let tls = opts.tls.then(|| {
            let generated;
            let pki = match extras.pki {
                Some(pki) => pki,
                None => {
                    generated = TestPki::generate();
                    &generated
                }
            };
            let ca_pem_path = dir.join("ca.pem");
            let cert_path = dir.join("server.pem");
            let key_path = dir.join("server-key.pem");
            fs::write(&ca_pem_path, &pki.ca_pem).expect("write ca.pem");
            fs::write(&cert_path, &pki.server_cert_pem).expect("write server.pem");
            fs::write(&key_path, &pki.server_key_pem).expect("write server-key.pem");
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                yaml_str(&cert_path),
                yaml_str(&key_path)
            ));
            let client = extras.client_auth.then(|| {
                config.push_str(&format!(
                    "    clientcas:\n      - {}\n",
                    yaml_str(&ca_pem_path)
                ));
                let cert_path = dir.join("client.cert");
                let key_path = dir.join("client.key");
                fs::write(&cert_path, &pki.client_cert_pem).expect("write client.cert");
                fs::write(&key_path, &pki.client_key_pem).expect("write client.key");
                ClientCertificate {
                    cert_path,
                    key_path,
                    cert_pem: pki.client_cert_pem.clone(),
                    key_pem: pki.client_key_pem.clone(),
                }
            });
            Tls {
                ca_pem_path,
                ca_der: pki.ca_der.clone(),
                client,
            }
        });
        if let Some((user, password)) = &opts.basic_auth {
            // Cost 4 (the minimum): distribution checks the bcrypt hash on every request.
            let hash = bcrypt::hash(password, 4).expect("bcrypt");
            let htpasswd = dir.join("htpasswd");
            fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("write htpasswd");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: pullcheck-test\n    path: {}\n",
                yaml_str(&htpasswd)
            ));
        }
        if let Some(server) = extras.token_server {
            let bundle = dir.join("token-root.pem");
            fs::write(&bundle, server.signing_cert_pem()).expect("write token-root.pem");
            config.push_str(&format!(
                "auth:\n  token:\n    realm: '{}'\n    service: '{TOKEN_SERVICE}'\n    \
                 issuer: '{TOKEN_ISSUER}'\n    rootcertbundle: {}\n",
                server.realm(),
                yaml_str(&bundle)
            ));
        }
        let config_path = dir.join("config.yml");
        fs::write(&config_path, config).expect("write config.yml");

        let stdout = fs::File::create(dir.join("access.log")).expect("create access.log");
        let stderr = fs::File::create(dir.join("registry.log")).expect("create registry.log");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("sh")
            .arg(bin)
            .arg(&config_path)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("spawn sh (registry supervisor)");
        let lifeline = child.stdin.take();

        let mut registry = Registry {
            child,
            lifeline,
            temp: Some(temp),
            dir,
            host: String::new(),
            pid: 0,
            tls,
            basic_auth: opts.basic_auth.clone(),
            token: None,
        };
        let started = Instant::now();
        let deadline = started + START_TIMEOUT;

        // 1. The port, from `level=info msg="listening on 127.0.0.1:PORT"`.
        loop {
            if registry.pid == 0 {
                registry.pid = fs::read_to_string(registry.dir.join("registry.pid"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
            }
            let log = fs::read_to_string(registry.dir.join("registry.log")).unwrap_or_default();
            if let Some(port) = listening_port(&log) {
                registry.host = format!("127.0.0.1:{port}");
                break;
            }
            registry.check_alive(&log, deadline)?;
            std::thread::sleep(Duration::from_millis(5));
        }

        // 2. `GET /v2/` answers (any HTTP status: 200, or 401 with auth).
        let client = registry.http_client();
        let url = format!("{}/v2/", registry.base_url());
        let answered = super::block_on(async {
            loop {
                match client
                    .get(&url)
                    .timeout(Duration::from_secs(1))
                    .send()
                    .await
                {
                    Ok(resp) => return Ok(resp.status().as_u16()),
                    Err(e) if Instant::now() >= deadline => return Err(e),
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
        match answered {
            Ok(200 | 401) => Ok(registry),
            Ok(status) => Err(StartError::Fatal(format!(
                "docker-registry answered GET /v2/ with {status}\n{}",
                registry.logs()
            ))),
            Err(e) => Err(StartError::Fatal(format!(
                "docker-registry did not answer GET /v2/ within {START_TIMEOUT:?}: {e:#}\n{}",
                registry.logs()
            ))),
        }
    }

    /// Fails when the registry died, logged a fatal error, or the deadline passed.
    fn check_alive(&mut self, log: &str, deadline: Instant) -> Result<(), StartError> {
        if log.contains("address already in use") {
            return Err(StartError::PortClash(self.logs()));
        }
        // The supervisor only reaps the registry once told to stop, so a registry that exited
        // on its own (bad config, ...) is a zombie until then.
        let dead = matches!(self.child.try_wait(), Ok(Some(_)))
            || (self.pid != 0 && process_exited(self.pid));
        if dead || log.contains("level=fatal") || log.contains("level=panic") {
            return Err(StartError::Fatal(format!(
                "docker-registry failed to start\n{}",
                self.logs()
            )));
        }
        if Instant::now() >= deadline {
            return Err(StartError::Fatal(format!(
                "docker-registry did not start listening within {START_TIMEOUT:?}\n{}",
                self.logs()
            )));
        }
        Ok(())
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.host.clone()
    }

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.host)
    }

    /// The CA certificate (PEM) that signed the server certificate, when TLS is on.
    pub fn ca_pem_path(&self) -> Option<&Path> {
        self.tls.as_ref().map(|t| t.ca_pem_path.as_path())
    }

    /// The client certificate (PEM) the registry asks for ([`Registry::start_mutual_tls`]).
    pub fn client_cert_path(&self) -> Option<&Path> {
        let client = self.tls.as_ref()?.client.as_ref()?;
        Some(client.cert_path.as_path())
    }

    /// Its private key (PEM).
    pub fn client_key_path(&self) -> Option<&Path> {
        let client = self.tls.as_ref()?.client.as_ref()?;
        Some(client.key_path.as_path())
    }

    /// The CA certificate (DER), when TLS is on.
    pub fn ca_der(&self) -> Option<&CertificateDer<'static>> {
        self.tls.as_ref().map(|t| &t.ca_der)
    }

    /// The configured Basic-auth user and password.
    pub fn basic_auth(&self) -> Option<(&str, &str)> {
        self.basic_auth
            .as_ref()
            .map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// The token server, when the registry uses token auth ([`Registry::start_token_auth`]).
    pub fn token_server(&self) -> Option<&TokenServer> {
        self.token.as_ref().map(|t| t.server.as_ref())
    }

    /// The `Authorization` header value the harness pushes `repo` with: Basic for the
    /// configured user, a `pull,push` Bearer token for the token-auth user (fetched from the
    /// token server, as a client would), or none.
    pub fn push_authorization(&self, repo: &str) -> Option<String> {
        use base64::Engine;
        if let Some((user, password)) = self.basic_auth() {
            let raw = format!("{user}:{password}");
            return Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(raw)
            ));
        }
        let token = self.token.as_ref()?;
        let (user, password) = &token.push_user;
        let bearer = token.server.fetch_token(
            &self.http_client(),
            Some((user, password)),
            &format!("repository:{repo}:pull,push"),
        );
        Some(format!("Bearer {bearer}"))
    }

    /// The registry's temp dir (config, certs, logs, storage/). Tests may write files here.
    /// Removed when the registry stops.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// PID of the `docker-registry` process (0 if unknown).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The registry's own output: stderr (logrus) then stdout (access log).
    pub fn logs(&self) -> String {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        format!(
            "--- docker-registry log ({}) ---\n{}--- access log ---\n{}--- end ---",
            self.dir.display(),
            read("registry.log"),
            read("access.log")
        )
    }

    /// A reqwest client for this registry: trusts its CA (if TLS), presents its client
    /// certificate (if it asks for one), offers h2 and http/1.1, ignores proxy environment
    /// variables, 10 s timeout. Use it inside [`super::block_on`].
    pub fn http_client(&self) -> reqwest::Client {
        let identity = self
            .tls
            .as_ref()
            .and_then(|t| t.client.as_ref())
            .map(|c| (c.cert_pem.as_str(), c.key_pem.as_str()));
        client_with(self.ca_der(), identity)
    }

    /// Every HTTP request the registry has served so far, oldest first, from its access log.
    /// Includes the harness's own `GET /v2/` start-up probes and fixture pushes; filter by a
    /// repository name unique to your test (or use [`Registry::requests_for`]).
    ///
    /// The access-log line is written just after the response, so this re-reads the log until it
    /// has been unchanged for 100 ms (1 s at most).
    pub fn requests(&self) -> Vec<Request> {
        settle(|| self.read_requests())
    }

    /// The requests whose path is under `/v2/<repo>/` (settled like [`Registry::requests`], but
    /// only on these, so concurrent traffic on a shared registry does not slow it down).
    pub fn requests_for(&self, repo: &str) -> Vec<Request> {
        let prefix = format!("/v2/{repo}/");
        settle(|| {
            self.read_requests()
                .into_iter()
                .filter(|r| r.path.starts_with(&prefix))
                .collect()
        })
    }

    /// Polls the access log until `pred(&requests)` holds, and returns those requests.
    /// Panics (with the registry's log) after 5 s.
    pub fn wait_for_requests(&self, pred: impl Fn(&[Request]) -> bool) -> Vec<Request> {
        let deadline = Instant::now() + WAIT_FOR_REQUESTS_TIMEOUT;
        loop {
            let requests = self.read_requests();
            if pred(&requests) {
                return requests;
            }
            if Instant::now() >= deadline {
                panic!(
                    "requests never matched within {WAIT_FOR_REQUESTS_TIMEOUT:?}: {requests:#?}\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn read_requests(&self) -> Vec<Request> {
        let bytes = fs::read(self.dir.join("access.log")).unwrap_or_default();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(parse_access_line)
            .collect()
    }

    /// `HEAD /v2/<repo>/manifests/<reference>` with this `Accept` header and, if given, Basic
    /// credentials (pass [`Registry::basic_auth`] for the configured user).
    pub fn head_manifest(
        &self,
        repo: &str,
        reference: &str,
        accept: &str,
        creds: Option<(&str, &str)>,
    ) -> ManifestHead {
        let client = self.http_client();
        let url = format!("{}/v2/{repo}/manifests/{reference}", self.base_url());
        super::block_on(async {
            let mut req = client.head(&url).header("Accept", accept);
            if let Some((user, password)) = creds {
                req = req.basic_auth(user, Some(password));
            }
            let resp = req.send().await.expect("HEAD manifest");
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            ManifestHead {
                status: resp.status().as_u16(),
                digest: header("Docker-Content-Digest"),
                content_type: header("Content-Type"),
                www_authenticate: header("WWW-Authenticate"),
            }
        })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Closing the pipe makes the supervisor kill and reap the registry, then exit.
        drop(self.lifeline.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= deadline => {
                    // Should not happen; do not leave anything behind.
                    if self.pid != 0 {
                        let _ = Command::new("kill")
                            .arg("-KILL")
                            .arg(self.pid.to_string())
                            .status();
                    }
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        drop(self.temp.take());
    }
}

/// A reqwest client trusting `ca` (or nothing, for plain HTTP), ALPN h2 + http/1.1, no proxy,
/// User-Agent `pullcheck-test-harness` (visible in [`Registry::logs`]).
pub fn http_client(ca: Option<&CertificateDer<'static>>) -> reqwest::Client {
    client_with(ca, None)
}

/// [`http_client`], presenting `identity` (a PEM certificate and its PEM key) when given.
fn client_with(
    ca: Option<&CertificateDer<'static>>,
    identity: Option<(&str, &str)>,
) -> reqwest::Client {
    use rustls_pki_types::PrivateKeyDer;
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = ca {
        roots.add(ca.clone()).expect("add test CA to root store");
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("rustls protocol versions")
    .with_root_certificates(roots);
    let mut tls = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .expect("client certificate PEM");
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("client key PEM");
            builder
                .with_client_auth_cert(chain, key)
                .expect("client certificate")
        }
    };
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .no_proxy()
        .user_agent("pullcheck-test-harness")
        .timeout(Duration::from_secs(10))
        .build()
        .expect("build reqwest client")
}

/// The registry binary, checked once per process.
fn registry_bin() -> String {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = std::env::var(REGISTRY_BIN_ENV).unwrap_or_else(|_| "docker-registry".into());
        match Command::new(&bin).arg("--version").output() {
            Ok(out) if out.status.success() => bin,
            Ok(out) => panic!(
                "`{bin} --version` failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => panic!(
                "cannot run `{bin}` ({e}): install Debian's `docker-registry` package \
                 (apt-get install docker-registry) or set {REGISTRY_BIN_ENV}"
            ),
        }
    })
    .clone()
}

/// Re-reads until the result has not changed for [`LOG_QUIET`] (at most [`LOG_SETTLE_MAX`]).
fn settle(read: impl Fn() -> Vec<Request>) -> Vec<Request> {
    let start = Instant::now();
    let mut last = read();
    let mut quiet_since = Instant::now();
    loop {
        if quiet_since.elapsed() >= LOG_QUIET || start.elapsed() >= LOG_SETTLE_MAX {
            return last;
        }
        std::thread::sleep(Duration::from_millis(20));
        let now = read();
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
    }
}

/// Whether process `pid` has exited (is a zombie, or is gone). Linux `/proc`.
pub fn process_exited(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start())
            .is_some_and(|state| state.starts_with(['Z', 'X'])),
    }
}

/// The port in `msg="listening on 127.0.0.1:PORT"` (`msg="listening on 127.0.0.1:PORT, tls"` with TLS).
fn listening_port(log: &str) -> Option<u16> {
    log.lines().find_map(|line| {
        let rest = &line[line.find("msg=\"listening on ")? + "msg=\"listening on ".len()..];
        let addr = &rest[..rest.find(['"', ','])?];
        addr.rsplit_once(':')?.1.parse().ok()
    })
}

/// Parses one Apache combined-format line (gorilla/handlers, on the registry's stdout):
/// `127.0.0.1 - - [30/Nov/2026:01:16:06 +0000] "HEAD /v2/foo/bar/manifests/v1?x=1 HTTP/1.1" 404 92 "" "curl/7.88.1"`
pub fn parse_access_line(line: &str) -> Option<Request> {
    let start = line.find("] \"")? + 3;
    let rest = &line[start..];
    // The request line ends at the first unescaped `" ` (gorilla escapes `"` in the URI as `\"`).
    let bytes = rest.as_bytes();
    let end = (0..bytes.len().saturating_sub(1))
        .find(|&i| bytes[i] == b'"' && bytes[i + 1] == b' ' && (i == 0 || bytes[i - 1] != b'\\'))?;
    let request_line = &rest[..end];
    let mut after = rest[end + 2..].split(' ');
    let status: u16 = after.next()?.parse().ok()?;
    let (method, request_line) = request_line.split_once(' ')?;
    let (path, _proto) = request_line.rsplit_once(' ')?;
    Some(Request {
        method: method.to_string(),
        path: path.replace("\\\"", "\"").replace("\\\\", "\\"),
        status,
    })
}

/// A path as a single-quoted YAML scalar.
fn yaml_str(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "''"))
}
