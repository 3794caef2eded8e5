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
//! - [`podspec`]: the images of Pods, workloads and Lists.
//! - [`keyring`]: pull-secret files and the kubelet's credential matching;
//!   [`credentials`]: what the node would pull with (cloud providers, exec plugins), tried
//!   after the pull secrets.
//! - [`registry`]: all HTTP to registries; [`registry::classify`](fn@registry::classify) turns what it found into a
//!   verdict, in one place.
//! - [`platform`]: the node's platform and index matching, as containerd does it;
//!   [`suggest`]: "did you mean" for missing tags and repositories.
//! - [`check`](mod@check): concurrency, retries with back-off, the deadline.
//! - [`report`]: results, exit codes, text, JSON and the termination message.
//! - [`inject`]: `pullcheck inject`, manifests in, manifests out.

pub mod app;
pub mod check;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod inject;
pub mod input;
pub mod keyring;
pub mod platform;
pub mod podspec;
pub mod reference;
pub mod registry;
pub mod report;
pub mod suggest;

pub use check::{Options, check, check_until};
pub use report::{ExitCode, ImageResult, Report, Status};
