//! Edits of the input text at the few spans that change, so that everything else stays byte for
//! byte as the user wrote it (scalars, quoting, comments, anchors, flow style, key order, the
//! final newline).
//!
//! `inject` only ever adds: a key before another key of a mapping, items at the front of a
//! sequence, or replaces an item it wrote itself. What it adds ([`Y`]) is written in the style
//! of its surroundings: block YAML at the column of the key or dash it goes before (with the
//! sequence indentation the mapping already uses), flow YAML or JSON (one line) inside `[…]` and
//! `{…}`, and JSON in a JSON input.

mod write;

#[cfg(test)]
use write::plain_ok;
pub(crate) use write::scalar;
use write::{write_item, write_value};

use super::tree::{Kind, NodeId, Tree};

/// One edit: remove `remove` bytes at `at`, insert `insert` there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    /// Byte offset in the input.
    pub(crate) at: usize,
    /// Bytes removed from `at`.
    pub(crate) remove: usize,
    /// Text inserted at `at`.
    pub(crate) insert: String,
}

/// Applies non-overlapping edits (in the order given for the same offset); an edit that
/// overlaps an earlier one is dropped, so the output is always the input with whole edits.
pub(crate) fn apply(text: &str, edits: &[Edit]) -> String {
    let mut out = Output::new(text.len() + edits.iter().map(|e| e.insert.len()).sum::<usize>());
    out.apply(text, edits);
    out.finish(text)
}

/// The output built a part at a time: [`apply`] over the edits of one document after
/// another gives what it gives over all of them at once, as long as no edit of a later part
/// is before one of an earlier part (a document's edits are inside its own text).
#[derive(Debug, Default)]
pub(crate) struct Output {
    out: String,
    /// The next byte of the input to copy.
    pos: usize,
}

impl Output {
    /// An empty output with room for `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Output {
        Output {
            out: String::with_capacity(capacity),
            pos: 0,
        }
    }

    /// Copies the input up to each edit and makes it (as [`apply`]), leaving the text after
    /// the last edit for later.
    pub(crate) fn apply(&mut self, text: &str, edits: &[Edit]) {
        let mut order: Vec<usize> = (0..edits.len()).collect();
        order.sort_by_key(|&i| (edits[i].at, i));
        for i in order {
            let e = &edits[i];
            let end = e.at.saturating_add(e.remove);
            if e.at < self.pos
                || end > text.len()
                || !text.is_char_boundary(e.at)
                || !text.is_char_boundary(end)
            {
                continue;
            }
            self.out.push_str(&text[self.pos..e.at]);
            self.out.push_str(&e.insert);
            self.pos = end;
        }
    }

    /// The output, with the rest of the input.
    pub(crate) fn finish(mut self, text: &str) -> String {
        self.out.push_str(&text[self.pos..]);
        self.out
    }
}

/// A value `inject` writes (never one of the user's).
#[derive(Debug, Clone, PartialEq)]
pub enum Y {
    /// A string: plain when a YAML 1.1 and 1.2 reader both read it back as the same string,
    /// else double-quoted.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A sequence (block style in block context).
    Seq(Vec<Y>),
    /// A mapping (block style in block context), keys in this order.
    Map(Vec<(String, Y)>),
    /// A collection written in flow style even in block context (`[3, 4]`, `{cpu: 10m}`).
    Flow(Box<Y>),
}

impl Y {
    /// A string.
    pub(crate) fn s(text: &str) -> Y {
        Y::Str(text.to_string())
    }

    /// A mapping from pairs.
    pub(crate) fn map<const N: usize>(entries: [(&str, Y); N]) -> Y {
        Y::Map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    /// The value as kubectl would read it.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Y::Str(s) => Value::String(s.clone()),
            Y::Int(i) => Value::Number((*i).into()),
            Y::Bool(b) => Value::Bool(*b),
            Y::Seq(items) => Value::Array(items.iter().map(Y::to_json).collect()),
            Y::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
            Y::Flow(inner) => inner.to_json(),
        }
    }

    fn json(&self) -> String {
        self.to_json().to_string()
    }

    /// Flow style YAML: JSON with plain scalars where they are safe.
    fn flow(&self) -> String {
        match self {
            Y::Str(s) => scalar(s),
            Y::Int(i) => i.to_string(),
            Y::Bool(b) => b.to_string(),
            Y::Seq(items) => format!(
                "[{}]",
                items.iter().map(Y::flow).collect::<Vec<_>>().join(", ")
            ),
            Y::Map(entries) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", scalar(k), v.flow()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Y::Flow(inner) => inner.flow(),
        }
    }
}

/// How block YAML is laid out around an edit.
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// Columns a nested mapping is indented by.
    step: usize,
    /// Columns a sequence's dashes are indented from its key (0: `key:\n- a`).
    seq: usize,
}

/// Why an edit cannot be made (the pod spec is then left as it is, with a warning).
pub(crate) type Refusal = &'static str;

/// The five edits the inject core makes to a document's tree, as one output writes them: the
/// text splice here (`pullcheck inject`, byte-exact), or the object with the edits made, from
/// which the webhook's JSON patch is taken
/// (the object writer of [`crate::inject`]). The core decides; a writer only writes,
/// so that the two outputs cannot make different pods.
pub(crate) trait Writer {
    /// One written edit.
    type Edit;
    /// Adds `key: value` to the mapping `map` (before the first of `before` it has, where key
    /// order shows).
    fn insert_key(
        &self,
        map: NodeId,
        before: &[&str],
        key: &str,
        value: &Y,
    ) -> Result<Self::Edit, Refusal>;
    /// Sets the null value `value_node` of the key `key` to `value`.
    fn set_null(&self, key: NodeId, value_node: NodeId, value: &Y) -> Result<Self::Edit, Refusal>;
    /// Puts `items` at the front of the sequence `seq`.
    fn prepend(&self, seq: NodeId, items: &[Y]) -> Result<Self::Edit, Refusal>;
    /// Removes item `index` (of the sequence as read) of `seq`.
    fn remove_item(&self, seq: NodeId, index: usize) -> Result<Self::Edit, Refusal>;
    /// Replaces item `index` (of the sequence as read) of `seq` with `item`.
    fn replace_item(&self, seq: NodeId, index: usize, item: &Y) -> Result<Self::Edit, Refusal>;
}

/// Edits one input.
pub(crate) struct Splicer<'a> {
    text: &'a str,
    tree: &'a Tree,
    json: bool,
}

impl<'a> Splicer<'a> {
    /// `json`: the input is JSON, and what is inserted must be too.
    pub(crate) fn new(text: &'a str, tree: &'a Tree, json: bool) -> Splicer<'a> {
        Splicer { text, tree, json }
    }

    fn node(&self, id: NodeId) -> &super::tree::Node {
        &self.tree.nodes[id]
    }

    fn is_flow(&self, id: NodeId) -> bool {
        matches!(
            self.node(id).kind,
            Kind::Seq { flow: true, .. } | Kind::Map { flow: true, .. }
        )
    }

    /// Column (in characters) of a byte offset, and whether only blanks and `- ` precede it on
    /// its line.
    fn column(&self, at: usize) -> (usize, bool) {
        let line_start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let prefix = &self.text[line_start..at];
        (
            prefix.chars().count(),
            prefix.chars().all(|c| c == ' ' || c == '-'),
        )
    }

    /// Whether only spaces precede `at` on its line; that prefix.
    fn blank_prefix(&self, at: usize) -> Option<&'a str> {
        let line_start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let prefix = &self.text[line_start..at];
        prefix
            .chars()
            .all(|c| c == ' ' || c == '\t')
            .then_some(prefix)
    }

    /// The layout a block mapping already uses (defaults: 2 and 0, kubectl's).
    fn layout(&self, map: NodeId) -> Layout {
        let mut layout = Layout { step: 2, seq: 0 };
        let mut seq_seen = false;
        let mut step_seen = false;
        for &(k, v) in self.tree.entries(map) {
            let key_col = self.column(self.node(k).start).0;
            match &self.node(v).kind {
                Kind::Seq { items, flow: false } if !seq_seen => {
                    if let Some(&first) = items.first()
                        && let Some(dash) = self.dash(first)
                    {
                        layout.seq = self.column(dash).0.saturating_sub(key_col);
                        seq_seen = true;
                    }
                }
                Kind::Map {
                    entries,
                    flow: false,
                } if !step_seen => {
                    if let Some(&(k2, _)) = entries.first() {
                        let c = self.column(self.node(k2).start).0;
                        if c > key_col {
                            layout.step = c - key_col;
                            step_seen = true;
                        }
                    }
                }
                _ => {}
            }
        }
        layout
    }

    /// The `-` of a block sequence item.
    fn dash(&self, item: NodeId) -> Option<usize> {
        let start = self.node(item).start;
        let before = self.text[..start].trim_end_matches([' ', '\t', '\n', '\r']);
        before.ends_with('-').then(|| before.len() - 1)
    }

    /// After the line that `at` is on (past its newline), or `at` when it starts a line.
    fn line_end(&self, at: usize) -> usize {
        if at > 0 && self.text.as_bytes().get(at - 1) == Some(&b'\n') {
            return at;
        }
        match self.text[at..].find('\n') {
            Some(i) => at + i + 1,
            None => self.text.len(),
        }
    }

    /// Where to insert before the key at `at` (column `col`): above the comment lines at the
    /// same column right over it, which belong to that key. Only for a key alone on its line
    /// but for indentation.
    fn before_comments(&self, at: usize, col: usize) -> usize {
        let Some(prefix) = self.blank_prefix(at) else {
            return at;
        };
        let mut best = at;
        let mut line_start = at - prefix.len();
        while line_start > 0 {
            let prev_start = self.text[..line_start - 1].rfind('\n').map_or(0, |i| i + 1);
            let line = self.text[prev_start..line_start - 1].trim_end_matches('\r');
            let indent = line.len() - line.trim_start_matches(' ').len();
            if indent != col || !line[indent..].starts_with('#') {
                break;
            }
            best = prev_start + indent;
            line_start = prev_start;
        }
        best
    }

    fn flow_entry(&self, key: &str, value: &Y) -> String {
        if self.json {
            format!(
                "{}: {}",
                serde_json::Value::String(key.to_string()),
                value.json()
            )
        } else {
            format!("{}: {}", scalar(key), value.flow())
        }
    }

    fn flow_value(&self, value: &Y) -> String {
        if self.json {
            value.json()
        } else {
            value.flow()
        }
    }

    /// The layout for items of a sequence: that of the mapping in its first item.
    fn layout_around(&self, seq: NodeId) -> Layout {
        match self.tree.items(seq).first() {
            Some(&first) if self.tree.is_map(first) => self.layout(first),
            _ => Layout { step: 2, seq: 0 },
        }
    }

    /// The text of item `index` and the span it occupies, including what separates it from the
    /// next item (so that removing the span removes the item cleanly).
    fn item_span(&self, seq: NodeId, index: usize) -> Result<(usize, usize), Refusal> {
        let Kind::Seq { items, flow } = &self.node(seq).kind else {
            return Err("not a sequence");
        };
        let item = *items.get(index).ok_or("no such item")?;
        if *flow || self.json {
            let start = self.node(item).start;
            return Ok(match items.get(index + 1) {
                Some(&next) => (start, self.node(next).start),
                None if index > 0 => (self.node(items[index - 1]).end, self.node(item).end),
                None => (start, self.node(item).end),
            });
        }
        let dash = self.dash(item).ok_or("a sequence item without its `-`")?;
        Ok(match items.get(index + 1) {
            Some(&next) => (
                dash,
                self.dash(next).ok_or("a sequence item without its `-`")?,
            ),
            None if index > 0 => {
                let prev_end = self.line_end(self.node(items[index - 1]).end);
                (prev_end, self.line_end(self.node(item).end))
            }
            None => (dash, self.node(item).end),
        })
    }
}

impl Writer for Splicer<'_> {
    type Edit = Edit;

    /// Inserts `key: value` into a mapping, before the first of `before` it has (else before
    /// its first key).
    fn insert_key(
        &self,
        map: NodeId,
        before: &[&str],
        key: &str,
        value: &Y,
    ) -> Result<Edit, Refusal> {
        let tree = self.tree;
        let entries = match &self.node(map).kind {
            Kind::Map { entries, .. } => entries,
            _ => return Err("not a mapping"),
        };
        let target = before
            .iter()
            .find_map(|b| tree.own_entry(map, b))
            .map(|(k, _)| k)
            .or_else(|| entries.first().map(|(k, _)| *k));
        if self.is_flow(map) || self.json {
            let Some(k) = target else {
                let open = self.node(map).start;
                if !self.text[open..].starts_with('{') {
                    return Err("an empty mapping that is not `{}`");
                }
                return Ok(Edit {
                    at: open + 1,
                    remove: 0,
                    insert: self.flow_entry(key, value),
                });
            };
            let at = self.node(k).start;
            let sep = match self.blank_prefix(at) {
                Some(prefix) => format!(",\n{prefix}"),
                None => ", ".to_string(),
            };
            return Ok(Edit {
                at,
                remove: 0,
                insert: format!("{}{sep}", self.flow_entry(key, value)),
            });
        }
        let Some(k) = target else {
            return Err("an empty block mapping");
        };
        let key_at = self.node(k).start;
        let (col, clean) = self.column(key_at);
        if !clean {
            return Err("a key that does not start its line");
        }
        let at = self.before_comments(key_at, col);
        let layout = self.layout(map);
        let mut out = format!("{}:", scalar(key));
        write_value(&mut out, value, col, layout);
        out.push('\n');
        out.push_str(&" ".repeat(col));
        Ok(Edit {
            at,
            remove: 0,
            insert: out,
        })
    }

    /// Sets a null value (`key:`, `key: ~`) of `key` to `value`, in flow style.
    fn set_null(&self, key: NodeId, value_node: NodeId, value: &Y) -> Result<Edit, Refusal> {
        let v = self.node(value_node);
        if v.end > v.start {
            return Ok(Edit {
                at: v.start,
                remove: v.end - v.start,
                insert: self.flow_value(value),
            });
        }
        let key_end = self.node(key).end;
        let rest = &self.text[key_end..];
        let colon = rest.find(':').ok_or("no `:` after the key")?;
        if !rest[..colon].trim().is_empty() && !rest[..colon].trim().ends_with(['"', '\'']) {
            return Err("no `:` after the key");
        }
        Ok(Edit {
            at: key_end + colon + 1,
            remove: 0,
            insert: format!(" {}", self.flow_value(value)),
        })
    }

    /// Inserts items at the front of a sequence.
    fn prepend(&self, seq: NodeId, items: &[Y]) -> Result<Edit, Refusal> {
        let Kind::Seq {
            items: existing,
            flow,
        } = &self.node(seq).kind
        else {
            return Err("not a sequence");
        };
        if *flow || self.json {
            let rendered: Vec<String> = items.iter().map(|y| self.flow_value(y)).collect();
            let Some(&first) = existing.first() else {
                let open = self.node(seq).start;
                if !self.text[open..].starts_with('[') {
                    return Err("an empty sequence that is not `[]`");
                }
                return Ok(Edit {
                    at: open + 1,
                    remove: 0,
                    insert: rendered.join(", "),
                });
            };
            let at = self.node(first).start;
            let sep = match self.blank_prefix(at) {
                Some(prefix) => format!(",\n{prefix}"),
                None => ", ".to_string(),
            };
            return Ok(Edit {
                at,
                remove: 0,
                insert: format!("{}{sep}", rendered.join(&sep)),
            });
        }
        let first = *existing.first().ok_or("an empty block sequence")?;
        let dash = self.dash(first).ok_or("a sequence item without its `-`")?;
        let prefix = self
            .blank_prefix(dash)
            .ok_or("a sequence that does not start its line")?;
        let col = prefix.chars().count();
        let layout = self.layout_around(seq);
        let mut out = String::new();
        for item in items {
            write_item(&mut out, item, col, layout);
            out.push('\n');
            out.push_str(prefix);
        }
        Ok(Edit {
            at: self.before_comments(dash, col),
            remove: 0,
            insert: out,
        })
    }

    /// Removes item `index`; the only item of a block sequence becomes `[]`, two columns
    /// right of its dash (a block sequence may start at its key's column, a flow one may not).
    fn remove_item(&self, seq: NodeId, index: usize) -> Result<Edit, Refusal> {
        let (start, end) = self.item_span(seq, index)?;
        let only = self.tree.items(seq).len() == 1;
        let insert = if only && !(self.is_flow(seq) || self.json) {
            "  []"
        } else {
            ""
        };
        Ok(Edit {
            at: start,
            remove: end - start,
            insert: insert.to_string(),
        })
    }

    /// Replaces item `index` with `item`.
    fn replace_item(&self, seq: NodeId, index: usize, item: &Y) -> Result<Edit, Refusal> {
        let items = self.tree.items(seq);
        let node = *items.get(index).ok_or("no such item")?;
        if self.is_flow(seq) || self.json {
            let n = self.node(node);
            return Ok(Edit {
                at: n.start,
                remove: n.end - n.start,
                insert: self.flow_value(item),
            });
        }
        let dash = self.dash(node).ok_or("a sequence item without its `-`")?;
        let prefix = self
            .blank_prefix(dash)
            .ok_or("a sequence that does not start its line")?;
        let col = prefix.chars().count();
        let end = self.node(node).end;
        let mut out = String::new();
        write_item(&mut out, item, col, self.layout_around(seq));
        Ok(Edit {
            at: dash,
            remove: end - dash,
            insert: out,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Tree {
        let mut t = Tree::default();
        t.parse_yaml(text, 0).expect("parses");
        t
    }

    #[test]
    fn plain_scalars_only_when_unambiguous() {
        for plain in [
            "check",
            "10m",
            "16Mi",
            "--timeout",
            "-q",
            "registry.example.com/a:1",
            "/var/run/x",
            "RuntimeDefault",
        ] {
            assert!(plain_ok(plain), "{plain}");
        }
        for quoted in [
            "",
            "yes",
            "On",
            "1_000",
            "0440",
            "0x1F",
            "12:30",
            "1e3",
            "30",
            "-1",
            "a b",
            "a: b",
            "#x",
            "*a",
            "[x]",
            "--",
            "-",
            "2024-01-01",
            "3.5",
        ] {
            assert!(!plain_ok(quoted), "{quoted}");
        }
    }

    #[test]
    fn keys_go_before_their_sibling_in_the_mapping_style() {
        let text = "spec:\n  # the app\n  containers:\n    - name: a\n      image: x\n";
        let t = tree(text);
        let spec = t.get(t.docs[0].root, "spec").expect("spec");
        let s = Splicer::new(text, &t, false);
        let value = Y::Seq(vec![Y::map([
            ("name", Y::s("b")),
            ("args", Y::Flow(Box::new(Y::Seq(vec![Y::s("check")])))),
        ])]);
        let e = s
            .insert_key(spec, &["containers"], "initContainers", &value)
            .expect("edit");
        assert_eq!(
            apply(text, &[e]),
            "spec:\n  initContainers:\n    - name: b\n      args: [check]\n  # the app\n  containers:\n    - name: a\n      image: x\n"
        );
    }

    #[test]
    fn items_go_first_in_block_and_flow_sequences() {
        let text = "a:\n- x: 1\n  y: 2\nb: [1, 2]\nc: []\n";
        let t = tree(text);
        let root = t.docs[0].root;
        let s = Splicer::new(text, &t, false);
        let item = Y::map([("k", Y::s("v")), ("n", Y::Int(3))]);
        let edits = [
            s.prepend(t.get(root, "a").expect("a"), std::slice::from_ref(&item))
                .expect("a"),
            s.prepend(t.get(root, "b").expect("b"), &[Y::Int(0)])
                .expect("b"),
            s.prepend(t.get(root, "c").expect("c"), &[item]).expect("c"),
        ];
        assert_eq!(
            apply(text, &edits),
            "a:\n- k: v\n  \"n\": 3\n- x: 1\n  y: 2\nb: [0, 1, 2]\nc: [{k: v, \"n\": 3}]\n"
        );
    }

    #[test]
    fn json_stays_json() {
        let text = "{\n  \"spec\": {\n    \"containers\": [{\"name\": \"a\"}]\n  }\n}";
        let t = tree(text);
        let spec = t.get(t.docs[0].root, "spec").expect("spec");
        let s = Splicer::new(text, &t, true);
        let e = s
            .insert_key(
                spec,
                &["containers"],
                "initContainers",
                &Y::Seq(vec![Y::map([("name", Y::s("p"))])]),
            )
            .expect("edit");
        let out = apply(text, &[e]);
        assert_eq!(
            out,
            "{\n  \"spec\": {\n    \"initContainers\": [{\"name\":\"p\"}],\n    \"containers\": [{\"name\": \"a\"}]\n  }\n}"
        );
        let _: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    }

    #[test]
    fn comments_over_a_key_or_item_stay_with_it() {
        let text = "l:\n  # the first\n  - name: a\nm:\n  k: 1\n  # about c\n  # more\n  c: 2\n";
        let t = tree(text);
        let root = t.docs[0].root;
        let s = Splicer::new(text, &t, false);
        let e1 = s
            .prepend(t.get(root, "l").expect("l"), &[Y::s("new")])
            .expect("prepend");
        let e2 = s
            .insert_key(t.get(root, "m").expect("m"), &["c"], "b", &Y::Int(0))
            .expect("insert");
        assert_eq!(
            apply(text, &[e1, e2]),
            "l:\n  - new\n  # the first\n  - name: a\nm:\n  k: 1\n  b: 0\n  # about c\n  # more\n  c: 2\n"
        );
    }

    #[test]
    fn items_are_replaced_and_removed_whole() {
        let text = "l:\n- name: a # ours\n  v: 1\n- name: b\nm:\n- name: c\n- name: d\n";
        let t = tree(text);
        let root = t.docs[0].root;
        let s = Splicer::new(text, &t, false);
        let l = t.get(root, "l").expect("l");
        let m = t.get(root, "m").expect("m");
        let e1 = s
            .replace_item(l, 0, &Y::map([("name", Y::s("z"))]))
            .expect("replace");
        let e2 = s.remove_item(m, 1).expect("remove");
        assert_eq!(
            apply(text, &[e1, e2]),
            "l:\n- name: z\n- name: b\nm:\n- name: c\n"
        );
    }

    #[test]
    fn overlapping_edits_are_dropped_whole() {
        let edits = [
            Edit {
                at: 1,
                remove: 2,
                insert: "X".into(),
            },
            Edit {
                at: 2,
                remove: 0,
                insert: "Y".into(),
            },
        ];
        assert_eq!(apply("abcd", &edits), "aXd");
    }
}
