//! The watcher's writes, thin on purpose (what to write is decided in `decide.rs`): the pod's
//! condition (a strategic-merge patch of `pods/status`, keyed by type, carrying the
//! resourceVersion seen), a Warning Event (through kube-runtime's `Recorder`, which folds a
//! repeat into the first Event's series), the pod's `activeDeadlineSeconds` (a patch carrying
//! the UID and the resourceVersion read, so that only that pod as read is changed; the kubelet
//! then fails it by its own hand), and the one read besides the watches: the pod's `Failed`
//! Events.

use super::decide::{DEADLINE_SECONDS, Finding};
use super::seen::Seen;
use crate::cluster::door::Door;
use crate::keyring::Keyring;
use k8s_openapi::api::core::v1::{Event, ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::events::{self, EventType, Recorder, Reporter};
use kube::{Resource, ResourceExt};
use serde_json::json;

/// The Events' `reportingController`.
const COMPONENT: &str = "pullcheck-watch";
/// The longest `reportingInstance` the API server takes (events.k8s.io/v1).
const INSTANCE_MAX: usize = 128;
/// The Events' `action`: what the watcher did or would do about the pod.
const ACTION: &str = "FailStuckPod";

/// How a write ended.
#[derive(Debug)]
pub(crate) enum WriteOutcome {
    Done,
    /// The pod changed or went since it was read (409, 404): decided again on the next look.
    Changed,
    /// Any other failure, with the call it was.
    Failed(&'static str, String),
}

fn outcome(call: &'static str, e: kube::Error) -> WriteOutcome {
    match e {
        kube::Error::Api(s) if s.is_conflict() || s.is_not_found() => WriteOutcome::Changed,
        e => WriteOutcome::Failed(call, e.to_string()),
    }
}

/// The writer, for one replica.
pub(crate) struct Actor {
    /// The watcher's door to the API server.
    door: Door,
    /// The Events' writer, this replica's name in each.
    recorder: Recorder,
}

impl Actor {
    /// The writer of the replica `identity`.
    pub(crate) fn new(door: Door, identity: &str) -> Actor {
        let mut instance = identity.to_string();
        while instance.len() > INSTANCE_MAX {
            instance.pop();
        }
        let reporter = Reporter {
            controller: COMPONENT.to_string(),
            instance: Some(instance),
        };
        Actor {
            recorder: door.recorder(reporter),
            door,
        }
    }

    /// Fails the pod: the condition, the Event, then the deadline, after which the kubelet
    /// fails it (`DeadlineExceeded`) and pulls no more. `Done` once the condition is given,
    /// whatever the deadline's patch did.
    pub(crate) async fn fail(
        &self,
        pod: &Pod,
        finding: &Finding,
        condition_type: &str,
    ) -> WriteOutcome {
        let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let api: Api<Pod> = Api::namespaced(self.door.client(), &ns);
        let reason = finding.word();
        let message = finding.message();
        let patch = json!({
            // The resourceVersion read: a pod that changed since (it started) is not patched.
            "metadata": {"resourceVersion": pod.resource_version()},
            "status": {"conditions": [{
                "type": condition_type,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": Timestamp::now().to_string(),
            }]}
        });
        let patched = match api
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
        {
            Ok(p) => p,
            Err(e) => return outcome("patch pods/status", e),
        };
        let note = format!(
            "{message} — failing the pod: condition {condition_type}, then activeDeadlineSeconds {DEADLINE_SECONDS}, for the kubelet to fail it"
        );
        if let WriteOutcome::Failed(call, e) = self.event(pod, finding, condition_type, &note).await
        {
            // The Event is for people; the condition is what fails the Job: go on.
            crate::log::info(
                crate::log::Component::Watch,
                &format!("{ns}/{name}: {call}: {e}"),
            );
        }
        // The condition is given: the pod is failed. A deadline that finds the pod changed (the
        // kubelet wrote its status in between) is set on the next look (`Action::Deadline`).
        match self.deadline(&patched).await {
            WriteOutcome::Failed(call, e) => crate::log::info(
                crate::log::Component::Watch,
                &format!("{ns}/{name}: {call}: {e}"),
            ),
            WriteOutcome::Done | WriteOutcome::Changed => {}
        }
        WriteOutcome::Done
    }

    /// Sets the pod's `activeDeadlineSeconds` to [`DEADLINE_SECONDS`] if it is still the one
    /// read (UID and resourceVersion): a live pod takes a deadline where it had none, or a
    /// shorter one, and the kubelet, seeing it past, fails the pod by its own hand (phase
    /// `Failed`, reason `DeadlineExceeded`). The pod is kept, for `kubectl describe`.
    pub(crate) async fn deadline(&self, pod: &Pod) -> WriteOutcome {
        let api: Api<Pod> =
            Api::namespaced(self.door.client(), &pod.namespace().unwrap_or_default());
        let patch = json!({
            "metadata": {"uid": pod.uid(), "resourceVersion": pod.resource_version()},
            "spec": {"activeDeadlineSeconds": DEADLINE_SECONDS},
        });
        match api
            .patch(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
        {
            Ok(_) => WriteOutcome::Done,
            Err(e) => outcome("patch pods", e),
        }
    }

    /// A Warning Event on the pod, for the container of the finding.
    pub(crate) async fn event(
        &self,
        pod: &Pod,
        finding: &Finding,
        reason: &str,
        note: &str,
    ) -> WriteOutcome {
        let reference = ObjectReference {
            field_path: Some(field_path(pod, &finding.container)),
            ..pod.object_ref(&())
        };
        let event = events::Event {
            type_: EventType::Warning,
            reason: reason.to_string(),
            note: Some(crate::escape::cut(
                note,
                crate::report::TERMINATION_MESSAGE_MAX,
            )),
            action: ACTION.to_string(),
            secondary: None,
        };
        match self.recorder.publish(&event, &reference).await {
            Ok(()) => WriteOutcome::Done,
            Err(e) => outcome("create events", e),
        }
    }

    /// Reads the pod's Events into `seen`: when the kubelet last tried (`Pulling`) and last
    /// failed (`Failed`) for each container, and the pull errors a back-off hides, which
    /// survive a restart of the watcher. One list, bounded: a pod's Events are few, since the
    /// API server's recorder folds repeats into one Event with a count.
    pub(crate) async fn read_events(
        &self,
        pod: &Pod,
        seen: &mut Seen,
        now: Timestamp,
    ) -> WriteOutcome {
        let api: Api<Event> =
            Api::namespaced(self.door.client(), &pod.namespace().unwrap_or_default());
        let selector = format!("involvedObject.uid={}", pod.uid().unwrap_or_default());
        match api
            .list(&ListParams::default().fields(&selector).limit(500))
            .await
        {
            Ok(list) => {
                seen.events_reading(pod.resource_version().unwrap_or_default(), now);
                for e in &list.items {
                    seen.record(e);
                }
                WriteOutcome::Done
            }
            Err(e) => outcome("list events", e),
        }
    }

    /// The pod's pull secrets (`spec.imagePullSecrets`, the service account's merged in at
    /// admission) as a keyring, and the ones that could not be read with why
    /// ([`crate::credentials::secrets::read`]).
    pub(crate) async fn pull_secrets(&self, pod: &Pod) -> (Keyring, Vec<(String, String)>) {
        let ns = pod.namespace().unwrap_or_default();
        let names = pod
            .spec
            .as_ref()
            .and_then(|s| s.image_pull_secrets.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|r| r.name.clone());
        self.door.pull_secrets(&ns, names).await
    }
}

/// `spec.initContainers{NAME}` or `spec.containers{NAME}`, as the kubelet's Events name it.
fn field_path(pod: &Pod, container: &str) -> String {
    let init = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default()
        .iter()
        .any(|c| c.name == container);
    let list = if init { "initContainers" } else { "containers" };
    format!("spec.{list}{{{container}}}")
}
