//! Escaping of values that came from outside (user names from pull secrets, docker config
//! keys, server answers, digests, realms) before they reach a terminal, a log or the
//! termination message.
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
pub fn escape(s: &str) -> Cow<'_, str> {
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
}
