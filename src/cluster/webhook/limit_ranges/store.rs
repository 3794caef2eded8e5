//! The cluster's LimitRanges in memory, kept by one watch of every namespace's (kube-runtime's
//! watcher and reflector), so that a review finds its namespace's without a call to the API
//! server: that call, made for every review, was most of the webhook's time as the API server
//! measures it.
//!
//! The store answers only while it is whole: from a completed list on, until the watch after
//! it fails. Before its first list, and from any error of the watch (the service account
//! without `watch`, the API server away) until the next list is done, it answers nothing and
//! the review lists its namespace's LimitRanges itself, as it did before the store.
//!
//! Why reading a cache is as good as listing for each review: the API server's LimitRanger
//! admission plugin, which enforces LimitRanges, reads them from an informer's cache too, fed
//! by the same kind of watch. A LimitRange added or changed a moment before a pod is missed by
//! both alike, so the init container's resources are chosen against what the LimitRanger
//! enforces. Where its cache holds none for the namespace, the LimitRanger also lists them live
//! and believes that answer 30 s; so does the store ([`LIVE_NONE`]): a namespace it holds none
//! of is listed by the review, and a list that finds none is believed for that long. A
//! namespace's first LimitRange, created a moment before a pod, is then seen by both alike, and
//! no init container is sized without it where the LimitRanger enforces it.
//!
//! Memory: LimitRanges are few (a namespace holds one or two) and only what the resources need
//! is kept of each (its spec and the names that place it; no managed fields, labels or
//! annotations), once: the index by namespace shares the reflector's objects (a re-list holds
//! the new ones aside until it is done).

use super::{MAX_LIMIT_RANGES, ReadError, known};
use crate::inject::LimitRanges;
use crate::log::{self, Component};
use futures_util::{Stream, StreamExt};
use k8s_openapi::api::core::v1::LimitRange;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, DefaultBackoff, Event};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long a list that found no LimitRange in a namespace is believed, as the API server's
/// LimitRanger believes its own live lookup (`liveTTL`, 30 s): past it, the next review of
/// that namespace lists again.
pub(super) const LIVE_NONE: Duration = Duration::from_secs(30);
/// The most namespaces whose "none" is believed at once: past it, those whose time is up are
/// dropped, and while it is still full no more is kept (each review of the others lists).
const MAX_LIVE_NONE: usize = 10_000;

/// At most one line of the watch's errors in this long (the first is said at once): a role
/// without `watch` fails every try, for as long as the webhook runs.
const SAY_EVERY: Duration = Duration::from_secs(600);

/// What the reviews read, shared with the task that keeps it.
#[derive(Clone, Default)]
pub(super) struct Store {
    kept: Arc<Mutex<Kept>>,
}

/// The store's LimitRanges by namespace, and whether they may be answered.
#[derive(Default)]
struct Kept {
    /// Each namespace's LimitRanges, in the order of their names (a list's order).
    by_namespace: HashMap<String, Vec<Arc<LimitRange>>>,
    /// A list is done and no error of the watch came after it.
    whole: bool,
    /// The namespaces a review's list found no LimitRange in, and until when that is believed
    /// ([`LIVE_NONE`]).
    none_until: HashMap<String, Instant>,
}

impl Store {
    /// A store kept by a watch of every namespace's LimitRanges, on a task of the current
    /// runtime; it answers once its first list is done.
    pub(super) fn start(door: &crate::cluster::door::Door) -> Store {
        let store = Store::default();
        tokio::spawn(store.clone().keep(events(door.all_limit_ranges())));
        store
    }

    /// The LimitRanges of `namespace`; `None` while the store is not whole, or when it holds
    /// none of the namespace's and no list found none there lately (the review then lists them
    /// itself).
    pub(super) fn lookup(&self, namespace: &str) -> Option<Result<LimitRanges, ReadError>> {
        self.kept().lookup(namespace, Instant::now())
    }

    /// A review's list found no LimitRange in `namespace`: believed for [`LIVE_NONE`].
    pub(super) fn listed_none(&self, namespace: &str) {
        self.kept().listed_none(namespace, Instant::now());
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        // No change to it can stop half made (none panics while holding it), so a poisoned
        // lock still guards a consistent store.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies the watch's events to the store for as long as they come (for ever: the
    /// watch begins again after each error, past a back-off), and says its errors.
    async fn keep<S>(self, events: S)
    where
        S: Stream<Item = watcher::Result<Event<LimitRange>>>,
    {
        let (reader, writer) = reflector::store::<LimitRange>();
        let events = reflector::reflector(writer, events);
        let mut events = std::pin::pin!(events);
        let mut said = Said::default();
        let mut announced = false;
        while let Some(event) = events.next().await {
            match event {
                // The reflector holds a new list aside until it is done: nothing changed yet.
                Ok(Event::Init | Event::InitApply(_)) => {}
                Ok(Event::InitDone) => {
                    let objects = reader.state();
                    let count = objects.len();
                    self.kept().refresh(objects, true);
                    if !announced {
                        announced = true;
                        log::info(
                            Component::Webhook,
                            &format!(
                                "LimitRanges: {count} in the cluster, kept in memory by a \
                                 watch; reviews read their namespace's there"
                            ),
                        );
                    }
                }
                // Rare (LimitRanges seldom change), and they are few: the whole index again.
                Ok(Event::Apply(_) | Event::Delete(_)) => {
                    self.kept().refresh(reader.state(), false);
                }
                Err(e) => {
                    self.kept().whole = false;
                    if let Some(unsaid) = said.error(Instant::now()) {
                        log::warning(Component::Webhook, &failed(&e, unsaid));
                    }
                }
            }
        }
        // It never ends (the watch begins again after every error); if it did, the reviews
        // would list for themselves rather than read a store no longer kept.
        self.kept().whole = false;
        log::warning(
            Component::Webhook,
            "LimitRanges: the watch ended; each review lists its namespace's from the API server",
        );
    }
}

impl Kept {
    /// The LimitRanges of `namespace` as a list of them gives them, more than
    /// [`MAX_LIMIT_RANGES`] refused as a list cut there is; `None` while not whole. A
    /// namespace the store holds none of has none only while a list's "none" is believed
    /// (at `now`); otherwise `None`, and the review lists.
    fn lookup(&self, namespace: &str, now: Instant) -> Option<Result<LimitRanges, ReadError>> {
        if !self.whole {
            return None;
        }
        let found = self
            .by_namespace
            .get(namespace)
            .map_or(&[][..], Vec::as_slice);
        if found.is_empty()
            && self
                .none_until
                .get(namespace)
                .is_none_or(|&until| until <= now)
        {
            return None;
        }
        if found.len() > MAX_LIMIT_RANGES as usize {
            return Some(Err(ReadError::TooMany(MAX_LIMIT_RANGES)));
        }
        Some(known(found.iter().map(Arc::as_ref)))
    }

    /// A list found none in `namespace` at `now`: believed until [`LIVE_NONE`] later. Bounded:
    /// when [`MAX_LIVE_NONE`] namespaces are kept, those whose time is up go, and if none has,
    /// this one is not kept.
    fn listed_none(&mut self, namespace: &str, now: Instant) {
        if self.none_until.len() >= MAX_LIVE_NONE && !self.none_until.contains_key(namespace) {
            self.none_until.retain(|_, until| *until > now);
            if self.none_until.len() >= MAX_LIVE_NONE {
                return;
            }
        }
        self.none_until
            .insert(namespace.to_string(), now + LIVE_NONE);
    }

    /// The index made again from the store's `objects`; whole again when a list was just done
    /// (`listed`), as it was otherwise.
    fn refresh(&mut self, objects: Vec<Arc<LimitRange>>, listed: bool) {
        let mut by_namespace: HashMap<String, Vec<Arc<LimitRange>>> = HashMap::new();
        for lr in objects {
            let namespace = lr.metadata.namespace.clone().unwrap_or_default();
            by_namespace.entry(namespace).or_default().push(lr);
        }
        for found in by_namespace.values_mut() {
            found.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        }
        self.by_namespace = by_namespace;
        self.whole |= listed;
    }
}

/// The watch of `api`'s LimitRanges, as the store needs it: only the fields the resources read
/// kept, begun again after each error, past kube's back-off.
fn events(
    api: Api<LimitRange>,
) -> impl Stream<Item = watcher::Result<Event<LimitRange>>> + Send + 'static {
    let fresh = move || {
        watcher::watcher(api.clone(), watcher::Config::default())
            .modify(|lr: &mut LimitRange| {
                lr.metadata.managed_fields = None;
                lr.metadata.labels = None;
                lr.metadata.annotations = None;
            })
            .boxed()
    };
    restarting(fresh).backoff(Patient(DefaultBackoff::default()))
}

/// The items of a stream that is made afresh (`fresh`) after each error. kube's watcher resumes
/// a failed watch where it was and says nothing when it works again; a fresh one lists first,
/// and the end of that list (`InitDone`) is what tells the store it is whole again.
fn restarting<S, T, E>(fresh: impl Fn() -> S) -> impl Stream<Item = Result<T, E>>
where
    S: Stream<Item = Result<T, E>> + Unpin,
{
    futures_util::stream::unfold((fresh(), fresh), |(mut current, fresh)| async move {
        let item = current.next().await?;
        if item.is_err() {
            current = fresh();
        }
        Some((item, (current, fresh)))
    })
}

/// kube's default back-off between tries (0.8 s doubling to 30 s, with jitter; from 0.8 s
/// again after 120 s without an error), except that a success does not start it over: each try
/// after an error lists first, and that list succeeds even where the watch after it is refused
/// (a role without `watch`), so kube's own reset on it would list every second, for ever.
struct Patient(DefaultBackoff);

impl Iterator for Patient {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.0.next()
    }
}

impl Backoff for Patient {
    fn reset(&mut self) {}
}

/// When the watch's errors were last said: the first at once, then at most one line per
/// [`SAY_EVERY`], with how many went unsaid.
#[derive(Default)]
struct Said {
    last: Option<Instant>,
    unsaid: u64,
}

impl Said {
    /// Whether to say an error seen `now`: `Some(errors unsaid before it)`, or `None`.
    fn error(&mut self, now: Instant) -> Option<u64> {
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) < SAY_EVERY)
        {
            self.unsaid += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.unsaid))
    }
}

/// The log line of an error of the watch, `unsaid` others since the last one said.
fn failed(e: &watcher::Error, unsaid: u64) -> String {
    let hint = if forbidden(e) {
        "; the webhook's service account needs list and watch on limitranges (the chart's \
         ClusterRole)"
    } else {
        ""
    };
    let more = match unsaid {
        0 => String::new(),
        n => format!(" ({n} more errors since the last said)"),
    };
    format!(
        "LimitRanges: watching them failed: {e}{hint}; each review lists its namespace's from \
         the API server until a new list is done (retrying){more}"
    )
}

/// Whether the API server refused the watch or its list (403).
fn forbidden(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => {
            matches!(e, kube::Error::Api(status) if status.code == 403)
        }
        watcher::Error::WatchError(status) => status.code == 403,
        watcher::Error::NoResourceVersion => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{LimitRangeItem, LimitRangeSpec};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A LimitRange `name` in `namespace` whose containers' CPU is at least `min_cpu`.
    fn limit_range(namespace: &str, name: &str, min_cpu: &str) -> LimitRange {
        LimitRange {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                resource_version: Some("1".into()),
                ..ObjectMeta::default()
            },
            spec: Some(LimitRangeSpec {
                limits: vec![LimitRangeItem {
                    type_: "Container".into(),
                    min: Some(BTreeMap::from([("cpu".into(), Quantity(min_cpu.into()))])),
                    ..LimitRangeItem::default()
                }],
            }),
        }
    }

    fn now() -> Instant {
        Instant::now()
    }

    fn kept(objects: Vec<LimitRange>) -> Kept {
        let mut kept = Kept::default();
        kept.refresh(objects.into_iter().map(Arc::new).collect(), true);
        kept
    }

    /// What a list of `objects` (one namespace's) gives, for comparison.
    fn listed(objects: &[LimitRange]) -> LimitRanges {
        known(objects).unwrap()
    }

    #[test]
    fn a_namespace_reads_its_own_limit_ranges_and_one_without_has_none() {
        let team = [
            limit_range("team", "a", "50m"),
            limit_range("team", "b", "100m"),
        ];
        let kept = kept(vec![
            team[1].clone(),
            limit_range("other", "a", "1"),
            team[0].clone(),
        ]);
        // In the order of their names, as the API server lists them.
        assert_eq!(kept.lookup("team", now()).unwrap().unwrap(), listed(&team));
        assert_ne!(
            kept.lookup("other", now()).unwrap().unwrap(),
            kept.lookup("team", now()).unwrap().unwrap()
        );
        // None in the store: listed by the review, as the LimitRanger lists live.
        assert!(kept.lookup("empty", now()).is_none());
    }

    /// A list that found none is believed 30 s, as the LimitRanger's live lookup is; a
    /// LimitRange the store holds is read whatever a list said before.
    #[test]
    fn a_namespace_listed_with_none_has_none_for_30_seconds() {
        let mut kept = kept(vec![]);
        let at = now();
        kept.listed_none("empty", at);
        // Known, and empty: pullcheck's own values, not the pod's.
        assert_eq!(
            kept.lookup("empty", at).unwrap().unwrap(),
            LimitRanges::from_objects(&[]).unwrap()
        );
        assert!(matches!(
            kept.lookup("empty", at + LIVE_NONE - Duration::from_millis(1)),
            Some(Ok(LimitRanges::Known(items))) if items.is_empty()
        ));
        assert!(kept.lookup("empty", at + LIVE_NONE).is_none());
        let first = limit_range("empty", "a", "50m");
        kept.refresh(vec![Arc::new(first.clone())], false);
        assert_eq!(
            kept.lookup("empty", at).unwrap().unwrap(),
            listed(std::slice::from_ref(&first))
        );
    }

    #[test]
    fn the_namespaces_believed_empty_are_bounded() {
        let mut kept = kept(vec![]);
        let at = now();
        for i in 0..MAX_LIVE_NONE {
            kept.listed_none(&format!("ns-{i}"), at);
        }
        kept.listed_none("one-more", at);
        assert!(kept.lookup("one-more", at).is_none(), "full: not kept");
        kept.listed_none("one-more", at + LIVE_NONE);
        assert_eq!(kept.none_until.len(), 1, "those whose time was up went");
        assert!(kept.lookup("one-more", at + LIVE_NONE).is_some());
    }

    #[test]
    fn more_than_the_most_a_list_reads_is_too_many_as_from_the_api_server() {
        let some = |namespace: &str, count: u32| -> Vec<LimitRange> {
            (0..count)
                .map(|i| limit_range(namespace, &format!("lr-{i:03}"), "10m"))
                .collect()
        };
        let full = some("full", MAX_LIMIT_RANGES);
        let kept = kept([some("crowded", MAX_LIMIT_RANGES + 1), full.clone()].concat());
        assert!(matches!(
            kept.lookup("crowded", now()),
            Some(Err(ReadError::TooMany(MAX_LIMIT_RANGES)))
        ));
        assert_eq!(kept.lookup("full", now()).unwrap().unwrap(), listed(&full));
    }

    #[test]
    fn only_a_whole_store_answers() {
        let mut kept = Kept::default();
        assert!(
            kept.lookup("team", now()).is_none(),
            "before its first list"
        );
        kept.refresh(vec![Arc::new(limit_range("team", "a", "50m"))], true);
        assert!(kept.lookup("team", now()).is_some());
        // An error of the watch: the reviews list for themselves until a new list is done.
        kept.whole = false;
        kept.refresh(vec![], false);
        assert!(kept.lookup("team", now()).is_none());
        kept.refresh(vec![Arc::new(limit_range("team", "b", "50m"))], true);
        assert!(kept.lookup("team", now()).is_some());
    }

    /// Lets the task that keeps `store` take in what was sent.
    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    /// The store as its task keeps it from the watch's events, through kube's reflector.
    #[tokio::test]
    async fn the_store_follows_the_watch_and_an_error_stops_its_answers_until_a_new_list() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<watcher::Result<Event<LimitRange>>>();
        let events = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (event, rx))
        });
        let store = Store::default();
        let task = tokio::spawn(store.clone().keep(events));
        let send = |event| tx.send(event).expect("the task takes events");
        let first = limit_range("team", "a", "50m");
        let changed = limit_range("team", "a", "100m");

        send(Ok(Event::Init));
        send(Ok(Event::InitApply(first.clone())));
        settle().await;
        assert!(store.lookup("team").is_none(), "a list not yet done");
        send(Ok(Event::InitDone));
        settle().await;
        assert_eq!(
            store.lookup("team").unwrap().unwrap(),
            listed(std::slice::from_ref(&first))
        );

        send(Ok(Event::Apply(changed.clone())));
        settle().await;
        assert_eq!(
            store.lookup("team").unwrap().unwrap(),
            listed(std::slice::from_ref(&changed))
        );
        send(Ok(Event::Delete(changed.clone())));
        settle().await;
        assert!(
            store.lookup("team").is_none(),
            "none kept: the review lists"
        );
        store.listed_none("team");
        assert_eq!(store.lookup("team").unwrap().unwrap(), listed(&[]));

        // An error: no answer, not even the last one known, until a new list is done.
        send(Err(watcher::Error::NoResourceVersion));
        settle().await;
        assert!(store.lookup("team").is_none());
        send(Ok(Event::Init));
        send(Ok(Event::InitApply(first.clone())));
        settle().await;
        assert!(store.lookup("team").is_none());
        send(Ok(Event::InitDone));
        settle().await;
        assert_eq!(
            store.lookup("team").unwrap().unwrap(),
            listed(std::slice::from_ref(&first))
        );

        // The stream's end (never, in a run) leaves the reviews to list for themselves.
        drop(tx);
        task.await.unwrap();
        assert!(store.lookup("team").is_none());
    }

    #[tokio::test]
    async fn an_error_makes_the_watch_afresh() {
        let made = Arc::new(AtomicUsize::new(0));
        let fresh = {
            let made = made.clone();
            move || {
                let n = made.fetch_add(1, Ordering::SeqCst);
                futures_util::stream::iter(vec![Ok(n), Err("lost"), Ok(100 + n)])
            }
        };
        let items: Vec<Result<usize, &str>> = restarting(fresh).take(5).collect().await;
        assert_eq!(items, [Ok(0), Err("lost"), Ok(1), Err("lost"), Ok(2)]);
        assert_eq!(made.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn the_back_off_grows_through_the_successes_between_errors() {
        // Each try: an error, then the next list's success (a reset).
        let tries = |backoff: &mut dyn Backoff| -> Vec<Duration> {
            (0..5)
                .map(|_| {
                    let delay = backoff.next().unwrap();
                    backoff.reset();
                    delay
                })
                .collect()
        };
        // 0.8 s doubled four times, jitter only adding: kube's own would stay under 1.6 s.
        let patient = tries(&mut Patient(DefaultBackoff::default()));
        assert!(patient[4] >= Duration::from_millis(12_800), "{patient:?}");
        let kube = tries(&mut DefaultBackoff::default());
        assert!(
            kube.iter().all(|d| *d < Duration::from_millis(1600)),
            "{kube:?}"
        );
    }

    #[test]
    fn errors_are_said_at_once_then_at_most_once_a_while_with_the_count() {
        let mut said = Said::default();
        let start = Instant::now();
        assert_eq!(said.error(start), Some(0));
        assert_eq!(said.error(start + Duration::from_secs(30)), None);
        assert_eq!(said.error(start + Duration::from_secs(60)), None);
        assert_eq!(said.error(start + SAY_EVERY), Some(2));
        assert_eq!(said.error(start + SAY_EVERY), None);
    }

    #[test]
    fn a_refused_watch_names_the_verb_it_needs() {
        let status = |code: u16| kube::core::Status {
            code,
            ..kube::core::Status::default()
        };
        let refused = watcher::Error::WatchStartFailed(kube::Error::Api(Box::new(status(403))));
        assert!(forbidden(&refused));
        assert!(failed(&refused, 0).contains("needs list and watch on limitranges"));
        let gone = watcher::Error::WatchError(Box::new(status(410)));
        assert!(!forbidden(&gone));
        assert!(failed(&gone, 3).ends_with("(3 more errors since the last said)"));
    }
}
