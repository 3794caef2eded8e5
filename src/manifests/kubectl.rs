//! Where kubectl would read a YAML input otherwise than pullcheck does: the documents kubectl
//! refuses or leaves out that pullcheck reads. Each is one note for stderr, naming the document;
//! the input is still read (docs/reading-yaml.md says why).
//!
//! kubectl splits a stream at lines that start with `---` (`k8s.io/apimachinery`'s
//! `YAMLReader`) and reads each part with go-yaml v2 (through `sigs.k8s.io/yaml`), a port of
//! libyaml with YAML 1.1's rules. `tests/cluster/yaml.rs` compares the two readers on every
//! fixture and a generated corpus; each check here is a row of its table.

use super::tree::{Kind, NodeId, Tree};

/// go-yaml's bound on alias expansion (`decode.go`): past 1,000 decoded nodes and 100 through
/// aliases, the share through aliases may be 99 % up to this many nodes (falling to 10 % at
/// ten times as many, which is not followed here).
const ALIAS_LOW: usize = 400_000;

/// Whether [`differences`] can find anything in `text`: a scan for what each of its checks
/// needs to see (a `%`, `---` or `...` line, a tab, the `\/` escape, U+0085/U+2028/U+2029,
/// an alias's `*`), without a tree. A reader that keeps one document's tree at a time
/// (`inject`) parses the whole input for [`differences`] only when this says so.
pub(crate) fn may_differ(text: &str) -> bool {
    text.contains(['\t', '*', '\u{85}', '\u{2028}', '\u{2029}'])
        || text.contains("\\/")
        || text.split('\n').any(|l| {
            l.starts_with('%')
                || l.starts_with("...")
                || l.strip_prefix("---").is_some_and(|rest| {
                    let rest = rest.trim();
                    !rest.is_empty() && !rest.starts_with('#')
                })
        })
}

/// The notes, in document order (`document N: …`), at most one of each kind per document.
pub(crate) fn differences(text: &str, tree: &Tree) -> Vec<String> {
    let mut out: Vec<(usize, &'static str)> = Vec::new();
    let lines = stream_notes(text, tree, &mut out);
    text_notes(text, tree, &lines, &mut out);
    if let Some(doc) = excessive_aliasing(tree) {
        out.push((doc, ALIASES));
    }
    out.sort_unstable();
    out.dedup();
    out.into_iter()
        .map(|(doc, why)| {
            format!("document {doc}: kubectl cannot read it as pullcheck does: {why}")
        })
        .collect()
}

/// The 1-based document an offset is in. Documents are in text order: a binary search finds
/// it.
fn doc_at(tree: &Tree, offset: usize) -> usize {
    tree.docs.partition_point(|d| d.start <= offset).max(1)
}

/// The notes of how kubectl splits the stream (a `---` line with more than a comment, a part of
/// directives alone, documents after the first of a part) into `out`; the text's lines, each
/// with its offset.
fn stream_notes<'t>(
    text: &'t str,
    tree: &Tree,
    out: &mut Vec<(usize, &'static str)>,
) -> Vec<(usize, &'t str)> {
    // kubectl's parts, one pass: each starts at a `---` line (or the text's start).
    let mut lines = Vec::new();
    let mut parts = vec![0];
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        lines.push((offset, line));
        if let Some(rest) = line.strip_prefix("---") {
            if offset > 0 {
                parts.push(offset);
            }
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                out.push((doc_at(tree, offset), SEPARATOR));
            }
        }
        offset += line.len();
    }
    parts.push(text.len());
    let mut line = 0;
    let mut doc = 0;
    for part in parts.windows(2) {
        let (start, end) = (part[0], part[1]);
        // A part of directives alone: go-yaml finds no document after them.
        let (mut directives, mut only) = (false, true);
        while line < lines.len() && lines[line].0 < end {
            let l = lines[line].1;
            line += 1;
            if l.starts_with("---") {
                continue;
            }
            directives |= l.starts_with('%');
            let t = l.trim_start_matches('\u{feff}').trim();
            only &= t.is_empty() || t.starts_with('#') || l.starts_with('%');
        }
        if directives && only && end < text.len() {
            out.push((doc_at(tree, end), DIRECTIVE));
        }
        // Documents after the first in one part (after `...`): go-yaml reads only the first.
        let mut first = true;
        while doc < tree.docs.len() && tree.docs[doc].start < end {
            let d = &tree.docs[doc];
            doc += 1;
            if d.start < start || tree.is_null(d.root) {
                continue;
            }
            if !first {
                out.push((doc, AFTER_END));
            }
            first = false;
        }
    }
    lines
}

/// The notes of the text itself into `out`: scalars with the `\/` escape or YAML 1.1's line
/// breaks, and `lines` indented with a tab outside scalars and flow collections.
fn text_notes(
    text: &str,
    tree: &Tree,
    lines: &[(usize, &str)],
    out: &mut Vec<(usize, &'static str)>,
) {
    // What is inside scalars and flow collections is not indentation.
    let mut inside: Vec<(usize, usize)> = Vec::new();
    for node in &tree.nodes {
        match &node.kind {
            Kind::Scalar { value, plain } => {
                let raw = text.get(node.start..node.end).unwrap_or("");
                if !plain && raw.starts_with('"') && has_slash_escape(raw) {
                    out.push((doc_at(tree, node.start), ESCAPE));
                }
                if value.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
                    out.push((doc_at(tree, node.start), BREAKS));
                }
                if !plain {
                    // A block scalar's span starts at its content: its lines start at `|`/`>`.
                    let start = if raw.starts_with(['"', '\'']) {
                        node.start
                    } else {
                        text[..node.start].rfind(['|', '>']).unwrap_or(node.start)
                    };
                    inside.push((start, node.end));
                }
            }
            Kind::Seq { flow: true, .. } | Kind::Map { flow: true, .. } => {
                inside.push((node.start, node.end));
            }
            _ => {}
        }
    }
    // Merged into disjoint ranges, so that one pass over the lines finds each line's.
    inside.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in inside {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut next = 0;
    for &(offset, line) in lines {
        while next < merged.len() && merged[next].1 <= offset {
            next += 1;
        }
        let covered = merged
            .get(next)
            .is_some_and(|&(s, e)| s < offset && e > offset);
        if !covered && tab_in_indentation(line) {
            out.push((doc_at(tree, offset), TAB));
        }
    }
}

const SEPARATOR: &str = "its `---` line has more than a comment after it, and kubectl refuses the whole input (`invalid Yaml document separator`)";
const DIRECTIVE: &str = "a `%` directive comes before its `---`, and kubectl reads the directive apart from the document (`did not find expected <document start>`); pullcheck reads it";
const AFTER_END: &str = "it follows `...` with no `---` line, and kubectl reads only the first document between two `---` lines; pullcheck reads this one too";
const ESCAPE: &str = "a double-quoted scalar has the escape `\\/` (YAML 1.2), which kubectl refuses (`found unknown escape character`); pullcheck reads it as `/`";
const BREAKS: &str = "a value holds U+0085, U+2028 or U+2029, which kubectl reads as a line break (YAML 1.1) and pullcheck as a character";
const TAB: &str = "a line is indented with a tab (or has a tab right after `- `), which kubectl refuses (`found a tab character that violates indentation`); pullcheck reads it";
const ALIASES: &str = "its aliases expand it past go-yaml's bound, and kubectl refuses it (`document contains excessive aliasing`); pullcheck reads it without expanding them";

/// A `\/` escape in the text of a double-quoted scalar (`\\/` is an escaped backslash).
fn has_slash_escape(raw: &str) -> bool {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.next() == Some('/') {
            return true;
        }
    }
    false
}

/// A tab among a line's leading blanks, or right after a leading `-` (go-yaml skips tabs only
/// where no simple key may start: never at a line's start in block context).
fn tab_in_indentation(line: &str) -> bool {
    let line = line.trim_start_matches('\u{feff}');
    let mut rest = line.trim_start_matches(' ');
    loop {
        if rest.starts_with('\t') {
            return true;
        }
        match rest.strip_prefix('-') {
            Some(after) if after.starts_with([' ', '\t']) => {
                rest = after.trim_start_matches(' ');
            }
            _ => return false,
        }
    }
}

/// The first document whose alias expansion go-yaml refuses, walking it as go-yaml decodes it
/// (each node once per path, aliases followed). The walk stops at [`ALIAS_LOW`] nodes in all
/// (the stack never holds more): past that, nothing is said.
fn excessive_aliasing(tree: &Tree) -> Option<usize> {
    if !tree.nodes.iter().any(|n| matches!(n.kind, Kind::Alias(_))) {
        return None;
    }
    let mut pushed = 0usize;
    for (i, doc) in tree.docs.iter().enumerate() {
        let (mut decoded, mut aliased) = (0usize, 0usize);
        // (node, under an alias)
        let mut stack = vec![(doc.root, false)];
        while let Some((id, under)) = stack.pop() {
            decoded += 1;
            aliased += usize::from(under);
            // go-yaml allows 99 % through aliases up to ALIAS_LOW decoded nodes.
            if aliased > 100 && decoded > 1000 && aliased * 100 > decoded * 99 {
                return Some(i + 1);
            }
            let children: &[NodeId] = match &tree.nodes[id].kind {
                Kind::Alias(_) => {
                    let target = tree.resolve(id);
                    if target != id {
                        stack.push((target, true));
                        pushed += 1;
                    }
                    &[]
                }
                Kind::Seq { items, .. } => items,
                Kind::Map { entries, .. } => {
                    pushed += entries.len() * 2;
                    if pushed >= ALIAS_LOW {
                        return None;
                    }
                    for &(k, v) in entries {
                        stack.push((k, under));
                        stack.push((v, under));
                    }
                    &[]
                }
                Kind::Scalar { .. } => &[],
            };
            pushed += children.len();
            if pushed >= ALIAS_LOW {
                return None;
            }
            stack.extend(children.iter().map(|&c| (c, under)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes(text: &str) -> Vec<String> {
        let mut tree = Tree::default();
        tree.parse_yaml(text, 0).expect("parses");
        differences(text, &tree)
    }

    #[test]
    fn what_kubectl_reads_otherwise_is_named_by_document() {
        let pod = "kind: Pod\nspec: {containers: [{name: a, image: a:1}]}\n";
        assert!(notes(&format!("{pod}---\n{pod}---\n# c\n---\n")).is_empty());
        let n = notes(&format!("%YAML 1.1\n---\n{pod}"));
        assert!(
            n.len() == 1 && n[0].starts_with("document 1:") && n[0].contains("directive"),
            "{n:?}"
        );
        let n = notes(&format!("{pod}--- !!map\n{pod}"));
        assert!(n.len() == 1 && n[0].starts_with("document 2:"), "{n:?}");
        let n = notes(&format!("{pod}...\n{pod}"));
        assert!(
            n.len() == 1 && n[0].starts_with("document 2:") && n[0].contains("`...`"),
            "{n:?}"
        );
        let n = notes(&format!("{pod}---\nkind: Pod\nx: \"a\\/b\"\n"));
        assert!(
            n.len() == 1 && n[0].starts_with("document 2:") && n[0].contains("\\/"),
            "{n:?}"
        );
        assert!(notes("x: \"a\\\\/b\"\n").is_empty());
        let n = notes("a: b\n\t# c\nd: e\n");
        assert!(n.len() == 1 && n[0].contains("tab"), "{n:?}");
        let n = notes("l:\n-\ta: b\n");
        assert!(n.len() == 1 && n[0].contains("tab"), "{n:?}");
        // Tabs inside quoted and block scalars, flow collections and after content are fine.
        assert!(notes("a: \"x\n\ty\"\nb: |\n  \tz\nc: [1,\n\t2]\nd: e\t# c\n").is_empty());
        let n = notes("a: \"x\u{2028}y\"\n");
        assert!(n.len() == 1 && n[0].contains("U+2028"), "{n:?}");
    }

    #[test]
    fn excessive_aliasing_as_go_yaml_counts_it() {
        let mut laughs = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        for i in 0..9 {
            let p = if i == 0 {
                "a".to_string()
            } else {
                format!("l{}", i - 1)
            };
            laughs.push_str(&format!(
                "l{i}: &l{i} [{}]\n",
                vec![format!("*{p}"); 9].join(", ")
            ));
        }
        let n = notes(&format!("kind: ConfigMap\n---\n{laughs}"));
        assert!(
            n.len() == 1 && n[0].starts_with("document 2:") && n[0].contains("aliasing"),
            "{n:?}"
        );
        // A few merge keys are not excessive.
        let merges = "base: &b {cpu: 1, memory: 2}\nx: [{<<: *b}, {<<: *b}, {<<: *b}]\n";
        assert!(notes(merges).is_empty());
    }
}
