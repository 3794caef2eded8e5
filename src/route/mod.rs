//! Where a pull goes: the node runtime's registry configuration turned into a plain [`Route`],
//! the ordered endpoints one reference is asked at, each with what it may be sent.
//!
//! containerd reads a hosts directory ([`hosts`], `--hosts-dir`), CRI-O and Podman read
//! `registries.conf` ([`conf`], `--registries-conf`) and per-host certificates from a certs.d
//! folder ([`certs`], `--certs-dir`). Both send pulls to mirrors and rewritten locations before
//! (or instead of) the registry named in the reference. Parsing lives here and
//! speaks no HTTP; `registry` asks each endpoint and `check` combines the answers, as the
//! runtime would.
//!
//! Who is sent the pod's credentials follows each runtime ([`Endpoint::credentials`]):
//! containerd's CRI plugin offers the credential the kubelet chose for the image's registry to
//! every host of that registry's `hosts.toml`, mirrors included; containers/image (CRI-O,
//! Podman) resets it for a mirror on another host, which is asked anonymously.
//!
//! A node's files are small; what is not is refused before it costs memory: a file is counted
//! ([`toml_values`]) before it is parsed, and hosts, registries, mirrors and headers are capped
//! ([`MAX_TOML_VALUES`], [`hosts::MAX_HOSTS`], [`conf::MAX_REGISTRIES`], [`MAX_HEADERS`]).

pub mod certs;
pub mod conf;
pub mod hosts;
pub mod inject;

use crate::input::{LimitedReadError, read_limited_file};
use crate::reference::{DOCKER_HUB, DOCKER_HUB_API, Reference};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most values (keys, array items, tables) one hosts.toml or registries.conf file may
/// hold. A parsed TOML table costs tens of times its text, and a node's files hold tens of
/// entries (Fedora's short-name aliases, the largest known drop-in, about a thousand): so a
/// file is counted before it is parsed, and refused past this.
pub(crate) const MAX_TOML_VALUES: usize = 10_000;

/// How many values a TOML text can hold at most: the `=`, `,`, `[` and `{` outside strings
/// and comments (each value but the first of an array follows one of them). Linear, no
/// allocation; an upper bound for any text, valid TOML or not.
pub(crate) fn toml_values(text: &str) -> usize {
    let b = text.as_bytes();
    let (mut i, mut n) = (0, 1);
    while i < b.len() {
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'"' | b'\'') => {
                let triple = b[i..].starts_with(&[q, q, q]);
                i += if triple { 3 } else { 1 };
                while i < b.len() {
                    if q == b'"' && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if triple && b[i..].starts_with(&[q, q, q]) {
                        i += 2;
                        break;
                    }
                    if !triple && (b[i] == q || b[i] == b'\n') {
                        break;
                    }
                    i += 1;
                }
            }
            b'=' | b',' | b'[' | b'{' => n += 1,
            _ => {}
        }
        i += 1;
    }
    n
}

/// A TOML text with more values than [`MAX_TOML_VALUES`]: about how many it holds.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "holds about {0} values, more than the {MAX_TOML_VALUES} pullcheck reads in one file (no node's configuration comes near)"
)]
pub struct TooManyValues(usize);

/// `Err` naming the count when `text` holds more than [`MAX_TOML_VALUES`] values.
pub(crate) fn check_toml_size(text: &str) -> Result<(), TooManyValues> {
    let n = toml_values(text);
    if n > MAX_TOML_VALUES {
        return Err(TooManyValues(n));
    }
    Ok(())
}

/// Why a node configuration file or folder cannot be read. Cloned with the configuration
/// it stands for (a host's is read once per run), so the I/O error is shared.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    /// Larger than 1 MiB.
    #[error("{}: larger than 1 MiB", .0.display())]
    TooLarge(PathBuf),
    /// The file or folder cannot be opened or read.
    #[error("{}: cannot read: {}", .0.display(), .1)]
    Io(PathBuf, Arc<std::io::Error>),
    /// The file is not UTF-8.
    #[error("{}: not UTF-8 text", .0.display())]
    NotUtf8(PathBuf),
}

/// The largest hosts.toml, registries.conf or certificate file read.
pub(crate) const MAX_FILE: u64 = 1024 * 1024;

/// A node configuration file as text, at most [`MAX_FILE`] bytes.
pub(crate) fn read_text(path: &Path) -> Result<String, ReadError> {
    let bytes = read_limited_file(path, MAX_FILE).map_err(|e| match e {
        LimitedReadError::TooLarge => ReadError::TooLarge(path.to_path_buf()),
        LimitedReadError::Io(e) => ReadError::Io(path.to_path_buf(), Arc::new(e)),
    })?;
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8(path.to_path_buf()))
}

/// The files of a folder, in no order.
pub(crate) fn dir_files(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    Ok(std::fs::read_dir(dir)
        .map_err(|e| ReadError::Io(dir.to_path_buf(), Arc::new(e)))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect())
}

/// TLS settings of one endpoint that differ from the run's defaults.
#[derive(Default)]
pub(crate) struct Tls {
    /// Extra trusted roots (`ca`), added to the run's roots.
    pub(crate) ca: Vec<CertificateDer<'static>>,
    /// A client certificate chain and its key (`client`), for mutual TLS.
    pub(crate) identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    /// Do not verify the server's certificate (`skip_verify`, `insecure`).
    pub(crate) skip_verify: bool,
    /// The files the settings came from, to tell endpoints apart and to name them.
    pub(crate) files: Vec<PathBuf>,
}

impl Tls {
    /// These settings with `other`'s CAs and client certificate added (containers-certs.d(5)
    /// over registries.conf's `insecure`): verification is skipped when either skips it, the
    /// client certificate is this one's, else `other`'s.
    pub(crate) fn merged(&self, other: &Tls) -> Tls {
        let identity = self
            .identity
            .as_ref()
            .or(other.identity.as_ref())
            .map(|(chain, key)| (chain.clone(), key.clone_key()));
        Tls {
            ca: self.ca.iter().chain(&other.ca).cloned().collect(),
            identity,
            skip_verify: self.skip_verify || other.skip_verify,
            files: self.files.iter().chain(&other.files).cloned().collect(),
        }
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The private key is never shown.
        f.debug_struct("Tls")
            .field("ca", &self.ca.len())
            .field("identity", &self.identity.as_ref().map(|_| "<redacted>"))
            .field("skip_verify", &self.skip_verify)
            .field("files", &self.files)
            .finish()
    }
}

/// Extra request headers of a host (hosts.toml `header`): their values may be secrets (a
/// mirror's own token), so `Debug` shows the names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl std::ops::Deref for Headers {
    type Target = Vec<(String, String)>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// The most header values one host of a hosts.toml may have.
pub const MAX_HEADERS: usize = 64;
/// The longest header name or value: a token of a few KiB is the most a mirror needs.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| format!("{name}: <redacted>")))
            .finish()
    }
}

/// One place a reference is asked at.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// `https://host[:port]` or `http://host[:port]`.
    pub(crate) origin: String,
    /// `host[:port]` of the endpoint.
    pub(crate) host: String,
    /// The API root path: `/v2`, or the URL's own path with `override_path`.
    pub(crate) root: String,
    /// When HTTPS cannot be spoken, try plain HTTP (containerd's `http://` host with TLS
    /// settings, registries.conf's `insecure`).
    pub(crate) http_fallback: bool,
    /// TLS settings of its own, else the run's.
    pub(crate) tls: Option<Arc<Tls>>,
    /// Extra request headers (hosts.toml `header`).
    pub(crate) headers: Headers,
    /// Whether the pod's credentials for the image's registry may be sent here.
    pub(crate) credentials: bool,
    /// The registry this endpoint stands in for, when it is not that registry itself.
    pub(crate) mirror_of: Option<String>,
    /// The reference as asked here (a rewritten location changes its repository).
    pub(crate) reference: Reference,
    /// Set when the runtime refuses this reference without asking: the file that blocks it.
    pub(crate) blocked: Option<String>,
    /// Set when the node's files for this host cannot be used (a certs.d folder that
    /// containers/image refuses): why. The endpoint is not asked, and the route goes on to the
    /// next one, as containers/image goes on to its next pull source.
    pub(crate) broken: Option<String>,
    /// containerd's rule for a loopback registry that answers HTTPS in plain HTTP: it is then
    /// asked in plain HTTP. Not containers/image's, which asks such a registry in plain HTTP
    /// only when registries.conf marks it `insecure`.
    pub(crate) loopback_fallback: bool,
}

impl Endpoint {
    /// The endpoint the reference names, as pullcheck asks it without a node configuration.
    pub(crate) fn direct(reference: &Reference, plain_http: &[String]) -> Endpoint {
        let host = reference.api_host().to_string();
        let plain = plain_http
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&reference.registry) || h.eq_ignore_ascii_case(&host));
        Endpoint {
            origin: format!("{}://{host}", if plain { "http" } else { "https" }),
            host,
            root: "/v2".to_string(),
            http_fallback: false,
            tls: None,
            headers: Headers::default(),
            credentials: true,
            mirror_of: None,
            reference: reference.clone(),
            blocked: None,
            broken: None,
            loopback_fallback: true,
        }
    }

    /// The API root URL (`https://mirror.corp:5000/v2`).
    pub(crate) fn url(&self) -> String {
        format!("{}{}", self.origin, self.root)
    }

    /// Whether this is the endpoint pullcheck would ask without a node configuration: it then
    /// shares the run's per-registry state (token plan, the registry's challenge, tokens).
    pub(crate) fn is_default(&self) -> bool {
        self.root == "/v2"
            && self.tls.is_none()
            && self.headers.is_empty()
            && self.host == self.reference.api_host()
    }

    /// Tells endpoints with different settings apart (one connection pool and token cache
    /// each).
    pub(crate) fn key(&self) -> String {
        let files = self.tls.as_ref().map(|t| (t.files.clone(), t.skip_verify));
        format!("{} {:?} {:?}", self.url(), files, self.headers.0)
    }

    /// The same endpoint over plain HTTP, for `http_fallback`.
    pub(crate) fn plain(&self) -> Endpoint {
        Endpoint {
            origin: format!("http://{}", self.host),
            http_fallback: false,
            tls: None,
            ..self.clone()
        }
    }
}

/// Whether `host` is `registry`'s own host (for Docker Hub, its API host too).
pub(crate) fn is_upstream(host: &str, registry: &str) -> bool {
    host.eq_ignore_ascii_case(registry)
        || (registry == DOCKER_HUB
            && (host.eq_ignore_ascii_case(DOCKER_HUB_API) || host == "index.docker.io"))
}

/// Which route flags of `check` a run was given: containerd's hosts directory, or the files
/// of containers/image. The two describe different runtimes, so a run takes one.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RouteFlags {
    /// `--hosts-dir`.
    pub(crate) hosts_dir: bool,
    /// `--registries-conf`.
    pub(crate) registries_conf: bool,
    /// `--registries-conf-dir`.
    pub(crate) registries_conf_dir: bool,
    /// `--certs-dir`.
    pub(crate) certs_dir: bool,
}

impl RouteFlags {
    /// Why these flags cannot be used together, or `None`. `inject` asks it too, so that the
    /// arguments it writes are refused once rather than in every pod.
    pub(crate) fn conflict(&self) -> Option<String> {
        if !self.hosts_dir {
            return None;
        }
        let containers: Vec<&str> = [
            ("--registries-conf", self.registries_conf),
            ("--registries-conf-dir", self.registries_conf_dir),
            ("--certs-dir", self.certs_dir),
        ]
        .into_iter()
        .filter_map(|(flag, set)| set.then_some(flag))
        .collect();
        (!containers.is_empty()).then(|| {
            format!(
                "--hosts-dir (containerd) and {} (CRI-O, Podman) describe different runtimes: give one",
                containers.join(" and ")
            )
        })
    }
}

/// The ordered endpoints for one image.
#[derive(Debug, Clone)]
pub struct Route {
    /// Tried in order; the first that has the image decides.
    pub(crate) endpoints: Vec<Endpoint>,
    /// Why the list is empty or shorter than the configuration says (hosts without the
    /// capability, mirrors skipped by `pull-from-mirror`), for the message.
    pub(crate) notes: Vec<String>,
}

/// The node's registry configuration for a run: none, containerd's hosts directory, or
/// registries.conf and certs.d.
#[derive(Debug, Default)]
pub struct Router {
    /// containerd's hosts directories.
    pub(crate) hosts: Option<hosts::HostsDirs>,
    /// registries.conf, with its drop-ins.
    pub(crate) conf: Option<conf::RegistriesConf>,
    /// containers-certs.d folders, laid over every endpoint of a route.
    pub(crate) certs: Option<certs::CertsDirs>,
    /// `--plain-http` registries, for endpoints that no configuration names.
    pub(crate) plain_http: Vec<String>,
}

impl Router {
    /// The endpoints for `input` (as given: short names matter to registries.conf), parsed as
    /// `reference`. An error is a configuration the runtime could not use either.
    pub(crate) fn route(
        &self,
        input: &str,
        reference: &Reference,
    ) -> Result<Route, hosts::HostsError> {
        if let Some(h) = &self.hosts {
            return h.route(reference, &self.plain_http);
        }
        let mut route = match &self.conf {
            Some(c) => c.route(input, reference, &self.plain_http),
            None => Route {
                endpoints: vec![Endpoint::direct(reference, &self.plain_http)],
                notes: Vec::new(),
            },
        };
        if let Some(certs) = &self.certs {
            certs.apply(&mut route);
        }
        // containers/image's route: a loopback registry is asked over HTTPS alone unless
        // `insecure` (or --plain-http) says otherwise.
        for e in &mut route.endpoints {
            e.loopback_fallback = false;
        }
        Ok(route)
    }

    /// Whether a node configuration is in use.
    pub(crate) fn configured(&self) -> bool {
        self.hosts.is_some() || self.conf.is_some() || self.certs.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_values_count_structure_outside_strings_and_comments() {
        let cases: &[(&str, &str, usize)] = &[
            ("empty", "", 1),
            ("one key", "server = \"https://r\"", 2),
            ("a table and a key", "[host.\"http://m\"]\nca = \"x\"", 3),
            ("an array", "capabilities = [\"pull\", \"resolve\"]", 4),
            ("a comment", "# a = [1, 2, {3}]\n", 1),
            ("a basic string", "k = \"a = [1, {2}] \\\" ,\"", 2),
            ("a literal string", "k = 'a, b = [c'", 2),
            (
                "a multi-line string",
                "k = \"\"\"a,\nb = [\n\"\"\"\nl = 1",
                3,
            ),
            ("a multi-line literal", "k = '''a,\n'b' = [\n'''", 2),
            ("an unclosed string", "k = \"a, b", 2),
            ("an array of tables", "[[registry]]\nlocation = \"r\"", 4),
        ];
        for (name, text, want) in cases {
            assert_eq!(toml_values(text), *want, "{name}: {text:?}");
        }
        let big = "[[registry]]\nlocation = \"r\"\n".repeat(MAX_TOML_VALUES / 3 + 1);
        assert!(
            check_toml_size(&big)
                .unwrap_err()
                .to_string()
                .contains("more than the 10000")
        );
    }
}
