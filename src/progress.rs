//! What a check is doing while it runs, for the person (or pod log) waiting on it: each verdict
//! as it arrives, each retry with its reason and wait, and with `--verbose` each request's
//! method, URL and status. Written to stderr, never stdout (the report's), one line per event.
//!
//! On a terminal the verdicts are a live view: erased ([`Events::finish`]) before the report,
//! which prints every verdict again, is written; the retries stay, since the report does not
//! repeat them. In a pod's log (`--verbose`) every line stays.
//!
//! [`Events`] is the one sink: the check and the registry client call it at the points where
//! something happens, and it decides whether and where to write. It never sees a header, a
//! credential or a token: requests are shown by method, URL (user info removed, control
//! characters escaped) and status alone.

use crate::escape::escape;
use crate::report::ImageResult;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where progress goes; `Events::default()` writes nothing.
#[derive(Clone, Default)]
pub struct Events {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    /// Also each request (`--verbose`).
    requests: bool,
    out: Mutex<Sink>,
}

/// The writer, and on a terminal what it shows that [`Events::finish`] erases.
struct Sink {
    writer: Box<dyn Write + Send>,
    live: Option<Live>,
}

/// The lines written on a terminal since the check began.
struct Live {
    /// The terminal's width, to count the rows a long line wraps onto.
    columns: usize,
    /// The rows written so far.
    rows: usize,
    /// The lines to write again once the rows are erased: the retries, which the report
    /// does not repeat.
    kept: Vec<String>,
}

impl Live {
    /// The rows one line of `chars` characters takes on the terminal.
    fn rows_of(&self, chars: usize) -> usize {
        chars.div_ceil(self.columns.max(1)).max(1)
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            None => f.write_str("Events(off)"),
            Some(i) if i.requests => f.write_str("Events(verdicts, retries, requests)"),
            Some(_) => f.write_str("Events(verdicts, retries)"),
        }
    }
}

impl Events {
    /// Verdicts and retries to stderr; with `requests`, every request too.
    pub(crate) fn stderr(requests: bool) -> Events {
        Events::to_writer(Box::new(std::io::stderr()), requests)
    }

    /// Verdicts and retries to `out` (a test's buffer); with `requests`, every request too.
    pub(crate) fn to_writer(out: Box<dyn Write + Send>, requests: bool) -> Events {
        Events::with(out, requests, None)
    }

    fn with(writer: Box<dyn Write + Send>, requests: bool, live: Option<Live>) -> Events {
        Events {
            inner: Some(Arc::new(Inner {
                requests,
                out: Mutex::new(Sink { writer, live }),
            })),
        }
    }

    /// The events a run of the CLI shows: everything with `verbose`; verdicts and retries when
    /// stderr is a terminal (someone is watching), the verdicts erased before the report; else
    /// nothing (a pod's log stays the report).
    pub(crate) fn for_cli(verbose: bool) -> Events {
        use std::io::IsTerminal;
        let stderr = std::io::stderr();
        if verbose {
            Events::stderr(true)
        } else if stderr.is_terminal() {
            let columns = rustix::termios::tcgetwinsize(&stderr)
                .map(|size| usize::from(size.ws_col))
                .unwrap_or(0);
            Events::for_terminal(Box::new(stderr), columns)
        } else {
            Events::default()
        }
    }

    /// What a terminal of `columns` shows without `--verbose`: verdicts and retries, the
    /// verdicts erased by [`Events::finish`]. A width of 0 (unknown) erases nothing.
    fn for_terminal(out: Box<dyn Write + Send>, columns: usize) -> Events {
        let live = (columns > 0).then_some(Live {
            columns,
            rows: 0,
            kept: Vec::new(),
        });
        Events::with(out, false, live)
    }

    /// Writes one line; `keep` says whether it stays on a terminal once the report comes.
    fn line(&self, text: &str, keep: bool) {
        if let Some(inner) = &self.inner {
            let mut out = inner
                .out
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let line = format!("pullcheck: {}", crate::redact::net(text));
            if let Some(live) = &mut out.live {
                live.rows += live.rows_of(line.chars().count());
                if keep {
                    live.kept.push(line.clone());
                }
            }
            // A closed stderr is no reason to stop checking.
            let _ = writeln!(out.writer, "{line}");
            let _ = out.writer.flush();
        }
    }

    /// Called once the check is done, before the report is written: on a terminal, erases the
    /// verdicts shown while it ran (the report has them all) and writes the retries again.
    pub(crate) fn finish(&self) {
        let Some(inner) = &self.inner else {
            return;
        };
        let mut out = inner
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Sink { writer, live } = &mut *out;
        let Some(live) = live else {
            return;
        };
        if live.rows == 0 {
            return;
        }
        // Up to the first line written, to its start, and clear to the end of the screen.
        let _ = write!(writer, "\x1b[{}A\r\x1b[J", live.rows);
        for line in live.kept.drain(..) {
            let _ = writeln!(writer, "{line}");
        }
        live.rows = 0;
        let _ = writer.flush();
    }

    /// An image's verdict, as soon as it is known.
    pub(crate) fn verdict(&self, r: &ImageResult) {
        if self.inner.is_none() {
            return;
        }
        if r.is_ok() {
            let digest = r.digest.as_deref().unwrap_or("digest not reported");
            self.line(
                &format!(
                    "{} {} ({})",
                    r.status.as_str(),
                    escape(&r.reference),
                    escape(digest)
                ),
                false,
            );
        } else {
            let status = if r.fatal() {
                r.status.as_str()
            } else {
                "warning"
            };
            self.line(&format!("{status} {}", escape(&r.message)), false);
        }
    }

    /// A failed attempt that will be tried again after `wait`: `retrying docker.io in 2s:
    /// connect: …`. `reason` is the verdict's reason, `what` what went wrong.
    pub(crate) fn retry(
        &self,
        registry: &str,
        attempt: u32,
        wait: Duration,
        reason: &str,
        what: &str,
    ) {
        if self.inner.is_none() {
            return;
        }
        self.line(
            &format!(
                "retrying {} in {} (attempt {attempt} failed): {reason}: {}",
                escape(registry),
                short_duration(wait),
                escape(what)
            ),
            true,
        );
    }

    /// Whether requests are shown (`--verbose`).
    pub(crate) fn shows_requests(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.requests)
    }

    /// One request sent, and its status or the error that ended it (`--verbose` only).
    pub(crate) fn request(&self, method: &str, url: &str, answer: Result<u16, &str>) {
        if !self.shows_requests() {
            return;
        }
        let answer = match answer {
            Ok(status) => status.to_string(),
            Err(e) => format!("error: {}", escape(e)),
        };
        self.line(
            &format!("{method} {} -> {answer}", escape(&shown_url(url))),
            false,
        );
    }
}

/// A URL without user info: a realm or redirect could carry some, and it is never ours to show.
fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// `250ms`, `2s`, `1.5s`: a wait as a person reads it.
fn short_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        let s = format!("{:.1}", d.as_secs_f64());
        format!("{}s", s.trim_end_matches(".0"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn verdicts_retries_and_requests_one_line_each() {
        let buf = Buffer::default();
        let events = Events::to_writer(Box::new(buf.clone()), true);
        let mut r = crate::report::tests::result("a", Status::NotFound);
        r.message = "a: tag \"v2\"\nnot found".into();
        events.verdict(&r);
        events.retry(
            "docker.io",
            1,
            Duration::from_millis(2000),
            "connect",
            "dns error",
        );
        events.request(
            "GET",
            "https://user:pw@auth.example/token?scope=repository:a:pull",
            Ok(200),
        );
        events.request("HEAD", "http://r/v2/a/manifests/v1", Err("reset"));
        assert_eq!(
            buf.text(),
            "pullcheck: not_found a: tag \"v2\"\\nnot found\n\
             pullcheck: retrying docker.io in 2s (attempt 1 failed): connect: dns error\n\
             pullcheck: GET https://auth.example/token?scope=repository:a:pull -> 200\n\
             pullcheck: HEAD http://r/v2/a/manifests/v1 -> error: reset\n"
        );
    }

    #[test]
    fn on_a_terminal_verdicts_are_erased_before_the_report_and_retries_stay() {
        let buf = Buffer::default();
        // A terminal 40 columns wide.
        let events = Events::for_terminal(Box::new(buf.clone()), 40);
        let mut found = crate::report::tests::result("a", Status::Ok);
        found.reference = "found.example/app:v1".into();
        found.digest = Some(format!("sha256:{}", "0".repeat(64)));
        events.verdict(&found);
        events.retry(
            "retried.example",
            1,
            Duration::from_millis(250),
            "server_error",
            "answered 503",
        );
        events.request("HEAD", "http://r/v2/b/manifests/v1", Ok(503));
        let retry = "pullcheck: retrying retried.example in 250ms (attempt 1 failed): server_error: answered 503";
        let verdict = format!(
            "pullcheck: ok found.example/app:v1 (sha256:{})",
            "0".repeat(64)
        );
        assert_eq!(buf.text(), format!("{verdict}\n{retry}\n"));
        // 113 and 90 characters on 40 columns: 3 rows each.
        events.finish();
        assert_eq!(
            buf.text(),
            format!("{verdict}\n{retry}\n\x1b[6A\r\x1b[J{retry}\n")
        );
        // Nothing more to erase.
        events.finish();
        assert!(buf.text().ends_with(&format!("{retry}\n")));
    }

    #[test]
    fn elsewhere_finish_erases_nothing() {
        let buf = Buffer::default();
        let events = Events::to_writer(Box::new(buf.clone()), false);
        events.verdict(&crate::report::tests::result("a", Status::NotFound));
        let before = buf.text();
        events.finish();
        assert_eq!(buf.text(), before);
        Events::default().finish();
    }

    #[test]
    fn without_verbose_requests_are_not_shown() {
        let buf = Buffer::default();
        let events = Events::to_writer(Box::new(buf.clone()), false);
        events.request("GET", "http://r/v2/", Ok(200));
        assert_eq!(buf.text(), "");
        Events::default().request("GET", "http://r/v2/", Ok(200));
    }

    #[test]
    fn waits_read_as_people_write_them() {
        let cases = [(250, "250ms"), (1000, "1s"), (1500, "1.5s"), (8000, "8s")];
        for (ms, want) in cases {
            assert_eq!(short_duration(Duration::from_millis(ms)), want);
        }
    }
}
