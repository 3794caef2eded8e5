//! containerd's hosts directory (`config_path`, `--hosts-dir`): `DIR/<host>/hosts.toml`, read
//! as containerd's `remotes/docker/config` reads it, plus the flat layout a ConfigMap can
//! mount (`DIR/<host>.toml`, `DIR/<host>_<port>.toml`).
//!
//! What containerd does, and so what this does:
//! - the directories are searched in order; in each, `<host>_<port>_` (containerd's own
//!   spelling of a host with a port), `<host>`, then `_default`; the first that exists wins,
//!   even when it is a `_default`;
//! - `[host."URL"]` entries are tried in the order written, then `server` (default
//!   `https://<host>`, `https://registry-1.docker.io` for `docker.io`);
//! - a URL without a path gets `/v2`; with a path, `/v2` is appended unless the path ends in
//!   `/v2` or `override_path = true`;
//! - `capabilities` default to all; a tag needs `pull` and `resolve`, a digest `pull`;
//! - `ca`, `client`, `skip_verify`, `header` belong to their host; relative paths are
//!   relative to the file's directory; an `http://` host with TLS settings (and not port 80)
//!   is tried over HTTPS first, then plain HTTP;
//! - a hosts.toml that does not parse is logged and ignored: the directory's `*.crt`,
//!   `*.cert`/`*.key` files are used instead, as when there is no hosts.toml.

use super::{Endpoint, Headers, Route, Tls, is_upstream};
use crate::input::{LimitedReadError, read_limited_file};
use crate::reference::{DOCKER_HUB, DOCKER_HUB_API, Reference};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest hosts.toml or certificate file read.
const MAX_FILE: u64 = 1024 * 1024;
/// The most hosts one hosts.toml may list (containerd's have a handful).
pub const MAX_HOSTS: usize = 100;

/// What a host may be asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `pull`: fetch content by digest.
    pub pull: bool,
    /// `resolve`: turn a tag into a digest.
    pub resolve: bool,
}

impl Capabilities {
    const ALL: Capabilities = Capabilities {
        pull: true,
        resolve: true,
    };
}

/// One host of a hosts.toml (a `[host."URL"]`, or the `server` last).
#[derive(Debug, Clone)]
pub struct HostEntry {
    /// `https` or `http`; empty for a `server` left unset.
    pub scheme: String,
    /// `host[:port]`; empty for a `server` left unset.
    pub host: String,
    /// The API root path.
    pub path: String,
    /// What it may be asked for.
    pub capabilities: Capabilities,
    /// Its own TLS settings, when it has any.
    pub tls: Option<Arc<Tls>>,
    /// Extra headers.
    pub headers: Headers,
}

/// A host's configuration as found: the file (for messages) and its hosts in order.
#[derive(Debug, Clone)]
pub struct HostsConfig {
    /// The file or directory it came from.
    pub source: PathBuf,
    /// The hosts, `server` last.
    pub hosts: Vec<HostEntry>,
}

/// containerd's hosts directories, and what was read from them (each host once per run).
#[derive(Debug, Default)]
pub struct HostsDirs {
    dirs: Vec<PathBuf>,
    loaded: Mutex<HashMap<String, Loaded>>,
}

/// A host's configuration (`None`: the default route), or why it cannot be used, with the
/// notes a reader should see (a hosts.toml that was ignored).
type Loaded = Result<(Option<HostsConfig>, Vec<String>), String>;

impl HostsDirs {
    /// The directories, in the order they are searched.
    pub fn new(dirs: Vec<PathBuf>) -> HostsDirs {
        HostsDirs {
            dirs,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the configuration of `registry` (`docker.io`, `host:port`) once. Returns the
    /// warnings of the reading (a hosts.toml ignored, as containerd ignores it), or the error
    /// that makes it unusable (a `ca` or `client` file that cannot be read).
    pub fn load(&self, registry: &str) -> Result<Vec<String>, String> {
        let mut map = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = map
            .entry(registry.to_string())
            .or_insert_with(|| find(&self.dirs, registry));
        entry.as_ref().map(|(_, w)| w.clone()).map_err(Clone::clone)
    }

    /// The endpoints for `reference`, in containerd's order, filtered by capability.
    pub fn route(&self, reference: &Reference, plain_http: &[String]) -> Result<Route, String> {
        self.load(&reference.registry)?;
        let config = {
            let map = self
                .loaded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match map.get(&reference.registry) {
                Some(Ok((config, _))) => config.clone(),
                Some(Err(e)) => return Err(e.clone()),
                None => None,
            }
        };
        Ok(route_from(config.as_ref(), reference, plain_http))
    }
}

/// The route for `reference` from its hosts configuration (`None`: the default host).
fn route_from(config: Option<&HostsConfig>, reference: &Reference, plain_http: &[String]) -> Route {
    let mut hosts = config.map(|c| c.hosts.clone()).unwrap_or_default();
    if hosts.is_empty() {
        hosts.push(HostEntry {
            scheme: String::new(),
            host: String::new(),
            path: String::new(),
            capabilities: Capabilities::ALL,
            tls: None,
            headers: Headers::default(),
        });
    }
    if let Some(last) = hosts.last_mut().filter(|h| h.host.is_empty()) {
        // The server left unset: the registry itself.
        let direct = Endpoint::direct(reference, plain_http);
        last.scheme = if direct.origin.starts_with("http://") {
            "http".to_string()
        } else {
            "https".to_string()
        };
        last.host = if reference.registry == DOCKER_HUB {
            DOCKER_HUB_API.to_string()
        } else {
            reference.registry.clone()
        };
        last.path = "/v2".to_string();
        last.capabilities = Capabilities::ALL;
    }
    let by_digest = reference.digest.is_some();
    let mut notes = Vec::new();
    let mut endpoints = Vec::new();
    for h in hosts {
        let able = h.capabilities.pull && (by_digest || h.capabilities.resolve);
        if !able {
            notes.push(format!(
                "{}://{}{} skipped (capabilities lack {})",
                h.scheme,
                h.host,
                h.path,
                if h.capabilities.pull {
                    "resolve"
                } else {
                    "pull"
                }
            ));
            continue;
        }
        let upstream = is_upstream(&h.host, &reference.registry);
        let explicit_tls = h.tls.is_some();
        let port = h.host.rsplit_once(':').map(|(_, p)| p);
        // containerd: an http host with TLS settings is tried over HTTPS first.
        let (scheme, http_fallback) = if h.scheme == "http" && explicit_tls && port != Some("80") {
            ("https", true)
        } else {
            (h.scheme.as_str(), false)
        };
        endpoints.push(Endpoint {
            origin: format!("{scheme}://{}", h.host),
            host: h.host.clone(),
            root: h.path.clone(),
            http_fallback,
            tls: h.tls.clone(),
            headers: h.headers.clone(),
            // containerd's CRI plugin offers the pod's credential to every host of the file,
            // mirrors included: the kubelet's keyring hands it over without a server address,
            // and the CRI filters by host only when one is set (seen on the real kubelet in
            // tests/cluster/mirror.rs, in the mirror's own token log).
            credentials: true,
            mirror_of: (!upstream).then(|| reference.registry.clone()),
            reference: reference.clone(),
            blocked: None,
        });
    }
    if let (Some(c), true) = (config, endpoints.is_empty()) {
        notes.push(format!(
            "no host in {} may resolve this reference",
            c.source.display()
        ));
    }
    Route { endpoints, notes }
}

/// containerd's directory name for a host with a port: `host_port_`.
fn host_directory(host: &str) -> String {
    match host.rfind(':') {
        Some(i) if i > 0 => format!("{}_{}_", &host[..i], &host[i + 1..]),
        _ => host.to_string(),
    }
}

/// The flat (ConfigMap) file name for a host: `host.toml`, `host_port.toml`.
fn flat_name(host: &str) -> String {
    format!("{}.toml", host.replace(':', "_"))
}

fn find(dirs: &[PathBuf], registry: &str) -> Loaded {
    for dir in dirs {
        let mut places: Vec<(PathBuf, bool)> = Vec::new();
        let ch = host_directory(registry);
        if ch != registry {
            places.push((dir.join(&ch), true));
        }
        places.push((dir.join(registry), true));
        places.push((dir.join(flat_name(registry)), false));
        places.push((dir.join("_default"), true));
        places.push((dir.join("_default.toml"), false));
        for (place, is_dir) in places {
            let exists = if is_dir {
                place.is_dir()
            } else {
                place.is_file()
            };
            if !exists {
                continue;
            }
            return if is_dir {
                load_dir(&place).map(|(c, w)| (Some(c), w))
            } else {
                let base = place.parent().unwrap_or(dir).to_path_buf();
                let text = read_text(&place)?;
                parse_hosts(&text, &base, &place)
                    .map(|hosts| {
                        let c = HostsConfig {
                            source: place.clone(),
                            hosts,
                        };
                        (Some(c), Vec::new())
                    })
                    .map_err(|e| format!("{}: {e}", place.display()))
            };
        }
    }
    Ok((None, Vec::new()))
}

fn read_text(path: &Path) -> Result<String, String> {
    let bytes = read_limited_file(path, MAX_FILE).map_err(|e| match e {
        LimitedReadError::TooLarge => format!("{}: larger than 1 MiB", path.display()),
        LimitedReadError::Io(e) => format!("{}: cannot read: {e}", path.display()),
    })?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// A host directory: its hosts.toml, or its certificate files.
fn load_dir(dir: &Path) -> Result<(HostsConfig, Vec<String>), String> {
    let file = dir.join("hosts.toml");
    let mut warnings = Vec::new();
    if file.is_file() {
        let text = read_text(&file)?;
        if !text.is_empty() {
            match parse_hosts(&text, dir, &file) {
                Ok(hosts) => {
                    return Ok((
                        HostsConfig {
                            source: file,
                            hosts,
                        },
                        warnings,
                    ));
                }
                // containerd logs this and carries on with the certificate files.
                Err(ParseError::Syntax(e)) => warnings.push(format!(
                    "{}: ignored, as containerd ignores it: {e}",
                    file.display()
                )),
                Err(e @ (ParseError::Files(_) | ParseError::TooLarge(_))) => {
                    return Err(format!("{}: {e}", file.display()));
                }
            }
        }
    }
    let hosts = cert_files(dir)?;
    Ok((
        HostsConfig {
            source: dir.to_path_buf(),
            hosts,
        },
        warnings,
    ))
}

/// Docker's `certs.d` layout: `*.crt` are CAs, `X.cert` with `X.key` client pairs.
fn cert_files(dir: &Path) -> Result<Vec<HostEntry>, String> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: cannot read: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    let ca: Vec<PathBuf> = names
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "crt"))
        .cloned()
        .collect();
    let client: Vec<(PathBuf, Option<PathBuf>)> = names
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cert"))
        .map(|p| {
            let key = p.with_extension("key");
            let key = key.is_file().then_some(key);
            (p.clone(), key)
        })
        .collect();
    let tls = if ca.is_empty() && client.is_empty() {
        None
    } else {
        Some(Arc::new(load_tls(&ca, &client, None)?))
    };
    Ok(vec![HostEntry {
        scheme: String::new(),
        host: String::new(),
        path: String::new(),
        capabilities: Capabilities::ALL,
        tls,
        headers: Headers::default(),
    }])
}

/// Why a hosts.toml cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// It does not parse, or a value has the wrong type: containerd ignores such a file.
    #[error("{0}")]
    Syntax(String),
    /// A `ca` or `client` file cannot be read or used: containerd fails the pull.
    #[error("{0}")]
    Files(String),
    /// Larger than any node's file: more values, hosts or header bytes than pullcheck reads
    /// ([`super::MAX_TOML_VALUES`], [`MAX_HOSTS`], [`super::MAX_HEADERS`],
    /// [`super::MAX_HEADER_BYTES`]).
    #[error("{0}")]
    TooLarge(String),
}

/// Parses a hosts.toml whose relative paths are relative to `base`. `file` names it.
pub fn parse_hosts(text: &str, base: &Path, file: &Path) -> Result<Vec<HostEntry>, ParseError> {
    let _ = file;
    super::check_toml_size(text).map_err(ParseError::TooLarge)?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ParseError::Syntax(e.message().to_string()))?;
    let mut hosts = Vec::new();
    if let Some(h) = table.get("host") {
        let h = h
            .as_table()
            .ok_or_else(|| ParseError::Syntax("\"host\" must be a table".to_string()))?;
        if h.len() > MAX_HOSTS {
            return Err(ParseError::TooLarge(format!(
                "{} hosts, more than the {MAX_HOSTS} pullcheck reads in one hosts.toml",
                h.len()
            )));
        }
        // The table keeps the order written: containerd tries hosts in that order.
        for (url, config) in h {
            let config = config
                .as_table()
                .ok_or_else(|| ParseError::Syntax(format!("[host.{url:?}] must be a table")))?;
            hosts.push(host_entry(url, base, config)?);
        }
    }
    let server = match table.get("server") {
        None => String::new(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(ParseError::Syntax(
                "\"server\" must be a string".to_string(),
            ));
        }
    };
    hosts.push(host_entry(&server, base, &table)?);
    Ok(hosts)
}

/// One host of a hosts.toml (a `[host."…"]` table, or the file's own `server`), as containerd
/// reads it.
fn host_entry(server: &str, base: &Path, config: &toml::Table) -> Result<HostEntry, ParseError> {
    let syntax = |m: String| ParseError::Syntax(m);
    let override_path = match config.get("override_path") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(_) => return Err(syntax("override_path must be true or false".into())),
    };
    let (scheme, host, path) = server_url(server, override_path)?;
    let capabilities = capabilities(config)?;
    let skip_verify = match config.get("skip_verify") {
        None => None,
        Some(toml::Value::Boolean(b)) => Some(*b),
        Some(_) => return Err(syntax("skip_verify must be true or false".into())),
    };
    let ca = ca_files(config, base)?;
    let client = client_files(config, base)?;
    let headers = headers(config)?;
    let tls = if ca.is_empty() && client.is_empty() && skip_verify.is_none() {
        None
    } else {
        Some(Arc::new(
            load_tls(&ca, &client, skip_verify).map_err(ParseError::Files)?,
        ))
    };
    Ok(HostEntry {
        scheme,
        host,
        path,
        capabilities,
        tls,
        headers: Headers(headers),
    })
}

/// A host's URL split as containerd splits it: scheme, `host[:port]`, and the API root
/// (`/v2` added unless `override_path`). All empty for an empty `server`.
fn server_url(server: &str, override_path: bool) -> Result<(String, String, String), ParseError> {
    let syntax = |m: String| ParseError::Syntax(m);
    let (mut scheme, mut host, mut path) = (String::new(), String::new(), String::new());
    if !server.is_empty() {
        let full = if server.starts_with("http") {
            server.to_string()
        } else {
            format!("https://{server}")
        };
        let url = reqwest::Url::parse(&full)
            .map_err(|e| syntax(format!("unable to parse server {full}: {e}")))?;
        scheme = url.scheme().to_string();
        host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let raw = url.path();
        // url's path of a bare host is "/": containerd's is empty.
        if raw.is_empty() || raw == "/" {
            if !override_path {
                path = "/v2".to_string();
            }
        } else {
            path = clean_path(raw);
            if !path.ends_with("/v2") && !override_path {
                path.push_str("/v2");
            }
        }
        if path == "/" {
            path.clear();
        }
    }
    Ok((scheme, host, path))
}

/// `capabilities`: all when absent or empty; push and referrers are accepted and unused.
fn capabilities(config: &toml::Table) -> Result<Capabilities, ParseError> {
    let syntax = |m: String| ParseError::Syntax(m);
    let capabilities = match config.get("capabilities") {
        None => Capabilities::ALL,
        Some(toml::Value::Array(items)) if items.is_empty() => Capabilities::ALL,
        Some(toml::Value::Array(items)) => {
            let mut c = Capabilities {
                pull: false,
                resolve: false,
            };
            for item in items {
                match item.as_str().map(str::to_ascii_lowercase).as_deref() {
                    Some("pull") => c.pull = true,
                    Some("resolve") => c.resolve = true,
                    Some("push" | "referrers") => {}
                    _ => return Err(syntax(format!("unknown capability {item:?}"))),
                }
            }
            c
        }
        Some(_) => return Err(syntax("capabilities must be a list".into())),
    };
    Ok(capabilities)
}

/// `ca`: one path or a list, relative to the host's folder.
fn ca_files(config: &toml::Table, base: &Path) -> Result<Vec<PathBuf>, ParseError> {
    let syntax = |m: String| ParseError::Syntax(m);
    let ca: Vec<PathBuf> = match config.get("ca") {
        None => Vec::new(),
        Some(toml::Value::String(s)) => vec![abs(s, base)],
        Some(toml::Value::Array(items)) => {
            strings(items, "ca")?.iter().map(|s| abs(s, base)).collect()
        }
        Some(v) => return Err(syntax(format!("invalid type {} for \"ca\"", v.type_str()))),
    };
    Ok(ca)
}

/// `client`: certificate paths, each alone (the key in the same file) or a
/// `[certificate, key]` pair, relative to the host's folder.
fn client_files(
    config: &toml::Table,
    base: &Path,
) -> Result<Vec<(PathBuf, Option<PathBuf>)>, ParseError> {
    let syntax = |m: String| ParseError::Syntax(m);
    let mut client = Vec::new();
    match config.get("client") {
        None => {}
        Some(toml::Value::String(s)) => client.push((abs(s, base), None)),
        Some(toml::Value::Array(items)) => {
            for item in items {
                match item {
                    toml::Value::String(s) => client.push((abs(s, base), None)),
                    toml::Value::Array(pair) => {
                        let pair = strings(pair, "client")?;
                        let [cert, key] = pair.as_slice() else {
                            return Err(syntax(format!("invalid pair {item:?} for \"client\"")));
                        };
                        client.push((abs(cert, base), Some(abs(key, base))));
                    }
                    v => {
                        return Err(syntax(format!(
                            "invalid type {} for \"client\"",
                            v.type_str()
                        )));
                    }
                }
            }
        }
        Some(v) => {
            return Err(syntax(format!(
                "invalid type {} for \"client\"",
                v.type_str()
            )));
        }
    }
    Ok(client)
}

/// `header`: name to one value or a list; every value registered as a secret (it may be a
/// mirror's token), and held to what pullcheck sends.
fn headers(config: &toml::Table) -> Result<Vec<(String, String)>, ParseError> {
    let syntax = |m: String| ParseError::Syntax(m);
    let mut headers = Vec::new();
    match config.get("header") {
        None => {}
        Some(toml::Value::Table(t)) => {
            for (name, value) in t {
                match value {
                    toml::Value::String(s) => headers.push((name.clone(), s.clone())),
                    toml::Value::Array(items) => {
                        for s in strings(items, name)? {
                            headers.push((name.clone(), s));
                        }
                    }
                    v => {
                        return Err(syntax(format!(
                            "invalid type {} for header {name:?}",
                            v.type_str()
                        )));
                    }
                }
            }
        }
        Some(_) => return Err(syntax("header must be a table".into())),
    }
    // A header's value may be a mirror's own token.
    for (_, value) in &headers {
        crate::redact::register(value);
    }
    if headers.len() > super::MAX_HEADERS {
        return Err(ParseError::TooLarge(format!(
            "{} header values for one host, more than the {} pullcheck sends",
            headers.len(),
            super::MAX_HEADERS
        )));
    }
    if let Some((name, _)) = headers
        .iter()
        .find(|(n, v)| n.len() > super::MAX_HEADER_BYTES || v.len() > super::MAX_HEADER_BYTES)
    {
        return Err(ParseError::TooLarge(format!(
            "header {:?}: longer than {} KiB",
            name.chars().take(40).collect::<String>(),
            super::MAX_HEADER_BYTES >> 10
        )));
    }
    Ok(headers)
}

fn strings(items: &[toml::Value], what: &str) -> Result<Vec<String>, ParseError> {
    items
        .iter()
        .map(|v| {
            v.as_str().map(str::to_string).ok_or_else(|| {
                ParseError::Syntax(format!("unable to cast {v:?} to string in {what}"))
            })
        })
        .collect()
}

fn abs(p: &str, base: &Path) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Go's `path.Clean` for the URL paths of hosts.toml.
fn clean_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Reads the CA and client files of one host, as containerd reads them when it sets the host
/// up: a file that cannot be read or used is an error.
fn load_tls(
    ca: &[PathBuf],
    client: &[(PathBuf, Option<PathBuf>)],
    skip_verify: Option<bool>,
) -> Result<Tls, String> {
    let mut tls = Tls {
        skip_verify: skip_verify.unwrap_or(false),
        ..Tls::default()
    };
    for path in ca {
        let bytes = read_bytes(path)?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("unable to load CA cert {}: {e}", path.display()))?;
        if certs.is_empty() {
            return Err(format!(
                "unable to load CA cert {}: no PEM certificate",
                path.display()
            ));
        }
        tls.ca.extend(certs);
        tls.files.push(path.clone());
    }
    // rustls presents one client certificate; containerd offers the first that fits, which
    // with one pair (the usual case) is the same.
    if let Some((cert, key)) = client.first() {
        let cert_bytes = read_bytes(cert)?;
        let key_bytes = match key {
            Some(k) => read_bytes(k)?,
            None => cert_bytes.clone(),
        };
        let chain = CertificateDer::pem_slice_iter(&cert_bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("failed to load X509 key pair {}: {e}", cert.display()))?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| {
            format!(
                "failed to load X509 key pair {}: key: {e}",
                key.as_ref().unwrap_or(cert).display()
            )
        })?;
        if chain.is_empty() {
            return Err(format!(
                "failed to load X509 key pair {}: no certificate",
                cert.display()
            ));
        }
        tls.identity = Some((chain, key_der));
        tls.files.push(cert.clone());
    }
    Ok(tls)
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, String> {
    read_limited_file(path, MAX_FILE).map_err(|e| match e {
        LimitedReadError::TooLarge => format!("{}: larger than 1 MiB", path.display()),
        LimitedReadError::Io(e) => format!("unable to read {}: {e}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<HostEntry> {
        parse_hosts(
            text,
            Path::new("/etc/containerd/certs.d/x"),
            Path::new("hosts.toml"),
        )
        .unwrap()
    }

    fn urls(route: &Route) -> Vec<String> {
        route.endpoints.iter().map(Endpoint::url).collect()
    }

    fn config(text: &str) -> HostsConfig {
        HostsConfig {
            source: PathBuf::from("hosts.toml"),
            hosts: parse(text),
        }
    }

    #[test]
    fn hosts_in_order_then_server() {
        let c = config(
            r#"
server = "https://registry-1.docker.io"
[host."https://zeta.mirror:5000"]
  capabilities = ["pull", "resolve"]
[host."http://alpha.mirror"]
  capabilities = ["pull", "resolve"]
  [host."http://alpha.mirror".header]
    x-custom = ["a", "b"]
"#,
        );
        let r = Reference::parse("busybox:1").unwrap();
        let route = route_from(Some(&c), &r, &[]);
        assert_eq!(
            urls(&route),
            [
                "https://zeta.mirror:5000/v2",
                "http://alpha.mirror/v2",
                "https://registry-1.docker.io/v2"
            ]
        );
        let e = &route.endpoints;
        assert_eq!(e[0].mirror_of.as_deref(), Some("docker.io"));
        // The CRI plugin offers the pod's credential to every host, mirrors included.
        assert!(e[0].credentials && e[1].credentials && e[2].credentials);
        assert!(e[2].mirror_of.is_none());
        assert_eq!(e[1].headers.len(), 2);
        assert!(
            !format!("{:?}", e[1]).contains("\"a\""),
            "header values are not shown"
        );
    }

    #[test]
    fn paths_as_containerd_builds_them() {
        let cases: &[(&str, &str)] = &[
            (r#"[host."https://m"]"#, "https://m/v2"),
            (r#"[host."m:5000"]"#, "https://m:5000/v2"),
            (r#"[host."https://m/sub/"]"#, "https://m/sub/v2"),
            (r#"[host."https://m/sub/v2"]"#, "https://m/sub/v2"),
            (
                "[host.\"https://m/api/x\"]\noverride_path = true",
                "https://m/api/x",
            ),
            ("[host.\"https://m\"]\noverride_path = true", "https://m"),
        ];
        for (text, want) in cases {
            let hosts = parse(text);
            let h = &hosts[0];
            assert_eq!(
                format!("{}://{}{}", h.scheme, h.host, h.path),
                *want,
                "{text}"
            );
        }
    }

    #[test]
    fn capabilities_filter_tags_and_digests() {
        let c = config(
            "[host.\"https://pull-only\"]\ncapabilities = [\"pull\"]\n[host.\"https://both\"]\ncapabilities = [\"pull\", \"resolve\"]\n",
        );
        let tag = Reference::parse("reg.corp/app:1").unwrap();
        let route = route_from(Some(&c), &tag, &[]);
        assert_eq!(urls(&route), ["https://both/v2", "https://reg.corp/v2"]);
        let digest = Reference::parse(&format!("reg.corp/app@sha256:{}", "a".repeat(64))).unwrap();
        let route = route_from(Some(&c), &digest, &[]);
        assert_eq!(
            urls(&route),
            [
                "https://pull-only/v2",
                "https://both/v2",
                "https://reg.corp/v2"
            ]
        );
    }

    #[test]
    fn unknown_capability_and_bad_types_are_syntax_errors() {
        for text in [
            "capabilities = [\"fly\"]",
            "ca = 3",
            "[host.\"https://m\"]\nclient = [[\"a\"]]",
            "server = [",
        ] {
            let e = parse_hosts(text, Path::new("/"), Path::new("h")).unwrap_err();
            assert!(matches!(e, ParseError::Syntax(_)), "{text}: {e:?}");
        }
    }

    #[test]
    fn missing_ca_file_is_a_files_error_with_its_absolute_path() {
        let e = parse_hosts(
            "ca = \"ca.pem\"",
            Path::new("/nonexistent/dir"),
            Path::new("h"),
        )
        .unwrap_err();
        let ParseError::Files(m) = e else {
            panic!("{e:?}")
        };
        assert!(m.contains("/nonexistent/dir/ca.pem"), "{m}");
    }

    #[test]
    fn directory_search_order_and_flat_layout() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path();
        std::fs::write(
            d.join("reg.corp_5000.toml"),
            "[host.\"http://flat.mirror:1\"]\n",
        )
        .unwrap();
        std::fs::create_dir(d.join("_default")).unwrap();
        std::fs::write(
            d.join("_default/hosts.toml"),
            "[host.\"http://default.mirror:1\"]\n",
        )
        .unwrap();
        std::fs::create_dir(d.join("dir.corp:5000")).unwrap();
        std::fs::write(
            d.join("dir.corp:5000/hosts.toml"),
            "server = \"http://dir.corp:5000\"\n",
        )
        .unwrap();
        let hd = HostsDirs::new(vec![d.to_path_buf()]);
        let first = |image: &str| {
            let r = Reference::parse(image).unwrap();
            hd.route(&r, &[]).unwrap().endpoints[0].url()
        };
        assert_eq!(first("reg.corp:5000/a:1"), "http://flat.mirror:1/v2");
        assert_eq!(first("other.corp/a:1"), "http://default.mirror:1/v2");
        assert_eq!(first("dir.corp:5000/a:1"), "http://dir.corp:5000/v2");
    }

    #[test]
    fn unparsable_hosts_toml_is_ignored_with_a_warning() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("reg.corp")).unwrap();
        std::fs::write(root.path().join("reg.corp/hosts.toml"), "server = [").unwrap();
        let hd = HostsDirs::new(vec![root.path().to_path_buf()]);
        let warnings = hd.load("reg.corp").unwrap();
        assert!(warnings[0].contains("ignored"), "{warnings:?}");
        let r = Reference::parse("reg.corp/a:1").unwrap();
        assert_eq!(urls(&hd.route(&r, &[]).unwrap()), ["https://reg.corp/v2"]);
    }

    #[test]
    fn client_certificate_pair_and_single_file_load_and_never_show_the_key() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["client".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("k.pem"), key.serialize_pem()).unwrap();
        std::fs::write(
            dir.path().join("both.pem"),
            format!("{}{}", cert.pem(), key.serialize_pem()),
        )
        .unwrap();
        for text in [
            "[host.\"https://m\"]\nclient = [[\"c.pem\", \"k.pem\"]]",
            "[host.\"https://m\"]\nclient = \"both.pem\"",
        ] {
            let hosts = parse_hosts(text, dir.path(), Path::new("h")).unwrap();
            let tls = hosts[0].tls.as_ref().unwrap();
            assert!(tls.identity.is_some(), "{text}");
            let shown = format!("{tls:?}");
            assert!(
                shown.contains("<redacted>") && !shown.contains("PRIVATE"),
                "{shown}"
            );
        }
        let e = parse_hosts(
            "[host.\"https://m\"]\nclient = \"c.pem\"",
            dir.path(),
            Path::new("h"),
        )
        .unwrap_err();
        assert!(
            matches!(e, ParseError::Files(_)),
            "a certificate without its key: {e:?}"
        );
    }

    #[test]
    fn http_host_with_tls_settings_tries_https_first() {
        let c = config("[host.\"http://m:5000\"]\nskip_verify = true\n");
        let r = Reference::parse("reg.corp/a:1").unwrap();
        let route = route_from(Some(&c), &r, &[]);
        assert_eq!(route.endpoints[0].origin, "https://m:5000");
        assert!(route.endpoints[0].http_fallback);
    }
}
