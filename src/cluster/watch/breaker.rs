//! The bound on owners that recreate what the watcher fails. A framework that deletes and
//! recreates a failed pod (KubeRay recreates a head pod every few seconds under
//! `restartPolicy: Never`) would otherwise turn the watcher into a loop: fail, recreate, fail.
//! After [`Breaker::limit`] failures of one owner for one cause within [`Breaker::window`], the
//! watcher stops failing that owner's pods for that cause, says so once (an Event, a log line and
//! a metric), and leaves them to the kubelet; failures older than the window are forgotten, so
//! the owner's pods are failed again once it has stopped recreating for that long.
//!
//! A Job is an owner like any other: each pod the watcher fails counts against its
//! `backoffLimit` unless a `FailJob` rule ends it at the first, and the default limit (10) is
//! above the API server's default `backoffLimit` of 6 (7 pods), so a Job's own bound comes first.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// Who made a pod, for the bound: its namespace and its controller's UID, or, for a pod no
/// controller owns, its own name (a bare pod recreated under the same name is the same).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Owner {
    pub(crate) namespace: String,
    /// `Kind/name` of the controller, or `Pod/name`: for people.
    pub(crate) name: String,
    /// The controller's UID, or the pod's name.
    key: String,
}

impl Owner {
    /// The pod's owner.
    pub(crate) fn of(pod: &Pod) -> Owner {
        let namespace = pod.namespace().unwrap_or_default();
        let controller = pod
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true));
        match controller {
            Some(o) => Owner {
                namespace,
                name: format!("{}/{}", o.kind, o.name),
                key: o.uid.clone(),
            },
            None => Owner {
                namespace,
                name: format!("Pod/{}", pod.name_any()),
                key: pod.name_any(),
            },
        }
    }
}

/// What the bound says of one more failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Fail the pod (and count it once it is failed).
    Fail,
    /// The limit is reached, for the first time in this window: say so once, fail nothing.
    Tripped,
    /// The limit was reached and said: fail nothing, say nothing.
    Held,
}

/// Failures by (owner, cause word), within the window.
#[derive(Debug, Clone)]
pub(crate) struct Breaker {
    /// `--owner-failure-limit`: how many pods of one owner may be failed for one cause.
    pub(crate) limit: usize,
    /// `--owner-failure-window`.
    pub(crate) window: Duration,
    failures: BTreeMap<(Owner, &'static str), VecDeque<Timestamp>>,
    said: BTreeSet<(Owner, &'static str)>,
}

impl Breaker {
    pub(crate) fn new(limit: usize, window: Duration) -> Breaker {
        Breaker {
            limit,
            window,
            failures: BTreeMap::new(),
            said: BTreeSet::new(),
        }
    }

    /// Whether one more pod of `owner` may be failed for `cause` now. Nothing is counted: only
    /// a pod that was failed is ([`Breaker::count`]), since a write that finds the pod changed
    /// (the kubelet wrote its status in between) fails nothing and is tried again on the next
    /// look.
    pub(crate) fn admit(&mut self, owner: &Owner, cause: &'static str, now: Timestamp) -> Verdict {
        let window = i64::try_from(self.window.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now.as_millisecond().saturating_sub(window);
        // Forget what is past every window, so that memory stays bounded by the owners that
        // failed lately.
        self.failures.retain(|_, times| {
            while times.front().is_some_and(|t| t.as_millisecond() <= cutoff) {
                times.pop_front();
            }
            !times.is_empty()
        });
        let key = (owner.clone(), cause);
        if self.failures.get(&key).map_or(0, VecDeque::len) < self.limit {
            self.said.remove(&key);
            return Verdict::Fail;
        }
        if self.said.insert(key) {
            Verdict::Tripped
        } else {
            Verdict::Held
        }
    }

    /// Counts one pod of `owner` failed for `cause` at `now`.
    pub(crate) fn count(&mut self, owner: &Owner, cause: &'static str, now: Timestamp) {
        self.failures
            .entry((owner.clone(), cause))
            .or_default()
            .push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn pod(name: &str, owner_uid: Option<&str>) -> Pod {
        let mut meta = json!({"name": name, "namespace": "ray"});
        if let Some(uid) = owner_uid {
            meta["ownerReferences"] = json!([{"apiVersion": "ray.io/v1", "kind": "RayCluster",
                "name": "c", "uid": uid, "controller": true}]);
        }
        serde_json::from_value(json!({"metadata": meta})).unwrap()
    }

    #[test]
    fn an_owner_that_recreates_is_failed_n_times_then_said_once() {
        let mut b = Breaker::new(3, Duration::from_secs(600));
        let owner = Owner::of(&pod("head-1", Some("u1")));
        assert_eq!(owner, Owner::of(&pod("head-2", Some("u1"))));
        assert_eq!(owner.name, "RayCluster/c");
        // A recreation every 2 s.
        let fail = |b: &mut Breaker, owner: &Owner, cause, t| {
            let v = b.admit(owner, cause, at(t));
            if v == Verdict::Fail {
                b.count(owner, cause, at(t));
            }
            v
        };
        let verdicts: Vec<_> = (0..6)
            .map(|i| fail(&mut b, &owner, "manifest_missing", i * 2))
            .collect();
        use Verdict::*;
        assert_eq!(verdicts, [Fail, Fail, Fail, Tripped, Held, Held]);
        // Another cause, and another owner, have bounds of their own.
        assert_eq!(fail(&mut b, &owner, "secret_missing", 12), Fail);
        let other = Owner::of(&pod("head-1", Some("u2")));
        assert_eq!(fail(&mut b, &other, "manifest_missing", 12), Fail);
        // Once the window has passed over the failures, the owner's pods are failed again.
        let again: Vec<_> = (604..608)
            .map(|t| fail(&mut b, &owner, "manifest_missing", t))
            .collect();
        assert_eq!(again, [Fail, Fail, Fail, Tripped]);
    }

    #[test]
    fn a_write_that_failed_nothing_is_not_counted() {
        // The kubelet wrote the pod's status between the read and the write (409): the next
        // look tries again, and only the write that failed the pod counts.
        let mut b = Breaker::new(2, Duration::from_secs(600));
        let owner = Owner::of(&pod("probe", None));
        for t in 0..10 {
            assert_eq!(b.admit(&owner, "manifest_missing", at(t)), Verdict::Fail);
        }
        b.count(&owner, "manifest_missing", at(10));
        assert_eq!(b.admit(&owner, "manifest_missing", at(11)), Verdict::Fail);
        b.count(&owner, "manifest_missing", at(11));
        assert_eq!(
            b.admit(&owner, "manifest_missing", at(12)),
            Verdict::Tripped
        );
    }

    #[test]
    fn a_bare_pod_is_its_own_owner_by_name() {
        let a = Owner::of(&pod("job-runner", None));
        assert_eq!(a, Owner::of(&pod("job-runner", None)));
        assert_ne!(a, Owner::of(&pod("other", None)));
        assert_eq!(a.name, "Pod/job-runner");
    }
}
