//! The loop: three watches (the labelled namespaces; the pending pods of the whole cluster,
//! held in memory as they are, `managedFields` dropped; the kubelet's `Failed` Events of pods,
//! taken into the pod they name and not kept, since the kubelet says a pull failed at once and
//! writes it into the pod's status only at its next sync), a tick that asks `decide` about
//! every pod of a watched namespace, and `act` for what it answers, only while this replica
//! leads.
//! State lives in the cluster (the condition, the Events), so a new leader loses nothing but
//! the graces it starts again.

use super::act::{Actor, WriteOutcome};
use super::breaker::{self, Breaker, Owner};
use super::confirm::{self, Look};
use super::decide::{Action, Finding, decide};
use super::metrics::Metrics;
use super::seen::Seen;
use crate::config::WatchConfig;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Event as KubeEvent, Namespace, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// The kubelet's Events the watcher follows: its `Failed` ones about pods (a pull, a
/// container it could not create).
const KUBELET_FAILED: &str = "involvedObject.kind=Pod,reason=Failed,source=kubelet";

/// One pending pod and what was seen of it.
struct Held {
    pod: Pod,
    seen: Seen,
}

/// The loop's state.
pub(crate) struct Watcher {
    pub(crate) config: WatchConfig,
    pub(crate) actor: Actor,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) ready: Arc<AtomicBool>,
    pub(crate) leading: watch::Receiver<bool>,
    /// The bound on owners that recreate what is failed.
    pub(crate) breaker: std::sync::Mutex<Breaker>,
}

/// A list being made (between a watch's `Init` and `InitDone`) and the one in use.
#[derive(Default)]
struct Listed<T> {
    now: T,
    next: Option<T>,
    done: bool,
}

impl Watcher {
    /// Runs until a watch's stream ends (it does not: kube-rs's watcher re-lists on errors).
    pub(crate) async fn run(self, client: Client) -> String {
        // kube-rs's default back-off (exponential, up to 30 s, with jitter) between re-lists:
        // without it a watch that fails retries at once, for ever.
        let namespaces = watcher::watcher(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default().labels(&self.config.namespace_label),
        )
        .default_backoff();
        let pods = watcher::watcher(
            Api::<Pod>::all(client.clone()),
            watcher::Config::default().fields("status.phase=Pending"),
        )
        .default_backoff();
        let events = watcher::watcher(
            Api::<KubeEvent>::all(client),
            watcher::Config::default().fields(KUBELET_FAILED),
        )
        .default_backoff();
        let mut namespaces = std::pin::pin!(namespaces);
        let mut pods = std::pin::pin!(pods);
        let mut events = std::pin::pin!(events);
        let mut watched: Listed<BTreeSet<String>> = Listed::default();
        let mut held: Listed<HashMap<String, Held>> = Listed::default();
        let mut tick = tokio::time::interval(tick_of(&self.config));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                // The watches first, the tick only when none has anything: a look waits on the
                // API server and the registry (a second per pod a conflict sends back), and a
                // tick taken while updates queue would decide on stale pods, whose writes
                // conflict, which slows the next look more, and so on.
                biased;
                event = namespaces.next() => match event {
                    Some(Ok(e)) => namespace_event(&mut watched, e),
                    Some(Err(e)) => self.watch_error("namespaces", &e),
                    None => return "the namespace watch ended".into(),
                },
                event = pods.next() => match event {
                    Some(Ok(e)) => pod_event(&mut held, e),
                    Some(Err(e)) => self.watch_error("pods", &e),
                    None => return "the pod watch ended".into(),
                },
                event = events.next() => match event {
                    Some(Ok(e)) => kubelet_event(&mut held, e),
                    Some(Err(e)) => self.watch_error("events", &e),
                    None => return "the event watch ended".into(),
                },
                _ = tick.tick() => {
                    let ready = watched.done && held.done;
                    self.ready.store(ready, Ordering::SeqCst);
                    self.metrics.pending.store(held.now.len() as u64, Ordering::Relaxed);
                    if ready && *self.leading.borrow() {
                        self.look(&watched.now, &mut held.now).await;
                    }
                }
            }
        }
    }

    fn watch_error(&self, what: &'static str, e: &watcher::Error) {
        self.metrics.error(what);
        crate::log::info(
            crate::log::Component::Watch,
            &format!("watching {what}: {e} (retrying)"),
        );
    }

    /// Decides about every pod of a watched namespace, and acts.
    async fn look(&self, watched: &BTreeSet<String>, held: &mut HashMap<String, Held>) {
        let now = Timestamp::now();
        for h in held.values_mut() {
            if !watched.contains(&h.pod.namespace().unwrap_or_default()) {
                continue;
            }
            h.seen.observe(&h.pod, now);
            let rv = h.pod.resource_version().unwrap_or_default();
            let current = h.seen.events_current(&rv, now);
            let mut action = decide(&h.pod, &h.seen, now, &self.config.settings, current);
            if action == Action::NeedEvents {
                if let WriteOutcome::Failed(call, e) =
                    self.actor.read_events(&h.pod, &mut h.seen, now).await
                {
                    // Without the Events there is no evidence: nothing is done this time.
                    self.failure(&h.pod, call, &e);
                    continue;
                }
                // The Events may hold the words a back-off hides: a verdict of its own.
                h.seen.observe(&h.pod, now);
                action = decide(&h.pod, &h.seen, now, &self.config.settings, true);
            }
            self.act(h, action, now).await;
        }
    }

    /// The last checks before a pod is failed: the owner's bound, then, for an image said to be
    /// missing, the registry's own answer. `false`: the pod is not failed now.
    async fn may_fail(&self, h: &mut Held, f: &Finding, now: Timestamp) -> bool {
        let who = who(&h.pod);
        // A Secret, ConfigMap or key the kubelet said is missing may have been made since its
        // last attempt: the watcher does not read them, so the kubelet says it once more.
        if f.needs_attempt {
            say(
                &who,
                &format!(
                    "{} — not failed yet: it may have been created since the kubelet's last attempt; waiting for its next attempt to say the same",
                    f.message()
                ),
                self.config.dry_run,
            );
            h.seen.await_next_attempt(&f.container, now);
            return false;
        }
        // Permanent words right after transient ones need the look's own `not_found`.
        let mut confirmed = !f.needs_look;
        // A look a moment ago that its registry did not answer (the write after it found the
        // pod changed) is not asked again: it would say the same, a second later.
        if self.config.confirm && f.confirmable() && !h.seen.looked_lately(&f.container, now) {
            let keyring = if self.config.confirm_with_pull_secrets {
                let (keyring, unread) = self.actor.pull_secrets(&h.pod).await;
                for (name, why) in unread {
                    self.metrics.error("get secrets");
                    say(
                        &who,
                        &format!("pull secret {name}: {why}; the look goes on without it"),
                        self.config.dry_run,
                    );
                }
                keyring
            } else {
                crate::keyring::Keyring::default()
            };
            match confirm::look(&f.image, keyring).await {
                Look::Inconclusive(status) => {
                    h.seen.record_look(&f.container, now, status);
                    confirmed |= status == crate::report::Status::NotFound;
                    say(
                        &who,
                        &format!(
                            "the registry's own answer to the watcher: {}; the kubelet's words decide",
                            status.as_str()
                        ),
                        self.config.dry_run,
                    );
                }
                Look::Resolves => {
                    say(
                        &who,
                        &format!(
                            "{} — not failed: the image resolves now (its registry answered the watcher's HEAD); waiting for the kubelet's next attempt",
                            f.message()
                        ),
                        self.config.dry_run,
                    );
                    self.metrics.spared(f.word());
                    h.seen.await_next_attempt(&f.container, now);
                    return false;
                }
            }
        }
        if !confirmed {
            say(
                &who,
                &format!(
                    "{} — not failed yet: the first such words after transient ones (an outage may end with one 404), not confirmed by the watcher's own look; waiting for the kubelet's next attempt to say them again",
                    f.message()
                ),
                self.config.dry_run,
            );
            h.seen.await_next_attempt(&f.container, now);
            return false;
        }
        let owner = Owner::of(&h.pod);
        let verdict = match self.breaker.lock() {
            Ok(mut b) => b.admit(&owner, f.word(), now),
            Err(_) => breaker::Verdict::Fail,
        };
        match verdict {
            breaker::Verdict::Fail => true,
            breaker::Verdict::Tripped => {
                let note = format!(
                    "{} — not failed: {} {} had {} pods failed for {} within {:?}, so it recreates what is failed; pods of it are left to the kubelet until that window has passed",
                    f.message(),
                    crate::escape::escape(&owner.namespace),
                    crate::escape::escape(&owner.name),
                    self.config.owner_failure_limit,
                    f.word(),
                    self.config.owner_failure_window,
                );
                say(&who, &note, self.config.dry_run);
                if !self.config.dry_run {
                    if let WriteOutcome::Failed(call, e) = self
                        .actor
                        .event(&h.pod, f, "OwnerFailureLimit", &note)
                        .await
                    {
                        self.failure(&h.pod, call, &e);
                    }
                }
                self.metrics.owner_limited(f.word());
                h.seen.reported(&f.container, f.word());
                false
            }
            breaker::Verdict::Held => {
                self.metrics.owner_limited(f.word());
                h.seen.reported(&f.container, f.word());
                false
            }
        }
    }

    /// Counts a pod failed (or, in a dry run, that would have been) against its owner's bound.
    fn count(&self, pod: &Pod, f: &Finding, now: Timestamp) {
        if let Ok(mut b) = self.breaker.lock() {
            b.count(&Owner::of(pod), f.word(), now);
        }
    }

    async fn act(&self, h: &mut Held, action: Action, now: Timestamp) {
        let who = who(&h.pod);
        if let Action::Fail(f) = &action {
            if !self.may_fail(h, f, now).await {
                return;
            }
        }
        let pod = &h.pod;
        match action {
            Action::Nothing | Action::NeedEvents => {}
            Action::Report(findings) => {
                for f in findings {
                    let permanent = matches!(f.verdict, super::classify::Verdict::Permanent(_));
                    let (reason, note) = report_words(&f, permanent);
                    say(&who, &note, self.config.dry_run);
                    if !self.config.dry_run {
                        if let WriteOutcome::Failed(call, e) =
                            self.actor.event(pod, &f, reason, &note).await
                        {
                            self.failure(pod, call, &e);
                            continue;
                        }
                    }
                    self.metrics.stuck(permanent, f.word());
                    if f.verdict.unrecognized() {
                        self.metrics.unrecognized(&f.waiting);
                    }
                    h.seen.reported(&f.container, f.word());
                }
            }
            Action::Fail(f) => {
                let waited = waited(&f, now);
                if self.config.dry_run {
                    say(
                        &who,
                        &format!("{} — would fail the pod (dry run)", f.message()),
                        true,
                    );
                    self.count(pod, &f, now);
                    self.metrics.stuck(true, f.word());
                    self.metrics.failed(f.word(), true, waited);
                    h.seen.reported(&f.container, f.word());
                    return;
                }
                match self
                    .actor
                    .fail(pod, &f, &self.config.settings.condition_type)
                    .await
                {
                    WriteOutcome::Done => {
                        self.count(pod, &f, now);
                        say(&who, &format!("{} — failed the pod", f.message()), false);
                        self.metrics.stuck(true, f.word());
                        self.metrics.failed(f.word(), false, waited);
                        h.seen.reported(&f.container, f.word());
                    }
                    // The pod changed between the read and the write (most often the kubelet's
                    // status write after its Event was acted on): decided again on the pod as it
                    // is now, at the next look; nothing is counted.
                    WriteOutcome::Changed => crate::log::info(
                        crate::log::Component::Watch,
                        &format!(
                            "{who}: the pod changed since it was read; decided again on the next look"
                        ),
                    ),
                    WriteOutcome::Failed(call, e) => self.failure(pod, call, &e),
                }
            }
            Action::Deadline => {
                if self.config.dry_run {
                    return;
                }
                if let WriteOutcome::Failed(call, e) = self.actor.deadline(pod).await {
                    self.failure(pod, call, &e);
                }
            }
        }
    }

    fn failure(&self, pod: &Pod, call: &'static str, e: &str) {
        self.metrics.error(call);
        crate::log::info(
            crate::log::Component::Watch,
            &format!(
                "{}/{}: {call}: {}",
                pod.namespace().unwrap_or_default(),
                pod.name_any(),
                e
            ),
        );
    }
}

/// The Event's reason and note for a cause that is only reported. Words the classifier does not
/// know get an Event of their own, so that a runtime's new wording is seen where an operator
/// looks, not passed over as one more transient cause.
fn report_words(f: &Finding, permanent: bool) -> (&'static str, String) {
    if permanent {
        let kept = f.kept.as_deref().unwrap_or("kept");
        (
            "StuckPermanent",
            format!("{} — not failed: {kept}", f.message()),
        )
    } else if f.verdict.unrecognized() {
        (
            "StuckUnrecognized",
            format!(
                "{} — words pullcheck does not recognise: left to the kubelet, never acted on; if they name a cause that will not mend, report them with the node's runtime and version",
                f.message()
            ),
        )
    } else {
        (
            "StuckTransient",
            format!("{} — transient ({}): never acted on", f.message(), f.word()),
        )
    }
}

/// `namespace/name` of a pod, for the log.
fn who(pod: &Pod) -> String {
    format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any())
}

/// One line of the watcher's log, about the pod `who`.
fn say(who: &str, what: &str, dry_run: bool) {
    let component = if dry_run {
        crate::log::Component::WatchDryRun
    } else {
        crate::log::Component::Watch
    };
    crate::log::info(component, &format!("{who}: {what}"));
}

/// How long the finding's container had waited.
fn waited(f: &Finding, now: Timestamp) -> Duration {
    let ms = now
        .as_millisecond()
        .saturating_sub(f.since.as_millisecond());
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// How often every pod is looked at: a tenth of the shortest grace, between half a second and 5
/// seconds, so that a pod is acted on within a few seconds of its grace (with the default
/// graces, twice a second). A look is in memory; the API is called only for a
/// pod past its grace, and its Events are read once per change of the pod (or every 30 s).
fn tick_of(config: &WatchConfig) -> Duration {
    (super::grace::shortest(&config.settings.graces) / 10)
        .clamp(Duration::from_millis(500), Duration::from_secs(5))
}

fn namespace_event(listed: &mut Listed<BTreeSet<String>>, event: Event<Namespace>) {
    match event {
        Event::Apply(ns) => {
            listed.now.insert(ns.name_any());
        }
        Event::Delete(ns) => {
            listed.now.remove(&ns.name_any());
        }
        Event::Init => listed.next = Some(BTreeSet::new()),
        Event::InitApply(ns) => {
            listed
                .next
                .get_or_insert_with(BTreeSet::new)
                .insert(ns.name_any());
        }
        Event::InitDone => {
            listed.now = listed.next.take().unwrap_or_default();
            listed.done = true;
        }
    }
}

fn pod_event(listed: &mut Listed<HashMap<String, Held>>, event: Event<Pod>) {
    let key = |p: &Pod| p.uid().unwrap_or_else(|| p.name_any());
    match event {
        Event::Apply(mut pod) => {
            pod.managed_fields_mut().clear();
            keep(&mut listed.now, key(&pod), pod);
        }
        Event::Delete(pod) => {
            listed.now.remove(&key(&pod));
        }
        Event::Init => listed.next = Some(HashMap::new()),
        Event::InitApply(mut pod) => {
            pod.managed_fields_mut().clear();
            let k = key(&pod);
            // What was seen of a pod survives a re-list.
            let mut seen = listed.now.remove(&k).map(|h| h.seen).unwrap_or_default();
            seen.observe(&pod, Timestamp::now());
            listed
                .next
                .get_or_insert_with(HashMap::new)
                .insert(k, Held { pod, seen });
        }
        Event::InitDone => {
            listed.now = listed.next.take().unwrap_or_default();
            listed.done = true;
        }
    }
}

/// Takes one of the kubelet's Events into what was seen of the pod it names, when that pod is
/// held (a pod not yet held has its Events read when it is decided about).
fn kubelet_event(listed: &mut Listed<HashMap<String, Held>>, event: Event<KubeEvent>) {
    let (Event::Apply(e) | Event::InitApply(e)) = event else {
        return;
    };
    let Some(uid) = e.involved_object.uid.as_deref() else {
        return;
    };
    let held = listed
        .now
        .get_mut(uid)
        .or_else(|| listed.next.as_mut().and_then(|n| n.get_mut(uid)));
    if let Some(h) = held {
        h.seen.record(&e);
    }
}

/// Holds the pod's new state, and observes it at once: an `ErrImagePull` that lasts less than
/// a tick still leaves its words for the back-off that follows.
fn keep(map: &mut HashMap<String, Held>, key: String, pod: Pod) {
    let h = map.entry(key).or_insert_with(|| Held {
        pod: Pod::default(),
        seen: Seen::default(),
    });
    h.seen.observe(&pod, Timestamp::now());
    h.pod = pod;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(uid: &str, reason: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": uid, "namespace": "team", "uid": uid,
                         "managedFields": [{"manager": "kubelet"}]},
            "status": {"containerStatuses": [{
                "name": "main", "image": "r/app:v9", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": reason, "message": "m"}}
            }]}
        }))
        .unwrap()
    }

    #[test]
    fn a_relist_keeps_what_was_seen_and_drops_what_is_gone() {
        let mut listed: Listed<HashMap<String, Held>> = Listed::default();
        pod_event(&mut listed, Event::Init);
        pod_event(&mut listed, Event::InitApply(pod("a", "ErrImagePull")));
        assert!(!listed.done && listed.now.is_empty());
        pod_event(&mut listed, Event::InitDone);
        assert!(listed.done);
        let seen = listed.now["a"].seen.clone();
        assert_ne!(seen, Seen::default());
        assert!(
            listed.now["a"]
                .pod
                .metadata
                .managed_fields
                .as_deref()
                .unwrap_or_default()
                .is_empty()
        );
        pod_event(&mut listed, Event::Apply(pod("b", "ErrImagePull")));
        // A re-list after a watch error: `a` is still pending, `b` is gone.
        pod_event(&mut listed, Event::Init);
        pod_event(&mut listed, Event::InitApply(pod("a", "ErrImagePull")));
        pod_event(&mut listed, Event::InitDone);
        assert_eq!(listed.now.len(), 1);
        assert_eq!(listed.now["a"].seen, seen, "the first time seen is kept");
        pod_event(&mut listed, Event::Delete(pod("a", "ErrImagePull")));
        assert!(listed.now.is_empty());
    }

    #[test]
    fn words_not_recognised_get_their_own_event() {
        use super::super::classify::{Transient, Verdict};
        let finding = |verdict| Finding {
            container: "main".into(),
            image: "r/app:v9".into(),
            waiting: "ErrImagePull".into(),
            words: "a runtime's new words".into(),
            verdict,
            since: Timestamp::from_second(1_800_000_000).unwrap(),
            kept: None,
            needs_look: false,
            needs_attempt: false,
        };
        let (reason, note) = report_words(&finding(Verdict::Transient(Transient::Unknown)), false);
        assert_eq!(reason, "StuckUnrecognized");
        assert!(note.contains("a runtime's new words"), "{note}");
        assert!(note.contains("does not recognise"), "{note}");
        let (reason, _) = report_words(&finding(Verdict::Transient(Transient::Doubtful)), false);
        assert_eq!(reason, "StuckTransient");
        let (reason, _) = report_words(&finding(Verdict::Transient(Transient::Connect)), false);
        assert_eq!(reason, "StuckTransient");
    }

    #[test]
    fn namespaces_follow_their_label() {
        let ns = |name: &str| -> Namespace {
            serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
        };
        let mut listed: Listed<BTreeSet<String>> = Listed::default();
        namespace_event(&mut listed, Event::Init);
        namespace_event(&mut listed, Event::InitApply(ns("a")));
        namespace_event(&mut listed, Event::InitDone);
        namespace_event(&mut listed, Event::Apply(ns("b")));
        namespace_event(&mut listed, Event::Delete(ns("a")));
        assert_eq!(listed.now, BTreeSet::from(["b".to_string()]));
    }
}
