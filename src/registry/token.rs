//! The `Authorization` a request carries: none, Basic, or a Bearer token from the run's cache.
//!
//! Tokens are shared: one per registry, credential and group of repositories (see
//! [`Registries::plan`](super::state::Registries::plan)), fetched once by whoever needs it
//! first while every other image of the group waits for that same fetch, and renewed only when
//! it expires or the registry calls it invalid. A token server's refusal is kept for the run
//! (for a held checker's client, its life: minutes), so that rejected credentials are sent
//! once, not once per image. Credentials go to a token realm only over HTTPS, unless
//! `--plain-http` or the node's configuration speaks plain HTTP to that host.
//!
//! [`Tokens`] is one registry's cache (kept in its state); [`TokenSource`] is what a request
//! for that registry asks tokens through: the cache, the registry's client and the wire.

use super::auth::{self, AuthScheme, Token};
use super::http::Wire;
use super::{Fact, MAX_BODY, Progress, Step, authorized, instant_after};
use super::{read_limited, retry_after, transport};
use crate::keyring::Credential;
use crate::reference::Reference;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// Tokens are cached per (credential source or "", group of repositories).
type TokenKey = (String, String);

/// One token fetch shared by all who wait for it: the token and its renewal time, or the token
/// server's refusal (kept for the run, so that rejected credentials are sent once, not once per
/// image: a registry may lock an account that fails too often).
type TokenCell = Arc<OnceCell<Result<(Token, Instant), Refusal>>>;

/// One registry's tokens: the plan of the repositories each credential asks for in one
/// request, and the fetches made from it, one per credential and group.
#[derive(Default)]
pub(super) struct Tokens {
    /// The repositories each credential ("" for anonymous) will ask tokens for, in groups
    /// (see [`Registries::plan`](super::state::Registries::plan)).
    scopes: HashMap<String, Vec<Vec<String>>>,
    /// For each credential, the group of `scopes` each repository is in.
    groups: HashMap<String, HashMap<String, usize>>,
    cells: Mutex<HashMap<TokenKey, TokenCell>>,
}

/// What a token request needs of the registry it is for, and the wire it goes out on.
pub(super) struct TokenSource<'a> {
    pub(super) wire: &'a Wire,
    /// The run's `--plain-http` registries (lower-case `host[:port]`): a plain-HTTP token realm
    /// on one of them may be sent credentials.
    pub(super) plain_http: &'a HashSet<String>,
    pub(super) tokens: &'a Tokens,
    /// The registry's HTTP client (its TLS settings and headers), which asks the realm too.
    pub(super) http: &'a reqwest::Client,
    /// A plain-HTTP token realm on this host may be sent credentials: the node's configuration
    /// speaks plain HTTP to it.
    pub(super) plain_host: Option<&'a str>,
}

/// A token server's 401 or 403, as remembered for the run.
#[derive(Debug, Clone)]
pub(super) struct Refusal {
    url: String,
    status: u16,
}

impl TokenSource<'_> {
    /// The `Authorization` header for a request about `reference` with `cred`: none, Basic, or
    /// a Bearer token from the run's cache (fetched when missing, expired, or `refresh`).
    pub(super) async fn authorization(
        &self,
        scheme: &AuthScheme,
        reference: &Reference,
        cred: Option<&Credential>,
        refresh: bool,
        progress: &Progress,
    ) -> Result<Option<String>, Fact> {
        match scheme {
            AuthScheme::None => Ok(None),
            AuthScheme::Basic => Ok(cred.map(basic_auth)),
            AuthScheme::Bearer { realm, service } => {
                progress.set(format!("token from {realm}"));
                let token = self
                    .token(
                        realm,
                        service.as_deref(),
                        &reference.repository,
                        cred,
                        refresh,
                    )
                    .await?;
                Ok(Some(format!("Bearer {}", token.value)))
            }
            AuthScheme::Unsupported(s) => Err(Fact::UnsupportedAuth { scheme: s.clone() }),
        }
    }

    /// The token for `repository` with `cred`, from the cache or fetched once for its group.
    async fn token(
        &self,
        realm: &str,
        service: Option<&str>,
        repository: &str,
        cred: Option<&Credential>,
        refresh: bool,
    ) -> Result<Token, Fact> {
        let cred_key = cred.map(Credential::cache_key).unwrap_or_default();
        let (group_key, scopes) = self.tokens.group(&cred_key, repository);
        let cell = self.tokens.cell((cred_key, group_key), refresh);
        let answer = cell
            .get_or_try_init(|| async {
                match self.fetch_token(realm, service, &scopes, cred).await {
                    Ok(token) => {
                        // Renew a little early so a token does not expire between cache and use.
                        let life = token.lifetime.saturating_sub(Duration::from_secs(5));
                        Ok(Ok((token, instant_after(Instant::now(), life))))
                    }
                    Err(Fact::Status {
                        status: status @ (401 | 403),
                        url,
                        ..
                    }) => Ok(Err(Refusal { url, status })),
                    // Transient failures are not kept: the next attempt asks again.
                    Err(other) => Err(other),
                }
            })
            .await?;
        match answer {
            Ok((token, _)) => Ok(token.clone()),
            Err(refusal) => Err(Fact::Status {
                step: Step::Token,
                method: "GET",
                url: refusal.url.clone(),
                status: refusal.status,
                retry_after: None,
                bearer_error: None,
            }),
        }
    }

    async fn fetch_token(
        &self,
        realm: &str,
        service: Option<&str>,
        scopes: &[String],
        cred: Option<&Credential>,
    ) -> Result<Token, Fact> {
        // The realm is judged on its own: a URL that does not parse (an odd byte in its host)
        // is the registry's set-up, said as such.
        let mut url = reqwest::Url::parse(realm)
            .ok()
            .filter(|u| matches!(u.scheme(), "https" | "http") && u.host_str().is_some())
            .ok_or_else(|| Fact::BadRealm {
                realm: realm.to_string(),
            })?;
        let realm_host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let plain_ok = self.plain_http.contains(&realm_host.to_ascii_lowercase())
            || self.plain_host == Some(realm_host.to_ascii_lowercase().as_str());
        if cred.is_some() && url.scheme() != "https" && !plain_ok {
            return Err(Fact::InsecureRealm {
                realm: realm.to_string(),
            });
        }
        {
            let mut q = url.query_pairs_mut();
            if let Some(s) = service {
                q.append_pair("service", s);
            }
            for scope in scopes {
                q.append_pair("scope", scope);
            }
        }
        let shown = url.to_string();
        let req = authorized(self.http.get(url), cred.map(basic_auth).as_deref());
        let resp = self
            .wire
            .send(req, "GET", &shown)
            .await
            .map_err(|e| transport(Step::Token, "GET", &shown, &e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(Fact::Status {
                step: Step::Token,
                method: "GET",
                url: shown,
                status: status.as_u16(),
                retry_after: retry_after(resp.headers()),
                bearer_error: None,
            });
        }
        let body = read_limited(resp, MAX_BODY)
            .await
            .map_err(|e| transport(Step::Token, "GET", &shown, &e))?;
        auth::parse_token_answer(&body).ok_or(Fact::BadTokenAnswer {
            realm: realm.to_string(),
        })
    }
}

impl Tokens {
    /// The tokens of a registry whose repositories were planned: `scopes` per credential.
    pub(super) fn planned(scopes: HashMap<String, Vec<Vec<String>>>) -> Tokens {
        let groups = scopes
            .iter()
            .map(|(key, groups)| {
                let by_repo = groups
                    .iter()
                    .enumerate()
                    .flat_map(|(i, g)| g.iter().map(move |r| (r.clone(), i)))
                    .collect();
                (key.clone(), by_repo)
            })
            .collect();
        Tokens {
            scopes,
            groups,
            cells: Mutex::default(),
        }
    }

    /// The same plan with no token fetched yet: for the plain-HTTP state that replaces a
    /// registry's own (a token fetched over HTTPS is not carried over).
    pub(super) fn same_plan(&self) -> Tokens {
        Tokens {
            scopes: self.scopes.clone(),
            groups: self.groups.clone(),
            cells: Mutex::default(),
        }
    }

    /// The cache key of `repository`'s token and the scopes it asks for: the group of
    /// repositories planned for this credential, so that a run over many repositories asks the
    /// token server once, not once per repository; a repository nobody planned gets a token of
    /// its own.
    fn group(&self, cred_key: &str, repository: &str) -> (String, Vec<String>) {
        let group = self
            .groups
            .get(cred_key)
            .and_then(|by_repo| by_repo.get(repository))
            .copied();
        let (group_key, repositories) = match group {
            Some(i) => (
                format!("group {i}"),
                self.scopes
                    .get(cred_key)
                    .and_then(|g| g.get(i))
                    .cloned()
                    .unwrap_or_default(),
            ),
            None => (
                format!("repository {repository}"),
                vec![repository.to_string()],
            ),
        };
        let scopes = repositories
            .iter()
            .map(|r| format!("repository:{r}:pull"))
            .collect();
        (group_key, scopes)
    }

    /// The one fetch of a token that everyone needing it shares: a new one when the cached
    /// token expired, or when `refresh` (the registry called it invalid) and the server did not
    /// refuse.
    fn cell(&self, key: TokenKey, refresh: bool) -> TokenCell {
        let mut cells = self.cells.lock().unwrap_or_else(PoisonError::into_inner);
        let cell = cells.entry(key).or_default();
        let expired = cell
            .get()
            .is_some_and(|t| matches!(t, Ok((_, expires)) if *expires <= Instant::now()));
        let refused = cell.get().is_some_and(Result::is_err);
        if (refresh && !refused) || expired {
            *cell = Arc::new(OnceCell::new());
        }
        cell.clone()
    }
}

pub(super) fn basic_auth(c: &Credential) -> String {
    use base64::Engine;
    let raw = format!("{}:{}", c.username, c.password.expose());
    let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
    crate::redact::register(&encoded);
    format!("Basic {encoded}")
}
