//! The human report: one line per image, problems first, each problem with a hint. Every value
//! is escaped here ([`escape`](fn@escape)): a line of this report is one line, whatever a registry or a
//! pull secret holds.

use super::{ImageResult, Reason, Report};
use crate::escape::escape;
use std::fmt::Write;

/// How the text report is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One line per image, its hint at the end of it: for logs and programs that read lines.
    #[default]
    Lines,
    /// For a person at a terminal: a problem's hint on a line of its own, under its message.
    Terminal,
}

/// The width of the status column: the longest status, `invalid_reference (warning)`, fits.
const STATUS_WIDTH: usize = 17;

/// Renders the report for a person. With `quiet`, images that are fine are left out, and so is
/// the summary when every image is fine.
pub fn render_text(report: &Report, quiet: bool, layout: Layout) -> String {
    let mut out = String::new();
    let mut platform_notes = PlatformNotes::default();
    for r in report.by_severity() {
        if quiet && r.is_ok() {
            continue;
        }
        line(&mut out, r, layout, &mut platform_notes);
    }
    platform_notes.finish(&mut out);
    if !(quiet && report.failures().next().is_none()) {
        out.push_str(&report.summary());
        out.push('\n');
    }
    out
}

/// "platform not checked (why)" is said once per run for each reason: on the first `ok` line
/// it applies to, then counted for the others.
#[derive(Default)]
struct PlatformNotes {
    /// Each reason in the order first seen, and how many more `ok` lines it applied to.
    seen: Vec<(&'static str, usize)>,
}

impl PlatformNotes {
    /// Whether this is the first `ok` line with `why` (which then carries the remark).
    fn first(&mut self, why: &'static str) -> bool {
        match self.seen.iter_mut().find(|(w, _)| *w == why) {
            Some((_, more)) => {
                *more += 1;
                false
            }
            None => {
                self.seen.push((why, 0));
                true
            }
        }
    }

    /// One line per reason that applied to more images than the one that carried it.
    fn finish(&self, out: &mut String) {
        for (why, more) in &self.seen {
            if *more > 0 {
                let images = if *more == 1 { "image" } else { "images" };
                let _ = writeln!(
                    out,
                    "{:STATUS_WIDTH$} platform not checked for {more} more {images} either ({why})",
                    ""
                );
            }
        }
    }
}

fn line(out: &mut String, r: &ImageResult, layout: Layout, notes: &mut PlatformNotes) {
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
            "{status:<STATUS_WIDTH$} {} {}",
            escape(&r.reference),
            escape(digest)
        );
        if let (Some(_), Some(endpoint)) = (&r.mirror_of, &r.endpoint) {
            let _ = write!(out, " via {}", escape(endpoint));
        }
        if r.plain_http {
            out.push_str(" (plain HTTP)");
        }
        // Asked although the node holds it: its kubelet re-verifies credentials (1.35+).
        if r.reason != Reason::PresentOnNode
            && r.present_on_node == Some(true)
            && r.pull_policy == crate::pull_policy::PullPolicy::IfNotPresent
        {
            out.push_str(" (on the node; its registry serves it to this pod's credentials)");
        }
        if let Some(why) = r.platform_note {
            if notes.first(why) {
                let _ = write!(out, " platform not checked ({why})");
            }
        }
        out.push('\n');
    } else {
        let _ = write!(out, "{status:<STATUS_WIDTH$} {}", escape(&r.message));
        if !r.hint.is_empty() {
            match layout {
                Layout::Lines => {
                    let _ = write!(out, " Hint: {}", escape(&r.hint));
                }
                Layout::Terminal => {
                    let _ = write!(out, "\n{:STATUS_WIDTH$} Hint: {}", "", escape(&r.hint));
                }
            }
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
        let text = render_text(&report, false, Layout::Lines);
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
        let text = render_text(&Report::new(vec![r]), false, Layout::Lines);
        assert!(
            text.starts_with(
                "ok                docker.io/library/a (on the node; its registry was not asked)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_image_on_a_node_that_re_verifies_says_its_registry_confirmed_it() {
        let mut r = result("a", Status::Ok);
        r.digest = Some("sha256:ab".into());
        r.present_on_node = Some(true);
        r.pull_policy = crate::pull_policy::PullPolicy::IfNotPresent;
        let text = render_text(&Report::new(vec![r.clone()]), false, Layout::Lines);
        assert!(
            text.starts_with(
                "ok                docker.io/library/a sha256:ab (on the node; its registry serves it to this pod's credentials)\n"
            ),
            "{text}"
        );
        // Always: the kubelet pulls it whatever the node holds; nothing to say.
        r.pull_policy = crate::pull_policy::PullPolicy::Always;
        let text = render_text(&Report::new(vec![r]), false, Layout::Lines);
        assert!(
            text.starts_with("ok                docker.io/library/a sha256:ab\n"),
            "{text}"
        );
    }

    #[test]
    fn a_value_with_a_newline_cannot_forge_a_line() {
        let mut r = result("a", Status::Unauthorized);
        r.message =
            "credentials for user x\nok                docker.io/evil:1 sha256:0\u{1b}[2K".into();
        let text = render_text(&Report::new(vec![r]), false, Layout::Lines);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains('\u{1b}'), "{text:?}");
        assert!(text.contains("x\\nok"), "{text}");
    }

    #[test]
    fn quiet_prints_nothing_when_all_is_well() {
        let report = Report::new(vec![result("a", Status::Ok)]);
        assert_eq!(render_text(&report, true, Layout::Lines), "");
        let report = Report::new(vec![result("a", Status::Ok), result("b", Status::Denied)]);
        let text = render_text(&report, true, Layout::Lines);
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    #[test]
    fn on_a_terminal_the_hint_has_a_line_of_its_own() {
        let report = Report::new(vec![result("b", Status::NotFound)]);
        let text = render_text(&report, false, Layout::Terminal);
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("not_found "), "{text}");
        assert!(!lines[0].contains("Hint:"), "{text}");
        assert_eq!(lines[1].trim_start(), "Hint: do something", "{text}");
        assert_eq!(lines[1].find("Hint"), Some(STATUS_WIDTH + 1), "{text}");
        // Elsewhere the hint stays at the end of its line.
        let text = render_text(&report, false, Layout::Lines);
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    #[test]
    fn platform_not_checked_is_said_once_per_run() {
        let unchecked = |name: &str| {
            let mut r = result(name, Status::Ok);
            r.digest = Some("sha256:ab".into());
            r.platform_note = Some("single manifest; --platform-check full checks it");
            r
        };
        let report = Report::new(vec![unchecked("a"), unchecked("b"), unchecked("c")]);
        let text = render_text(&report, false, Layout::Lines);
        assert_eq!(text.matches("platform not checked").count(), 2, "{text}");
        let lines: Vec<_> = text.lines().collect();
        assert!(
            lines[0].ends_with(
                "platform not checked (single manifest; --platform-check full checks it)"
            ),
            "{text}"
        );
        assert!(lines[1].ends_with("sha256:ab"), "{text}");
        assert_eq!(
            lines[3].trim_start(),
            "platform not checked for 2 more images either (single manifest; --platform-check full checks it)"
        );
        assert!(lines[4].starts_with("pullcheck: "), "{text}");
    }
}
