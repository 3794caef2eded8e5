//! What the watcher remembers of one pod between two looks, kept in memory only (a new leader
//! starts every grace again: late, never early): for each container, the verdict its words give
//! now and since when ([`Evidence`]), whether those words appeared while this process watched,
//! the words of its last failed pull, when the kubelet last tried and last failed
//! ([`Attempts`], from the pod's Events), and the watcher's own last look at the registry.
//!
//! The kubelet's `Failed` Event of a pull comes as the pull fails, its status only at the pod
//! worker's next sync: after an init container ends that is 10–15 s later (a sync that errs is
//! retried after a back-off, and no container changed to bring it sooner). While the status
//! still shows the container waiting to start, a failed pull the Events hold, with no pull
//! since, is its waiting ([`Seen::waiting_of`]).
//!
//! This is what keeps the watcher off the kubelet's stale words. A waiting message is not
//! renewed while a pull is under way (a back-off retry that pulls a large layer for minutes
//! still shows the previous attempt's `not found`), and the back-off (10, 20, 40, 80, 160,
//! 300 s) makes words minutes old normal. So a verdict's grace runs from its own first sight (a
//! different verdict in between starts it again), and `decide` acts only on evidence newer than
//! that and with no attempt under way.

use super::classify::{ERR_IMAGE_PULL, IMAGE_PULL_BACK_OFF, Verdict, WATCHED, classify};
use crate::report::Status;
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use k8s_openapi::jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long Events read at one resourceVersion of the pod stay current. A pull that starts
/// changes nothing in the pod (only an Event says it), so they are read again after this even
/// when the pod did not change.
const EVENTS_CURRENT: Duration = Duration::from_secs(30);

/// How long a look of the watcher's own that its registry did not answer with `not_found`
/// (unreachable from the watcher's pod, refused, untrusted) keeps it from looking again at the
/// same container: a write that finds the pod changed (the kubelet wrote its status in between)
/// is made again at the next tick, and a second look would cost the loop up to a second more for
/// the same answer. A `not_found` is never kept: that look is quick, and the next one is what
/// would see a tag pushed since.
const LOOK_FRESH: Duration = Duration::from_secs(10);

/// The `source.component` (and `reportingComponent`) of the kubelet's Events.
pub(crate) const KUBELET: &str = "kubelet";

/// The kubelet's Event message of a sync in back-off: no attempt was made.
const BACK_OFF_SYNC: &str = "Error: ImagePullBackOff";

/// One container's current verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Evidence {
    /// What its words say now.
    pub(crate) verdict: Verdict,
    /// When the watcher first saw them say it.
    pub(crate) since: Timestamp,
    /// Whether they changed to it while this process watched the pod: then the attempt that
    /// gave them has just ended. Words found on a first look (a new leader, a restart) may be
    /// minutes old, and count only once a later attempt has ended the same way.
    pub(crate) live: bool,
    /// Whether the words before them, while this process watched, were transient: a registry
    /// coming back from an outage may answer one 404 before it serves the image, so the first
    /// permanent words after transient ones are proof only once the watcher's own look, or a
    /// later attempt of the kubelet's, says the same.
    pub(crate) after_transient: bool,
    /// Set when the watcher held back from acting on them (the image resolved where it asked,
    /// a first 404 after an outage it could not confirm, a missing Secret or ConfigMap that may
    /// have been made since): they count again only once an attempt of the kubelet's has ended
    /// after this moment.
    pub(crate) held_at: Option<Timestamp>,
}

/// When the kubelet last tried and last failed for one container, from its Events (second
/// precision, as the Events carry them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Attempts {
    /// The newest `Failed` Event that ends an attempt.
    pub(crate) failed: Option<Timestamp>,
    /// The newest `Pulling` Event.
    pub(crate) pulling: Option<Timestamp>,
    /// The newest `Pulled` Event (pulled, or already present on the node).
    pub(crate) pulled: Option<Timestamp>,
}

impl Attempts {
    /// A pull is under way: the kubelet said `Pulling` after its last failure. Events of the
    /// same second count as the failure being the later (an image that is not there fails in
    /// the second it is asked for).
    pub(crate) fn pulling_now(&self) -> bool {
        match (self.pulling, self.failed) {
            (Some(p), Some(f)) => p.as_second() > f.as_second(),
            (Some(_), None) => true,
            _ => false,
        }
    }

    /// An attempt ended after `since`, in whole seconds (the same second is not after).
    pub(crate) fn failed_after(&self, since: Timestamp) -> bool {
        self.failed
            .is_some_and(|f| f.as_second() > since.as_second())
    }

    /// The kubelet pulled, or began to, after a failure at `failed`: a pull after it, or the
    /// image found, in the same second or later (in doubt, the failure is not the last word).
    fn went_on_after(&self, failed: Timestamp) -> bool {
        let after = |t: Option<Timestamp>, same: bool| {
            t.is_some_and(|t| {
                t.as_second() > failed.as_second() || (same && t.as_second() == failed.as_second())
            })
        };
        after(self.pulling, false) || after(self.pulled, true)
    }
}

/// What the watcher remembers of one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Whether the pod was observed before.
    observed: bool,
    /// By container: the waiting reason's group, and when it was first seen waiting in it.
    waiting: BTreeMap<String, (&'static str, Timestamp)>,
    /// By container: its current verdict.
    evidence: BTreeMap<String, Evidence>,
    /// By container: the words of its last failed pull (an `ErrImagePull` message, the pull
    /// error inside a back-off message, or the kubelet's `Failed` Event).
    pull_errors: BTreeMap<String, String>,
    /// By container: what its Events say of the kubelet's attempts.
    attempts: BTreeMap<String, Attempts>,
    /// By container: its newest failed pull in the Events, when, and its words.
    failed_pulls: BTreeMap<String, (Option<Timestamp>, String)>,
    /// The pod's resourceVersion and the time its Events were last read.
    events_read: Option<(String, Timestamp)>,
    /// The (container, verdict word) pairs already reported or acted on.
    reported: BTreeSet<(String, &'static str)>,
    /// By container: when the watcher's own look last got an answer other than `not_found`.
    looks: BTreeMap<String, Timestamp>,
}

impl Seen {
    /// Takes in what the pod says now: each waiting container's verdict and since when, and
    /// the last words of a failed pull.
    pub(crate) fn observe(&mut self, pod: &Pod, now: Timestamp) {
        let live = self.observed;
        self.observed = true;
        let mut waiting_now = BTreeSet::new();
        for status in statuses(pod) {
            let Some((reason, message)) = self.waiting_of(status) else {
                continue;
            };
            let Some(group) = group(reason) else {
                continue;
            };
            let (reason, message) = (reason.to_string(), message.to_string());
            let (reason, message) = (reason.as_str(), message.as_str());
            let name = &status.name;
            waiting_now.insert(name.clone());
            let entry = self.waiting.entry(name.clone()).or_insert((group, now));
            if entry.0 != group {
                *entry = (group, now);
            }
            let words = match reason {
                ERR_IMAGE_PULL => Some(message),
                IMAGE_PULL_BACK_OFF => super::classify::back_off_words(message),
                _ => None,
            };
            if let Some(words) = words.filter(|w| !w.trim().is_empty()) {
                self.pull_errors.insert(name.clone(), words.to_string());
            }
            let Some(verdict) = classify(reason, message, self.words_of(name)) else {
                continue;
            };
            let before = self.evidence.get(name).map(|e| e.verdict);
            if before != Some(verdict) {
                let evidence = Evidence {
                    verdict,
                    since: now,
                    live,
                    after_transient: matches!(before, Some(Verdict::Transient(_))),
                    held_at: None,
                };
                self.evidence.insert(name.clone(), evidence);
            }
        }
        // A container that waits no more (it started, or waits for something else) starts
        // its grace again the next time.
        self.waiting.retain(|name, _| waiting_now.contains(name));
        self.evidence.retain(|name, _| waiting_now.contains(name));
    }

    /// The container's waiting reason and message: the status's own, or, while it shows the
    /// container waiting to start (`PodInitializing`, `ContainerCreating`, …) and the Events
    /// hold a failed pull with no pull since, `ErrImagePull` and that pull's words, which the
    /// kubelet writes into the status only at its next sync.
    pub(crate) fn waiting_of<'a>(
        &'a self,
        status: &'a ContainerStatus,
    ) -> Option<(&'a str, &'a str)> {
        let (reason, message) = waiting(status)?;
        if group(reason).is_some() {
            return Some((reason, message));
        }
        match self.failed_pulls.get(&status.name) {
            Some((Some(at), words)) if !self.attempts(&status.name).went_on_after(*at) => {
                Some((ERR_IMAGE_PULL, words.as_str()))
            }
            _ => Some((reason, message)),
        }
    }

    /// Takes in one of the pod's Events, in any order (a read of the pod's Events, or the watch
    /// of the kubelet's `Failed` ones): only the kubelet's own, since only the node's words
    /// count.
    pub(crate) fn record(&mut self, e: &Event) {
        let kubelet = e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(KUBELET)
            || e.reporting_component.as_deref() == Some(KUBELET);
        if !kubelet {
            return;
        }
        self.record_event(
            e.involved_object.field_path.as_deref().unwrap_or_default(),
            e.reason.as_deref().unwrap_or_default(),
            e.message.as_deref().unwrap_or_default(),
            when(e),
        );
    }

    /// Takes in an Event's `involvedObject.fieldPath` (`spec.containers{NAME}`,
    /// `spec.initContainers{NAME}`), reason, message and time.
    pub(crate) fn record_event(
        &mut self,
        field_path: &str,
        reason: &str,
        message: &str,
        at: Option<Timestamp>,
    ) {
        let Some(name) = field_path
            .split_once('{')
            .and_then(|(_, rest)| rest.strip_suffix('}'))
        else {
            return;
        };
        let attempts = self.attempts.entry(name.to_string()).or_default();
        let newest = |slot: &mut Option<Timestamp>| {
            if let Some(t) = at {
                *slot = Some(slot.map_or(t, |s| s.max(t)));
            }
        };
        match reason {
            "Pulling" => newest(&mut attempts.pulling),
            "Pulled" => newest(&mut attempts.pulled),
            "Failed" if message != BACK_OFF_SYNC => newest(&mut attempts.failed),
            _ => {}
        }
        if reason != "Failed" {
            return;
        }
        let Some(words) = super::classify::event_pull_error(message) else {
            return;
        };
        // The newest pull's words are kept (an Event without a time is the oldest).
        let newer = self
            .failed_pulls
            .get(name)
            .is_none_or(|(t, _)| at.is_some() && at >= *t);
        if newer {
            self.failed_pulls
                .insert(name.to_string(), (at, words.to_string()));
            self.pull_errors.insert(name.to_string(), words.to_string());
        }
    }

    /// Forgets what Events said, before they are read again at `resource_version`.
    pub(crate) fn events_reading(&mut self, resource_version: String, now: Timestamp) {
        self.attempts.clear();
        self.failed_pulls.clear();
        self.events_read = Some((resource_version, now));
    }

    /// Whether the Events read before are still current for the pod at `resource_version`.
    pub(crate) fn events_current(&self, resource_version: &str, now: Timestamp) -> bool {
        self.events_read.as_ref().is_some_and(|(rv, at)| {
            let age = now.as_millisecond().saturating_sub(at.as_millisecond());
            rv == resource_version && u128::try_from(age).unwrap_or(0) < EVENTS_CURRENT.as_millis()
        })
    }

    /// The container's words are not proof yet (the image resolves where the watcher asked, a
    /// first 404 after an outage that the watcher's look could not confirm, a missing object
    /// that may have been made since the kubelet last looked): its verdict counts again only
    /// once an attempt of the kubelet's has ended after `now` with the same words. Its grace is
    /// not started again: it has passed.
    pub(crate) fn await_next_attempt(&mut self, container: &str, now: Timestamp) {
        if let Some(e) = self.evidence.get_mut(container) {
            e.held_at = Some(now);
            e.after_transient = false;
        }
    }

    /// Whether the watcher looked at the registry for the container less than [`LOOK_FRESH`]
    /// ago and got an answer other than `not_found`.
    pub(crate) fn looked_lately(&self, container: &str, now: Timestamp) -> bool {
        self.looks.get(container).is_some_and(|at| {
            let age = now.as_millisecond().saturating_sub(at.as_millisecond());
            u128::try_from(age).unwrap_or(u128::MAX) < LOOK_FRESH.as_millis()
        })
    }

    /// Keeps when an inconclusive look was made, for [`Seen::looked_lately`] (not a
    /// `not_found`).
    pub(crate) fn record_look(&mut self, container: &str, now: Timestamp, status: Status) {
        if status != Status::NotFound {
            self.looks.insert(container.to_string(), now);
        }
    }

    /// Marks a finding reported (or acted on), so that it is not again.
    pub(crate) fn reported(&mut self, container: &str, word: &'static str) {
        self.reported.insert((container.to_string(), word));
    }

    /// Whether it was.
    pub(crate) fn was_reported(&self, container: &str, word: &str) -> bool {
        self.reported
            .iter()
            .any(|(c, w)| c == container && *w == word)
    }

    /// The container's current verdict.
    pub(crate) fn evidence(&self, container: &str) -> Option<Evidence> {
        self.evidence.get(container).copied()
    }

    /// Since when the container waits in its current group of waiting reasons.
    pub(crate) fn waiting_since(&self, container: &str) -> Option<Timestamp> {
        self.waiting.get(container).map(|(_, since)| *since)
    }

    /// What the container's Events say of the kubelet's attempts.
    pub(crate) fn attempts(&self, container: &str) -> Attempts {
        self.attempts.get(container).copied().unwrap_or_default()
    }

    /// The words of the container's last failed pull.
    pub(crate) fn words_of(&self, container: &str) -> Option<&str> {
        self.pull_errors.get(container).map(String::as_str)
    }
}

/// When an Event last happened: the kubelet's recorder sets `lastTimestamp`; an
/// `events.k8s.io` writer sets `series.lastObservedTime` or `eventTime` instead.
fn when(e: &Event) -> Option<Timestamp> {
    let series = e
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref());
    [
        e.last_timestamp.as_ref().map(|t| t.0),
        series.map(|t| t.0),
        e.event_time.as_ref().map(|t| t.0),
        e.first_timestamp.as_ref().map(|t| t.0),
    ]
    .into_iter()
    .flatten()
    .max()
}

/// The init containers' statuses (sidecars among them), then the containers': an init
/// container that waits blocks the others, so its cause comes first.
pub(crate) fn statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    let status = pod.status.as_ref();
    let init = status.and_then(|s| s.init_container_statuses.as_deref());
    let main = status.and_then(|s| s.container_statuses.as_deref());
    init.unwrap_or_default()
        .iter()
        .chain(main.unwrap_or_default())
}

/// The waiting reason and message of a container, when it waits.
pub(crate) fn waiting(status: &ContainerStatus) -> Option<(&str, &str)> {
    let waiting = status.state.as_ref()?.waiting.as_ref()?;
    let reason = waiting.reason.as_deref()?;
    Some((reason, waiting.message.as_deref().unwrap_or_default()))
}

/// The group a watched waiting reason belongs to: a failed pull and its back-off alternate, and
/// are one wait.
pub(crate) fn group(reason: &str) -> Option<&'static str> {
    match reason {
        ERR_IMAGE_PULL | IMAGE_PULL_BACK_OFF => Some("pull"),
        _ => WATCHED.iter().find(|w| **w == reason).copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    #[test]
    fn a_look_without_an_answer_stands_for_ten_seconds_and_a_not_found_never() {
        let mut seen = Seen::default();
        assert!(!seen.looked_lately("main", at(0)));
        seen.record_look("main", at(0), Status::Unreachable);
        assert!(seen.looked_lately("main", at(9)));
        assert!(!seen.looked_lately("other", at(9)));
        assert!(!seen.looked_lately("main", at(10)));
        seen.record_look("other", at(20), Status::NotFound);
        assert!(!seen.looked_lately("other", at(20)));
    }

    #[test]
    fn a_pull_is_under_way_when_pulling_is_newer_than_the_last_failure() {
        let a = |failed: Option<i64>, pulling: Option<i64>| Attempts {
            failed: failed.map(at),
            pulling: pulling.map(at),
            pulled: None,
        };
        assert!(a(Some(10), Some(20)).pulling_now());
        assert!(a(None, Some(20)).pulling_now());
        assert!(!a(Some(10), Some(10)).pulling_now(), "the same second");
        assert!(!a(Some(30), Some(20)).pulling_now());
        assert!(!a(None, None).pulling_now());
        assert!(a(Some(11), None).failed_after(at(10)));
        assert!(!a(Some(10), None).failed_after(at(10)));
        assert!(!a(None, None).failed_after(at(10)));
    }

    #[test]
    fn events_make_attempts_and_back_off_syncs_are_not_attempts() {
        let mut seen = Seen::default();
        let c = "spec.containers{main}";
        seen.record_event(c, "Failed", "Error: ImagePullBackOff", Some(at(50)));
        seen.record_event(c, "Pulling", "Pulling image \"r/a:1\"", Some(at(40)));
        seen.record_event(
            c,
            "Failed",
            "Failed to pull image \"r/a:1\": not found",
            Some(at(30)),
        );
        seen.record_event(c, "Failed", "Error: ErrImagePull", Some(at(30)));
        seen.record_event("spec.initContainers{x}", "Pulling", "p", Some(at(1)));
        let a = seen.attempts("main");
        assert_eq!((a.failed, a.pulling), (Some(at(30)), Some(at(40))));
        // In any order, the newest pull's words are kept.
        seen.record_event(
            c,
            "Failed",
            "Failed to pull image \"r/a:1\": older",
            Some(at(20)),
        );
        seen.record_event(c, "Failed", "Failed to pull image \"r/a:1\": untimed", None);
        assert!(a.pulling_now());
        assert_eq!(seen.words_of("main"), Some("not found"));
        assert_eq!(seen.attempts("x").pulling, Some(at(1)));
        seen.record_event(
            c,
            "Failed",
            "Failed to pull image \"r/a:1\": newer",
            Some(at(45)),
        );
        assert_eq!(seen.words_of("main"), Some("newer"));
        seen.events_reading("7".into(), at(60));
        assert_eq!(seen.attempts("main"), Attempts::default());
        assert!(seen.events_current("7", at(89)));
        assert!(!seen.events_current("7", at(90)));
        assert!(!seen.events_current("8", at(61)));
    }

    #[test]
    fn only_the_kubelets_events_are_taken_in() {
        let event = |component: &str| -> Event {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod", "fieldPath": "spec.containers{main}"},
                "reason": "Failed",
                "message": "Failed to pull image \"r/a:1\": not found",
                "lastTimestamp": "2027-01-15T08:00:00Z",
                "source": {"component": component},
            }))
            .unwrap()
        };
        let mut seen = Seen::default();
        seen.record(&event("someone"));
        assert_eq!(seen.words_of("main"), None);
        seen.record(&event(KUBELET));
        assert_eq!(seen.words_of("main"), Some("not found"));
        assert!(seen.attempts("main").failed.is_some());
    }
}
