//! The walk of one image's endpoints, as the node's runtime walks them: each endpoint of the
//! route in order (without a node configuration, the route is the image's own registry
//! alone), the first that has the image decides, and the verdict names every host asked.

use super::ATTEMPT_MIN;
use crate::keyring::Credential;
use crate::reference::Reference;
use crate::registry::{self, AuthUsed, Client, Fact, Probed, Progress, Verdict};
use crate::report::{Reason, Status};
use crate::route::hosts::HostsError;
use crate::route::{Endpoint, Route};
use tokio::time::Instant;

/// What one attempt over the route found.
pub(super) struct RouteAnswer {
    /// What the deciding endpoint answered.
    pub(super) outcome: Probed,
    /// Its verdict, with the hosts tried.
    pub(super) verdict: Verdict,
    /// Where the verdict came from, for the report (`endpoint`, `mirror_of`): only with a node
    /// configuration, and never for a blocked entry.
    pub(super) place: Option<(String, Option<String>)>,
    /// The endpoint as it was asked (plain HTTP when the HTTPS attempt fell back), for the
    /// requests that follow a verdict (the start check's config read); `None` without a node
    /// configuration, where they go to the image's own registry.
    pub(super) asked: Option<Endpoint>,
}

/// One endpoint's answer: the endpoint, the URL asked, what it said and its verdict.
type Asked<'a> = (&'a Endpoint, String, Probed, Verdict);

/// An outcome of no request (a blocked entry, a configuration that cannot be used).
fn no_request() -> Probed {
    Probed {
        fact: Fact::UnsupportedAuth {
            scheme: String::new(),
        },
        auth: AuthUsed::Anonymous,
        tried: Vec::new(),
    }
}

/// What one image's walk needs of its check: the route, the image, and the client that asks.
pub(super) struct Walk<'a> {
    /// The node's route for the image, or why its configuration cannot be used.
    pub(super) route: &'a Result<Route, HostsError>,
    pub(super) reference: &'a Reference,
    /// Whether a node configuration made the route (the report then names the endpoint).
    pub(super) configured: bool,
    pub(super) client: &'a Client,
    /// The check's own deadline: a time-out at it is reported as the deadline's.
    pub(super) deadline: Instant,
}

impl Walk<'_> {
    /// One attempt over the route, as the runtime walks it: endpoints in order, the first that
    /// has the image (or has it without the node's platform) decides. Otherwise the verdict is
    /// `unreachable` if any endpoint could not be reached, else a refusal if any refused, else
    /// `not_found`, and its message names every endpoint and its answer.
    ///
    /// Credentials go only to endpoints that may have them ([`Endpoint::credentials`]): every
    /// host of a hosts.toml, but a registries.conf mirror elsewhere is asked anonymously.
    pub(super) async fn run(
        &self,
        credentials: &[&Credential],
        attempt_deadline: Instant,
    ) -> RouteAnswer {
        let route = match &self.route {
            Ok(r) => r,
            Err(e) => {
                let verdict = Verdict::new(
                    Reason::NodeConfiguration,
                    format!(
                        "{}: the node's registry configuration cannot be used: {e}",
                        self.reference
                    ),
                );
                return RouteAnswer {
                    outcome: no_request(),
                    verdict,
                    place: None,
                    asked: None,
                };
            }
        };
        let mut answers = self.ask_each(route, credentials, attempt_deadline).await;
        let trail = self.trail(&answers, credentials);
        let Some(index) = decisive(&answers) else {
            return self.no_endpoint(route);
        };
        let (endpoint, url, outcome, mut verdict) = answers.swap_remove(index);
        let asked = if endpoint.http_fallback && url.starts_with("http://") {
            endpoint.plain()
        } else {
            endpoint.clone()
        };
        if trail.len() > 1 || endpoint.mirror_of.is_some() {
            verdict
                .message
                .push_str(&format!("; hosts tried: {}", trail.join(", ")));
        }
        for n in &route.notes {
            verdict.message.push_str("; ");
            verdict.message.push_str(n);
        }
        let place = if endpoint.blocked.is_some() || !self.configured {
            None
        } else {
            Some((url, endpoint.mirror_of.clone()))
        };
        RouteAnswer {
            outcome,
            verdict,
            place,
            asked: self.configured.then_some(asked),
        }
    }

    /// Asks the route's endpoints in order until one decides (has the image, or has it
    /// without the node's platform); a blocked entry, or one whose certificates cannot be used,
    /// answers without a request.
    async fn ask_each<'r>(
        &self,
        route: &'r Route,
        credentials: &[&Credential],
        attempt_deadline: Instant,
    ) -> Vec<Asked<'r>> {
        let mut answers: Vec<Asked<'r>> = Vec::new();
        let count = route.endpoints.len();
        for (i, endpoint) in route.endpoints.iter().enumerate() {
            if let Some(file) = &endpoint.blocked {
                let verdict = Verdict::new(
                    Reason::Blocked,
                    format!(
                        "{}: blocked by {file}: the node's runtime refuses to pull it (no request sent)",
                        endpoint.reference
                    ),
                );
                let url = format!("{} (blocked)", endpoint.host);
                answers.push((endpoint, url, no_request(), verdict));
                continue;
            }
            if let Some(why) = &endpoint.broken {
                // containers/image fails this pull source and goes on to the next one.
                let verdict = Verdict::new(
                    Reason::NodeConfiguration,
                    format!(
                        "{}: the node's certificates for {} cannot be used: {why} (no request sent)",
                        endpoint.reference, endpoint.reference.registry
                    ),
                );
                answers.push((endpoint, endpoint.url(), no_request(), verdict));
                continue;
            }
            // A fair share of what is left, so that one endpoint that hangs leaves time for
            // the next, as the runtime's per-host timeouts do.
            let now = Instant::now();
            let left = attempt_deadline.saturating_duration_since(now);
            let share = left / u32::try_from(count - i).unwrap_or(1).max(1);
            let endpoint_deadline = (now + share.max(ATTEMPT_MIN.min(left))).min(attempt_deadline);
            let last = i + 1 == count;
            let pinned = self.may_send_credentials(endpoint);
            let creds: &[&Credential] = if pinned { credentials } else { &[] };
            let mut outcome = self
                .probe_endpoint(endpoint, creds, endpoint_deadline, last)
                .await;
            let unreachable = matches!(
                outcome.fact,
                Fact::Transport {
                    step: registry::Step::Manifest,
                    ..
                }
            );
            let mut url = endpoint.url();
            if endpoint.http_fallback && unreachable {
                let plain = endpoint.plain();
                outcome = self
                    .probe_endpoint(&plain, creds, endpoint_deadline, last)
                    .await;
                url = plain.url();
            }
            let mut verdict = registry::classify(&endpoint.reference, &outcome);
            if matches!(verdict.status(), Status::Unauthorized | Status::Denied)
                && !pinned
                && !credentials.is_empty()
            {
                verdict.message.push_str(&format!(
                    " (asked anonymously: the pod's credentials for {} are not sent to a registries.conf mirror on another host, as containers/image resets them)",
                    self.reference.registry
                ));
            }
            let decisive = matches!(verdict.status(), Status::Ok | Status::WrongPlatform);
            answers.push((endpoint, url, outcome, verdict));
            if decisive {
                break;
            }
        }
        answers
    }

    /// Each endpoint asked and its answer, for the message: `URL: status (reason)`.
    fn trail(&self, answers: &[Asked<'_>], credentials: &[&Credential]) -> Vec<String> {
        answers
            .iter()
            .map(|(e, url, _, v)| {
                let anonymous = !self.may_send_credentials(e)
                    && !credentials.is_empty()
                    && matches!(v.status(), Status::Unauthorized | Status::Denied);
                let note = if anonymous {
                    " (asked anonymously)"
                } else {
                    ""
                };
                format!("{url}: {} ({}){note}", v.status().as_str(), v.reason)
            })
            .collect()
    }

    /// The verdict when the configuration leaves no host to ask.
    fn no_endpoint(&self, route: &Route) -> RouteAnswer {
        let mut message = format!(
            "{}: the node's configuration leaves no host to ask",
            self.reference
        );
        for n in &route.notes {
            message.push_str("; ");
            message.push_str(n);
        }
        RouteAnswer {
            outcome: no_request(),
            verdict: Verdict::new(Reason::NoEndpoint, message),
            place: None,
            asked: None,
        }
    }

    /// The pod's credentials were chosen for the image's own registry: they go to an endpoint
    /// only when the route allows it ([`Endpoint::credentials`]), and then to that registry's
    /// host, or to a mirror that stands in for it (containerd's hosts.toml, whose CRI plugin
    /// offers them to every host); a short name's search registry is another host, and is
    /// asked anonymously.
    fn may_send_credentials(&self, endpoint: &Endpoint) -> bool {
        endpoint.credentials
            && (endpoint.mirror_of.is_some()
                || crate::route::is_upstream(&endpoint.host, &self.reference.registry))
    }

    async fn probe_endpoint(
        &self,
        endpoint: &Endpoint,
        credentials: &[&Credential],
        deadline: Instant,
        explain: bool,
    ) -> Probed {
        let progress = Progress::default();
        let probe = self
            .client
            .probe_at(endpoint, credentials, &progress, deadline, explain);
        match tokio::time::timeout_at(deadline, probe).await {
            Ok(outcome) => outcome,
            Err(_) => Probed {
                fact: Fact::TimedOut {
                    waiting_for: progress.get(),
                    deadline: deadline >= self.deadline,
                },
                auth: AuthUsed::Anonymous,
                tried: Vec::new(),
            },
        }
    }
}

/// The answer that decides: the first that has the image (or has it without the node's
/// platform), else the first that could not reach its endpoint, else the first refusal, else
/// the last (every host said 404: the last one was asked to explain, with tags and
/// suggestions).
fn decisive(answers: &[Asked<'_>]) -> Option<usize> {
    let first = |wanted: &[Status]| {
        answers
            .iter()
            .position(|(_, _, _, v)| wanted.contains(&v.status()))
    };
    first(&[Status::Ok, Status::WrongPlatform])
        .or_else(|| first(&[Status::Unreachable, Status::Unverifiable]))
        .or_else(|| first(&[Status::Unauthorized, Status::Denied]))
        .or_else(|| answers.len().checked_sub(1))
}
