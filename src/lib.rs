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
//!     println!("{} {}", image.status.as_str(), image.message);
//! }
//! std::process::exit(report.exit_code.code().into());
//! # }
//! ```
//!
//! # Layout
//!
//! - [`cli`]: clap types only; [`config`]: flags, environment and files into a validated
//!   [`config::Config`]; [`app`]: the program behind `main`; [`input`]: bounded reading of
//!   files and stdin, for `config` and `keyring` alike.
//! - [`reference`](mod@reference): image reference parsing and normalisation, as the container runtime does it.
//! - [`manifests`]: the one reader of pod specs (every kind, job frameworks included), for
//!   `check --pod-spec` and `inject`, and the text splice `inject` writes with.
//! - [`keyring`]: pull-secret files and the kubelet's credential matching;
//!   [`credentials`]: what the node would pull with (cloud providers, exec plugins), tried
//!   after the pull secrets.
//! - [`pull_policy`]: when the kubelet pulls, and so what is checked; [`node`]: the images the
//!   node already holds, from its Node object.
//! - [`registry`]: all HTTP to registries; [`registry::classify`](fn@registry::classify) turns what it found into a
//!   verdict, in one place.
//! - [`platform`]: the node's platform and index matching, as containerd does it;
//!   [`suggest`]: "did you mean" for missing tags and repositories.
//! - [`route`]: where a pull goes: the node runtime's registry configuration (containerd's
//!   hosts directory, registries.conf) as the ordered endpoints of one reference.
//! - [`container_start`]: the container-start prediction: will each container start once
//!   pulled? The kubelet's and the runtimes' rules (`runAsNonRoot`, the image's user, the
//!   command), over the pod spec and the image's config.
//! - [`check`](mod@check): concurrency, retries with back-off, the deadline, and the walk over
//!   a route's endpoints; [`progress`]: what it is doing while it runs (verdicts, retries,
//!   `--verbose` requests).
//! - [`deadline`]: the longest `--timeout` and saturating `Instant` arithmetic; [`http`]: what
//!   every HTTP client shares (user agent, TLS over given roots, `error_chain`). Both are
//!   leaves: no module of the crate reaches back from them, and `tests/it/layout.rs` keeps the
//!   whole module graph free of cycles.
//! - [`report`]: results, exit codes, text, JSON and the termination message; [`redact`]:
//!   every secret of the run replaced by `<redacted>` in all of them, by value.
//! - [`inject`]: `pullcheck inject`, manifests in, manifests out.

// Most modules are the crate's own (`pub(crate)`): their docs are for contributors, built with
// `cargo doc --document-private-items`, where links to crate-private items resolve.
#![allow(rustdoc::private_intra_doc_links)]

pub mod app;
pub mod check;
pub mod cli;
pub mod config;
pub mod container_start;
pub mod credentials;
pub mod deadline;
pub mod http;
pub mod inject;
pub mod input;
pub mod keyring;
pub mod manifests;
pub mod node;
pub mod platform;
pub mod progress;
pub mod pull_policy;
pub mod redact;
pub mod reference;
pub mod registry;
pub mod report;
pub mod route;
pub mod suggest;
mod test_hooks;

pub use check::{Options, check, check_until};
pub use report::{Counted, ExitCode, ImageResult, NotCounted, Reason, Report, Status};
