//! The webhook's Prometheus metrics: admissions by outcome (`--audit`'s by what it would
//! have done), the verdicts at admission ([`Counts`]), a latency histogram
//! ([`crate::cluster::serve::Histogram`]) and the reads of LimitRanges by where they were answered,
//! written in the text format by hand.

use super::decision::{ReviewOutcome, Skip, Would};
use super::limit_ranges::Source;
use super::verdicts::Counts;
use crate::cluster::serve::{Histogram, family};
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The histogram's upper bounds, in seconds: the webhook aims at well under 10 ms, and the API
/// server gives up at `timeoutSeconds` (2 s at most in the chart).
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Counters, shared by every connection.
#[derive(Debug)]
pub(crate) struct Metrics {
    injected: AtomicU64,
    rule_added: AtomicU64,
    skipped: [AtomicU64; Skip::ALL.len()],
    errors: AtomicU64,
    /// `--deny-missing`'s refusals.
    denied: AtomicU64,
    /// The verdicts at admission, counted where they are made.
    pub(crate) verdicts: Arc<Counts>,
    /// `--audit`'s answers, by what enforcing would have done.
    audited: [AtomicU64; Would::ALL.len()],
    latency: Histogram,
    /// The namespaces' LimitRanges read for reviews, by where.
    limit_range_reads: [AtomicU64; Source::ALL.len()],
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics {
            injected: AtomicU64::default(),
            rule_added: AtomicU64::default(),
            skipped: Default::default(),
            errors: AtomicU64::default(),
            denied: AtomicU64::default(),
            verdicts: Arc::default(),
            audited: Default::default(),
            latency: Histogram::new(BUCKETS),
            limit_range_reads: Default::default(),
        }
    }
}

impl Metrics {
    /// Counts one review.
    pub(crate) fn record(&self, outcome: ReviewOutcome, took: Duration) {
        match outcome {
            ReviewOutcome::Injected => &self.injected,
            ReviewOutcome::RuleAdded => &self.rule_added,
            ReviewOutcome::Skipped(why) => {
                &self.skipped[Skip::ALL.iter().position(|s| *s == why).unwrap_or(0)]
            }
            ReviewOutcome::Error => &self.errors,
            ReviewOutcome::Denied => &self.denied,
            ReviewOutcome::Audited(would) => {
                &self.audited[Would::ALL.iter().position(|w| *w == would).unwrap_or(0)]
            }
        }
        .fetch_add(1, Ordering::Relaxed);
        self.latency.observe(took);
    }

    /// Counts one read of a namespace's LimitRanges.
    pub(crate) fn limit_ranges_read(&self, source: Source) {
        let at = Source::ALL.iter().position(|s| *s == source).unwrap_or(0);
        self.limit_range_reads[at].fetch_add(1, Ordering::Relaxed);
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
        let _ = writeln!(out, "{name}{{outcome=\"denied\"}} {}", get(&self.denied));
        for (would, count) in Would::ALL.iter().zip(&self.audited) {
            let _ = writeln!(
                out,
                "{name}{{outcome=\"audited\",would=\"{}\"}} {}",
                would.as_str(),
                get(count)
            );
        }
        self.latency.write(
            &mut out,
            "pullcheck_webhook_admission_duration_seconds",
            "Time from a review's request to its answer.",
        );
        self.verdicts.write(&mut out);
        family(
            &mut out,
            "pullcheck_webhook_limit_range_reads_total",
            "Namespaces' LimitRanges read for reviews, by source: the store a watch keeps, or a \
             list from the API server.",
            Source::ALL
                .iter()
                .zip(&self.limit_range_reads)
                .map(|(source, count)| (format!("{{source=\"{}\"}}", source.as_str()), get(count))),
        );
        out
    }
}
