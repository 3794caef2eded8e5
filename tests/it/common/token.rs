//! A token server for distribution's token auth (`auth: token`), in the test process.
//!
//! HTTPS on 127.0.0.1 with the registry's own server certificate (so a client trusts both with
//! one `--ca-file`), served by the tests' one HTTPS stand-in ([`super::tls`]). It answers `GET /token?service=..&scope=..[&scope=..]`,
//! with optional `Authorization: Basic`, as Docker Hub's token server does:
//!
//! - the answer is `{"token", "access_token", "expires_in", "issued_at"}`;
//! - the token is a JWT signed **ES256** (ring, fixed-size `r||s` signature) whose header carries
//!   `x5c` = [the signing certificate, base64 DER]; the registry's `rootcertbundle` is that
//!   self-signed certificate ([`TokenServer::signing_cert_pem`]);
//! - claims: `iss` = [`TOKEN_ISSUER`], `aud` = the requested service (a plain string: distribution
//!   rejects a list), `sub`, `exp`/`nbf`/`iat`, a unique `jti`, and
//!   `access: [{type: "repository", name, actions}]` per scope with something granted;
//! - policy: anonymous gets `pull` on `public/*` only, and for anything else a token whose
//!   `access` leaves it out (the registry then answers 401 `insufficient_scope`, as Docker Hub
//!   does for private *and* missing repositories); a known user with the right password gets the
//!   `pull` and `push` it asks for on every repository; a wrong password or unknown user gets a
//!   401 from the token server itself.
//!
//! Every request is recorded ([`TokenServer::requests`]): who asked, for which scopes, what was
//! answered and the token issued, so tests can count token requests and search outputs for
//! tokens. [`TokenServer::expire_next_token_for`] makes the next token for a repository one that
//! expired an hour ago while the answer still says `expires_in: 300` (distribution allows 60 s of
//! leeway on `exp`, so it answers 401 `invalid_token`).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use serde_json::{Value, json};

use super::tls::{Reply, TlsServer};

/// The `service` the registry names in its challenge and the token's `aud`.
pub const TOKEN_SERVICE: &str = "pullcheck-test-registry";
/// The token's `iss`, trusted by the registry.
pub const TOKEN_ISSUER: &str = "pullcheck-test-token-issuer";
/// `expires_in` of every answer, in seconds.
pub const TOKEN_LIFETIME_SECS: u64 = 300;
/// Repositories under this prefix can be pulled anonymously.
pub const PUBLIC_PREFIX: &str = "public/";

/// One token request, as the token server saw and answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// The Basic user name sent, `None` for an anonymous request.
    pub user: Option<String>,
    /// The `service` parameter.
    pub service: Option<String>,
    /// The `scope` parameters, in order (`repository:team/app:pull`).
    pub scopes: Vec<String>,
    /// The HTTP status answered (200, 401 for bad credentials, 400, 404).
    pub status: u16,
    /// The token issued (200 only).
    pub token: Option<String>,
    /// The `access` claim: (repository, actions granted).
    pub granted: Vec<(String, Vec<String>)>,
    /// The token had already expired when issued ([`TokenServer::expire_next_token_for`]).
    pub expired: bool,
}

impl TokenRequest {
    /// Whether one of the scopes is about `repository` (any actions).
    pub fn is_for(&self, repository: &str) -> bool {
        self.scopes
            .iter()
            .filter_map(|s| parse_scope(s))
            .any(|s| s.kind == "repository" && s.name == repository)
    }

    /// Whether the scopes are exactly `repository:<repository>:pull` (what a puller asks).
    pub fn is_pull_of(&self, repository: &str) -> bool {
        self.scopes == [format!("repository:{repository}:pull")]
    }
}

struct State {
    key: EcdsaKeyPair,
    rng: SystemRandom,
    /// base64 (standard, padded) DER of the signing certificate.
    x5c: String,
    users: Vec<(String, String)>,
    log: Mutex<Vec<TokenRequest>>,
    expire_next: Mutex<HashSet<String>>,
    serial: AtomicU64,
}

/// A running token server. Dropping it stops accepting connections.
pub struct TokenServer {
    server: TlsServer,
    addr: SocketAddr,
    state: Arc<State>,
    signing_cert_pem: String,
}

impl TokenServer {
    /// Starts a token server on `127.0.0.1:0`, serving TLS with `tls_cert_pem` (leaf, PEM) and
    /// `tls_key_pem` (PKCS#8 PEM), and knowing `users` as (name, password). Generates a fresh
    /// P-256 signing key and a self-signed certificate for it.
    pub fn start(tls_cert_pem: &str, tls_key_pem: &str, users: &[(&str, &str)]) -> TokenServer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("generate token signing key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("load token signing key");
        let rc_key = rcgen::KeyPair::try_from(pkcs8.as_ref()).expect("signing key for rcgen");
        let mut params =
            rcgen::CertificateParams::new(Vec::<String>::new()).expect("empty SAN list is valid");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "pullcheck test token signer");
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        let cert = params
            .self_signed(&rc_key)
            .expect("self-sign the token signing certificate");

        let state = Arc::new(State {
            key,
            rng,
            x5c: STANDARD.encode(cert.der()),
            users: users
                .iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect(),
            log: Mutex::new(Vec::new()),
            expire_next: Mutex::new(HashSet::new()),
            serial: AtomicU64::new(0),
        });
        let server = {
            let state = state.clone();
            TlsServer::start(
                "127.0.0.1:0",
                tls_cert_pem,
                tls_key_pem,
                "token-server",
                move |head| {
                    let (status, headers, body) = answer(head, &state);
                    Some(Reply {
                        status,
                        headers,
                        body: body.into_bytes(),
                    })
                },
            )
        };
        TokenServer {
            addr: server.addr(),
            server,
            state,
            signing_cert_pem: cert.pem(),
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// The realm to configure in the registry: `https://127.0.0.1:PORT/token`.
    pub fn realm(&self) -> String {
        format!("https://{}/token", self.addr)
    }

    /// The self-signed certificate of the signing key, PEM: the registry's `rootcertbundle`.
    pub fn signing_cert_pem(&self) -> &str {
        &self.signing_cert_pem
    }

    /// Every token request so far, oldest first (the harness's own push-token requests too).
    pub fn requests(&self) -> Vec<TokenRequest> {
        self.state
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The token requests with a scope about `repository`.
    pub fn requests_for(&self, repository: &str) -> Vec<TokenRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_for(repository))
            .collect()
    }

    /// Every token issued so far.
    pub fn issued_tokens(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter_map(|r| r.token)
            .collect()
    }

    /// The next token issued for a request with a scope about `repository` will have expired an
    /// hour before it is issued (`nbf`/`iat` two hours before), while the answer still says
    /// `expires_in: 300`.
    pub fn expire_next_token_for(&self, repository: &str) {
        self.state
            .expire_next
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(repository.to_string());
    }

    /// A token for `user` (Basic `user:password`, or anonymous) and `scope`, fetched over HTTPS
    /// with `client` (which must trust the test CA) as any client would. Panics unless the
    /// answer is 200 with a token.
    pub fn fetch_token(
        &self,
        client: &reqwest::Client,
        creds: Option<(&str, &str)>,
        scope: &str,
    ) -> String {
        let mut url = reqwest::Url::parse(&self.realm()).expect("realm URL");
        url.query_pairs_mut()
            .append_pair("service", TOKEN_SERVICE)
            .append_pair("scope", scope);
        super::block_on(async {
            let mut req = client.get(url);
            if let Some((user, password)) = creds {
                req = req.basic_auth(user, Some(password));
            }
            let resp = req.send().await.expect("GET token");
            let status = resp.status().as_u16();
            let body = resp.bytes().await.expect("token answer");
            let body: Value = serde_json::from_slice(&body).expect("token answer JSON");
            assert_eq!(status, 200, "token for {scope}: {body}");
            body["token"]
                .as_str()
                .expect("token in the answer")
                .to_string()
        })
    }
}

/// (status, extra header lines each ending in CRLF, body) for one request head.
fn answer(head: &str, state: &State) -> (u16, String, String) {
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let authorization = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().to_string());
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != "/token" {
        return (
            404,
            String::new(),
            error_body("NOT_FOUND", "no such endpoint"),
        );
    }
    let mut service = None;
    let mut scopes = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = percent_decode(v);
        match percent_decode(k).as_str() {
            "service" => service = Some(v),
            // Several scopes may also come space-separated in one parameter.
            "scope" => scopes.extend(v.split(' ').filter(|s| !s.is_empty()).map(str::to_string)),
            _ => {}
        }
    }
    let mut record = TokenRequest {
        user: None,
        service: service.clone(),
        scopes: scopes.clone(),
        status: 200,
        token: None,
        granted: Vec::new(),
        expired: false,
    };
    // Who is asking.
    let mut authenticated = None;
    if let Some(a) = authorization {
        let decoded = a
            .strip_prefix("Basic ")
            .and_then(|b| STANDARD.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok());
        let Some((user, password)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
            record.status = 400;
            state.record(record);
            return (
                400,
                String::new(),
                error_body("UNAUTHORIZED", "malformed Authorization header"),
            );
        };
        record.user = Some(user.to_string());
        if !state.users.iter().any(|(u, p)| u == user && p == password) {
            record.status = 401;
            state.record(record);
            return (
                401,
                "WWW-Authenticate: Basic realm=\"pullcheck-test-token\"\r\n".to_string(),
                error_body("UNAUTHORIZED", "invalid username or password"),
            );
        }
        authenticated = Some(user.to_string());
    }
    // What they may have.
    let mut granted: Vec<(String, Vec<String>)> = Vec::new();
    for scope in scopes.iter().filter_map(|s| parse_scope(s)) {
        if scope.kind != "repository" {
            continue;
        }
        let allowed: &[&str] = match &authenticated {
            Some(_) => &["pull", "push"],
            None if scope.name.starts_with(PUBLIC_PREFIX) => &["pull"],
            None => &[],
        };
        let actions: Vec<String> = scope
            .actions
            .iter()
            .filter(|a| allowed.contains(&a.as_str()))
            .cloned()
            .collect();
        if actions.is_empty() {
            continue;
        }
        match granted.iter_mut().find(|(n, _)| *n == scope.name) {
            Some((_, have)) => {
                for a in actions {
                    if !have.contains(&a) {
                        have.push(a);
                    }
                }
            }
            None => granted.push((scope.name.clone(), actions)),
        }
    }
    let expired = {
        let mut expire = state
            .expire_next
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let hit = scopes
            .iter()
            .filter_map(|s| parse_scope(s))
            .find(|s| expire.contains(&s.name))
            .map(|s| s.name);
        hit.is_some_and(|name| expire.remove(&name))
    };
    let now = unix_now();
    let (iat, exp) = if expired {
        (now - 7200, now - 3600)
    } else {
        (now, now + TOKEN_LIFETIME_SECS as i64)
    };
    let serial = state.serial.fetch_add(1, Ordering::SeqCst);
    let claims = json!({
        "iss": TOKEN_ISSUER,
        "sub": authenticated.clone().unwrap_or_default(),
        "aud": service.clone().unwrap_or_else(|| TOKEN_SERVICE.to_string()),
        "exp": exp,
        "nbf": iat,
        "iat": iat,
        "jti": format!("pullcheck-test-{serial}-{now}"),
        "access": granted
            .iter()
            .map(|(name, actions)| json!({"type": "repository", "name": name, "actions": actions}))
            .collect::<Vec<_>>(),
    });
    let token = state.sign(&claims);
    let body = json!({
        "token": token,
        "access_token": token,
        "expires_in": TOKEN_LIFETIME_SECS,
        "issued_at": rfc3339(now),
    })
    .to_string();
    record.token = Some(token);
    record.granted = granted;
    record.expired = expired;
    state.record(record);
    (200, String::new(), body)
}

impl State {
    fn record(&self, r: TokenRequest) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(r);
    }

    /// A compact JWS, ES256, header `{typ, alg, x5c}`.
    fn sign(&self, claims: &Value) -> String {
        let header = json!({"typ": "JWT", "alg": "ES256", "x5c": [self.x5c]});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .key
            .sign(&self.rng, input.as_bytes())
            .expect("ES256 signature");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

fn error_body(code: &str, message: &str) -> String {
    json!({"errors": [{"code": code, "message": message}]}).to_string()
}

/// A parsed `type:name:actions` scope.
struct Scope {
    kind: String,
    name: String,
    actions: Vec<String>,
}

fn parse_scope(s: &str) -> Option<Scope> {
    let (kind, rest) = s.split_once(':')?;
    let (name, actions) = rest.rsplit_once(':')?;
    Some(Scope {
        kind: kind.to_string(),
        name: name.to_string(),
        actions: actions
            .split(',')
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect(),
    })
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// `2026-01-02T03:04:05Z` for a Unix time (proleptic Gregorian, UTC).
fn rfc3339(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_323_045), "2026-01-02T03:04:05Z");
        assert_eq!(
            percent_decode("repository%3Ateam%2Fapp%3Apull+x%zz%4"),
            "repository:team/app:pull x%zz%4"
        );
        let s = parse_scope("repository:a/b:pull,push").unwrap();
        assert_eq!((s.kind.as_str(), s.name.as_str()), ("repository", "a/b"));
        assert_eq!(s.actions, ["pull", "push"]);
    }
}
