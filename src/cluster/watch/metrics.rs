//! The watcher's Prometheus metrics, in the text format by hand as the webhook's are: stuck
//! pods seen by cause, words not recognised by waiting reason, pods failed by reason, the time from the first waiting state to the
//! action, whether this replica leads, and the pending pods it holds; with the metric types
//! of [`crate::cluster::serve`].

use crate::cluster::serve::{Counters, Histogram};
use std::fmt::Write;
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
    /// By verdict (`permanent` or `transient`) and the reason's or the cause's word.
    stuck: Counters<2>,
    /// Containers whose words the classifier does not know, by the kubelet's waiting reason.
    unrecognized: Counters<1>,
    /// By reason word and dry run.
    failed: Counters<2>,
    /// From the first waiting state seen to the failure.
    delay: Histogram,
    /// Pods not failed because their image resolved when the watcher asked, by reason word.
    spared: Counters<1>,
    /// Pods not failed because their owner reached `--owner-failure-limit`, by reason word.
    owner_limited: Counters<1>,
    /// API calls that failed, by what they were.
    errors: Counters<1>,
    /// 1 while this replica holds the Lease.
    pub(crate) leader: AtomicU64,
    /// The pending pods held in memory.
    pub(crate) pending: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            stuck: Counters::new(["verdict", "reason"]),
            unrecognized: Counters::new(["waiting_reason"]),
            failed: Counters::new(["reason", "dry_run"]),
            delay: Histogram::new(BUCKETS),
            spared: Counters::new(["reason"]),
            owner_limited: Counters::new(["reason"]),
            errors: Counters::new(["call"]),
            leader: AtomicU64::default(),
            pending: AtomicU64::default(),
        }
    }
}

impl Metrics {
    /// One stuck pod's cause, reported or acted on.
    pub(crate) fn stuck(&self, permanent: bool, word: &'static str) {
        let verdict = if permanent { "permanent" } else { "transient" };
        self.stuck.add([verdict, word]);
    }

    /// One container whose words the classifier does not know, reported once. The label is one
    /// of the waiting reasons the watcher looks at, so the series stay few whatever the words.
    pub(crate) fn unrecognized(&self, waiting: &str) {
        let label = super::classify::WATCHED
            .iter()
            .find(|w| **w == waiting)
            .copied()
            .unwrap_or("other");
        self.unrecognized.add([label]);
    }

    /// One pod failed (or, in a dry run, that would have been), `waited` after its container
    /// was first seen waiting.
    pub(crate) fn failed(&self, word: &'static str, dry_run: bool, waited: Duration) {
        self.failed
            .add([word, if dry_run { "true" } else { "false" }]);
        self.delay.observe(waited);
    }

    /// One pod spared: its image resolved when the watcher asked.
    pub(crate) fn spared(&self, word: &'static str) {
        self.spared.add([word]);
    }

    /// One pod not failed: its owner reached the limit.
    pub(crate) fn owner_limited(&self, word: &'static str) {
        self.owner_limited.add([word]);
    }

    /// One API call that failed.
    pub(crate) fn error(&self, what: &'static str) {
        self.errors.add([what]);
    }

    /// The text exposition format (version 0.0.4).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.stuck.write(
            &mut out,
            "pullcheck_watch_stuck_pods_total",
            "Stuck containers seen past their grace, by cause.",
        );
        self.unrecognized.write(
            &mut out,
            "pullcheck_watch_unrecognized_total",
            "Stuck containers whose kubelet's words pullcheck does not recognise (reported once each, never acted on), by waiting reason.",
        );
        self.failed.write(
            &mut out,
            "pullcheck_watch_pods_failed_total",
            "Pods failed (condition, Event, activeDeadlineSeconds), by reason.",
        );
        self.delay.write(
            &mut out,
            "pullcheck_watch_action_delay_seconds",
            "Time from a container's first waiting state seen to the pod's failure.",
        );
        self.spared.write(
            &mut out,
            "pullcheck_watch_spared_pods_total",
            "Pods not failed because their image resolved when the watcher asked the registry, by reason.",
        );
        self.owner_limited.write(
            &mut out,
            "pullcheck_watch_owner_limited_pods_total",
            "Pods not failed because their owner had reached --owner-failure-limit, by reason.",
        );
        self.errors.write(
            &mut out,
            "pullcheck_watch_api_errors_total",
            "Calls to the API server that failed, by call.",
        );
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
        m.unrecognized("ErrImagePull");
        m.unrecognized("SomethingNew");
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
            "pullcheck_watch_unrecognized_total{waiting_reason=\"ErrImagePull\"} 1",
            "pullcheck_watch_unrecognized_total{waiting_reason=\"other\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
    }
}
