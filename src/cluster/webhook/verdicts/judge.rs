//! One image asked of its registry at admission, through the check library (the webhook's held
//! [`Checker`], running the code of the init container: the same requests, the same
//! classifier, as the cluster side asks, `cluster/ask.rs`), and what its answer proves, as a
//! [`Found`] the cache keeps. The decision ([`found_of`]) is pure; [`ask()`] is the I/O.
//!
//! At admission nothing is known of the node that will pull: so the registry is asked
//! anonymously or with the pods' own pull secrets only, from the webhook's own network (a registry on loopback is the node's, never
//! asked), for no platform, and only a missing tag, digest or repository, or a reference
//! that does not parse, is a verdict. Refused credentials, time-outs, TLS the webhook does not
//! trust: nothing is said, since the node may know better.

use crate::check::Checker;
use crate::cluster::ask::{self, Ask};
use crate::keyring::Keyring;
use crate::report::{Counted, ImageResult, Reason, Status};
use std::time::Duration;

/// What the registry's answer proves of one image, whatever its pull policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// It exists.
    Exists,
    /// Proven missing: the registry said so (or the reference cannot be pulled at all).
    Missing(Missing),
    /// Nothing proven (no answer in time, credentials needed, TLS, …): nothing is said.
    Unknown {
        /// The registry answered 429: it is not asked again before this long.
        cooldown: Option<Duration>,
    },
}

/// A proven miss, with the words of its warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Missing {
    /// What is missing, as a person reads it: `tag not found`, `repository not found`, …
    pub(crate) what: &'static str,
    /// The registry asked (`host[:port]`); empty for a reference that does not parse.
    pub(crate) registry: String,
    /// Close tags or repositories the registry has.
    pub(crate) suggestions: Vec<String>,
    /// The reference cannot be parsed: the kubelet refuses it whatever any node holds.
    pub(crate) invalid: bool,
}

/// How long a 429 keeps a registry from being asked, when it named no `Retry-After` that the
/// check could wait out: a minute, Docker Hub's window.
const RATE_LIMIT_COOLDOWN: Duration = Duration::from_secs(60);

/// What one image's result proves (pure).
pub(crate) fn found_of(result: &ImageResult) -> Found {
    let counted = matches!(result.counted, Counted::Yes);
    let what = match (result.status, result.reason) {
        (Status::Ok, _) => return Found::Exists,
        (Status::InvalidReference, _) => "not a valid image reference",
        (Status::NotFound, Reason::TagMissing) if counted => "tag not found",
        (Status::NotFound, Reason::DigestMissing) if counted => "digest not found",
        (Status::NotFound, Reason::RepositoryMissing) if counted => "repository not found",
        (_, Reason::RateLimited) => {
            return Found::Unknown {
                cooldown: Some(RATE_LIMIT_COOLDOWN),
            };
        }
        _ => return Found::Unknown { cooldown: None },
    };
    Found::Missing(Missing {
        what,
        registry: result.registry.clone(),
        suggestions: result.suggestions.iter().take(3).cloned().collect(),
        invalid: result.status == Status::InvalidReference,
    })
}

/// Asks the registry of `image` once (retries within `timeout` only while the failure is
/// transient, `Retry-After` honoured), through `checker` (plain HTTP where told, no
/// platform): the proof, and the manifest requests it took.
pub(crate) async fn ask(
    checker: &Checker,
    image: &str,
    keyring: Keyring,
    timeout: Duration,
) -> (Found, u32) {
    match ask::ask(checker, image, keyring, Ask::verdict(timeout)).await {
        Some(result) => (found_of(&result), result.attempts),
        None => (Found::Unknown { cooldown: None }, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::NotCounted;

    fn result(reason: Reason, counted: Counted) -> ImageResult {
        let mut r = ImageResult::new("r.example/app:v1", reason, "words".into());
        r.registry = "r.example".into();
        r.counted = counted;
        r.suggestions = vec!["v1.1".into(), "v1.0".into(), "v0.9".into(), "v0.8".into()];
        r
    }

    #[test]
    fn only_what_the_registry_proves_is_a_verdict() {
        let missing = |what, invalid| {
            Found::Missing(Missing {
                what,
                registry: "r.example".into(),
                suggestions: vec!["v1.1".into(), "v1.0".into(), "v0.9".into()],
                invalid,
            })
        };
        let cases = [
            ("found", Reason::Found, Counted::Yes, Found::Exists),
            (
                "tag",
                Reason::TagMissing,
                Counted::Yes,
                missing("tag not found", false),
            ),
            (
                "digest",
                Reason::DigestMissing,
                Counted::Yes,
                missing("digest not found", false),
            ),
            (
                "repository",
                Reason::RepositoryMissing,
                Counted::Yes,
                missing("repository not found", false),
            ),
            (
                "invalid",
                Reason::InvalidReference,
                Counted::Yes,
                missing("not a valid image reference", true),
            ),
            (
                "a miss not counted (a node may hold it)",
                Reason::TagMissing,
                Counted::No(NotCounted::MayBeOnNode),
                Found::Unknown { cooldown: None },
            ),
            (
                "refused credentials",
                Reason::CredentialsRejected,
                Counted::Yes,
                Found::Unknown { cooldown: None },
            ),
            (
                "rate limited",
                Reason::RateLimited,
                Counted::No(NotCounted::OnUnreachableWarn),
                Found::Unknown {
                    cooldown: Some(RATE_LIMIT_COOLDOWN),
                },
            ),
            (
                "a time-out",
                Reason::Timeout,
                Counted::No(NotCounted::OnUnreachableWarn),
                Found::Unknown { cooldown: None },
            ),
        ];
        for (name, reason, counted, want) in cases {
            assert_eq!(found_of(&result(reason, counted)), want, "{name}");
        }
    }
}
