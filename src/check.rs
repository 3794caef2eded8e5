//! Checking a set of images: all at once (bounded by `--concurrency`), each retried with
//! exponential back-off and jitter while its failure is transient, the whole run inside one
//! deadline (`--timeout`). Every image gets a result; nothing here returns an error. When the
//! pod's containers are known ([`Options::containers`]), an image that was found is then checked
//! for whether its containers will start ([`crate::container_start`]), inside the same deadline.

use crate::container_start::{ContainerFacts, NotRead, StartCheck};
use crate::credentials::{Lookup, NodeCredentials, ProviderKind};
use crate::deadline::{MAX_TIMEOUT, instant_after};
use crate::keyring::{Credential, Keyring};
use crate::node::{self, NodeLookup, NodeOptions};
use crate::progress::Events;
use crate::pull_policy::{Policies, PullPolicy};
use crate::reference::{Reference, ReferenceError};
use crate::registry::{
    self, AuthUsed, Client, ClientOptions, ConfigRead, Fact, Outcome, PlatformSeen, Progress,
    Verdict,
};
use crate::report::{ContainerStart, Counted, ImageResult, NotCounted, Report, Status};
use crate::route::{Endpoint, Route, Router};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
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
    /// When the run's clock started; `None`: when the check starts. The CLI starts it before
    /// it asks credential helpers, so that their time counts against `--timeout`.
    pub started: Option<std::time::Instant>,
    /// The containers of the pod spec, for the start check: each is matched to its image by
    /// normalised reference. Empty: no start prediction.
    pub containers: Vec<ContainerFacts>,
    /// Whether to predict that containers will not start.
    pub start_check: StartCheck,
    /// Where progress goes while the check runs (nothing by default).
    pub events: Events,
    /// Images (as given among the images checked) whose pull policy is `IfNotPresent`: the
    /// node's own list is read first, and those it holds are not asked of their registry. The
    /// other images are `Always`. See [`pull_policy::to_check`](crate::pull_policy::to_check).
    pub if_not_present: Vec<String>,
    /// Where to read the node's images from.
    pub node: NodeOptions,
    /// The node's registry configuration: where each image is asked.
    pub router: Arc<Router>,
    /// Whether `unreachable` fails the run (`--on-unreachable`).
    pub on_unreachable: OnUnreachable,
    /// What the node would pull with (cloud providers, exec plugins), tried after the pull
    /// secrets. None by default; the CLI builds them from `--cloud-credentials` and
    /// `--image-credential-provider-config`.
    pub node_credentials: NodeCredentials,
}

/// What an image that ends `unreachable` means (`--on-unreachable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnUnreachable {
    /// It fails the run (exit 6).
    #[default]
    Fail,
    /// It is a warning: the pod's network may not reach registries that its node can.
    Warn,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            timeout: Duration::from_secs(60),
            concurrency: 16,
            client: ClientOptions::default(),
            keyring: Keyring::default(),
            allow_unauthenticated: Vec::new(),
            containers: Vec::new(),
            start_check: StartCheck::Auto,
            events: Events::default(),
            if_not_present: Vec::new(),
            node: NodeOptions::default(),
            router: Arc::new(Router::default()),
            on_unreachable: OnUnreachable::Fail,
            started: None,
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
    let started = options
        .started
        .map_or_else(Instant::now, Instant::from_std)
        .min(Instant::now());
    let timeout = options.timeout.min(MAX_TIMEOUT);
    // timeout <= MAX_TIMEOUT (a day): cannot overflow, saturated all the same.
    let deadline = instant_after(started, timeout);
    // Each image once: parsed, its duplicates dropped, its credentials looked up. The token
    // plan and the jobs both come from this.
    tokio::pin!(stop);
    let mut seen = HashSet::new();
    let mut parsed: Vec<Parsed<'_>> = Vec::with_capacity(images.len());
    for (n, image) in images.iter().enumerate() {
        // 10,000 images and a large keyring are CPU work: between chunks, let a signal in.
        if n % SETUP_CHUNK == SETUP_CHUNK - 1 {
            tokio::task::yield_now().await;
            let signalled = tokio::select! {
                biased;
                why = &mut stop => Some(why),
                () = std::future::ready(()) => None,
            };
            if let Some(why) = signalled {
                let mut report = stopped_before_start(images, &why, started);
                report.platform = platform_name(options);
                return report;
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
    // Where credentials were looked for, for the JSON and for `no_credentials` messages.
    let credential_sources = options.keyring.sources(
        parsed
            .iter()
            .filter_map(|(_, p)| p.as_ref().ok())
            .map(|(r, _)| (r.registry.as_str(), r.repository.as_str())),
    );
    let sources_read = Arc::new(options.keyring.describe_sources());
    let client =
        match Client::new(&options.client) {
            Ok(mut c) => {
                c.set_events(options.events.clone());
                c.plan(parsed.iter().filter_map(|(_, p)| p.as_ref().ok()).map(
                    |(r, credentials)| {
                        let keys = if credentials.is_empty() {
                            vec![String::new()]
                        } else {
                            credentials.iter().map(Credential::cache_key).collect()
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
    // The containers of each image, by normalised reference, in pod-spec order.
    let mut containers: HashMap<String, Vec<ContainerFacts>> = HashMap::new();
    for c in &options.containers {
        if let Ok(r) = Reference::parse(&c.image) {
            containers.entry(r.to_string()).or_default().push(c.clone());
        }
    }
    let attempt_cap = (timeout / 4).max(ATTEMPT_MIN).min(timeout);
    let slots = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let mut stopped = None;
    // The node's images, read once before any registry request when an image may be on it.
    let policies = Policies::new(&options.if_not_present);
    let needed = !policies.all_always()
        && parsed.iter().any(|(image, p)| {
            p.as_ref()
                .is_ok_and(|(r, _)| policies.of(image, &r.to_string()) == PullPolicy::IfNotPresent)
        });
    let until = (Instant::now() + attempt_cap).min(deadline);
    let node = tokio::select! {
        node = node::lookup_until(&options.node, needed, until) => node,
        why = &mut stop => {
            stopped = Some(why);
            NodeLookup::NotNeeded
        }
    };
    let no_such_host = Arc::new(Mutex::new(HashMap::new()));

    // `results[i]` is filled as jobs end; `pending[i]` names the image of a job, for the
    // report of a run that is stopped.
    let mut results: Vec<Option<ImageResult>> = Vec::new();
    let mut pending: Vec<Option<(String, Reference, LastSeen)>> = Vec::new();
    let mut tasks = JoinSet::new();
    for (image, parsed) in parsed {
        match parsed {
            Err(e) => {
                let result = ImageResult {
                    hint: "Fix the image reference: lower-case repository, valid tag (up to 128 characters) or digest (sha256:<64 hex>).".to_string(),
                    ..plain_result(image, Status::InvalidReference, "invalid_reference", e.to_string())
                };
                options.events.verdict(&result);
                results.push(Some(result));
                pending.push(None);
            }
            Ok((reference, _))
                if node.presence(&reference) == Some(true)
                    && policies.of(image, &reference.to_string()) == PullPolicy::IfNotPresent =>
            {
                let mut result = node.present_result(image, &reference);
                if let Some(facts) = containers.get(&reference.to_string()) {
                    // No registry request for an image the node holds: its config is not read,
                    // but what the containers' specs alone decide still holds.
                    let why = NotRead::Failed(
                        "the image is on the node; its registry was not asked".to_string(),
                    );
                    result.containers = facts.iter().map(|c| c.evaluate(Err(&why))).collect();
                    if let Some((reason, message, hint)) =
                        registry::wont_start(&reference, &result.containers)
                    {
                        result.status = Status::WontStart;
                        result.reason = reason;
                        result.message = message;
                        result.hint = hint;
                    }
                }
                options.events.verdict(&result);
                results.push(Some(result));
                pending.push(None);
            }
            Ok((reference, credentials)) => {
                let index = results.len();
                results.push(None);
                let last = LastSeen::default();
                pending.push(Some((image.clone(), reference.clone(), last.clone())));
                let allowed = options
                    .allow_unauthenticated
                    .iter()
                    .any(|h| h == "*" || *h == reference.registry);
                // Without a node configuration the image's own registry is asked, as always.
                let route = options
                    .router
                    .configured()
                    .then(|| options.router.route(image, &reference));
                let job = Job {
                    containers: containers
                        .remove(&reference.to_string())
                        .unwrap_or_default(),
                    start_check: options.start_check,
                    route,
                    on_unreachable: options.on_unreachable,
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
                    events: options.events.clone(),
                    sources_read: sources_read.clone(),
                    sources_exist: !credential_sources.is_empty(),
                    last,
                    no_such_host: no_such_host.clone(),
                };
                if stopped.is_none() {
                    tasks.spawn(async move { (index, job.run().await) });
                }
            }
        }
    }
    while stopped.is_none() {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                // A task ends only by returning: the code on its path does not panic, and a
                // panic would abort the release binary anyway.
                if let Ok((index, result)) = joined {
                    options.events.verdict(&result);
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
    let mut results: Vec<ImageResult> = results.into_iter().flatten().collect();
    for result in &mut results {
        node.annotate(result, policies.of(&result.image, &result.reference));
        // Which of crane's two meanings `--insecure` took here: plain HTTP, never HTTPS
        // without verification.
        result.plain_http = result.endpoint.is_none()
            && !result.registry.is_empty()
            && (options
                .client
                .plain_http
                .iter()
                .any(|h| h.eq_ignore_ascii_case(&result.registry))
                || client.fell_back_to_plain_http(&result.registry));
    }
    let mut report = Report::new(results);
    report.stopped = stopped;
    report.credential_sources = credential_sources;
    report.warnings.extend(node.warning());
    report.platform = platform_name(options);
    report
}

/// The node platform a report names: the one checked for, or `any`.
fn platform_name(options: &Options) -> String {
    match &options.client.platform.want {
        Some(p) => p.to_string(),
        None => "any".to_string(),
    }
}

/// Images parsed and looked up between two looks at the stop signal.
const SETUP_CHUNK: usize = 256;

/// The result of an image the run was stopped before it checked.
fn not_checked(image: &str, reference: &Reference, why: &str, started: Instant) -> ImageResult {
    ImageResult {
        reference: reference.to_string(),
        registry: reference.registry.clone(),
        hint: "Nothing to do: the check was stopped before it finished.".to_string(),
        ..plain_result(
            image,
            Status::Unreachable,
            "stopped",
            format!(
                "{reference}: not checked, pullcheck was stopped by {why} after {:.1}s",
                started.elapsed().as_secs_f64()
            ),
        )
    }
}

/// The report of a run stopped while it was still reading its images: none was checked.
fn stopped_before_start(images: &[String], why: &str, started: Instant) -> Report {
    let mut seen = HashSet::new();
    let results = images
        .iter()
        .filter_map(|image| match Reference::parse(image) {
            Err(e) => Some(plain_result(
                image,
                Status::InvalidReference,
                "invalid_reference",
                e.to_string(),
            )),
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

/// How many times the resolver said "no such host", per registry.
type NoSuchHost = Arc<Mutex<HashMap<String, u32>>>;

/// After this many "no such host" answers for a registry, its images are not retried.
const NO_SUCH_HOST_ANSWERS: u32 = 2;

struct Job {
    /// The containers of the pod spec that use this image.
    containers: Vec<ContainerFacts>,
    start_check: StartCheck,
    /// The node's route for this image, when a node configuration is in use (an error: the
    /// configuration cannot be used for it).
    route: Option<Result<Route, String>>,
    /// `--on-unreachable`.
    on_unreachable: OnUnreachable,
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
    events: Events,
    /// The credential sources read and their keys, for a `no_credentials` message.
    sources_read: Arc<String>,
    /// Some credential source was read (even one that gave nothing).
    sources_exist: bool,
    /// This image's last verdict while it is retried.
    last: LastSeen,
    /// "No such host" answers per registry, shared by all images.
    no_such_host: NoSuchHost,
}

impl Job {
    async fn run(self) -> ImageResult {
        let mut result = self.pull().await;
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
                result.status = Status::WontStart;
                result.reason = reason;
                result.message = message + &pull;
                result.hint = hint;
                result.counted = Counted::Yes;
            }
        }
        result
    }

    /// Predicts whether each container using this image starts, after its probe found it:
    /// the config is read (once) only when some container's spec leaves the answer to it.
    async fn predict_start(
        &self,
        outcome: &Outcome,
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
        let read = if needed {
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

    /// Probes the image until it has a verdict, then predicts whether its containers start.
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
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let progress = Progress::default();
            // attempt_cap <= timeout <= MAX_TIMEOUT: bounded, but saturate all the same.
            let attempt_deadline =
                instant_after(Instant::now(), self.attempt_cap).min(self.deadline);
            let (outcome, mut verdict, endpoint, asked) = match &self.route {
                Some(route) => self.walk(route, &credentials, attempt_deadline).await,
                None => {
                    let probe = self.client.probe(
                        &self.reference,
                        &credentials,
                        &progress,
                        attempt_deadline,
                    );
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
                    let verdict = registry::classify(&self.reference, &outcome);
                    (outcome, verdict, None, None)
                }
            };
            if verdict.reason == "no_such_host" && verdict.retry.is_some() {
                let answers = {
                    let mut counts = self
                        .no_such_host
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    let n = counts.entry(self.reference.registry.clone()).or_insert(0);
                    *n += 1;
                    *n
                };
                if answers >= NO_SUCH_HOST_ANSWERS {
                    verdict.retry = None;
                    verdict.message.push_str(&format!(
                        "; not retried: the resolver answered \"no such host\" {answers} times for {}",
                        self.reference.registry
                    ));
                }
            }
            let Some(asked) = verdict.retry else {
                if matches!(outcome.fact, Fact::TimedOut { deadline: true, .. }) {
                    verdict.message.push_str(&self.gave_up(attempts, start));
                }
                let mut containers = Vec::new();
                if verdict.status == Status::Ok && !self.containers.is_empty() {
                    let artifact;
                    (containers, artifact) = self
                        .predict_start(&outcome, asked.as_ref(), &node.credentials)
                        .await;
                    verdict = registry::classify_start(&self.reference, verdict, &containers);
                    // The config read found an artifact, not an image: the pull would fail.
                    if let Some(what) = artifact {
                        let url = "read for the start check".to_string();
                        let not_image = registry::classify(
                            &self.reference,
                            &Outcome {
                                fact: Fact::NotAnImage { url, what },
                                auth: outcome.auth.clone(),
                                tried: outcome.tried.clone(),
                            },
                        );
                        verdict = Verdict {
                            digest: verdict.digest,
                            ..not_image
                        };
                    }
                }
                let mut result = self.result(verdict, &outcome.auth, attempts, start);
                result.containers = containers;
                if result.reason == "no_credentials" {
                    // Which sources were read, and what they held: an empty folder, a secret for
                    // other hosts, or a file of the wrong name all end here.
                    result.message.push_str(&format!("; {}", self.sources_read));
                    if self.sources_exist {
                        // Pull secrets are mounted already: saying "mount them" would not help.
                        result.hint = format!(
                            "None of the credential sources read has a key for {registry}: add an entry for {registry} to the pull secret, or mount the pull secret that has one (see the warnings on stderr); if the node pulls with its own credentials, use --allow-unauthenticated.",
                            registry = self.reference.registry
                        );
                    }
                }
                self.place(&mut result, endpoint.as_ref());
                self.count(&mut result, &node);
                self.maybe_warn(&mut result);
                return result;
            };
            // A registry asking for no wait (`Retry-After: 0`, or a date in the past) still gets
            // the back-off: retrying at once would flood it.
            let wait = asked.map_or_else(|| backoff(attempts), |a| a.max(backoff(attempts)));
            // `wait` may be the registry's Retry-After: saturate, never overflow.
            if instant_after(Instant::now(), wait) >= self.deadline {
                verdict.message.push_str(&self.gave_up(attempts, start));
                let mut result = self.result(verdict, &outcome.auth, attempts, start);
                self.place(&mut result, endpoint.as_ref());
                self.maybe_warn(&mut result);
                return result;
            }
            let image = self.reference.to_string();
            let what = verdict
                .message
                .strip_prefix(&format!("{image}: "))
                .unwrap_or(&verdict.message);
            self.events.retry(
                &self.reference.registry,
                attempts,
                wait,
                verdict.reason,
                what,
            );
            let mut last = self.result(verdict, &outcome.auth, attempts, start);
            self.place(&mut last, endpoint.as_ref());
            self.last.set(last);
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
                "Not verified: make sure the nodes have credentials for {} (a credential provider or a node config.json), or give pullcheck the pod's pull secret to check it.",
                self.reference.registry
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
        let mut result = self.result(verdict, &outcome.auth, attempts, start);
        self.maybe_warn(&mut result);
        result
    }

    /// `--on-unreachable warn`: an unreachable image is reported, not counted.
    fn maybe_warn(&self, result: &mut ImageResult) {
        // The pod's network (or its DNS, or its CAs) may not be the node's: both kinds of
        // "cannot reach from here" are what the flag is for.
        if matches!(result.status, Status::Unreachable | Status::Unverifiable)
            && self.on_unreachable == OnUnreachable::Warn
        {
            result.not_counted(
                NotCounted::OnUnreachableWarn,
                "--on-unreachable warn (the node may reach registries that this pod cannot)",
            );
        }
    }

    /// Names the endpoint that gave the verdict, when a node configuration was in use.
    fn place(&self, result: &mut ImageResult, endpoint: Option<&(String, Option<String>)>) {
        if let Some((url, mirror_of)) = endpoint {
            result.endpoint = Some(url.clone());
            result.mirror_of = mirror_of.clone();
        }
    }

    /// One attempt over the node's route, as the runtime walks it: endpoints in order, the
    /// first that has the image (or has it without the node's platform) decides. Otherwise
    /// the verdict is `unreachable` if any endpoint could not be reached, else a refusal if
    /// any refused, else `not_found`, and its message names every endpoint and its answer.
    ///
    /// Credentials go only to endpoints that may have them ([`Endpoint::credentials`]): every
    /// host of a hosts.toml, but a registries.conf mirror elsewhere is asked anonymously.
    async fn walk(
        &self,
        route: &Result<Route, String>,
        credentials: &[&Credential],
        attempt_deadline: Instant,
    ) -> (
        Outcome,
        Verdict,
        Option<(String, Option<String>)>,
        Option<Endpoint>,
    ) {
        let anonymous = |fact| Outcome {
            fact,
            auth: AuthUsed::Anonymous,
            tried: Vec::new(),
        };
        let route = match route {
            Ok(r) => r,
            Err(e) => {
                let verdict = Verdict::new(
                    Status::Unreachable,
                    "node_configuration",
                    format!(
                        "{}: the node's registry configuration cannot be used: {e}",
                        self.reference
                    ),
                    "Fix the file named; the node's runtime cannot use it either.",
                );
                let outcome = anonymous(Fact::UnsupportedAuth {
                    scheme: String::new(),
                });
                return (outcome, verdict, None, None);
            }
        };
        let mut answers: Vec<(&Endpoint, String, Outcome, Verdict)> = Vec::new();
        let count = route.endpoints.len();
        for (i, endpoint) in route.endpoints.iter().enumerate() {
            if let Some(file) = &endpoint.blocked {
                let verdict = Verdict::new(
                    Status::Denied,
                    "blocked",
                    format!(
                        "{}: blocked by {file}: the node's runtime refuses to pull it (no request sent)",
                        endpoint.reference
                    ),
                    "Pull from an allowed registry, or change the blocked entry in the node's registries.conf.",
                );
                let url = format!("{} (blocked)", endpoint.host);
                answers.push((
                    endpoint,
                    url,
                    anonymous(Fact::UnsupportedAuth {
                        scheme: String::new(),
                    }),
                    verdict,
                ));
                continue;
            }
            // A fair share of what is left, so that one endpoint that hangs leaves time for
            // the next, as the runtime's per-host timeouts do.
            let now = Instant::now();
            let left = attempt_deadline.saturating_duration_since(now);
            let share = left / u32::try_from(count - i).unwrap_or(1).max(1);
            let endpoint_deadline = (now + share.max(ATTEMPT_MIN.min(left))).min(attempt_deadline);
            let last = i + 1 == count;
            let pinned = self.may_send_credentials(endpoint);
            let creds: &[&Credential] = if pinned { credentials } else { &[] };
            let mut outcome = self
                .probe_endpoint(endpoint, creds, endpoint_deadline, last)
                .await;
            let unreachable_ping = matches!(
                outcome.fact,
                Fact::Transport {
                    step: registry::Step::Ping,
                    ..
                }
            );
            let mut url = endpoint.url();
            if endpoint.http_fallback && unreachable_ping {
                let plain = endpoint.plain();
                outcome = self
                    .probe_endpoint(&plain, creds, endpoint_deadline, last)
                    .await;
                url = plain.url();
            }
            let mut verdict = registry::classify(&endpoint.reference, &outcome);
            if matches!(verdict.status, Status::Unauthorized | Status::Denied)
                && !pinned
                && !credentials.is_empty()
            {
                verdict.message.push_str(&format!(
                    " (asked anonymously: the pod's credentials for {} are not sent to a registries.conf mirror on another host, as containers/image resets them)",
                    self.reference.registry
                ));
            }
            let decisive = matches!(verdict.status, Status::Ok | Status::WrongPlatform);
            answers.push((endpoint, url, outcome, verdict));
            if decisive {
                break;
            }
        }
        let pick = answers
            .iter()
            .position(|(_, _, _, v)| matches!(v.status, Status::Ok | Status::WrongPlatform))
            .or_else(|| {
                answers.iter().position(|(_, _, _, v)| {
                    matches!(v.status, Status::Unreachable | Status::Unverifiable)
                })
            })
            .or_else(|| {
                answers.iter().position(|(_, _, _, v)| {
                    matches!(v.status, Status::Unauthorized | Status::Denied)
                })
            })
            // Every host said 404: the last one was asked to explain (tags, suggestions).
            .or_else(|| answers.len().checked_sub(1));
        let trail: Vec<String> = answers
            .iter()
            .map(|(e, url, _, v)| {
                let anonymous = !self.may_send_credentials(e)
                    && !credentials.is_empty()
                    && matches!(v.status, Status::Unauthorized | Status::Denied);
                let note = if anonymous {
                    " (asked anonymously)"
                } else {
                    ""
                };
                format!("{url}: {} ({}){note}", v.status.as_str(), v.reason)
            })
            .collect();
        let Some(index) = pick else {
            let mut message = format!(
                "{}: the node's configuration leaves no host to ask",
                self.reference
            );
            for n in &route.notes {
                message.push_str("; ");
                message.push_str(n);
            }
            let verdict = Verdict::new(
                Status::NotFound,
                "no_endpoint",
                message,
                "Give a host the needed capabilities (a tag needs pull and resolve) in the node's configuration.",
            );
            let outcome = anonymous(Fact::UnsupportedAuth {
                scheme: String::new(),
            });
            return (outcome, verdict, None, None);
        };
        let (endpoint, url, outcome, mut verdict) = answers.swap_remove(index);
        // The endpoint as it was asked (plain HTTP when the HTTPS attempt fell back), for the
        // requests that follow a verdict (the start check's config read).
        let asked = if endpoint.http_fallback && url.starts_with("http://") {
            endpoint.plain()
        } else {
            endpoint.clone()
        };
        if trail.len() > 1 || endpoint.mirror_of.is_some() {
            verdict
                .message
                .push_str(&format!("; hosts tried: {}", trail.join(", ")));
        }
        for n in &route.notes {
            verdict.message.push_str("; ");
            verdict.message.push_str(n);
        }
        let place = if endpoint.blocked.is_some() {
            None
        } else {
            Some((url, endpoint.mirror_of.clone()))
        };
        (outcome, verdict, place, Some(asked))
    }

    /// The pod's credentials were chosen for the image's own registry: they go to an endpoint
    /// only when the route allows it ([`Endpoint::credentials`]), and then to that registry's
    /// host, or to a mirror that stands in for it (containerd's hosts.toml, whose CRI plugin
    /// offers them to every host); a short name's search registry is another host, and is
    /// asked anonymously.
    fn may_send_credentials(&self, endpoint: &Endpoint) -> bool {
        endpoint.credentials
            && (endpoint.mirror_of.is_some()
                || crate::route::is_upstream(&endpoint.host, &self.reference.registry))
    }

    async fn probe_endpoint(
        &self,
        endpoint: &Endpoint,
        credentials: &[&Credential],
        deadline: Instant,
        explain: bool,
    ) -> Outcome {
        let progress = Progress::default();
        let probe = self
            .client
            .probe_at(endpoint, credentials, &progress, deadline, explain);
        match tokio::time::timeout_at(deadline, probe).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome {
                fact: Fact::TimedOut {
                    waiting_for: progress.get(),
                    deadline: deadline >= self.deadline,
                },
                auth: AuthUsed::Anonymous,
                tried: Vec::new(),
            },
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
        ImageResult {
            image: self.image.clone(),
            reference: self.reference.to_string(),
            registry: self.reference.registry.clone(),
            status: v.status,
            reason: v.reason,
            digest: v.digest,
            platform_digest: v.platform_digest,
            platform_checked: v.platform.map(|p| p == PlatformSeen::Checked),
            platform_note: match v.platform {
                Some(PlatformSeen::Skipped(why)) => Some(why),
                _ => None,
            },
            available_platforms: v.available_platforms,
            suggestions: v.suggestions,
            existing_tags: v.some_tags,
            containers: Vec::new(),
            providers_tried: Vec::new(),
            message: v.message,
            hint: v.hint,
            auth: auth.describe(),
            counted: Counted::Yes,
            attempts,
            elapsed_ms: start.elapsed().as_millis().try_into().unwrap_or(u64::MAX),
            pull_policy: PullPolicy::Always,
            present_on_node: None,
            endpoint: None,
            mirror_of: None,
            plain_http: false,
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
        platform_checked: None,
        platform_note: None,
        available_platforms: Vec::new(),
        suggestions: Vec::new(),
        existing_tags: Vec::new(),
        containers: Vec::new(),
        providers_tried: Vec::new(),
        message,
        hint: String::new(),
        auth: AuthUsed::Anonymous.describe(),
        counted: Counted::Yes,
        attempts: 0,
        elapsed_ms: 0,
        pull_policy: PullPolicy::Always,
        present_on_node: None,
        endpoint: None,
        mirror_of: None,
        plain_http: false,
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
