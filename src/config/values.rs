//! The values of single flags: durations, counts, lists, and the command line's choices as the
//! library's types. Each parser says what is wrong in words `config` puts after the flag's name.

use crate::cli;
use crate::credentials::cloud;
use std::time::Duration;

/// The most images `--concurrency` checks at once.
const MAX_CONCURRENCY: usize = 1024;

/// The largest `--node-status-max-images` (the kubelet's own field has no bound; a node lists
/// tens of images).
const MAX_NODE_STATUS_IMAGES: i64 = 1_000_000;

/// The value of `--timeout`: longer than zero, at most 24 hours.
pub fn timeout_value(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

/// The value of `--concurrency`: a whole number from 1 to 1024.
pub fn concurrency_value(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number from 1 to {MAX_CONCURRENCY}"
        )),
    }
}

/// The value of `--node-status-max-images`: `None` for -1 (the kubelet lists every image).
pub fn node_status_max_images_value(s: &str) -> Result<Option<usize>, String> {
    match s.trim().parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(n) if (0..=MAX_NODE_STATUS_IMAGES).contains(&n) => Ok(usize::try_from(n).ok()),
        _ => Err(format!(
            "expected the kubelet's nodeStatusMaxImages, a whole number from -1 (no cap) to {MAX_NODE_STATUS_IMAGES}"
        )),
    }
}

// The command line's choices, as the library's types: clap derives stay in `cli`.

impl From<cli::CloudCredentials> for cloud::Mode {
    fn from(c: cli::CloudCredentials) -> cloud::Mode {
        match c {
            cli::CloudCredentials::Auto => cloud::Mode::Auto,
            cli::CloudCredentials::Off => cloud::Mode::Off,
            cli::CloudCredentials::Required => cloud::Mode::Required,
        }
    }
}

impl From<cli::StartCheck> for crate::container_start::StartCheck {
    fn from(c: cli::StartCheck) -> crate::container_start::StartCheck {
        match c {
            cli::StartCheck::Auto => crate::container_start::StartCheck::Auto,
            cli::StartCheck::Off => crate::container_start::StartCheck::Off,
        }
    }
}

impl From<cli::PlatformCheck> for crate::registry::PlatformCheck {
    fn from(c: cli::PlatformCheck) -> crate::registry::PlatformCheck {
        match c {
            cli::PlatformCheck::Auto => crate::registry::PlatformCheck::Auto,
            cli::PlatformCheck::Full => crate::registry::PlatformCheck::Full,
            cli::PlatformCheck::Off => crate::registry::PlatformCheck::Off,
        }
    }
}

impl From<cli::OnUnreachable> for crate::check::OnUnreachable {
    fn from(c: cli::OnUnreachable) -> crate::check::OnUnreachable {
        match c {
            cli::OnUnreachable::Fail => crate::check::OnUnreachable::Fail,
            cli::OnUnreachable::Warn => crate::check::OnUnreachable::Warn,
        }
    }
}

/// Parses `500ms`, `30s`, `2m`, `1h30m`. Zero and negative durations are refused.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}; expected a duration such as 500ms, 30s or 2m"))?;
    if d.is_zero() {
        return Err("must be longer than zero".to_string());
    }
    if d > crate::deadline::MAX_TIMEOUT {
        return Err("must be at most 24h".to_string());
    }
    Ok(d)
}

/// Splits `PULLCHECK_IMAGES`: whitespace or commas, empty items dropped.
pub(super) fn split_list(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|i| !i.is_empty())
        .map(str::to_string)
}

/// One image per line; `#` starts a comment (a reference never holds `#`).
pub(super) fn images_file_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
}
