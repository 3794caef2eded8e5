//! pullcheck: fail a Kubernetes pod in seconds, not hours, when one of its images cannot be
//! pulled.
//!
//! Kubernetes keeps a pod whose image cannot be pulled in `Pending` and retries for ever, so a
//! Job's `backoffLimit` and `podFailurePolicy` never fire. pullcheck runs as the pod's first init
//! container, asks each image's registry for the manifest (one `HEAD`, with the pod's own pull
//! secrets) and exits with a precise, machine-readable verdict.
//!
//! # Library use
//!
//! Job frameworks can call [`check`](fn@check) directly:
//!
//! ```no_run
//! # async fn demo() {
//! let options = pullcheck::Options::default();
//! let report = pullcheck::check(&["nginx:1.27".to_string()], &options).await;
//! for image in &report.images {
//!     println!("{} {}", image.status.as_str(), image.message());
//! }
//! std::process::exit(report.exit_code.code().into());
//! # }
//! ```
//!
//! # Layout
//!
//! One line per module, saying what it holds (a folder's files in brackets, those of private
//! modules as plain names); each file opens with its own responsibility.
//!
//! - [`cli`]: clap types only, every flag also an environment variable, grouped for `-h`, one
//!   file per subcommand ([`cli::values`]: the values of single flags as clap reads them, a
//!   leaf that `config` uses too); [`config`]: each subcommand's flags, environment and files
//!   into one validated configuration, every problem at once (`config/check.rs`: `check`'s
//!   [`config::Config`] by small per-concern builders; `config/inject.rs`: `inject`'s
//!   `InjectConfig`; `config/webhook.rs`: `webhook`'s; `config/doctor.rs`: `doctor`'s; `config/watch.rs`: `watch`'s, with the
//!   graces as data; `config/values.rs`: the command line's choices as the library's types);
//!   [`app`]: the program behind `main`; [`input`]: bounded reading of files and stdin, for
//!   `config` and `keyring` alike.
//! - [`reference`](mod@reference): image reference parsing and normalisation, as the
//!   container runtime does it (`reference/grammar.rs`: distribution's grammar).
//! - [`manifests`]: the one reader of pod specs (every kind, job frameworks included), for
//!   `check --pod-spec` and `inject` (`parse`, `tree`, `reader`: what the kind readers read
//!   from, `found`: what they fill, `kinds`: the table of (group, kind) to where the pod specs
//!   are, `frameworks`, `kubectl`), the text splice `inject`
//!   writes with and the `Writer` trait of the inject core's edits ([`manifests::splice`]),
//!   and Kubernetes' name rules
//!   ([`manifests::names`]).
//! - [`keyring`]: pull-secret files and the kubelet's credential matching (`files`,
//!   `matching`, `helper`: the Docker CLI's credential helpers); [`credentials`]: what the
//!   node would pull with (`cloud/`: AWS, Google, Azure; `plugin/`: the kubelet's exec
//!   plugins), tried after the pull secrets.
//! - [`pull_policy`]: when the kubelet pulls, and so what is checked; [`node`]: the images the
//!   node already holds (`node/read.rs`: the Node object read in one pass, keeping only the
//!   names, and the kubelet's version).
//! - [`registry`]: all HTTP to registries, through a client made of parts, each in its own
//!   file: `http` (one request on the wire), `token` (the `Authorization` a request carries,
//!   the shared token cache), `state` (what the run knows of each registry), `probe` (the
//!   request flow of one image: the manifest `HEAD` first, the challenge answered once),
//!   [`registry::index`] (the index walk), `image_config` (the image's config), `inspect`
//!   (follow-ups: the platform check, and after a 404); [`registry::auth`], [`registry::dns`];
//!   [`registry::classify`](fn@registry::classify) turns what it found into a verdict, in one
//!   place.
//! - [`platform`]: the node's platform and index matching, as containerd does it;
//!   [`suggest`]: "did you mean" for missing tags and repositories.
//! - [`route`]: where a pull goes: the node runtime's registry configuration (containerd's
//!   hosts directory, registries.conf and certs.d) as the ordered endpoints of one reference.
//! - [`container_start`]: the container-start prediction: will each container start once
//!   pulled? The kubelet's and the runtimes' rules (`runAsNonRoot`, the image's user, the
//!   command), over the pod spec and the image's config.
//! - [`check`](mod@check): the run's phases (set-up, scheduling, verdicts, the summary), with
//!   `check/job.rs` (one image's attempts, retries with back-off, inside the deadline),
//!   `check/walk.rs` (the walk over a route's endpoints), `check/held.rs` (the [`Checker`] a
//!   long-running process keeps: one registry client for all its checks) and
//!   `check/options.rs` ([`Options`]: how a run checks); [`progress`]: what it is doing while
//!   it runs (verdicts, retries, `--verbose` requests).
//! - [`deadline`]: the longest `--timeout` and saturating `Instant` arithmetic; [`http`]: what
//!   every HTTP client shares (user agent, TLS over given roots, `error_chain`); [`escape`]:
//!   text for people made safe and short (`escape`, `cut`). All three are leaves: no module of
//!   the crate reaches back from them; so is [`log`], the one way every subcommand writes a
//!   line to stderr (a component, a level, the line escaped and redacted once).
//! - [`proof`]: whether a failure counts (a pod is failed only on proof), as pure decisions
//!   (among them whether a node's kubelet re-verifies the credentials of images it holds),
//!   and the cases `docs/reference/what-fails.md` is generated from
//! - [`report`]: results, exit codes, text, JSON and the termination message
//!   (`report/reason.rs`: the [`Reason`] enum, each reason's word, status, meaning and hint
//!   in one table; `report/place.rs`: the words that differ between a pod and a
//!   workstation); [`redact`]: every secret of the run replaced by `<redacted>` in the
//!   foreign text of them (servers' answers, references as given), by field.
//! - [`inject`]: `pullcheck inject`, manifests in, manifests out, and the one inject core the
//!   webhook shares (`options`: validated once, `pod`: the edit of one pod spec through a
//!   writer, `wants`: what its init container holds, `container`: the init container,
//!   `resources`: its requests and limits within the pod's and the namespace's LimitRanges,
//!   `job`: the Job rule decided, `--job-failure-policy`'s rules and rule mode's (`--mode
//!   watch`), `rule`: the Job rule written, in both modes, `object`: the webhook's writer,
//!   edits made to the object as sent).
//! - `cluster` (cargo features `webhook` and `watch`): the cluster side, one wing
//!   (`cluster/ask.rs`: one image asked of its registry, the webhook's verdicts' and the
//!   watcher's look's one way, through the process's held [`Checker`]):
//! - `cluster/webhook` (cargo feature `webhook`): `pullcheck webhook`, the mutating admission webhook
//!   (`review`: one AdmissionReview read once for all that read it, `admit`, `watch_mode`:
//!   `--mode watch`'s Job rule, `audit`: `--audit`'s warnings of what
//!   it would add, `decision`: what a review comes to,
//!   `limit_ranges`: the namespace's LimitRanges for each review, from the cluster's kept in
//!   memory by a watch (`store`) or listed, `patch`, `server`, `tls`,
//!   `metrics`, and `cert`, its own certificate and caBundle).
//! - `cluster/watch` (cargo feature `watch`): `pullcheck watch`, the stuck-pod controller (`classify`:
//!   the kubelet's words, permanent or transient; `grace`: each verdict's grace; `seen`: what
//!   was seen of one pod, the evidence and whether it is fresh; `decide`: one pod's action,
//!   without I/O; `breaker`: the bound on owners that recreate what is failed; `confirm`: the
//!   watcher's own manifest HEAD; `run`, `act`, `lease`: leader election, `server`,
//!   `metrics`).
//! - `cluster/doctor` (cargo feature `webhook` or `watch`): `pullcheck doctor`, whether the chart works
//!   on a cluster (`read`: the API reads and the dry-run sample, the only I/O; `selector`: a
//!   namespaceSelector read back; `sample`: the sample and what came back; `decide`: each
//!   check's ok or no and its fix, without I/O; `runtimes`: the nodes' container runtimes
//!   against those the watcher was tested with; `probe`: `--probe`, a real Job the install
//!   must fail).
//! - `cluster/door.rs` (with either cargo feature): the one client to the API server each command
//!   makes, lent to all, with the reads they share (pull Secrets, Nodes, LimitRanges, Events).
//! - `cluster/serve.rs` (with either cargo feature): what the two cluster-wide servers share, the
//!   `--listen` address, the runtime, the one accept loop (TLS or not) with its bounds, the
//!   stopping signals, the `/healthz`, `/readyz` and `/metrics` answers, and the one histogram
//!   type of their metrics.
//! - `test_hooks`: the two ways the integration tests reach stand-ins (pinned host names, ACR's
//!   token exchange), compiled only with the `test-hooks` cargo feature; the release build
//!   leaves it out.
//!
//! `tests/it/layout.rs` keeps this shape: no import cycle between the files of `src/` (a
//! module's own file and its children may reach each other, its children not in a circle), no
//! file over 800 lines (test modules aside) and no function over 120, with no exception.

// Most modules are the crate's own (`pub(crate)`): their docs are for contributors, built with
// `cargo doc --document-private-items`, where links to crate-private items resolve.
#![allow(rustdoc::private_intra_doc_links)]
// `pub` only where the binary, the tests, the benches or the fuzz targets reach it: an item
// of a crate-private module is `pub(crate)`.
#![warn(unreachable_pub)]

pub mod app;
pub mod check;
pub mod cli;
#[cfg(any(feature = "webhook", feature = "watch"))]
pub mod cluster;
pub mod config;
pub mod container_start;
pub mod credentials;
pub(crate) mod deadline;
pub(crate) mod escape;
pub(crate) mod http;
pub mod inject;
pub(crate) mod input;
pub mod keyring;
pub(crate) mod log;
pub mod manifests;
pub mod node;
pub mod platform;
pub(crate) mod progress;
pub mod proof;
pub mod pull_policy;
pub(crate) mod redact;
pub mod reference;
pub mod registry;
pub mod report;
pub mod route;
pub(crate) mod suggest;
mod test_hooks;

pub use check::{Checker, Options, check, check_until};
pub use report::{Counted, ExitCode, ImageResult, NotCounted, Reason, Report, Status};
