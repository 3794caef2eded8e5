//! Reading manifest text into a [`Tree`]: YAML (any number of `---` documents) or JSON (one
//! value or several in a row), with errors that name the document and line and never the
//! content, and the Helm hint when the text is a template.

use super::{Format, ManifestError, tree};
use tree::{NodeId, ParseError, Stopped, Tree};

/// What a failed JSON read of `body` is, for both readers: Helm template syntax first; an input
/// with document markers is `None`, to be read again as YAML (JSON documents in a YAML stream,
/// `{…}` `---` `{…}`, are YAML); else the JSON error itself.
pub(super) fn json_failure(e: ManifestError, body: &str, source: &str) -> Option<ManifestError> {
    match e {
        ManifestError::Syntax { document, .. } if template_line(body).is_some() => {
            Some(ManifestError::Template {
                input: source.to_string(),
                document,
                line: template_line(body).unwrap_or(1),
            })
        }
        e if !has_document_marker(body) => Some(e),
        _ => None,
    }
}

/// Flow collections nested deeper than the tree takes, as a syntax error of the first
/// document, found before any parse.
pub(super) fn nesting_error(body: &str, source: &str) -> Option<ManifestError> {
    flow_depth_error(body).map(|line| ManifestError::Syntax {
        input: source.to_string(),
        document: 1,
        format: "YAML",
        line,
        column: 1,
        message: format!("`[`/`{{` nested more than {} levels deep", tree::MAX_DEPTH),
    })
}

/// Whether a line of `input` is a YAML `---` document marker (never valid JSON).
pub(super) fn has_document_marker(input: &str) -> bool {
    input.lines().any(|line| {
        line.strip_prefix("---")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
    })
}

pub(super) fn parse(text: &str, source: &str) -> Result<(Tree, Format), ManifestError> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - body.len();
    if body.trim_start().starts_with(['{', '[']) {
        match parse_json(text, bom, source) {
            Ok(tree) => return Ok((tree, Format::Json)),
            Err(e) => {
                if let Some(e) = json_failure(e, body, source) {
                    return Err(e);
                }
            }
        }
    }
    if let Some(e) = nesting_error(body, source) {
        return Err(e);
    }
    let mut tree = Tree::default();
    match tree.parse_yaml(body, bom) {
        Ok(()) if tree.complex_key && template_line(body).is_some() => {
            let line = template_line(body).unwrap_or(1);
            Err(ManifestError::Template {
                input: source.to_string(),
                document: document_of_line(body, line),
                line,
            })
        }
        Ok(()) => Ok((tree, Format::Yaml)),
        Err(e) => Err(syntax_or_template(text, source, "YAML", e)),
    }
}

/// A parse error, or the Helm hint when the text has Go template syntax (`{{` outside
/// comments).
pub(super) fn syntax_or_template(
    text: &str,
    source: &str,
    format: &'static str,
    e: ParseError,
) -> ManifestError {
    if let Some(line) = template_line(text) {
        return ManifestError::Template {
            input: source.to_string(),
            document: e.document,
            line,
        };
    }
    ManifestError::Syntax {
        input: source.to_string(),
        document: e.document,
        format,
        line: e.line,
        column: e.column,
        message: e.message,
    }
}

/// The first line with `{{` outside a comment.
pub(super) fn template_line(text: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let code = match l.find(" #") {
                Some(i) => &l[..i],
                None if l.trim_start().starts_with('#') => "",
                None => l,
            };
            code.contains("{{") || code.contains("{%")
        })
        .map(|i| i + 1)
}

/// The document (1-based) that line `line` (1-based) is in, counting `---` lines.
pub(super) fn document_of_line(text: &str, line: usize) -> usize {
    let mut document = 1;
    let mut content = false;
    for l in text.lines().take(line.saturating_sub(1)) {
        let marker = l
            .strip_prefix("---")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']));
        if marker {
            if content {
                document += 1;
            }
            content = true;
        } else if !l.trim().is_empty() && !l.trim_start().starts_with('#') {
            content = true;
        }
    }
    document
}

/// Flow collections nested deeper than the tree allows, counted cheaply before the parser
/// sees them (deep `[[[[` costs a YAML scanner time for every level). Only brackets that can
/// open a flow collection count: at the start of a line, after white space, `,`, `:` or another
/// bracket; one inside a plain scalar (`registry.example/a[b`) cannot, nor one inside a quoted
/// scalar or a comment. Any closing bracket counts: an over-estimate, so the limit is generous,
/// and a readable input made longer by `inject` (which repeats image names) stays readable.
pub(super) fn flow_depth_error(text: &str) -> Option<usize> {
    let opens_here = |p: char| p.is_whitespace() || matches!(p, '[' | '{' | ',' | ':');
    let mut depth = 0usize;
    let mut line = 1;
    let mut prev = '\n';
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' | '{' if opens_here(prev) => {
                depth += 1;
                if depth > 2 * tree::MAX_DEPTH {
                    return Some(line);
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            '"' | '\'' if opens_here(prev) => {
                // A quoted scalar: to its closing quote (`\"` escapes in double quotes, `''`
                // in single ones). An unclosed one is the parser's to report.
                loop {
                    match chars.next() {
                        None => return None,
                        Some('\n') => line += 1,
                        Some('\\') if c == '"' => {
                            if chars.next() == Some('\n') {
                                line += 1;
                            }
                        }
                        Some(q) if q == c => {
                            if c == '\'' && chars.peek() == Some(&'\'') {
                                chars.next();
                                continue;
                            }
                            break;
                        }
                        Some(_) => {}
                    }
                }
            }
            '#' if prev.is_whitespace() => {
                while chars.peek().is_some_and(|n| *n != '\n') {
                    chars.next();
                }
            }
            '\n' => line += 1,
            _ => {}
        }
        prev = c;
    }
    None
}

pub(super) fn parse_json(text: &str, bom: usize, source: &str) -> Result<Tree, ManifestError> {
    let mut tree = Tree::default();
    // Read whole, it never stops early.
    let _whole = json_values(text, bom, source, &mut |piece, base| {
        tree.parse_yaml(piece, base).map(Ok)
    })?;
    Ok(tree)
}

/// As [`parse_json`], one document at a time ([`Tree::parse_each`]).
pub(super) fn parse_json_each(
    text: &str,
    bom: usize,
    source: &str,
    each: &mut dyn FnMut(&Tree, usize, NodeId) -> tree::Next,
) -> Result<Result<(), Stopped>, ManifestError> {
    let mut tree = Tree::default();
    json_values(text, bom, source, &mut |piece, base| {
        tree.parse_each(piece, base, each)
    })
}

/// Splits `text` into its JSON values and gives each to `parse` (the value's text and where
/// it starts), stopping at the first error or [`Stopped`].
pub(super) fn json_values(
    text: &str,
    bom: usize,
    source: &str,
    parse: &mut dyn FnMut(&str, usize) -> tree::Parsed,
) -> Result<Result<(), Stopped>, ManifestError> {
    let body = &text[bom..];
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<serde::de::IgnoredAny>();
    let mut start = 0;
    let mut document = 0;
    while let Some(next) = stream.next() {
        document += 1;
        let end = stream.byte_offset();
        if let Err(e) = next {
            return Err(ManifestError::Syntax {
                input: source.to_string(),
                document,
                format: "JSON",
                line: e.line(),
                column: e.column(),
                message: json_message(&e),
            });
        }
        let piece = &body[start..end];
        let skip = piece.len() - piece.trim_start().len();
        match parse(piece.trim_start(), bom + start + skip) {
            Ok(Ok(())) => {}
            Ok(Err(Stopped)) => return Ok(Err(Stopped)),
            Err(e) => {
                return Err(ManifestError::Syntax {
                    input: source.to_string(),
                    document,
                    format: "JSON",
                    line: e.line,
                    column: e.column,
                    message: e.message,
                });
            }
        }
        start = end;
    }
    Ok(Ok(()))
}

/// serde_json's message without its position (given apart) and anything quoted.
pub(super) fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    match text.find('`') {
        Some(i) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}
