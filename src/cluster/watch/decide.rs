//! What to do with one pending pod, decided without I/O: from the pod as the API server holds
//! it, the time now, what the watcher has seen of it before ([`Seen`]), and the settings
//! ([`Settings`]). The loop in `run.rs` only carries [`Action`]s out.
//!
//! - A container's permanent verdict stands for less than its grace ([`super::grace`]):
//!   nothing. Past it, the pod's Events are read first: a pull under way (a `Pulling` newer than
//!   the last failure), or words found on a first look with no attempt ended since, are not
//!   evidence yet, and the pod is left until they are.
//! - A transient cause that lasts `--report-after`: reported once (an Event and a metric),
//!   never acted on.
//! - A permanent cause on fresh evidence: the pod is failed by the kubelet's own hand (the
//!   condition, an Event, then `activeDeadlineSeconds: 1`, after which the kubelet fails it,
//!   `DeadlineExceeded`, and pulls no more) whatever owns it (a Job, nothing, any custom
//!   resource), when its `restartPolicy` is `Never` or `OnFailure`. Never deleted: an owner
//!   that finds its pod gone makes another (Argo, Tekton), or counts it as deleted by others,
//!   a transient failure (FrameworkController). Pods of a ReplicaSet (a Deployment's), a
//!   StatefulSet, a DaemonSet or a ReplicationController, `restartPolicy: Always` pods (the
//!   kubelet would only restart them) and pods annotated `pullcheck.dev/fail-when-stuck:
//!   "false"` (set on a workload's pod template, it reaches every pod made from it) only get
//!   the Event and the metric.
//! - A pod that already has the condition is never patched again; when the condition is this
//!   watcher's (its reason a pullcheck word) and the deadline is not yet set (a restart between
//!   the two writes, a conflict), only the deadline is set.

use super::classify::{IMAGE_PULL_BACK_OFF, Verdict};
use super::seen::{Seen, group, statuses};
use crate::config::Settings;
use crate::escape::{cut, escape};
use crate::report::TERMINATION_MESSAGE_MAX;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::jiff::Timestamp;
use std::time::Duration;

/// The annotation that opts a pod out (`"false"`); `"true"`, what it once took to fail a pod no
/// Job owns, is now what happens anyway.
pub(crate) const FAIL_WHEN_STUCK: &str = "pullcheck.dev/fail-when-stuck";
/// The deadline written on a pod to fail: the least the API server takes, and already past for
/// a pod stuck long enough to be failed.
pub(crate) const DEADLINE_SECONDS: i64 = 1;
/// The owners whose pods are never failed: their controller keeps a number of pods running
/// and would only make another, and a Deployment's rollout is not a batch run to fail.
const NEVER_FAILED: [&str; 4] = [
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "ReplicationController",
];

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
    /// When the watcher first saw them say it (for a transient cause: first saw it waiting).
    pub(crate) since: Timestamp,
    /// Why the pod is not failed, when it is not.
    pub(crate) kept: Option<String>,
    /// Permanent words right after transient ones, not yet said again by a later attempt (an
    /// outage may end with one 404 before the image is served): the pod is failed only if the
    /// watcher's own look at the registry says the same.
    pub(crate) needs_look: bool,
    /// A missing Secret, ConfigMap or key not yet said by an attempt that ended after the
    /// watcher first meant to act: it may have been made since the kubelet last looked, so the
    /// kubelet's next attempt must say it again.
    pub(crate) needs_attempt: bool,
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

    /// Whether the cause is an object the pod names that someone may create at any moment (a
    /// Secret, a ConfigMap, a key of either), which the watcher does not read.
    pub(crate) fn names_an_object(&self) -> bool {
        matches!(
            self.verdict,
            Verdict::Permanent(
                crate::Reason::SecretMissing
                    | crate::Reason::ConfigMapMissing
                    | crate::Reason::KeyMissing
            )
        )
    }

    /// Whether the registry's own answer, asked again by the watcher, can show the words stale:
    /// a manifest or repository said not to be there (or not to be readable, which a registry
    /// also says of one that is missing).
    pub(crate) fn confirmable(&self) -> bool {
        matches!(
            self.verdict,
            Verdict::Permanent(
                crate::Reason::ManifestMissing
                    | crate::Reason::TagMissing
                    | crate::Reason::DigestMissing
                    | crate::Reason::RepositoryMissing
                    | crate::Reason::InsufficientScope
            )
        )
    }
}

/// What to do with one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Nothing now.
    Nothing,
    /// A verdict past its grace: read the pod's Events into [`Seen::record_event`] (the
    /// kubelet's attempts, and a back-off's words), then decide again.
    NeedEvents,
    /// Report these (an Event and a metric each), once.
    Report(Vec<Finding>),
    /// Fail the pod: the condition, a Warning Event, then the deadline.
    Fail(Finding),
    /// An earlier look gave the condition and the deadline was not set (a restart between the
    /// two, a conflict): the deadline only, the condition never patched again.
    Deadline,
}

/// Decides what to do with `pod` now. `events_read`: the pod's Events are current in `seen`.
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
        // deadline: another controller's condition of the same type is left to it.
        let ours = crate::Reason::ALL.iter().any(|r| r.about().word == reason);
        return if kept.is_none() && ours && !deadline_set(pod) {
            Action::Deadline
        } else {
            Action::Nothing
        };
    }
    let mut reports = Vec::new();
    for status in statuses(pod) {
        let Some((reason, message)) = seen.waiting_of(status) else {
            continue;
        };
        let (Some(evidence), Some(waiting_since)) = (
            seen.evidence(&status.name),
            seen.waiting_since(&status.name),
        ) else {
            continue;
        };
        let verdict = evidence.verdict;
        let (since, wait) = match super::grace::of(&settings.graces, verdict, reason) {
            Some(grace) => (evidence.since, grace),
            None => (waiting_since, settings.graces.report_after),
        };
        if !past(since, wait, now) {
            continue;
        }
        if seen.was_reported(&status.name, verdict.as_str()) {
            continue;
        }
        let pull_error = seen.words_of(&status.name);
        let bare_back_off =
            reason == IMAGE_PULL_BACK_OFF && super::classify::back_off_words(message).is_none();
        let permanent = matches!(verdict, Verdict::Permanent(_));
        // Events are read before a pod is failed, and for a back-off whose words only they hold.
        if !events_read
            && ((permanent && kept.is_none()) || (bare_back_off && pull_error.is_none()))
        {
            return Action::NeedEvents;
        }
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
            needs_look: false,
            needs_attempt: false,
        };
        if permanent && kept.is_none() {
            let attempts = seen.attempts(&status.name);
            // A pull under way may end well: its words are the previous attempt's.
            if group(reason) == Some("pull") && attempts.pulling_now() {
                continue;
            }
            // Words found as they were may be minutes old: only an attempt that ended since
            // they were first seen makes them evidence.
            if !evidence.live && !attempts.failed_after(evidence.since) {
                continue;
            }
            // Held back before: only an attempt that ended since counts.
            if let Some(held) = evidence.held_at
                && !attempts.failed_after(held)
            {
                continue;
            }
            let again = attempts.failed_after(evidence.since);
            return Action::Fail(Finding {
                needs_look: evidence.after_transient && !again,
                needs_attempt: finding.names_an_object() && evidence.held_at.is_none(),
                ..finding
            });
        }
        reports.push(finding);
    }
    if reports.is_empty() {
        Action::Nothing
    } else {
        Action::Report(reports)
    }
}

/// Whether `wait` has passed since `since`.
fn past(since: Timestamp, wait: Duration, now: Timestamp) -> bool {
    let waited = now.as_millisecond().saturating_sub(since.as_millisecond());
    let wait = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
    waited >= wait
}

/// Why a pod with a permanent cause is not failed, or `None` when it may be.
fn kept(pod: &Pod) -> Option<String> {
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    let controller = owners.iter().find(|o| o.controller == Some(true));
    if let Some(o) = controller.filter(|o| NEVER_FAILED.contains(&o.kind.as_str())) {
        return Some(format!(
            "owned by {} {}: left to its controller",
            o.kind,
            escape(&o.name)
        ));
    }
    // The API server defaults an absent restartPolicy to Always.
    let restart = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always");
    if restart != "Never" && restart != "OnFailure" {
        return Some(format!(
            "restartPolicy {}: the kubelet restarts it, never failed",
            escape(restart)
        ));
    }
    let opted_out = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(FAIL_WHEN_STUCK))
        .is_some_and(|v| v == "false");
    if opted_out {
        return Some(format!("annotated {FAIL_WHEN_STUCK}: \"false\""));
    }
    None
}

/// Whether the pod's deadline is already the one the watcher writes, or shorter.
fn deadline_set(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.active_deadline_seconds)
        .is_some_and(|d| d <= DEADLINE_SECONDS)
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
    use super::super::classify::{ERR_IMAGE_PULL, Transient};
    use super::*;
    use crate::config::Graces;
    use serde_json::json;
    use std::collections::BTreeMap;

    const NOT_FOUND: &str = "rpc error: code = NotFound desc = failed to pull and unpack image \"r/app:v9\": failed to resolve reference \"r/app:v9\": r/app:v9: not found";
    const REFUSED: &str = "rpc error: code = Unknown desc = failed to pull and unpack image \"r/app:v1\": failed to resolve reference \"r/app:v1\": failed to do request: Head \"http://r/v2/app/manifests/v1\": dial tcp 127.0.0.1:5000: connect: connection refused";
    const UNAVAILABLE: &str = "rpc error: code = Unknown desc = failed to pull and unpack image \"r/app:v9\": failed to resolve reference \"r/app:v9\": unexpected status from HEAD request to http://r/v2/app/manifests/v9: 503 Service Unavailable";

    fn settings() -> Settings {
        Settings {
            graces: Graces {
                all: None,
                // A grace for a missing image too (its default is none), so that the tests
                // see one pass.
                by_key: BTreeMap::from([
                    (
                        "CreateContainerConfigError".to_string(),
                        Duration::from_secs(10),
                    ),
                    ("manifest_missing".to_string(), Duration::from_secs(1)),
                ]),
                report_after: Duration::from_secs(120),
            },
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
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "r/app:v9"}]},
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

    /// What a running watcher has seen: the pod created (no status yet) at -1, then waiting
    /// from 0.
    fn watched(p: &Pod) -> Seen {
        let mut seen = Seen::default();
        let mut created = p.clone();
        created.status = None;
        seen.observe(&created, at(-1));
        seen.observe(p, at(0));
        seen
    }

    /// Decides at `now` with the Events read (none: the pod's words are all there is).
    fn decide_at(p: &Pod, now: i64) -> Action {
        let mut seen = watched(p);
        seen.observe(p, at(now));
        decide(p, &seen, at(now), &settings(), true)
    }

    fn verdict(action: &Action) -> Option<Verdict> {
        match action {
            Action::Fail(f) => Some(f.verdict),
            Action::Report(r) => r.first().map(|f| f.verdict),
            _ => None,
        }
    }

    #[test]
    fn a_missing_image_fails_a_jobs_pod_after_its_own_grace_and_the_events() {
        let p = job_pod(ERR_IMAGE_PULL, NOT_FOUND);
        let seen = watched(&p);
        assert_eq!(
            decide(&p, &seen, at(0), &settings(), false),
            Action::Nothing
        );
        // Past the grace, the Events come first.
        assert_eq!(
            decide(&p, &seen, at(1), &settings(), false),
            Action::NeedEvents
        );
        let Action::Fail(f) = decide(&p, &seen, at(1), &settings(), true) else {
            panic!("{:?}", decide(&p, &seen, at(1), &settings(), true));
        };
        assert_eq!(
            f.verdict,
            Verdict::Permanent(crate::Reason::ManifestMissing)
        );
        assert!(f.confirmable());
        assert_eq!(f.since, at(0));
        assert_eq!(
            f.message(),
            format!("container \"main\" (image \"r/app:v9\") waits with ErrImagePull: {NOT_FOUND}")
        );
    }

    #[test]
    fn a_failed_pull_the_status_does_not_show_yet_is_acted_on_from_the_kubelets_event() {
        // After an init container ends the kubelet says a pull failed in an Event at once and
        // writes it into the status at its next sync: meanwhile the status says PodInitializing.
        let p = job_pod("PodInitializing", "");
        let mut seen = watched(&p);
        let mut s = settings();
        s.graces.by_key.clear();
        assert_eq!(decide(&p, &seen, at(1), &s, true), Action::Nothing);
        let c = "spec.containers{main}";
        seen.record_event(c, "Pulling", "Pulling image \"r/app:v9\"", Some(at(1)));
        seen.record_event(
            c,
            "Failed",
            &format!("Failed to pull image \"r/app:v9\": {NOT_FOUND}"),
            Some(at(2)),
        );
        seen.record_event(c, "Failed", "Error: ErrImagePull", Some(at(2)));
        seen.observe(&p, at(2));
        assert_eq!(decide(&p, &seen, at(2), &s, false), Action::NeedEvents);
        let Action::Fail(f) = decide(&p, &seen, at(2), &s, true) else {
            panic!("{:?}", decide(&p, &seen, at(2), &s, true));
        };
        assert_eq!(
            f.verdict,
            Verdict::Permanent(crate::Reason::ManifestMissing)
        );
        assert_eq!(
            f.message(),
            format!("container \"main\" (image \"r/app:v9\") waits with ErrImagePull: {NOT_FOUND}")
        );
        // A pull since, or the image found, and the Event is not the last word.
        for (reason, second) in [("Pulling", 3), ("Pulled", 2)] {
            let mut later = seen.clone();
            later.record_event(c, reason, "", Some(at(second)));
            later.observe(&p, at(3));
            assert_eq!(
                decide(&p, &later, at(3), &s, true),
                Action::Nothing,
                "{reason}"
            );
        }
        // Found on a first look (a new leader): not evidence until a later attempt ends so.
        let mut fresh = Seen::default();
        fresh.record_event(
            c,
            "Failed",
            &format!("Failed to pull image \"r/app:v9\": {NOT_FOUND}"),
            Some(at(2)),
        );
        fresh.observe(&p, at(5));
        assert_eq!(decide(&p, &fresh, at(5), &s, true), Action::Nothing);
    }

    #[test]
    fn by_default_a_missing_image_is_acted_on_at_the_first_look() {
        let p = job_pod(ERR_IMAGE_PULL, NOT_FOUND);
        let seen = watched(&p);
        let mut s = settings();
        s.graces.by_key.clear();
        assert_eq!(decide(&p, &seen, at(0), &s, false), Action::NeedEvents);
        assert!(matches!(
            decide(&p, &seen, at(0), &s, true),
            Action::Fail(_)
        ));
    }

    #[test]
    fn the_grace_of_a_verdict_and_of_a_waiting_reason() {
        let p = job_pod("CreateContainerConfigError", "secret \"db\" not found");
        assert_eq!(decide_at(&p, 9), Action::Nothing);
        assert_eq!(
            verdict(&decide_at(&p, 10)),
            Some(Verdict::Permanent(crate::Reason::SecretMissing))
        );
        let mut s = settings();
        s.graces.by_key.clear();
        let mut seen = watched(&p);
        seen.observe(&p, at(29));
        assert_eq!(decide(&p, &seen, at(29), &s, true), Action::Nothing);
        assert!(matches!(
            decide(&p, &seen, at(30), &s, true),
            Action::Fail(_)
        ));
    }

    #[test]
    fn transient_causes_are_reported_once_and_never_acted_on() {
        let p = job_pod(ERR_IMAGE_PULL, REFUSED);
        let mut seen = watched(&p);
        assert_eq!(
            decide(&p, &seen, at(119), &settings(), false),
            Action::Nothing
        );
        for hours in [1, 24, 24 * 30] {
            let now = at(hours * 3600);
            seen.observe(&p, now);
            let Action::Report(r) = decide(&p, &seen, now, &settings(), false) else {
                panic!("hour {hours}");
            };
            assert_eq!(r[0].word(), "connect");
        }
        let now = at(7200);
        let Action::Report(r) = decide(&p, &seen, now, &settings(), true) else {
            panic!();
        };
        seen.reported(&r[0].container, r[0].word());
        assert_eq!(decide(&p, &seen, now, &settings(), true), Action::Nothing);
    }

    #[test]
    fn batch_pods_of_any_owner_are_failed_and_the_others_kept() {
        for (owner, failed) in [
            (Some(("batch/v1", "Job")), true),
            (Some(("ray.io/v1", "RayCluster")), true),
            (Some(("argoproj.io/v1alpha1", "Workflow")), true),
            (Some(("tekton.dev/v1", "TaskRun")), true),
            (None, true),
            (Some(("apps/v1", "ReplicaSet")), false),
            (Some(("apps/v1", "StatefulSet")), false),
            (Some(("apps/v1", "DaemonSet")), false),
            (Some(("v1", "ReplicationController")), false),
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
        // By restart policy: an absent one is Always (the API server's default).
        for (policy, failed) in [
            (Some("Never"), true),
            (Some("OnFailure"), true),
            (Some("Always"), false),
            (None, false),
        ] {
            let mut p = pod(None, ERR_IMAGE_PULL, NOT_FOUND);
            p.spec.as_mut().unwrap().restart_policy = policy.map(str::to_string);
            let action = decide_at(&p, 600);
            assert_eq!(
                matches!(action, Action::Fail(_)),
                failed,
                "{policy:?}: {action:?}"
            );
            if let Action::Report(r) = &action {
                assert!(
                    r[0].kept
                        .as_deref()
                        .unwrap()
                        .contains("restartPolicy Always"),
                    "{r:?}"
                );
            }
        }
        // The annotation opts out with "false" only; "true" (once needed for a bare pod) and
        // anything else change nothing.
        for (value, failed) in [("false", false), ("true", true), ("no", true)] {
            let mut p = pod(None, ERR_IMAGE_PULL, NOT_FOUND);
            p.metadata.annotations = Some(BTreeMap::from([(
                FAIL_WHEN_STUCK.to_string(),
                value.to_string(),
            )]));
            assert_eq!(
                matches!(decide_at(&p, 600), Action::Fail(_)),
                failed,
                "{value}"
            );
        }
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
        assert_eq!(decide_at(&p, 600), Action::Deadline);
        // The deadline set: nothing more, the kubelet fails the pod.
        let mut set = p.clone();
        set.spec.as_mut().unwrap().active_deadline_seconds = Some(DEADLINE_SECONDS);
        assert_eq!(decide_at(&set, 600), Action::Nothing);
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
    fn a_back_off_takes_the_last_pull_error_or_the_events() {
        let bare = "Back-off pulling image \"r/app:v9\"";
        // The pull's words seen before the back-off.
        let mut seen = watched(&job_pod(ERR_IMAGE_PULL, NOT_FOUND));
        let p = job_pod(IMAGE_PULL_BACK_OFF, bare);
        seen.observe(&p, at(130));
        let Action::Fail(f) = decide(&p, &seen, at(130), &settings(), true) else {
            panic!();
        };
        assert_eq!((f.since, f.words.as_str()), (at(0), NOT_FOUND));
        // A watcher that saw only the back-off reads the Events, then decides.
        let mut seen = watched(&p);
        seen.observe(&p, at(130));
        assert_eq!(
            decide(&p, &seen, at(130), &settings(), false),
            Action::NeedEvents
        );
        let path = "spec.containers{main}";
        seen.record_event(path, "Failed", "Error: ErrImagePull", Some(at(125)));
        seen.record_event(
            path,
            "Failed",
            &format!("Failed to pull image \"r/app:v9\": {NOT_FOUND}"),
            Some(at(125)),
        );
        // The words came from the Events after the back-off was first seen: a new verdict,
        // whose grace starts now.
        seen.observe(&p, at(131));
        assert_eq!(
            decide(&p, &seen, at(131), &settings(), true),
            Action::Nothing
        );
        seen.observe(&p, at(132));
        assert!(matches!(
            decide(&p, &seen, at(132), &settings(), true),
            Action::Fail(_)
        ));
        // No words anywhere: reported as unknown, never failed.
        let mut seen = watched(&p);
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
        let mut seen = watched(&stuck);
        seen.observe(&creating, at(5));
        seen.observe(&stuck, at(8));
        assert_eq!(
            decide(&stuck, &seen, at(15), &settings(), true),
            Action::Nothing
        );
        assert!(matches!(
            decide(&stuck, &seen, at(18), &settings(), true),
            Action::Fail(_)
        ));
    }

    /// A missing Secret may be made at any moment: the watcher acts only on an attempt of the
    /// kubelet's that ended after it first meant to act.
    #[test]
    fn a_missing_object_is_acted_on_only_on_a_later_attempt() {
        let p = job_pod("CreateContainerConfigError", "secret \"db\" not found");
        let path = "spec.containers{main}";
        let mut seen = watched(&p);
        seen.observe(&p, at(15));
        let Action::Fail(first) = decide(&p, &seen, at(15), &settings(), true) else {
            panic!();
        };
        assert!(first.needs_attempt && !first.needs_look, "{first:?}");
        // Held back at 15: an attempt that ended before says nothing new.
        seen.await_next_attempt("main", at(15));
        seen.record_event(
            path,
            "Failed",
            "Error: secret \"db\" not found",
            Some(at(12)),
        );
        assert_eq!(
            decide(&p, &seen, at(20), &settings(), true),
            Action::Nothing
        );
        // The kubelet's next attempt, at 26, found it missing still: now proof.
        seen.record_event(
            path,
            "Failed",
            "Error: secret \"db\" not found",
            Some(at(26)),
        );
        let Action::Fail(then) = decide(&p, &seen, at(27), &settings(), true) else {
            panic!();
        };
        assert!(!then.needs_attempt, "{then:?}");
        // A missing image needs no such attempt.
        let image = job_pod(ERR_IMAGE_PULL, NOT_FOUND);
        let Action::Fail(f) = decide_at(&image, 600) else {
            panic!();
        };
        assert!(!f.needs_attempt);
    }

    /// The three ways stale words failed Jobs that would have run.
    #[test]
    fn stale_words_are_not_evidence() {
        let p = job_pod(
            IMAGE_PULL_BACK_OFF,
            &format!("Back-off pulling image \"r/app:v9\": ErrImagePull: {NOT_FOUND}"),
        );
        let path = "spec.containers{main}";
        // 1. A pull under way: the back-off still shows the last attempt's `not found`.
        let mut seen = watched(&p);
        seen.record_event(path, "Failed", "Error: ErrImagePull", Some(at(0)));
        seen.record_event(path, "Pulling", "Pulling image \"r/app:v9\"", Some(at(70)));
        seen.observe(&p, at(123));
        assert_eq!(
            decide(&p, &seen, at(123), &settings(), true),
            Action::Nothing
        );
        // It ends in another failure: evidence again.
        seen.record_event(path, "Failed", "Error: ErrImagePull", Some(at(240)));
        assert!(matches!(
            decide(&p, &seen, at(241), &settings(), true),
            Action::Fail(_)
        ));
        // 2. Words found on a first look (a new leader): not evidence until an attempt ends
        // after they were first seen.
        let mut seen = Seen::default();
        seen.observe(&p, at(0));
        seen.observe(&p, at(200));
        seen.record_event(path, "Failed", "Error: ErrImagePull", Some(at(-80)));
        assert_eq!(
            decide(&p, &seen, at(200), &settings(), true),
            Action::Nothing
        );
        seen.record_event(path, "Failed", "Error: ErrImagePull", Some(at(80)));
        assert!(matches!(
            decide(&p, &seen, at(200), &settings(), true),
            Action::Fail(_)
        ));
        // The image resolves where the watcher asked: the same, again.
        seen.await_next_attempt("main", at(200));
        assert_eq!(
            decide(&p, &seen, at(300), &settings(), true),
            Action::Nothing
        );
        // 3. A 404 after 503s: its grace starts with it, not with the first 503.
        let busy = job_pod(ERR_IMAGE_PULL, UNAVAILABLE);
        let mut seen = watched(&busy);
        seen.observe(&busy, at(60));
        assert_eq!(
            verdict(&decide(&busy, &seen, at(60), &settings(), true)),
            None,
            "a transient cause is reported after report-after only"
        );
        let missing = job_pod(ERR_IMAGE_PULL, NOT_FOUND);
        seen.observe(&missing, at(70));
        assert_eq!(
            seen.evidence("main").map(|e| (e.since, e.live)),
            Some((at(70), true))
        );
        assert_eq!(
            decide(&missing, &seen, at(70), &settings(), true),
            Action::Nothing
        );
        // The 404 after 503s is failed only on the watcher's look, until a later attempt ends
        // the same way.
        assert!(matches!(
            decide(&missing, &seen, at(71), &settings(), true),
            Action::Fail(Finding {
                needs_look: true,
                ..
            })
        ));
        // A later attempt that ends with the same words is proof without the look.
        let mut again = seen.clone();
        again.record_event(path, "Failed", "Error: ErrImagePull", Some(at(90)));
        assert!(matches!(
            decide(&missing, &again, at(91), &settings(), true),
            Action::Fail(Finding {
                needs_look: false,
                ..
            })
        ));
        // The look could not confirm it: the next attempt must say it again.
        seen.await_next_attempt("main", at(72));
        assert_eq!(
            decide(&missing, &seen, at(80), &settings(), true),
            Action::Nothing
        );
        seen.record_event(path, "Failed", "Error: ErrImagePull", Some(at(95)));
        assert!(matches!(
            decide(&missing, &seen, at(96), &settings(), true),
            Action::Fail(Finding {
                needs_look: false,
                ..
            })
        ));
        let _ = Transient::Connect;
    }

    #[test]
    fn an_init_containers_wait_counts() {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "team", "uid": "u1", "resourceVersion": "7",
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "o", "uid": "o1", "controller": true}]},
            "spec": {
                "restartPolicy": "OnFailure",
                "initContainers": [{"name": "setup", "image": "r/setup:v9"}],
                "containers": [{"name": "main", "image": "r/app:v1"}]
            },
            "status": {"phase": "Pending",
                "initContainerStatuses": [{
                    "name": "setup", "image": "r/setup:v9", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "ErrImagePull", "message": NOT_FOUND}}
                }],
                "containerStatuses": [{
                    "name": "main", "image": "r/app:v1", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "PodInitializing"}}
                }]}
        }))
        .unwrap();
        let Action::Fail(f) = decide_at(&p, 1) else {
            panic!("{:?}", decide_at(&p, 1));
        };
        assert_eq!(
            (f.container.as_str(), f.image.as_str()),
            ("setup", "r/setup:v9")
        );
    }

    #[test]
    fn the_message_is_escaped_and_bounded() {
        let words = format!("secret \"a\nb\u{1b}[2J\" not found {}", "x ".repeat(2000));
        let p = pod(None, "CreateContainerConfigError", &words);
        let Action::Report(r) = decide_at(&p, 600) else {
            panic!();
        };
        let m = r[0].message();
        assert!(m.len() <= TERMINATION_MESSAGE_MAX, "{}", m.len());
        assert!(!m.chars().any(char::is_control), "{m:?}");
        assert!(m.starts_with("container \"main\" (image \"r/app:v9\") waits with CreateContainerConfigError: secret \"a\\nb\\x1b[2J\""), "{m}");
    }
}
