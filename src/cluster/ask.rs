//! One image asked of its registry by the cluster side: the one way the watcher's look
//! (`watch/confirm.rs`) and the webhook's verdicts (`webhook/verdicts/judge.rs`) ask it, a check
//! of that image alone through the process's held [`Checker`] (its client, tokens and
//! connections reused from one lookup to the next, on the process's runtime). Each caller keeps
//! its own reading of the answer; what differs in how they ask is an [`Ask`], side by side
//! here.

use crate::check::{Checker, Network, OnUnreachable, Options};
use crate::container_start::StartCheck;
use crate::keyring::Keyring;
use crate::registry::{ClientOptions, PlatformPolicy};
use crate::report::ImageResult;
use std::time::Duration;

/// How an image is asked: what the watcher's look and the webhook's verdicts set differently.
/// What both leave alone is the check's default (`--on-unverifiable warn`, no containers, so
/// no start prediction whatever [`Ask::start_check`] says; one image, so one job whatever the
/// concurrency).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ask {
    /// The longest the lookup may take, retries included.
    pub(crate) timeout: Duration,
    /// Whose loopback the asker sees: from a pod's own network a loopback registry is the
    /// node's and is not asked.
    pub(crate) network: Network,
    /// Whether `unreachable` counts.
    pub(crate) on_unreachable: OnUnreachable,
    /// Whether containers' starts are predicted.
    pub(crate) start_check: StartCheck,
}

impl Ask {
    /// The watcher's look before it fails a pod (`watch/confirm.rs`): bounded by `timeout`,
    /// the rest the check's defaults, as the look has always asked.
    #[cfg(feature = "watch")]
    pub(crate) fn look(timeout: Duration) -> Ask {
        Ask {
            timeout,
            network: Network::Host,
            on_unreachable: OnUnreachable::Fail,
            start_check: StartCheck::Auto,
        }
    }

    /// The webhook's verdict at admission (`webhook/verdicts/judge.rs`): bounded by `timeout`,
    /// from the webhook pod's own network (a registry on loopback is the node's), nothing
    /// unreachable counted, no start prediction.
    #[cfg(feature = "webhook")]
    pub(crate) fn verdict(timeout: Duration) -> Ask {
        Ask {
            timeout,
            network: Network::Pod,
            on_unreachable: OnUnreachable::Warn,
            start_check: StartCheck::Off,
        }
    }
}

/// How the cluster side's checker makes its clients: `plain_http` registries spoken to in
/// plain HTTP, `resolve` (tests) pinning names, and no platform checked (the question is only
/// whether the reference resolves; the node that will pull is not known).
pub(crate) fn checker(
    plain_http: Vec<String>,
    resolve: Vec<(String, std::net::SocketAddr)>,
) -> Checker {
    Checker::new(ClientOptions {
        plain_http,
        resolve,
        platform: PlatformPolicy::none(),
        ..ClientOptions::default()
    })
}

/// Asks `image`'s registry once, as `how` says, with the credentials of `keyring` that match it
/// (empty: anonymously): the image's result, `None` only if the check gave none.
pub(crate) async fn ask(
    checker: &Checker,
    image: &str,
    keyring: Keyring,
    how: Ask,
) -> Option<ImageResult> {
    let options = Options {
        timeout: how.timeout,
        keyring,
        network: how.network,
        on_unreachable: how.on_unreachable,
        start_check: how.start_check,
        ..Options::default()
    };
    let mut report = checker.check(&[image.to_string()], &options).await;
    (!report.images.is_empty()).then(|| report.images.swap_remove(0))
}
