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

mod file;

use file::load_tls;
pub(crate) use file::read_bytes;
pub use file::{ParseError, TlsError, parse_hosts};

use super::{Endpoint, Headers, ReadError, Route, Tls, is_upstream};
use crate::reference::{DOCKER_HUB, DOCKER_HUB_API, Reference};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
/// The most hosts one hosts.toml may list (containerd's have a handful).
pub const MAX_HOSTS: usize = 100;

/// What a host may be asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// `pull`: fetch content by digest.
    pub(crate) pull: bool,
    /// `resolve`: turn a tag into a digest.
    pub(crate) resolve: bool,
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
    pub(crate) scheme: String,
    /// `host[:port]`; empty for a `server` left unset.
    pub(crate) host: String,
    /// The API root path.
    pub(crate) path: String,
    /// What it may be asked for.
    pub(crate) capabilities: Capabilities,
    /// Its own TLS settings, when it has any.
    pub(crate) tls: Option<Arc<Tls>>,
    /// Extra headers.
    pub headers: Headers,
}

/// A host's configuration as found: the file (for messages) and its hosts in order.
#[derive(Debug, Clone)]
pub(crate) struct HostsConfig {
    /// The file or directory it came from.
    pub(crate) source: PathBuf,
    /// The hosts, `server` last.
    pub(crate) hosts: Vec<HostEntry>,
}

/// Why a host's configuration cannot be used, as containerd could not use it either. Cloned
/// from what was read once per host.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HostsError {
    /// A hosts.toml, or a host directory, cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A hosts.toml (the file) that containerd would refuse.
    #[error("{}: {}", .0.display(), .1)]
    File(PathBuf, ParseError),
    /// A certificate file of a host directory without hosts.toml.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// containerd's hosts directories, and what was read from them (each host once per run).
#[derive(Debug, Default)]
pub(crate) struct HostsDirs {
    dirs: Vec<PathBuf>,
    loaded: Mutex<HashMap<String, Loaded>>,
}

/// A host's configuration (`None`: the default route), or why it cannot be used, with the
/// notes a reader should see (a hosts.toml that was ignored).
type Loaded = Result<(Option<HostsConfig>, Vec<String>), HostsError>;

impl HostsDirs {
    /// The directories, in the order they are searched.
    pub(crate) fn new(dirs: Vec<PathBuf>) -> HostsDirs {
        HostsDirs {
            dirs,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the configuration of `registry` (`docker.io`, `host:port`) once. Returns the
    /// warnings of the reading (a hosts.toml ignored, as containerd ignores it), or the error
    /// that makes it unusable (a `ca` or `client` file that cannot be read).
    pub(crate) fn load(&self, registry: &str) -> Result<Vec<String>, HostsError> {
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
    pub(crate) fn route(
        &self,
        reference: &Reference,
        plain_http: &[String],
    ) -> Result<Route, HostsError> {
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
            broken: None,
            loopback_fallback: true,
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
                let text = super::read_text(&place)?;
                parse_hosts(&text, &base, &place)
                    .map(|hosts| {
                        let c = HostsConfig {
                            source: place.clone(),
                            hosts,
                        };
                        (Some(c), Vec::new())
                    })
                    .map_err(|e| HostsError::File(place.clone(), e))
            };
        }
    }
    Ok((None, Vec::new()))
}

/// A host directory: its hosts.toml, or its certificate files.
fn load_dir(dir: &Path) -> Result<(HostsConfig, Vec<String>), HostsError> {
    let file = dir.join("hosts.toml");
    let mut warnings = Vec::new();
    if file.is_file() {
        let text = super::read_text(&file)?;
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
                    return Err(HostsError::File(file, e));
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
fn cert_files(dir: &Path) -> Result<Vec<HostEntry>, HostsError> {
    let mut names = super::dir_files(dir)?;
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
        assert!(m.to_string().contains("/nonexistent/dir/ca.pem"), "{m}");
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
