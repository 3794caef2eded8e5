//! Checking a set of images: all at once (bounded by `--concurrency`), each retried with
//! exponential back-off and jitter while its failure is transient, the whole run inside one
//! deadline (`--timeout`). Every image gets a result; nothing here returns an error.

use crate::credentials::{Lookup, NodeCredentials};
use crate::keyring::{Credential, Keyring};
use crate::reference::{Reference, ReferenceError};
use crate::registry::{self, AuthUsed, Client, ClientOptions, Fact, Outcome, Progress, Verdict};
use crate::report::{ImageResult, Report, Status};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How to check. `Default` gives the CLI's defaults.
#[derive(Debug, Clone)]
pub struct Options {
    /// The deadline for the whole run.
    pub timeout: Duration,
    /// How many images are checked at once.
    pub concurrency: usize,
    /// Plain-HTTP registries and extra CA certificates.
    pub client: ClientOptions,
    /// Pull credentials.
    pub keyring: Keyring,
    /// Registries (`host[:port]`, `docker.io`, or `*`) whose `unauthorized` verdicts, when no
    /// credential matched, are warnings: the node may pull with credentials of its own.
    pub allow_unauthenticated: Vec<String>,
    /// What the node would pull with (cloud providers, exec plugins), tried after the pull
    /// secrets. None by default; the CLI builds them from `--cloud-credentials` and
    /// `--image-credential-provider-config`.
    pub node_credentials: NodeCredentials,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            timeout: Duration::from_secs(60),
            concurrency: 16,
            client: ClientOptions::default(),
            keyring: Keyring::default(),
            allow_unauthenticated: Vec::new(),
            node_credentials: NodeCredentials::none(),
        }
    }
}

/// First wait between attempts; doubled each time up to [`BACKOFF_MAX`], with jitter.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(8);
/// Every attempt gets at least this long, and at most a quarter of the deadline, so that one
/// stalled connection leaves time to try again.
const ATTEMPT_MIN: Duration = Duration::from_secs(2);
/// The longest deadline: a day is far beyond any pod's patience, and keeps `Instant`
/// arithmetic from overflowing.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Checks every image and reports on each. Images that name the same normalised reference
/// are checked once; invalid references become `invalid_reference` results and the others are
/// still checked.
pub async fn check(images: &[String], options: &Options) -> Report {
    check_until(images, options, std::future::pending()).await
}

/// [`check`], cut short when `stop` completes (with the name of what stopped it, e.g.
/// `SIGTERM`): the images not finished by then get `unreachable` with reason `stopped`, and
/// the report says it was stopped.
pub async fn check_until(
    images: &[String],
    options: &Options,
    stop: impl Future<Output = String>,
) -> Report {
    let started = Instant::now();
    let timeout = options.timeout.min(MAX_TIMEOUT);
    let deadline = started + timeout;
    // Each image once: parsed, its duplicates dropped, its credentials looked up. The token
    // plan and the jobs both come from this.
    let mut seen = HashSet::new();
    let parsed: Vec<Parsed<'_>> = images
        .iter()
        .filter_map(|image| match Reference::parse(image) {
            Err(e) => Some((image, Err(e))),
            Ok(r) if !seen.insert(r.to_string()) => None,
            Ok(r) => {
                let credentials = options
                    .keyring
                    .lookup(&r.registry, &r.repository)
                    .into_iter()
                    .cloned()
                    .collect();
                Some((image, Ok((r, credentials))))
            }
        })
        .collect();
    let client =
        match Client::new(&options.client) {
            Ok(mut c) => {
                c.plan(parsed.iter().filter_map(|(_, p)| p.as_ref().ok()).map(
                    |(r, credentials)| {
                        let keys = if credentials.is_empty() {
                            vec![String::new()]
                        } else {
                            credentials.iter().map(|c| c.source.clone()).collect()
                        };
                        (r.api_host().to_string(), r.repository.clone(), keys)
                    },
                ));
                Arc::new(c)
            }
            Err(e) => {
                // Not reachable with valid options; still, every image gets a verdict.
                let results = images
                    .iter()
                    .map(|i| plain_result(i, Status::Unreachable, "client", e.to_string()))
                    .collect();
                return Report::new(results);
            }
        };
    let attempt_cap = (timeout / 4).max(ATTEMPT_MIN).min(timeout);
    let slots = Arc::new(Semaphore::new(options.concurrency.max(1)));

    // `results[i]` is filled as jobs end; `pending[i]` names the image of a job, for the
    // report of a run that is stopped.
    let mut results: Vec<Option<ImageResult>> = Vec::new();
    let mut pending: Vec<Option<(String, Reference)>> = Vec::new();
    let mut tasks = JoinSet::new();
    for (image, parsed) in parsed {
        match parsed {
            Err(e) => {
                results.push(Some(ImageResult {
                    hint: "Fix the image reference: lower-case repository, valid tag (up to 128 characters) or digest (sha256:<64 hex>).".to_string(),
                    ..plain_result(image, Status::InvalidReference, "invalid_reference", e.to_string())
                }));
                pending.push(None);
            }
            Ok((reference, credentials)) => {
                let index = results.len();
                results.push(None);
                pending.push(Some((image.clone(), reference.clone())));
                let allowed = options
                    .allow_unauthenticated
                    .iter()
                    .any(|h| h == "*" || *h == reference.registry);
                let job = Job {
                    allow_unauthenticated: allowed,
                    client: client.clone(),
                    credentials,
                    node: options.node_credentials.clone(),
                    slots: slots.clone(),
                    image: image.clone(),
                    reference,
                    deadline,
                    attempt_cap,
                    timeout,
                };
                tasks.spawn(async move { (index, job.run().await) });
            }
        }
    }
    tokio::pin!(stop);
    let mut stopped = None;
    loop {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                // A task ends only by returning: the code on its path does not panic, and a
                // panic would abort the release binary anyway.
                if let Ok((index, result)) = joined {
                    if let Some(slot) = results.get_mut(index) {
                        *slot = Some(result);
                    }
                }
            }
            why = &mut stop => {
                tasks.abort_all();
                stopped = Some(why);
                break;
            }
        }
    }
    if let Some(why) = &stopped {
        for (slot, job) in results.iter_mut().zip(pending) {
            if let (None, Some((image, reference))) = (&slot, job) {
                *slot = Some(ImageResult {
                    reference: reference.to_string(),
                    registry: reference.registry.clone(),
                    hint: "Nothing to do: the check was stopped before it finished.".to_string(),
                    ..plain_result(
                        &image,
                        Status::Unreachable,
                        "stopped",
                        format!(
                            "{reference}: not checked, pullcheck was stopped by {why} after {:.1}s",
                            started.elapsed().as_secs_f64()
                        ),
                    )
                });
            }
        }
    }
    let mut report = Report::new(results.into_iter().flatten().collect());
    report.stopped = stopped;
    report.platform = match &options.client.platform.want {
        Some(p) => p.to_string(),
        None => "any".to_string(),
    };
    report
}

/// An image as given, and its reference with the credentials to try, or why it is invalid.
type Parsed<'a> = (
    &'a String,
    Result<(Reference, Vec<Credential>), ReferenceError>,
);

struct Job {
    /// `--allow-unauthenticated` names this image's registry.
    allow_unauthenticated: bool,
    client: Arc<Client>,
    /// The credentials to try, in the kubelet's order (empty: anonymous).
    credentials: Vec<Credential>,
    /// The node's credential sources, asked after the pull secrets.
    node: NodeCredentials,
    slots: Arc<Semaphore>,
    image: String,
    reference: Reference,
    deadline: Instant,
    attempt_cap: Duration,
    timeout: Duration,
}

impl Job {
    async fn run(self) -> ImageResult {
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
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let progress = Progress::default();
            let attempt_deadline = (Instant::now() + self.attempt_cap).min(self.deadline);
            let probe =
                self.client
                    .probe(&self.reference, &credentials, &progress, attempt_deadline);
            let outcome = match tokio::time::timeout_at(attempt_deadline, probe).await {
                Ok(outcome) => outcome,
                Err(_) => Outcome {
                    fact: Fact::TimedOut {
                        waiting_for: progress.get(),
                        deadline: attempt_deadline >= self.deadline,
                    },
                    auth: AuthUsed::Anonymous,
                    tried: Vec::new(),
                },
            };
            let mut verdict = registry::classify(&self.reference, &outcome);
            let Some(asked) = verdict.retry else {
                if matches!(outcome.fact, Fact::TimedOut { deadline: true, .. }) {
                    verdict.message.push_str(&self.gave_up(attempts, start));
                }
                let mut result = self.result(verdict, &outcome.auth, attempts, start);
                self.count(&mut result, &node);
                return result;
            };
            // A registry asking for no wait (`Retry-After: 0`, or a date in the past) still gets
            // the back-off: retrying at once would flood it.
            let wait = asked.map_or_else(|| backoff(attempts), |a| a.max(backoff(attempts)));
            if Instant::now() + wait >= self.deadline {
                verdict.message.push_str(&self.gave_up(attempts, start));
                return self.result(verdict, &outcome.auth, attempts, start);
            }
            tokio::time::sleep(wait).await;
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
            result.fatal = false;
            result.message.push_str(&format!(
                "; not counted: only the node-side credentials ({}) were tried, and the node's own identity may have access",
                names.join(", ")
            ));
            result.hint = "Give the pod's identity read access to the repository (ECR: ecr:GetAuthorizationToken and ecr:BatchGetImage; Artifact Registry Reader; AcrPull), or mount a pull secret.".to_string();
            return;
        }
        if let (Some((plugin, why)), Status::Unauthorized, 0) =
            (&node.failed_plugin, result.status, secrets)
        {
            result.reason = "provider_failed";
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
        if result.status == Status::Unauthorized
            && secrets == 0
            && node.credentials.is_empty()
            && self.allow_unauthenticated
        {
            result.fatal = false;
            result.message.push_str(
                "; not counted: --allow-unauthenticated (the node may pull with credentials of its own)",
            );
        }
    }

    /// The result of an image whose deadline passed before it could be (re)tried.
    fn deadline_passed(&self, waiting_for: &str, attempts: u32, start: Instant) -> ImageResult {
        let outcome = Outcome {
            fact: Fact::TimedOut {
                waiting_for: waiting_for.to_string(),
                deadline: true,
            },
            auth: AuthUsed::Anonymous,
            tried: Vec::new(),
        };
        let mut verdict = registry::classify(&self.reference, &outcome);
        verdict.message.push_str(&self.gave_up(attempts, start));
        self.result(verdict, &outcome.auth, attempts, start)
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
        ImageResult {
            image: self.image.clone(),
            reference: self.reference.to_string(),
            registry: self.reference.registry.clone(),
            status: v.status,
            reason: v.reason,
            digest: v.digest,
            platform_digest: v.platform_digest,
            available_platforms: v.available_platforms,
            suggestions: v.suggestions,
            message: v.message,
            hint: v.hint,
            auth: auth.describe(),
            fatal: true,
            attempts,
            elapsed_ms: start.elapsed().as_millis().try_into().unwrap_or(u64::MAX),
        }
    }
}

/// Exponential back-off with "equal jitter": half the step fixed, half random, so that many
/// images failing together do not retry in lock-step.
fn backoff(attempt: u32) -> Duration {
    let exp = BACKOFF_BASE.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let step = exp.min(BACKOFF_MAX);
    let half = step / 2;
    half + half.mul_f64(fastrand::f64())
}

fn plain_result(image: &str, status: Status, reason: &'static str, message: String) -> ImageResult {
    ImageResult {
        image: image.to_string(),
        reference: String::new(),
        registry: String::new(),
        status,
        reason,
        digest: None,
        platform_digest: None,
        available_platforms: Vec::new(),
        suggestions: Vec::new(),
        message,
        hint: String::new(),
        auth: AuthUsed::Anonymous.describe(),
        fatal: true,
        attempts: 0,
        elapsed_ms: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        for attempt in 1..40 {
            let d = backoff(attempt);
            let step = BACKOFF_BASE
                .saturating_mul(1u32 << (attempt - 1).min(16))
                .min(BACKOFF_MAX);
            assert!(d >= step / 2 && d <= step, "{attempt}: {d:?}");
        }
        assert!(backoff(1) <= Duration::from_millis(250));
        assert!(backoff(30) <= BACKOFF_MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn invalid_references_are_results_and_duplicates_collapse() {
        let images = vec![
            "UPPER/Case/X".to_string(),
            "127.0.0.1:1/a".to_string(),
            "127.0.0.1:1/a:latest".to_string(),
        ];
        let options = Options {
            timeout: Duration::from_secs(3),
            client: ClientOptions {
                plain_http: vec!["127.0.0.1:1".into()],
                ..Default::default()
            },
            ..Default::default()
        };
        let report = check(&images, &options).await;
        assert_eq!(report.images.len(), 2, "{report:#?}");
        assert_eq!(report.images[0].status, Status::InvalidReference);
        assert_eq!(report.images[1].status, Status::Unreachable);
    }
}
