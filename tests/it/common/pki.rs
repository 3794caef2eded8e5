//! A throw-away certificate authority and a server certificate for `127.0.0.1` and `localhost`
//! (and the cloud registry names the cloud-credential tests map to loopback), or for the names
//! a test chooses, with a client certificate for a registry that asks for one.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls_pki_types::CertificateDer;

/// PEM and DER material of a freshly generated CA and of a server certificate it signed.
pub struct TestPki {
    /// The CA certificate, PEM (what a client trusts).
    pub ca_pem: String,
    /// The CA certificate, DER (for a `rustls::RootCertStore`).
    pub ca_der: CertificateDer<'static>,
    /// The server certificate, PEM (leaf only).
    pub server_cert_pem: String,
    /// The server's private key, PKCS#8 PEM.
    pub server_key_pem: String,
    /// A client certificate the CA signed (for a registry that asks for one), PEM.
    pub client_cert_pem: String,
    /// Its private key, PKCS#8 PEM.
    pub client_key_pem: String,
}

impl TestPki {
    /// Generates an ECDSA P-256 CA and a server certificate valid for `127.0.0.1`, `localhost`
    /// (and `::1`). rcgen's default validity (1975..4096) is kept: the certificates never expire
    /// during a test run.
    pub fn generate() -> TestPki {
        TestPki::for_names(&[
            "127.0.0.1",
            "localhost",
            "::1",
            // Cloud registry names, which the cloud-credential tests map to loopback.
            "*.dkr.ecr.us-east-1.amazonaws.com",
            "*.pkg.dev",
            "*.azurecr.io",
        ])
    }

    /// A CA and a server certificate valid for exactly `names` (DNS names or IP addresses),
    /// the first its common name.
    pub fn for_names(names: &[&str]) -> TestPki {
        let mut ca_params =
            CertificateParams::new(Vec::<String>::new()).expect("empty SAN list is valid");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name = rcgen::DistinguishedName::new();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "pullcheck test CA");
        ca_params
            .distinguished_name
            .push(DnType::OrganizationName, "pullcheck tests");
        ca_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
        ];
        let ca_key = KeyPair::generate().expect("generate CA key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("self-sign CA");
        let issuer = Issuer::new(ca_params, ca_key);

        let mut server_params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("valid SANs");
        server_params.distinguished_name = rcgen::DistinguishedName::new();
        server_params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("x"));
        server_params.use_authority_key_identifier_extension = true;
        server_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate().expect("generate server key");
        let server_cert = server_params
            .signed_by(&server_key, &issuer)
            .expect("sign server certificate");

        let mut client_params = CertificateParams::new(Vec::<String>::new()).expect("no SANs");
        client_params.distinguished_name = rcgen::DistinguishedName::new();
        client_params
            .distinguished_name
            .push(DnType::CommonName, "pullcheck test client");
        client_params.use_authority_key_identifier_extension = true;
        client_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate().expect("generate client key");
        let client_cert = client_params
            .signed_by(&client_key, &issuer)
            .expect("sign client certificate");

        TestPki {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().clone(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        }
    }
}
