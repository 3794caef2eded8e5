//! The request flow of one probe, as containerd's resolver sends it: the manifest `HEAD`
//! first, with no version check (`GET /v2/`) before it.
//!
//! 1. **Ask for the manifest** ([`Probe::ask_manifest`]): with what the registry already asked
//!    of this run (a token from the cache, Basic), else anonymously. An anonymous request that
//!    is challenged (`401` with `WWW-Authenticate`) teaches the registry's state how to
//!    authenticate, and the request is sent again once, with each matching credential in turn
//!    as the kubelet tries them (or an anonymous token). An anonymous public registry costs one
//!    `HEAD`; a token registry `HEAD`, token, `HEAD`, and only the `HEAD` for every image after
//!    the first.
//! 2. **Follow up** what was found ([`Probe::follow_up`]): the node's platform for an index,
//!    and after a 404 what is missing and what is close (see `inspect`).
//! 3. **Not a registry?** ([`Probe::not_a_registry`]): only after a 404 that nothing explained
//!    is `GET /v2/` sent, once per registry, to tell a web server from a missing image.
//!
//! A loopback registry that answers HTTPS in plain HTTP is asked again in plain HTTP, as
//! containerd asks it (see [`Registries::loopback_fallback`]), unless the route is
//! containers/image's (`Endpoint::loopback_fallback`).
//!
//! [`Probe`] is that flow, over the parts of the client it needs: the wire, the registries'
//! states (with their tokens) and the follow-ups.

use super::auth::{self, AuthScheme};
use super::http::Wire;
use super::inspect::FollowUps;
use super::state::{Registries, RegistryState};
use super::{
    AuthUsed, Fact, MANIFEST_ACCEPT, PlatformSeen, Probed, Progress, SUGGESTION_MARGIN, Step,
    TlsFailure, authorized, is_digest, retry_after, transport, www_authenticate,
};
use crate::keyring::Credential;
use crate::reference::Reference;
use crate::route::Endpoint;
use reqwest::StatusCode;
use reqwest::header;
use std::sync::Arc;
use tokio::time::Instant;

/// One answer to a manifest request: the fact, who asked, and the `Authorization` sent (for
/// the follow-ups, which must ask as the request that found it did).
type ProbeAnswer = (Fact, AuthUsed, Option<String>);

/// What the manifest requests of one probe found: the answer that decides (none when there
/// was no credential to try), and every credential tried, in order.
struct Asked {
    last: Option<ProbeAnswer>,
    tried: Vec<AuthUsed>,
}

/// The request flow of one image, over the parts of the client it needs.
pub(super) struct Probe<'a> {
    /// Where every request goes out.
    pub(super) wire: &'a Wire,
    /// What the run knows of each registry and endpoint, their tokens included.
    pub(super) registries: &'a Registries,
    /// The requests that follow what the manifest request found.
    pub(super) follow_ups: FollowUps<'a>,
}

impl Probe<'_> {
    /// Probes one image at one endpoint of its route (a run without a node configuration has
    /// a one-endpoint route of the image's own registry), with the credentials the keyring
    /// chose (empty: anonymous), tried in order until one is not refused, as the kubelet does.
    /// The endpoint's own URL, TLS settings and headers, and the reference as asked there. The
    /// caller decides which credentials the endpoint may be sent. `explain`: after a 404, learn
    /// why and what is close (`tags/list`); not needed when another endpoint will be asked next.
    ///
    /// `deadline` is when this attempt will be cut short: best-effort follow-ups (suggestions)
    /// stop a little before it, so that they never cost the verdict.
    pub(super) async fn probe_at(
        &self,
        endpoint: &Endpoint,
        credentials: &[&Credential],
        progress: &Progress,
        deadline: Instant,
        explain: bool,
    ) -> Probed {
        let state = match self.registries.endpoint_state(endpoint) {
            Ok(s) => s,
            Err(e) => {
                // The manifest request could not be sent: its client could not be built.
                let r = &endpoint.reference;
                return Probed {
                    fact: Fact::Transport {
                        step: Step::Manifest,
                        method: "HEAD",
                        url: format!(
                            "{}/{}/manifests/{}",
                            endpoint.url(),
                            r.repository,
                            r.manifest_ref()
                        ),
                        detail: e.to_string(),
                        tls: Some(TlsFailure::Other),
                        timeout: false,
                        redirect: false,
                        no_such_host: false,
                    },
                    auth: AuthUsed::Anonymous,
                    tried: Vec::new(),
                };
            }
        };
        self.probe_state(&state, endpoint, credentials, progress, deadline, explain)
            .await
    }

    async fn probe_state(
        &self,
        state: &Arc<RegistryState>,
        endpoint: &Endpoint,
        credentials: &[&Credential],
        progress: &Progress,
        deadline: Instant,
        explain: bool,
    ) -> Probed {
        let reference = &endpoint.reference;
        let mut state = state.clone();
        let asked = loop {
            let asked = self
                .ask_manifest(&state, reference, credentials, progress)
                .await;
            let plain = asked
                .last
                .as_ref()
                .filter(|_| endpoint.loopback_fallback)
                .and_then(|(fact, _, _)| self.registries.loopback_fallback(&state, fact));
            match plain {
                Some(plain) if !Arc::ptr_eq(&plain, &state) => state = plain,
                _ => break asked,
            }
        };
        let Asked { last, tried } = asked;
        let Some((fact, auth, authorization)) = last else {
            let fact = Fact::UnsupportedAuth {
                scheme: "(no credential to try)".to_string(),
            };
            return Probed {
                fact,
                auth: AuthUsed::Anonymous,
                tried,
            };
        };
        let authorization = authorization.as_deref();
        let fact = self
            .follow_up(
                &state,
                reference,
                fact,
                authorization,
                progress,
                deadline,
                explain,
            )
            .await;
        let fact = self.not_a_registry(&state, fact, progress).await;
        Probed { fact, auth, tried }
    }

    /// Phase 1: the manifest requests, answering the registry's challenge once.
    async fn ask_manifest(
        &self,
        state: &RegistryState,
        reference: &Reference,
        credentials: &[&Credential],
        progress: &Progress,
    ) -> Asked {
        let mut scheme = state.known_scheme();
        let mut answered = false;
        loop {
            let mut challenge: Option<AuthScheme> = None;
            let round = self
                .try_credentials(
                    state,
                    &scheme,
                    reference,
                    credentials,
                    progress,
                    &mut challenge,
                )
                .await;
            let Some(asked) = challenge else {
                return round;
            };
            state.learn(&asked);
            // Basic without a credential to send would only ask the same again.
            let answerable = !answered
                && scheme == AuthScheme::None
                && asked != AuthScheme::None
                && !(credentials.is_empty() && asked == AuthScheme::Basic);
            if !answerable {
                return round;
            }
            // The anonymous request only learnt how to authenticate: what is tried, and said
            // in a message, is what answers the challenge.
            answered = true;
            scheme = asked;
        }
    }

    /// One round of manifest requests with `scheme`: each candidate credential in turn until
    /// one finds the manifest, as the kubelet tries them.
    async fn try_credentials(
        &self,
        state: &RegistryState,
        scheme: &AuthScheme,
        reference: &Reference,
        credentials: &[&Credential],
        progress: &Progress,
        challenge: &mut Option<AuthScheme>,
    ) -> Asked {
        // A registry that asks for no authentication gets no credentials: they would only leak.
        let candidates: Vec<Option<&Credential>> =
            if credentials.is_empty() || *scheme == AuthScheme::None {
                vec![None]
            } else {
                credentials.iter().copied().map(Some).collect()
            };
        let refusal = |f: &Fact| {
            matches!(
                f,
                Fact::Status {
                    status: 401 | 403,
                    ..
                } | Fact::InsecureRealm { .. }
            )
        };
        let mut tried = Vec::new();
        let mut last: Option<ProbeAnswer> = None;
        for cred in candidates {
            let auth = AuthUsed::of(cred);
            tried.push(auth.clone());
            let (fact, authorization) = self
                .head_manifest(state, scheme, reference, cred, progress, challenge)
                .await;
            // As the kubelet: any failed pull moves on to the next matching credential (a
            // registry may answer 404 to a user who may not see a private repository), not
            // only a refusal. A transport failure is not the credential's: it ends the search.
            let answered = matches!(
                fact,
                Fact::Status { .. } | Fact::Missing { .. } | Fact::InsecureRealm { .. }
            );
            let found = matches!(fact, Fact::Found { .. });
            // What is reported when none finds it: the first answer that is not a refusal
            // (a 404 says more than a later 401), else the last refusal.
            let keep = last.as_ref().is_none_or(|(f, _, _)| refusal(f)) || found;
            if keep {
                last = Some((fact, auth, authorization));
            }
            if found || !answered {
                break;
            }
        }
        Asked { last, tried }
    }

    /// One `HEAD` of the manifest with `cred` (and once more with a fresh token when the
    /// registry calls the cached one invalid). An anonymous request that is challenged leaves
    /// the challenge in `challenge`.
    async fn head_manifest(
        &self,
        state: &RegistryState,
        scheme: &AuthScheme,
        reference: &Reference,
        cred: Option<&Credential>,
        progress: &Progress,
        challenge: &mut Option<AuthScheme>,
    ) -> (Fact, Option<String>) {
        let url = format!(
            "{}{}/{}/manifests/{}",
            state.base,
            state.root,
            reference.repository,
            reference.manifest_ref()
        );
        // An expired token is fetched again once.
        for fresh_token in [false, true] {
            let authorization = match self
                .registries
                .token_source(state, self.wire)
                .authorization(scheme, reference, cred, fresh_token, progress)
                .await
            {
                Ok(a) => a,
                Err(fact) => return (fact, None),
            };
            progress.set(format!("HEAD {url}"));
            let req = authorized(
                state
                    .http
                    .head(&url)
                    .header(header::ACCEPT, MANIFEST_ACCEPT),
                authorization.as_deref(),
            );
            let resp = match self.wire.send(req, "HEAD", &url).await {
                Ok(r) => r,
                Err(e) => return (transport(Step::Manifest, "HEAD", &url, &e), authorization),
            };
            let status = resp.status();
            if status.is_success() {
                return (found(&resp, reference), authorization);
            }
            if status == StatusCode::NOT_FOUND {
                let fact = Fact::Missing {
                    url,
                    repository_missing: None,
                    suggestions: Vec::new(),
                    some_tags: Vec::new(),
                };
                return (fact, authorization);
            }
            let bearer_error =
                www_authenticate(resp.headers()).and_then(|h| auth::bearer_error(&h));
            if status == StatusCode::UNAUTHORIZED && authorization.is_none() {
                // Asked without credentials and challenged: how the registry wants them. No
                // challenge it can read is a scheme not spoken (containerd: "failed to find
                // supported auth scheme").
                let challenges = www_authenticate(resp.headers())
                    .map(|h| auth::parse_www_authenticate(&h))
                    .unwrap_or_default();
                *challenge = Some(AuthScheme::from_challenges(&challenges));
            }
            if status == StatusCode::UNAUTHORIZED
                && bearer_error.as_deref() == Some("invalid_token")
                && !fresh_token
                && matches!(scheme, AuthScheme::Bearer { .. })
            {
                continue;
            }
            let fact = Fact::Status {
                step: Step::Manifest,
                method: "HEAD",
                url,
                status: status.as_u16(),
                retry_after: retry_after(resp.headers()),
                bearer_error,
            };
            return (fact, authorization);
        }
        // Both rounds ended in `continue` only if the fresh token was also invalid, which the
        // loop returns above; this is not reached.
        let fact = Fact::UnsupportedAuth {
            scheme: "bearer (token refused twice)".to_string(),
        };
        (fact, None)
    }

    /// Phase 2: what follows a found manifest (the node's platform) or a 404 (why, and what
    /// is close), with the credentials that got the answer.
    #[allow(clippy::too_many_arguments)]
    async fn follow_up(
        &self,
        state: &RegistryState,
        reference: &Reference,
        fact: Fact,
        authorization: Option<&str>,
        progress: &Progress,
        deadline: Instant,
        explain: bool,
    ) -> Fact {
        match fact {
            Fact::Found {
                digest,
                media_type,
                digest_invalid,
                ..
            } => {
                let mut fact = self
                    .follow_ups
                    .check_platform(
                        state,
                        reference,
                        digest,
                        media_type,
                        authorization,
                        progress,
                    )
                    .await;
                if let Fact::Found {
                    digest_invalid: flag,
                    ..
                } = &mut fact
                {
                    *flag = digest_invalid;
                }
                fact
            }
            // A host that is not the last of a route only needs to say "not here": the next
            // one is asked, and the last one explains a miss.
            Fact::Missing { url, .. } if !explain => Fact::Missing {
                url,
                repository_missing: None,
                suggestions: Vec::new(),
                some_tags: Vec::new(),
            },
            Fact::Missing { url, .. } => {
                let suggest_by = deadline
                    .checked_sub(SUGGESTION_MARGIN)
                    .unwrap_or_else(Instant::now);
                self.follow_ups
                    .explain_missing(state, reference, url, authorization, progress, suggest_by)
                    .await
            }
            other => other,
        }
    }

    /// Phase 3: a manifest 404 that nothing explained, at a host whose version check
    /// (`GET /v2/`) answers 404 too, is not a registry (a web server, a wrong path), not a
    /// missing image. The check is sent only then, anonymously and once per registry: the
    /// runtime never sends it, so it decides nothing else. A node configuration's own API
    /// root (`override_path`, a proxy project's path) need not answer it.
    async fn not_a_registry(&self, state: &RegistryState, fact: Fact, progress: &Progress) -> Fact {
        let unexplained = matches!(
            fact,
            Fact::Missing {
                repository_missing: None,
                ..
            }
        );
        if !unexplained || state.root != "/v2" {
            return fact;
        }
        let url = format!("{}{}/", state.base, state.root);
        let answers_404 = *state
            .version_404
            .get_or_init(|| async {
                progress.set(format!("GET {url}"));
                // No answer says nothing either way: the 404 stands.
                self.wire
                    .send(state.http.get(&url), "GET", &url)
                    .await
                    .is_ok_and(|r| r.status() == StatusCode::NOT_FOUND)
            })
            .await;
        if !answers_404 {
            return fact;
        }
        Fact::Status {
            step: Step::Ping,
            method: "GET",
            url,
            status: 404,
            retry_after: None,
            bearer_error: None,
        }
    }
}

/// A manifest `HEAD`'s success, as a fact: its digest (shown only when it reads as one) and
/// media type.
fn found(resp: &reqwest::Response, reference: &Reference) -> Fact {
    let header_text = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    // Shown only when it reads as a digest: a registry may echo anything here.
    let sent = resp
        .headers()
        .get("docker-content-digest")
        .map(|v| v.to_str().ok().filter(|d| is_digest(d)).map(str::to_string));
    Fact::Found {
        digest_invalid: matches!(sent, Some(None)),
        digest: sent.flatten().or_else(|| reference.digest.clone()),
        media_type: header_text("content-type"),
        platform_digest: None,
        platform: PlatformSeen::NotAsked,
    }
}
