//! The webhook's Prometheus metrics: admissions by outcome and a latency histogram, written
//! in the text format by hand (two metric families, a dozen lines; a metrics crate would add
//! a registry and its own types for no more than this).

use super::decision::{Outcome, Skip};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The histogram's upper bounds, in seconds: the webhook aims at well under 10 ms, and the API
/// server gives up at `timeoutSeconds` (2 s at most in the chart).
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Counters, shared by every connection.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    injected: AtomicU64,
    rule_added: AtomicU64,
    skipped: [AtomicU64; Skip::ALL.len()],
    errors: AtomicU64,
    /// Per bucket (not cumulative), then the overflow.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    /// The sum of the latencies, in nanoseconds.
    sum_nanos: AtomicU64,
}

impl Metrics {
    /// Counts one review.
    pub(crate) fn record(&self, outcome: Outcome, took: Duration) {
        match outcome {
            Outcome::Injected => &self.injected,
            Outcome::RuleAdded => &self.rule_added,
            Outcome::Skipped(why) => {
                &self.skipped[Skip::ALL.iter().position(|s| *s == why).unwrap_or(0)]
            }
            Outcome::Error => &self.errors,
        }
        .fetch_add(1, Ordering::Relaxed);
        let seconds = took.as_secs_f64();
        let bucket = BUCKETS
            .iter()
            .position(|b| seconds <= *b)
            .unwrap_or(BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The text exposition format (version 0.0.4).
    pub(crate) fn render(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        let name = "pullcheck_webhook_admissions_total";
        let _ = writeln!(out, "# HELP {name} Admission reviews answered, by outcome.");
        let _ = writeln!(out, "# TYPE {name} counter");
        let _ = writeln!(
            out,
            "{name}{{outcome=\"injected\"}} {}",
            get(&self.injected)
        );
        let _ = writeln!(
            out,
            "{name}{{outcome=\"rule-added\"}} {}",
            get(&self.rule_added)
        );
        for (skip, count) in Skip::ALL.iter().zip(&self.skipped) {
            let _ = writeln!(
                out,
                "{name}{{outcome=\"skipped\",reason=\"{}\"}} {}",
                skip.as_str(),
                get(count)
            );
        }
        let _ = writeln!(out, "{name}{{outcome=\"error\"}} {}", get(&self.errors));
        let name = "pullcheck_webhook_admission_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from a review's request to its answer."
        );
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(&self.buckets) {
            cumulative += get(count);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        cumulative += get(&self.buckets[BUCKETS.len()]);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let sum = get(&self.sum_nanos) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {cumulative}");
        out
    }
}
