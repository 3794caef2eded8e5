//! The watcher's own look at the registry before it fails a pod for an image the kubelet said
//! is not there: one manifest HEAD with pullcheck's own check, anonymous or with the pod's own
//! pull secrets (`--confirm-with-pull-secrets`), matched as the kubelet matches them, platform
//! not checked (the question is only whether the reference resolves now), bounded in time (1 s).
//!
//! Only an image that *resolves* changes anything: then the kubelet's words are stale (the tag
//! was pushed since, the outage's one 404 is over) and the pod is not failed. Any other answer
//! (not found, refused credentials, no route from the watcher's pod to a registry only the node
//! reaches, a time-out) leaves the decision to the kubelet's fresh words, which are the node's
//! own view: the watcher never fails a pod on its own answer, only spares one.
//!
//! The looks go through one [`Checker`], the watcher's for its whole life: a token and a
//! connection serve the next look. It is made at the first look (making it costs nothing), so
//! that the watcher's set-up needs no word of it.

use crate::check::Checker;
use crate::cluster::ask::{self, Ask};
use crate::keyring::Keyring;
use crate::report::Status;
use std::sync::LazyLock;
use std::time::Duration;

/// The longest the look may take: the pod waits for it, and a registry that does not answer
/// the watcher says nothing the kubelet's words did not. A registry answers a HEAD (a token
/// exchange included) in well under a second; a refused connection is retried within this, so
/// that a registry only the node reaches costs half a second, not the time-out of a check.
const TIMEOUT: Duration = Duration::from_secs(1);

/// What the look found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    /// The manifest resolves now.
    Resolves,
    /// Anything else: the kubelet's words decide.
    Inconclusive(Status),
}

/// The watcher's checker: anonymous or with a pod's own secrets (given per look), no platform,
/// and no plain-HTTP registry, as the look has always asked.
static CHECKER: LazyLock<Checker> = LazyLock::new(|| ask::checker(Vec::new(), Vec::new()));

/// Asks the registry whether `image` resolves now, with the credentials of `keyring` (empty:
/// anonymous). The keyring lives for this one look.
pub(crate) async fn look(image: &str, keyring: Keyring) -> Look {
    let result = ask::ask(&CHECKER, image, keyring, Ask::look(TIMEOUT)).await;
    match result.map(|r| r.status) {
        Some(Status::Ok) => Look::Resolves,
        Some(status) => Look::Inconclusive(status),
        None => Look::Inconclusive(Status::Unreachable),
    }
}
