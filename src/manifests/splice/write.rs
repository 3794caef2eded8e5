//! How a value ([`Y`]) is written as YAML text at a given column: block mappings and lists in
//! the input's own layout, flow values inline, and scalars plain only when a YAML reader takes
//! them back as the same string, double-quoted otherwise.

use super::{Layout, Y};

/// Writes ` value` (scalars, flow) or a nested block after `key:` at column `col`.
pub(super) fn write_value(out: &mut String, value: &Y, col: usize, layout: Layout) {
    match value {
        Y::Seq(items) if !items.is_empty() => {
            let dash = col + layout.seq;
            for item in items {
                out.push('\n');
                out.push_str(&" ".repeat(dash));
                write_item(out, item, dash, layout);
            }
        }
        Y::Map(entries) if !entries.is_empty() => {
            let inner = col + layout.step;
            for (k, v) in entries {
                out.push('\n');
                out.push_str(&" ".repeat(inner));
                out.push_str(&scalar(k));
                out.push(':');
                write_value(out, v, inner, layout);
            }
        }
        other => {
            out.push(' ');
            out.push_str(&other.flow());
        }
    }
}

/// Writes `- item` whose dash is at column `dash` (the dash itself is the caller's position).
pub(super) fn write_item(out: &mut String, item: &Y, dash: usize, layout: Layout) {
    out.push_str("- ");
    match item {
        Y::Map(entries) if !entries.is_empty() => {
            let inner = dash + 2;
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                    out.push_str(&" ".repeat(inner));
                }
                out.push_str(&scalar(k));
                out.push(':');
                write_value(out, v, inner, layout);
            }
        }
        other => out.push_str(&other.flow()),
    }
}

/// A string as a YAML scalar: plain when safe, else double-quoted (JSON escapes are YAML's).
pub(crate) fn scalar(text: &str) -> String {
    if plain_ok(text) {
        text.to_string()
    } else {
        double_quoted(text)
    }
}

/// Characters a YAML double-quoted string must escape: non-printable ones, and those YAML 1.1
/// counts as line breaks or a byte order mark.
pub(super) fn needs_escape(c: char) -> bool {
    let printable = matches!(c,
        '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}'
        | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
    !printable || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// A YAML double-quoted scalar.
pub(super) fn double_quoted(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let _ = if (c as u32) <= 0xffff {
                    write!(out, "\\u{:04x}", c as u32)
                } else {
                    write!(out, "\\U{:08x}", c as u32)
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether `text` can be written without quotes and read back as the same string by YAML 1.1
/// (go-yaml v2 in kubectl, PyYAML) and YAML 1.2 readers alike, in block and flow context.
/// Conservative: when in doubt, quote.
pub(crate) fn plain_ok(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_./:@+=~".contains(c);
    if !text.chars().all(allowed) || text.ends_with(':') || text.contains("::") {
        return false;
    }
    let lower = text.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "y" | "yes" | "n" | "no" | "true" | "false" | "on" | "off" | "null" | "~"
    ) {
        return false;
    }
    match first {
        c if c.is_ascii_alphabetic() || c == '/' => {}
        '-' => {
            // `-c` and `--flag=x` are fine; `-`, `-1`, `---` are not.
            match text.chars().nth(1) {
                Some(c) if c.is_ascii_alphabetic() => {}
                Some('-') if text.chars().nth(2).is_some_and(|c| c.is_ascii_alphabetic()) => {}
                _ => return false,
            }
        }
        c if c.is_ascii_digit() => {
            // Numbers, times (`12:30` is sexagesimal in YAML 1.1), dates and versions are quoted;
            // quantities such as `10m` and `16Mi` are plain (a letter that is not an exponent).
            if text.contains(':') {
                return false;
            }
            let letters: Vec<char> = text.chars().filter(char::is_ascii_alphabetic).collect();
            if letters.is_empty() || letters.iter().all(|c| matches!(c, 'e' | 'E')) {
                return false;
            }
            let lower = text.to_ascii_lowercase();
            if ["0x", "0o", "0b"].iter().any(|p| lower.starts_with(p)) {
                return false;
            }
        }
        _ => return false,
    }
    true
}
