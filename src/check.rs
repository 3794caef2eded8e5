//! Checking a set of images: all at once (bounded by `--concurrency`), each retried with
//! exponential back-off and jitter while its failure is transient, the whole run inside one
//! deadline (`--timeout`). Every image gets a result; nothing here returns an error. When the
//! pod's containers are known ([`Options::containers`]), an image that was found is then checked
//! for whether its containers will start ([`crate::container_start`]), inside the same deadline.
//!
//! A one-shot run ([`check`]) makes its own registry client; a long-running process keeps a
//! [`Checker`] (`check/held.rs`), whose client serves every run it is asked for.

mod held;
mod job;
mod options;
mod walk;

pub use crate::proof::{Network, OnUnreachable, OnUnverifiable};
pub use held::Checker;
pub use options::Options;

use crate::container_start::{ContainerFacts, NotRead};
use crate::deadline::MAX_TIMEOUT;
use crate::keyring::Credential;
use crate::node::{self, NodeLookup};
use crate::progress::Events;
use crate::proof::NodeProof;
use crate::pull_policy::{Policies, PullPolicy};
use crate::reference::{Reference, ReferenceError};
use crate::registry::{self, Client, ClientOptions, Verdict};
use crate::report::{ImageResult, Reason, Report};
use crate::route::hosts::HostsError;
use crate::route::{Endpoint, Route};
use job::Job;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The most images checked at once (`--concurrency`).
pub const MAX_CONCURRENCY: usize = 1024;

/// First wait between attempts; doubled each time up to [`BACKOFF_MAX`], with jitter.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(8);
/// Every attempt gets at least this long, and at most a quarter of the deadline, so that one
/// stalled connection leaves time to try again.
const ATTEMPT_MIN: Duration = Duration::from_secs(2);

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
    run(images, options, &options.client, None, stop).await
}

/// The run itself, over the client `held` (a [`Checker`]'s, made with `settings`) or, when
/// `None`, over one made for this run from `settings`, its token scopes planned from the
/// run's images.
///
/// The run's phases, in order: set-up (`parse`, `client_for`, `read_node`), scheduling
/// (`Schedule::new`: a job per image, or its result at once), waiting for the jobs
/// (`Schedule::wait`; each job walks its endpoints and gives its verdict, in `job.rs` and
/// `walk.rs`), the verdicts of a run that was stopped (`Schedule::stopped`), and the summary
/// (`summary`).
async fn run(
    images: &[String],
    options: &Options,
    settings: &ClientOptions,
    held: Option<Arc<Client>>,
    stop: impl Future<Output = String>,
) -> Report {
    let started = options
        .started
        .map_or_else(Instant::now, Instant::from_std)
        .min(Instant::now());
    let timeout = options.timeout.min(MAX_TIMEOUT);
    // timeout <= MAX_TIMEOUT (a day): cannot overflow, saturated all the same.
    let deadline = crate::deadline::instant_after(started, timeout);
    tokio::pin!(stop);
    let parsed = match parse(images, options, settings, started, &mut stop).await {
        Ok(parsed) => parsed,
        Err(report) => return *report,
    };
    // Where credentials were looked for, for the JSON and for `no_credentials` messages.
    let credential_sources = options.keyring.sources(
        parsed
            .iter()
            .filter_map(|(_, p)| p.as_ref().ok())
            .map(|(r, _)| (r.registry.as_str(), r.repository.as_str())),
    );
    let client = match held {
        Some(client) => client,
        None => match client_for(options, settings, images, &parsed) {
            Ok(client) => client,
            Err(report) => return *report,
        },
    };
    let attempt_cap = (timeout / 4).max(ATTEMPT_MIN).min(timeout);
    let policies = Policies::new(&options.if_not_present);
    let until = (Instant::now() + attempt_cap).min(deadline);
    let (node, mut stopped) = read_node(options, &policies, &parsed, until, &mut stop).await;
    let shared = Shared {
        client: client.clone(),
        settings,
        slots: Arc::new(Semaphore::new(
            options.concurrency.clamp(1, MAX_CONCURRENCY),
        )),
        deadline,
        attempt_cap,
        timeout,
        sources_read: Arc::new(options.keyring.describe_sources()),
        sources_exist: !credential_sources.is_empty(),
        repeated: Repeated::default(),
    };
    let mut schedule = Schedule::new(
        parsed,
        options,
        &shared,
        &node,
        &policies,
        stopped.is_none(),
    );
    if stopped.is_none() {
        stopped = schedule.wait(&options.events, &mut stop).await;
    }
    if let Some(why) = &stopped {
        schedule.stopped(why, started);
    }
    let results = schedule.results.into_iter().flatten().collect();
    let mut report = summary(results, options, &shared, &node, &policies);
    report.stopped = stopped;
    report.credential_sources = credential_sources;
    report
}

/// Set-up: each image once, parsed, its duplicates dropped, its credentials looked up (the
/// token plan and the jobs both come from this). `Err`: the report of a run stopped while it
/// was still reading its images.
async fn parse<'a, S: Future<Output = String>>(
    images: &'a [String],
    options: &Options,
    settings: &ClientOptions,
    started: Instant,
    stop: &mut std::pin::Pin<&mut S>,
) -> Result<Vec<Parsed<'a>>, Box<Report>> {
    let mut seen = HashSet::new();
    let mut parsed: Vec<Parsed<'_>> = Vec::with_capacity(images.len());
    for (n, image) in images.iter().enumerate() {
        // 10,000 images and a large keyring are CPU work: between chunks, let a signal in.
        if n % SETUP_CHUNK == SETUP_CHUNK - 1 {
            tokio::task::yield_now().await;
            let signalled = tokio::select! {
                biased;
                why = stop.as_mut() => Some(why),
                () = std::future::ready(()) => None,
            };
            if let Some(why) = signalled {
                let mut report = stopped_before_start(images, &why, started);
                report.platform = platform_name(settings);
                return Err(Box::new(report));
            }
        }
        match Reference::parse(image) {
            Err(e) => parsed.push((image, Err(e))),
            Ok(r) if !seen.insert(r.to_string()) => {}
            Ok(r) => {
                let credentials = options.keyring.lookup(&r.registry, &r.repository);
                parsed.push((image, Ok((r, credentials))));
            }
        }
    }
    Ok(parsed)
}

/// Set-up: the run's HTTP client, told which credentials each repository will be asked with
/// (its token plan). `Err`: the report when it cannot be built.
fn client_for(
    options: &Options,
    settings: &ClientOptions,
    images: &[String],
    parsed: &[Parsed<'_>],
) -> Result<Arc<Client>, Box<Report>> {
    match Client::new(settings) {
        Ok(mut c) => {
            c.set_events(options.events.clone());
            c.plan(
                parsed
                    .iter()
                    .filter_map(|(_, p)| p.as_ref().ok())
                    .map(|(r, credentials)| {
                        let keys = if credentials.is_empty() {
                            vec![String::new()]
                        } else {
                            credentials.iter().map(Credential::cache_key).collect()
                        };
                        (r.api_host().to_string(), r.repository.clone(), keys)
                    }),
            );
            Ok(Arc::new(c))
        }
        Err(e) => Err(Box::new(client_failed(images, &e))),
    }
}

/// The report of a run whose client cannot be built: not reachable with valid options;
/// still, every image gets a verdict.
fn client_failed(images: &[String], e: &registry::ClientError) -> Report {
    let results = images
        .iter()
        .map(|i| ImageResult::new(i, Reason::Client, e.to_string()))
        .collect();
    Report::new(results)
}

/// Set-up: the node's images, read once before any registry request when an image may be
/// on it (an `IfNotPresent` image), by `until`; and what stopped the run meanwhile, if
/// anything.
async fn read_node<S: Future<Output = String>>(
    options: &Options,
    policies: &Policies,
    parsed: &[Parsed<'_>],
    until: Instant,
    stop: &mut std::pin::Pin<&mut S>,
) -> (NodeLookup, Option<String>) {
    let needed = !policies.all_always()
        && parsed.iter().any(|(image, p)| {
            p.as_ref()
                .is_ok_and(|(r, _)| policies.of(image, &r.to_string()) == PullPolicy::IfNotPresent)
        });
    tokio::select! {
        node = node::lookup_until(&options.node, needed, until) => (node, None),
        why = stop.as_mut() => (NodeLookup::NotNeeded, Some(why)),
    }
}

/// Where `image` is asked: the node's route for it, or without a node configuration its own
/// registry alone, as the run's client asks it (the same scheme, the same state).
fn route_of(
    options: &Options,
    settings: &ClientOptions,
    image: &str,
    reference: &Reference,
) -> Result<Route, HostsError> {
    if options.router.configured() {
        return options.router.route(image, reference);
    }
    let mut endpoint = Endpoint::direct(reference, &[]);
    let host = reference.api_host();
    if settings
        .plain_http
        .iter()
        .any(|h| h.eq_ignore_ascii_case(host))
    {
        endpoint.origin = format!("http://{host}");
    }
    Ok(Route {
        endpoints: vec![endpoint],
        notes: Vec::new(),
    })
}

/// What every job of a run shares.
struct Shared<'s> {
    client: Arc<Client>,
    /// What `client` was made with.
    settings: &'s ClientOptions,
    slots: Arc<Semaphore>,
    deadline: Instant,
    attempt_cap: Duration,
    timeout: Duration,
    sources_read: Arc<String>,
    sources_exist: bool,
    repeated: Repeated,
}

/// The jobs of a run, and the results as they come in.
struct Schedule {
    /// `results[i]` is filled as jobs end.
    results: Vec<Option<ImageResult>>,
    /// `pending[i]` names the image of a job, for the report of a run that is stopped.
    pending: Vec<Option<(String, Reference, LastSeen)>>,
    tasks: JoinSet<(usize, ImageResult)>,
}

impl Schedule {
    /// Scheduling: an invalid reference, or an `IfNotPresent` image the node holds (where its
    /// kubelet starts it for any pod), has its result at once; every other image gets a job,
    /// started when `spawn`.
    fn new(
        parsed: Vec<Parsed<'_>>,
        options: &Options,
        shared: &Shared,
        node: &NodeLookup,
        policies: &Policies,
        spawn: bool,
    ) -> Schedule {
        // The containers of each image, by normalised reference, in pod-spec order.
        let mut containers: HashMap<String, Vec<ContainerFacts>> = HashMap::new();
        for c in &options.containers {
            if let Ok(r) = Reference::parse(&c.image) {
                containers.entry(r.to_string()).or_default().push(c.clone());
            }
        }
        let mut schedule = Schedule {
            results: Vec::new(),
            pending: Vec::new(),
            tasks: JoinSet::new(),
        };
        for (image, parsed) in parsed {
            match parsed {
                Err(e) => {
                    let result = ImageResult::invalid_reference(image, &e);
                    schedule.done(result, &options.events);
                }
                Ok((reference, _))
                    if crate::proof::loopback_from_pod(reference.api_host(), options.network) =>
                {
                    let facts = containers.get(&reference.to_string());
                    let result = on_pod_loopback(image, &reference, facts);
                    schedule.done(result, &options.events);
                }
                // Held, and the kubelet starts it for any pod: no registry request. Held where
                // the kubelet re-verifies credentials: asked below, as any other image.
                Ok((reference, _))
                    if node.proof(&reference, options.node.verification) == NodeProof::Holds
                        && policies.of(image, &reference.to_string())
                            == PullPolicy::IfNotPresent =>
                {
                    let facts = containers.get(&reference.to_string());
                    let result = on_node(node, image, &reference, facts);
                    schedule.done(result, &options.events);
                }
                Ok((reference, credentials)) => {
                    let index = schedule.results.len();
                    schedule.results.push(None);
                    let last = LastSeen::default();
                    schedule
                        .pending
                        .push(Some((image.clone(), reference.clone(), last.clone())));
                    let held = node.held_unverified(
                        &reference,
                        policies.of(image, &reference.to_string()),
                        options.node.verification,
                    );
                    let job = Job {
                        containers: containers
                            .remove(&reference.to_string())
                            .unwrap_or_default(),
                        held,
                        start_check: options.start_check,
                        route: route_of(options, shared.settings, image, &reference),
                        configured: options.router.configured(),
                        flags: crate::proof::Flags {
                            on_unreachable: options.on_unreachable,
                            on_unverifiable: options.on_unverifiable,
                            network: options.network,
                            node_named: options.node.name.is_some(),
                        },
                        allow_unauthenticated: options
                            .allow_unauthenticated
                            .iter()
                            .any(|h| h == "*" || *h == reference.registry),
                        client: shared.client.clone(),
                        credentials,
                        node: options.node_credentials.clone(),
                        slots: shared.slots.clone(),
                        image: image.clone(),
                        reference,
                        deadline: shared.deadline,
                        attempt_cap: shared.attempt_cap,
                        timeout: shared.timeout,
                        events: options.events.clone(),
                        sources_read: shared.sources_read.clone(),
                        sources_exist: shared.sources_exist,
                        last,
                        repeated: shared.repeated.clone(),
                    };
                    if spawn {
                        schedule
                            .tasks
                            .spawn(async move { (index, job.run().await) });
                    }
                }
            }
        }
        schedule
    }

    /// A result known without a job.
    fn done(&mut self, result: ImageResult, events: &Events) {
        events.verdict(&result);
        self.results.push(Some(result));
        self.pending.push(None);
    }

    /// Waits for every job, or for `stop`: then the jobs are aborted, and what stopped the
    /// run is returned.
    async fn wait<S: Future<Output = String>>(
        &mut self,
        events: &Events,
        stop: &mut std::pin::Pin<&mut S>,
    ) -> Option<String> {
        loop {
            tokio::select! {
                joined = self.tasks.join_next() => {
                    let joined = joined?;
                    // A task ends only by returning: the code on its path does not panic, and
                    // a panic would abort the release binary anyway.
                    if let Ok((index, result)) = joined {
                        events.verdict(&result);
                        if let Some(slot) = self.results.get_mut(index) {
                            *slot = Some(result);
                        }
                    }
                }
                why = stop.as_mut() => {
                    self.tasks.abort_all();
                    return Some(why);
                }
            }
        }
    }

    /// The verdicts of a run stopped by `why`: an image being retried keeps its last error,
    /// with how long it was tried; one not yet checked is `stopped`.
    fn stopped(&mut self, why: &str, started: Instant) {
        let pending = std::mem::take(&mut self.pending);
        for (slot, job) in self.results.iter_mut().zip(pending) {
            let (None, Some((image, reference, last))) = (&slot, job) else {
                continue;
            };
            // An image being retried: its last error is what the run knows of it.
            if let Some(mut r) = last.take() {
                let noun = if r.attempts == 1 {
                    "attempt"
                } else {
                    "attempts"
                };
                let prefix = format!("{}: ", r.reference);
                let rest = r.message.strip_prefix(&prefix).unwrap_or(&r.message);
                r.message = format!(
                    "{prefix}stopped by {why} after {} {noun} in {:.1}s: {rest}",
                    r.attempts,
                    started.elapsed().as_secs_f64()
                );
                r.elapsed_ms = started.elapsed().as_millis().try_into().unwrap_or(u64::MAX);
                *slot = Some(r);
                continue;
            }
            *slot = Some(not_checked(&image, &reference, why, started));
        }
    }
}

/// The result of an `IfNotPresent` image the node holds: no registry request, so its config is
/// not read, but what the containers' specs alone decide still holds.
fn on_node(
    node: &NodeLookup,
    image: &str,
    reference: &Reference,
    containers: Option<&Vec<ContainerFacts>>,
) -> ImageResult {
    let mut result = node.present_result(image, reference);
    if let Some(facts) = containers {
        let why =
            NotRead::Failed("the image is on the node; its registry was not asked".to_string());
        result.containers = facts.iter().map(|c| c.evaluate(Err(&why))).collect();
        if let Some((reason, message, hint)) = registry::wont_start(reference, &result.containers) {
            result.set_verdict(reason, message, hint);
        }
    }
    result
}

/// The result of an image whose registry is on loopback, seen from a pod's own network: the
/// node's runtime pulls it from the node's loopback, which this pod does not share, so it is
/// not asked, and never counted; what the containers' specs alone decide still holds.
fn on_pod_loopback(
    image: &str,
    reference: &Reference,
    containers: Option<&Vec<ContainerFacts>>,
) -> ImageResult {
    let mut result = ImageResult::new(
        image,
        Reason::PodLoopback,
        format!(
            "{reference}: not checked: {} is on loopback, and this pod is not hostNetwork, so its loopback is its own while the node's runtime pulls from the node's",
            reference.api_host()
        ),
    )
    .of_reference(reference);
    result.not_counted(
        crate::report::NotCounted::PodLoopback,
        "a registry on the node's loopback, which this pod does not share (--network pod)",
    );
    if let Some(facts) = containers {
        let why =
            NotRead::Failed("its registry is on the node's loopback and was not asked".to_string());
        result.containers = facts.iter().map(|c| c.evaluate(Err(&why))).collect();
        if let Some((reason, message, hint)) = registry::wont_start(reference, &result.containers) {
            result.set_verdict(reason, message, hint);
            result.counted = crate::report::Counted::Yes;
        }
    }
    result
}

/// The summary: every result completed with what the node says of it and how its registry
/// was spoken to, in one report.
fn summary(
    mut results: Vec<ImageResult>,
    options: &Options,
    shared: &Shared<'_>,
    node: &NodeLookup,
    policies: &Policies,
) -> Report {
    for result in &mut results {
        node.annotate(
            result,
            policies.of(&result.image, &result.reference),
            options.node.verification,
        );
        // Which of crane's two meanings `--insecure` took here: plain HTTP, never HTTPS
        // without verification.
        result.plain_http = result.endpoint.is_none()
            && !result.registry.is_empty()
            && (shared
                .settings
                .plain_http
                .iter()
                .any(|h| h.eq_ignore_ascii_case(&result.registry))
                || shared.client.fell_back_to_plain_http(&result.registry));
    }
    let mut report = Report::new(results);
    report.warnings.extend(node.warning());
    report.platform = platform_name(shared.settings);
    report
}

/// The node platform a report names: the one checked for, or `any`.
fn platform_name(settings: &ClientOptions) -> String {
    match &settings.platform.want {
        Some(p) => p.to_string(),
        None => "any".to_string(),
    }
}

/// Images parsed and looked up between two looks at the stop signal.
const SETUP_CHUNK: usize = 256;

/// The result of an image the run was stopped before it checked.
fn not_checked(image: &str, reference: &Reference, why: &str, started: Instant) -> ImageResult {
    ImageResult::new(
        image,
        Reason::Stopped,
        format!(
            "{reference}: not checked, pullcheck was stopped by {why} after {:.1}s",
            started.elapsed().as_secs_f64()
        ),
    )
    .of_reference(reference)
}

/// The report of a run stopped while it was still reading its images: none was checked.
fn stopped_before_start(images: &[String], why: &str, started: Instant) -> Report {
    let mut seen = HashSet::new();
    let results = images
        .iter()
        .filter_map(|image| match Reference::parse(image) {
            Err(e) => Some(ImageResult::invalid_reference(image, &e)),
            Ok(r) if !seen.insert(r.to_string()) => None,
            Ok(r) => Some(not_checked(image, &r, why, started)),
        })
        .collect();
    let mut report = Report::new(results);
    report.stopped = Some(why.to_string());
    report
}

/// An image as given, and its reference with the credentials to try, or why it is invalid.
type Parsed<'a> = (
    &'a String,
    Result<(Reference, Vec<Credential>), ReferenceError>,
);

/// The last verdict of an image that is being retried, for the report of a run stopped while
/// it waits.
#[derive(Clone, Default)]
struct LastSeen(Arc<Mutex<Option<ImageResult>>>);

impl LastSeen {
    fn set(&self, r: ImageResult) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
    }

    fn take(&self) -> Option<ImageResult> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// After this many "no such host" answers for a registry, its images are not retried.
const NO_SUCH_HOST_ANSWERS: u32 = 2;

/// After this many 429 answers from a registry, its images are not retried.
const RATE_LIMITED_ANSWERS: u32 = 2;

/// The answers that are retried only so often, counted per registry and reason and shared by
/// all the images of a run. Waiting does not change them within a run: a resolver that said
/// "no such host" twice says it again, and a registry that answered 429 twice is only made
/// busier by being asked again, while the kubelet's own pull (with its own back-off) goes on
/// whatever the check says. No retry of ours goes on until the deadline for either.
#[derive(Clone, Default)]
struct Repeated(Arc<Mutex<HashMap<(String, Reason), u32>>>);

impl Repeated {
    /// Counts `verdict`, one answer of `registry`, when it would be retried and its reason is
    /// counted; at that reason's limit for the registry ([`NO_SUCH_HOST_ANSWERS`],
    /// [`RATE_LIMITED_ANSWERS`]) and past it, the verdict is no longer retried and its message
    /// says why.
    fn stop_retrying(&self, registry: &str, verdict: &mut Verdict) {
        let (limit, why): (u32, fn(&str, u32) -> String) = match verdict.reason {
            Reason::NoSuchHost => (NO_SUCH_HOST_ANSWERS, |registry, n| {
                format!("the resolver answered \"no such host\" {n} times for {registry}")
            }),
            Reason::RateLimited => (RATE_LIMITED_ANSWERS, |registry, n| {
                format!(
                    "{registry} answered 429 {n} times in this run (a rate-limiting registry is not asked again, as that only adds to its load; the kubelet's own pull is left to go on)"
                )
            }),
            _ => return,
        };
        if verdict.retry.is_none() {
            return;
        }
        let answers = {
            let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            let n = counts
                .entry((registry.to_string(), verdict.reason))
                .or_insert(0);
            *n += 1;
            *n
        };
        if answers >= limit {
            verdict.retry = None;
            verdict.message.push_str("; not retried: ");
            verdict.message.push_str(&why(registry, answers));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::NodeOptions;
    use crate::report::Status;

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

    /// 429 and "no such host" are retried once per registry in a run, then not again, each
    /// counted apart, per registry, across images; other transient answers are not counted.
    #[test]
    fn a_registry_that_answers_429_twice_is_not_retried_again() {
        let repeated = Repeated::default();
        let answer = |registry: &str, reason: Reason| {
            let mut v = Verdict::new(reason, format!("{registry}/x:1: answered"));
            v.retry = Some(None);
            repeated.stop_retrying(registry, &mut v);
            v
        };
        // The first 429 of a registry is retried; so are others' and other reasons' first.
        let first = answer("a.io", Reason::RateLimited);
        assert_eq!(first.retry, Some(None), "{first:#?}");
        assert_eq!(first.message, "a.io/x:1: answered");
        assert!(answer("b.io", Reason::RateLimited).retry.is_some());
        assert!(answer("a.io", Reason::NoSuchHost).retry.is_some());
        for _ in 0..5 {
            assert!(answer("a.io", Reason::ServerError).retry.is_some());
        }
        // A verdict that is not retried anyway is not counted.
        let mut last = Verdict::new(Reason::RateLimited, "final".to_string());
        repeated.stop_retrying("a.io", &mut last);
        assert_eq!((last.retry, last.message.as_str()), (None, "final"));
        // The second 429 from a.io, whichever image it came for: not retried, and said why.
        let second = answer("a.io", Reason::RateLimited);
        assert_eq!(second.retry, None, "{second:#?}");
        assert_eq!(second.reason, Reason::RateLimited);
        assert_eq!(
            second.message,
            "a.io/x:1: answered; not retried: a.io answered 429 2 times in this run (a rate-limiting registry is not asked again, as that only adds to its load; the kubelet's own pull is left to go on)"
        );
        let third = answer("a.io", Reason::RateLimited);
        assert!(third.retry.is_none() && third.message.contains("429 3 times"));
        let dns = answer("a.io", Reason::NoSuchHost);
        assert_eq!(dns.retry, None, "{dns:#?}");
        assert!(
            dns.message.ends_with(
                "; not retried: the resolver answered \"no such host\" 2 times for a.io"
            ),
            "{}",
            dns.message
        );
        assert!(answer("b.io", Reason::RateLimited).retry.is_none());
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

    /// From a pod's own network, a registry on loopback is the node's: not asked (nothing
    /// listens on port 1, and nothing is retried), reported, never counted; from the host's
    /// network it is asked as any other.
    #[tokio::test(start_paused = true)]
    async fn a_loopback_registry_from_a_pods_network_is_not_asked() {
        let images = vec!["127.0.0.1:1/a:1".to_string(), "[::1]:1/b:1".to_string()];
        let options = |network| Options {
            timeout: Duration::from_secs(3),
            network,
            client: ClientOptions {
                plain_http: vec!["127.0.0.1:1".into(), "[::1]:1".into()],
                ..Default::default()
            },
            ..Default::default()
        };
        let report = check(&images, &options(Network::Pod)).await;
        for r in &report.images {
            assert_eq!(r.reason, Reason::PodLoopback, "{r:#?}");
            assert_eq!(
                r.counted,
                crate::report::Counted::No(crate::report::NotCounted::PodLoopback)
            );
            assert_eq!(r.attempts, 0, "{r:#?}");
        }
        assert_eq!(report.exit_code, crate::report::ExitCode::Ok);
        let report = check(&images[..1], &options(Network::Host)).await;
        assert_eq!(report.images[0].status, Status::Unreachable, "{report:#?}");
        assert_eq!(report.exit_code, crate::report::ExitCode::Unreachable);
    }

    /// The run's phases after the node's read, with `node` as what it found: for the tests
    /// of what a node's list makes of an image, without an API server.
    async fn run_with_node(images: &[String], options: &Options, node: &NodeLookup) -> Report {
        let started = Instant::now();
        let mut stop = std::pin::pin!(std::future::pending::<String>());
        let parsed = parse(images, options, &options.client, started, &mut stop)
            .await
            .unwrap();
        let client = client_for(options, &options.client, images, &parsed).unwrap();
        let policies = Policies::new(&options.if_not_present);
        let shared = Shared {
            client: client.clone(),
            settings: &options.client,
            slots: Arc::new(Semaphore::new(4)),
            deadline: started + options.timeout,
            attempt_cap: options.timeout / 4,
            timeout: options.timeout,
            sources_read: Arc::new(String::new()),
            sources_exist: false,
            repeated: Repeated::default(),
        };
        let mut schedule = Schedule::new(parsed, options, &shared, node, &policies, true);
        assert_eq!(schedule.wait(&options.events, &mut stop).await, None);
        let results = schedule.results.into_iter().flatten().collect();
        summary(results, options, &shared, node, &policies)
    }

    /// An `IfNotPresent` image the node holds: on a kubelet before 1.35 it is `present_on_node`
    /// and its registry is not asked; on 1.35+ (or with `verify`) it is asked, and a refusal
    /// (here: nothing answers) is not counted, in words that say why; `never-verify` brings
    /// the old answer back on any kubelet.
    #[tokio::test(start_paused = true)]
    async fn an_image_the_node_holds_is_asked_only_where_its_kubelet_re_verifies() {
        use crate::proof::CredentialVerification::{self, Auto, NeverVerify, Verify};
        use crate::report::{Counted, NotCounted};
        let image = "127.0.0.1:1/app:v1".to_string();
        let node = |version: &str| {
            let body = format!(
                r#"{{"kind":"Node","status":{{"images":[{{"names":["{image}"]}}],"nodeInfo":{{"kubeletVersion":"{version}"}}}}}}"#
            );
            NodeLookup::Found(
                crate::node::NodeImages::read("n1", body.as_bytes(), Some(50), None).unwrap(),
            )
        };
        let options = |verification: CredentialVerification| Options {
            timeout: Duration::from_secs(3),
            client: ClientOptions {
                plain_http: vec!["127.0.0.1:1".into()],
                ..Default::default()
            },
            if_not_present: vec![image.clone()],
            node: NodeOptions {
                name: Some("n1".into()),
                verification,
                ..NodeOptions::default()
            },
            ..Default::default()
        };
        let images = std::slice::from_ref(&image);
        let cases: &[(&str, CredentialVerification, bool)] = &[
            ("v1.34.4", Auto, false),
            ("v1.37.2", Auto, true),
            ("v1.35.0-gke.123", Auto, true),
            ("v1.37.2", NeverVerify, false),
            ("v1.34.4", Verify, true),
        ];
        for (version, setting, asked) in cases {
            let report = run_with_node(images, &options(*setting), &node(version)).await;
            let r = &report.images[0];
            assert_eq!(r.present_on_node, Some(true), "{version}: {r:#?}");
            assert_eq!(
                report.exit_code,
                crate::report::ExitCode::Ok,
                "{version}: {r:#?}"
            );
            if *asked {
                assert_eq!(r.status, Status::Unreachable, "{version}: {r:#?}");
                assert!(r.attempts > 0, "{version}");
                assert_eq!(r.counted, Counted::No(NotCounted::HeldByNode), "{version}");
                assert!(
                    r.message.contains(&format!(
                        "not counted: node n1 holds it and imagePullPolicy is IfNotPresent, but its kubelet ({version}) re-verifies credentials"
                    )),
                    "{version}: {}",
                    r.message
                );
            } else {
                assert_eq!(r.reason, Reason::PresentOnNode, "{version}: {r:#?}");
                assert_eq!(r.attempts, 0, "{version}");
            }
        }
        // Always: asked and counted whatever the node holds and whatever its kubelet.
        let mut always = options(Auto);
        always.if_not_present.clear();
        let report = run_with_node(images, &always, &node("v1.37.2")).await;
        assert_eq!(report.images[0].counted, Counted::Yes);
        assert_eq!(report.exit_code, crate::report::ExitCode::Unreachable);
    }

    /// A library caller's concurrency outside 1..=MAX_CONCURRENCY is taken at the nearest
    /// bound: `usize::MAX` permits would panic in the semaphore, 0 would never start a check.
    #[tokio::test(start_paused = true)]
    async fn concurrency_out_of_range_is_taken_at_its_bound() {
        for concurrency in [0, usize::MAX] {
            let options = Options {
                timeout: Duration::from_secs(3),
                concurrency,
                client: ClientOptions {
                    plain_http: vec!["127.0.0.1:1".into()],
                    ..Default::default()
                },
                ..Default::default()
            };
            let report = check(&["127.0.0.1:1/a".to_string()], &options).await;
            assert_eq!(report.images[0].status, Status::Unreachable, "{report:#?}");
        }
    }
}
