//! The serving certificate: TLS answers with the latest [`CertifiedKey`] of the watch channel
//! that the certificate sources send into (the files here, reloaded when they change; the
//! self-signed manager in `cert.rs`), so that a renewal never needs a restart.

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

/// The channel every certificate source sends into, and the server reads from.
pub(crate) type CertSender = watch::Sender<Option<Arc<CertifiedKey>>>;
/// The server's side of it.
pub(crate) type CertReceiver = watch::Receiver<Option<Arc<CertifiedKey>>>;

/// How often the certificate files are looked at: cert-manager renews well before expiry, and
/// the kubelet updates a mounted Secret within about a minute, so seconds are plenty.
const POLL: Duration = Duration::from_secs(2);

/// The resolver: the latest certificate sent, none (the handshake fails) before the first.
#[derive(Debug)]
struct Latest(CertReceiver);

impl ResolvesServerCert for Latest {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.borrow().clone()
    }
}

/// The server's TLS configuration: HTTP/1.1 only, rustls on ring like the rest of pullcheck.
pub(crate) fn server_config(certs: CertReceiver) -> Result<rustls::ServerConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Latest(certs)));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Reads a PEM chain and key into a [`CertifiedKey`], checking that they match.
pub(crate) fn load(cert: &Path, key: &Path) -> Result<CertifiedKey, LoadError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect())
        .map_err(|source| LoadError::Pem {
            path: cert.to_path_buf(),
            source,
        })?;
    if chain.is_empty() {
        return Err(LoadError::NoCertificate(cert.to_path_buf()));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|source| LoadError::Pem {
        path: key.to_path_buf(),
        source,
    })?;
    let provider: CryptoProvider = rustls::crypto::ring::default_provider();
    // Checks that the key is the certificate's.
    let certified =
        CertifiedKey::from_der(chain, key_der, &provider).map_err(|source| LoadError::Pair {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            source,
        })?;
    Ok(certified)
}

/// Why a certificate and key pair could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    /// A file that cannot be read, or is not PEM.
    #[error("{}: {source}", .path.display())]
    Pem {
        path: PathBuf,
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// A certificate file without a certificate.
    #[error("{}: no certificate in it", .0.display())]
    NoCertificate(PathBuf),
    /// A key that is not the certificate's, or that rustls cannot use.
    #[error("{} and {}: {source}", .cert.display(), .key.display())]
    Pair {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
}

/// The file mode: loads the pair, sends it, sets `ready`, then reloads whenever either file's
/// modification time or size changes. A pair that fails to load (half written) keeps the one
/// before, with a line on stderr; the next change is tried again.
pub(crate) struct Files {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

impl Files {
    /// The first load, before the server starts: an error here is a usage error.
    pub(crate) fn first(&self, tx: &CertSender, ready: &AtomicBool) -> Result<Stamp, LoadError> {
        let stamp = self.stamp();
        let certified = load(&self.cert, &self.key)?;
        tx.send_replace(Some(Arc::new(certified)));
        ready.store(true, Ordering::SeqCst);
        Ok(stamp)
    }

    /// Reloads on change, for ever.
    pub(crate) async fn watch(self, mut stamp: Stamp, tx: CertSender) {
        loop {
            tokio::time::sleep(POLL).await;
            let now = self.stamp();
            if now == stamp {
                continue;
            }
            match load(&self.cert, &self.key) {
                Ok(certified) => {
                    tx.send_replace(Some(Arc::new(certified)));
                    crate::log::info(
                        crate::log::Component::Webhook,
                        &format!("serving the new certificate of {}", self.cert.display()),
                    );
                    stamp = now;
                }
                // Keep the stamp: the pair is tried again at the next poll.
                Err(e) => crate::log::warning(
                    crate::log::Component::Webhook,
                    &format!("keeping the certificate: {e}"),
                ),
            }
        }
    }

    fn stamp(&self) -> Stamp {
        let one = |p: &Path| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (m.modified().ok(), m.len()))
        };
        Stamp(one(&self.cert), one(&self.key))
    }
}

/// The modification time and size of the two files (none when one cannot be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp(FileStamp, FileStamp);
type FileStamp = Option<(Option<SystemTime>, u64)>;
