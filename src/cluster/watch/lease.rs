//! Leader election over a `coordination.k8s.io/v1` Lease, so that of several replicas exactly one
//! acts. kube-rs's runtime (3.1) has no leader election, and the crates that add one bring their
//! own runtimes and clocks for what is here ~150 lines: the same rules as client-go's
//! `leaderelection` package.
//!
//! - Every update is a `replace` carrying the Lease's `resourceVersion`: of two replicas that
//!   both saw it expire, the API server lets one write and answers the other 409.
//! - Expiry is judged on this replica's clock from when it last saw the record change (the
//!   holder or its `renewTime`), never from the `renewTime` itself, so that clocks that
//!   disagree between nodes cannot make two leaders.
//! - A leader renews every `lease/5`, and stops acting when it could not renew for `2/3` of the
//!   lease: before any other replica may take over. On SIGTERM it gives the Lease up, so the next
//!   leader starts at once.

use crate::cluster::door::Door;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What to do with the Lease on one look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// There is none: create it, held by us.
    Create,
    /// We hold it: renew it.
    Renew,
    /// Nobody holds it, or its holder stopped renewing: take it.
    TakeOver,
    /// Someone else holds it.
    Wait(String),
}

/// Decides from the Lease as read, and how long its record has been seen unchanged here.
pub(crate) fn step(lease: Option<&Lease>, me: &str, unchanged_for: Duration) -> Step {
    let Some(lease) = lease else {
        return Step::Create;
    };
    let spec = lease.spec.as_ref();
    let holder = spec
        .and_then(|s| s.holder_identity.as_deref())
        .unwrap_or_default();
    if holder == me {
        return Step::Renew;
    }
    if holder.is_empty() {
        return Step::TakeOver;
    }
    let duration = spec
        .and_then(|s| s.lease_duration_seconds)
        .and_then(|s| u64::try_from(s).ok())
        .map_or(Duration::ZERO, Duration::from_secs);
    if unchanged_for >= duration {
        Step::TakeOver
    } else {
        Step::Wait(holder.to_string())
    }
}

/// The record whose change restarts the expiry clock: the holder and its last renewal.
type Record = Option<(Option<String>, Option<Timestamp>)>;

/// The [`Record`] of a Lease as read.
fn record(lease: Option<&Lease>) -> Record {
    let spec = lease?.spec.as_ref()?;
    Some((
        spec.holder_identity.clone(),
        spec.renew_time.as_ref().map(|t| t.0),
    ))
}

/// The elector: who we are, the Lease, and the channel that says whether we lead. Cloned for
/// the release on SIGTERM, which names the same Lease and candidate.
#[derive(Clone)]
pub(crate) struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
}

impl Elector {
    /// The candidate of the replica `identity` for the Lease `name` in `namespace`, held for
    /// `duration`. The Lease names this process, not only its pod (`<identity>_<random>`, as
    /// client-go's elections do): a container restarted in the same pod is a new candidate,
    /// which waits for its dead predecessor's lease to expire instead of renewing it as its own.
    pub(crate) fn new(
        door: &Door,
        namespace: &str,
        name: &str,
        identity: &str,
        duration: Duration,
    ) -> Elector {
        Elector {
            api: Api::namespaced(door.client(), namespace),
            name: name.to_string(),
            identity: format!("{identity}_{:016x}", fastrand::u64(..)),
            duration,
        }
    }

    /// Runs for ever, sending `true` into `leading` while this replica holds the Lease.
    pub(crate) async fn run(self, leading: watch::Sender<bool>) {
        let retry = (self.duration / 5).max(Duration::from_millis(500));
        let renew_deadline = self.duration * 2 / 3;
        // The record last read, and when it was first read so.
        let mut seen: Option<(Record, Instant)> = None;
        let mut renewed: Option<Instant> = None;
        loop {
            let held = match self.api.get_opt(&self.name).await {
                Ok(lease) => {
                    let now = Instant::now();
                    let rec = record(lease.as_ref());
                    let since = match &seen {
                        Some((r, at)) if *r == rec => *at,
                        _ => {
                            seen = Some((rec, now));
                            now
                        }
                    };
                    let step = step(lease.as_ref(), &self.identity, now - since);
                    self.apply(step, lease).await.map_err(LeaseError::Write)
                }
                Err(e) => Err(LeaseError::Get(e)),
            };
            match held {
                Ok(true) => renewed = Some(Instant::now()),
                Ok(false) => renewed = None,
                Err(e) => crate::log::info(
                    crate::log::Component::Watch,
                    &format!("lease {}: {e}", self.name),
                ),
            }
            // A leader that cannot renew stops acting before another may take over.
            let leads = renewed.is_some_and(|at| at.elapsed() < renew_deadline);
            if *leading.borrow() != leads {
                crate::log::info(
                    crate::log::Component::Watch,
                    &format!(
                        "{} {} the lease {}",
                        self.identity,
                        if leads { "holds" } else { "does not hold" },
                        self.name
                    ),
                );
            }
            leading.send_replace(leads);
            tokio::time::sleep(retry).await;
        }
    }

    /// Carries one step out: `Ok(true)` when we hold the Lease after it.
    async fn apply(&self, step: Step, lease: Option<Lease>) -> Result<bool, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let seconds = i32::try_from(self.duration.as_secs()).unwrap_or(i32::MAX);
        let write = match step {
            Step::Wait(_) => return Ok(false),
            Step::Create => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.identity.clone()),
                        lease_duration_seconds: Some(seconds),
                        acquire_time: Some(now.clone()),
                        renew_time: Some(now),
                        lease_transitions: Some(0),
                        ..LeaseSpec::default()
                    }),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Step::Renew | Step::TakeOver => {
                let mut lease = lease.unwrap_or_default();
                let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
                if step == Step::TakeOver {
                    spec.holder_identity = Some(self.identity.clone());
                    spec.acquire_time = Some(now.clone());
                    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
                }
                spec.lease_duration_seconds = Some(seconds);
                spec.renew_time = Some(now);
                // `replace` sends the resourceVersion read: a 409 if anyone wrote since.
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match write {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.is_conflict() || s.is_already_exists() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up if we hold it (on SIGTERM), so that another replica takes over at
    /// once rather than after the lease duration.
    pub(crate) async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        let _ = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await;
    }
}

/// Why one round of the election failed (said at info level: the next round retries).
#[derive(Debug, thiserror::Error)]
enum LeaseError {
    /// The Lease could not be read.
    #[error("get: {0}")]
    Get(#[source] kube::Error),
    /// It could not be created or replaced (other than a conflict).
    #[error("{0}")]
    Write(#[source] kube::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, seconds: i32) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_string),
                lease_duration_seconds: Some(seconds),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn steps() {
        let s = Duration::from_secs;
        assert_eq!(step(None, "a", s(0)), Step::Create);
        assert_eq!(step(Some(&lease(Some("a"), 15)), "a", s(99)), Step::Renew);
        assert_eq!(step(Some(&lease(None, 15)), "a", s(0)), Step::TakeOver);
        assert_eq!(step(Some(&lease(Some(""), 15)), "a", s(0)), Step::TakeOver);
        assert_eq!(
            step(Some(&lease(Some("b"), 15)), "a", s(14)),
            Step::Wait("b".into())
        );
        assert_eq!(
            step(Some(&lease(Some("b"), 15)), "a", s(15)),
            Step::TakeOver
        );
    }
}
