//! The command line, as clap derive types only, one file per subcommand (`check.rs`,
//! `inject.rs`, `webhook.rs`, `watch.rs`, `doctor.rs`): every flag also reads an environment variable, and
//! `--help` text comes from these doc comments. No logic lives here; `config` validates.

use crate::report::EXIT_CODES_HELP;
use clap::{Parser, Subcommand};

mod check;
mod choices;
#[cfg(any(feature = "webhook", feature = "watch"))]
pub mod doctor;
mod inject;
mod limit_range;
pub(crate) mod values;
#[cfg(feature = "watch")]
pub mod watch;
#[cfg(feature = "webhook")]
pub mod webhook;

pub use check::CheckArgs;
pub(crate) use choices::{
    CloudCredentials, OutputFormat, PlatformCheck, PlatformMatch, PullCredentialsVerification,
};
pub use choices::{Network, OnUnreachable, OnUnverifiable, StartCheck};
pub(crate) use inject::DEFAULT_INJECT_IMAGE;
pub use inject::InjectArgs;
pub use values::Checked;
// The headings `-h` groups the flags under, in the order they are shown.
const IMAGES: &str = "Images";
const CREDENTIALS: &str = "Credentials";
const NODE: &str = "The node";
const ROUTING: &str = "Routing";
const OUTPUT: &str = "Output";
const LIMITS: &str = "Limits";
const INJECT_INPUT: &str = "Input and image";
const INJECT_JOBS: &str = "Jobs";

/// Fail a pod in seconds, not hours, when one of its images cannot be pulled.
///
/// pullcheck runs as the first init container of a pod: it asks each image's registry for the
/// manifest (one HEAD, with the pod's own pull secrets) and exits non-zero with a precise
/// message when an image is missing, private, or its registry is unreachable.
#[derive(Debug, Parser)]
#[command(name = "pullcheck", version, after_help = EXIT_CODES_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check that every image can be pulled.
    ///
    /// Asks each image's registry for its manifest (one HEAD per image, with the pull
    /// secrets that match it, as the kubelet would), for the node's platform, and exits with
    /// the code of the worst failure.
    #[command(after_help = check::short_after(), after_long_help = check::long_after())]
    Check(CheckArgs),
    /// Add the pullcheck init container to every pod spec of some manifests.
    ///
    /// Reads YAML or JSON (several documents, or a List) and writes the same format to stdout,
    /// every byte it does not edit kept as it was.
    #[command(after_help = inject::SHORT_AFTER, after_long_help = inject::LONG_AFTER)]
    Inject(InjectArgs),
    #[cfg(feature = "webhook")]
    #[command(about = webhook::ABOUT, long_about = webhook::LONG_ABOUT)]
    Webhook(webhook::WebhookArgs),
    #[cfg(feature = "watch")]
    Watch(watch::WatchArgs),
    #[cfg(any(feature = "webhook", feature = "watch"))]
    Doctor(doctor::DoctorArgs),
}

/// The command line as `main` parses it: the derive's, with each flag's environment variable
/// moved from `-h` to `--help`, so that `-h` keeps one line per flag.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let explain = |c: clap::Command| c.mut_args(explained);
    let command = Cli::command()
        .mut_subcommand("check", explain)
        .mut_subcommand("inject", explain);
    #[cfg(feature = "webhook")]
    let command = command.mut_subcommand("webhook", |c| webhook::explained(explain(c)));
    #[cfg(feature = "watch")]
    let command = command.mut_subcommand("watch", explain);
    #[cfg(any(feature = "webhook", feature = "watch"))]
    let command = command.mut_subcommand("doctor", explain);
    command
}

/// One flag's long help: its text, then the environment variable it reads.
fn explained(arg: clap::Arg) -> clap::Arg {
    let Some(env) = arg.get_env().map(|e| e.to_string_lossy().into_owned()) else {
        return arg;
    };
    let text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    arg.hide_env(true)
        .long_help(format!("{text}\n\n[env: {env}]"))
}
