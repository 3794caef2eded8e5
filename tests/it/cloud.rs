//! Built-in cloud credentials, end to end: pullcheck gets a registry credential from stand-ins
//! of the cloud endpoints (`standin/cloud.py`, on loopback: IMDS, STS, EKS Pod Identity, ECR's
//! API, the GKE metadata server, Entra ID, Azure IMDS, ACR's exchange) and a real registry on
//! loopback, reached under the cloud registry's name (the `test-hooks` build feature), accepts
//! exactly the credential the exchange produced. The ECR stand-in checks every SigV4 signature
//! with botocore's signer. Every run is scanned for secrets (stdout, stderr, termination
//! message).

use crate::check::Run;
use crate::common::{Registry, RegistryOptions, pullcheck};
use base64::Engine;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const ECR_HOST: &str = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
const ECR_TOKEN: &str = "ecr-registry-token-Q7w9";
const ACCESS_KEY: &str = "ASIAPULLCHECKTEST0001";
const SECRET_KEY: &str = "s3cr3t/AWS+key-wJalrXUtnFEMIK7MDENG";
const SESSION_TOKEN: &str = "session-token-FQoGZXIvYXdzE";
const WEB_IDENTITY_TOKEN: &str = "eyJhbGciOi.web-identity-jwt.sig";
const POD_IDENTITY_TOKEN: &str = "pod-identity-agent-token-x1";
const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/puller";

const GAR_HOST: &str = "europe-docker.pkg.dev";
const GOOGLE_TOKEN: &str = "ya29.google-access-token-T3st";

const ACR_HOST: &str = "pullcheck.azurecr.io";
const ACR_USER: &str = "00000000-0000-0000-0000-000000000000";
const ACR_REFRESH: &str = "acr-refresh-token-R3fr";
const ENTRA_TOKEN: &str = "entra-access-token-E1";
const FEDERATED_TOKEN: &str = "federated-sa-token-F3d";
const AZURE_CLIENT: &str = "11111111-2222-3333-4444-555555555555";
const AZURE_TENANT: &str = "tenant-6666";

fn secrets() -> Vec<String> {
    let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    vec![
        ECR_TOKEN.into(),
        b64(format!("AWS:{ECR_TOKEN}")),
        SECRET_KEY.into(),
        SESSION_TOKEN.into(),
        WEB_IDENTITY_TOKEN.into(),
        POD_IDENTITY_TOKEN.into(),
        GOOGLE_TOKEN.into(),
        b64(format!("oauth2accesstoken:{GOOGLE_TOKEN}")),
        ACR_REFRESH.into(),
        b64(format!("{ACR_USER}:{ACR_REFRESH}")),
        ENTRA_TOKEN.into(),
        FEDERATED_TOKEN.into(),
        "imds-session-token".into(),
        "wrong-secret-key".into(),
        "wrong-ecr-token".into(),
        "wrong-google-token".into(),
        "wrong-federated".into(),
        "wrong-password".into(),
        b64("AWS:wrong-password".to_string()),
    ]
}

fn aws_registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry::start(RegistryOptions::tls_basic("AWS", ECR_TOKEN)))
}

fn google_registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        Registry::start(RegistryOptions::tls_basic(
            "oauth2accesstoken",
            GOOGLE_TOKEN,
        ))
    })
}

fn azure_registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry::start(RegistryOptions::tls_basic(ACR_USER, ACR_REFRESH)))
}

/// The Python of the test venv (botocore), made by `scripts/test-venv.sh` when missing.
fn venv_python() -> &'static str {
    static P: OnceLock<String> = OnceLock::new();
    P.get_or_init(|| {
        let out = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/test-venv.sh"))
            .output()
            .expect("run scripts/test-venv.sh");
        assert!(
            out.status.success(),
            "scripts/test-venv.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap()
            .to_string()
    })
}

/// A running `standin/cloud.py`; stopped when dropped.
pub struct StandIn {
    child: Child,
    port: u16,
}

impl StandIn {
    pub fn start(config: Value) -> StandIn {
        let mut child = Command::new(venv_python())
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/it/standin/cloud.py"
            ))
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the cloud stand-in");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the stand-in's port");
        StandIn { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests it saw: `METHOD path outcome`.
    pub fn log(&self) -> Vec<String> {
        self.lines("/_log")
    }

    /// One of its own JSON lists of lines (`/_log`, `/_times`), over a plain HTTP/1.0 GET.
    fn lines(&self, path: &str) -> Vec<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("[]");
        serde_json::from_str(body).unwrap()
    }

    fn count(&self, prefix: &str) -> usize {
        self.log().iter().filter(|l| l.starts_with(prefix)).count()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A listener that accepts connections and never answers: a metadata endpoint that hangs.
fn silent_listener() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        let until = Instant::now() + Duration::from_secs(20);
        for s in l.incoming() {
            held.push(s);
            if Instant::now() > until {
                break;
            }
        }
    });
    addr
}

/// A loopback port nothing listens on.
fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    addr
}

/// One run of `pullcheck check -o json` for images of `registry` under the cloud name `host`,
/// with only the given environment (every AWS, Google and Azure variable of the test run
/// removed, and every cloud endpoint pointed at `standin` or a closed port, so that nothing
/// real is ever asked).
pub struct Cloud<'a> {
    pub registry: &'a Registry,
    pub host: &'a str,
    pub env: Vec<(String, String)>,
    pub args: Vec<String>,
    pub dir: tempfile::TempDir,
    /// The stand-in: ACR's token exchange goes there too (the `test-hooks` build feature).
    endpoint: String,
}

impl<'a> Cloud<'a> {
    pub fn new(registry: &'a Registry, host: &'a str, endpoint: &str) -> Cloud<'a> {
        let env = [
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint.to_string()),
            ("AWS_ENDPOINT_URL_STS", format!("{endpoint}/sts")),
            ("AWS_ENDPOINT_URL_ECR", format!("{endpoint}/ecr")),
            (
                "GCE_METADATA_HOST",
                endpoint.trim_start_matches("http://").to_string(),
            ),
            ("AZURE_POD_IDENTITY_AUTHORITY_HOST", endpoint.to_string()),
            ("AZURE_AUTHORITY_HOST", format!("{endpoint}/")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Cloud {
            registry,
            host,
            env,
            args: Vec::new(),
            dir: tempfile::tempdir().unwrap(),
            endpoint: endpoint.to_string(),
        }
    }

    pub fn set(&mut self, name: &str, value: &str) -> &mut Self {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Writes a file in the run's temp dir and returns its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }

    pub fn image(&self, path: &str) -> String {
        format!("{}/{path}", self.host)
    }

    pub fn run(&self, images: &[String]) -> (Run, Duration) {
        let term = self.dir.path().join("termination-log");
        let (run, elapsed) = pullcheck()
            .without_machine_env()
            .arg("check")
            .args(["-o", "json", "--timeout", "20s"])
            .arg("--ca-file")
            .arg(self.registry.ca_pem_path().unwrap())
            .arg("--termination-log")
            .arg(&term)
            .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
            .env("HOME", self.dir.path())
            .pin(self.host, &self.registry.host())
            .acr_exchange(&self.endpoint)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .args(&self.args)
            .args(images)
            .run_timed();
        let termination = std::fs::read_to_string(&term).unwrap_or_default();
        let all = format!("{}\n{}\n{termination}", run.stdout, run.stderr);
        for secret in secrets() {
            assert!(!all.contains(&secret), "leaked {secret:?}:\n{all}");
        }
        (run, elapsed)
    }

    /// The termination message of the last run: its first line is the run's summary.
    pub fn termination(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("termination-log")).unwrap_or_default()
    }

    /// Runs one image; returns its JSON result after checking the exit code.
    pub fn expect(&self, image: &str, code: i32) -> Value {
        let (run, _) = self.run(&[image.to_string()]);
        assert_eq!(run.code, code, "{}\n{}", run.stdout, run.stderr);
        run.image(image)
    }
}

fn aws_standin(extra: Value) -> StandIn {
    let mut aws = json!({
        "access_key": ACCESS_KEY,
        "secret_key": SECRET_KEY,
        "session_token": SESSION_TOKEN,
        "ecr_token": ECR_TOKEN,
        "region": "us-east-1",
        "role_arn": ROLE_ARN,
        "web_identity_token": WEB_IDENTITY_TOKEN,
        "pod_identity_token": POD_IDENTITY_TOKEN,
    });
    for (k, v) in extra.as_object().unwrap() {
        aws[k] = v.clone();
    }
    StandIn::start(json!({ "aws": aws }))
}

fn env_keys(c: &mut Cloud<'_>, secret: &str) {
    c.set("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .set("AWS_SECRET_ACCESS_KEY", secret)
        .set("AWS_SESSION_TOKEN", SESSION_TOKEN);
}

#[test]
fn aws_env_keys_sign_get_authorization_token_as_botocore_does() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/env-keys", "v1");
    let standin = aws_standin(json!({}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    env_keys(&mut c, SECRET_KEY);
    let r = c.expect(&c.image("cloud/env-keys:v1"), 0);
    assert_eq!(r["status"], "ok", "{r:#}");
    assert_eq!(r["auth"], "aws env keys …0001", "{r:#}");
    let log = standin.log();
    assert!(
        log.contains(&"POST /ecr/ 200 signature verified by botocore".to_string()),
        "{log:?}"
    );
    // Static keys need neither STS nor IMDS.
    assert_eq!(log.len(), 1, "{log:?}");
}

#[test]
fn aws_a_wrong_secret_key_fails_botocores_check_and_the_image_is_unauthorized() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/wrong-secret", "v1");
    let standin = aws_standin(json!({}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    env_keys(&mut c, "wrong-secret-key");
    // No credential could be had: a warning (the node pulls with its own identity).
    let r = c.expect(&c.image("cloud/wrong-secret:v1"), 0);
    assert_eq!(r["status"], "unauthorized", "{r:#}");
    assert_eq!(r["reason"], "no_credentials", "{r:#}");
    assert_eq!(r["fatal"], false);
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
    assert_eq!(r["providers_tried"][0]["provider"], "aws", "{r:#}");
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("aws cloud credentials unavailable: aws env keys …0001: ECR GetAuthorizationToken in us-east-1 answered 403 (InvalidSignatureException: signature mismatch)"),
        "{msg}"
    );
    assert_eq!(
        standin.log(),
        vec!["POST /ecr/ 403 signature mismatch".to_string()]
    );
}

#[test]
fn aws_web_identity_irsa_is_asked_once_for_all_images_of_the_region() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/irsa-a", "v1");
    reg.push_oci_manifest("cloud/irsa-b", "v1");
    let standin = aws_standin(json!({}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    let token = c.file("web-identity-token", WEB_IDENTITY_TOKEN);
    c.set("AWS_WEB_IDENTITY_TOKEN_FILE", &token)
        .set("AWS_ROLE_ARN", ROLE_ARN);
    let images = [c.image("cloud/irsa-a:v1"), c.image("cloud/irsa-b:v1")];
    let (run, _) = c.run(&images);
    assert_eq!(run.code, 0, "{}", run.stdout);
    for i in &images {
        assert_eq!(
            run.image(i)["auth"],
            format!("aws web identity {ROLE_ARN}"),
            "{}",
            run.stdout
        );
    }
    assert_eq!(standin.count("POST /sts/ 200"), 1, "{:?}", standin.log());
    assert_eq!(
        standin.count("POST /ecr/ 200 signature verified"),
        1,
        "{:?}",
        standin.log()
    );
}

#[test]
fn aws_web_identity_refused_by_sts_says_so() {
    let reg = aws_registry();
    let standin = aws_standin(json!({}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    let token = c.file("web-identity-token", "wrong-token");
    c.set("AWS_WEB_IDENTITY_TOKEN_FILE", &token)
        .set("AWS_ROLE_ARN", ROLE_ARN);
    let r = c.expect(&c.image("cloud/irsa-refused:v1"), 0);
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!(
            "aws web identity {ROLE_ARN}: STS AssumeRoleWithWebIdentity"
        )),
        "{msg}"
    );
    assert!(msg.contains("403 (AccessDenied: Not authorized"), "{msg}");
    assert_eq!(r["fatal"], false);
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
}

#[test]
fn aws_pod_identity() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/pod-identity", "v1");
    let standin = aws_standin(json!({}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    let token = c.file("eks-pod-identity-token", POD_IDENTITY_TOKEN);
    c.set(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        &format!("{}/pod-identity", standin.url()),
    )
    .set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", &token);
    let r = c.expect(&c.image("cloud/pod-identity:v1"), 0);
    assert_eq!(r["auth"], "aws pod identity", "{r:#}");
    assert_eq!(standin.count("GET /pod-identity 200"), 1);
}

#[test]
fn aws_pod_identity_with_a_wrong_token_is_unavailable_and_says_why() {
    let reg = aws_registry();
    let standin = aws_standin(json!({}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    let token = c.file("eks-pod-identity-token", "wrong-pod-token");
    c.set(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        &format!("{}/pod-identity", standin.url()),
    )
    .set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", &token);
    let r = c.expect(&c.image("cloud/pod-identity-wrong:v1"), 0);
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("aws cloud credentials unavailable: aws pod identity: http://127.0.0.1:"),
        "{msg}"
    );
    assert!(
        msg.contains("/pod-identity answered 401 (bad token)"),
        "{msg}"
    );
    assert!(!msg.contains("wrong-pod-token"), "{msg}");
}

#[test]
fn aws_source_order_env_keys_then_web_identity_then_pod_identity() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/order", "v1");
    let standin = aws_standin(json!({}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    let web = c.file("web-identity-token", WEB_IDENTITY_TOKEN);
    let pod = c.file("eks-pod-identity-token", POD_IDENTITY_TOKEN);
    c.set("AWS_WEB_IDENTITY_TOKEN_FILE", &web)
        .set("AWS_ROLE_ARN", ROLE_ARN)
        .set(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            &format!("{}/pod-identity", standin.url()),
        )
        .set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", &pod);
    let image = c.image("cloud/order:v1");
    // Web identity before Pod Identity.
    assert_eq!(
        c.expect(&image, 0)["auth"],
        format!("aws web identity {ROLE_ARN}")
    );
    assert_eq!(standin.count("GET /pod-identity"), 0);
    // Env keys before both.
    env_keys(&mut c, SECRET_KEY);
    assert_eq!(c.expect(&image, 0)["auth"], "aws env keys …0001");
    assert_eq!(standin.count("POST /sts/"), 1, "{:?}", standin.log());
}

#[test]
fn aws_imds_v2_instance_role() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/imds", "v1");
    let standin = aws_standin(json!({"imds": "v2"}));
    let c = Cloud::new(reg, ECR_HOST, &standin.url());
    let r = c.expect(&c.image("cloud/imds:v1"), 0);
    assert_eq!(r["auth"], "aws instance profile node-role", "{r:#}");
    let log = standin.log();
    assert_eq!(
        &log[..3],
        [
            "PUT /latest/api/token 200",
            "GET /latest/meta-data/iam/security-credentials/ 200",
            "GET /latest/meta-data/iam/security-credentials/node-role 200"
        ],
        "{log:?}"
    );
}

#[test]
fn aws_imds_with_a_hop_limit_of_one_falls_back_to_imdsv1_when_allowed() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/imds-hop", "v1");
    let standin = aws_standin(json!({"imds": "hop-limit-v1"}));
    let c = Cloud::new(reg, ECR_HOST, &standin.url());
    let (run, elapsed) = c.run(&[c.image("cloud/imds-hop:v1")]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
}

#[test]
fn aws_imds_with_a_hop_limit_of_one_and_no_imdsv1_is_unavailable_and_says_why() {
    let reg = aws_registry();
    let standin = aws_standin(json!({"imds": "hop-limit"}));
    let c = Cloud::new(reg, ECR_HOST, &standin.url());
    let image = c.image("cloud/imds-hop-v2only:v1");
    let (run, elapsed) = c.run(std::slice::from_ref(&image));
    assert_eq!(run.code, 0, "{}", run.stdout);
    let msg = run.image(&image)["message"].as_str().unwrap().to_string();
    assert!(msg.contains("HttpPutResponseHopLimit to 2"), "{msg}");
    assert!(msg.contains("IMDSv1 is off (401)"), "{msg}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
}

/// The stand-in's `/_times`: (method and path, arrived or dropped, seconds on its clock).
fn times(standin: &StandIn) -> Vec<(String, String, f64)> {
    standin
        .lines("/_times")
        .iter()
        .map(|l| {
            let mut w = l.rsplitn(3, ' ');
            let at = w.next().unwrap().parse().unwrap();
            let what = w.next().unwrap().to_string();
            (w.next().unwrap().to_string(), what, at)
        })
        .collect()
}

#[test]
fn aws_imds_answering_each_step_just_in_time_still_ends_within_its_one_second() {
    // Each step within its own limit (the token's half second, a second for the role and the
    // keys): the three together must still end one second after the first request, and the
    // check then goes on without a cloud credential.
    let reg = aws_registry();
    let standin = aws_standin(json!({
        "imds": "v2",
        "imds_delay": {"token": 0.4, "roles": 0.9, "keys": 0.9},
    }));
    let c = Cloud::new(reg, ECR_HOST, &standin.url());
    let image = c.image("cloud/imds-slow:v1");
    let (run, elapsed) = c.run(std::slice::from_ref(&image));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["reason"], "no_credentials", "{r:#}");
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
    let msg = r["message"].as_str().unwrap();
    assert!(msg.contains("aws cloud credentials unavailable"), "{msg}");
    let times = times(&standin);
    let first = times.first().map(|t| t.2).expect("IMDS was asked");
    let last = times.iter().map(|t| t.2).fold(first, f64::max);
    // The last stamp is the stand-in seeing the check give up on the step it was waiting for.
    assert!(
        times.iter().any(|t| t.1 == "dropped"),
        "the check waited every step out: {times:?}"
    );
    let lookup = Duration::from_secs_f64(last - first);
    assert!(
        lookup < Duration::from_millis(1300),
        "{lookup:?}: {times:?}"
    );
    assert!(
        lookup >= Duration::from_millis(900),
        "{lookup:?}: {times:?}"
    );
    // The check's own time holds the lookup and the anonymous request after it, nothing more.
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    let log = standin.log();
    assert!(
        !log.iter().any(|l| l.starts_with("POST /ecr/")),
        "no keys, so ECR is not asked: {log:?}"
    );
}

#[test]
fn aws_without_any_source_is_unavailable_and_the_image_unauthorized() {
    let reg = aws_registry();
    let c = Cloud::new(reg, ECR_HOST, &format!("http://{}", closed_port()));
    let r = c.expect(&c.image("cloud/nothing:v1"), 0);
    assert_eq!(r["reason"], "no_credentials");
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("aws cloud credentials unavailable: no AWS credential source"),
        "{msg}"
    );
}

#[test]
fn aws_a_missing_tag_reached_with_the_cloud_credential_is_fatal() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/missing-tag", "v1");
    let standin = aws_standin(json!({"imds": "v2"}));
    let c = Cloud::new(reg, ECR_HOST, &standin.url());
    let r = c.expect(&c.image("cloud/missing-tag:v2"), 3);
    assert_eq!(r["status"], "not_found", "{r:#}");
    assert_eq!(r["reason"], "tag_missing", "{r:#}");
    assert_eq!(r["fatal"], true);
    assert_eq!(r["auth"], "aws instance profile node-role");
    // Even when --allow-unauthenticated names the registry.
    let mut c = c;
    c.args = vec!["--allow-unauthenticated".into(), ECR_HOST.into()];
    let r = c.expect(&c.image("cloud/missing-tag:v2"), 3);
    assert_eq!(r["fatal"], true);
}

#[test]
fn aws_a_token_the_registry_refuses_is_a_warning_naming_the_identity() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/refused", "v1");
    let standin = aws_standin(json!({"imds": "v2", "ecr_token": "wrong-ecr-token"}));
    let c = Cloud::new(reg, ECR_HOST, &standin.url());
    let r = c.expect(&c.image("cloud/refused:v1"), 0);
    assert_eq!(r["status"], "unauthorized", "{r:#}");
    assert_eq!(r["reason"], "credentials_rejected", "{r:#}");
    assert_eq!(r["fatal"], false);
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("not counted: only the node-side credentials (aws instance profile node-role) were tried"),
        "{msg}"
    );
    assert_eq!(r["not_counted"], "node_credentials_refused", "{r:#}");
    let term = c.termination();
    assert_eq!(
        term.lines().next(),
        Some(
            "pullcheck: no image failed; 1 image not verified (node-side credentials refused; not counted: the node's own identity may have access)"
        ),
        "{term}"
    );
}

#[test]
fn aws_ecr_access_denied_names_the_identity() {
    let reg = aws_registry();
    let standin = aws_standin(json!({"imds": "v2", "ecr_deny": true}));
    let c = Cloud::new(reg, ECR_HOST, &standin.url());
    let r = c.expect(&c.image("cloud/denied:v1"), 0);
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("aws instance profile node-role: ECR GetAuthorizationToken in us-east-1 answered 400 (AccessDeniedException"),
        "{msg}"
    );
}

#[test]
fn pull_secrets_are_tried_before_the_cloud_credential() {
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/secret-first", "v1");
    let standin = aws_standin(json!({"imds": "v2"}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("AWS:{ECR_TOKEN}"));
    let good = c.file(
        "good.json",
        &format!(r#"{{"auths": {{"{ECR_HOST}": {{"auth": "{b64}"}}}}}}"#),
    );
    c.args = vec!["--docker-config".into(), good];
    let r = c.expect(&c.image("cloud/secret-first:v1"), 0);
    assert!(r["auth"].as_str().unwrap().contains("good.json"), "{r:#}");
    // The pull secret worked: the cloud was asked (in parallel) but its credential not used.
    let bad_b64 = base64::engine::general_purpose::STANDARD.encode("AWS:wrong-password");
    let bad = c.file(
        "bad.json",
        &format!(r#"{{"auths": {{"{ECR_HOST}": {{"auth": "{bad_b64}"}}}}}}"#),
    );
    c.args = vec!["--docker-config".into(), bad];
    let r = c.expect(&c.image("cloud/secret-first:v1"), 0);
    assert_eq!(r["auth"], "aws instance profile node-role", "{r:#}");
}

#[test]
fn cloud_credentials_off_asks_nothing() {
    let reg = aws_registry();
    let standin = aws_standin(json!({"imds": "v2"}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    c.args = vec!["--cloud-credentials".into(), "off".into()];
    let r = c.expect(&c.image("cloud/off:v1"), 5);
    assert_eq!(r["reason"], "no_credentials");
    assert!(standin.log().is_empty());
    c.args = vec![];
    c.set("PULLCHECK_CLOUD_CREDENTIALS", "off");
    c.expect(&c.image("cloud/off:v1"), 5);
    assert!(standin.log().is_empty());
}

#[test]
fn google_metadata_token() {
    let reg = google_registry();
    reg.push_oci_manifest("project/repo/app", "v1");
    let standin = StandIn::start(json!({"google": {"token": GOOGLE_TOKEN}}));
    let c = Cloud::new(reg, GAR_HOST, &standin.url());
    let images = [
        c.image("project/repo/app:v1"),
        c.image("project/repo/app:v9"),
    ];
    let (run, _) = c.run(&images);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let found = run.image(&images[0]);
    assert_eq!(found["auth"], "google metadata default", "{found:#}");
    let missing = run.image(&images[1]);
    assert_eq!(missing["reason"], "tag_missing", "{missing:#}");
    assert_eq!(missing["fatal"], true);
    // Asked once for both images.
    assert_eq!(
        standin.count("GET /computeMetadata/v1/instance/service-accounts/default/token 200"),
        1
    );
}

#[test]
fn google_a_silent_metadata_server_costs_about_a_second() {
    let reg = google_registry();
    let c = Cloud::new(reg, GAR_HOST, &format!("http://{}", silent_listener()));
    let image = c.image("project/repo/silent:v1");
    let (run, elapsed) = c.run(std::slice::from_ref(&image));
    assert_eq!(run.code, 0, "{}", run.stdout);
    let msg = run.image(&image)["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("google cloud credentials unavailable"),
        "{msg}"
    );
    assert!(msg.contains("did not answer in time"), "{msg}");
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
}

#[test]
fn google_a_token_the_registry_refuses_is_a_warning() {
    let reg = google_registry();
    let standin = StandIn::start(json!({"google": {"token": "wrong-google-token"}}));
    let c = Cloud::new(reg, GAR_HOST, &standin.url());
    let r = c.expect(&c.image("project/repo/refused:v1"), 0);
    assert_eq!(r["reason"], "credentials_rejected", "{r:#}");
    assert_eq!(r["fatal"], false);
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("(google metadata default)")
    );
}

fn azure_standin(imds: bool, federated: &str) -> StandIn {
    StandIn::start(json!({"azure": {
        "imds": imds,
        "tenant": AZURE_TENANT,
        "client_id": AZURE_CLIENT,
        "federated_token": federated,
        "access_token": ENTRA_TOKEN,
        "refresh_token": ACR_REFRESH,
        "registry": ACR_HOST,
    }}))
}

#[test]
fn azure_workload_identity() {
    let reg = azure_registry();
    reg.push_oci_manifest("team/app", "v1");
    let standin = azure_standin(false, FEDERATED_TOKEN);
    let mut c = Cloud::new(reg, ACR_HOST, &standin.url());
    let token = c.file("azure-identity-token", FEDERATED_TOKEN);
    c.set("AZURE_FEDERATED_TOKEN_FILE", &token)
        .set("AZURE_CLIENT_ID", AZURE_CLIENT)
        .set("AZURE_TENANT_ID", AZURE_TENANT);
    let r = c.expect(&c.image("team/app:v1"), 0);
    assert_eq!(
        r["auth"],
        format!("azure workload identity {AZURE_CLIENT}"),
        "{r:#}"
    );
    assert_eq!(
        standin.log(),
        vec![
            format!("POST /{AZURE_TENANT}/oauth2/v2.0/token 200"),
            "POST /oauth2/exchange 200".to_string()
        ]
    );
}

#[test]
fn azure_imds_managed_identity() {
    let reg = azure_registry();
    reg.push_oci_manifest("team/imds", "v1");
    let standin = azure_standin(true, FEDERATED_TOKEN);
    let c = Cloud::new(reg, ACR_HOST, &standin.url());
    let r = c.expect(&c.image("team/imds:v1"), 0);
    assert_eq!(r["auth"], "azure managed identity", "{r:#}");
}

#[test]
fn azure_a_federated_token_entra_refuses_is_unavailable_and_says_why() {
    let reg = azure_registry();
    let standin = azure_standin(false, FEDERATED_TOKEN);
    let mut c = Cloud::new(reg, ACR_HOST, &standin.url());
    let token = c.file("azure-identity-token", "wrong-federated");
    c.set("AZURE_FEDERATED_TOKEN_FILE", &token)
        .set("AZURE_CLIENT_ID", AZURE_CLIENT)
        .set("AZURE_TENANT_ID", AZURE_TENANT);
    let r = c.expect(&c.image("team/wrong:v1"), 0);
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("azure cloud credentials unavailable: azure workload identity"),
        "{msg}"
    );
    assert!(msg.contains("invalid_client"), "{msg}");
}

#[test]
fn azure_without_any_source_is_unavailable() {
    let reg = azure_registry();
    let c = Cloud::new(reg, ACR_HOST, &format!("http://{}", closed_port()));
    let r = c.expect(&c.image("team/none:v1"), 0);
    let msg = r["message"].as_str().unwrap();
    assert!(msg.contains("no Azure credential source"), "{msg}");
}

#[test]
fn no_cloud_identity_is_a_warning_naming_each_provider_and_required_makes_it_fatal() {
    // A pod on EKS with neither IRSA nor Pod Identity, and IMDSv2 behind a hop limit of 1:
    // the kubelet still pulls with the node's role.
    let reg = aws_registry();
    reg.push_oci_manifest("cloud/no-identity", "v1");
    let standin = aws_standin(json!({"imds": "hop-limit"}));
    let mut c = Cloud::new(reg, ECR_HOST, &standin.url());
    let image = c.image("cloud/no-identity:v1");
    let r = c.expect(&image, 0);
    assert_eq!(r["status"], "unauthorized", "{r:#}");
    assert_eq!(r["fatal"], false);
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
    let tried = r["providers_tried"].as_array().unwrap();
    assert_eq!(tried.len(), 1, "{r:#}");
    assert_eq!(tried[0]["provider"], "aws");
    let why = tried[0]["why"].as_str().unwrap();
    assert!(why.contains("HttpPutResponseHopLimit to 2"), "{why}");
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("not counted: no credential could be had from the pod's cloud identity (aws tried; no pull secret matched)"),
        "{msg}"
    );
    assert!(
        r["hint"]
            .as_str()
            .unwrap()
            .contains("--cloud-credentials required"),
        "{r:#}"
    );
    let term = c.termination();
    assert_eq!(
        term.lines().next(),
        Some(
            "pullcheck: no image failed; 1 image not verified (no credentials; not counted: no cloud identity in the pod, the node pulls with its own)"
        ),
        "{term}"
    );
    assert!(
        term.contains(&format!(
            "\n{image}: no_credentials (not counted: no cloud identity in the pod, the node pulls with its own)"
        )),
        "{term}"
    );

    // --cloud-credentials required: every pod has an identity, so this one's lack is fatal.
    c.args = vec!["--cloud-credentials".into(), "required".into()];
    let r = c.expect(&image, 5);
    assert_eq!(r["fatal"], true, "{r:#}");
    assert!(r.get("not_counted").is_none(), "{r:#}");
    assert_eq!(r["providers_tried"][0]["provider"], "aws", "{r:#}");
    c.args = vec![];
    c.set("PULLCHECK_CLOUD_CREDENTIALS", "required");
    c.expect(&image, 5);

    // A pull secret that matches, rejected: fatal, whatever the cloud gave.
    c.set("PULLCHECK_CLOUD_CREDENTIALS", "auto");
    let bad_b64 = base64::engine::general_purpose::STANDARD.encode("AWS:wrong-password");
    let bad = c.file(
        "bad.json",
        &format!(r#"{{"auths": {{"{ECR_HOST}": {{"auth": "{bad_b64}"}}}}}}"#),
    );
    c.args = vec!["--docker-config".into(), bad];
    let r = c.expect(&image, 5);
    assert_eq!(r["reason"], "credentials_rejected", "{r:#}");
    assert_eq!(r["fatal"], true);
}

#[test]
fn no_identity_on_any_cloud_names_the_provider_and_why() {
    // GKE without a reachable metadata server, AKS with no workload identity and no IMDS.
    let closed = format!("http://{}", closed_port());
    let google = Cloud::new(google_registry(), GAR_HOST, &closed);
    let r = google.expect(&google.image("project/repo/no-identity:v1"), 0);
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
    assert_eq!(r["providers_tried"][0]["provider"], "google", "{r:#}");
    let azure = Cloud::new(azure_registry(), ACR_HOST, &closed);
    let r = azure.expect(&azure.image("team/no-identity:v1"), 0);
    assert_eq!(r["not_counted"], "cloud_identity_unavailable", "{r:#}");
    assert_eq!(r["providers_tried"][0]["provider"], "azure", "{r:#}");
    assert!(
        r["providers_tried"][0]["why"]
            .as_str()
            .unwrap()
            .contains("no Azure credential source"),
        "{r:#}"
    );
}
