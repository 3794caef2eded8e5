//! One image's check: its attempts over its route until a verdict (retried with back-off
//! while the failure is transient), the start prediction of its containers, and whether the
//! verdict counts (an image the node holds, asked because its kubelet re-verifies credentials,
//! counts only on the registry's `ok`).

use super::walk::{RouteAnswer, Walk};
use super::{LastSeen, Repeated, backoff};
use crate::container_start::{ContainerFacts, NotRead, StartCheck};
use crate::credentials::{Lookup, NodeCredentials, ProviderKind};
use crate::keyring::Credential;
use crate::progress::Events;
use crate::reference::Reference;
use crate::registry::{
    self, AuthUsed, Client, ConfigRead, Fact, PlatformSeen, Probed, Progress, Verdict,
};
use crate::report::{ContainerStart, Counted, ImageResult, NotCounted, Reason, Status};
use crate::route::hosts::HostsError;
use crate::route::{Endpoint, Route};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Why `result` is not counted when the node holds its `IfNotPresent` image and its kubelet
/// re-verifies credentials (Kubernetes 1.35+), if it is not (pure): a refusal is left to the
/// kubelet's records, which may still let the pod use the node's copy. The registry's `ok`, and
/// a start prediction made from the pod spec alone, stand.
fn uncounted_when_held(result: &ImageResult) -> Option<NotCounted> {
    crate::proof::by_node(
        result.status,
        crate::pull_policy::PullPolicy::IfNotPresent,
        crate::proof::NodeProof::HoldsReverified,
    )
    .filter(|_| result.fatal())
}

/// One image's check, run as a task of its own.
pub(super) struct Job {
    /// The containers of the pod spec that use this image.
    pub(super) containers: Vec<ContainerFacts>,
    /// The node holds this `IfNotPresent` image and its kubelet re-verifies the pod's
    /// credentials first (Kubernetes 1.35+): why a refusal then does not count, in words. Its
    /// config is not read either: the kubelet may start the node's copy, which the registry's
    /// need not describe.
    pub(super) held: Option<String>,
    pub(super) start_check: StartCheck,
    /// Where the image is asked: the node's route for it, or without a node configuration
    /// the image's own registry alone (an error: the configuration cannot be used for it).
    pub(super) route: Result<Route, HostsError>,
    /// Whether the route comes from a node configuration: the endpoint that gave the verdict
    /// is then reported.
    pub(super) configured: bool,
    /// `--on-unreachable`, `--on-unverifiable`, `--network` and whether a node is named.
    pub(super) flags: crate::proof::Flags,
    /// `--allow-unauthenticated` names this image's registry.
    pub(super) allow_unauthenticated: bool,
    pub(super) client: Arc<Client>,
    /// The credentials to try, in the kubelet's order (empty: anonymous).
    pub(super) credentials: Vec<Credential>,
    /// The node's credential sources, asked after the pull secrets.
    pub(super) node: NodeCredentials,
    pub(super) slots: Arc<Semaphore>,
    pub(super) image: String,
    pub(super) reference: Reference,
    pub(super) deadline: Instant,
    pub(super) attempt_cap: Duration,
    pub(super) timeout: Duration,
    pub(super) events: Events,
    /// The credential sources read and their keys, for a `no_credentials` message.
    pub(super) sources_read: Arc<String>,
    /// Some credential source was read (even one that gave nothing).
    pub(super) sources_exist: bool,
    /// This image's last verdict while it is retried.
    pub(super) last: LastSeen,
    /// The answers retried only so often per registry ("no such host", 429), shared by all
    /// images.
    pub(super) repeated: Repeated,
}

impl Job {
    /// Checks the image: its pull, then what its containers' specs alone decide.
    pub(super) async fn run(self) -> ImageResult {
        let mut result = self.pull().await;
        // Before the certain predictions below: a refusal of an image the node holds is left
        // to the kubelet's records, a `runAsUser: 0` is not.
        if let (Some(words), Some(why)) = (&self.held, uncounted_when_held(&result)) {
            result.not_counted(why, words);
        }
        // Images that cannot be pulled still say what their containers' specs alone decide
        // (`runAsNonRoot` with `runAsUser: 0`).
        if result.containers.is_empty() && !self.containers.is_empty() {
            let why = match self.start_check {
                StartCheck::Off => NotRead::Off,
                StartCheck::Auto => NotRead::PullFailed,
            };
            result.containers = self
                .containers
                .iter()
                .map(|c| c.evaluate(Err(&why)))
                .collect();
        }
        // A certain prediction counts: `runAsNonRoot` with `runAsUser: 0` needs no image, and
        // the kubelet refuses that container whatever the pull does. A pull verdict that does
        // not count (--allow-unauthenticated, --on-unreachable warn, …) must not hide it.
        if !result.is_ok() && !result.fatal() {
            if let Some((reason, message, hint)) =
                registry::wont_start(&self.reference, &result.containers)
            {
                let cause = match result.counted {
                    Counted::No(why) => why.because(),
                    Counted::Yes => "",
                };
                let pull = format!(
                    "; its pull was not verified ({} {}, not counted: {cause})",
                    result.status.as_str(),
                    result.reason
                );
                result.set_verdict(reason, message + &pull, hint);
                result.counted = Counted::Yes;
            }
        }
        result
    }

    /// Predicts whether each container using this image starts, after its probe found it:
    /// the config is read (once) only when some container's spec leaves the answer to it.
    async fn predict_start(
        &self,
        outcome: &Probed,
        endpoint: Option<&Endpoint>,
        node_credentials: &[Credential],
    ) -> (Vec<ContainerStart>, Option<String>) {
        if self.start_check == StartCheck::Off {
            let off = self
                .containers
                .iter()
                .map(|c| c.evaluate(Err(&NotRead::Off)))
                .collect();
            return (off, None);
        }
        let mut artifact = None;
        let needed = self
            .containers
            .iter()
            .any(|c| c.needs_image_config() && c.refusal_without_image().is_none());
        let read = if self.held.is_some() {
            // The kubelet may start the node's copy: the registry's config would be of another
            // image if the tag has moved since, so only the pod spec decides, as for a copy
            // the kubelet starts for any pod.
            Err(NotRead::Failed(
                "the image is on the node, whose copy may not be the registry's".to_string(),
            ))
        } else if needed {
            // The credential the pull found it with: a pull secret's, or a node-side one (a
            // cloud identity, a plugin's answer), as the runtime would read the config with it.
            let credential = match &outcome.auth {
                AuthUsed::Anonymous => None,
                AuthUsed::Credential { username, source } => self
                    .credentials
                    .iter()
                    .chain(node_credentials)
                    .find(|c| c.source == *source && c.username == *username),
            };
            let progress = Progress::default();
            let read = self.client.image_config(
                &self.reference,
                &outcome.fact,
                credential,
                endpoint,
                &progress,
            );
            match tokio::time::timeout_at(self.deadline, read).await {
                Ok(ConfigRead::Read(config)) => Ok(config),
                Ok(ConfigRead::NotLinux(os)) => Err(NotRead::NotLinux(os)),
                Ok(ConfigRead::Failed(why)) => Err(NotRead::Failed(why)),
                Ok(ConfigRead::NotAnImage(what)) => {
                    artifact = Some(what.clone());
                    Err(NotRead::Failed(format!("not an image: {what}")))
                }
                Err(_) => Err(NotRead::Failed(format!(
                    "the deadline passed waiting for {}",
                    progress.get()
                ))),
            }
        } else {
            // No container needs it: never read.
            Err(NotRead::Failed("not needed".to_string()))
        };
        let containers = self
            .containers
            .iter()
            .map(|c| c.evaluate(read.as_ref()))
            .collect();
        (containers, artifact)
    }

    /// Probes the image until it has a verdict (retrying while its failure is transient and
    /// the deadline leaves time), then settles it.
    async fn pull(&self) -> ImageResult {
        let start = Instant::now();
        // `timeout_at` polls the slot before the timer: a slot handed over at the deadline
        // must not start a probe.
        let _slot = match tokio::time::timeout_at(self.deadline, self.slots.acquire()).await {
            Ok(Ok(slot)) if Instant::now() < self.deadline => slot,
            _ => return self.deadline_passed("a free slot (raise --concurrency)", 0, start),
        };
        // The node's credentials come after the pull secrets, as the kubelet orders them.
        let node = self.node.lookup(&self.reference, self.deadline).await;
        let credentials: Vec<&Credential> = self
            .credentials
            .iter()
            .chain(node.credentials.iter())
            .collect();
        let walk = Walk {
            route: &self.route,
            reference: &self.reference,
            configured: self.configured,
            client: &self.client,
            deadline: self.deadline,
        };
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            // attempt_cap <= timeout <= MAX_TIMEOUT: bounded, but saturate all the same.
            let attempt_deadline =
                crate::deadline::instant_after(Instant::now(), self.attempt_cap).min(self.deadline);
            let mut answer = walk.run(&credentials, attempt_deadline).await;
            // Counted per image's registry, as its images share its route (a mirror's 429 is
            // counted for the registry it stands in for).
            self.repeated
                .stop_retrying(&self.reference.registry, &mut answer.verdict);
            let Some(asked) = answer.verdict.retry else {
                return self.settle(answer, attempts, start, &node).await;
            };
            // A registry asking for no wait (`Retry-After: 0`, or a date in the past) still gets
            // the back-off: retrying at once would flood it.
            let wait = asked.map_or_else(|| backoff(attempts), |a| a.max(backoff(attempts)));
            // `wait` may be the registry's Retry-After: saturate, never overflow.
            if crate::deadline::instant_after(Instant::now(), wait) >= self.deadline {
                answer
                    .verdict
                    .message
                    .push_str(&self.gave_up(attempts, start));
                let mut result = self.result(answer.verdict, &answer.outcome.auth, attempts, start);
                self.place(&mut result, answer.place.as_ref());
                self.maybe_warn(&mut result);
                return result;
            }
            let image = self.reference.to_string();
            let what = answer
                .verdict
                .message
                .strip_prefix(&format!("{image}: "))
                .unwrap_or(&answer.verdict.message);
            self.events.retry(
                &self.reference.registry,
                attempts,
                wait,
                answer.verdict.reason.as_str(),
                what,
            );
            let mut last = self.result(answer.verdict, &answer.outcome.auth, attempts, start);
            self.place(&mut last, answer.place.as_ref());
            self.last.set(last);
            tokio::time::sleep(wait).await;
        }
    }

    /// The result of a final answer: the start prediction when the image was found, the
    /// credential sources when none matched, the endpoint, and whether it counts.
    async fn settle(
        &self,
        answer: RouteAnswer,
        attempts: u32,
        start: Instant,
        node: &Lookup,
    ) -> ImageResult {
        let RouteAnswer {
            outcome,
            mut verdict,
            place,
            asked,
        } = answer;
        if matches!(outcome.fact, Fact::TimedOut { deadline: true, .. }) {
            verdict.message.push_str(&self.gave_up(attempts, start));
        }
        let mut containers = Vec::new();
        if verdict.status() == Status::Ok && !self.containers.is_empty() {
            (verdict, containers) = self
                .start_verdict(verdict, &outcome, asked.as_ref(), &node.credentials)
                .await;
        }
        let mut result = self.result(verdict, &outcome.auth, attempts, start);
        result.containers = containers;
        if result.reason == Reason::NoCredentials {
            self.name_the_sources_read(&mut result);
        }
        self.place(&mut result, place.as_ref());
        self.count(&mut result, node);
        self.maybe_warn(&mut result);
        result
    }

    /// The verdict of an image that was found, once its containers' start is predicted: it
    /// is `wont_start` when one will not start, and `not_an_image` when the config read
    /// found an artifact (the pull would fail).
    async fn start_verdict(
        &self,
        verdict: Verdict,
        outcome: &Probed,
        asked: Option<&Endpoint>,
        node_credentials: &[Credential],
    ) -> (Verdict, Vec<ContainerStart>) {
        let (containers, artifact) = self.predict_start(outcome, asked, node_credentials).await;
        let verdict = registry::classify_start(&self.reference, verdict, &containers);
        let Some(what) = artifact else {
            return (verdict, containers);
        };
        let url = "read for the start check".to_string();
        let not_image = registry::classify(
            &self.reference,
            &Probed {
                fact: Fact::NotAnImage { url, what },
                auth: outcome.auth.clone(),
                tried: outcome.tried.clone(),
            },
        );
        let verdict = Verdict {
            digest: verdict.digest,
            ..not_image
        };
        (verdict, containers)
    }

    /// A `no_credentials` result says which sources were read, and what they held: an empty
    /// folder, a secret for other hosts, or a file of the wrong name all end here.
    fn name_the_sources_read(&self, result: &mut ImageResult) {
        result.message.push_str(&format!("; {}", self.sources_read));
        if self.sources_exist {
            // Pull secrets are mounted already: saying "mount them" would not help.
            result.hint = format!(
                "None of the credential sources read has a key for {registry}: add an entry for {registry} to the pull secret, or mount the pull secret that has one (see the warnings on stderr); if the node pulls with its own credentials, use --allow-unauthenticated.",
                registry = self.reference.registry
            );
        }
    }

    /// Whether a refusal counts (`fatal`), and what the node's credential sources add to its
    /// message: in one place. A `not_found` reached with any credential, the node's included,
    /// always counts: that is the answer the check exists for.
    fn count(&self, result: &mut ImageResult, node: &Lookup) {
        if !matches!(result.status, Status::Unauthorized | Status::Denied) {
            return;
        }
        for note in &node.notes {
            result.message.push_str("; ");
            result.message.push_str(note);
        }
        let secrets = self.credentials.len();
        if secrets == 0 && !node.credentials.is_empty() {
            // Only the pod's cloud identity (or a plugin run in the pod) was refused: the
            // node pulls with its own identity, which may differ.
            let names: Vec<&str> = node.credentials.iter().map(|c| c.source.as_str()).collect();
            result.not_counted(
                NotCounted::NodeCredentialsRefused,
                &format!(
                    "only the node-side credentials ({}) were tried, and the node's own identity may have access",
                    names.join(", ")
                ),
            );
            result.hint = "Give the pod's identity read access to the repository (ECR: ecr:GetAuthorizationToken and ecr:BatchGetImage; Artifact Registry Reader; AcrPull), or mount a pull secret.".to_string();
            return;
        }
        if let (Some((plugin, why)), Status::Unauthorized, 0) =
            (&node.failed_plugin, result.status, secrets)
        {
            result.reason = Reason::ProviderFailed;
            let prefix = format!("{}: ", result.reference);
            let rest = result
                .message
                .strip_prefix(&prefix)
                .unwrap_or(&result.message);
            result.message = format!(
                "{prefix}the credential provider plugin {plugin} failed: {why}; then {rest}"
            );
            result.hint = "Check the plugin and its configuration (--image-credential-provider-config, --image-credential-provider-bin-dir); its output is not shown, as it may hold secrets.".to_string();
        }
        // No credential at all could be had for an image a node-side source serves: the
        // kubelet asks the same source with the node's identity, which the pod may lack
        // (IMDS hop limit 1, no IRSA, no Workload Identity). Not a failure unless the user
        // says every pod has an identity (`--cloud-credentials required`).
        let served_but_empty = result.status == Status::Unauthorized
            && secrets == 0
            && node.credentials.is_empty()
            && !node.unavailable.is_empty();
        if served_but_empty {
            result.providers_tried = node.unavailable.clone();
        }
        if served_but_empty && !self.allow_unauthenticated && !self.node.is_required() {
            self.node_identity_unavailable(result, node);
            return;
        }
        if result.status == Status::Unauthorized
            && secrets == 0
            && node.credentials.is_empty()
            && self.allow_unauthenticated
        {
            result.not_counted(
                NotCounted::AllowUnauthenticated,
                "--allow-unauthenticated (the node may pull with credentials of its own)",
            );
            // The usual hint recommends the flag that is already given.
            result.hint = format!(
                "Not verified: make sure the nodes have credentials for {} (a credential provider or a node config.json), or give pullcheck the credentials the pod pulls with to check it.",
                self.reference.registry
            );
        }
    }

    /// No credential at all could be had in the pod for an image a node-side source serves,
    /// and nothing says every pod has an identity: not counted, since the kubelet asks the
    /// same source with the node's identity.
    fn node_identity_unavailable(&self, result: &mut ImageResult, node: &Lookup) {
        let tried: Vec<String> = node
            .unavailable
            .iter()
            .map(|p| p.provider.clone())
            .collect();
        let plugin = node
            .unavailable
            .iter()
            .any(|p| p.kind == ProviderKind::Plugin);
        let (cause, words) = if plugin {
            (
                NotCounted::CredentialProviderUnavailable,
                format!(
                    "no credential could be had in the pod ({} tried; no pull secret matched), and the kubelet runs the same plugin with the node's identity (--cloud-credentials required makes this a failure)",
                    tried.join(", ")
                ),
            )
        } else {
            (
                NotCounted::CloudIdentityUnavailable,
                format!(
                    "no credential could be had from the pod's cloud identity ({} tried; no pull secret matched), and the kubelet pulls with the node's own credential provider (--cloud-credentials required makes this a failure)",
                    tried.join(", ")
                ),
            )
        };
        result.not_counted(cause, &words);
        result.hint = if plugin {
            format!(
                "Not verified: the node's kubelet runs the plugin for {} with the node's identity. To check it here, give the pod what the plugin needs (its service-account token, a cloud identity) or mount a pull secret; pass --cloud-credentials required where every pod has it.",
                self.reference.registry
            )
        } else {
            format!(
                "Not verified: the node pulls {} images with its own identity. To check them here, give the pod an identity with pull access (EKS: IRSA or Pod Identity with ecr:GetAuthorizationToken and ecr:BatchGetImage; GKE: Workload Identity with Artifact Registry Reader; AKS: workload identity with AcrPull) or mount a pull secret; pass --cloud-credentials required where every pod has one.",
                self.reference.registry
            )
        };
    }

    /// The result of an image whose deadline passed before it could be (re)tried.
    fn deadline_passed(&self, waiting_for: &str, attempts: u32, start: Instant) -> ImageResult {
        let outcome = Probed {
            fact: Fact::TimedOut {
                waiting_for: waiting_for.to_string(),
                deadline: true,
            },
            auth: AuthUsed::Anonymous,
            tried: Vec::new(),
        };
        let mut verdict = registry::classify(&self.reference, &outcome);
        verdict.message.push_str(&self.gave_up(attempts, start));
        let mut result = self.result(verdict, &outcome.auth, attempts, start);
        self.maybe_warn(&mut result);
        result
    }

    /// `--on-unreachable warn`, `--on-unverifiable warn`: an image the pod cannot reach or
    /// check is reported, not counted, since the node may reach, trust or resolve what the
    /// pod cannot (and the kubelet's own back-off waits an outage out).
    fn maybe_warn(&self, result: &mut ImageResult) {
        match crate::proof::by_flags(result.status, self.flags) {
            Some(NotCounted::OnUnreachableWarn) => result.not_counted(
                NotCounted::OnUnreachableWarn,
                "--on-unreachable warn (the kubelet's own back-off retries the pull; the node may reach registries that this check cannot)",
            ),
            Some(why @ NotCounted::OnUnverifiableWarn) => result.not_counted(
                why,
                "--on-unverifiable warn (the node may trust a CA, speak plain HTTP to a host or resolve a name that this check cannot; --on-unverifiable fail counts it)",
            ),
            _ => {}
        }
    }

    /// Names the endpoint that gave the verdict, when a node configuration was in use.
    fn place(&self, result: &mut ImageResult, endpoint: Option<&(String, Option<String>)>) {
        if let Some((url, mirror_of)) = endpoint {
            result.endpoint = Some(url.clone());
            result.mirror_of = mirror_of.clone();
        }
    }

    fn gave_up(&self, attempts: u32, start: Instant) -> String {
        let noun = if attempts == 1 { "attempt" } else { "attempts" };
        format!(
            "; gave up after {attempts} {noun} in {:.1}s (--timeout {})",
            start.elapsed().as_secs_f64(),
            humantime::format_duration(self.timeout)
        )
    }

    fn result(&self, v: Verdict, auth: &AuthUsed, attempts: u32, start: Instant) -> ImageResult {
        let mut r =
            ImageResult::new(&self.image, v.reason, v.message).of_reference(&self.reference);
        r.hint = v.hint;
        r.digest = v.digest;
        r.platform_digest = v.platform_digest;
        r.platform_checked = v.platform.map(|p| p == PlatformSeen::Checked);
        r.platform_note = match v.platform {
            Some(PlatformSeen::Skipped(why)) => Some(why),
            _ => None,
        };
        r.available_platforms = v.available_platforms;
        r.suggestions = v.suggestions;
        r.existing_tags = v.some_tags;
        r.auth = auth.describe();
        r.attempts = attempts;
        r.elapsed_ms = start.elapsed().as_millis().try_into().unwrap_or(u64::MAX);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::result;

    /// On a node that re-verifies credentials, what the registry says of an image the node
    /// holds: `ok` is proof, a refusal is left to the kubelet's records, and a container the
    /// pod spec alone keeps from starting still counts.
    fn held_by_node(result: &mut ImageResult, words: &str) {
        if let Some(why) = uncounted_when_held(result) {
            result.not_counted(why, words);
        }
    }

    #[test]
    fn a_refusal_of_an_image_the_node_holds_is_left_to_the_kubelet() {
        for status in Status::ALL {
            let mut r = result("app:v1", status);
            let before = r.message.clone();
            held_by_node(&mut r, "node n holds it");
            match status {
                Status::Ok => assert_eq!(r.counted, Counted::Yes, "{status:?}"),
                Status::InvalidReference | Status::WontStart => {
                    assert!(r.fatal(), "{status:?}");
                    assert_eq!(r.message, before, "{status:?}");
                }
                _ => {
                    assert_eq!(r.counted, Counted::No(NotCounted::HeldByNode), "{status:?}");
                    assert_eq!(r.message, format!("{before}; not counted: node n holds it"));
                }
            }
        }
        // A failure already not counted by a flag keeps its cause.
        let mut r = result("app:v1", Status::Unreachable);
        r.not_counted(NotCounted::OnUnreachableWarn, "--on-unreachable warn");
        held_by_node(&mut r, "node n holds it");
        assert_eq!(r.counted, Counted::No(NotCounted::OnUnreachableWarn));
    }
}
