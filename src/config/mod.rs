//! Every subcommand's flags, environment and files become one validated configuration before
//! anything is sent or read: `from_args(...) -> Result<XConfig, every problem at once>` (exit
//! 2), so that a user fixes them in one go. [`Config`] is `check`'s ([`check`](self) reads it
//! one concern at a time), [`InjectConfig`] `inject`'s, `WebhookConfig` `webhook`'s, `WatchConfig`
//! `watch`'s, `DoctorConfig` `doctor`'s. Each imports the types of what it configures but nothing of the code that runs
//! with it, which imports it (`watch` hands in the words `--grace-for` takes, from its tables).

mod check;
#[cfg(any(feature = "webhook", feature = "watch"))]
mod doctor;
mod inject;
mod values;
#[cfg(feature = "watch")]
mod watch;
#[cfg(feature = "webhook")]
mod webhook;

pub use crate::cli::values::{
    ValueError, concurrency_value, node_status_max_images_value, parse_duration, timeout_value,
};
pub use check::Config;
#[cfg(any(feature = "webhook", feature = "watch"))]
pub(crate) use doctor::DoctorConfig;
pub use inject::{InjectConfig, inject_source};
#[cfg(feature = "watch")]
pub(crate) use watch::{GraceKeys, Graces, Settings, WatchConfig};
#[cfg(feature = "webhook")]
pub(crate) use webhook::{Adds, Certificates, VerdictConfig, WebhookConfig};

/// A server flag's value checked at parse time (`crate::cli::Checked`), or `fallback` with the
/// flag's problem added to `errors`: the servers' flags are checked by clap's value parsers but
/// reported here, all at once, with the others.
#[cfg(any(feature = "webhook", feature = "watch"))]
fn judged<T: Clone>(
    flag: &str,
    checked: &crate::cli::Checked<T>,
    fallback: T,
    errors: &mut Vec<String>,
) -> T {
    match &checked.value {
        Ok(v) => v.clone(),
        Err(e) => {
            errors.push(format!("{flag} {}: {e}", checked.given));
            fallback
        }
    }
}

/// Everything wrong with the flags and files, one line each.
#[derive(Debug)]
pub struct ConfigErrors(pub Vec<String>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
