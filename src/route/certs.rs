//! containers-certs.d(5): the per-host certificates containers/image (CRI-O, Podman) reads,
//! `--certs-dir DIR`, laid over every endpoint of a route by its `host[:port]`.
//!
//! What containers/image does (`docker.dockerCertDir`, `tlsclientconfig.SetupCertificates`),
//! and so what this does:
//! - the folders are searched in order and the first that has an entry `<host[:port]>` is
//!   used, even an empty one (the node's `/etc/containers/certs.d`, then `/etc/docker/certs.d`);
//!   Docker Hub is `docker.io`, the name in the reference, not its API host;
//! - a folder that does not exist, or may not be read, holds no certificates;
//! - its entries are taken in name order: `*.crt` are CAs trusted for that host besides the
//!   run's roots (a file without a usable certificate adds nothing, as Go's
//!   `AppendCertsFromPEM` adds nothing); `X.cert` with `X.key` is a client certificate, and a
//!   `.cert` without its `.key`, or a `.key` without its `.cert`, is refused;
//! - a host whose folder is refused cannot be asked: containers/image fails that endpoint and
//!   tries the route's next one, so the endpoint carries the error ([`Endpoint::broken`](super::Endpoint::broken)).
//!
//! With `insecure` (registries.conf), the CAs are read but not used to verify, and the client
//! certificate is still offered, as containers/image sets both.

use super::hosts::{TlsError, read_bytes};
use super::{Route, Tls};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The most entries one host's folder may hold (a node's hold a CA and a client pair).
pub const MAX_HOST_FILES: usize = 100;

/// Why a host's certificate folder cannot be used: containers/image fails the endpoint.
/// Cloned with the host's result (read once per run), so the I/O errors are shared.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CertsError {
    /// The host's folder, or a certificate folder, exists but cannot be listed.
    #[error("{}: cannot read: {}", .0.display(), .1)]
    Dir(PathBuf, Arc<std::io::Error>),
    /// More entries than pullcheck reads.
    #[error(
        "{}: more than {MAX_HOST_FILES} entries, more than pullcheck reads in one host's folder",
        .0.display()
    )]
    TooManyFiles(PathBuf),
    /// A client certificate without its key (containers/image's words).
    #[error(
        "{}: missing key {key} for client certificate {cert}. Note that CA certificates should use the extension .crt",
        .dir.display()
    )]
    MissingKey {
        /// The host's folder.
        dir: PathBuf,
        /// The certificate's file name.
        cert: String,
        /// The key's file name that is missing.
        key: String,
    },
    /// A key without its client certificate (containers/image's words).
    #[error("{}: missing client certificate {cert} for key {key}", .dir.display())]
    MissingCert {
        /// The host's folder.
        dir: PathBuf,
        /// The key's file name.
        key: String,
        /// The certificate's file name that is missing.
        cert: String,
    },
    /// A certificate or key file that cannot be read or used.
    #[error(transparent)]
    File(#[from] TlsError),
    /// A client certificate and a key that do not belong together.
    #[error("failed to load X509 key pair {}: {}", .0.display(), .1)]
    Pair(PathBuf, String),
}

/// What one host's folder gave: its TLS settings (`None`: no certificates), or why it cannot
/// be used.
type Loaded = Result<Option<Arc<Tls>>, CertsError>;

/// The `--certs-dir` folders, and what was read from them (each host once per run).
#[derive(Debug, Default)]
pub(crate) struct CertsDirs {
    dirs: Vec<PathBuf>,
    loaded: Mutex<HashMap<String, Loaded>>,
}

impl CertsDirs {
    /// The folders, in the order they are searched.
    pub(crate) fn new(dirs: Vec<PathBuf>) -> CertsDirs {
        CertsDirs {
            dirs,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// The TLS settings for `host` (`host[:port]`, as in the reference), read once.
    pub(crate) fn load(&self, host: &str) -> Loaded {
        let mut map = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(host.to_string())
            .or_insert_with(|| self.read(host))
            .clone()
    }

    /// containers/image's `dockerCertDir`, then `SetupCertificates` on it.
    fn read(&self, host: &str) -> Loaded {
        for dir in &self.dirs {
            let place = dir.join(host);
            match std::fs::metadata(&place) {
                Ok(_) => return read_host(&place).map(|t| t.map(Arc::new)),
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => {
                }
                Err(e) => return Err(CertsError::Dir(place, Arc::new(e))),
            }
        }
        Ok(None)
    }

    /// Lays each endpoint's certificates over it: a blocked endpoint is never asked, and one
    /// whose folder is refused is marked [`Endpoint::broken`](super::Endpoint::broken).
    pub(crate) fn apply(&self, route: &mut Route) {
        for e in &mut route.endpoints {
            if e.blocked.is_some() {
                continue;
            }
            match self.load(&e.reference.registry) {
                Ok(None) => {}
                Ok(Some(tls)) => e.tls = Some(with_certs(e.tls.as_ref(), &tls)),
                Err(err) => e.broken = Some(err.to_string()),
            }
        }
    }
}

/// An endpoint's TLS with `certs` added to what it has (`own`: registries.conf's `insecure`).
fn with_certs(own: Option<&Arc<Tls>>, certs: &Arc<Tls>) -> Arc<Tls> {
    match own {
        None => certs.clone(),
        Some(own) => Arc::new(own.merged(certs)),
    }
}

/// One host's folder, as `SetupCertificates` reads it: `None` when it holds no certificate.
fn read_host(dir: &Path) -> Result<Option<Tls>, CertsError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => {
            return Ok(None);
        }
        Err(e) => return Err(CertsError::Dir(dir.to_path_buf(), Arc::new(e))),
    };
    let mut names: Vec<OsString> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| CertsError::Dir(dir.to_path_buf(), Arc::new(e)))?;
        if names.len() == MAX_HOST_FILES {
            return Err(CertsError::TooManyFiles(dir.to_path_buf()));
        }
        names.push(entry.file_name());
    }
    // Go's os.ReadDir sorts by name, bytewise.
    names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    let find = |name: &[u8]| names.iter().find(|n| n.as_encoded_bytes() == name);
    let mut tls = Tls::default();
    for name in &names {
        let raw = name.as_encoded_bytes();
        let path = dir.join(name);
        if raw.ends_with(b".crt") {
            let bytes = match read_bytes(&path) {
                Ok(b) => b,
                // Removed since it was listed: containers/image skips it too.
                Err(TlsError::Io(_, e)) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            };
            let usable = usable_roots(&bytes);
            if !usable.is_empty() {
                tls.ca.extend(usable);
                tls.files.push(path.clone());
            }
        }
        if let Some(base) = raw.strip_suffix(b".cert") {
            let key = [base, b".key"].concat();
            let Some(key_name) = find(&key) else {
                return Err(CertsError::MissingKey {
                    dir: dir.to_path_buf(),
                    cert: name.to_string_lossy().into_owned(),
                    key: String::from_utf8_lossy(&key).into_owned(),
                });
            };
            let pair = key_pair(&path, &dir.join(key_name))?;
            // containers/image offers every pair and Go picks the first the server accepts;
            // rustls offers one: the first in name order, which with one pair (the usual
            // case) is the same.
            if tls.identity.is_none() {
                tls.identity = Some(pair);
                tls.files.push(path.clone());
            }
        }
        if let Some(base) = raw.strip_suffix(b".key") {
            let cert = [base, b".cert"].concat();
            if find(&cert).is_none() {
                return Err(CertsError::MissingCert {
                    dir: dir.to_path_buf(),
                    key: name.to_string_lossy().into_owned(),
                    cert: String::from_utf8_lossy(&cert).into_owned(),
                });
            }
        }
    }
    Ok((!tls.ca.is_empty() || tls.identity.is_some()).then_some(tls))
}

/// The certificates of a `.crt` file that can be trusted: as Go's `AppendCertsFromPEM`, every
/// PEM certificate that parses, the rest skipped without a word.
fn usable_roots(bytes: &[u8]) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(bytes)
        .map_while(Result::ok)
        .filter(|c| rustls::RootCertStore::empty().add(c.clone()).is_ok())
        .collect()
}

/// Go's `tls.LoadX509KeyPair`: a PEM chain and a PEM key that belong together.
fn key_pair(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CertsError> {
    let cert_bytes = read_bytes(cert)?;
    let key_bytes = read_bytes(key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Chain(cert.to_path_buf(), Arc::new(e)))?;
    if chain.is_empty() {
        return Err(TlsError::NoCert(cert.to_path_buf()).into());
    }
    let key_der = PrivateKeyDer::from_pem_slice(&key_bytes)
        .map_err(|e| TlsError::Key(key.to_path_buf(), Arc::new(e)))?;
    // Built once here so that a pair rustls refuses (a key of another certificate) is this
    // host's error now, not a client that cannot be built later.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| CertsError::Pair(cert.to_path_buf(), e.to_string()))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_client_auth_cert(chain.clone(), key_der.clone_key())
        .map_err(|e| CertsError::Pair(cert.to_path_buf(), e.to_string()))?;
    Ok((chain, key_der))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::Reference;
    use crate::route::Endpoint;

    /// A self-signed certificate and its key, PEM.
    fn cert(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        let c = params.self_signed(&key).unwrap();
        (c.pem(), key.serialize_pem())
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn route(images: &[&str]) -> Route {
        Route {
            endpoints: images
                .iter()
                .map(|i| Endpoint::direct(&Reference::parse(i).unwrap(), &[]))
                .collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn cas_and_client_pairs_in_name_order() {
        let tmp = tempfile::tempdir().unwrap();
        let host = tmp.path().join("reg.corp:5000");
        let (ca, _) = cert("ca");
        let (client, client_key) = cert("client");
        write(&host, "b.crt", &ca);
        write(&host, "a.crt", &format!("not a certificate\n{ca}"));
        write(&host, "junk.crt", "no PEM at all");
        write(&host, "client.cert", &client);
        write(&host, "client.key", &client_key);
        write(&host, "README", "ignored");
        let dirs = CertsDirs::new(vec![tmp.path().to_path_buf()]);
        let tls = dirs.load("reg.corp:5000").unwrap().unwrap();
        assert_eq!(tls.ca.len(), 2);
        assert!(tls.identity.is_some());
        let names: Vec<_> = tls
            .files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.crt", "b.crt", "client.cert"]);
        assert!(!tls.skip_verify);
        assert!(
            !format!("{tls:?}").contains("PRIVATE"),
            "the key is never shown"
        );
        // Another host, and a missing folder: nothing.
        assert!(dirs.load("reg.corp").unwrap().is_none());
        let none = CertsDirs::new(vec![tmp.path().join("absent")]);
        assert!(none.load("reg.corp:5000").unwrap().is_none());
    }

    #[test]
    fn refused_folders_say_what_is_missing() {
        let (client, client_key) = cert("client");
        let (other, _) = cert("other");
        // (case, files of the host's folder, what the error says)
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case<'_>] = &[
            (
                "a certificate without its key",
                &[("c.cert", &client)],
                "missing key c.key for client certificate c.cert",
            ),
            (
                "a key without its certificate",
                &[("c.key", &client_key)],
                "missing client certificate c.cert for key c.key",
            ),
            (
                "a key of another certificate",
                &[("c.cert", &other), ("c.key", &client_key)],
                "failed to load X509 key pair",
            ),
            (
                "a certificate file that is not PEM",
                &[("c.cert", "nothing"), ("c.key", &client_key)],
                "no certificate",
            ),
        ];
        for (name, files, want) in cases {
            let tmp = tempfile::tempdir().unwrap();
            let host = tmp.path().join("h");
            for (f, text) in *files {
                write(&host, f, text);
            }
            let e = CertsDirs::new(vec![tmp.path().to_path_buf()])
                .load("h")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
    }

    #[test]
    fn the_first_folder_with_the_host_wins_even_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let (ca, _) = cert("ca");
        std::fs::create_dir_all(tmp.path().join("one/h")).unwrap();
        write(&tmp.path().join("two/h"), "ca.crt", &ca);
        write(&tmp.path().join("two/other"), "ca.crt", &ca);
        let dirs = CertsDirs::new(vec![tmp.path().join("one"), tmp.path().join("two")]);
        assert!(dirs.load("h").unwrap().is_none());
        assert!(dirs.load("other").unwrap().is_some());
    }

    #[test]
    fn too_many_entries_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let host = tmp.path().join("h");
        for i in 0..=MAX_HOST_FILES {
            write(&host, &format!("{i}.txt"), "");
        }
        let e = CertsDirs::new(vec![tmp.path().to_path_buf()])
            .load("h")
            .unwrap_err();
        assert!(matches!(e, CertsError::TooManyFiles(_)), "{e}");
    }

    #[test]
    fn applied_to_every_endpoint_by_its_registry() {
        let tmp = tempfile::tempdir().unwrap();
        let (ca, _) = cert("ca");
        write(&tmp.path().join("mirror.corp:5000"), "ca.crt", &ca);
        write(&tmp.path().join("docker.io"), "ca.crt", &ca);
        write(&tmp.path().join("broken.corp"), "x.key", "");
        let dirs = CertsDirs::new(vec![tmp.path().to_path_buf()]);
        let mut r = route(&[
            "mirror.corp:5000/app:1",
            "reg.corp/app:1",
            "busybox:1",
            "broken.corp/app:1",
        ]);
        // An insecure endpoint keeps skipping verification, with the certificates added.
        r.endpoints[0].tls = Some(Arc::new(Tls {
            skip_verify: true,
            ..Tls::default()
        }));
        r.endpoints.push(Endpoint {
            blocked: Some("registries.conf".to_string()),
            ..Endpoint::direct(&Reference::parse("broken.corp/b:1").unwrap(), &[])
        });
        dirs.apply(&mut r);
        let e = &r.endpoints;
        let t0 = e[0].tls.as_ref().unwrap();
        assert!(t0.skip_verify && t0.ca.len() == 1);
        assert!(e[1].tls.is_none() && e[1].broken.is_none());
        // Docker Hub's folder is `docker.io`, the name in the reference.
        assert_eq!(e[2].host, "registry-1.docker.io");
        assert_eq!(e[2].tls.as_ref().unwrap().ca.len(), 1);
        assert!(
            e[3].broken
                .as_deref()
                .is_some_and(|m| m.contains("missing client certificate x.cert")),
            "{:?}",
            e[3].broken
        );
        assert!(e[4].broken.is_none(), "a blocked endpoint is never asked");
    }
}
