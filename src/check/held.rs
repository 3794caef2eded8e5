//! The held checker ([`Checker`]): the registry client a long-running process keeps between
//! its checks (the webhook's verdicts, the watcher's looks), so that its trusted roots are
//! read once, its connections and tokens serve the next check, and every check runs on the
//! process's own runtime. Each check is still a run of its own ([`super::run`]): its deadline,
//! its retries and its count of 429 answers never outlive it.

use super::{Options, client_failed, run};
use crate::registry::{Client, ClientOptions};
use crate::report::Report;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// How long one client serves before the next check makes a new one. What a client learns is
/// kept for its life: a token server's refusal (so that rejected credentials are not sent again
/// and again), a registry's challenge, a loopback registry's fall-back to plain HTTP. Five
/// minutes keeps most of a token's worth (registries give 5 to 60 minutes) while a fixed
/// secret, or a registry that changed its mind, is believed again within minutes.
const CLIENT_AGE: Duration = Duration::from_secs(5 * 60);

/// How many images one client is asked about before the next check makes a new one: each
/// leaves at most a registry's state, a token per credential tried and a config read, so this
/// bounds what a flood of new images (new repositories, new credentials) can make it hold.
const CLIENT_IMAGES: usize = 1_000;

/// A checker a long-running process keeps: one registry client (its connections, each
/// registry's learnt challenge, its tokens) shared by every check it runs, on the caller's
/// runtime, where [`check`](fn@crate::check) makes a client per call.
///
/// Its verdicts are those of [`check`](fn@crate::check) with the same options, but for two
/// things: [`Options::client`] is not read (the checker's own settings, given once, hold), and
/// requests are not reported to [`Options::events`] (`--verbose`'s lines), since the client's
/// wire is shared by checks under way at once; verdicts and progress still are. Without a run's
/// image list to plan from, a token is asked per repository (and credential), not per group.
///
/// Staleness and memory: the client is renewed after [`CLIENT_AGE`] (5 minutes) or
/// [`CLIENT_IMAGES`] (1,000) images asked, whichever comes first; checks under way keep the
/// client they started with until they end. A token still obeys its own expiry within a
/// client's life.
///
/// ```no_run
/// # async fn demo() {
/// let checker = pullcheck::Checker::new(pullcheck::registry::ClientOptions::default());
/// let options = pullcheck::Options::default();
/// for image in ["nginx:1.27", "nginx:1.28"] {
///     let report = checker.check(&[image.to_string()], &options).await;
///     println!("{}", report.images[0].status.as_str());
/// }
/// # }
/// ```
pub struct Checker {
    /// What each client is made with.
    settings: ClientOptions,
    /// The client in use; `None` before the first check.
    held: Mutex<Option<Held>>,
}

/// One client and its use so far.
struct Held {
    client: Arc<Client>,
    made: Instant,
    /// Images asked of it.
    images: usize,
}

impl Held {
    /// Whether the client still serves a check starting `now` (pure).
    fn fresh(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.made) < CLIENT_AGE && self.images < CLIENT_IMAGES
    }
}

impl Checker {
    /// A checker whose clients are made with `settings`. Nothing is built yet: the first check
    /// makes the client (and a client that cannot be made gives each image a `client`
    /// verdict, as [`check`](fn@crate::check) does).
    pub fn new(settings: ClientOptions) -> Checker {
        Checker {
            settings,
            held: Mutex::new(None),
        }
    }

    /// Checks every image and reports on each, as [`check`](fn@crate::check) does, over the
    /// held client (see the type's documentation for what differs).
    pub async fn check(&self, images: &[String], options: &Options) -> Report {
        match self.client(images.len()) {
            Ok(client) => {
                run(
                    images,
                    options,
                    &self.settings,
                    Some(client),
                    std::future::pending(),
                )
                .await
            }
            Err(e) => client_failed(images, &e),
        }
    }

    /// The client for a check of `images` images: the held one while it is fresh, else a new
    /// one (the old one lives on in the checks that hold it).
    fn client(&self, images: usize) -> Result<Arc<Client>, crate::registry::ClientError> {
        let now = Instant::now();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let held = match held.as_mut() {
            Some(h) if h.fresh(now) => h,
            _ => held.insert(Held {
                // Renewed under the lock: checks that start meanwhile wait for it (well under
                // a millisecond's work: the roots are compiled in, nothing is read from disk).
                client: Arc::new(Client::new(&self.settings)?),
                made: now,
                images: 0,
            }),
        };
        held.images = held.images.saturating_add(images);
        Ok(held.client.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    /// One client serves checks while it is fresh; after its age, or after as many images as
    /// it may be asked about, the next check gets a new one.
    #[tokio::test(start_paused = true)]
    async fn the_client_is_kept_then_renewed_by_age_and_by_use() {
        let checker = Checker::new(ClientOptions::default());
        let first = checker.client(1).unwrap();
        assert!(Arc::ptr_eq(&first, &checker.client(1).unwrap()));
        tokio::time::advance(CLIENT_AGE).await;
        let aged = checker.client(1).unwrap();
        assert!(!Arc::ptr_eq(&first, &aged));
        assert!(Arc::ptr_eq(
            &aged,
            &checker.client(CLIENT_IMAGES - 1).unwrap()
        ));
        // The images asked so far reach the bound: the next check gets a new client.
        let used = checker.client(1).unwrap();
        assert!(!Arc::ptr_eq(&aged, &used));
    }

    /// A check through the checker gives the verdicts of a one-shot check, its settings in
    /// place of the options' own.
    #[tokio::test(start_paused = true)]
    async fn its_verdicts_are_the_one_shot_check_s() {
        let settings = ClientOptions {
            plain_http: vec!["127.0.0.1:1".into()],
            ..Default::default()
        };
        let images = vec!["UPPER/Case/X".to_string(), "127.0.0.1:1/a:1".to_string()];
        let options = Options {
            timeout: Duration::from_secs(3),
            client: settings.clone(),
            ..Default::default()
        };
        let once = crate::check(&images, &options).await;
        let held = Checker::new(settings)
            .check(
                &images,
                &Options {
                    client: ClientOptions::default(),
                    ..options
                },
            )
            .await;
        let statuses = |r: &Report| r.images.iter().map(|i| i.status).collect::<Vec<_>>();
        assert_eq!(
            statuses(&held),
            [Status::InvalidReference, Status::Unreachable]
        );
        assert_eq!(statuses(&held), statuses(&once));
        assert_eq!(held.exit_code, once.exit_code);
        assert_eq!(held.platform, once.platform);
    }
}
