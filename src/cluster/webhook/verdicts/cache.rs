//! The one cache of the cluster's admission checks: what each image's registry proved, keyed by
//! registry, repository, reference, platform set and credential identity, kept for a long TTL
//! when the image exists and a short one otherwise. One lookup per key at a time
//! (single-flight: every review that needs it waits on the same one), at most a few lookups per
//! registry at once, and none at all to a registry that answered 429 until its cool-down ends.
//! Bounded: at most [`MAX_ENTRIES`] keys.
//!
//! A lookup runs on its own task, apart from the review that started it: a review that stops
//! waiting at its budget leaves the lookup to finish and fill the cache for the next one.

use super::judge::Found;
use crate::keyring::{Credential, Keyring};
use crate::reference::Reference;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

/// The most keys kept: a cluster's distinct images over a TTL are far fewer; past it, expired
/// keys go first, then any finished ones; when every key is a lookup under way, no new lookup
/// starts (its review is answered without a verdict). The registries known are bounded alike.
pub(crate) const MAX_ENTRIES: usize = 10_000;
/// Lookups under way at once, all registries together: each holds its requests' bodies and a
/// task on the server's runtime, so that a flood of new images cannot take more than the
/// chart's memory limit nor crowd out the reviews.
pub(crate) const MAX_LOOKUPS: usize = 8;

/// What a verdict is kept by: the same image asked the same way.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// `host[:port]`.
    pub(crate) registry: String,
    pub(crate) repository: String,
    /// `:tag`, `@digest`, or both.
    pub(crate) reference: String,
    /// The platforms asked for: `any` (admission knows no node).
    pub(crate) platforms: &'static str,
    /// Whose credentials: `anonymous`, or the keyed hashes of the pull secrets that match
    /// (never a secret: [`crate::keyring::Credential`]'s cache key).
    pub(crate) identity: String,
}

impl Key {
    /// The key of `reference` asked with the credentials of `keyring` that match it, and the
    /// keyring its lookup is to use: those credentials' (the whole keyring, which the check
    /// matches again), or none when none matches (anonymous).
    pub(crate) fn asked(reference: &Reference, keyring: &Keyring) -> (Key, Keyring) {
        let credentials = keyring.lookup(&reference.registry, &reference.repository);
        let (identity, keyring) = match credentials.is_empty() {
            true => ("anonymous".to_string(), Keyring::default()),
            false => (
                credentials
                    .iter()
                    .map(Credential::cache_key)
                    .collect::<Vec<_>>()
                    .join("\n"),
                keyring.clone(),
            ),
        };
        let tag = reference.tag.as_ref().map(|t| format!(":{t}"));
        let digest = reference.digest.as_ref().map(|d| format!("@{d}"));
        let key = Key {
            registry: reference.registry.clone(),
            repository: reference.repository.clone(),
            reference: format!("{}{}", tag.unwrap_or_default(), digest.unwrap_or_default()),
            platforms: "any",
            identity,
        };
        (key, keyring)
    }
}

/// How long verdicts are kept, and how many lookups a registry gets at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    /// An image that exists.
    pub(crate) hit_ttl: Duration,
    /// A missing image, or nothing proven.
    pub(crate) miss_ttl: Duration,
    /// Lookups under way at once to one registry.
    pub(crate) per_registry: usize,
}

/// The answer to a lookup.
pub(crate) enum Lookup {
    /// Kept: no request.
    Hit(Found),
    /// Under way (started by this lookup or an earlier one): the verdict comes on the channel.
    Wait(watch::Receiver<Option<Found>>),
}

/// The cache, shared by every review.
pub(crate) struct Cache {
    settings: Settings,
    state: Mutex<State>,
    /// [`MAX_LOOKUPS`].
    lookups: Arc<Semaphore>,
}

#[derive(Default)]
struct State {
    entries: HashMap<Key, Entry>,
    registries: HashMap<String, Registry>,
}

enum Entry {
    Pending(watch::Receiver<Option<Found>>),
    Done { found: Found, until: Instant },
}

struct Registry {
    slots: Arc<Semaphore>,
    /// Answered 429: not asked before this.
    quiet_until: Option<Instant>,
}

impl Cache {
    pub(crate) fn new(settings: Settings) -> Arc<Cache> {
        Arc::new(Cache {
            settings,
            state: Mutex::new(State::default()),
            lookups: Arc::new(Semaphore::new(MAX_LOOKUPS)),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The verdict kept for `key`, or the lookup under way for it; when there is neither, a new
    /// lookup `ask` is started on a task of its own (no request while the registry cools down).
    pub(crate) fn lookup<F, Fut>(self: &Arc<Self>, key: Key, ask: F) -> Lookup
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Found> + Send + 'static,
    {
        let now = Instant::now();
        let mut state = self.state();
        match state.entries.get(&key) {
            Some(Entry::Done { found, until }) if *until > now => {
                return Lookup::Hit(found.clone());
            }
            Some(Entry::Pending(rx)) => return Lookup::Wait(rx.clone()),
            _ => {}
        }
        if state.entries.len() >= MAX_ENTRIES {
            state.make_room(now);
            if state.entries.len() >= MAX_ENTRIES {
                return Lookup::Hit(Found::Unknown { cooldown: None });
            }
        }
        if state.registries.len() >= MAX_ENTRIES {
            let per_registry = self.settings.per_registry.max(1);
            state.registries.retain(|_, r| {
                r.quiet_until.is_some_and(|t| t > now) || r.slots.available_permits() < per_registry
            });
        }
        let registry = state
            .registries
            .entry(key.registry.clone())
            .or_insert_with(|| Registry {
                slots: Arc::new(Semaphore::new(self.settings.per_registry.max(1))),
                quiet_until: None,
            });
        let slots = registry.slots.clone();
        let lookups = self.lookups.clone();
        let quiet = registry.quiet_until.filter(|t| *t > now);
        let (tx, rx) = watch::channel(None);
        state
            .entries
            .insert(key.clone(), Entry::Pending(rx.clone()));
        drop(state);
        let cache = self.clone();
        tokio::spawn(async move {
            let found = match quiet {
                Some(_) => Found::Unknown { cooldown: None },
                None => {
                    let _slot = slots.acquire_owned().await;
                    let _lookup = lookups.acquire_owned().await;
                    // The registry may have said 429 to another lookup meanwhile.
                    if cache.is_quiet(&key.registry) {
                        Found::Unknown { cooldown: None }
                    } else {
                        ask().await
                    }
                }
            };
            cache.keep(key, found.clone());
            let _ = tx.send(Some(found));
        });
        Lookup::Wait(rx)
    }

    fn is_quiet(&self, registry: &str) -> bool {
        let now = Instant::now();
        self.state()
            .registries
            .get(registry)
            .and_then(|r| r.quiet_until)
            .is_some_and(|t| t > now)
    }

    /// Keeps a finished lookup's verdict for its TTL; a 429 quiets its registry.
    fn keep(&self, key: Key, found: Found) {
        let now = Instant::now();
        let ttl = match &found {
            Found::Exists => self.settings.hit_ttl,
            Found::Missing(_) | Found::Unknown { .. } => self.settings.miss_ttl,
        };
        let mut state = self.state();
        if let Found::Unknown {
            cooldown: Some(cooldown),
        } = &found
            && let Some(r) = state.registries.get_mut(&key.registry)
        {
            r.quiet_until = Some(now + *cooldown);
        }
        state.entries.insert(
            key,
            Entry::Done {
                found,
                until: now + ttl,
            },
        );
    }

    /// How many keys are kept (finished or under way).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.state().entries.len()
    }
}

impl State {
    /// Drops the expired verdicts, then, if that is not enough, finished ones, until a tenth of
    /// the room is free; lookups under way stay.
    fn make_room(&mut self, now: Instant) {
        self.entries
            .retain(|_, e| !matches!(e, Entry::Done { until, .. } if *until <= now));
        let target = MAX_ENTRIES - MAX_ENTRIES / 10;
        if self.entries.len() > target {
            let mut excess = self.entries.len() - target;
            self.entries.retain(|_, e| {
                if excess > 0 && matches!(e, Entry::Done { .. }) {
                    excess -= 1;
                    false
                } else {
                    true
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(reference: &str) -> Key {
        Key {
            registry: "r.example".into(),
            repository: "app".into(),
            reference: reference.into(),
            platforms: "any",
            identity: "anonymous".into(),
        }
    }

    const SETTINGS: Settings = Settings {
        hit_ttl: Duration::from_secs(600),
        miss_ttl: Duration::from_secs(30),
        per_registry: 2,
    };

    async fn wait(lookup: Lookup) -> Found {
        match lookup {
            Lookup::Hit(found) => found,
            Lookup::Wait(mut rx) => rx
                .wait_for(Option::is_some)
                .await
                .expect("the lookup ends")
                .clone()
                .expect("a verdict"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn one_lookup_per_key_kept_for_its_ttl() {
        let cache = Cache::new(SETTINGS);
        let asked = Arc::new(AtomicUsize::new(0));
        let ask = |found: Found| {
            let asked = asked.clone();
            move || async move {
                asked.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                found
            }
        };
        // Ten reviews at once: one request.
        let waits: Vec<_> = (0..10)
            .map(|_| cache.lookup(key(":v1"), ask(Found::Exists)))
            .collect();
        for w in waits {
            assert_eq!(wait(w).await, Found::Exists);
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert!(matches!(
            cache.lookup(key(":v1"), ask(Found::Exists)),
            Lookup::Hit(Found::Exists)
        ));
        // A miss is kept for the short TTL only.
        let unknown = Found::Unknown { cooldown: None };
        assert_eq!(
            wait(cache.lookup(key(":v2"), ask(unknown.clone()))).await,
            unknown
        );
        tokio::time::advance(SETTINGS.miss_ttl).await;
        assert!(matches!(
            cache.lookup(key(":v2"), ask(unknown.clone())),
            Lookup::Wait(_)
        ));
        assert!(matches!(
            cache.lookup(key(":v1"), ask(Found::Exists)),
            Lookup::Hit(_)
        ));
        tokio::time::advance(SETTINGS.hit_ttl).await;
        assert!(matches!(
            cache.lookup(key(":v1"), ask(Found::Exists)),
            Lookup::Wait(_)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_registry_gets_a_few_lookups_at_once_and_none_while_it_cools_down() {
        let cache = Cache::new(SETTINGS);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let ask = |found: Found| {
            let (running, most) = (running.clone(), most.clone());
            move || async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                found
            }
        };
        let waits: Vec<_> = (0..6)
            .map(|n| cache.lookup(key(&format!(":v{n}")), ask(Found::Exists)))
            .collect();
        for w in waits {
            wait(w).await;
        }
        assert_eq!(most.load(Ordering::SeqCst), SETTINGS.per_registry);
        // A 429: the registry is not asked for the cool-down.
        let limited = Found::Unknown {
            cooldown: Some(Duration::from_secs(60)),
        };
        wait(cache.lookup(key(":limited"), ask(limited))).await;
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = {
            let asked = asked.clone();
            move || async move {
                asked.fetch_add(1, Ordering::SeqCst);
                Found::Exists
            }
        };
        assert_eq!(
            wait(cache.lookup(key(":other"), counted.clone())).await,
            Found::Unknown { cooldown: None }
        );
        assert_eq!(asked.load(Ordering::SeqCst), 0);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(
            wait(cache.lookup(key(":third"), counted)).await,
            Found::Exists
        );
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    fn keyring(user: &str, password: &str) -> Keyring {
        use base64::Engine;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let text = format!(r#"{{"auths": {{"r.example": {{"auth": "{auth}"}}}}}}"#);
        let mut k = Keyring::default();
        k.add_json(std::path::Path::new("s"), "pull secret team/s", &text)
            .expect("a Docker config");
        k
    }

    #[test]
    fn a_verdict_is_kept_per_credential_and_no_secret_is_in_its_key() {
        let app = Reference::parse("r.example/team/app:v1@sha256:0123456789012345678901234567890123456789012345678901234567890123").unwrap();
        let (anonymous, none) = Key::asked(&app, &Keyring::default());
        assert_eq!(anonymous.identity, "anonymous");
        assert_eq!(
            anonymous.reference,
            ":v1@sha256:0123456789012345678901234567890123456789012345678901234567890123"
        );
        assert!(none.lookup("r.example", "team/app").is_empty());
        let (alice, with) = Key::asked(&app, &keyring("alice", "s3cret-one"));
        let (again, _) = Key::asked(&app, &keyring("alice", "s3cret-one"));
        let (other, _) = Key::asked(&app, &keyring("alice", "s3cret-two"));
        assert_eq!(alice, again, "the same secret, the same verdict");
        assert_ne!(alice, other, "another password, another verdict");
        assert_ne!(alice, anonymous);
        assert!(!alice.identity.contains("s3cret"), "{}", alice.identity);
        assert_eq!(with.lookup("r.example", "team/app").len(), 1);
        // A secret for another registry: anonymous, and the lookup gets no keyring.
        let elsewhere = Reference::parse("q.example/app:v1").unwrap();
        let (key, none) = Key::asked(&elsewhere, &keyring("alice", "s3cret-one"));
        assert_eq!(key.identity, "anonymous");
        assert!(none.lookup("r.example", "team/app").is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_cache_stays_bounded() {
        let cache = Cache::new(SETTINGS);
        for n in 0..(MAX_ENTRIES + 50) {
            wait(cache.lookup(key(&format!(":v{n}")), || async { Found::Exists })).await;
        }
        assert!(cache.len() <= MAX_ENTRIES, "{}", cache.len());
        // A flood of lookups that never end: the keys stay bounded, and past them a new image
        // gets no lookup (nothing is said of it).
        let cache = Cache::new(SETTINGS);
        let started = Arc::new(AtomicUsize::new(0));
        for n in 0..(MAX_ENTRIES + 50) {
            let mut k = key(&format!(":v{n}"));
            k.registry = format!("r{n}.example");
            let started = started.clone();
            let _ = cache.lookup(k, move || async move {
                started.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<Found>().await
            });
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        tokio::task::yield_now().await;
        assert!(
            started.load(Ordering::SeqCst) <= MAX_LOOKUPS,
            "lookups at once, all registries"
        );
    }
}
