//! What a check is doing while it runs, for the person (or pod log) waiting on it: each verdict
//! as it arrives, each retry with its reason and wait, and with `--verbose` each request's
//! method, URL and status. Written to stderr, never stdout (the report's), one line per event.
//!
//! [`Events`] is the one sink: the check and the registry client call it at the points where
//! something happens, and it decides whether and where to write. It never sees a header, a
//! credential or a token: requests are shown by method, URL (user info removed, control
//! characters escaped) and status alone.

use crate::report::ImageResult;
use crate::report::escape;
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
    out: Mutex<Box<dyn Write + Send>>,
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
    pub fn stderr(requests: bool) -> Events {
        Events::to_writer(Box::new(std::io::stderr()), requests)
    }

    /// Verdicts and retries to `out` (a test's buffer); with `requests`, every request too.
    pub fn to_writer(out: Box<dyn Write + Send>, requests: bool) -> Events {
        Events {
            inner: Some(Arc::new(Inner {
                requests,
                out: Mutex::new(out),
            })),
        }
    }

    /// The events a run of the CLI shows: everything with `verbose`; verdicts and retries when
    /// stderr is a terminal (someone is watching); else nothing (a pod's log stays the report).
    pub fn for_cli(verbose: bool) -> Events {
        use std::io::IsTerminal;
        if verbose {
            Events::stderr(true)
        } else if std::io::stderr().is_terminal() {
            Events::stderr(false)
        } else {
            Events::default()
        }
    }

    fn line(&self, text: &str) {
        if let Some(inner) = &self.inner {
            let mut out = inner
                .out
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A closed stderr is no reason to stop checking.
            let _ = writeln!(out, "pullcheck: {}", crate::redact::redact(text));
            let _ = out.flush();
        }
    }

    /// An image's verdict, as soon as it is known.
    pub fn verdict(&self, r: &ImageResult) {
        if self.inner.is_none() {
            return;
        }
        if r.is_ok() {
            let digest = r.digest.as_deref().unwrap_or("digest not reported");
            self.line(&format!(
                "{} {} ({})",
                r.status.as_str(),
                escape(&r.reference),
                escape(digest)
            ));
        } else {
            let status = if r.fatal() {
                r.status.as_str()
            } else {
                "warning"
            };
            self.line(&format!("{status} {}", escape(&r.message)));
        }
    }

    /// A failed attempt that will be tried again after `wait`: `retrying docker.io in 2s:
    /// connect: …`. `reason` is the verdict's reason, `what` what went wrong.
    pub fn retry(&self, registry: &str, attempt: u32, wait: Duration, reason: &str, what: &str) {
        if self.inner.is_none() {
            return;
        }
        self.line(&format!(
            "retrying {} in {} (attempt {attempt} failed): {reason}: {}",
            escape(registry),
            short_duration(wait),
            escape(what)
        ));
    }

    /// Whether requests are shown (`--verbose`).
    pub fn shows_requests(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.requests)
    }

    /// One request sent, and its status or the error that ended it (`--verbose` only).
    pub fn request(&self, method: &str, url: &str, answer: Result<u16, String>) {
        if !self.shows_requests() {
            return;
        }
        let answer = match answer {
            Ok(status) => status.to_string(),
            Err(e) => format!("error: {}", escape(&e)),
        };
        self.line(&format!("{method} {} -> {answer}", escape(&shown_url(url))));
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
        events.request("HEAD", "http://r/v2/a/manifests/v1", Err("reset".into()));
        assert_eq!(
            buf.text(),
            "pullcheck: not_found a: tag \"v2\"\\nnot found\n\
             pullcheck: retrying docker.io in 2s (attempt 1 failed): connect: dns error\n\
             pullcheck: GET https://auth.example/token?scope=repository:a:pull -> 200\n\
             pullcheck: HEAD http://r/v2/a/manifests/v1 -> error: reset\n"
        );
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
