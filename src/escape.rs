//! Text for people, made safe and short: escaping of values that came from outside (user
//! names from pull secrets, docker config keys, server answers, digests, realms) before they
//! reach a terminal, a log, an Event or the termination message, and cutting to a byte bound
//! without breaking a word or an escape. A leaf: it imports nothing of the crate, so that the
//! report, the redaction, the webhook and the watcher all use it without reaching each other.
//!
//! Escaping happens at render time, in the writers of the text report, the termination
//! message and stderr, not where the values are stored: results keep the exact values (for JSON,
//! which serde escapes itself, and for library callers), each value is escaped exactly once,
//! and a new field or message cannot skip the step, because every writer for people applies
//! it to whole lines. A user name holding `\n` or ESC can then no longer forge an "ok" line or
//! move the cursor.

use std::borrow::Cow;

/// `s` with every control character rendered as a visible escape: `\n`, `\r`, `\t`, `\x1b`
/// for C0 and DEL, `\u{85}` for C1, and the same `\u{…}` form for the Unicode line separators
/// and bidirectional overrides that can make a line read as something else. Borrowed when
/// there is nothing to escape (the common case).
pub(crate) fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether a character is escaped by [`escape`].
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// JSON text with DEL, C1 controls and the characters [`escape`] treats alike written as
/// `\uXXXX`: serde_json escapes only what JSON requires (below U+0020, `"` and `\`). Those
/// characters can only be inside strings in a JSON text, where `\uXXXX` means the same.
pub(crate) fn escape_json_text(json: String) -> String {
    if !json.chars().any(needs_escape_in_json) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_escape_in_json(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// What is left to escape in serde_json's output (it already escaped C0).
fn needs_escape_in_json(c: char) -> bool {
    needs_escape(c) && c as u32 >= 0x20
}

/// Cuts `s` to at most `max` bytes, ending with `…` when cut: at the last word boundary that
/// fits (separators left dangling at the end, such as ` —` or `,`, go too). A first word
/// longer than `max` is cut on a character boundary, but never inside an escape
/// ([`escape`](fn@escape)'s `\n`, `\x1b`, `\u{9b}`).
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let ellipsis = "…";
    let room = max.saturating_sub(ellipsis.len());
    let mut end = room.min(s.len());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    // The last boundary: a position where a space follows (the word before it is whole).
    let word_end = s
        .char_indices()
        .take_while(|&(i, _)| i <= end)
        .filter(|&(_, c)| c.is_whitespace())
        .last()
        .map(|(i, _)| i);
    let kept = match word_end {
        Some(i) if !s[..i].trim().is_empty() => s[..i]
            .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '—' | ',' | ';' | ':')),
        _ => &s[..outside_escape(s, end)],
    };
    format!("{kept}{ellipsis}")
}

/// `end`, moved back before an escape that it would cut.
fn outside_escape(s: &str, end: usize) -> usize {
    let from = end.saturating_sub(12);
    let mut from = from;
    while from > 0 && !s.is_char_boundary(from) {
        from -= 1;
    }
    for (i, _) in s[from..end].match_indices('\\') {
        let at = from + i;
        let rest = &s[at..];
        let len = match rest.as_bytes().get(1) {
            Some(b'x') => 4,
            Some(b'u') => rest.find('}').map_or(rest.len(), |j| j + 1),
            Some(_) => 2,
            None => 1,
        };
        if at + len > end {
            return at;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_table() {
        let cases: &[(&str, &str, &str)] = &[
            ("plain", "alice", "alice"),
            ("newline forging a line", "a\nok  x", "a\\nok  x"),
            ("ESC sequence", "\u{1b}[2Jx", "\\x1b[2Jx"),
            ("CR, tab, NUL, DEL", "a\r\t\0\u{7f}", "a\\r\\t\\x00\\x7f"),
            ("C1 NEL and CSI", "a\u{85}b\u{9b}", "a\\u{85}b\\u{9b}"),
            (
                "line separator, bidi override",
                "a\u{2028}b\u{202e}c",
                "a\\u{2028}b\\u{202e}c",
            ),
            ("printable non-ASCII stays", "ünïcödé ✓", "ünïcödé ✓"),
        ];
        for (name, input, want) in cases {
            assert_eq!(escape(input), *want, "{name}");
        }
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_text_has_no_raw_control_characters_and_means_the_same() {
        let value = "u\n\u{1b}\u{7f}\u{85}\u{9b}\u{2028}\u{202e}";
        let json = escape_json_text(serde_json::to_string(value).unwrap());
        assert!(
            !json.chars().any(|c| c.is_control() || needs_escape(c)),
            "{json:?}"
        );
        let back: String = serde_json::from_str(&json).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn cuts_fall_on_words_and_never_inside_an_escape() {
        assert_eq!(cut("one two three", 100), "one two three");
        assert_eq!(cut("one two three", 12), "one two…");
        assert_eq!(cut("one, two three", 11), "one, two…");
        assert_eq!(cut("one, two three", 10), "one…");
        assert_eq!(cut("alpha — beta", 11), "alpha…");
        // One word longer than the room: cut on a character, not inside `\x1b`.
        assert_eq!(cut("abcdef\\x1bghij", 10), "abcdef…");
        assert_eq!(cut("abcdefg\\u{9b}hij", 14), "abcdefg…");
        assert_eq!(cut("ééééé", 7), "éé…");
        assert_eq!(cut("ééééé", 6), "é…");
    }
}
