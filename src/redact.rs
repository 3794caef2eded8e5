//! Redaction by field: every secret the run holds (passwords, tokens, keys, plugin and cloud
//! credentials, a hosts.toml header's value, the service-account token) is registered here when
//! it is read, and the text that comes from outside pullcheck (a server's error answer, a JSON
//! error that quotes what it was sent, an image reference as given that cannot be parsed,
//! clap's argument errors) is scrubbed of them with [`foreign`] where it enters a message.
//! Text pullcheck writes itself (the reasons, hints and summaries) is never searched: a short
//! password (`--creds alice:wrong`) is a word, and the hint "the password is wrong or expired"
//! or a repository `wrong/app` keep it.
//!
//! Secrets are kept out of messages by construction (`Secret`'s `Debug`, no header ever shown,
//! no credential in a message); [`foreign`] is for what others wrote. In foreign text a secret
//! is replaced by `<redacted>` whole, and so is any prefix of 16 characters or more of it
//! (messages cut long answers). Each is also matched in the forms the writers give it: escaped
//! for a terminal ([`crate::escape::escape`]), `escape_default`, and as a JSON string's
//! content. A secret shorter than [`MIN_SECRET`] characters is replaced only where it stands as
//! a whole token: not preceded or followed by a letter or digit (`password pw1!`, `"pw1"`,
//! `user:pw1`, but not `pw12` nor `apw1`).
//!
//! Under that, every writer of output (the report as text or JSON, stderr, `--verbose`, the
//! termination message) passes its text through [`net`], which replaces only the secrets no
//! word can be: at least [`MIN_SECRET`] characters and not an ordinary word (letters only,
//! lower case after the first). A token, a key or `hunter2-S3cret` is caught there even if an
//! echo of it came in by a way not scrubbed; `password`, `wrong` or `expired` are never
//! searched for in the run's own words.

use aho_corasick::{AhoCorasick, MatchKind};
use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, LazyLock, RwLock};

/// The shortest secret matched anywhere in foreign text (a shorter one only as a whole token),
/// and the shortest [`net`] matches at all.
pub(crate) const MIN_SECRET: usize = 8;
/// A prefix of this many characters of a secret (or more) is redacted like the whole.
pub(crate) const MIN_PREFIX: usize = 16;
/// What a secret becomes.
pub(crate) const REDACTED: &str = "<redacted>";
/// The most forms of secrets kept (each secret has up to four). Secrets are registered when
/// they are used, not when a pull secret is read: a run holds tens. A process that lives for
/// weeks (the webhook, the watcher) registers each token it is given: past the bound the
/// oldest forms make room, so that the newest secrets are always redacted (an old token has
/// expired long since; a secret that stopped being redacted would be a leak).
const MAX_FORMS: usize = 16_384;

#[derive(Default)]
struct Known {
    forms: HashSet<String>,
    /// The forms in the order they came, for the oldest to make room past [`MAX_FORMS`].
    order: VecDeque<String>,
    /// The matcher over `forms` for foreign text, rebuilt on the first use after a change.
    foreign: Option<Arc<Matcher>>,
    /// The matcher over the forms no word can be, for [`net`], rebuilt likewise.
    net: Option<Arc<Matcher>>,
}

/// Which of the forms a matcher looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// All of them: foreign text.
    Foreign,
    /// Those no word can be: every output.
    Net,
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
        known.add(form, MAX_FORMS);
    }
}

/// Foreign `text` (a server's answer, an unparsable reference as given, clap's error) with
/// every registered secret, and every prefix of 16 characters or more of one, replaced by
/// `<redacted>`; a short one where it stands as a whole token.
pub(crate) fn foreign(text: &str) -> String {
    scrub(text, Scope::Foreign).into_owned()
}

/// Output about to be written, with the secrets no word can be replaced (see the module's
/// comment). Borrowed when there is nothing to replace (the common case).
pub(crate) fn net(text: &str) -> Cow<'_, str> {
    scrub(text, Scope::Net)
}

fn scrub(text: &str, scope: Scope) -> Cow<'_, str> {
    let matcher = {
        let known = KNOWN
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if known.forms.is_empty() {
            return Cow::Borrowed(text);
        }
        known.slot(scope).clone()
    };
    let matcher = match matcher {
        Some(m) => m,
        None => {
            let mut known = KNOWN
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let forms: Vec<String> = known
                .forms
                .iter()
                .filter(|f| scope == Scope::Foreign || !is_word(f))
                .cloned()
                .collect();
            let Some(m) = Matcher::new(forms, scope) else {
                return Cow::Borrowed(text);
            };
            let m = Arc::new(m);
            *known.slot_mut(scope) = Some(m.clone());
            m
        }
    };
    matcher.redact(text)
}

impl Known {
    /// Keeps `form` (unless empty or kept already), the oldest forms making room past `max`.
    fn add(&mut self, form: String, max: usize) {
        if form.is_empty() || self.forms.contains(&form) {
            return;
        }
        while self.order.len() >= max.max(1) {
            match self.order.pop_front() {
                Some(oldest) => self.forms.remove(&oldest),
                None => break,
            };
        }
        self.forms.insert(form.clone());
        self.order.push_back(form);
        self.foreign = None;
        self.net = None;
    }

    fn slot(&self, scope: Scope) -> &Option<Arc<Matcher>> {
        match scope {
            Scope::Foreign => &self.foreign,
            Scope::Net => &self.net,
        }
    }

    fn slot_mut(&mut self, scope: Scope) -> &mut Option<Arc<Matcher>> {
        match scope {
            Scope::Foreign => &mut self.foreign,
            Scope::Net => &mut self.net,
        }
    }
}

/// Whether a secret could be an ordinary word of the run's own text: letters only, lower case
/// after the first (`wrong`, `Password`), or shorter than [`MIN_SECRET`]. Such a secret is
/// searched for in foreign text only.
fn is_word(secret: &str) -> bool {
    let mut chars = secret.chars();
    secret.chars().count() < MIN_SECRET
        || (chars.next().is_some_and(char::is_alphabetic) && chars.all(char::is_lowercase))
}

impl Matcher {
    fn new(forms: Vec<String>, scope: Scope) -> Option<Matcher> {
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
        let short = match short.is_empty() || scope == Scope::Net {
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

    /// Past the bound the oldest forms make room: the newest secret is always redacted.
    #[test]
    fn past_the_bound_the_oldest_forms_make_room() {
        let mut known = Known::default();
        for n in 0..5 {
            known.add(format!("secret-{n}"), 3);
        }
        known.add("secret-4".into(), 3);
        let kept: Vec<&str> = known.order.iter().map(String::as_str).collect();
        assert_eq!(kept, ["secret-2", "secret-3", "secret-4"]);
        assert_eq!(known.forms.len(), 3);
        assert!(known.forms.contains("secret-4") && !known.forms.contains("secret-0"));
    }

    fn redact_with<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
        match Matcher::new(secrets.to_vec(), Scope::Foreign) {
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

    #[test]
    fn the_net_looks_only_for_secrets_no_word_can_be() {
        let secrets: Vec<String> = ["wrong", "password", "Expired", "hunter2-S3cret", "Pw-7x"]
            .iter()
            .map(|s| s.to_string())
            .filter(|s| !is_word(s))
            .collect();
        assert_eq!(secrets, ["hunter2-S3cret"]);
        let net = Matcher::new(secrets, Scope::Net).unwrap();
        let cases: &[(&str, &str)] = &[
            (
                "The pull secret's user name or password is wrong or expired: renew the secret.",
                "The pull secret's user name or password is wrong or expired: renew the secret.",
            ),
            ("r.io/wrong/app:v1", "r.io/wrong/app:v1"),
            ("echo: hunter2-S3cret", "echo: <redacted>"),
        ];
        for (text, want) in cases {
            assert_eq!(net.redact(text), *want);
        }
    }

    #[test]
    fn foreign_text_is_scrubbed_of_words_too() {
        let secrets: Vec<String> = ["wrong"].iter().map(|s| s.to_string()).collect();
        let foreign = Matcher::new(secrets, Scope::Foreign).unwrap();
        assert_eq!(
            foreign.redact("{\"password\":\"wrong\"} is wrong"),
            "{\"password\":\"<redacted>\"} is <redacted>"
        );
    }
}
