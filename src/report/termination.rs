//! The termination message: what `kubectl describe pod` and the pod status show.
//!
//! The kubelet keeps at most 4096 bytes per container and 12 KiB per pod, shared by all its
//! containers, so the message is small by design: a first line that stands alone, then one line
//! per failing image, most important first: its short reason, the image as given (with the
//! containers that will not start, for `wont_start`) and the first clause of its hint (given
//! once: later images with the same hint leave it out). URLs and details stay in the logs and
//! the JSON. Cut with `… and N more` (never inside a character). Every value is escaped
//! ([`escape`]) before it is measured and cut: one line per image, whatever a registry or a
//! pull secret holds.

use super::{ImageResult, Report, escape};

/// The default size limit, in bytes.
pub const TERMINATION_MESSAGE_MAX: usize = 1024;

/// Builds the termination message, at most `max` bytes long.
pub fn termination_message(report: &Report, max: usize) -> String {
    let mut out = cut(&report.summary(), max);
    let problems: Vec<_> = report.images.iter().filter(|r| !r.is_ok()).collect();
    let mut hints_given: Vec<&str> = Vec::new();
    for (i, r) in problems.iter().enumerate() {
        let hint = first_clause(&r.hint);
        let repeat = hints_given.contains(&hint);
        let line = short_line(r, if repeat { "" } else { hint });
        let left = problems.len() - i - 1;
        // Keep room for the "… and N more" line unless this is the last problem.
        let reserve = if left == 0 { 0 } else { more_line(left).len() };
        if out.len() + line.len() + reserve <= max {
            out.push_str(&line);
            if !repeat {
                hints_given.push(hint);
            }
            continue;
        }
        // This line does not fit whole: shorten it if a useful part fits, then say how many
        // are left out.
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

/// `\ntag_missing: IMAGE — HINT`: the reason names the status too (README, "Statuses and
/// reasons"), and a result that does not count says so.
fn short_line(r: &ImageResult, hint: &str) -> String {
    let counted = match r.counted {
        super::Counted::Yes => String::new(),
        super::Counted::No(why) => format!(" (not counted: {})", why.because()),
    };
    let mut line = format!("\n{}{counted}: {}", r.reason, escape(&r.image));
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
    if !hint.is_empty() {
        line.push_str(" — ");
        line.push_str(&escape(hint));
    }
    line
}

/// The hint up to its first `;` or sentence end: what to do first.
fn first_clause(hint: &str) -> &str {
    let end = [hint.find("; "), hint.find(". ")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(hint.len());
    hint[..end].trim_end_matches('.')
}

fn more_line(n: usize) -> String {
    format!("\n… and {n} more")
}

/// Cuts `s` to at most `max` bytes on a character boundary, ending with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let ellipsis = "…";
    let mut end = max.saturating_sub(ellipsis.len());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ellipsis}", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;
    use crate::report::tests::result;

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
        assert!(lines[1].starts_with("test: b — do something"), "{msg}");
        assert_eq!(lines[2], "test: a");
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
            r.reason = "tag_missing";
            r.message = "HEAD https://reg.io/v2/x/manifests/v2 answered 404".into();
            r.hint = "Check the tag for a typo, or push the image; list the tags with `crane ls`."
                .into();
        }
        c.reason = "connect";
        c.hint = "Check the host name. It must resolve.".into();
        let report = Report::new(vec![a, b, c]);
        let msg = termination_message(&report, 1024);
        assert_eq!(
            msg,
            "pullcheck: 3 of 3 images cannot be pulled\n\
             tag_missing: reg.io/a:v2 — Check the tag for a typo, or push the image\n\
             tag_missing: reg.io/b:v2\n\
             connect: reg.io/c:v1 — Check the host name"
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
