//! One hosts.toml, parsed as containerd parses it: each `[host."…"]` table in the order
//! written, then the file's own `server`, with the URL, capabilities, CA and client files and
//! headers of each, and the TLS files read as containerd reads them.

use super::{Capabilities, HostEntry, MAX_HOSTS};
use crate::input::{LimitedReadError, read_limited_file};
use crate::route::{Headers, MAX_FILE, Tls};
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a hosts.toml cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ParseError {
    /// It does not parse, or a value has the wrong type: containerd ignores such a file.
    #[error("{0}")]
    Syntax(String),
    /// A `ca` or `client` file cannot be read or used: containerd fails the pull.
    #[error(transparent)]
    Files(#[from] TlsError),
    /// Larger than any node's file: more values, hosts or header bytes than pullcheck reads
    /// ([`crate::route::MAX_TOML_VALUES`], [`MAX_HOSTS`], [`crate::route::MAX_HEADERS`],
    /// [`crate::route::MAX_HEADER_BYTES`]).
    #[error("{0}")]
    TooLarge(String),
}

/// Why a host's `ca` or `client` file cannot be used: containerd fails the pull. Cloned with
/// the host's configuration, so the I/O and PEM errors are shared.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TlsError {
    /// The file is larger than 1 MiB.
    #[error("{}: larger than 1 MiB", .0.display())]
    TooLarge(PathBuf),
    /// The file cannot be read.
    #[error("unable to read {}: {}", .0.display(), .1)]
    Io(PathBuf, Arc<std::io::Error>),
    /// A CA file is not PEM.
    #[error("unable to load CA cert {}: {}", .0.display(), .1)]
    Ca(PathBuf, Arc<pem::Error>),
    /// A CA file holds no certificate.
    #[error("unable to load CA cert {}: no PEM certificate", .0.display())]
    NoCa(PathBuf),
    /// A client certificate file is not PEM.
    #[error("failed to load X509 key pair {}: {}", .0.display(), .1)]
    Chain(PathBuf, Arc<pem::Error>),
    /// A client key (the file) is not a PEM private key.
    #[error("failed to load X509 key pair {}: key: {}", .0.display(), .1)]
    Key(PathBuf, Arc<pem::Error>),
    /// A client certificate file holds no certificate.
    #[error("failed to load X509 key pair {}: no certificate", .0.display())]
    NoCert(PathBuf),
}

/// Parses a hosts.toml whose relative paths are relative to `base`. `file` names it.
pub fn parse_hosts(text: &str, base: &Path, file: &Path) -> Result<Vec<HostEntry>, ParseError> {
    let _ = file;
    crate::route::check_toml_size(text).map_err(|e| ParseError::TooLarge(e.to_string()))?;
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
pub(super) fn host_entry(
    server: &str,
    base: &Path,
    config: &toml::Table,
) -> Result<HostEntry, ParseError> {
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
        Some(Arc::new(load_tls(&ca, &client, skip_verify)?))
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
pub(super) fn server_url(
    server: &str,
    override_path: bool,
) -> Result<(String, String, String), ParseError> {
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
pub(super) fn capabilities(config: &toml::Table) -> Result<Capabilities, ParseError> {
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
pub(super) fn ca_files(config: &toml::Table, base: &Path) -> Result<Vec<PathBuf>, ParseError> {
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
pub(super) fn client_files(
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
pub(super) fn headers(config: &toml::Table) -> Result<Vec<(String, String)>, ParseError> {
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
    if headers.len() > crate::route::MAX_HEADERS {
        return Err(ParseError::TooLarge(format!(
            "{} header values for one host, more than the {} pullcheck sends",
            headers.len(),
            crate::route::MAX_HEADERS
        )));
    }
    if let Some((name, _)) = headers.iter().find(|(n, v)| {
        n.len() > crate::route::MAX_HEADER_BYTES || v.len() > crate::route::MAX_HEADER_BYTES
    }) {
        return Err(ParseError::TooLarge(format!(
            "header {:?}: longer than {} KiB",
            name.chars().take(40).collect::<String>(),
            crate::route::MAX_HEADER_BYTES >> 10
        )));
    }
    Ok(headers)
}

pub(super) fn strings(items: &[toml::Value], what: &str) -> Result<Vec<String>, ParseError> {
    items
        .iter()
        .map(|v| {
            v.as_str().map(str::to_string).ok_or_else(|| {
                ParseError::Syntax(format!("unable to cast {v:?} to string in {what}"))
            })
        })
        .collect()
}

pub(super) fn abs(p: &str, base: &Path) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Go's `path.Clean` for the URL paths of hosts.toml.
pub(super) fn clean_path(p: &str) -> String {
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
pub(super) fn load_tls(
    ca: &[PathBuf],
    client: &[(PathBuf, Option<PathBuf>)],
    skip_verify: Option<bool>,
) -> Result<Tls, TlsError> {
    let mut tls = Tls {
        skip_verify: skip_verify.unwrap_or(false),
        ..Tls::default()
    };
    for path in ca {
        let bytes = read_bytes(path)?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Ca(path.clone(), Arc::new(e)))?;
        if certs.is_empty() {
            return Err(TlsError::NoCa(path.clone()));
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
            .map_err(|e| TlsError::Chain(cert.clone(), Arc::new(e)))?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_bytes)
            .map_err(|e| TlsError::Key(key.as_ref().unwrap_or(cert).clone(), Arc::new(e)))?;
        if chain.is_empty() {
            return Err(TlsError::NoCert(cert.clone()));
        }
        tls.identity = Some((chain, key_der));
        tls.files.push(cert.clone());
    }
    Ok(tls)
}

/// A certificate or key file, at most [`MAX_FILE`] bytes (also containers-certs.d's, in
/// [`crate::route::certs`]).
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, TlsError> {
    read_limited_file(path, MAX_FILE).map_err(|e| match e {
        LimitedReadError::TooLarge => TlsError::TooLarge(path.to_path_buf()),
        LimitedReadError::Io(e) => TlsError::Io(path.to_path_buf(), Arc::new(e)),
    })
}
