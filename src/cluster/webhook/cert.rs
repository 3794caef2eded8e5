//! The webhook's own TLS certificate (`pullcheck webhook --self-signed`): a CA and a serving
//! certificate made in memory, the CA written into the `caBundle` of every webhook of the
//! `MutatingWebhookConfiguration`, both renewed before they expire, without a restart.
//!
//! # What it does, in order
//!
//! 1. Makes a CA (ECDSA P-256) and a serving certificate signed by it for
//!    `<service>.<namespace>.svc` (and `….svc.cluster.local`, `<service>.<namespace>`,
//!    `<service>`: the names the API server and a curl from a pod may use). Neither key is
//!    written to disk or to a log: they live in this process, and their PEM is registered with
//!    [`crate::redact`] so that no message of the run can echo one.
//! 2. Reads the webhook configuration, and when some entry's `caBundle` lacks this CA, writes
//!    it with a JSON merge patch on that one object (it needs `get` and `patch` on
//!    `mutatingwebhookconfigurations`, `resourceNames: [<webhook_configuration>]`, nothing
//!    else: [`RBAC_RULE`]).
//! 3. Reads it back; only once every entry's `caBundle` holds the CA is the certificate sent to
//!    the server and `ready` set: an API server that calls the webhook before then would not
//!    trust it.
//! 4. Sleeps until the next renewal, checking the bundle every [`RECHECK`] on the way (a
//!    `helm upgrade` or `kubectl apply` that rewrites the configuration empties the
//!    `caBundle`; the CA is put back within that time).
//!
//! # Renewal
//!
//! The serving certificate lives `validity` and is replaced `renew_before` its end
//! ([`renew_at`]). The CA lives [`CA_LIFETIMES`] × `validity`; when what is left of it is less
//! than one serving lifetime and `renew_before` (or than half its life, whichever is less:
//! [`ca_due`]), a new CA is made, added to the
//! bundle **beside** the old one, and only once the bundle read back holds it is a certificate
//! signed by the new CA served. The old CA stays in the bundle until it has expired (every
//! certificate it signed expires with it: a serving certificate never outlives its CA), so a
//! request the API server makes during the roll-over is trusted whichever certificate it meets.
//!
//! # Replicas
//!
//! Each replica makes its own CA and serves only certificates it signed. They share the bundle
//! by union: each adds its CA when it is missing, keeps every other certificate there (another
//! replica's CA, a CA someone put there by hand, one it cannot read), and drops only those that
//! have expired. Every write is a read-modify-write with the `resourceVersion` that was read as
//! a precondition: when another replica wrote in between, the API server answers 409 Conflict and
//! the replica reads again and retries. With two replicas the bundle holds both CAs; neither
//! ever removes the other's while it is valid, so both replicas' certificates are trusted and a
//! request may land on either. A replica that goes away leaves its CA until it expires.
//!
//! # The Kubernetes client
//!
//! [`run`] goes through the webhook's own door to the API server, made once from the in-cluster
//! configuration (the service account's token and CA); outside a cluster, where there is none,
//! it makes its own from `KUBECONFIG` (kube-rs's default order). [`run_with`] takes a client
//! made by the caller (the cluster tests use it to act as a service account).

use crate::cluster::door::Door;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use kube::api::{Api, Patch, PatchParams};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// The CA lives this many serving lifetimes: a CA roll-over every few serving renewals.
const CA_LIFETIMES: u32 = 4;
/// How often the bundle is checked between renewals (it may have been overwritten).
pub const RECHECK: Duration = Duration::from_secs(30);
/// How far back `notBefore` is set, for API servers whose clock is a little behind ours.
const BACKDATE: Duration = Duration::from_secs(300);
/// Attempts of one read-modify-write of the bundle against other writers (409 Conflict).
const CONFLICT_RETRIES: u32 = 10;

/// The RBAC rule the webhook's service account needs for `--self-signed` (a `ClusterRole`,
/// since webhook configurations are cluster-scoped), with `<webhook_configuration>` as the one
/// resource name.
pub const RBAC_RULE: &str = "apiGroups: [admissionregistration.k8s.io], resources: \
    [mutatingwebhookconfigurations], resourceNames: [<webhook_configuration>], verbs: [get, patch]";

/// What `--self-signed` makes and where it writes the CA.
#[derive(Clone, Debug)]
pub struct SelfSigned {
    /// The webhook's Service name (`--service`).
    pub service: String,
    /// The webhook's own namespace (`--namespace`).
    pub namespace: String,
    /// The `MutatingWebhookConfiguration` whose `caBundle` gets the CA
    /// (`--webhook-configuration`).
    pub webhook_configuration: String,
    /// How long a serving certificate is valid.
    pub validity: Duration,
    /// How long before its end a serving certificate is replaced.
    pub renew_before: Duration,
}

impl SelfSigned {
    /// The defaults: serving certificates valid 90 days, replaced 30 days before their end (a
    /// CA of 360 days).
    pub fn new(service: &str, namespace: &str, webhook_configuration: &str) -> SelfSigned {
        SelfSigned {
            service: service.to_string(),
            namespace: namespace.to_string(),
            webhook_configuration: webhook_configuration.to_string(),
            validity: Duration::from_secs(90 * 86_400),
            renew_before: Duration::from_secs(30 * 86_400),
        }
    }
}

/// The DNS names the serving certificate holds: the Service's, as the API server and pods may
/// spell them.
fn dns_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
        format!("{service}.{namespace}"),
        service.to_string(),
    ]
}

/// When a certificate issued at `issued` and ending at `not_after` is replaced: `renew_before`
/// its end, but never in the first half of its life (a `renew_before` longer than the validity
/// would otherwise renew at once, for ever).
fn renew_at(issued: SystemTime, not_after: SystemTime, renew_before: Duration) -> SystemTime {
    let life = not_after.duration_since(issued).unwrap_or_default();
    not_after - renew_before.min(life / 2)
}

/// Whether a CA ending at `ca_not_after` must be replaced now: a serving certificate issued now
/// would be cut short by it before its own renewal time (and never in the first half of the
/// CA's life, whatever `renew_before` says).
fn ca_due(now: SystemTime, ca_not_after: SystemTime, options: &SelfSigned) -> bool {
    now >= ca_renew_at(ca_not_after, options)
}

/// When a CA ending at `ca_not_after` is replaced (see [`ca_due`]).
fn ca_renew_at(ca_not_after: SystemTime, options: &SelfSigned) -> SystemTime {
    let ca_life = options.validity * CA_LIFETIMES;
    ca_not_after - (options.validity + options.renew_before).min(ca_life / 2)
}

/// The shortest `validity`: below it renewals would follow each other without pause.
const MIN_VALIDITY: Duration = Duration::from_secs(2);

/// A CA of this process: its certificate and key, in memory only.
struct Ca {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    /// The end of its validity.
    not_after: SystemTime,
}

impl Ca {
    /// A new CA valid from `now` (back-dated by a few minutes) for `life`.
    fn new(now: SystemTime, life: Duration) -> Result<Ca, SelfSignedError> {
        let key = rcgen::KeyPair::generate().map_err(|e| SelfSignedError::rcgen("CA key", e))?;
        crate::redact::register(&key.serialize_pem());
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "pullcheck webhook CA");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let not_after = whole_seconds(now + life);
        params.not_before = (now - BACKDATE).into();
        params.not_after = not_after.into();
        let issuer = rcgen::CertifiedIssuer::self_signed(params, key)
            .map_err(|e| SelfSignedError::rcgen("CA certificate", e))?;
        Ok(Ca { issuer, not_after })
    }

    /// The CA's certificate (DER).
    fn der(&self) -> &CertificateDer<'static> {
        self.issuer.der()
    }

    /// A serving certificate for `names`, valid from `now` for `validity` or until the CA's
    /// end, whichever comes first; returns it with its end.
    fn issue(
        &self,
        names: Vec<String>,
        now: SystemTime,
        validity: Duration,
    ) -> Result<(rustls::sign::CertifiedKey, SystemTime), SelfSignedError> {
        let key =
            rcgen::KeyPair::generate().map_err(|e| SelfSignedError::rcgen("serving key", e))?;
        crate::redact::register(&key.serialize_pem());
        let mut params = rcgen::CertificateParams::new(names.clone()).map_err(|source| {
            SelfSignedError::Names {
                names: names.clone(),
                source,
            }
        })?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, names[0].as_str());
        params.is_ca = rcgen::IsCa::ExplicitNoCa;
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let not_after = whole_seconds(now + validity).min(self.not_after);
        params.not_before = (now - BACKDATE).into();
        params.not_after = not_after.into();
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| SelfSignedError::rcgen("serving certificate", e))?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signer = rustls::crypto::ring::sign::any_supported_type(&der)
            .map_err(SelfSignedError::Signer)?;
        let certified = rustls::sign::CertifiedKey::new(vec![cert.der().clone()], signer);
        Ok((certified, not_after))
    }
}

/// X.509 times are whole seconds: round down so that the end we plan with is the one written.
fn whole_seconds(t: SystemTime) -> SystemTime {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// Makes the certificates and keeps the bundle and the served certificate current, for as long
/// as the process runs, through `door` (the webhook's, in a cluster) or, without one, a door of
/// `KUBECONFIG`.
///
/// It sends each new serving certificate into `certs` and sets `ready` once the bundle read
/// back holds the CA that signed the first. It returns only on what retrying cannot mend: no
/// Kubernetes configuration, or the API server refusing the service account (401, 403), with a
/// message that names the RBAC rule needed. Other failures (the configuration not created yet,
/// the API server unreachable) are written to stderr and retried with back-off.
pub(crate) async fn run(
    options: SelfSigned,
    door: Option<Door>,
    certs: watch::Sender<Option<Arc<rustls::sign::CertifiedKey>>>,
    ready: Arc<AtomicBool>,
) -> Result<(), SelfSignedError> {
    let door = match door {
        Some(door) => door,
        None => Door::inferred().await.map_err(SelfSignedError::NoClient)?,
    };
    run_with(door.client(), options, certs, ready).await
}

/// [`run`] with a client the caller made.
pub async fn run_with(
    client: kube::Client,
    options: SelfSigned,
    certs: watch::Sender<Option<Arc<rustls::sign::CertifiedKey>>>,
    ready: Arc<AtomicBool>,
) -> Result<(), SelfSignedError> {
    if options.validity < MIN_VALIDITY {
        return Err(SelfSignedError::TooShort {
            validity: options.validity,
        });
    }
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    let names = dns_names(&options.service, &options.namespace);
    let ca_life = options.validity * CA_LIFETIMES;
    let mut ca = Ca::new(SystemTime::now(), ca_life)?;
    let mut serving_renew = None;
    loop {
        let now = SystemTime::now();
        let mut new_ca = None;
        if ca_due(now, ca.not_after, &options) {
            new_ca = Some(Ca::new(now, ca_life)?);
        }
        // The CA that must be in the bundle before anything it signed is served.
        let wanted = new_ca.as_ref().unwrap_or(&ca);
        ensure_in_bundle(&api, &options.webhook_configuration, wanted.der()).await?;
        if let Some(rolled) = new_ca {
            ca = rolled;
            serving_renew = None;
        }
        let renew = match serving_renew {
            Some(at) if SystemTime::now() < at => at,
            _ => {
                let issued = SystemTime::now();
                let (certified, not_after) = ca.issue(names.clone(), issued, options.validity)?;
                certs.send_replace(Some(Arc::new(certified)));
                let at = renew_at(issued, not_after, options.renew_before);
                serving_renew = Some(at);
                at
            }
        };
        ready.store(true, Ordering::SeqCst);
        // The next wake-up: the serving renewal, the CA's, or the next check of the bundle.
        let next = renew.min(ca_renew_at(ca.not_after, &options));
        let wait = next
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .min(RECHECK);
        tokio::time::sleep(wait).await;
    }
}

/// Makes every entry's `caBundle` hold `ca`, retrying until the object read back shows it.
async fn ensure_in_bundle(
    api: &Api<MutatingWebhookConfiguration>,
    name: &str,
    ca: &CertificateDer<'_>,
) -> Result<(), SelfSignedError> {
    let mut backoff = Duration::from_secs(1);
    let mut conflicts = 0;
    loop {
        match write_bundle(api, name, ca).await {
            Ok(true) => return Ok(()),
            // Written (or a conflict with another writer): read back again at once.
            Ok(false) => {}
            Err(Failure::Conflict) if conflicts < CONFLICT_RETRIES => conflicts += 1,
            Err(Failure::Denied(denied)) => return Err(denied),
            Err(Failure::Conflict) => {
                crate::log::warning(
                    crate::log::Component::Webhook,
                    &format!("--self-signed: {name}: {conflicts} conflicts in a row"),
                );
                conflicts = 0;
                tokio::time::sleep(backoff).await;
            }
            Err(Failure::Retry(message)) => {
                crate::log::warning(
                    crate::log::Component::Webhook,
                    &format!("--self-signed: {message}; retrying in {backoff:?}"),
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RECHECK);
            }
        }
    }
}

/// How one read or write of the bundle failed.
enum Failure {
    /// Another writer was first: read again.
    Conflict,
    /// The service account may not: retrying cannot mend it.
    Denied(SelfSignedError),
    /// Anything else, said and retried with back-off.
    Retry(String),
}

/// What `--self-signed` cannot go on after (retrying would not mend it).
#[derive(Debug, thiserror::Error)]
pub enum SelfSignedError {
    /// No Kubernetes client configuration (in-cluster or `KUBECONFIG`).
    #[error("webhook --self-signed: no Kubernetes client configuration: {0}")]
    NoClient(#[source] kube::Error),
    /// A certificate validity below the least (two seconds).
    #[error(
        "webhook --self-signed: a certificate validity of {validity:?} is too short (at least {:?})",
        MIN_VALIDITY
    )]
    TooShort {
        /// The validity asked for.
        validity: Duration,
    },
    /// A key or certificate that rcgen could not make; `what` names it.
    #[error("{what}: {source}")]
    Make {
        /// `CA key`, `CA certificate`, `serving key` or `serving certificate`.
        what: &'static str,
        /// rcgen's error.
        #[source]
        source: rcgen::Error,
    },
    /// Service names rcgen does not take as subject alternative names.
    #[error("serving certificate for {names:?}: {source}")]
    Names {
        /// The DNS names asked for.
        names: Vec<String>,
        /// rcgen's error.
        #[source]
        source: rcgen::Error,
    },
    /// The serving key, which rustls cannot sign with.
    #[error("serving key: {0}")]
    Signer(#[source] rustls::Error),
    /// The API server refused the service account (401, 403) a read or a write of the webhook
    /// configuration; the message names the RBAC rule needed.
    #[error(
        "webhook --self-signed: cannot {verb} {what}: {message} ({code}); the webhook's service \
         account needs a ClusterRole rule {{{}}} bound to it",
        RBAC_RULE.replace("<webhook_configuration>", .name)
    )]
    Denied {
        /// `get` or `patch`.
        verb: &'static str,
        /// The object, as the message names it.
        what: String,
        /// The configuration's name.
        name: String,
        /// The API server's message and code.
        message: String,
        /// The HTTP status.
        code: u16,
        /// The API server's error (boxed: the rest of the enum is small).
        #[source]
        source: Box<kube::Error>,
    },
}

impl SelfSignedError {
    fn rcgen(what: &'static str, source: rcgen::Error) -> SelfSignedError {
        SelfSignedError::Make { what, source }
    }
}

/// One read and, when some entry lacks `ca` (or holds an expired certificate), one patch:
/// `Ok(true)` when the object read already held `ca` in every entry.
async fn write_bundle(
    api: &Api<MutatingWebhookConfiguration>,
    name: &str,
    ca: &CertificateDer<'_>,
) -> Result<bool, Failure> {
    let what = format!("MutatingWebhookConfiguration {name}");
    let current = api
        .get(name)
        .await
        .map_err(|e| failure(name, &what, "get", e))?;
    let mut webhooks = current.webhooks.unwrap_or_default();
    if webhooks.is_empty() {
        return Err(Failure::Retry(format!("{what} has no webhooks")));
    }
    let entries: Vec<Vec<u8>> = webhooks
        .iter()
        .map(|w| w.client_config.ca_bundle.clone().unwrap_or_default().0)
        .collect();
    let bundle = merged_bundle(&entries, ca, SystemTime::now());
    if entries.iter().all(|e| *e == bundle) {
        return Ok(true);
    }
    for webhook in &mut webhooks {
        webhook.client_config.ca_bundle = Some(ByteString(bundle.clone()));
    }
    // A merge patch replaces the whole list: it is the list read, with only `caBundle` changed,
    // and the resourceVersion read makes the API server refuse it if anyone wrote since.
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": current.metadata.resource_version },
        "webhooks": webhooks,
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| failure(name, &what, "patch", e))?;
    Ok(false)
}

fn failure(name: &str, what: &str, verb: &'static str, e: kube::Error) -> Failure {
    let status = match &e {
        kube::Error::Api(status) => {
            Some((status.is_conflict(), status.code, status.message.clone()))
        }
        _ => None,
    };
    match status {
        Some((true, _, _)) => Failure::Conflict,
        Some((false, code @ (401 | 403), message)) => Failure::Denied(SelfSignedError::Denied {
            verb,
            what: what.to_string(),
            name: name.to_string(),
            message,
            code,
            source: Box::new(e),
        }),
        // The API server's own words, not the whole Status structure.
        Some((false, code, message)) => {
            Failure::Retry(format!("cannot {verb} {what}: {message} ({code})"))
        }
        None => Failure::Retry(format!("cannot {verb} {what}: {e}")),
    }
}

/// The bundle every entry gets: the certificates of all entries (in order, each once), less
/// those that have expired by `now`, plus `ca` when missing, as PEM. Text that is not a
/// certificate is dropped; a certificate whose end cannot be read is kept.
fn merged_bundle(entries: &[Vec<u8>], ca: &CertificateDer<'_>, now: SystemTime) -> Vec<u8> {
    let mut certs: Vec<CertificateDer<'static>> = Vec::new();
    for entry in entries {
        use rustls_pki_types::pem::PemObject;
        for cert in CertificateDer::pem_slice_iter(entry).flatten() {
            let expired = not_after(&cert).is_some_and(|end| end <= now);
            if !expired && !certs.contains(&cert) {
                certs.push(cert);
            }
        }
    }
    if !certs.iter().any(|c| c.as_ref() == ca.as_ref()) {
        certs.push(ca.clone().into_owned());
    }
    let mut pem = String::new();
    for cert in &certs {
        pem.push_str(&to_pem(cert));
    }
    pem.into_bytes()
}

/// A certificate as PEM, 64 characters a line.
fn to_pem(cert: &CertificateDer<'_>) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

/// The `notAfter` of a DER certificate, as x509-parser reads it; `None` when it is not a
/// certificate, or ends before 1970.
fn not_after(der: &[u8]) -> Option<SystemTime> {
    use x509_parser::prelude::FromDer;
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(der).ok()?;
    let secs = u64::try_from(cert.validity().not_after.timestamp()).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;
    use rustls_pki_types::{ServerName, UnixTime};

    const HOUR: Duration = Duration::from_secs(3600);

    /// An X.509 time as x509-parser reads it from its DER (`tag` 0x17 UTCTime, 0x18
    /// GeneralizedTime), as a certificate's `notAfter` is read.
    fn asn1_time(tag: u8, text: &[u8]) -> Option<SystemTime> {
        use x509_parser::prelude::FromDer;
        let der = [&[tag, u8::try_from(text.len()).unwrap()], text].concat();
        let (_, time) = x509_parser::time::ASN1Time::from_der(&der).ok()?;
        let secs = u64::try_from(time.timestamp()).ok()?;
        Some(UNIX_EPOCH + Duration::from_secs(secs))
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn options(validity: Duration, renew_before: Duration) -> SelfSigned {
        SelfSigned {
            validity,
            renew_before,
            ..SelfSigned::new("hook", "pc", "pullcheck")
        }
    }

    /// Whether `cert` verifies against `ca` for `name` at `now`, as a TLS client would.
    fn verifies(ca: &Ca, cert: &rustls::sign::CertifiedKey, name: &str, now: SystemTime) -> bool {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        let now = UnixTime::since_unix_epoch(now.duration_since(UNIX_EPOCH).unwrap());
        verifier
            .verify_server_cert(&cert.cert[0], &[], &name, &[], now)
            .is_ok()
    }

    #[test]
    fn the_serving_certificate_holds_the_service_names() {
        assert_eq!(
            dns_names("hook", "pc"),
            [
                "hook.pc.svc",
                "hook.pc.svc.cluster.local",
                "hook.pc",
                "hook"
            ]
        );
        let now = SystemTime::now();
        let ca = Ca::new(now, 4 * HOUR).unwrap();
        let (cert, _) = ca.issue(dns_names("hook", "pc"), now, HOUR).unwrap();
        for name in dns_names("hook", "pc") {
            assert!(verifies(&ca, &cert, &name, now), "{name}");
        }
        assert!(!verifies(&ca, &cert, "other.pc.svc", now));
        assert!(!verifies(&ca, &cert, "hook.other.svc", now));
        // Signed by this CA only.
        let other = Ca::new(now, 4 * HOUR).unwrap();
        assert!(!verifies(&other, &cert, "hook.pc.svc", now));
    }

    #[test]
    fn the_serving_certificate_is_valid_for_its_validity_and_never_past_its_ca() {
        let now = whole_seconds(SystemTime::now());
        let ca = Ca::new(now, 4 * HOUR).unwrap();
        assert_eq!(not_after(ca.der()), Some(now + 4 * HOUR));
        let (cert, end) = ca.issue(dns_names("hook", "pc"), now, HOUR).unwrap();
        assert_eq!(end, now + HOUR);
        assert_eq!(not_after(&cert.cert[0]), Some(end));
        assert!(verifies(
            &ca,
            &cert,
            "hook.pc.svc",
            now + HOUR - Duration::from_secs(1)
        ));
        assert!(!verifies(
            &ca,
            &cert,
            "hook.pc.svc",
            now + HOUR + Duration::from_secs(1)
        ));
        // Back-dated a little, for an API server whose clock is behind.
        assert!(verifies(
            &ca,
            &cert,
            "hook.pc.svc",
            now - Duration::from_secs(60)
        ));
        let (_, capped) = ca.issue(dns_names("hook", "pc"), now, 10 * HOUR).unwrap();
        assert_eq!(capped, ca.not_after);
    }

    #[test]
    fn renewal_comes_renew_before_the_end_but_never_in_the_first_half() {
        let cases = [
            // (issued, not_after, renew_before, renews at)
            ("a day, renewed 2h before", 0, 86_400, 7_200, 79_200),
            ("renew_before longer than the life", 0, 100, 1_000, 50),
            ("renew_before equal to half", 1_000, 1_100, 50, 1_050),
            ("no renew_before", 0, 60, 0, 60),
            ("already past its end", 100, 50, 10, 50),
        ];
        for (name, issued, end, before, want) in cases {
            let got = renew_at(at(issued), at(end), Duration::from_secs(before));
            assert_eq!(got, at(want), "{name}");
        }
    }

    #[test]
    fn the_ca_is_replaced_while_a_whole_serving_life_still_fits_in_it() {
        let o = options(Duration::from_secs(100), Duration::from_secs(20));
        // A CA ending at 400: due from 280 on (100 + 20 before its end).
        assert!(!ca_due(at(0), at(400), &o));
        assert!(!ca_due(at(279), at(400), &o));
        assert!(ca_due(at(280), at(400), &o));
        assert!(ca_due(at(500), at(400), &o));
        // A renew_before longer than the validity: still not in the first half of the CA's life.
        let long = options(Duration::from_secs(100), Duration::from_secs(500));
        assert!(!ca_due(at(199), at(400), &long));
        assert!(ca_due(at(200), at(400), &long));
        // The defaults: a CA of 360 days, replaced 120 days before its end.
        let d = SelfSigned::new("hook", "pc", "pullcheck");
        let day = Duration::from_secs(86_400);
        assert_eq!(d.validity * CA_LIFETIMES, 360 * day);
        assert!(!ca_due(at(0) + 239 * day, at(0) + 360 * day, &d));
        assert!(ca_due(at(0) + 240 * day, at(0) + 360 * day, &d));
    }

    #[test]
    fn the_bundle_keeps_every_valid_ca_and_drops_expired_ones() {
        let now = SystemTime::now();
        let mine = Ca::new(now, HOUR).unwrap();
        let theirs = Ca::new(now, HOUR).unwrap();
        let expired = Ca::new(now - 2 * HOUR, HOUR).unwrap();
        let pem = |ca: &Ca| to_pem(ca.der()).into_bytes();
        let parse = |bundle: &[u8]| -> Vec<CertificateDer<'static>> {
            use rustls_pki_types::pem::PemObject;
            CertificateDer::pem_slice_iter(bundle)
                .map(Result::unwrap)
                .collect()
        };

        // An empty bundle gets mine.
        let first = merged_bundle(&[vec![]], mine.der(), now);
        assert_eq!(parse(&first), [mine.der().clone()]);
        // Already there: unchanged, so a replica that finds its CA writes nothing.
        assert_eq!(
            merged_bundle(std::slice::from_ref(&first), mine.der(), now),
            first
        );
        // Another replica's CA stays, the expired one goes, each entry's certificates once.
        let entries = [
            [pem(&theirs), pem(&expired)].concat(),
            [pem(&theirs), pem(&mine)].concat(),
        ];
        let merged = merged_bundle(&entries, mine.der(), now);
        assert_eq!(parse(&merged), [theirs.der().clone(), mine.der().clone()]);
        // And the other replica, reading that, writes nothing either.
        assert_eq!(
            merged_bundle(std::slice::from_ref(&merged), theirs.der(), now),
            merged
        );
        // Text around the certificates (comments) is not kept.
        let odd = b"# a comment\n".to_vec();
        let kept = merged_bundle(&[[odd, pem(&theirs)].concat()], mine.der(), now);
        assert_eq!(parse(&kept).len(), 2);
    }

    #[test]
    fn asn1_times_read_as_x509_writes_them() {
        assert_eq!(asn1_time(0x17, b"700101000000Z"), Some(at(0)));
        assert_eq!(asn1_time(0x17, b"491231235959Z"), Some(at(2_524_607_999)));
        assert_eq!(asn1_time(0x18, b"20500101000000Z"), Some(at(2_524_608_000)));
        assert_eq!(asn1_time(0x18, b"20240229120000Z"), Some(at(1_709_208_000)));
        assert_eq!(asn1_time(0x17, b"700101000000"), None);
        assert_eq!(asn1_time(0x18, b"700101000000Z"), None);
        assert_eq!(not_after(b"\x30\x03\x02\x01\x00"), None);
        assert_eq!(not_after(b""), None);
    }
}
