//! Redaction by value: every secret the run holds (passwords, tokens, keys, plugin and cloud
//! credentials, a hosts.toml header's value, the service-account token) is registered here when
//! it is read, and every writer of output (the report as text or JSON, stderr, `--verbose`,
//! the termination message) passes its text through [`redact`] last.
//!
//! Secrets are kept out of messages by construction (`Secret`'s `Debug`, no header ever shown);
//! this is the net under that: a server's error answer that quotes what it was sent, a JSON
//! error that echoes a token, would otherwise show it. A secret is replaced by `<redacted>`
//! whole, and so is any prefix of 16 characters or more of it (messages cut long answers).
//! Each is also matched in the forms the writers give it: escaped for a terminal
//! ([`crate::escape::escape`]), `escape_default`, and as a JSON string's content.
//!
//! A secret shorter than [`MIN_SECRET`] characters (a short password) would match ordinary
//! words anywhere, so it is replaced only where it stands as a whole token: not preceded or
//! followed by a letter or digit (`password pw1!`, `"pw1"`, `user:pw1`, but not `pw12` nor
//! `apw1`). That is where a value is shown; inside a longer word it is no echo of the secret.

use aho_corasick::{AhoCorasick, MatchKind};
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, RwLock};

/// The shortest secret matched anywhere; a shorter one is matched only as a whole token.
pub(crate) const MIN_SECRET: usize = 8;
/// A prefix of this many characters of a secret (or more) is redacted like the whole.
pub(crate) const MIN_PREFIX: usize = 16;
/// What a secret becomes.
pub(crate) const REDACTED: &str = "<redacted>";
/// The most forms of secrets kept (each secret has up to four). Secrets are registered when
/// they are used, not when a pull secret is read: a run holds tens.
const MAX_FORMS: usize = 16_384;

#[derive(Default)]
struct Known {
    forms: HashSet<String>,
    /// The matcher over `forms`, rebuilt on the first redaction after a change.
    matcher: Option<Arc<Matcher>>,
}

/// Every form of at least [`MIN_SECRET`] characters, and one automaton over their heads (a
/// form whole, else its first 16 characters): one pass over a text finds them all. The
/// shorter forms, matched as whole tokens only, have an automaton of their own.
struct Matcher {
    forms: Vec<String>,
    heads: AhoCorasick,
    short: Option<AhoCorasick>,
}

static KNOWN: LazyLock<RwLock<Known>> = LazyLock::new(RwLock::default);

/// Registers a secret of this run (and its escaped forms).
pub(crate) fn register(secret: &str) {
    let secret = secret.trim();
    if secret.is_empty() {
        return;
    }
    let forms = [
        secret.to_string(),
        crate::escape::escape(secret).into_owned(),
        secret.escape_default().to_string(),
        serde_json::to_string(secret)
            .map(|s| s.trim_matches('"').to_string())
            .unwrap_or_default(),
    ];
    if KNOWN
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .forms
        .contains(&forms[0])
    {
        return;
    }
    let mut known = KNOWN
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for form in forms {
        if known.forms.len() < MAX_FORMS && !form.is_empty() {
            known.forms.insert(form);
            known.matcher = None;
        }
    }
}

/// `text` with every registered secret, and every prefix of 16 characters or more of one,
/// replaced by `<redacted>`. Borrowed when there is nothing to replace (the common case).
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    let matcher = {
        let known = KNOWN
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.forms.is_empty() {
            return Cow::Borrowed(text);
        }
        known.matcher.clone()
    };
    let matcher = match matcher {
        Some(m) => m,
        None => {
            let mut known = KNOWN
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let forms: Vec<String> = known.forms.iter().cloned().collect();
            let Some(m) = Matcher::new(forms) else {
                return Cow::Borrowed(text);
            };
            let m = Arc::new(m);
            known.matcher = Some(m.clone());
            m
        }
    };
    matcher.redact(text)
}

impl Matcher {
    fn new(forms: Vec<String>) -> Option<Matcher> {
        let (mut forms, short): (Vec<String>, Vec<String>) = forms
            .into_iter()
            .partition(|f| f.chars().count() >= MIN_SECRET);
        // Longest first: where two forms share a head, the longer is tried first.
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        let heads: Vec<&str> = forms.iter().map(|f| head(f)).collect();
        let heads = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&heads)
            .ok()?;
        // Every match, overlapping ones too: the one that stands as a token may be shorter
        // than, or start inside, one that does not.
        let short = match short.is_empty() {
            true => None,
            false => Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&short)
                    .ok()?,
            ),
        };
        Some(Matcher {
            forms,
            heads,
            short,
        })
    }

    /// `redact_long`, then the short forms where they stand as whole tokens.
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_long(text) {
            Cow::Borrowed(t) => self.redact_short(t),
            Cow::Owned(t) => Cow::Owned(self.redact_short(&t).into_owned()),
        }
    }

    fn redact_short<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(short) = &self.short else {
            return Cow::Borrowed(text);
        };
        let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        // The matches that stand as tokens, leftmost first, the longest at each start.
        let mut found: Vec<(usize, usize)> = short
            .find_overlapping_iter(text)
            .map(|m| (m.start(), m.end()))
            .filter(|&(start, end)| {
                !word(text[..start].chars().next_back()) && !word(text[end..].chars().next())
            })
            .collect();
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        for (start, end) in found {
            if start < done {
                continue;
            }
            out.push_str(&text[done..start]);
            out.push_str(REDACTED);
            done = end;
        }
        out.push_str(&text[done..]);
        Cow::Owned(out)
    }

    fn redact_long<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = String::new();
        let mut done = 0;
        let mut at = 0;
        while let Some(m) = self.heads.find(&text[at..]) {
            let start = at + m.start();
            // The forms with this head: the longest stretch of the text that agrees with one.
            let found = &text[start..start + m.len()];
            let end = self
                .forms
                .iter()
                .filter(|f| head(f) == found)
                .map(|f| start + agreeing(&text[start..], f))
                .max()
                .unwrap_or(start + m.len());
            out.push_str(&text[done..start]);
            out.push_str(REDACTED);
            done = end;
            at = end;
        }
        if done == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[done..]);
        Cow::Owned(out)
    }
}

/// What must be in a text for a form to be found: all of a short one, else its first 16
/// characters.
fn head(form: &str) -> &str {
    match form.char_indices().nth(MIN_PREFIX) {
        Some((at, _)) => &form[..at],
        None => form,
    }
}

/// How many bytes of `text` agree with `form` from the start.
fn agreeing(text: &str, form: &str) -> usize {
    text.char_indices()
        .zip(form.chars())
        .take_while(|((_, a), b)| a == b)
        .last()
        .map_or(0, |((i, c), _)| i + c.len_utf8())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact_with<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
        match Matcher::new(secrets.to_vec()) {
            Some(m) => m.redact(text).into_owned().into(),
            None => Cow::Borrowed(text),
        }
    }

    #[test]
    fn secrets_whole_in_part_and_escaped_are_redacted() {
        let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl";
        let quoted = "pa\"ss\\word-1234";
        let secrets: Vec<String> = [token, quoted, "short-pw", "x"]
            .iter()
            .flat_map(|s| {
                [
                    s.to_string(),
                    s.escape_default().to_string(),
                    serde_json::to_string(s)
                        .unwrap()
                        .trim_matches('"')
                        .to_string(),
                ]
            })
            .collect();
        let cases: &[(&str, String, String)] = &[
            ("nothing", "all is well".into(), "all is well".into()),
            (
                "whole",
                format!("token {token} refused"),
                "token <redacted> refused".into(),
            ),
            (
                "a prefix of 16",
                format!("echo: {}…", &token[..16]),
                "echo: <redacted>…".into(),
            ),
            (
                "a prefix of 131",
                format!("\"{}", &token[..40]),
                "\"<redacted>".into(),
            ),
            (
                "15 characters are not a prefix",
                format!("x {}", &token[..15]),
                format!("x {}", &token[..15]),
            ),
            (
                "twice",
                format!("{token},{token}"),
                "<redacted>,<redacted>".into(),
            ),
            (
                "a short secret, whole",
                "password short-pw!".into(),
                "password <redacted>!".into(),
            ),
            (
                "JSON-escaped",
                serde_json::to_string(quoted).unwrap(),
                "\"<redacted>\"".into(),
            ),
            (
                "escape_default",
                quoted.escape_default().to_string(),
                "<redacted>".into(),
            ),
            (
                "a one-letter secret is no secret here",
                "x".into(),
                "x".into(),
            ),
        ];
        let secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_SECRET)
            .collect();
        for (name, text, want) in cases {
            assert_eq!(redact_with(text, &secrets), want.as_str(), "{name}");
        }
    }

    #[test]
    fn short_secrets_are_redacted_where_they_stand_as_a_token() {
        let secrets: Vec<String> = ["pw1", "a-b", "a-bc!", "\"q\""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let cases: &[(&str, &str, &str)] = &[
            ("alone", "pw1", "<redacted>"),
            (
                "between spaces",
                "password pw1 refused",
                "password <redacted> refused",
            ),
            ("quoted", "\"pw1\"", "\"<redacted>\""),
            ("after a colon", "user:pw1@host", "user:<redacted>@host"),
            (
                "JSON",
                "{\"password\":\"pw1\"}",
                "{\"password\":\"<redacted>\"}",
            ),
            ("inside a word", "apw1 pw12 pw1x", "apw1 pw12 pw1x"),
            ("twice", "pw1,pw1", "<redacted>,<redacted>"),
            ("a token, then more", "a-b-x", "<redacted>-x"),
            ("the longer where both stand", "a-bc! x", "<redacted> x"),
            ("punctuation in the secret", "say \"q\".", "say <redacted>."),
            ("nothing", "all is well", "all is well"),
        ];
        for (name, text, want) in cases {
            assert_eq!(redact_with(text, &secrets), *want, "{name}");
        }
    }
}
