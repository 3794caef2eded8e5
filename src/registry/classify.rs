//! Every outcome of a probe becomes a verdict here, and only here: a status, a machine-readable
//! reason, a message that names the image, the registry and what was tried, a hint that says
//! what to do next, and whether retrying could help.
//!
//! The rule for retries: transient failures (connect errors, time-outs, 5xx, 429) are retried
//! inside the deadline; permanent ones (404, 401, 403, certificate errors) never are, because
//! waiting will not change them. A 429 and "no such host" are retried only so often per
//! registry in a run (the check counts them).

use super::{AuthUsed, Fact, PlatformSeen, Probed, Step, TlsFailure};
use crate::reference::Reference;
use crate::report::{ContainerStart, Reason, StartStatus, Status};
use std::time::Duration;

/// The verdict on one probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// A finer machine-readable reason (`tag_missing`, `credentials_rejected`, `timeout`, …),
    /// which gives the status.
    pub(crate) reason: Reason,
    /// What happened, naming the image, the registry and what was tried.
    pub(crate) message: String,
    /// What to do next (empty when fine).
    pub(crate) hint: String,
    /// `Some` when retrying may help, with the wait the registry asked for, if any.
    pub(crate) retry: Option<Option<Duration>>,
    /// The digest, when found.
    pub(crate) digest: Option<String>,
    /// The index entry for the node's platform, when an index was checked.
    pub(crate) platform_digest: Option<String>,
    /// On a found image: whether its platform was checked, and if not, why.
    pub(crate) platform: Option<PlatformSeen>,
    /// The platforms an image has, when none fits the node.
    pub(crate) available_platforms: Vec<String>,
    /// Close tags or repositories, when one is missing.
    pub(crate) suggestions: Vec<String>,
    /// When no tag is close to a missing one: a few the repository has.
    pub(crate) some_tags: Vec<String>,
}

impl Verdict {
    /// A verdict that is final (no retry), names no digest, and has the reason's own hint.
    pub(crate) fn new(reason: Reason, message: String) -> Verdict {
        Verdict {
            reason,
            message,
            hint: reason.hint().to_string(),
            retry: None,
            digest: None,
            platform_digest: None,
            platform: None,
            available_platforms: Vec::new(),
            suggestions: Vec::new(),
            some_tags: Vec::new(),
        }
    }

    /// The status the reason gives.
    pub(crate) fn status(&self) -> Status {
        self.reason.status()
    }

    /// A hint more precise than the reason's own, for this case.
    fn with_hint(mut self, hint: &str) -> Verdict {
        self.hint = hint.to_string();
        self
    }

    fn retry(mut self, after: Option<Duration>) -> Verdict {
        self.retry = Some(after);
        self
    }
}

/// Turns what a probe found into a verdict: each kind of fact is worded by its own function.
pub fn classify(reference: &Reference, outcome: &Probed) -> Verdict {
    let words = Words::new(reference, outcome);
    let Words {
        image, registry, ..
    } = &words;
    match &outcome.fact {
        Fact::Found {
            digest,
            platform_digest,
            platform,
            digest_invalid,
            ..
        } => words.found(digest, platform_digest, *platform, *digest_invalid),
        Fact::WrongPlatform {
            digest,
            wanted,
            available,
            more_platforms,
        } => words.wrong_platform(digest, wanted, available, *more_platforms),
        Fact::Missing {
            url,
            repository_missing,
            suggestions,
            some_tags,
        } => with_some_tags(
            some_tags,
            with_suggestions(suggestions, words.missing(url, *repository_missing)),
        ),
        Fact::Status {
            step,
            method,
            url,
            status,
            retry_after,
            bearer_error,
        } => {
            let request = format!("{method} {url} answered {status}");
            words.answered(
                *step,
                *status,
                &request,
                *retry_after,
                bearer_error.as_deref(),
            )
        }
        Fact::Transport {
            method,
            url,
            detail,
            tls,
            timeout,
            redirect,
            no_such_host,
            ..
        } => {
            let broken = Broken::of(*tls, *timeout, *redirect, *no_such_host);
            words.transport(broken, method, url, detail)
        }
        Fact::NotAnImage { url, what } => Verdict::new(
            Reason::NotAnImage,
            format!(
                "{image}: {registry} holds an OCI artifact there, not an image ({what}; {url}): the runtime refuses to pull it (containerd: mismatched image rootfs and manifest layers)"
            ),
        ),
        Fact::UnsupportedAuth { scheme } => Verdict::new(
            Reason::UnsupportedAuth,
            format!(
                "{image}: {registry} asks for authentication scheme {scheme:?}, which pullcheck does not speak (Basic and Bearer only)"
            ),
        ),
        Fact::BadTokenAnswer { realm } => Verdict::new(
            Reason::BadTokenAnswer,
            format!("{image}: the token server {realm} of {registry} answered without a token"),
        )
        .retry(None),
        Fact::BadRealm { realm } => Verdict::new(
            Reason::BadRealm,
            format!(
                "{image}: {registry} names a token server that is not a valid URL (realm {realm:?}), so no token can be asked for"
            ),
        ),
        Fact::InsecureRealm { realm } => Verdict::new(
            Reason::InsecureRealm,
            format!(
                "{image}: {registry} sends credentials to the plain-HTTP token server {realm}; pullcheck did not send them"
            ),
        ),
        Fact::TimedOut {
            waiting_for,
            deadline,
        } => words.timed_out(waiting_for, *deadline),
    }
}

/// What every message names: the image, its registry and repository, the credential used and
/// those tried, and what was asked for (a tag, a digest).
struct Words<'a> {
    reference: &'a Reference,
    outcome: &'a Probed,
    image: String,
    registry: &'a str,
    repo: &'a str,
    who: String,
    tried: String,
    what: String,
}

/// How a request failed below HTTP, most telling first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broken {
    /// The resolver says the host does not exist.
    NoSuchHost,
    /// A redirect loop, or a downgrade to plain HTTP.
    Redirect,
    /// The registry answered TLS in plain HTTP.
    PlainHttp,
    /// A certificate or handshake failure.
    Tls,
    /// No answer in time.
    Timeout,
    /// Any other connection failure.
    Connect,
}

impl Broken {
    fn of(tls: Option<TlsFailure>, timeout: bool, redirect: bool, no_such_host: bool) -> Broken {
        if no_such_host {
            Broken::NoSuchHost
        } else if redirect {
            Broken::Redirect
        } else if tls == Some(TlsFailure::PlainHttpAnswer) {
            Broken::PlainHttp
        } else if tls.is_some() {
            Broken::Tls
        } else if timeout {
            Broken::Timeout
        } else {
            Broken::Connect
        }
    }
}

impl<'a> Words<'a> {
    fn new(reference: &'a Reference, outcome: &'a Probed) -> Words<'a> {
        Words {
            reference,
            outcome,
            image: reference.to_string(),
            registry: &reference.registry,
            repo: &reference.repository,
            who: describe_auth(&outcome.auth),
            tried: describe_tried(&outcome.tried),
            what: match (&reference.digest, &reference.tag) {
                (Some(d), _) => format!("digest {d}"),
                (None, Some(t)) => format!("tag {t:?}"),
                (None, None) => "manifest".to_string(),
            },
        }
    }

    /// The manifest was found.
    fn found(
        &self,
        digest: &Option<String>,
        platform_digest: &Option<String>,
        platform: PlatformSeen,
        digest_invalid: bool,
    ) -> Verdict {
        let Words {
            image, registry, ..
        } = self;
        let invalid = "the registry sent an invalid Docker-Content-Digest, not shown";
        let shown = match (digest, digest_invalid) {
            (Some(d), false) => d.clone(),
            (Some(d), true) => format!("{d}; {invalid}"),
            (None, true) => invalid.to_string(),
            (None, false) => "digest not reported".to_string(),
        };
        let mut v = Verdict::new(
            Reason::Found,
            format!("{image}: manifest found on {registry} ({shown})"),
        );
        v.digest = digest.clone();
        v.platform_digest = platform_digest.clone();
        v.platform = Some(platform);
        v
    }

    /// The image has no variant for the node's platform.
    fn wrong_platform(
        &self,
        digest: &Option<String>,
        wanted: &str,
        available: &[String],
        more_platforms: usize,
    ) -> Verdict {
        let Words {
            image, registry, ..
        } = self;
        let more = if more_platforms > 0 {
            format!(", and {more_platforms} more")
        } else if available.is_empty() {
            // Only attestations, or no entry at all: containerd says "no match for
            // platform in manifest".
            "none (the index lists no manifest a node can run: only attestations, or nothing)"
                .to_string()
        } else {
            String::new()
        };
        let mut v = Verdict::new(
            Reason::NoMatchingPlatform,
            format!(
                "{image}: no {wanted} variant; available: {}{more} (manifest {} on {registry})",
                available.join(", "),
                digest.as_deref().unwrap_or("without digest")
            ),
        );
        v.digest = digest.clone();
        v.available_platforms = available.to_vec();
        v
    }

    /// The manifest is missing: the repository, the tag or digest, or the registry did not
    /// say which.
    fn missing(&self, url: &str, repository_missing: Option<bool>) -> Verdict {
        let Words {
            image,
            registry,
            repo,
            who,
            what,
            reference,
            ..
        } = self;
        match repository_missing {
            Some(true) => Verdict::new(
                Reason::RepositoryMissing,
                format!(
                    "{image}: repository {repo} does not exist on {registry} (HEAD {url} answered 404; tags/list answered NAME_UNKNOWN; {who})"
                ),
            ),
            Some(false) => Verdict::new(
                if reference.digest.is_some() {
                    Reason::DigestMissing
                } else {
                    Reason::TagMissing
                },
                format!(
                    "{image}: {what} not found in repository {repo} on {registry}, which exists (HEAD {url} answered 404; {who})"
                ),
            ),
            None => Verdict::new(
                Reason::ManifestMissing,
                format!("{image}: {what} not found on {registry} (HEAD {url} answered 404; {who})"),
            ),
        }
    }

    /// An HTTP answer that is not the manifest: by the step that got it and its status.
    fn answered(
        &self,
        step: Step,
        status: u16,
        request: &str,
        retry_after: Option<Duration>,
        bearer_error: Option<&str>,
    ) -> Verdict {
        let Words {
            image,
            registry,
            repo,
            tried,
            what,
            outcome,
            ..
        } = self;
        match (step, status) {
            (Step::Manifest, 401) if bearer_error == Some("insufficient_scope") => Verdict::new(
                Reason::InsufficientScope,
                format!(
                    "{image}: {registry} refused access to {repo} ({request}, insufficient_scope): the repository does not exist, or it is private and the credentials used ({tried}) have no access"
                ),
            ),
            (Step::Manifest, 401) if outcome.auth == AuthUsed::Anonymous => Verdict::new(
                Reason::NoCredentials,
                format!(
                    "{image}: {registry} requires credentials and none matched it ({request}, anonymous)"
                ),
            ),
            (Step::Manifest, 401) => Verdict::new(
                Reason::CredentialsRejected,
                format!(
                    "{image}: credentials for {tried} at registry {registry} were rejected ({request})"
                ),
            ),
            (Step::Token, 401 | 403) if outcome.auth == AuthUsed::Anonymous => Verdict::new(
                Reason::NoCredentials,
                format!(
                    "{image}: the token server of {registry} refused anonymous access ({request})"
                ),
            )
            .with_hint(crate::report::TOKEN_ANONYMOUS_HINT),
            (Step::Token, 401 | 403) => Verdict::new(
                Reason::CredentialsRejected,
                format!(
                    "{image}: credentials for {tried} at registry {registry} were rejected by its token server ({request})"
                ),
            ),
            (Step::Manifest, 403) => Verdict::new(
                Reason::Denied,
                format!("{image}: {registry} denied access to {repo} ({request}; tried {tried})"),
            ),
            // The HEAD found the manifest, then the GET of that same index (or of its
            // config) is refused or missing: as permanent as the same answer to the HEAD.
            (Step::Platform, 401) => Verdict::new(
                Reason::IndexUnauthorized,
                format!(
                    "{image}: {registry} answers the manifest HEAD but refuses the GET that reads it ({request}; tried {tried}): a pull GETs it too, so the pull would fail"
                ),
            ),
            (Step::Platform, 403) => Verdict::new(
                Reason::IndexDenied,
                format!(
                    "{image}: {registry} answers the manifest HEAD but denies the GET that reads it ({request}; tried {tried}): a pull GETs it too, so the pull would fail"
                ),
            ),
            (Step::Platform, 404) => Verdict::new(
                Reason::IndexMissing,
                format!(
                    "{image}: {registry} lists {what} (its HEAD answered) but does not serve it ({request}): a pull would fail"
                ),
            ),
            // Retried, after its Retry-After; the check stops after a registry's second 429 in
            // a run, the token server's included: asking again only adds to its load.
            (_, 429) => Verdict::new(
                Reason::RateLimited,
                format!("{image}: {registry} is rate-limiting requests ({request})"),
            )
            .retry(retry_after),
            (_, 500..=599) => Verdict::new(
                Reason::ServerError,
                format!("{image}: {registry} failed ({request})"),
            )
            .retry(retry_after),
            (Step::Ping, _) => Verdict::new(
                Reason::NotARegistry,
                format!(
                    "{image}: {registry} does not answer as an OCI registry ({request}; a registry answers 200 or 401)"
                ),
            ),
            _ => Verdict::new(
                Reason::UnexpectedStatus,
                format!("{image}: {registry} gave an unexpected answer ({request})"),
            ),
        }
    }

    /// A request that failed below HTTP.
    fn transport(&self, broken: Broken, method: &str, url: &str, detail: &str) -> Verdict {
        let Words {
            image, registry, ..
        } = self;
        match broken {
            Broken::NoSuchHost => {
                // Retried (a cluster's DNS can be wrong for a moment); the check stops after the
                // resolver said it twice for a registry. Permanent for this pod, not for the
                // node, which may resolve it through its own DNS or /etc/hosts: exit 8, not 6.
                Verdict::new(
                    Reason::NoSuchHost,
                    format!(
                        "{image}: the resolver says the host of {method} {url} does not exist ({detail})"
                    ),
                )
                .retry(None)
            }
            Broken::Redirect => {
                // A redirect loop or a downgrade to plain HTTP is the registry's set-up: it
                // will not change by retrying.
                Verdict::new(
                    Reason::Redirect,
                    format!(
                        "{image}: {registry} redirects where pullcheck will not follow ({method} {url}: {detail})"
                    ),
                )
            }
            Broken::PlainHttp => {
                // The registry speaks plain HTTP; asking again over TLS gets the same answer.
                // Loopback registries never end here (they are asked in plain HTTP, as
                // containerd asks them), unless a node configuration names HTTPS for them.
                Verdict::new(
                    Reason::PlainHttp,
                    format!(
                        "{image}: {registry} answers in plain HTTP: add --plain-http {registry} ({method} {url}: {detail})"
                    ),
                )
                .with_hint(&format!(
                    "Add --plain-http {registry}; the node pulls it only if its runtime is told so too (containerd: an http:// host in its hosts.toml; CRI-O: insecure = true in registries.conf)."
                ))
            }
            Broken::Tls => {
                // A certificate this pod does not trust (or a handshake it cannot make) will
                // not change by retrying, but the node may trust a CA the pod lacks: exit 8.
                Verdict::new(
                    Reason::Tls,
                    format!("{image}: TLS with {registry} failed ({method} {url}: {detail})"),
                )
            }
            Broken::Timeout => {
                Verdict::new(
                    Reason::Timeout,
                    format!("{image}: {registry} timed out ({method} {url}: {detail})"),
                )
                .with_hint("Check that the registry is reachable from the node (network policy, proxy, firewall).")
                .retry(None)
            }
            Broken::Connect => {
                Verdict::new(
                    Reason::Connect,
                    format!("{image}: cannot reach {registry} ({method} {url}: {detail})"),
                )
                .retry(None)
            }
        }
    }

    /// No answer before the attempt's end, or the run's (`deadline`: not retried).
    fn timed_out(&self, waiting_for: &str, deadline: bool) -> Verdict {
        let Words {
            image, registry, ..
        } = self;
        let waiting = if waiting_for.is_empty() {
            String::new()
        } else {
            format!(" waiting for {waiting_for}")
        };
        let v = Verdict::new(
            Reason::Timeout,
            format!("{image}: {registry} timed out{waiting}"),
        );
        if deadline { v } else { v.retry(None) }
    }
}

/// The verdict on an image once its containers' start was predicted ([`crate::container_start`]): an
/// image that can be pulled is `wont_start` when a container using it will not start; any other
/// verdict stands, since a pull failure comes first (and has the lower exit code).
pub fn classify_start(
    reference: &Reference,
    verdict: Verdict,
    containers: &[ContainerStart],
) -> Verdict {
    if verdict.status() != Status::Ok {
        return verdict;
    }
    match wont_start(reference, containers) {
        Some((reason, message, hint)) => Verdict {
            reason,
            message,
            hint,
            ..verdict
        },
        None => verdict,
    }
}

/// The reason, message and hint of an image that can be pulled (or is on the node) but has a
/// container that will not start; `None` when every container starts or is unknown.
pub fn wont_start(
    reference: &Reference,
    containers: &[ContainerStart],
) -> Option<(Reason, String, String)> {
    let refused: Vec<&ContainerStart> = containers
        .iter()
        .filter(|c| c.start == StartStatus::WontStart && c.reason.refused().is_some())
        .collect();
    let first = refused.first()?.reason.refused()?;
    let mut hints: Vec<&str> = Vec::new();
    for c in &refused {
        if !hints.contains(&c.hint.as_str()) {
            hints.push(&c.hint);
        }
    }
    let reasons: Vec<&str> = refused.iter().map(|c| c.message.as_str()).collect();
    Some((
        first,
        format!(
            "{reference}: can be pulled, but will not start: {}; the kubelet retries such a container for ever and the pod never fails",
            reasons.join("; ")
        ),
        hints.join(" "),
    ))
}

/// Adds "no tag is close; the repository has …" to a not-found verdict without suggestions.
fn with_some_tags(some_tags: &[String], mut v: Verdict) -> Verdict {
    if !some_tags.is_empty() && v.suggestions.is_empty() {
        // The registry's answer: scrubbed of the run's secrets like any foreign text.
        let some_tags: Vec<String> = some_tags
            .iter()
            .map(|t| crate::redact::foreign(t))
            .collect();
        v.message.push_str(&format!(
            "; no tag is close; tags the repository has include {}",
            some_tags.join(", ")
        ));
        v.some_tags = some_tags;
    }
    v
}

/// Adds "did you mean …" to a not-found verdict.
fn with_suggestions(suggestions: &[String], mut v: Verdict) -> Verdict {
    if !suggestions.is_empty() {
        // Names from the registry's answer: scrubbed like any foreign text.
        let suggestions: Vec<String> = suggestions
            .iter()
            .map(|t| crate::redact::foreign(t))
            .collect();
        v.message
            .push_str(&format!("; did you mean {}?", suggestions.join(", ")));
        v.suggestions = suggestions;
    }
    v
}

fn describe_auth(auth: &AuthUsed) -> String {
    match auth {
        AuthUsed::Anonymous => "anonymous".to_string(),
        AuthUsed::Credential { username, source } => format!("as user {username} from {source}"),
    }
}

fn describe_tried(tried: &[AuthUsed]) -> String {
    if tried.is_empty() {
        return "none".to_string();
    }
    tried
        .iter()
        .map(|a| match a {
            AuthUsed::Anonymous => "none (anonymous)".to_string(),
            AuthUsed::Credential { username, source } => format!("user {username} from {source}"),
        })
        .collect::<Vec<_>>()
        .join(", then ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::StartReason;

    fn reference(s: &str) -> Reference {
        Reference::parse(s).unwrap()
    }

    fn outcome(fact: Fact, auth: AuthUsed) -> Probed {
        Probed {
            fact,
            tried: vec![auth.clone()],
            auth,
        }
    }

    fn status(step: Step, code: u16, bearer_error: Option<&str>) -> Fact {
        Fact::Status {
            step,
            method: if step == Step::Manifest {
                "HEAD"
            } else {
                "GET"
            },
            url: "https://r.io/v2/x".into(),
            status: code,
            retry_after: None,
            bearer_error: bearer_error.map(str::to_string),
        }
    }

    fn alice() -> AuthUsed {
        AuthUsed::Credential {
            username: "alice".into(),
            source: "secret regcred, key r.io".into(),
        }
    }

    #[test]
    fn classification_table() {
        let cases: Vec<(&str, Fact, AuthUsed, Status, Reason, bool)> = vec![
            (
                "found",
                Fact::Found {
                    digest: Some("sha256:1".into()),
                    media_type: None,
                    platform_digest: None,
                    platform: PlatformSeen::Checked,
                    digest_invalid: false,
                },
                AuthUsed::Anonymous,
                Status::Ok,
                Reason::Found,
                false,
            ),
            (
                "repo missing",
                Fact::Missing {
                    url: "u".into(),
                    repository_missing: Some(true),
                    suggestions: vec![],
                    some_tags: vec![],
                },
                AuthUsed::Anonymous,
                Status::NotFound,
                Reason::RepositoryMissing,
                false,
            ),
            (
                "tag missing",
                Fact::Missing {
                    url: "u".into(),
                    repository_missing: Some(false),
                    suggestions: vec!["v2".into(), "v1.1".into()],
                    some_tags: vec![],
                },
                AuthUsed::Anonymous,
                Status::NotFound,
                Reason::TagMissing,
                false,
            ),
            (
                "unknown missing",
                Fact::Missing {
                    url: "u".into(),
                    repository_missing: None,
                    suggestions: vec![],
                    some_tags: vec![],
                },
                AuthUsed::Anonymous,
                Status::NotFound,
                Reason::ManifestMissing,
                false,
            ),
            (
                "anonymous 401",
                status(Step::Manifest, 401, None),
                AuthUsed::Anonymous,
                Status::Unauthorized,
                Reason::NoCredentials,
                false,
            ),
            (
                "rejected 401",
                status(Step::Manifest, 401, None),
                alice(),
                Status::Unauthorized,
                Reason::CredentialsRejected,
                false,
            ),
            (
                "scope 401",
                status(Step::Manifest, 401, Some("insufficient_scope")),
                alice(),
                Status::Unauthorized,
                Reason::InsufficientScope,
                false,
            ),
            (
                "index GET 401",
                status(Step::Platform, 401, None),
                alice(),
                Status::Unauthorized,
                Reason::IndexUnauthorized,
                false,
            ),
            (
                "index GET 403",
                status(Step::Platform, 403, None),
                alice(),
                Status::Denied,
                Reason::IndexDenied,
                false,
            ),
            (
                "index GET 404",
                status(Step::Platform, 404, None),
                AuthUsed::Anonymous,
                Status::NotFound,
                Reason::IndexMissing,
                false,
            ),
            (
                "bad realm",
                Fact::BadRealm {
                    realm: "https://tok\u{fffd}en".into(),
                },
                AuthUsed::Anonymous,
                Status::Unauthorized,
                Reason::BadRealm,
                false,
            ),
            (
                "token 401",
                status(Step::Token, 401, None),
                alice(),
                Status::Unauthorized,
                Reason::CredentialsRejected,
                false,
            ),
            (
                "token 401 anonymous",
                status(Step::Token, 401, None),
                AuthUsed::Anonymous,
                Status::Unauthorized,
                Reason::NoCredentials,
                false,
            ),
            (
                "403",
                status(Step::Manifest, 403, None),
                alice(),
                Status::Denied,
                Reason::Denied,
                false,
            ),
            (
                "429",
                status(Step::Manifest, 429, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::RateLimited,
                true,
            ),
            (
                "503",
                status(Step::Manifest, 503, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::ServerError,
                true,
            ),
            (
                "ping 503",
                status(Step::Ping, 503, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::ServerError,
                true,
            ),
            (
                "ping 404",
                status(Step::Ping, 404, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::NotARegistry,
                false,
            ),
            (
                "tls",
                Fact::Transport {
                    step: Step::Ping,
                    method: "GET",
                    url: "u".into(),
                    detail: "bad cert".into(),
                    tls: Some(TlsFailure::Certificate),
                    timeout: false,
                    redirect: false,
                    no_such_host: false,
                },
                AuthUsed::Anonymous,
                Status::Unverifiable,
                Reason::Tls,
                false,
            ),
            (
                "plain HTTP asked over TLS",
                Fact::Transport {
                    step: Step::Ping,
                    method: "GET",
                    url: "https://r.io/v2/".into(),
                    detail: "received corrupt message of type InvalidContentType".into(),
                    tls: Some(TlsFailure::PlainHttpAnswer),
                    timeout: false,
                    redirect: false,
                    no_such_host: false,
                },
                AuthUsed::Anonymous,
                Status::Unverifiable,
                Reason::PlainHttp,
                false,
            ),
            (
                "no such host",
                Fact::Transport {
                    step: Step::Ping,
                    method: "GET",
                    url: "https://r.io/v2/".into(),
                    detail: "dns error: no such host".into(),
                    tls: None,
                    timeout: false,
                    redirect: false,
                    no_such_host: true,
                },
                AuthUsed::Anonymous,
                Status::Unverifiable,
                Reason::NoSuchHost,
                true,
            ),
            (
                "connect",
                Fact::Transport {
                    step: Step::Ping,
                    method: "GET",
                    url: "u".into(),
                    detail: "refused".into(),
                    tls: None,
                    timeout: false,
                    redirect: false,
                    no_such_host: false,
                },
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::Connect,
                true,
            ),
            (
                "redirect loop",
                Fact::Transport {
                    step: Step::Manifest,
                    method: "HEAD",
                    url: "u".into(),
                    detail: "more than 5 redirects".into(),
                    tls: None,
                    timeout: false,
                    redirect: true,
                    no_such_host: false,
                },
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::Redirect,
                false,
            ),
            (
                "attempt timeout",
                Fact::TimedOut {
                    waiting_for: "HEAD u".into(),
                    deadline: false,
                },
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::Timeout,
                true,
            ),
            (
                "deadline",
                Fact::TimedOut {
                    waiting_for: "HEAD u".into(),
                    deadline: true,
                },
                AuthUsed::Anonymous,
                Status::Unreachable,
                Reason::Timeout,
                false,
            ),
            (
                "artifact",
                Fact::NotAnImage {
                    url: "GET u".into(),
                    what: "config media type application/vnd.cncf.helm.config.v1+json".into(),
                },
                AuthUsed::Anonymous,
                Status::NotFound,
                Reason::NotAnImage,
                false,
            ),
            (
                "insecure realm",
                Fact::InsecureRealm {
                    realm: "http://t".into(),
                },
                alice(),
                Status::Unauthorized,
                Reason::InsecureRealm,
                false,
            ),
        ];
        let r = reference("r.io/team/app:v1");
        for (name, fact, auth, want_status, want_reason, want_retry) in cases {
            let v = classify(&r, &outcome(fact, auth));
            assert_eq!(v.status(), want_status, "{name}");
            assert_eq!(v.reason, want_reason, "{name}");
            assert_eq!(v.retry.is_some(), want_retry, "{name}");
            assert!(
                v.message.contains("r.io/team/app:v1"),
                "{name}: {}",
                v.message
            );
            assert!(v.message.contains("r.io"), "{name}");
            if want_status != Status::Ok {
                assert!(!v.hint.is_empty(), "{name}");
            }
        }
    }

    #[test]
    fn digest_missing_says_digest() {
        let d = format!("sha256:{}", "a".repeat(64));
        let r = reference(&format!("r.io/x@{d}"));
        let v = classify(
            &r,
            &outcome(
                Fact::Missing {
                    url: "u".into(),
                    repository_missing: Some(false),
                    suggestions: vec!["v2".into(), "v1.1".into()],
                    some_tags: vec![],
                },
                AuthUsed::Anonymous,
            ),
        );
        assert_eq!(v.reason, Reason::DigestMissing);
        assert!(v.message.contains(&d));
        assert!(
            v.message.ends_with("; did you mean v2, v1.1?"),
            "{}",
            v.message
        );
        assert_eq!(v.suggestions, ["v2", "v1.1"]);
    }

    #[test]
    fn retry_after_is_kept() {
        let fact = Fact::Status {
            step: Step::Manifest,
            method: "HEAD",
            url: "u".into(),
            status: 429,
            retry_after: Some(Duration::from_secs(3)),
            bearer_error: None,
        };
        let v = classify(&reference("r.io/x"), &outcome(fact, AuthUsed::Anonymous));
        assert_eq!(v.retry, Some(Some(Duration::from_secs(3))));
    }

    #[test]
    fn start_predictions_turn_only_a_pullable_image_into_wont_start() {
        let container = |name: &str, start: StartStatus, reason: StartReason| ContainerStart {
            name: name.into(),
            start,
            reason,
            message: format!("container {name:?}: {reason}"),
            hint: if start == StartStatus::WontStart {
                format!("fix {reason}")
            } else {
                String::new()
            },
        };
        let found = Fact::Found {
            digest: Some("sha256:1".into()),
            media_type: None,
            platform_digest: None,
            platform: PlatformSeen::Checked,
            digest_invalid: false,
        };
        let r = reference("r.io/x");
        let ok = classify(&r, &outcome(found, AuthUsed::Anonymous));
        let containers = [
            container("a", StartStatus::Ok, StartReason::Spec),
            container(
                "b",
                StartStatus::WontStart,
                StartReason::WontStart(Reason::NoCommand),
            ),
            container("c", StartStatus::Unknown, StartReason::ConfigNotRead),
            container(
                "d",
                StartStatus::WontStart,
                StartReason::WontStart(Reason::RunsAsRoot),
            ),
        ];
        let v = classify_start(&r, ok.clone(), &containers);
        assert_eq!(
            (v.status(), v.reason),
            (Status::WontStart, Reason::NoCommand)
        );
        assert_eq!(v.digest.as_deref(), Some("sha256:1"));
        assert!(
            v.message.contains("\"b\": no_command; container \"d\""),
            "{}",
            v.message
        );
        assert_eq!(v.hint, "fix no_command fix runs_as_root");

        let fine = classify_start(&r, ok.clone(), &containers[..1]);
        assert_eq!(fine, ok);
        let missing = classify(
            &r,
            &outcome(
                Fact::Missing {
                    url: "u".into(),
                    repository_missing: Some(true),
                    suggestions: vec![],
                    some_tags: vec![],
                },
                AuthUsed::Anonymous,
            ),
        );
        assert_eq!(classify_start(&r, missing.clone(), &containers), missing);
    }
}
