//! The watcher's Prometheus metrics, in the text format by hand as the webhook's are: stuck
//! pods seen by cause, pods failed by reason, the time from the first waiting state to the
//! action ([`crate::serve::Histogram`]), whether this replica leads, and the pending pods it
//! holds.

use crate::serve::Histogram;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The histogram's upper bounds, in seconds: a missing image is acted on at once, a missing Secret after
/// 30 s, a long one an hour.
const BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0,
];

/// Counters and gauges, shared by the loop and the server.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// By (kind, word): `permanent` or `transient`, and the reason's or the cause's word.
    stuck: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// By (reason word, dry run).
    failed: Mutex<BTreeMap<(&'static str, bool), u64>>,
    /// From the first waiting state seen to the failure.
    delay: Histogram,
    /// Pods not failed because their image resolved when the watcher asked, by reason word.
    spared: Mutex<BTreeMap<&'static str, u64>>,
    /// Pods not failed because their owner reached `--owner-failure-limit`, by reason word.
    owner_limited: Mutex<BTreeMap<&'static str, u64>>,
    /// API calls that failed, by what they were.
    errors: Mutex<BTreeMap<&'static str, u64>>,
    /// 1 while this replica holds the Lease.
    pub(crate) leader: AtomicU64,
    /// The pending pods held in memory.
    pub(crate) pending: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            stuck: Mutex::default(),
            failed: Mutex::default(),
            delay: Histogram::new(BUCKETS),
            spared: Mutex::default(),
            owner_limited: Mutex::default(),
            errors: Mutex::default(),
            leader: AtomicU64::default(),
            pending: AtomicU64::default(),
        }
    }
}

impl Metrics {
    /// One stuck pod's cause, reported or acted on.
    pub(crate) fn stuck(&self, permanent: bool, word: &'static str) {
        let kind = if permanent { "permanent" } else { "transient" };
        if let Ok(mut m) = self.stuck.lock() {
            *m.entry((kind, word)).or_default() += 1;
        }
    }

    /// One pod failed (or, in a dry run, that would have been), `waited` after its container
    /// was first seen waiting.
    pub(crate) fn failed(&self, word: &'static str, dry_run: bool, waited: Duration) {
        if let Ok(mut m) = self.failed.lock() {
            *m.entry((word, dry_run)).or_default() += 1;
        }
        self.delay.observe(waited);
    }

    /// One pod spared: its image resolved when the watcher asked.
    pub(crate) fn spared(&self, word: &'static str) {
        if let Ok(mut m) = self.spared.lock() {
            *m.entry(word).or_default() += 1;
        }
    }

    /// One pod not failed: its owner reached the limit.
    pub(crate) fn owner_limited(&self, word: &'static str) {
        if let Ok(mut m) = self.owner_limited.lock() {
            *m.entry(word).or_default() += 1;
        }
    }

    /// One API call that failed.
    pub(crate) fn error(&self, what: &'static str) {
        if let Ok(mut m) = self.errors.lock() {
            *m.entry(what).or_default() += 1;
        }
    }

    /// The text exposition format (version 0.0.4).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let name = "pullcheck_watch_stuck_pods_total";
        let _ = writeln!(
            out,
            "# HELP {name} Stuck containers seen past their grace, by cause."
        );
        let _ = writeln!(out, "# TYPE {name} counter");
        if let Ok(m) = self.stuck.lock() {
            for ((kind, word), n) in m.iter() {
                let _ = writeln!(out, "{name}{{verdict=\"{kind}\",reason=\"{word}\"}} {n}");
            }
        }
        let name = "pullcheck_watch_pods_failed_total";
        let _ = writeln!(
            out,
            "# HELP {name} Pods failed (condition, Event, delete), by reason."
        );
        let _ = writeln!(out, "# TYPE {name} counter");
        if let Ok(m) = self.failed.lock() {
            for ((word, dry), n) in m.iter() {
                let _ = writeln!(out, "{name}{{reason=\"{word}\",dry_run=\"{dry}\"}} {n}");
            }
        }
        self.delay.write(
            &mut out,
            "pullcheck_watch_action_delay_seconds",
            "Time from a container's first waiting state seen to the pod's failure.",
        );
        for (name, help, family) in [
            (
                "pullcheck_watch_spared_pods_total",
                "Pods not failed because their image resolved when the watcher asked the registry, by reason.",
                &self.spared,
            ),
            (
                "pullcheck_watch_owner_limited_pods_total",
                "Pods not failed because their owner had reached --owner-failure-limit, by reason.",
                &self.owner_limited,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            if let Ok(m) = family.lock() {
                for (word, n) in m.iter() {
                    let _ = writeln!(out, "{name}{{reason=\"{word}\"}} {n}");
                }
            }
        }
        let name = "pullcheck_watch_api_errors_total";
        let _ = writeln!(
            out,
            "# HELP {name} Calls to the API server that failed, by call."
        );
        let _ = writeln!(out, "# TYPE {name} counter");
        if let Ok(m) = self.errors.lock() {
            for (what, n) in m.iter() {
                let _ = writeln!(out, "{name}{{call=\"{what}\"}} {n}");
            }
        }
        for (name, help, value) in [
            (
                "pullcheck_watch_leader",
                "1 while this replica holds the Lease and acts.",
                &self.leader,
            ),
            (
                "pullcheck_watch_pending_pods",
                "Pending pods held in memory.",
                &self.pending,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histogram() {
        let m = Metrics::default();
        m.stuck(true, "tag_missing");
        m.stuck(false, "connect");
        m.stuck(false, "connect");
        m.failed("tag_missing", false, Duration::from_secs(125));
        m.spared("manifest_missing");
        m.owner_limited("manifest_missing");
        m.owner_limited("manifest_missing");
        let text = m.render();
        for line in [
            "pullcheck_watch_stuck_pods_total{verdict=\"permanent\",reason=\"tag_missing\"} 1",
            "pullcheck_watch_stuck_pods_total{verdict=\"transient\",reason=\"connect\"} 2",
            "pullcheck_watch_pods_failed_total{reason=\"tag_missing\",dry_run=\"false\"} 1",
            "pullcheck_watch_action_delay_seconds_bucket{le=\"120\"} 0",
            "pullcheck_watch_action_delay_seconds_bucket{le=\"180\"} 1",
            "pullcheck_watch_action_delay_seconds_sum 125",
            "pullcheck_watch_leader 0",
            "pullcheck_watch_spared_pods_total{reason=\"manifest_missing\"} 1",
            "pullcheck_watch_owner_limited_pods_total{reason=\"manifest_missing\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
    }
}
