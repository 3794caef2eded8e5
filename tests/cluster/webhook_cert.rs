//! `webhook --self-signed` on the real API server (built with `--features webhook`, which
//! `tests/cluster/test.sh` passes): the certificate manager (`pullcheck::cluster::webhook::cert`, called
//! as a library) writes its CA into a `MutatingWebhookConfiguration` that changes nothing
//! (`failurePolicy: Ignore`, a namespace selector no namespace matches), and the `caBundle` the
//! API server holds verifies a TLS handshake with the served certificate for the Service's
//! name. A second manager keeps both CAs; a validity of seconds shows renewal and the CA's
//! roll-over; a service account with `get` and `patch` on that one object is enough, and one
//! without them fails with the rule it lacks.

use crate::harness::{Cluster, cluster, wait_for};
use pullcheck::cluster::webhook::cert::{SelfSigned, run_with};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

const SERVICE: &str = "pullcheck-webhook";

/// A webhook configuration of the test's own (cluster-scoped: deleted first and at the end).
struct Configuration {
    cluster: &'static Cluster,
    name: String,
}

impl Configuration {
    fn new(cluster: &'static Cluster, name: &str, namespace: &str) -> Configuration {
        let _ = cluster.kubectl_output(
            &[
                "delete",
                "mutatingwebhookconfiguration",
                name,
                "--ignore-not-found",
            ],
            None,
        );
        let entry = |hook: &str, group: &str, resource: &str| {
            format!(
                "- name: {hook}.pullcheck.dev
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  timeoutSeconds: 2
  clientConfig:
    service: {{name: {SERVICE}, namespace: {namespace}, path: /mutate, port: 443}}
  namespaceSelector:
    matchLabels: {{pullcheck.dev/never-matched: {name}}}
  rules:
  - operations: [CREATE]
    apiGroups: [\"{group}\"]
    apiVersions: [v1]
    resources: [{resource}]
"
            )
        };
        let yaml = format!(
            "apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: {name}
webhooks:
{}{}",
            entry("pods", "", "pods"),
            entry("jobs", "batch", "jobs")
        );
        cluster.apply("default", &yaml);
        Configuration {
            cluster,
            name: name.to_string(),
        }
    }

    /// The certificates of each entry's `caBundle`, as the API server holds them.
    fn bundles(&self) -> Vec<Vec<CertificateDer<'static>>> {
        use base64::Engine as _;
        let json = self.cluster.kubectl(&[
            "get",
            "mutatingwebhookconfiguration",
            &self.name,
            "-o",
            "json",
        ]);
        let obj: serde_json::Value = serde_json::from_str(&json).unwrap();
        obj["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let b64 = w["clientConfig"]["caBundle"].as_str().unwrap_or("");
                let pem = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap();
                CertificateDer::pem_slice_iter(&pem)
                    .map(Result::unwrap)
                    .collect()
            })
            .collect()
    }

    /// The one bundle all entries share (they must agree).
    fn bundle(&self) -> Vec<CertificateDer<'static>> {
        let bundles = self.bundles();
        assert_eq!(bundles.len(), 2, "two webhooks");
        assert_eq!(bundles[0], bundles[1], "every entry gets the same bundle");
        bundles[0].clone()
    }
}

impl Drop for Configuration {
    fn drop(&mut self) {
        let _ = self.cluster.kubectl_output(
            &[
                "delete",
                "mutatingwebhookconfiguration",
                &self.name,
                "--ignore-not-found",
            ],
            None,
        );
    }
}

/// A certificate manager running on a thread of its own, stopped when dropped.
struct Manager {
    certs: watch::Receiver<Option<Arc<CertifiedKey>>>,
    ready: Arc<AtomicBool>,
    ended: std::sync::mpsc::Receiver<Result<(), String>>,
    _stop: oneshot::Sender<()>,
}

impl Manager {
    fn start(kubeconfig: &Path, options: SelfSigned) -> Manager {
        let (tx, certs) = watch::channel(None);
        let ready = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = oneshot::channel::<()>();
        let (end, ended) = std::sync::mpsc::channel();
        let kubeconfig = kubeconfig.to_path_buf();
        let flag = ready.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let result = rt.block_on(async move {
                let client = client(&kubeconfig).await?;
                tokio::select! {
                    r = run_with(client, options, tx, flag) => r.map_err(|e| e.to_string()),
                    _ = stopped => Ok(()),
                }
            });
            let _ = end.send(result);
        });
        Manager {
            certs,
            ready,
            ended,
            _stop: stop,
        }
    }

    fn wait_ready(&self, what: &str) {
        wait_for(what, Duration::from_secs(60), || {
            if let Ok(r) = self.ended.try_recv() {
                panic!("{what}: the manager ended: {r:?}");
            }
            if self.ready.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("not ready".into())
            }
        });
        assert!(self.current().is_some(), "ready, and so a certificate sent");
    }

    fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.certs.borrow().clone()
    }
}

async fn client(kubeconfig: &Path) -> Result<kube::Client, String> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .map_err(|e| e.to_string())?;
    kube::Client::try_from(config).map_err(|e| e.to_string())
}

fn options(namespace: &str, configuration: &str, validity: u64, renew_before: u64) -> SelfSigned {
    SelfSigned {
        validity: Duration::from_secs(validity),
        renew_before: Duration::from_secs(renew_before),
        ..SelfSigned::new(SERVICE, namespace, configuration)
    }
}

#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl rustls::server::ResolvesServerCert for Fixed {
    fn resolve(&self, _: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A TLS handshake on loopback: a server presenting `cert`, a client trusting only `bundle`
/// and asking for `name`, as the API server does when it calls the webhook's Service.
fn handshake(
    cert: &Arc<CertifiedKey>,
    bundle: &[CertificateDer<'static>],
    name: &str,
) -> Result<(), String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Fixed(cert.clone())));
    let mut roots = rustls::RootCertStore::empty();
    for ca in bundle {
        roots.add(ca.clone()).unwrap();
    }
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = std::thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        let mut conn = rustls::ServerConnection::new(Arc::new(server)).unwrap();
        while conn.is_handshaking() {
            if conn.complete_io(&mut tcp).is_err() {
                break;
            }
        }
    });
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    let name = ServerName::try_from(name.to_string()).unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(client), name).unwrap();
    let mut result = Ok(());
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut tcp) {
            result = Err(e.to_string());
            break;
        }
    }
    drop(tcp);
    serving.join().unwrap();
    result
}

#[test]
fn the_ca_bundle_verifies_the_served_certificate_and_two_managers_keep_both_cas() {
    let c = cluster();
    let ns = c.namespace("pc-webhook-cert");
    let hooks = Configuration::new(c, "pc-webhook-cert", &ns.name);
    let service = format!("{SERVICE}.{}.svc", ns.name);

    let first = Manager::start(&c.kubeconfig, options(&ns.name, &hooks.name, 3600, 600));
    first.wait_ready("the first manager");
    let bundle = hooks.bundle();
    assert_eq!(bundle.len(), 1, "one CA");
    let cert = first.current().unwrap();
    handshake(&cert, &bundle, &service).unwrap();
    handshake(&cert, &bundle, &format!("{service}.cluster.local")).unwrap();
    let wrong = handshake(&cert, &bundle, &format!("other.{}.svc", ns.name));
    assert!(
        wrong.is_err(),
        "a name the certificate does not hold: {wrong:?}"
    );

    let second = Manager::start(&c.kubeconfig, options(&ns.name, &hooks.name, 3600, 600));
    second.wait_ready("the second manager");
    let both = hooks.bundle();
    assert_eq!(both.len(), 2, "each manager's CA");
    assert_eq!(both[0], bundle[0], "the first CA kept, in its place");
    handshake(&first.current().unwrap(), &both, &service).unwrap();
    handshake(&second.current().unwrap(), &both, &service).unwrap();
    // Each serves its own CA's certificate: the first's bundle alone does not trust the second.
    assert!(handshake(&second.current().unwrap(), &bundle, &service).is_err());

    // Overwritten (a `kubectl apply` of the configuration empties caBundle): both put theirs
    // back within one recheck.
    drop(Configuration::new(c, &hooks.name, &ns.name));
    let hooks = Configuration::new(c, "pc-webhook-cert", &ns.name);
    wait_for(
        "both CAs back in the bundle",
        pullcheck::cluster::webhook::cert::RECHECK * 3,
        || match hooks.bundle() {
            b if b.len() == 2 => Ok(()),
            b => Err(format!("{} CAs", b.len())),
        },
    );
}

#[test]
fn a_certificate_of_seconds_is_renewed_and_its_ca_rolled_over_without_a_restart() {
    let c = cluster();
    let ns = c.namespace("pc-webhook-renew");
    let hooks = Configuration::new(c, "pc-webhook-renew", &ns.name);
    let service = format!("{SERVICE}.{}.svc", ns.name);
    // Serving certificates of 6 s, renewed 3 s before their end; a CA of 24 s, replaced when
    // less than 9 s of it is left.
    let manager = Manager::start(&c.kubeconfig, options(&ns.name, &hooks.name, 6, 3));
    manager.wait_ready("the manager");
    let first_ca = hooks.bundle();
    assert_eq!(first_ca.len(), 1);
    let first = manager.current().unwrap();

    let mut served = vec![first.cert[0].clone()];
    let rolled = wait_for(
        "a certificate signed by a new CA",
        Duration::from_secs(60),
        || {
            let now = manager.current().unwrap();
            if !served.contains(&now.cert[0]) {
                served.push(now.cert[0].clone());
            }
            if handshake(&now, &first_ca, &service).is_ok() {
                return Err(format!(
                    "{} certificates, all of the first CA",
                    served.len()
                ));
            }
            Ok(now)
        },
    );
    assert!(
        served.len() >= 3,
        "renewed before the CA's turn: {} certificates",
        served.len()
    );
    // The new CA was in the bundle before its certificate was served, beside the old one.
    let during = hooks.bundle();
    assert!(
        during.contains(&first_ca[0]),
        "the old CA kept during the roll-over"
    );
    handshake(&rolled, &during, &service).unwrap();
    // Once expired, the old CA leaves the bundle.
    wait_for("the first CA dropped", Duration::from_secs(60), || {
        let now = hooks.bundle();
        if now.contains(&first_ca[0]) {
            Err(format!("{} CAs, the first among them", now.len()))
        } else {
            Ok(())
        }
    });
    handshake(&manager.current().unwrap(), &hooks.bundle(), &service).unwrap();
}

/// A kubeconfig for service account `sa` of `ns` (a token from the TokenRequest API).
fn service_account_kubeconfig(c: &Cluster, ns: &str, sa: &str) -> PathBuf {
    c.kubectl(&["create", "serviceaccount", sa, "-n", ns]);
    let token = c.kubectl(&["create", "token", sa, "-n", ns]);
    let path = c.dir.join(format!("kubeconfig-{ns}-{sa}"));
    let admin = c.kubectl(&["config", "view", "--raw", "--minify", "--flatten"]);
    std::fs::write(&path, admin).unwrap();
    let file = path.to_str().unwrap();
    c.kubectl(&[
        "--kubeconfig",
        file,
        "config",
        "set-credentials",
        sa,
        "--token",
        token.trim(),
    ]);
    c.kubectl(&[
        "--kubeconfig",
        file,
        "config",
        "set-context",
        "--current",
        "--user",
        sa,
    ]);
    path
}

#[test]
fn get_and_patch_on_the_one_configuration_are_enough_and_needed() {
    let c = cluster();
    let ns = c.namespace("pc-webhook-rbac");
    let hooks = Configuration::new(c, "pc-webhook-rbac", &ns.name);
    let role = "pc-webhook-rbac";
    for kind in ["clusterrolebinding", "clusterrole"] {
        let _ = c.kubectl_output(&["delete", kind, role, "--ignore-not-found"], None);
    }
    // The rule the chart grants (pullcheck::cluster::webhook::cert::RBAC_RULE).
    c.kubectl(&[
        "create",
        "clusterrole",
        role,
        "--verb=get,patch",
        "--resource=mutatingwebhookconfigurations.admissionregistration.k8s.io",
        &format!("--resource-name={}", hooks.name),
    ]);
    let granted = service_account_kubeconfig(c, &ns.name, "granted");
    let denied = service_account_kubeconfig(c, &ns.name, "denied");
    c.kubectl(&[
        "create",
        "clusterrolebinding",
        role,
        &format!("--clusterrole={role}"),
        &format!("--serviceaccount={}:granted", ns.name),
    ]);
    let who = format!("system:serviceaccount:{}:granted", ns.name);
    let can = |what: &str| {
        let out = c.kubectl_output(&["auth", "can-i", "patch", what, "--as", &who], None);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let this = format!("mutatingwebhookconfigurations/{}", hooks.name);
    wait_for(
        "the binding in force",
        Duration::from_secs(30),
        || match can(&this) {
            yes if yes == "yes" => Ok(()),
            other => Err(other),
        },
    );
    assert_eq!(
        can("mutatingwebhookconfigurations/another"),
        "no",
        "that one object only"
    );

    let manager = Manager::start(&granted, options(&ns.name, &hooks.name, 3600, 600));
    manager.wait_ready("the manager as the granted service account");
    assert_eq!(hooks.bundle().len(), 1);
    drop(manager);

    let refused = Manager::start(&denied, options(&ns.name, &hooks.name, 3600, 600));
    let ended = refused
        .ended
        .recv_timeout(Duration::from_secs(60))
        .expect("a manager without the binding ends");
    let message = ended.expect_err("refused");
    println!("without the binding: {message}");
    assert!(message.contains("forbidden"), "{message}");
    assert!(
        message.contains(&format!(
            "cannot get MutatingWebhookConfiguration {}",
            hooks.name
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "resourceNames: [{}], verbs: [get, patch]",
            hooks.name
        )),
        "the rule it lacks: {message}"
    );
    assert!(!refused.ready.load(Ordering::SeqCst), "never ready");
    for kind in ["clusterrolebinding", "clusterrole"] {
        let _ = c.kubectl_output(&["delete", kind, role, "--ignore-not-found"], None);
    }
}
