//! The termination message: what `kubectl describe pod` and the pod status show, and where
//! most users read pullcheck's verdict.
//!
//! The kubelet keeps the last 4096 bytes of the file, and cuts each container's message to
//! the first 12288 / (containers + initContainers) bytes of the pod's 12 KiB
//! ([`termination_limit`]), so the message is small by design and never longer than the
//! kubelet keeps: a first line that stands alone (the summary: the run's status), then one line
//! per failing image, most important first. Each line holds, in this order, the image as given,
//! its reason (which names its status: docs/reference/reasons.md; with the containers that
//! will not start, for `wont_start`, and the cause when it is not counted, with what would
//! prove it, given once: a hint keeps only its first clause), the "did you mean"
//! suggestions or the platforms the index has, and the first clause of its hint (given once:
//! later images with the same hint leave it out). URLs and
//! details stay in the logs and the JSON. What does not fit is cut at a word boundary, from the
//! end, so what comes first is what is kept; never inside a word unless one word is longer than
//! the line, and never inside an escape; then `… and N more`. Every value is escaped
//! ([`escape`](fn@escape)) before it is measured and cut: one line per image, whatever a registry or a pull
//! secret holds.

use super::{ImageResult, Report};
use crate::escape::{cut, escape};

/// The size pullcheck writes at most, in bytes: well under the kubelet's 4096, and within the
/// per-container share of a pod of up to 12 containers.
pub const TERMINATION_MESSAGE_MAX: usize = 1024;
/// The kubelet's limit per container (it reads the last 4096 bytes of the file).
pub const KUBELET_CONTAINER_MAX: usize = 4096;
/// The kubelet's limit for all the termination messages of a pod, shared equally.
pub const KUBELET_POD_MAX: usize = 12 * 1024;

/// The most the message may hold for a pod of `containers` containers (init, sidecar and app,
/// pullcheck included), so that the kubelet never cuts it: the smallest of
/// [`TERMINATION_MESSAGE_MAX`], the kubelet's 4096, and the pod's share. Unknown: as for a pod
/// of one container.
pub fn termination_limit(containers: Option<usize>) -> usize {
    let share = KUBELET_POD_MAX / containers.unwrap_or(1).max(1);
    TERMINATION_MESSAGE_MAX
        .min(KUBELET_CONTAINER_MAX)
        .min(share)
}

/// Builds the termination message, at most `max` bytes long.
pub fn termination_message(report: &Report, max: usize) -> String {
    let mut out = cut(&escape(&report.summary()), max);
    let problems: Vec<_> = report
        .by_severity()
        .into_iter()
        .filter(|r| !r.is_ok())
        .collect();
    let mut hints_given: Vec<&str> = Vec::new();
    let mut proofs_given: Vec<&str> = Vec::new();
    for (i, r) in problems.iter().enumerate() {
        let hint = first_clause(&r.hint);
        let repeat = hints_given.contains(&hint);
        // What would prove a failure that does not count, said once too.
        let proof = match r.counted {
            super::Counted::No(why) => why.to_prove().filter(|p| !proofs_given.contains(p)),
            super::Counted::Yes => None,
        };
        let line = short_line(r, if repeat { "" } else { hint }, proof);
        let left = problems.len() - i - 1;
        // Keep room for the "… and N more" line unless this is the last problem.
        let reserve = if left == 0 { 0 } else { more_line(left).len() };
        if out.len() + line.len() + reserve <= max {
            out.push_str(&line);
            if !repeat {
                hints_given.push(hint);
            }
            proofs_given.extend(proof);
            continue;
        }
        // This line does not fit whole: keep its first words if a useful part fits (its
        // status, image and reason come first), then say how many are left out.
        let rest = problems.len() - i;
        let tail = more_line(rest - 1);
        let room = max.saturating_sub(out.len() + if rest > 1 { tail.len() } else { 0 });
        if room >= 40 {
            out.push_str(&cut(&line, room));
            if rest > 1 {
                out.push_str(&tail);
            }
        } else if out.len() + more_line(rest).len() <= max {
            out.push_str(&more_line(rest));
        }
        break;
    }
    out
}

/// `\nIMAGE: tag_missing; did you mean v2? — HINT`, every value escaped; a failure that does
/// not count says why, and `proof`, what would prove it.
fn short_line(r: &ImageResult, hint: &str, proof: Option<&str>) -> String {
    let mut line = format!("\n{}: {}", escape(&r.image), r.reason);
    if let super::Counted::No(why) = r.counted {
        match proof {
            Some(proof) => line.push_str(&format!(" (not counted: {}; {proof})", why.because())),
            None => line.push_str(&format!(" (not counted: {})", why.because())),
        }
    }
    // A container that will not start is named: the image alone does not say which to fix.
    let refused: Vec<String> = r
        .containers
        .iter()
        .filter(|c| c.start == super::StartStatus::WontStart)
        .map(|c| format!("\"{}\"", escape(&c.name)))
        .collect();
    if !refused.is_empty() {
        line.push_str(&format!(" (container {})", refused.join(", ")));
    }
    if !r.suggestions.is_empty() {
        let names: Vec<_> = r.suggestions.iter().map(|s| escape(s)).collect();
        line.push_str(&format!("; did you mean {}?", names.join(", ")));
    } else if !r.available_platforms.is_empty() {
        let names: Vec<_> = r.available_platforms.iter().map(|s| escape(s)).collect();
        line.push_str(&format!("; available: {}", names.join(", ")));
    } else if !r.existing_tags.is_empty() {
        let names: Vec<_> = r.existing_tags.iter().map(|s| escape(s)).collect();
        line.push_str(&format!("; it has {}", names.join(", ")));
    }
    if !hint.is_empty() {
        line.push_str(" — ");
        line.push_str(&escape(hint));
    }
    line
}

/// The hint up to its first `; ` or sentence end: what to do first. A `. ` or `; ` inside
/// parentheses or a code span (`(e.g. docker buildx …)`) ends nothing, nor does one after an
/// abbreviation (`e.g.`, `i.e.`).
fn first_clause(hint: &str) -> &str {
    let mut depth = 0i32;
    let mut code = false;
    let bytes = hint.as_bytes();
    let mut end = hint.len();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' if !code => depth += 1,
            b')' if !code => depth -= 1,
            b'`' => code = !code,
            b';' | b'.' if depth <= 0 && !code && bytes.get(i + 1) == Some(&b' ') => {
                let word = hint[..i].rsplit(' ').next().unwrap_or_default();
                if b == b'.' && matches!(word, "e.g" | "i.e" | "etc" | "vs") {
                    continue;
                }
                end = i;
                break;
            }
            _ => {}
        }
    }
    hint[..end].trim_end_matches('.')
}

fn more_line(n: usize) -> String {
    format!("\n… and {n} more")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::result;
    use crate::report::{Reason, StartReason, Status};

    #[test]
    fn all_well_is_one_line() {
        let report = Report::new(vec![result("a", Status::Ok)]);
        assert_eq!(
            termination_message(&report, 1024),
            "pullcheck: the 1 image can be pulled"
        );
    }

    #[test]
    fn one_line_per_failure_most_important_first() {
        let report = Report::new(vec![
            result("a", Status::Unreachable),
            result("b", Status::NotFound),
            result("c", Status::Ok),
        ]);
        let msg = termination_message(&report, 1024);
        let lines: Vec<_> = msg.lines().collect();
        assert_eq!(lines[0], "pullcheck: 2 of 3 images cannot be pulled");
        assert!(
            lines[1].starts_with("b: tag_missing — do something"),
            "{msg}"
        );
        assert_eq!(lines[2], "a: connect");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn cut_with_and_n_more_within_the_limit_on_char_boundaries() {
        let images: Vec<_> = (0..100)
            .map(|i| {
                let mut r = result(
                    &format!("image-ünïcödé-{i}-{}", "é".repeat(i % 7 * 10)),
                    Status::NotFound,
                );
                r.hint = format!("✗ {}", "é".repeat(i % 5 * 10));
                r
            })
            .collect();
        let report = Report::new(images);
        for max in [100, 200, 333, 1024, 4096] {
            let msg = termination_message(&report, max);
            assert!(msg.len() <= max, "{max}: {} bytes", msg.len());
            assert!(msg.starts_with("pullcheck: 100 of 100"), "{msg}");
            assert!(msg.contains("more"), "{max}: {msg}");
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        let mut r = result("a", Status::Unauthorized);
        r.message = "user x\nok: all fine\u{1b}]0;t\u{7}".into();
        let msg = termination_message(&Report::new(vec![r]), 1024);
        assert_eq!(msg.lines().count(), 2, "{msg}");
        assert!(!msg.chars().any(|c| c.is_control() && c != '\n'), "{msg:?}");
    }

    #[test]
    fn a_single_huge_message_is_shortened() {
        let mut r = result(&"x".repeat(5000), Status::NotFound);
        r.message = "x".repeat(5000);
        let report = Report::new(vec![r]);
        let msg = termination_message(&report, 1024);
        assert!(msg.len() <= 1024);
        assert!(msg.ends_with('…'));
    }

    #[test]
    fn image_reason_and_first_clause_of_the_hint_given_once_without_urls() {
        let mut a = result("reg.io/a:v2", Status::NotFound);
        let mut b = result("reg.io/b:v2", Status::NotFound);
        let mut c = result("reg.io/c:v1", Status::Unreachable);
        for r in [&mut a, &mut b] {
            r.reason = Reason::TagMissing;
            r.message = "HEAD https://reg.io/v2/x/manifests/v2 answered 404".into();
            r.hint = "Check the tag for a typo, or push the image; list the tags with `crane ls`."
                .into();
        }
        c.reason = Reason::Connect;
        c.hint = "Check the host name. It must resolve.".into();
        let report = Report::new(vec![a, b, c]);
        let msg = termination_message(&report, 1024);
        assert_eq!(
            msg,
            "pullcheck: 3 of 3 images cannot be pulled\n\
             reg.io/a:v2: tag_missing — Check the tag for a typo, or push the image\n\
             reg.io/b:v2: tag_missing\n\
             reg.io/c:v1: connect — Check the host name"
        );
    }

    #[test]
    fn a_miss_the_node_may_hold_says_what_would_prove_it_once() {
        use crate::report::{Counted, NotCounted};
        let mut a = result("reg.io/a:v1", Status::NotFound);
        let mut b = result("reg.io/b:v1", Status::NotFound);
        for r in [&mut a, &mut b] {
            r.reason = Reason::RepositoryMissing;
            r.counted = Counted::No(NotCounted::MayBeOnNode);
            r.hint = "If the image should exist, push it or fix its tag; if the node holds it, \
                      nothing to do."
                .into();
        }
        let msg = termination_message(&Report::new(vec![a, b]), 1024);
        let lines: Vec<&str> = msg.lines().collect();
        assert_eq!(
            lines[1],
            "reg.io/a:v1: repository_missing (not counted: IfNotPresent, and nothing proves the \
             node lacks it; to prove it: get on nodes (examples/node-images-rbac.yaml), or the \
             stuck-pod controller, pullcheck watch) — If the image should exist, push it or fix \
             its tag"
        );
        assert_eq!(
            lines[2],
            "reg.io/b:v1: repository_missing (not counted: IfNotPresent, and nothing proves the \
             node lacks it)"
        );
    }

    /// One result of each failure kind, with the words each would carry.
    fn every_kind() -> Vec<ImageResult> {
        use crate::report::{ContainerStart, Counted, NotCounted, StartStatus};
        let mut missing = result("registry.example.com/team/app:v2", Status::NotFound);
        missing.reason = Reason::TagMissing;
        missing.suggestions = vec!["v2.0".into(), "v2.1".into(), "v1.9".into()];
        missing.hint = "Check the tag or digest for a typo, or push the image; list the tags with `skopeo list-tags` or `crane ls`.".into();
        let mut platform = result(
            "registry.example.com/team/arm-only:v1",
            Status::WrongPlatform,
        );
        platform.reason = Reason::NoMatchingPlatform;
        platform.available_platforms = vec!["linux/arm64/v8".into(), "linux/s390x".into()];
        platform.hint = "Build and push the image for this platform (e.g. `docker buildx build --platform`), or run the pod on nodes of an available platform (nodeSelector kubernetes.io/arch).".into();
        let mut invalid = result("bad\u{1b}[31mname\nok: fine", Status::InvalidReference);
        invalid.reason = Reason::InvalidReference;
        invalid.hint = "Fix the image reference: lower-case repository, valid tag (up to 128 characters) or digest (sha256:<64 hex>).".into();
        let mut refused = result("quay.io/org/private:v1", Status::Unauthorized);
        refused.reason = Reason::NoCredentials;
        refused.hint = "None of the credential sources read has a key for quay.io: add an entry for quay.io to the pull secret, or mount the pull secret that has one (see the warnings on stderr).".into();
        let mut denied = result("quay.io/org/denied:v1", Status::Denied);
        denied.reason = Reason::Denied;
        let mut unreachable = result("registry.example.com:5000/team/app:v1", Status::Unreachable);
        unreachable.reason = Reason::Connect;
        let mut warned = result(
            "registry.example.com:5000/team/warn:v1",
            Status::Unreachable,
        );
        warned.reason = Reason::Timeout;
        warned.counted = Counted::No(NotCounted::OnUnreachableWarn);
        let mut unverifiable = result("registry.local:5000/team/app:v1", Status::Unverifiable);
        unverifiable.reason = Reason::PlainHttp;
        unverifiable.hint = "Add --plain-http registry.local:5000; the node pulls it only if its runtime is told so too.".into();
        let mut wont = result("registry.example.com/team/root:v1", Status::WontStart);
        wont.reason = Reason::RunsAsRoot;
        wont.containers = vec![ContainerStart {
            name: "trainer\u{202e}x".into(),
            start: StartStatus::WontStart,
            reason: StartReason::WontStart(Reason::RunsAsRoot),
            message: "m".into(),
            hint: "h".into(),
        }];
        wont.hint = "Set runAsUser: 1000 in the container's securityContext, or build the image with a numeric non-root USER.".into();
        vec![
            missing,
            platform,
            invalid,
            refused,
            denied,
            unreachable,
            warned,
            unverifiable,
            wont,
        ]
    }

    /// Whether `cut` (a line, or a line ending with `…`) ends where `full` has a boundary:
    /// the end of `full`, or before a space, never inside a word or an escape.
    fn ends_at_a_boundary(cut: &str, full: &str) -> bool {
        let Some(kept) = cut.strip_suffix('…') else {
            return cut == full;
        };
        full.starts_with(kept)
            && (full[kept.len()..].starts_with(char::is_whitespace)
                || full[kept.len()..].starts_with([',', ';', ':', '?']))
    }

    #[test]
    fn every_kind_at_the_kubelets_limits_keeps_status_image_reason_detail_hint_in_order() {
        // The status is the first line (the summary), then each image's line.
        // The kubelet's limits: 4096 per container, 12288 shared by the pod's containers
        // (2, 13, 50, 100, 300 containers), and pullcheck's own 1024.
        let limits: Vec<usize> = [1, 2, 3, 13, 50, 100, 300]
            .iter()
            .map(|n| termination_limit(Some(*n)))
            .collect();
        assert_eq!(limits, [1024, 1024, 1024, 945, 245, 122, 40]);
        assert_eq!(termination_limit(None), 1024);
        for r in every_kind() {
            let full = short_line(&r, first_clause(&r.hint), None);
            let full = full.trim_start_matches('\n');
            let image = full.find(&*escape(&r.image)).unwrap();
            let reason = full[image..].find(r.reason.as_str()).unwrap() + image;
            assert_eq!(image, 0, "{full}");
            let detail = full
                .find("did you mean")
                .or_else(|| full.find("available:"));
            let hint = full.find(" — ");
            if let (Some(d), Some(h)) = (detail, hint) {
                assert!(reason < d && d < h, "{full}");
            }
            for &max in &limits {
                let report = Report::new(vec![r.clone()]);
                let msg = termination_message(&report, max);
                assert!(msg.len() <= max, "{max}: {} bytes: {msg}", msg.len());
                assert!(!msg.chars().any(|c| c.is_control() && c != '\n'), "{msg:?}");
                let mut lines = msg.lines();
                let summary = lines.next().unwrap();
                assert!(
                    ends_at_a_boundary(summary, &escape(&report.summary())),
                    "{max}: {summary}"
                );
                if let Some(line) = lines.next().filter(|l| !l.starts_with("… and ")) {
                    assert!(
                        ends_at_a_boundary(line, full),
                        "{max}: {line:?} of {full:?}"
                    );
                    // What is kept comes first: the image is there whenever the line is.
                    let shown = escape(&r.image);
                    assert!(
                        line.starts_with(&*shown) || shown.starts_with(line.trim_end_matches('…')),
                        "{line}"
                    );
                }
                if max >= 245 {
                    // Room enough for status, image and reason.
                    assert!(msg.contains(r.reason.as_str()), "{max}: {msg}");
                }
                if max >= 1024 {
                    // And for the suggestions or the platforms, and the hint's first clause.
                    assert!(msg.ends_with(full), "{max}: {msg}");
                }
            }
        }
        // Several failures in a pod of 13 containers: whole lines, or a line cut at a word,
        // then "… and N more".
        let report = Report::new(every_kind());
        let max = termination_limit(Some(13));
        let msg = termination_message(&report, max);
        assert!(msg.len() <= max, "{}", msg.len());
        assert!(msg.lines().last().unwrap().starts_with("… and "), "{msg}");
        assert!(msg.contains("did you mean v2.0, v2.1, v1.9?"), "{msg}");
        assert!(
            msg.contains("available: linux/arm64/v8, linux/s390x"),
            "{msg}"
        );
    }

    #[test]
    fn first_clauses() {
        let cases = [
            ("Do this; then that.", "Do this"),
            ("Do this. Then that.", "Do this"),
            (
                "Renew it: the secret expired.",
                "Renew it: the secret expired",
            ),
            ("", ""),
            // The cut the issue saw: "(e.g" is not a sentence end.
            (
                "Build and push the image for this platform (e.g. `docker buildx build --platform`), or run the pod on nodes of an available platform (nodeSelector kubernetes.io/arch).",
                "Build and push the image for this platform (e.g. `docker buildx build --platform`), or run the pod on nodes of an available platform (nodeSelector kubernetes.io/arch)",
            ),
            ("Use a tag, e.g. v1. Then push.", "Use a tag, e.g. v1"),
            ("Run `a; b` first; then c.", "Run `a; b` first"),
        ];
        for (hint, want) in cases {
            assert_eq!(first_clause(hint), want, "{hint:?}");
        }
    }

    #[test]
    fn control_characters_stay_on_one_line() {
        let r = result("bad\nname", Status::InvalidReference);
        let msg = termination_message(&Report::new(vec![r]), 1024);
        assert_eq!(msg.lines().count(), 2, "{msg}");
        assert!(msg.contains("bad\\nname"), "{msg}");
    }
}
