//! Deadlines and saturating time: the longest `--timeout`, the longest wait taken from a
//! server's number, and `Instant + Duration` that cannot panic. A leaf: everything that
//! computes an instant from an outside number (flags, `Retry-After`, `expires_in`) comes here.

use std::time::Duration;
use tokio::time::Instant;

/// The longest deadline: a day is far beyond any pod's patience, and keeps `Instant`
/// arithmetic from overflowing.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest wait or lifetime taken from a server's number (`Retry-After`, `expires_in`): a
/// day, the longest `--timeout`. Anything longer means the same to a run, and a clamped
/// duration keeps every `Instant + Duration` far from overflow.
pub(crate) const MAX_SERVER_WAIT: Duration = MAX_TIMEOUT;

/// `now + d`, saturating: `Instant + Duration` panics on overflow, and `d` may come from a
/// server. A far-off instant (a day past the longest deadline) stands in for "never".
pub(crate) fn instant_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(MAX_SERVER_WAIT.saturating_mul(2)))
        .or_else(|| now.checked_add(MAX_SERVER_WAIT))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_from_server_numbers_saturate() {
        let now = Instant::now();
        assert!(instant_after(now, Duration::MAX) > now);
        assert_eq!(
            instant_after(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
    }
}
