//! What to do with one pending pod, decided without I/O: from the pod as the API server holds
//! it, the time now, what the watcher has seen of it before ([`Seen`]), and the settings
//! ([`Settings`]). The loop in `run.rs` only carries [`Action`]s out.
//!
//! - A container waits with one of [`WATCHED`]'s reasons for less than its grace: nothing.
//! - Longer, for a transient cause: reported once (an Event and a metric), never acted on.
//! - Longer, for a permanent cause: the pod is failed (the condition, an Event, the delete)
//!   when it is owned by a Job or annotated `pullcheck.dev/fail-when-stuck: "true"`, and never
//!   when it belongs to a ReplicaSet (a Deployment's), a StatefulSet, a DaemonSet or a
//!   ReplicationController: those only get the Event and the metric, as does every other pod.
//! - A pod that already has the condition is never patched again; when the condition is this
//!   watcher's (its reason a pullcheck word) and the pod is still there, only the delete is done.

use super::classify::{ERR_IMAGE_PULL, IMAGE_PULL_BACK_OFF, Verdict, WATCHED, classify};
use crate::report::{TERMINATION_MESSAGE_MAX, cut, escape};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The annotation that lets a pod no Job owns be failed.
pub(crate) const FAIL_WHEN_STUCK: &str = "pullcheck.dev/fail-when-stuck";
/// The owners whose pods are never deleted: their controller would only make another, and a
/// Deployment's rollout is not a Job to fail.
const NEVER_DELETED: [&str; 4] = [
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "ReplicationController",
];

/// How long a waiting reason may last before it is acted on, and the condition's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `--grace`.
    pub(crate) grace: Duration,
    /// `--grace-for REASON=DURATION`, by waiting reason.
    pub(crate) grace_for: BTreeMap<String, Duration>,
    /// `--condition-type`.
    pub(crate) condition_type: String,
}

impl Settings {
    /// The grace of one waiting reason. A failed pull and its back-off are one wait: a
    /// `--grace-for` of either is the grace of both (the shorter, when both are given).
    pub(crate) fn grace(&self, reason: &str) -> Duration {
        let own = |r: &str| self.grace_for.get(r).copied();
        let found = if group(reason) == Some("pull") {
            [own(ERR_IMAGE_PULL), own(IMAGE_PULL_BACK_OFF)]
                .into_iter()
                .flatten()
                .min()
        } else {
            own(reason)
        };
        found.unwrap_or(self.grace)
    }
}

/// What the watcher remembers of one pod between two looks: kept in memory only, so that a
/// new leader starts every grace again (late, never early).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// By container: the waiting reason's group, and when it was first seen waiting in it.
    waiting: BTreeMap<String, (&'static str, Timestamp)>,
    /// By container: the words of its last failed pull (an `ErrImagePull` message, the pull
    /// error inside a back-off message, or the kubelet's `Failed` Event).
    pull_errors: BTreeMap<String, String>,
    /// The (container, verdict word) pairs already reported.
    reported: BTreeSet<(String, &'static str)>,
}

/// One container waiting too long, and what its words say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// The container's name.
    pub(crate) container: String,
    /// Its image, as the pod spec gives it.
    pub(crate) image: String,
    /// The kubelet's waiting reason.
    pub(crate) waiting: String,
    /// The kubelet's own words (for a back-off, those of the last failed pull).
    pub(crate) words: String,
    /// What they say.
    pub(crate) verdict: Verdict,
    /// When the watcher first saw it waiting so.
    pub(crate) since: Timestamp,
    /// Why the pod is not failed, when it is not.
    pub(crate) kept: Option<String>,
}

impl Finding {
    /// The condition's and the Event's message: the container, the image and the kubelet's
    /// words, every value escaped, cut as the termination message is.
    pub(crate) fn message(&self) -> String {
        let text = format!(
            "container \"{}\" (image \"{}\") waits with {}: {}",
            escape(&self.container),
            escape(&self.image),
            escape(&self.waiting),
            escape(&self.words)
        );
        cut(&text, TERMINATION_MESSAGE_MAX)
    }

    /// The metric's label: the verdict's word.
    pub(crate) fn word(&self) -> &'static str {
        self.verdict.as_str()
    }
}

/// What to do with one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Nothing now.
    Nothing,
    /// A back-off past its grace without the pull's words: read the pod's `Failed` Events
    /// into [`Seen::record_event`], then decide again.
    NeedEvents,
    /// Report these (an Event and a metric each), once.
    Report(Vec<Finding>),
    /// Fail the pod: the condition, a Warning Event, then the delete.
    Fail(Finding),
    /// An earlier look gave the condition and the delete did not happen (a restart between
    /// the two, a conflict): delete only, never patch again.
    Delete,
}

impl Seen {
    /// Takes in what the pod says now: the first time each container is seen waiting in each
    /// group of reasons, and the last words of a failed pull.
    pub(crate) fn observe(&mut self, pod: &Pod, now: Timestamp) {
        let mut waiting_now = BTreeSet::new();
        for status in statuses(pod) {
            let Some((reason, message)) = waiting(status) else {
                continue;
            };
            let Some(group) = group(reason) else {
                continue;
            };
            waiting_now.insert(status.name.clone());
            let entry = self
                .waiting
                .entry(status.name.clone())
                .or_insert((group, now));
            if entry.0 != group {
                *entry = (group, now);
            }
            let words = match reason {
                ERR_IMAGE_PULL => Some(message),
                IMAGE_PULL_BACK_OFF => super::classify::back_off_words(message),
                _ => None,
            };
            if let Some(words) = words.filter(|w| !w.trim().is_empty()) {
                self.pull_errors
                    .insert(status.name.clone(), words.to_string());
            }
        }
        // A container that waits no more (it started, or waits for something else) starts
        // its grace again the next time.
        self.waiting.retain(|name, _| waiting_now.contains(name));
    }

    /// Takes in one of the kubelet's `Failed` Events of the pod: its `involvedObject.fieldPath`
    /// (`spec.containers{NAME}`, `spec.initContainers{NAME}`) and message. Events that do not
    /// carry a pull's words are left out.
    pub(crate) fn record_event(&mut self, field_path: &str, message: &str) {
        let Some(words) = super::classify::event_pull_error(message) else {
            return;
        };
        let Some(name) = field_path
            .split_once('{')
            .and_then(|(_, rest)| rest.strip_suffix('}'))
        else {
            return;
        };
        self.pull_errors
            .entry(name.to_string())
            .or_insert_with(|| words.to_string());
    }

    /// Marks a finding reported, so that it is not reported again.
    pub(crate) fn reported(&mut self, finding: &Finding) {
        self.reported
            .insert((finding.container.clone(), finding.verdict.as_str()));
    }

    /// The words of the container's last failed pull.
    fn words_of(&self, container: &str) -> Option<&str> {
        self.pull_errors.get(container).map(String::as_str)
    }
}

/// Decides what to do with `pod` now. `events_read`: the pod's `Failed` Events were read into
/// `seen` already (so a back-off without words is reported as it is, not asked again).
pub(crate) fn decide(
    pod: &Pod,
    seen: &Seen,
    now: Timestamp,
    settings: &Settings,
    events_read: bool,
) -> Action {
    if pod.metadata.deletion_timestamp.is_some() {
        return Action::Nothing;
    }
    let kept = kept(pod);
    if let Some(reason) = condition(pod, &settings.condition_type) {
        // Only a condition this watcher gave (its reason is a pullcheck word) leads to the
        // delete: another controller's condition of the same type is left to it.
        let ours = crate::Reason::ALL.iter().any(|r| r.about().word == reason);
        return if kept.is_none() && ours {
            Action::Delete
        } else {
            Action::Nothing
        };
    }
    let mut reports = Vec::new();
    for status in statuses(pod) {
        let Some((reason, message)) = waiting(status) else {
            continue;
        };
        let Some(&(_, since)) = seen.waiting.get(&status.name) else {
            continue;
        };
        let waited = now.as_millisecond().saturating_sub(since.as_millisecond());
        let grace = i64::try_from(settings.grace(reason).as_millis()).unwrap_or(i64::MAX);
        if waited < grace {
            continue;
        }
        let pull_error = seen.words_of(&status.name);
        if reason == IMAGE_PULL_BACK_OFF
            && super::classify::back_off_words(message).is_none()
            && pull_error.is_none()
            && !events_read
        {
            return Action::NeedEvents;
        }
        let Some(verdict) = classify(reason, message, pull_error) else {
            continue;
        };
        let words = match reason {
            IMAGE_PULL_BACK_OFF => super::classify::back_off_words(message)
                .or(pull_error)
                .unwrap_or(message),
            _ => message,
        };
        let finding = Finding {
            container: status.name.clone(),
            image: image_of(pod, status),
            waiting: reason.to_string(),
            words: words.to_string(),
            verdict,
            since,
            kept: kept.clone(),
        };
        // Reported before (or, in a dry run, failed before): not again.
        if seen
            .reported
            .contains(&(status.name.clone(), verdict.as_str()))
        {
            continue;
        }
        if matches!(verdict, Verdict::Permanent(_)) && kept.is_none() {
            return Action::Fail(finding);
        }
        reports.push(finding);
    }
    if reports.is_empty() {
        Action::Nothing
    } else {
        Action::Report(reports)
    }
}

/// Why a pod with a permanent cause is not failed, or `None` when it may be.
fn kept(pod: &Pod) -> Option<String> {
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    let controller = owners.iter().find(|o| o.controller == Some(true));
    if let Some(o) = controller.filter(|o| NEVER_DELETED.contains(&o.kind.as_str())) {
        return Some(format!(
            "owned by {} {}: never deleted",
            o.kind,
            escape(&o.name)
        ));
    }
    if controller.is_some_and(|o| o.kind == "Job" && o.api_version.starts_with("batch/")) {
        return None;
    }
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(FAIL_WHEN_STUCK))
        .is_some_and(|v| v == "true");
    if annotated {
        return None;
    }
    Some(format!(
        "not owned by a Job and not annotated {FAIL_WHEN_STUCK}: \"true\""
    ))
}

/// The reason of the pod's condition of this type (status `True`), when it has one.
fn condition<'a>(pod: &'a Pod, condition_type: &str) -> Option<&'a str> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == condition_type && c.status == "True")
        .map(|c| c.reason.as_deref().unwrap_or_default())
}

/// The init containers' statuses, then the containers': an init container that waits blocks
/// the others, so its cause comes first.
fn statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    let status = pod.status.as_ref();
    let init = status.and_then(|s| s.init_container_statuses.as_deref());
    let main = status.and_then(|s| s.container_statuses.as_deref());
    init.unwrap_or_default()
        .iter()
        .chain(main.unwrap_or_default())
}

/// The waiting reason and message of a container, when it waits.
fn waiting(status: &ContainerStatus) -> Option<(&str, &str)> {
    let waiting = status.state.as_ref()?.waiting.as_ref()?;
    let reason = waiting.reason.as_deref()?;
    Some((reason, waiting.message.as_deref().unwrap_or_default()))
}

/// The group a watched waiting reason belongs to: a failed pull and its back-off alternate, and
/// are one wait.
fn group(reason: &str) -> Option<&'static str> {
    match reason {
        ERR_IMAGE_PULL | IMAGE_PULL_BACK_OFF => Some("pull"),
        _ => WATCHED.iter().find(|w| **w == reason).copied(),
    }
}

/// The container's image as the pod spec gives it (the status may hold a resolved name).
fn image_of(pod: &Pod, status: &ContainerStatus) -> String {
    let spec = pod.spec.as_ref();
    let init = spec.and_then(|s| s.init_containers.as_deref());
    let main = spec.map(|s| s.containers.as_slice());
    init.unwrap_or_default()
        .iter()
        .chain(main.unwrap_or_default())
        .find(|c| c.name == status.name)
        .and_then(|c| c.image.clone())
        .unwrap_or_else(|| status.image.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GRACE: Duration = Duration::from_secs(120);
    const NOT_FOUND: &str = "rpc error: code = NotFound desc = failed to pull and unpack image \"r/app:v9\": failed to resolve reference \"r/app:v9\": r/app:v9: not found";
    const REFUSED: &str = "rpc error: code = Unknown desc = failed to pull and unpack image \"r/app:v1\": failed to resolve reference \"r/app:v1\": failed to do request: Head \"http://r/v2/app/manifests/v1\": dial tcp 127.0.0.1:5000: connect: connection refused";

    fn settings() -> Settings {
        Settings {
            grace: GRACE,
            grace_for: BTreeMap::from([(
                "CreateContainerConfigError".to_string(),
                Duration::from_secs(10),
            )]),
            condition_type: "ConfigIssue".into(),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    /// A pending pod with one container `main` of image `r/app:v9` waiting with `reason`.
    fn pod(owner: Option<(&str, &str)>, reason: &str, message: &str) -> Pod {
        let mut meta =
            json!({"name": "p", "namespace": "team", "uid": "u1", "resourceVersion": "7"});
        if let Some((api_version, kind)) = owner {
            meta["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind, "name": "o", "uid": "o1", "controller": true}]);
        }
        serde_json::from_value(json!({
            "metadata": meta,
            "spec": {"containers": [{"name": "main", "image": "r/app:v9"}]},
            "status": {"phase": "Pending", "containerStatuses": [{
                "name": "main", "image": "r/app:v9", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": reason, "message": message}}
            }]}
        }))
        .unwrap()
    }

    fn job_pod(reason: &str, message: &str) -> Pod {
        pod(Some(("batch/v1", "Job")), reason, message)
    }

    /// Observes the pod at time 0, decides at `now`.
    fn decide_at(pod: &Pod, now: i64) -> Action {
        let mut seen = Seen::default();
        seen.observe(pod, at(0));
        seen.observe(pod, at(now));
        decide(pod, &seen, at(now), &settings(), false)
    }

    fn verdict(action: &Action) -> Option<Verdict> {
        match action {
            Action::Fail(f) => Some(f.verdict),
            Action::Report(r) => r.first().map(|f| f.verdict),
            _ => None,
        }
    }

    #[test]
    fn within_grace_nothing_after_it_a_jobs_pod_fails() {
        let p = job_pod(ERR_IMAGE_PULL, NOT_FOUND);
        assert_eq!(decide_at(&p, 119), Action::Nothing);
        let Action::Fail(f) = decide_at(&p, 120) else {
            panic!("{:?}", decide_at(&p, 120));
        };
        assert_eq!(
            f.verdict,
            Verdict::Permanent(crate::Reason::ManifestMissing)
        );
        assert_eq!(f.since, at(0));
        assert_eq!(
            f.message(),
            format!("container \"main\" (image \"r/app:v9\") waits with ErrImagePull: {NOT_FOUND}")
        );
    }

    #[test]
    fn the_grace_of_one_reason_is_its_own() {
        let p = job_pod("CreateContainerConfigError", "secret \"db\" not found");
        assert_eq!(decide_at(&p, 9), Action::Nothing);
        assert_eq!(
            verdict(&decide_at(&p, 10)),
            Some(Verdict::Permanent(crate::Reason::SecretMissing))
        );
    }

    #[test]
    fn a_pull_and_its_back_off_share_their_grace() {
        let mut s = settings();
        s.grace_for
            .insert(ERR_IMAGE_PULL.into(), Duration::from_secs(30));
        assert_eq!(s.grace(IMAGE_PULL_BACK_OFF), Duration::from_secs(30));
        s.grace_for
            .insert(IMAGE_PULL_BACK_OFF.into(), Duration::from_secs(20));
        assert_eq!(s.grace(ERR_IMAGE_PULL), Duration::from_secs(20));
        assert_eq!(s.grace("InvalidImageName"), GRACE);
    }

    #[test]
    fn transient_causes_are_reported_once_and_never_acted_on() {
        let p = job_pod(ERR_IMAGE_PULL, REFUSED);
        let mut seen = Seen::default();
        seen.observe(&p, at(0));
        for hours in [1, 24, 24 * 30] {
            let now = at(hours * 3600);
            seen.observe(&p, now);
            let Action::Report(r) = decide(&p, &seen, now, &settings(), false) else {
                panic!("hour {hours}");
            };
            assert_eq!(r[0].word(), "connect");
        }
        let now = at(7200);
        let Action::Report(r) = decide(&p, &seen, now, &settings(), false) else {
            panic!();
        };
        seen.reported(&r[0]);
        assert_eq!(decide(&p, &seen, now, &settings(), false), Action::Nothing);
    }

    #[test]
    fn only_jobs_and_annotated_pods_are_failed() {
        for (owner, failed) in [
            (Some(("batch/v1", "Job")), true),
            (Some(("apps/v1", "ReplicaSet")), false),
            (Some(("apps/v1", "StatefulSet")), false),
            (Some(("apps/v1", "DaemonSet")), false),
            (Some(("v1", "ReplicationController")), false),
            (Some(("ray.io/v1", "RayCluster")), false),
            (None, false),
        ] {
            let p = pod(owner, ERR_IMAGE_PULL, NOT_FOUND);
            let action = decide_at(&p, 600);
            assert_eq!(
                matches!(action, Action::Fail(_)),
                failed,
                "{owner:?}: {action:?}"
            );
            if let Action::Report(r) = &action {
                assert!(r[0].kept.is_some(), "{owner:?}");
            }
        }
        // The annotation fails a bare pod, never a Deployment's.
        for (owner, failed) in [(None, true), (Some(("apps/v1", "ReplicaSet")), false)] {
            let mut p = pod(owner, ERR_IMAGE_PULL, NOT_FOUND);
            p.metadata.annotations = Some(BTreeMap::from([(
                FAIL_WHEN_STUCK.to_string(),
                "true".to_string(),
            )]));
            assert_eq!(
                matches!(decide_at(&p, 600), Action::Fail(_)),
                failed,
                "{owner:?}"
            );
        }
        let mut p = pod(None, ERR_IMAGE_PULL, NOT_FOUND);
        p.metadata.annotations = Some(BTreeMap::from([(
            FAIL_WHEN_STUCK.to_string(),
            "yes".to_string(),
        )]));
        assert!(matches!(decide_at(&p, 600), Action::Report(_)));
    }

    #[test]
    fn a_pod_with_the_condition_is_never_patched_again() {
        let mut p = job_pod(ERR_IMAGE_PULL, NOT_FOUND);
        let status = p.status.as_mut().unwrap();
        status.conditions = Some(vec![
            serde_json::from_value(
                json!({"type": "ConfigIssue", "status": "True", "reason": "manifest_missing"}),
            )
            .unwrap(),
        ]);
        assert_eq!(decide_at(&p, 600), Action::Delete);
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            at(500),
        ));
        assert_eq!(decide_at(&p, 600), Action::Nothing);
        // Another controller's condition of the same type: never acted on.
        let mut other = job_pod(ERR_IMAGE_PULL, NOT_FOUND);
        other.status.as_mut().unwrap().conditions = Some(vec![
            serde_json::from_value(
                json!({"type": "ConfigIssue", "status": "True", "reason": "QuotaExceeded"}),
            )
            .unwrap(),
        ]);
        assert_eq!(decide_at(&other, 600), Action::Nothing);
        let mut d = pod(Some(("apps/v1", "ReplicaSet")), ERR_IMAGE_PULL, NOT_FOUND);
        d.status.as_mut().unwrap().conditions = p.status.as_ref().unwrap().conditions.clone();
        assert_eq!(decide_at(&d, 600), Action::Nothing);
    }

    #[test]
    fn a_back_off_takes_the_last_pull_error_or_asks_for_the_events() {
        let bare = "Back-off pulling image \"r/app:v9\"";
        // The pull's words seen before the back-off.
        let mut seen = Seen::default();
        seen.observe(&job_pod(ERR_IMAGE_PULL, NOT_FOUND), at(0));
        let p = job_pod(IMAGE_PULL_BACK_OFF, bare);
        seen.observe(&p, at(130));
        let Action::Fail(f) = decide(&p, &seen, at(130), &settings(), false) else {
            panic!();
        };
        assert_eq!((f.since, f.words.as_str()), (at(0), NOT_FOUND));
        // A watcher that saw only the back-off reads the Events, then decides.
        let mut seen = Seen::default();
        seen.observe(&p, at(0));
        seen.observe(&p, at(130));
        assert_eq!(
            decide(&p, &seen, at(130), &settings(), false),
            Action::NeedEvents
        );
        seen.record_event("spec.containers{main}", "Error: ErrImagePull");
        seen.record_event(
            "spec.containers{main}",
            &format!("Failed to pull image \"r/app:v9\": {NOT_FOUND}"),
        );
        assert!(matches!(
            decide(&p, &seen, at(130), &settings(), true),
            Action::Fail(_)
        ));
        // No words anywhere: reported as unknown, never failed.
        let mut seen = Seen::default();
        seen.observe(&p, at(0));
        seen.observe(&p, at(130));
        let Action::Report(r) = decide(&p, &seen, at(130), &settings(), true) else {
            panic!();
        };
        assert_eq!(r[0].word(), "unknown");
    }

    #[test]
    fn the_grace_starts_again_when_the_container_waits_no_more() {
        let stuck = job_pod("CreateContainerConfigError", "secret \"db\" not found");
        let creating = job_pod("ContainerCreating", "");
        let mut seen = Seen::default();
        seen.observe(&stuck, at(0));
        seen.observe(&creating, at(5));
        seen.observe(&stuck, at(8));
        assert_eq!(
            decide(&stuck, &seen, at(15), &settings(), false),
            Action::Nothing
        );
        assert!(matches!(
            decide(&stuck, &seen, at(18), &settings(), false),
            Action::Fail(_)
        ));
    }

    #[test]
    fn the_message_is_escaped_and_bounded() {
        let words = format!("secret \"a\nb\u{1b}[2J\" not found {}", "x ".repeat(2000));
        let p = job_pod("CreateContainerConfigError", &words);
        let Action::Report(r) = decide_at(&p, 600) else {
            panic!();
        };
        let m = r[0].message();
        assert!(m.len() <= TERMINATION_MESSAGE_MAX, "{}", m.len());
        assert!(!m.chars().any(char::is_control), "{m:?}");
        assert!(m.starts_with("container \"main\" (image \"r/app:v9\") waits with CreateContainerConfigError: secret \"a\\nb\\x1b[2J\""), "{m}");
    }
}
