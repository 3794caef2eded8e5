//! The values of single flags, as clap reads them: each parser keeps what was given and says
//! what is wrong in words `config` puts after the flag's name, so that every problem of a
//! command line is reported at once (exit 2). A leaf: `config` and `cli` both use it.

use crate::check::MAX_CONCURRENCY;
use crate::keyring::Secret;
use std::time::Duration;

/// The largest `--node-status-max-images` (the kubelet's own field has no bound; a node lists
/// tens of images).
const MAX_NODE_STATUS_IMAGES: i64 = 1_000_000;

/// Why a flag's value means nothing, in words `config` puts after the flag's name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// `--concurrency` out of its range, or not a number.
    #[error("expected a whole number from 1 to {MAX_CONCURRENCY}")]
    Concurrency,
    /// `--node-status-max-images` out of its range, or not a number.
    #[error(
        "expected the kubelet's nodeStatusMaxImages, a whole number from -1 (no cap) to {MAX_NODE_STATUS_IMAGES}"
    )]
    NodeStatusMaxImages,
    /// `pullcheck watch --owner-failure-limit` out of its range, or not a number.
    #[cfg(feature = "watch")]
    #[error("expected a whole number from 1 to 10000")]
    OwnerFailureLimit,
    /// Not a duration.
    #[error("{0}; expected a duration such as 500ms, 30s or 2m")]
    Duration(humantime::DurationError),
    /// A duration of zero where one is needed.
    #[error("must be longer than zero")]
    Zero,
    /// A duration longer than a run may last.
    #[error("must be at most 24h")]
    TooLong,
}

/// The value of `--timeout`: longer than zero, at most 24 hours.
pub fn timeout_value(s: &str) -> Result<Duration, ValueError> {
    parse_duration(s)
}

/// The value of `--concurrency`: a whole number from 1 to 1024.
pub fn concurrency_value(s: &str) -> Result<usize, ValueError> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        _ => Err(ValueError::Concurrency),
    }
}

/// The value of `--node-status-max-images`: `None` for -1 (the kubelet lists every image).
pub fn node_status_max_images_value(s: &str) -> Result<Option<usize>, ValueError> {
    match s.trim().parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(n) if (0..=MAX_NODE_STATUS_IMAGES).contains(&n) => Ok(usize::try_from(n).ok()),
        _ => Err(ValueError::NodeStatusMaxImages),
    }
}

#[cfg(feature = "watch")]
/// The value of `pullcheck watch --owner-failure-limit`: a whole number from 1 to 10000.
pub(crate) fn owner_failure_limit_value(s: &str) -> Result<usize, ValueError> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=10_000).contains(&n) => Ok(n),
        _ => Err(ValueError::OwnerFailureLimit),
    }
}

/// Parses `500ms`, `30s`, `2m`, `1h30m`. Zero and negative durations are refused.
pub fn parse_duration(s: &str) -> Result<Duration, ValueError> {
    let d = humantime::parse_duration(s.trim()).map_err(ValueError::Duration)?;
    if d.is_zero() {
        return Err(ValueError::Zero);
    }
    if d > crate::deadline::MAX_TIMEOUT {
        return Err(ValueError::TooLong);
    }
    Ok(d)
}

#[cfg(feature = "watch")]
/// Parses a duration as [`parse_duration`] does, zero included: a grace of `0s` acts at the
/// first look.
pub(crate) fn parse_duration_or_zero(s: &str) -> Result<Duration, ValueError> {
    match humantime::parse_duration(s.trim()) {
        Ok(d) if d.is_zero() => Ok(d),
        _ => parse_duration(s),
    }
}

/// A flag's value as given, and what it means: clap reads it, [`crate::config`] judges it and
/// says what is wrong with the other problems (exit 2, all at once), in its own words.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked<T> {
    /// The value as given (on the command line, in the environment, or the default).
    pub(crate) given: String,
    /// What it means, or why it means nothing.
    pub(crate) value: Result<T, ValueError>,
}

impl<T: Clone + Send + Sync + 'static> Checked<T> {
    /// A clap value parser that never refuses: it keeps the value and `check`'s verdict on it.
    pub(super) fn parser(
        check: fn(&str) -> Result<T, ValueError>,
    ) -> impl Fn(&str) -> Result<Checked<T>, std::convert::Infallible> + Clone + Send + Sync + 'static
    {
        move |given| {
            Ok(Checked {
                given: given.to_string(),
                value: check(given),
            })
        }
    }
}

/// Wraps a secret value at once, so that no `Debug` of the arguments shows it: clap's value
/// parser, which never refuses.
pub(super) fn secret_value(s: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret::new(s))
}
