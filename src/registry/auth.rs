//! Registry authentication: parsing `WWW-Authenticate` challenges and reading token answers.
//!
//! Written by hand rather than taken from a crate because the parser must survive what real
//! registries send (quoted values holding commas, several challenges in one header, `error=`
//! parameters) and never panic on what a hostile server sends.

use serde::Deserialize;
use std::fmt;
use std::time::Duration;

/// One challenge of a `WWW-Authenticate` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme, lower-cased (`basic`, `bearer`).
    pub(crate) scheme: String,
    /// The parameters in order; names lower-cased, values unquoted.
    pub(crate) params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of a parameter, by lower-case name.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a `WWW-Authenticate` header value into its challenges (RFC 9110 §11.6.1).
///
/// Tolerant: unknown syntax is skipped, never an error, so a strange header yields fewer
/// challenges rather than a failure. Read from bytes: one non-ASCII byte in a quoted value (a
/// realm) must not drop the whole header; such a value is judged where it is used.
pub fn parse_www_authenticate(header: impl AsRef<[u8]>) -> Vec<Challenge> {
    let mut p = Parser {
        s: header.as_ref(),
        i: 0,
    };
    let mut out: Vec<Challenge> = Vec::new();
    loop {
        p.skip_ws_and_commas();
        let Some(scheme) = p.token() else {
            // Not a token: skip one byte and carry on, or stop at the end.
            if p.i >= p.s.len() {
                break;
            }
            p.i += 1;
            continue;
        };
        let mut challenge = Challenge {
            scheme: scheme.to_ascii_lowercase(),
            params: Vec::new(),
        };
        // Parameters: name=value pairs separated by commas, until a token that is not followed
        // by '=' (the next challenge's scheme).
        loop {
            p.skip_ws();
            let save = p.i;
            let Some(name) = p.token() else { break };
            p.skip_ws();
            if !p.eat(b'=') {
                // The next challenge's scheme (or a token68 we do not use).
                p.i = save;
                break;
            }
            p.skip_ws();
            let value = if p.peek() == Some(b'"') {
                p.quoted()
            } else {
                p.token68_or_token().unwrap_or_default()
            };
            challenge.params.push((name.to_ascii_lowercase(), value));
            p.skip_ws();
            if !p.eat(b',') {
                break;
            }
        }
        out.push(challenge);
    }
    out
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_ws_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    /// An RFC 9110 token (tchar+).
    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while let Some(b) = self.peek() {
            let tchar = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if !tchar {
                break;
            }
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    /// An unquoted value: a token, possibly with the `/` and `=` of a token68.
    fn token68_or_token(&mut self) -> Option<String> {
        let start = self.i;
        while let Some(b) = self.peek() {
            if b == b',' || b == b' ' || b == b'\t' || b == b'"' {
                break;
            }
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    /// A quoted string with backslash escapes; an unterminated one runs to the end.
    fn quoted(&mut self) -> String {
        let mut out = Vec::new();
        self.i += 1; // the opening quote
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(next) = self.peek() {
                        out.push(next);
                        self.i += 1;
                    }
                }
                _ => out.push(b),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// How a registry asks to be authenticated, learnt from the challenge (`401` with
/// `WWW-Authenticate`) to an anonymous manifest request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthScheme {
    /// No authentication: nothing asked yet, or nothing to send.
    None,
    /// HTTP Basic.
    Basic,
    /// Token auth: ask `realm` for a token for `service`.
    Bearer {
        /// The token server's URL.
        realm: String,
        /// The `service` parameter to pass back.
        service: Option<String>,
    },
    /// A scheme we do not speak (named for the message).
    Unsupported(String),
}

impl AuthScheme {
    /// Picks the scheme from a 401's challenges: Bearer first (it is what registries mean when
    /// they offer both), then Basic.
    pub fn from_challenges(challenges: &[Challenge]) -> AuthScheme {
        if let Some(c) = challenges.iter().find(|c| c.scheme == "bearer") {
            if let Some(realm) = c.param("realm").filter(|r| !r.is_empty()) {
                return AuthScheme::Bearer {
                    realm: realm.to_string(),
                    service: c.param("service").map(str::to_string),
                };
            }
        }
        if challenges.iter().any(|c| c.scheme == "basic") {
            return AuthScheme::Basic;
        }
        match challenges.first() {
            Some(c) => AuthScheme::Unsupported(c.scheme.clone()),
            None => AuthScheme::Unsupported("(no WWW-Authenticate challenge)".to_string()),
        }
    }
}

/// The `error` of a Bearer challenge on a 401 (`insufficient_scope`, `invalid_token`).
pub fn bearer_error(header: impl AsRef<[u8]>) -> Option<String> {
    parse_www_authenticate(header)
        .into_iter()
        .find(|c| c.scheme == "bearer")
        .and_then(|c| c.param("error").map(str::to_string))
}

/// A bearer token. Its `Debug` is redacted: tokens are credentials.
#[derive(Clone)]
pub struct Token {
    /// The token to send as `Authorization: Bearer …`.
    pub(crate) value: String,
    /// How long the token server said it lives.
    pub(crate) lifetime: Duration,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("value", &"<redacted>")
            .field("lifetime", &self.lifetime)
            .finish()
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    token: Option<String>,
    access_token: Option<String>,
    /// Any JSON value: `-1`, `0`, a float or a string mean "the default", as in Docker's and
    /// containerd's clients, never "no token".
    #[serde(default)]
    expires_in: serde_json::Value,
}

/// The token lifetime the distribution spec gives when a server does not say.
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);

/// Reads a token server's JSON answer. `None` when it holds no token.
pub fn parse_token_answer(body: &[u8]) -> Option<Token> {
    let answer: TokenAnswer = serde_json::from_slice(body).ok()?;
    let value = answer
        .token
        .filter(|t| !t.is_empty())
        .or(answer.access_token.filter(|t| !t.is_empty()))?;
    crate::redact::register(&value);
    let lifetime = answer
        .expires_in
        .as_u64()
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TOKEN_LIFETIME)
        // The server's number: clamped, so that `Instant + lifetime` cannot overflow.
        .min(super::MAX_SERVER_WAIT);
    Some(Token { value, lifetime })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(scheme: &str, params: &[(&str, &str)]) -> Challenge {
        Challenge {
            scheme: scheme.to_string(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn www_authenticate_table() {
        let cases: &[(&str, &str, Vec<Challenge>)] = &[
            (
                "Docker Hub",
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull""#,
                vec![ch(
                    "bearer",
                    &[
                        ("realm", "https://auth.docker.io/token"),
                        ("service", "registry.docker.io"),
                        ("scope", "repository:library/nginx:pull"),
                    ],
                )],
            ),
            (
                "insufficient scope with a comma in a quoted scope",
                r#"Bearer realm="https://r/t",service="s",scope="repository:a:pull,push",error="insufficient_scope""#,
                vec![ch(
                    "bearer",
                    &[
                        ("realm", "https://r/t"),
                        ("service", "s"),
                        ("scope", "repository:a:pull,push"),
                        ("error", "insufficient_scope"),
                    ],
                )],
            ),
            (
                "basic",
                r#"Basic realm="basic-realm""#,
                vec![ch("basic", &[("realm", "basic-realm")])],
            ),
            (
                "two challenges, spaces after commas, unquoted values",
                r#"Basic realm="x", Bearer realm=https://t/token, service=reg"#,
                vec![
                    ch("basic", &[("realm", "x")]),
                    ch(
                        "bearer",
                        &[("realm", "https://t/token"), ("service", "reg")],
                    ),
                ],
            ),
            (
                "scheme case and escaped quote",
                r#"BEARER Realm="a\"b""#,
                vec![ch("bearer", &[("realm", "a\"b")])],
            ),
            ("bare scheme", "Negotiate", vec![ch("negotiate", &[])]),
            ("empty", "", vec![]),
            (
                "unterminated quote",
                r#"Bearer realm="https://x"#,
                vec![ch("bearer", &[("realm", "https://x")])],
            ),
            ("garbage", "\"\"\",,,===", vec![]),
        ];
        for (name, header, want) in cases {
            assert_eq!(&parse_www_authenticate(header), want, "{name}");
        }
    }

    #[test]
    fn parser_never_panics_on_any_short_input() {
        let alphabet = [b'a', b'"', b'\\', b',', b'=', b' ', 0xff];
        let mut buf = Vec::new();
        for n in 0..(7u32.pow(5)) {
            buf.clear();
            let mut k = n;
            for _ in 0..5 {
                buf.push(alphabet[(k % 7) as usize]);
                k /= 7;
            }
            let _ = parse_www_authenticate(&buf);
        }
    }

    #[test]
    fn a_non_ascii_byte_in_the_realm_keeps_the_challenge() {
        let header = b"Bearer realm=\"https://tok\xffen.example/token\",service=\"r\"";
        let challenges = parse_www_authenticate(&header[..]);
        assert_eq!(challenges.len(), 1, "{challenges:?}");
        assert_eq!(challenges[0].param("service"), Some("r"));
        assert_eq!(
            challenges[0].param("realm"),
            Some("https://tok\u{fffd}en.example/token")
        );
        assert!(matches!(
            AuthScheme::from_challenges(&challenges),
            AuthScheme::Bearer { .. }
        ));
    }

    #[test]
    fn scheme_choice() {
        let both =
            parse_www_authenticate(r#"Basic realm="x", Bearer realm="https://t",service="s""#);
        assert_eq!(
            AuthScheme::from_challenges(&both),
            AuthScheme::Bearer {
                realm: "https://t".into(),
                service: Some("s".into())
            }
        );
        let basic = parse_www_authenticate(r#"Basic realm="x""#);
        assert_eq!(AuthScheme::from_challenges(&basic), AuthScheme::Basic);
        assert_eq!(
            AuthScheme::from_challenges(&[]),
            AuthScheme::Unsupported("(no WWW-Authenticate challenge)".into())
        );
        let bearer_without_realm = parse_www_authenticate("Bearer service=x");
        assert!(matches!(
            AuthScheme::from_challenges(&bearer_without_realm),
            AuthScheme::Unsupported(_)
        ));
    }

    #[test]
    fn token_answers() {
        let t = parse_token_answer(br#"{"token":"abc","expires_in":300}"#).unwrap();
        assert_eq!(t.value, "abc");
        assert_eq!(t.lifetime, Duration::from_secs(300));
        let t = parse_token_answer(br#"{"access_token":"xyz"}"#).unwrap();
        assert_eq!(t.value, "xyz");
        assert_eq!(t.lifetime, DEFAULT_TOKEN_LIFETIME);
        assert!(parse_token_answer(br#"{"token":""}"#).is_none());
        // Lifetimes a server may send: out of range or nonsense is the default, never an error.
        let cases: &[(&str, Duration)] = &[
            ("-1", DEFAULT_TOKEN_LIFETIME),
            ("0", DEFAULT_TOKEN_LIFETIME),
            ("null", DEFAULT_TOKEN_LIFETIME),
            ("\"300\"", DEFAULT_TOKEN_LIFETIME),
            ("1.5", DEFAULT_TOKEN_LIFETIME),
            ("1e300", DEFAULT_TOKEN_LIFETIME),
            ("18446744073709551615", super::super::MAX_SERVER_WAIT),
            ("120", Duration::from_secs(120)),
        ];
        for (expires_in, want) in cases {
            let body = format!(r#"{{"token":"t","expires_in":{expires_in}}}"#);
            let t = parse_token_answer(body.as_bytes()).unwrap_or_else(|| panic!("{expires_in}"));
            assert_eq!(t.lifetime, *want, "{expires_in}");
        }
        assert!(parse_token_answer(b"not json").is_none());
        assert!(!format!("{t:?}").contains("xyz"));
    }
}
