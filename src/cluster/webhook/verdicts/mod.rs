//! Verdicts at admission (`--verdicts`, `--deny-missing`): when a Pod, a Job or a CronJob is
//! created, or a suspended Job is released, each image of its pod template is asked of its
//! registry (one manifest HEAD, through the [`cache`] the whole cluster's reviews share), and a
//! proven miss comes back to the person who typed `kubectl apply` as an admission warning, or,
//! with `--deny-missing`, as a refusal. Within a budget per review (`--verdict-budget`): past it
//! the review is answered with what is known, and the lookups go on to fill the cache.
//!
//! The registry is asked anonymously, or with `--read-pull-secrets` with the pods' own pull
//! secrets (the template's, and a Job's service account's), matched as the kubelet matches
//! them: read for the one review, never logged or kept (the cache's key holds a keyed hash).
//!
//! Only proven misses speak ([`judge`]): the registry's own "not found" for an image the node
//! will pull whatever it holds (`Always`), for an `IfNotPresent` image only when no node's
//! complete list holds it ([`nodes`]), or a reference no runtime can parse. Anything else says
//! nothing. A miss proven by the nodes' lists warns but is never refused: the lists lag behind
//! an image loaded onto a node a moment ago. A node holding an image is never taken as proof
//! that a pod will run it, only as doubt about a miss: so Kubernetes 1.35+ (whose kubelet may
//! refuse a held image to a pod whose credentials its records lack, KEP-2535) changes nothing
//! here, and neither does the kubelet's version.
//!
//! - [`asked`]: which images a review asks to be judged (pure);
//! - [`judge`]: one image asked of its registry, and what its answer proves;
//! - [`cache`]: the verdicts kept, single-flight, per-registry bounds and cool-downs;
//! - [`nodes`]: the nodes' image lists.

mod asked;
mod cache;
mod judge;
mod nodes;

use super::review::Review;
use crate::check::Checker;
use crate::cluster::door::Door;
use crate::cluster::serve::family;
use crate::config::VerdictConfig;
use crate::keyring::Keyring;
use crate::node::NodeImages;
use crate::pull_policy::PullPolicy;
use crate::reference::Reference;
use cache::{Cache, Key, Lookup};
use judge::{Found, Missing};
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// How long one image's lookup may take in all, retries included: past the review's budget,
/// so that a slow registry's answer still fills the cache for the next review, and short, so
/// that a registry that answers 429 is soon left alone to cool down rather than asked again.
const LOOKUP_TIME: Duration = Duration::from_secs(3);

/// The counters of `/metrics`, shared with the webhook's metrics.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// Images whose verdict was kept.
    hits: AtomicU64,
    /// Images that had to be looked up, or waited on a lookup under way.
    misses: AtomicU64,
    /// Manifest requests the lookups sent, retries included.
    requests: Arc<AtomicU64>,
    /// Reviews answered at their budget with a lookup still under way.
    budget_exceeded: AtomicU64,
    /// Proven misses said, by whether they were refused.
    warned: AtomicU64,
    refused: AtomicU64,
}

impl Counts {
    /// The counters in the text exposition format, zeros included.
    pub(crate) fn write(&self, out: &mut String) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        family(
            out,
            "pullcheck_webhook_verdict_cache_total",
            "Images judged at admission, by whether their verdict was kept.",
            [
                ("{result=\"hit\"}", get(&self.hits)),
                ("{result=\"miss\"}", get(&self.misses)),
            ],
        );
        family(
            out,
            "pullcheck_webhook_verdict_registry_requests_total",
            "Manifest requests sent to registries for admission verdicts.",
            [("", get(&self.requests))],
        );
        family(
            out,
            "pullcheck_webhook_verdict_budget_exceeded_total",
            "Reviews answered at their budget, without every verdict.",
            [("", get(&self.budget_exceeded))],
        );
        family(
            out,
            "pullcheck_webhook_verdicts_total",
            "Proven misses said at admission, by what was done.",
            [
                ("{action=\"warned\"}", get(&self.warned)),
                ("{action=\"refused\"}", get(&self.refused)),
            ],
        );
    }
}

/// What the verdicts of one review come to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Judged {
    /// One warning per proven miss.
    pub(crate) warnings: Vec<String>,
    /// With `--deny-missing`, the refusal's message, when a miss may be refused.
    pub(crate) refusal: Option<String>,
}

/// The admission verdicts of the webhook.
pub(crate) struct Verdicts {
    /// How long a review waits.
    budget: Duration,
    /// `--read-pull-secrets`: the door they are read through; `None`: anonymous.
    secrets: Option<Door>,
    /// Refuse a proven miss.
    deny: bool,
    /// How registries are asked (plain HTTP where told, no platform): one client, its tokens
    /// and connections, for every lookup of the webhook's life.
    checker: Arc<Checker>,
    cache: Arc<Cache>,
    nodes: nodes::Nodes,
    counts: Arc<Counts>,
}

/// One image of a review, on its way to a verdict.
struct Pending {
    image: String,
    policy: PullPolicy,
    reference: Option<Reference>,
    found: Option<Found>,
    lookup: Option<tokio::sync::watch::Receiver<Option<Found>>>,
}

impl Verdicts {
    /// The verdicts `config` asks for, counting into `counts`, reading the nodes through `door`.
    pub(crate) fn new(config: VerdictConfig, door: Option<Door>, counts: Arc<Counts>) -> Verdicts {
        Verdicts {
            budget: config.budget,
            secrets: door.clone().filter(|_| config.read_pull_secrets),
            deny: config.deny,
            checker: Arc::new(crate::cluster::ask::checker(
                config.plain_http,
                config.resolve,
            )),
            cache: Cache::new(cache::Settings {
                hit_ttl: config.hit_ttl,
                miss_ttl: config.miss_ttl,
                per_registry: config.per_registry,
            }),
            nodes: nodes::Nodes::new(door),
            counts,
        }
    }

    /// The verdicts of one review: nothing for a review that asks none, or that cannot be
    /// read (the admitter answers for those).
    pub(crate) async fn judge(&self, review: &Review) -> Judged {
        let deadline = Instant::now() + self.budget;
        let Some(wanted) = asked::wanted(review) else {
            return Judged::default();
        };
        // Past the budget: anonymous.
        let keyring: Keyring = tokio::time::timeout_at(deadline, self.keyring(&wanted))
            .await
            .unwrap_or_default();
        let mut pending: Vec<Pending> = wanted
            .images
            .into_iter()
            .filter(|(_, policy)| *policy != PullPolicy::Never)
            .map(|(image, policy)| self.start(image, policy, &keyring))
            .collect();
        let needs_nodes = pending.iter().any(|p| p.policy == PullPolicy::IfNotPresent);
        let lookups = async {
            for p in pending.iter_mut() {
                if let Some(rx) = p.lookup.as_mut()
                    && let Ok(found) = rx.wait_for(Option::is_some).await
                {
                    p.found = found.clone();
                }
            }
        };
        let lists = async {
            match needs_nodes {
                true => self.nodes.lists().await,
                false => None,
            }
        };
        let both = async { tokio::join!(lookups, lists).1 };
        let (lists, complete) = match tokio::time::timeout_at(deadline, both).await {
            Ok(lists) => (lists, true),
            Err(_) => (None, false),
        };
        // What finished by the deadline (a lookup may have, while another had not).
        for p in pending.iter_mut() {
            if p.found.is_none()
                && let Some(rx) = &p.lookup
            {
                p.found = rx.borrow().clone();
            }
        }
        if !complete {
            self.counts.budget_exceeded.fetch_add(1, Ordering::Relaxed);
        }
        let judged = judged_of(&pending, lists.as_deref().map(Vec::as_slice), self.deny);
        let said = judged.warnings.len() as u64;
        match judged.refusal {
            Some(_) => self.counts.refused.fetch_add(said, Ordering::Relaxed),
            None => self.counts.warned.fetch_add(said, Ordering::Relaxed),
        };
        judged
    }

    /// The credentials of the review's pods, with `--read-pull-secrets`: the template's pull
    /// secrets and, for a Job or a CronJob, its service account's; none without (anonymous).
    /// Read for this review alone, never kept; what cannot be read is left out.
    async fn keyring(&self, wanted: &asked::Wanted) -> Keyring {
        let (Some(door), Some(ns)) = (&self.secrets, &wanted.namespace) else {
            return Keyring::default();
        };
        let mut names = wanted.pull_secrets.clone();
        if let Some(sa) = &wanted.service_account {
            names.extend(door.service_account_pull_secrets(ns, sa).await);
        }
        if names.is_empty() {
            return Keyring::default();
        }
        door.pull_secrets(ns, names).await.0
    }

    /// Starts (or finds) the verdict of one image, asked with the credentials of `keyring`
    /// that match it (anonymously when none does).
    fn start(&self, image: String, policy: PullPolicy, keyring: &Keyring) -> Pending {
        let mut p = Pending {
            image,
            policy,
            reference: None,
            found: None,
            lookup: None,
        };
        let reference = match Reference::parse(&p.image) {
            Ok(r) => r,
            Err(_) => {
                p.found = Some(Found::Missing(Missing {
                    what: "not a valid image reference",
                    registry: String::new(),
                    suggestions: Vec::new(),
                    invalid: true,
                }));
                return p;
            }
        };
        let (key, keyring) = Key::asked(&reference, keyring);
        p.reference = Some(reference);
        let image = p.image.clone();
        let checker = self.checker.clone();
        let requests = self.counts.requests.clone();
        let lookup = self
            .cache
            .lookup(key, move || ask_counted(checker, image, keyring, requests));
        match lookup {
            Lookup::Hit(found) => {
                self.counts.hits.fetch_add(1, Ordering::Relaxed);
                p.found = Some(found);
            }
            Lookup::Wait(rx) => {
                self.counts.misses.fetch_add(1, Ordering::Relaxed);
                p.lookup = Some(rx);
            }
        }
        p
    }
}

/// [`judge::ask`], on the task the cache gives the lookup, on the server's runtime (the held
/// checker's client is made once, so a lookup is I/O alone), its requests counted.
async fn ask_counted(
    checker: Arc<Checker>,
    image: String,
    keyring: Keyring,
    requests: Arc<AtomicU64>,
) -> Found {
    let (found, attempts) = judge::ask(&checker, &image, keyring, LOOKUP_TIME).await;
    requests.fetch_add(u64::from(attempts), Ordering::Relaxed);
    found
}

/// What the images' verdicts come to (pure): a warning per proven miss and, with `deny`, the
/// refusal of the misses that may be refused.
fn judged_of(pending: &[Pending], lists: Option<&[NodeImages]>, deny: bool) -> Judged {
    let mut warnings = Vec::new();
    let mut refused = Vec::new();
    for p in pending {
        let Some(Found::Missing(missing)) = &p.found else {
            continue;
        };
        let (proven, refusable) = if missing.invalid {
            (true, true)
        } else {
            match p.policy {
                PullPolicy::Always => (true, true),
                PullPolicy::IfNotPresent => {
                    let lacks = match (lists, &p.reference) {
                        (Some(lists), Some(r)) => nodes::none_holds(lists, r),
                        _ => false,
                    };
                    (lacks, false)
                }
                PullPolicy::Never => (false, false),
            }
        };
        if !proven {
            continue;
        }
        let words = words(&p.image, missing, p.policy == PullPolicy::IfNotPresent);
        if refusable {
            refused.push(words.clone());
        }
        warnings.push(format!("pullcheck: {words}"));
    }
    let refusal = (deny && !refused.is_empty())
        .then(|| format!("pullcheck (--deny-missing): {}", refused.join("; ")));
    Judged { warnings, refusal }
}

/// `image X: tag not found at R (did you mean v1.1?)`.
fn words(image: &str, missing: &Missing, by_nodes: bool) -> String {
    let mut out = format!("image {image}: {}", missing.what);
    if !missing.registry.is_empty() {
        let _ = write!(out, " at {}", missing.registry);
    }
    if by_nodes {
        out.push_str(", and no node holds it");
    }
    if !missing.suggestions.is_empty() {
        let _ = write!(out, " (did you mean {}?)", missing.suggestions.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(image: &str, policy: PullPolicy, found: Option<Found>) -> Pending {
        Pending {
            image: image.into(),
            policy,
            reference: Reference::parse(image).ok(),
            found,
            lookup: None,
        }
    }

    fn missing(what: &'static str) -> Option<Found> {
        Some(Found::Missing(Missing {
            what,
            registry: "r.example".into(),
            suggestions: vec!["v1.1".into()],
            invalid: false,
        }))
    }

    #[test]
    fn proven_misses_warn_and_only_those_the_nodes_cannot_hold_are_refused() {
        let images = [
            pending(
                "r.example/app:v1.2",
                PullPolicy::Always,
                missing("tag not found"),
            ),
            pending(
                "r.example/tool:v1",
                PullPolicy::IfNotPresent,
                missing("tag not found"),
            ),
            pending("r.example/ok:v1", PullPolicy::Always, Some(Found::Exists)),
            pending(
                "r.example/slow:v1",
                PullPolicy::Always,
                Some(Found::Unknown { cooldown: None }),
            ),
            pending("r.example/late:v1", PullPolicy::Always, None),
        ];
        // No node lists: the IfNotPresent miss says nothing.
        let judged = judged_of(&images, None, false);
        assert_eq!(
            judged.warnings,
            [
                "pullcheck: image r.example/app:v1.2: tag not found at r.example (did you mean v1.1?)"
            ]
        );
        assert_eq!(judged.refusal, None);
        // Lists that prove no node holds it: warned, never refused.
        let body = br#"{"kind": "Node", "status": {"images": [{"names": ["r.example/x:1"]}]}}"#;
        let node = NodeImages::read("n", body, Some(50), None).unwrap();
        let judged = judged_of(&images, Some(std::slice::from_ref(&node)), true);
        assert_eq!(
            judged.warnings,
            [
                "pullcheck: image r.example/app:v1.2: tag not found at r.example (did you mean v1.1?)",
                "pullcheck: image r.example/tool:v1: tag not found at r.example, and no node holds it (did you mean v1.1?)"
            ]
        );
        assert_eq!(
            judged.refusal.as_deref(),
            Some(
                "pullcheck (--deny-missing): image r.example/app:v1.2: tag not found at r.example (did you mean v1.1?)"
            )
        );
        // Nothing proven: nothing said, nothing refused.
        let judged = judged_of(&images[2..], None, true);
        assert_eq!(judged, Judged::default());
    }
}
