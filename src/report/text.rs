//! The human report: one line per image, problems first, each problem with a hint. Every value
//! is escaped here ([`escape`]): a line of this report is one line, whatever a registry or a
//! pull secret holds.

use super::{ImageResult, Reason, Report, escape};
use std::fmt::Write;

/// Renders the report for a person. With `quiet`, images that are fine are left out, and so is
/// the summary when every image is fine.
pub fn render_text(report: &Report, quiet: bool) -> String {
    let mut out = String::new();
    for r in report.by_severity() {
        if quiet && r.is_ok() {
            continue;
        }
        line(&mut out, r);
    }
    if !(quiet && report.failures().next().is_none()) {
        out.push_str(&report.summary());
        out.push('\n');
    }
    out
}

fn line(out: &mut String, r: &ImageResult) {
    let status = if r.fatal() || r.is_ok() {
        r.status.as_str().to_string()
    } else {
        format!("{} (warning)", r.status.as_str())
    };
    // Writing to a String cannot fail.
    if r.is_ok() {
        let digest = match (r.reason, r.digest.as_deref()) {
            (Reason::PresentOnNode, _) => "(on the node; its registry was not asked)",
            (_, Some(digest)) => digest,
            (_, None) => "(no valid digest reported)",
        };
        let _ = write!(
            out,
            "{status:<17} {} {}",
            escape(&r.reference),
            escape(digest)
        );
        if let (Some(_), Some(endpoint)) = (&r.mirror_of, &r.endpoint) {
            let _ = write!(out, " via {}", escape(endpoint));
        }
        if r.plain_http {
            out.push_str(" (plain HTTP)");
        }
        if let Some(why) = r.platform_note {
            let _ = write!(out, " platform not checked ({why})");
        }
        out.push('\n');
    } else {
        let _ = write!(out, "{status:<17} {}", escape(&r.message));
        if !r.hint.is_empty() {
            let _ = write!(out, " Hint: {}", escape(&r.hint));
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;
    use crate::report::tests::result;

    #[test]
    fn problems_first_with_hints_and_a_summary() {
        let mut ok = result("a", Status::Ok);
        ok.digest = Some("sha256:ab".into());
        let report = Report::new(vec![ok, result("b", Status::NotFound)]);
        let text = render_text(&report, false);
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("not_found "), "{text}");
        assert!(lines[0].contains("Hint: do something"), "{text}");
        assert!(lines[1].starts_with("ok "), "{text}");
        assert!(lines[1].ends_with("sha256:ab"), "{text}");
        assert_eq!(lines[2], "pullcheck: 1 of 2 images cannot be pulled");
    }

    #[test]
    fn an_image_on_the_node_says_so() {
        let mut r = result("a", Status::Ok);
        r.reason = Reason::PresentOnNode;
        let text = render_text(&Report::new(vec![r]), false);
        assert!(
            text.starts_with(
                "ok                docker.io/library/a (on the node; its registry was not asked)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_value_with_a_newline_cannot_forge_a_line() {
        let mut r = result("a", Status::Unauthorized);
        r.message =
            "credentials for user x\nok                docker.io/evil:1 sha256:0\u{1b}[2K".into();
        let text = render_text(&Report::new(vec![r]), false);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains('\u{1b}'), "{text:?}");
        assert!(text.contains("x\\nok"), "{text}");
    }

    #[test]
    fn quiet_prints_nothing_when_all_is_well() {
        let report = Report::new(vec![result("a", Status::Ok)]);
        assert_eq!(render_text(&report, true), "");
        let report = Report::new(vec![result("a", Status::Ok), result("b", Status::Denied)]);
        let text = render_text(&report, true);
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}
