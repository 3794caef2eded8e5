//! Every outcome of a probe becomes a verdict here, and only here: a status, a machine-readable
//! reason, a message that names the image, the registry and what was tried, a hint that says
//! what to do next, and whether retrying could help.
//!
//! The rule for retries: transient failures (connect errors, time-outs, 5xx, 429) are retried
//! inside the deadline; permanent ones (404, 401, 403, certificate errors) never are, because
//! waiting will not change them.

use super::{AuthUsed, Fact, Outcome, PlatformSeen, Step, TlsFailure};
use crate::reference::Reference;
use crate::report::{ContainerStart, StartStatus, Status};
use std::time::Duration;

/// The verdict on one probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The status.
    pub status: Status,
    /// A finer machine-readable reason (`tag_missing`, `credentials_rejected`, `timeout`, …).
    pub reason: &'static str,
    /// What happened, naming the image, the registry and what was tried.
    pub message: String,
    /// What to do next (empty when fine).
    pub hint: String,
    /// `Some` when retrying may help, with the wait the registry asked for, if any.
    pub retry: Option<Option<Duration>>,
    /// The digest, when found.
    pub digest: Option<String>,
    /// The index entry for the node's platform, when an index was checked.
    pub platform_digest: Option<String>,
    /// On a found image: whether its platform was checked, and if not, why.
    pub platform: Option<PlatformSeen>,
    /// The platforms an image has, when none fits the node.
    pub available_platforms: Vec<String>,
    /// Close tags or repositories, when one is missing.
    pub suggestions: Vec<String>,
    /// When no tag is close to a missing one: a few the repository has.
    pub some_tags: Vec<String>,
}

impl Verdict {
    /// A verdict that is final (no retry) and names no digest.
    pub(crate) fn new(
        status: Status,
        reason: &'static str,
        message: String,
        hint: &str,
    ) -> Verdict {
        Verdict {
            status,
            reason,
            message,
            hint: hint.to_string(),
            retry: None,
            digest: None,
            platform_digest: None,
            platform: None,
            available_platforms: Vec::new(),
            suggestions: Vec::new(),
            some_tags: Vec::new(),
        }
    }

    fn retry(mut self, after: Option<Duration>) -> Verdict {
        self.retry = Some(after);
        self
    }
}

/// Turns what a probe found into a verdict.
pub fn classify(reference: &Reference, outcome: &Outcome) -> Verdict {
    let image = reference.to_string();
    let registry = &reference.registry;
    let repo = &reference.repository;
    let who = describe_auth(&outcome.auth);
    let tried = describe_tried(&outcome.tried);
    let what = match (&reference.digest, &reference.tag) {
        (Some(d), _) => format!("digest {d}"),
        (None, Some(t)) => format!("tag {t:?}"),
        (None, None) => "manifest".to_string(),
    };
    match &outcome.fact {
        Fact::Found {
            digest,
            platform_digest,
            platform,
            digest_invalid,
            ..
        } => {
            let invalid = "the registry sent an invalid Docker-Content-Digest, not shown";
            let shown = match (digest, digest_invalid) {
                (Some(d), false) => d.clone(),
                (Some(d), true) => format!("{d}; {invalid}"),
                (None, true) => invalid.to_string(),
                (None, false) => "digest not reported".to_string(),
            };
            let mut v = Verdict::new(
                Status::Ok,
                "found",
                format!("{image}: manifest found on {registry} ({shown})"),
                "",
            );
            v.digest = digest.clone();
            v.platform_digest = platform_digest.clone();
            v.platform = Some(*platform);
            v
        }
        Fact::WrongPlatform {
            digest,
            wanted,
            available,
            more_platforms,
        } => {
            let more = if *more_platforms > 0 {
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
                Status::WrongPlatform,
                "no_matching_platform",
                format!(
                    "{image}: no {wanted} variant; available: {}{more} (manifest {} on {registry})",
                    available.join(", "),
                    digest.as_deref().unwrap_or("without digest")
                ),
                "Build and push the image for this platform (e.g. `docker buildx build --platform`), or run the pod on nodes of an available platform (nodeSelector kubernetes.io/arch).",
            );
            v.digest = digest.clone();
            v.available_platforms = available.clone();
            v
        }
        Fact::Missing {
            url,
            repository_missing,
            suggestions,
            some_tags,
        } => with_some_tags(
            some_tags,
            with_suggestions(
                suggestions,
                match repository_missing {
                    Some(true) => Verdict::new(
                        Status::NotFound,
                        "repository_missing",
                        format!(
                            "{image}: repository {repo} does not exist on {registry} (HEAD {url} answered 404; tags/list answered NAME_UNKNOWN; {who})"
                        ),
                        "Check the image name and registry; a typo in the repository path is the usual cause.",
                    ),
                    Some(false) => Verdict::new(
                        Status::NotFound,
                        if reference.digest.is_some() {
                            "digest_missing"
                        } else {
                            "tag_missing"
                        },
                        format!(
                            "{image}: {what} not found in repository {repo} on {registry}, which exists (HEAD {url} answered 404; {who})"
                        ),
                        "Check the tag or digest for a typo, or push the image; list the tags with `skopeo list-tags` or `crane ls`.",
                    ),
                    None => Verdict::new(
                        Status::NotFound,
                        "manifest_missing",
                        format!(
                            "{image}: {what} not found on {registry} (HEAD {url} answered 404; {who})"
                        ),
                        "Check the image name, tag and digest for a typo, or push the image.",
                    ),
                },
            ),
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
            match (step, status) {
                (Step::Manifest, 401) if bearer_error.as_deref() == Some("insufficient_scope") => {
                    Verdict::new(
                        Status::Unauthorized,
                        "insufficient_scope",
                        format!(
                            "{image}: {registry} refused access to {repo} ({request}, insufficient_scope): the repository does not exist, or it is private and the credentials used ({tried}) have no access"
                        ),
                        "If the image is private, give pullcheck the pod's pull secret for this registry; if it is public, check the name (registries such as Docker Hub answer this way for missing repositories too).",
                    )
                }
                (Step::Manifest, 401) if outcome.auth == AuthUsed::Anonymous => Verdict::new(
                    Status::Unauthorized,
                    "no_credentials",
                    format!(
                        "{image}: {registry} requires credentials and none matched it ({request}, anonymous)"
                    ),
                    "Mount the pod's imagePullSecrets under --secrets-dir or pass --docker-config; if the node pulls with its own credentials, use --allow-unauthenticated.",
                ),
                (Step::Manifest, 401) => Verdict::new(
                    Status::Unauthorized,
                    "credentials_rejected",
                    format!(
                        "{image}: credentials for {tried} at registry {registry} were rejected ({request})"
                    ),
                    "The pull secret's user name or password is wrong or expired: renew the secret.",
                ),
                (Step::Token, 401 | 403) if outcome.auth == AuthUsed::Anonymous => Verdict::new(
                    Status::Unauthorized,
                    "no_credentials",
                    format!(
                        "{image}: the token server of {registry} refused anonymous access ({request})"
                    ),
                    "Mount the pod's imagePullSecrets under --secrets-dir or pass --docker-config.",
                ),
                (Step::Token, 401 | 403) => Verdict::new(
                    Status::Unauthorized,
                    "credentials_rejected",
                    format!(
                        "{image}: credentials for {tried} at registry {registry} were rejected by its token server ({request})"
                    ),
                    "The pull secret's user name or password is wrong or expired: renew the secret.",
                ),
                (Step::Manifest, 403) => Verdict::new(
                    Status::Denied,
                    "denied",
                    format!(
                        "{image}: {registry} denied access to {repo} ({request}; tried {tried})"
                    ),
                    "The credentials are valid but may not pull this repository: grant them pull access.",
                ),
                // The HEAD found the manifest, then the GET of that same index (or of its
                // config) is refused or missing: as permanent as the same answer to the HEAD.
                (Step::Platform, 401) => Verdict::new(
                    Status::Unauthorized,
                    "index_unauthorized",
                    format!(
                        "{image}: {registry} answers the manifest HEAD but refuses the GET that reads it ({request}; tried {tried}): a pull GETs it too, so the pull would fail"
                    ),
                    "Give the credentials pull access to the repository (HEAD and GET), or use --platform-check off to skip reading the index.",
                ),
                (Step::Platform, 403) => Verdict::new(
                    Status::Denied,
                    "index_denied",
                    format!(
                        "{image}: {registry} answers the manifest HEAD but denies the GET that reads it ({request}; tried {tried}): a pull GETs it too, so the pull would fail"
                    ),
                    "Grant the credentials pull access to the repository (HEAD and GET), or use --platform-check off to skip reading the index.",
                ),
                (Step::Platform, 404) => Verdict::new(
                    Status::NotFound,
                    "index_missing",
                    format!(
                        "{image}: {registry} lists {what} (its HEAD answered) but does not serve it ({request}): a pull would fail"
                    ),
                    "The registry is inconsistent (an interrupted push, or garbage collection): push the image again.",
                ),
                (_, 429) => Verdict::new(
                    Status::Unreachable,
                    "rate_limited",
                    format!("{image}: {registry} is rate-limiting requests ({request})"),
                    "Wait and retry, or pull through a mirror; Docker Hub limits anonymous pulls per IP.",
                )
                .retry(*retry_after),
                (_, 500..=599) => Verdict::new(
                    Status::Unreachable,
                    "server_error",
                    format!("{image}: {registry} failed ({request})"),
                    "The registry is failing; retry later or check its status.",
                )
                .retry(*retry_after),
                (Step::Ping, _) => Verdict::new(
                    Status::Unreachable,
                    "not_a_registry",
                    format!(
                        "{image}: {registry} does not answer as an OCI registry ({request}; a registry answers 200 or 401)"
                    ),
                    "Check the registry host and port in the image reference.",
                ),
                _ => Verdict::new(
                    Status::Unreachable,
                    "unexpected_status",
                    format!("{image}: {registry} gave an unexpected answer ({request})"),
                    "Check the image reference; run with -o json for details.",
                ),
            }
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
            if *no_such_host {
                // Retried (a cluster's DNS can be wrong for a moment); the check stops after the
                // resolver said it twice for a registry. Permanent for this pod, not for the
                // node, which may resolve it through its own DNS or /etc/hosts: exit 8, not 6.
                Verdict::new(
                    Status::Unverifiable,
                    "no_such_host",
                    format!(
                        "{image}: the resolver says the host of {method} {url} does not exist ({detail})"
                    ),
                    "Check the registry's host name for a typo, and the pod's DNS (search domains, CoreDNS); the node may resolve it through its own DNS or /etc/hosts, which this pod does not see.",
                )
                .retry(None)
            } else if *redirect {
                // A redirect loop or a downgrade to plain HTTP is the registry's set-up: it
                // will not change by retrying.
                Verdict::new(
                    Status::Unreachable,
                    "redirect",
                    format!(
                        "{image}: {registry} redirects where pullcheck will not follow ({method} {url}: {detail})"
                    ),
                    "The registry redirects in a loop, or from HTTPS to plain HTTP: check its configuration or the proxy in front of it.",
                )
            } else if *tls == Some(TlsFailure::PlainHttpAnswer) {
                // The registry speaks plain HTTP; asking again over TLS gets the same answer.
                // Loopback registries never end here (they are asked in plain HTTP, as
                // containerd asks them), unless a node configuration names HTTPS for them.
                Verdict::new(
                    Status::Unverifiable,
                    "plain_http",
                    format!(
                        "{image}: {registry} answers in plain HTTP: add --plain-http {registry} ({method} {url}: {detail})"
                    ),
                    &format!(
                        "Add --plain-http {registry}; the node pulls it only if its runtime is told so too (containerd: an http:// host in its hosts.toml; CRI-O: insecure = true in registries.conf)."
                    ),
                )
            } else if tls.is_some() {
                // A certificate this pod does not trust (or a handshake it cannot make) will
                // not change by retrying, but the node may trust a CA the pod lacks: exit 8.
                Verdict::new(
                    Status::Unverifiable,
                    "tls",
                    format!("{image}: TLS with {registry} failed ({method} {url}: {detail})"),
                    "Trust the registry's CA with --ca-file, check that its certificate names this host, or use --plain-http if it serves plain HTTP; the node may trust a CA this pod lacks (its system store, containerd's certs.d).",
                )
            } else if *timeout {
                Verdict::new(
                    Status::Unreachable,
                    "timeout",
                    format!("{image}: {registry} timed out ({method} {url}: {detail})"),
                    "Check that the registry is reachable from the node (network policy, proxy, firewall).",
                )
                .retry(None)
            } else {
                Verdict::new(
                    Status::Unreachable,
                    "connect",
                    format!("{image}: cannot reach {registry} ({method} {url}: {detail})"),
                    "Check the registry host name and that it is reachable from the node (DNS, network policy, proxy).",
                )
                .retry(None)
            }
        }
        Fact::NotAnImage { url, what } => Verdict::new(
            Status::NotFound,
            "not_an_image",
            format!(
                "{image}: {registry} holds an OCI artifact there, not an image ({what}; {url}): the runtime refuses to pull it (containerd: mismatched image rootfs and manifest layers)"
            ),
            "Point the container at an image: an artifact (a Helm chart, a signature, an SBOM) cannot run as one.",
        ),
        Fact::UnsupportedAuth { scheme } => Verdict::new(
            Status::Unauthorized,
            "unsupported_auth",
            format!(
                "{image}: {registry} asks for authentication scheme {scheme:?}, which pullcheck does not speak (Basic and Bearer only)"
            ),
            "Use --allow-unauthenticated for this registry if the node has its own credentials.",
        ),
        Fact::BadTokenAnswer { realm } => Verdict::new(
            Status::Unreachable,
            "bad_token_answer",
            format!("{image}: the token server {realm} of {registry} answered without a token"),
            "The registry's token service is misbehaving; retry later.",
        )
        .retry(None),
        Fact::BadRealm { realm } => Verdict::new(
            Status::Unauthorized,
            "bad_realm",
            format!(
                "{image}: {registry} names a token server that is not a valid URL (realm {realm:?}), so no token can be asked for"
            ),
            "The registry's token auth is misconfigured (its WWW-Authenticate realm): report it to the registry's operator.",
        ),
        Fact::InsecureRealm { realm } => Verdict::new(
            Status::Unauthorized,
            "insecure_realm",
            format!(
                "{image}: {registry} sends credentials to the plain-HTTP token server {realm}; pullcheck did not send them"
            ),
            "Allow plain HTTP to that host with --plain-http only if the network is trusted.",
        ),
        Fact::TimedOut {
            waiting_for,
            deadline,
        } => {
            let waiting = if waiting_for.is_empty() {
                String::new()
            } else {
                format!(" waiting for {waiting_for}")
            };
            let v = Verdict::new(
                Status::Unreachable,
                "timeout",
                format!("{image}: {registry} timed out{waiting}"),
                "Check that the registry is reachable from the node, or raise --timeout.",
            );
            if *deadline { v } else { v.retry(None) }
        }
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
    if verdict.status != Status::Ok {
        return verdict;
    }
    match wont_start(reference, containers) {
        Some((reason, message, hint)) => Verdict {
            status: Status::WontStart,
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
) -> Option<(&'static str, String, String)> {
    let refused: Vec<&ContainerStart> = containers
        .iter()
        .filter(|c| c.start == StartStatus::WontStart)
        .collect();
    let first = refused.first()?;
    let mut hints: Vec<&str> = Vec::new();
    for c in &refused {
        if !hints.contains(&c.hint.as_str()) {
            hints.push(&c.hint);
        }
    }
    let reasons: Vec<&str> = refused.iter().map(|c| c.message.as_str()).collect();
    Some((
        first.reason,
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
        v.message.push_str(&format!(
            "; no tag is close; tags the repository has include {}",
            some_tags.join(", ")
        ));
        v.some_tags = some_tags.to_vec();
    }
    v
}

/// Adds "did you mean …" to a not-found verdict.
fn with_suggestions(suggestions: &[String], mut v: Verdict) -> Verdict {
    if !suggestions.is_empty() {
        v.message
            .push_str(&format!("; did you mean {}?", suggestions.join(", ")));
        v.suggestions = suggestions.to_vec();
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

    fn reference(s: &str) -> Reference {
        Reference::parse(s).unwrap()
    }

    fn outcome(fact: Fact, auth: AuthUsed) -> Outcome {
        Outcome {
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
        let cases: Vec<(&str, Fact, AuthUsed, Status, &str, bool)> = vec![
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
                "found",
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
                "repository_missing",
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
                "tag_missing",
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
                "manifest_missing",
                false,
            ),
            (
                "anonymous 401",
                status(Step::Manifest, 401, None),
                AuthUsed::Anonymous,
                Status::Unauthorized,
                "no_credentials",
                false,
            ),
            (
                "rejected 401",
                status(Step::Manifest, 401, None),
                alice(),
                Status::Unauthorized,
                "credentials_rejected",
                false,
            ),
            (
                "scope 401",
                status(Step::Manifest, 401, Some("insufficient_scope")),
                alice(),
                Status::Unauthorized,
                "insufficient_scope",
                false,
            ),
            (
                "index GET 401",
                status(Step::Platform, 401, None),
                alice(),
                Status::Unauthorized,
                "index_unauthorized",
                false,
            ),
            (
                "index GET 403",
                status(Step::Platform, 403, None),
                alice(),
                Status::Denied,
                "index_denied",
                false,
            ),
            (
                "index GET 404",
                status(Step::Platform, 404, None),
                AuthUsed::Anonymous,
                Status::NotFound,
                "index_missing",
                false,
            ),
            (
                "bad realm",
                Fact::BadRealm {
                    realm: "https://tok\u{fffd}en".into(),
                },
                AuthUsed::Anonymous,
                Status::Unauthorized,
                "bad_realm",
                false,
            ),
            (
                "token 401",
                status(Step::Token, 401, None),
                alice(),
                Status::Unauthorized,
                "credentials_rejected",
                false,
            ),
            (
                "token 401 anonymous",
                status(Step::Token, 401, None),
                AuthUsed::Anonymous,
                Status::Unauthorized,
                "no_credentials",
                false,
            ),
            (
                "403",
                status(Step::Manifest, 403, None),
                alice(),
                Status::Denied,
                "denied",
                false,
            ),
            (
                "429",
                status(Step::Manifest, 429, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                "rate_limited",
                true,
            ),
            (
                "503",
                status(Step::Manifest, 503, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                "server_error",
                true,
            ),
            (
                "ping 503",
                status(Step::Ping, 503, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                "server_error",
                true,
            ),
            (
                "ping 404",
                status(Step::Ping, 404, None),
                AuthUsed::Anonymous,
                Status::Unreachable,
                "not_a_registry",
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
                "tls",
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
                "plain_http",
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
                "no_such_host",
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
                "connect",
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
                "redirect",
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
                "timeout",
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
                "timeout",
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
                "not_an_image",
                false,
            ),
            (
                "insecure realm",
                Fact::InsecureRealm {
                    realm: "http://t".into(),
                },
                alice(),
                Status::Unauthorized,
                "insecure_realm",
                false,
            ),
        ];
        let r = reference("r.io/team/app:v1");
        for (name, fact, auth, want_status, want_reason, want_retry) in cases {
            let v = classify(&r, &outcome(fact, auth));
            assert_eq!(v.status, want_status, "{name}");
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
        assert_eq!(v.reason, "digest_missing");
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
        let container = |name: &str, start: StartStatus, reason: &'static str| ContainerStart {
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
            container("a", StartStatus::Ok, "spec"),
            container("b", StartStatus::WontStart, "no_command"),
            container("c", StartStatus::Unknown, "config_not_read"),
            container("d", StartStatus::WontStart, "runs_as_root"),
        ];
        let v = classify_start(&r, ok.clone(), &containers);
        assert_eq!((v.status, v.reason), (Status::WontStart, "no_command"));
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
