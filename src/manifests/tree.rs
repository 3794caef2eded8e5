//! The documents of a manifest file as a tree of nodes that remember where they are in the text.
//!
//! `serde_yaml_ng` gives values without positions, so an edit could only be written back by
//! re-emitting the whole document, which loses what the user wrote (octal `0440`, `1_000`,
//! `yes`, quoting, comments, anchors). `saphyr-parser` (a maintained, pure-Rust YAML 1.2 event
//! parser) gives every event with its start and end in the input; the nodes here keep those
//! spans (as byte offsets), so that `splice` can edit the text at the few places that change.
//!
//! Values are read as kubectl reads them (go-yaml, YAML 1.1 rules): `yes`/`on` are booleans,
//! `0440` is octal, `1_000` is 1000. Aliases are not expanded: an alias is a node of its own
//! that reading follows, so a "billion laughs" input costs no memory. JSON is read by the same
//! parser (JSON is YAML's flow style); several JSON values in a row are split with `serde_json`
//! first, since YAML needs `---` between documents.

use saphyr_parser::{Event, Parser, ScalarStyle};
use std::collections::HashMap;

/// Index of a node in [`Tree::nodes`].
pub(crate) type NodeId = usize;

/// Nesting deeper than this is refused (as `serde_json` and `serde_yaml_ng` do).
pub(crate) const MAX_DEPTH: usize = 128;

/// One node and its span in the input (byte offsets, end exclusive).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// First byte.
    pub(crate) start: usize,
    /// Byte after the last (for a block collection, after its last content, not at the next
    /// token as the parser reports it).
    pub(crate) end: usize,
    /// The anchor id (0: none).
    pub(crate) anchor: usize,
    /// What the node is.
    pub(crate) kind: Kind,
}

impl Node {
    /// A scalar node: its decoded value, and whether written plain.
    fn scalar(value: String, plain: bool, anchor: usize, start: usize, end: usize) -> Node {
        Node {
            start,
            end,
            anchor,
            kind: Kind::Scalar { value, plain },
        }
    }
}

/// The kinds of node.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// A scalar: its value and whether it was plain (unquoted, not a block scalar): only plain
    /// scalars are resolved to null, booleans and numbers.
    Scalar {
        /// The value as the parser decoded it.
        value: String,
        /// Written without quotes or block indicator.
        plain: bool,
    },
    /// A sequence: its items, and whether written in flow style (`[…]`).
    Seq {
        /// The items.
        items: Vec<NodeId>,
        /// `[…]` rather than `- ` lines.
        flow: bool,
    },
    /// A mapping: its entries (key, value), and whether written in flow style (`{…}`).
    Map {
        /// The entries in document order.
        entries: Vec<(NodeId, NodeId)>,
        /// `{…}` rather than `key: value` lines.
        flow: bool,
    },
    /// An alias (`*name`) to the node with this anchor id.
    Alias(usize),
}

/// One document: its root node and where it is in the input.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    /// The root node.
    pub(crate) root: NodeId,
    /// First byte of the document's text (its `---` if any).
    pub(crate) start: usize,
    /// Byte after its text.
    pub(crate) end: usize,
}

/// All documents of an input.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    /// Every node; children are indices into this.
    pub(crate) nodes: Vec<Node>,
    /// The documents, in order (empty documents included, as a null root).
    pub(crate) docs: Vec<Doc>,
    /// Anchor id → the anchored node.
    anchors: HashMap<usize, NodeId>,
    /// Whether some mapping key is a mapping or a sequence: never Kubernetes, and what an
    /// unquoted Go template (`{{ .Values.x }}`) reads as.
    pub(crate) complex_key: bool,
    /// How many aliases point at each anchor id (an edit inside an anchored node would change
    /// every alias too).
    alias_count: HashMap<usize, usize>,
    /// Documents read so far (when read one at a time, `docs` stays empty).
    count: usize,
}

/// What to do after one document, when they are read one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Read on.
    Go,
    /// Stop reading: the input must be read whole.
    Stop,
}

/// What is given each document when they are read one at a time: the tree, the document's
/// 0-based number and its root.
pub(crate) type Each<'a> = &'a mut dyn FnMut(&Tree, usize, NodeId) -> Next;

/// What a read one document at a time gives: `Err(Stopped)` when it stopped early.
pub(crate) type Parsed = Result<Result<(), Stopped>, ParseError>;

/// Why reading one document at a time stopped before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stopped;

/// Why the text could not be read.
#[derive(Debug, Clone)]
pub(crate) struct ParseError {
    /// 1-based document number.
    pub(crate) document: usize,
    /// 1-based line in the whole input.
    pub(crate) line: usize,
    /// 1-based column.
    pub(crate) column: usize,
    /// The parser's message (it never quotes the document).
    pub(crate) message: String,
}

/// Char index → byte offset, for non-ASCII input (the parser counts characters).
struct Offsets {
    table: Option<Vec<usize>>,
    base: usize,
}

impl Offsets {
    fn new(text: &str, base: usize) -> Offsets {
        let table = (!text.is_ascii()).then(|| {
            let mut t: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
            t.push(text.len());
            t
        });
        Offsets { table, base }
    }

    fn byte(&self, index: usize) -> usize {
        self.base
            + match &self.table {
                Some(t) => t
                    .get(index)
                    .copied()
                    .unwrap_or_else(|| t.last().copied().unwrap_or(0)),
                None => index,
            }
    }
}

impl Tree {
    /// Parses YAML text (one or more documents). `base` is added to every offset and
    /// `first_document`/`first_line` to numbers in errors (for JSON values read one by one).
    pub(crate) fn parse_yaml(&mut self, text: &str, base: usize) -> Result<(), ParseError> {
        self.parse_stream(text, base, None).map(|_| ())
    }

    /// As [`Tree::parse_yaml`], but one document at a time: `each` is given the tree of each
    /// document as soon as its root is complete (with the document's 0-based number and its
    /// root), and the nodes are dropped after it, so that only one document's tree lives at
    /// once. An alias to an anchor of an earlier document (YAML streams allow it) cannot be
    /// followed then, nor can an earlier document know it is aliased: reading stops
    /// (`Ok(Err(Stopped))`) and the input is to be read whole. So it does when `each` says
    /// [`Next::Stop`].
    pub(crate) fn parse_each(&mut self, text: &str, base: usize, each: Each<'_>) -> Parsed {
        self.parse_stream(text, base, Some(each))
    }

    fn parse_stream(&mut self, text: &str, base: usize, mut each: Option<Each<'_>>) -> Parsed {
        let offsets = Offsets::new(text, base);
        let mut parser = Parser::new_from_str(text);
        // Open collections: (node, pending key of a mapping).
        let mut stack: Vec<(NodeId, Option<NodeId>)> = Vec::new();
        // Keys seen in each open mapping (a duplicate key is an error, as for kubectl).
        let mut keys: Vec<std::collections::HashSet<String>> = Vec::new();
        let mut doc_start = base;
        let mut document = self.count;
        let mut in_doc = false;
        let error = |document: usize, line: usize, col: usize, message: String| ParseError {
            document: document.max(1),
            line,
            column: col + 1,
            message,
        };
        while let Some(next) = parser.next_event() {
            let (event, span) = match next {
                Ok(e) => e,
                Err(e) => {
                    let m = e.marker();
                    let opened = usize::from(!in_doc);
                    return Err(error(document + opened, m.line(), m.col(), clip(e.info())));
                }
            };
            let start = offsets.byte(span.start.index());
            let end = offsets.byte(span.end.index());
            let node = match event {
                Event::DocumentStart(_) => {
                    document += 1;
                    in_doc = true;
                    doc_start = start;
                    continue;
                }
                Event::DocumentEnd => {
                    in_doc = false;
                    if let Some(doc) = self.docs.last_mut() {
                        doc.end = doc.end.max(end);
                    }
                    continue;
                }
                Event::StreamStart | Event::StreamEnd | Event::Nothing => continue,
                Event::Scalar(value, style, anchor, tag) => {
                    // `!!str 1.5` is the string "1.5", as quotes would make it.
                    let string_tag = tag
                        .as_ref()
                        .is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "str");
                    let plain = style == ScalarStyle::Plain && !string_tag;
                    Node::scalar(value.into_owned(), plain, anchor, start, end)
                }
                Event::Alias(id) => {
                    if each.is_some() && !self.anchors.contains_key(&id) {
                        return Ok(Err(Stopped));
                    }
                    *self.alias_count.entry(id).or_default() += 1;
                    Node {
                        start,
                        end,
                        anchor: 0,
                        kind: Kind::Alias(id),
                    }
                }
                Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(error(
                            document,
                            span.start.line(),
                            span.start.col(),
                            format!("nested more than {MAX_DEPTH} levels deep"),
                        ));
                    }
                    let flow =
                        matches!(text.get(start - base..), Some(t) if t.starts_with(['[', '{']));
                    let seq = matches!(event, Event::SequenceStart(..));
                    let id = self.open(seq, flow, anchor, start, end);
                    stack.push((id, None));
                    keys.push(std::collections::HashSet::new());
                    continue;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some((id, _)) = stack.pop() else { continue };
                    keys.pop();
                    self.close(id, end);
                    self.attach(&mut stack, id, doc_start);
                    if stack.is_empty() && self.hand_over(&mut each) == Next::Stop {
                        return Ok(Err(Stopped));
                    }
                    continue;
                }
            };
            if self.duplicate_key(&stack, &mut keys, &node) {
                return Err(error(
                    document,
                    span.start.line(),
                    span.start.col(),
                    "duplicate key in a mapping".to_string(),
                ));
            }
            let id = self.push(node);
            self.attach(&mut stack, id, doc_start);
            if stack.is_empty() && self.hand_over(&mut each) == Next::Stop {
                return Ok(Err(Stopped));
            }
        }
        Ok(Ok(()))
    }

    /// Whether `node`, the next node in the innermost of the open collections `stack`, is a key
    /// its mapping has already (`keys`: those of each open mapping); it is one of them after.
    fn duplicate_key(
        &self,
        stack: &[(NodeId, Option<NodeId>)],
        keys: &mut [std::collections::HashSet<String>],
        node: &Node,
    ) -> bool {
        let is_key = matches!(stack.last(), Some((p, None)) if matches!(self.nodes[*p].kind, Kind::Map { .. }));
        if is_key
            && let Kind::Scalar { value, .. } = &node.kind
            && let Some(seen) = keys.last_mut()
        {
            return !seen.insert(value.clone());
        }
        false
    }

    /// A new, empty collection node (a sequence or a mapping), opened at `start`.
    fn open(&mut self, seq: bool, flow: bool, anchor: usize, start: usize, end: usize) -> NodeId {
        let kind = if seq {
            Kind::Seq {
                items: Vec::new(),
                flow,
            }
        } else {
            Kind::Map {
                entries: Vec::new(),
                flow,
            }
        };
        self.push(Node {
            start,
            end,
            anchor,
            kind,
        })
    }

    /// Closes collection `id` at `end` (a flow collection's closing bracket), or where its
    /// last child ends (a block one).
    fn close(&mut self, id: NodeId, end: usize) {
        // A block collection can start where its first child does (`- {a: 1}` in
        // an indentless sequence starts at the `{`): a flow one never does.
        let first = match &self.nodes[id].kind {
            Kind::Seq { items, .. } => items.first().copied(),
            Kind::Map { entries, .. } => entries.first().map(|(k, _)| *k),
            _ => None,
        };
        if first.is_some_and(|f| self.nodes[f].start == self.nodes[id].start) {
            match &mut self.nodes[id].kind {
                Kind::Seq { flow, .. } | Kind::Map { flow, .. } => *flow = false,
                _ => {}
            }
        }
        let flow = matches!(
            self.nodes[id].kind,
            Kind::Seq { flow: true, .. } | Kind::Map { flow: true, .. }
        );
        let last = self.last_child(id);
        self.nodes[id].end = if flow {
            end
        } else {
            last.map_or(self.nodes[id].start, |c| self.nodes[c].end)
        };
    }

    /// When documents are read one at a time: gives the document just completed to `each`,
    /// then drops its nodes (their memory is kept for the next one).
    fn hand_over(&mut self, each: &mut Option<Each<'_>>) -> Next {
        let Some(each) = each else { return Next::Go };
        let Some(doc) = self.docs.pop() else {
            return Next::Go;
        };
        let next = each(self, self.count - 1, doc.root);
        self.nodes.clear();
        self.anchors.clear();
        self.alias_count.clear();
        next
    }

    /// The tree of one JSON value as [`Tree::parse_yaml`] reads its text (strings quoted, the
    /// other scalars plain, collections in flow style), without spans: for an object that was
    /// never text (the webhook's), edited as an object and never spliced. `None` when it nests
    /// deeper than [`MAX_DEPTH`], which the parser refuses too.
    #[cfg(feature = "webhook")]
    pub(crate) fn from_json(value: &serde_json::Value) -> Option<Tree> {
        let mut tree = Tree::default();
        let root = tree.push_json(value, 0)?;
        tree.docs.push(Doc {
            root,
            start: 0,
            end: 0,
        });
        tree.count = 1;
        Some(tree)
    }

    /// Pushes `value`'s node, parents before children as the parser does.
    #[cfg(feature = "webhook")]
    fn push_json(&mut self, value: &serde_json::Value, depth: usize) -> Option<NodeId> {
        use serde_json::Value;
        let scalar = |value: String, plain: bool| Node::scalar(value, plain, 0, 0, 0);
        let id = match value {
            Value::Null => return Some(self.push(scalar("null".into(), true))),
            Value::Bool(b) => return Some(self.push(scalar(b.to_string(), true))),
            Value::Number(n) => return Some(self.push(scalar(n.to_string(), true))),
            Value::String(s) => return Some(self.push(scalar(s.clone(), false))),
            Value::Array(_) => self.open(true, true, 0, 0, 0),
            Value::Object(_) => self.open(false, true, 0, 0, 0),
        };
        if depth >= MAX_DEPTH {
            return None;
        }
        match value {
            Value::Array(list) => {
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    items.push(self.push_json(item, depth + 1)?);
                }
                self.nodes[id].kind = Kind::Seq { items, flow: true };
            }
            Value::Object(map) => {
                let mut entries = Vec::with_capacity(map.len());
                for (key, item) in map {
                    let key = self.push(scalar(key.clone(), false));
                    entries.push((key, self.push_json(item, depth + 1)?));
                }
                self.nodes[id].kind = Kind::Map {
                    entries,
                    flow: true,
                };
            }
            _ => {}
        }
        Some(id)
    }

    fn push(&mut self, node: Node) -> NodeId {
        if node.anchor != 0 {
            self.anchors.insert(node.anchor, self.nodes.len());
        }
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn last_child(&self, id: NodeId) -> Option<NodeId> {
        match &self.nodes[id].kind {
            Kind::Seq { items, .. } => items.last().copied(),
            Kind::Map { entries, .. } => entries.last().map(|&(k, v)| {
                // An empty value (`key:`) has an empty span: the key ends the entry.
                if self.nodes[v].end > self.nodes[k].end {
                    v
                } else {
                    k
                }
            }),
            _ => None,
        }
    }

    /// Puts a finished node into its parent (or makes it a document's root).
    fn attach(&mut self, stack: &mut [(NodeId, Option<NodeId>)], id: NodeId, doc_start: usize) {
        let Some((parent, pending)) = stack.last_mut() else {
            self.count += 1;
            let end = self.nodes[id].end;
            self.docs.push(Doc {
                root: id,
                start: doc_start,
                end,
            });
            return;
        };
        let parent = *parent;
        match &mut self.nodes[parent].kind {
            Kind::Seq { items, .. } => items.push(id),
            Kind::Map { entries, .. } => match pending.take() {
                Some(key) => entries.push((key, id)),
                None => {
                    *pending = Some(id);
                    let is_scalar =
                        matches!(self.nodes[id].kind, Kind::Scalar { .. } | Kind::Alias(_));
                    self.complex_key |= !is_scalar;
                }
            },
            _ => {}
        }
    }

    /// Follows aliases (a bounded number of times) to the node they name.
    pub(crate) fn resolve(&self, mut id: NodeId) -> NodeId {
        for _ in 0..MAX_DEPTH {
            match self.nodes[id].kind {
                Kind::Alias(a) => match self.anchors.get(&a) {
                    Some(&target) => id = target,
                    None => return id,
                },
                _ => return id,
            }
        }
        id
    }

    /// Whether an alias elsewhere refers to this node (so editing it would edit them too).
    pub(crate) fn is_aliased(&self, id: NodeId) -> bool {
        let a = self.nodes[id].anchor;
        a != 0 && self.alias_count.get(&a).is_some_and(|n| *n > 0)
    }

    /// The mapping entries of a node (through aliases), else none.
    pub(crate) fn entries(&self, id: NodeId) -> &[(NodeId, NodeId)] {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Map { entries, .. } => entries,
            _ => &[],
        }
    }

    /// The items of a sequence (through aliases), else none.
    pub(crate) fn items(&self, id: NodeId) -> &[NodeId] {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Seq { items, .. } => items,
            _ => &[],
        }
    }

    /// The entry for `key` written in this mapping itself (no merge keys): (key node, value node).
    pub(crate) fn own_entry(&self, map: NodeId, key: &str) -> Option<(NodeId, NodeId)> {
        self.entries(map)
            .iter()
            .find(|(k, _)| self.scalar(*k) == Some(key))
            .copied()
    }

    /// The value of `key` in a mapping, following aliases and `<<` merge keys (as kubectl's
    /// YAML reader does); the value node is resolved.
    pub(crate) fn get(&self, map: NodeId, key: &str) -> Option<NodeId> {
        self.get_depth(map, key, 0)
    }

    fn get_depth(&self, map: NodeId, key: &str, depth: usize) -> Option<NodeId> {
        if depth > 8 {
            return None;
        }
        if let Some((_, v)) = self.own_entry(map, key) {
            return Some(self.resolve(v));
        }
        let (_, merge) = self.own_entry(map, "<<")?;
        let merge = self.resolve(merge);
        match &self.nodes[merge].kind {
            Kind::Map { .. } => self.get_depth(merge, key, depth + 1),
            Kind::Seq { items, .. } => items
                .iter()
                .find_map(|&m| self.get_depth(self.resolve(m), key, depth + 1)),
            _ => None,
        }
    }

    /// Whether a mapping has a `<<` merge key.
    pub(crate) fn has_merge(&self, map: NodeId) -> bool {
        self.own_entry(map, "<<").is_some()
    }

    /// The text of a scalar (any style), `None` for other nodes and plain nulls.
    pub(crate) fn scalar(&self, id: NodeId) -> Option<&str> {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Scalar { value, plain } if !(*plain && is_null_word(value)) => Some(value),
            _ => None,
        }
    }

    /// `get` then `scalar`.
    pub(crate) fn str_at(&self, map: NodeId, key: &str) -> Option<&str> {
        self.get(map, key).and_then(|v| self.scalar(v))
    }

    /// Whether a node is null (a plain `~`, `null` or nothing).
    pub(crate) fn is_null(&self, id: NodeId) -> bool {
        matches!(&self.nodes[self.resolve(id)].kind,
            Kind::Scalar { value, plain: true } if is_null_word(value))
    }

    /// Whether a node is a mapping / a sequence (through aliases).
    pub(crate) fn is_map(&self, id: NodeId) -> bool {
        matches!(self.nodes[self.resolve(id)].kind, Kind::Map { .. })
    }

    /// See [`Tree::is_map`].
    pub(crate) fn is_seq(&self, id: NodeId) -> bool {
        matches!(self.nodes[self.resolve(id)].kind, Kind::Seq { .. })
    }

    /// A YAML 1.1 boolean (plain `true`, `yes`, `on`, `y`… in their cases).
    pub(crate) fn as_bool(&self, id: NodeId) -> Option<bool> {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Scalar { value, plain: true } => bool_word(value),
            _ => None,
        }
    }

    /// A YAML 1.1 integer (plain: `_` separators, `0x`, `0b`, leading-`0` octal).
    pub(crate) fn as_i64(&self, id: NodeId) -> Option<i64> {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Scalar { value, plain: true } => int_word(value),
            _ => None,
        }
    }

    /// The node as kubectl reads it (YAML 1.1 scalars, merge keys applied), for comparisons.
    /// `None` past [`MAX_DEPTH`] levels of aliases or nesting, or when aliases would expand it
    /// past four times the input's nodes (a "billion laughs" would take all memory).
    pub(crate) fn to_json(&self, id: NodeId) -> Option<serde_json::Value> {
        let mut budget = self.nodes.len().saturating_mul(4).saturating_add(1024);
        self.to_json_depth(id, 0, &mut budget)
    }

    fn to_json_depth(
        &self,
        id: NodeId,
        depth: usize,
        budget: &mut usize,
    ) -> Option<serde_json::Value> {
        use serde_json::Value;
        if depth > MAX_DEPTH || *budget == 0 {
            return None;
        }
        *budget -= 1;
        let id = self.resolve(id);
        Some(match &self.nodes[id].kind {
            Kind::Scalar { value, plain } => {
                if !plain {
                    Value::String(value.clone())
                } else if is_null_word(value) {
                    Value::Null
                } else if let Some(b) = bool_word(value) {
                    Value::Bool(b)
                } else if let Some(i) = int_word(value) {
                    Value::Number(i.into())
                } else if let Some(f) = float_word(value) {
                    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
                } else {
                    Value::String(value.clone())
                }
            }
            Kind::Seq { items, .. } => Value::Array(
                items
                    .iter()
                    .map(|&i| self.to_json_depth(i, depth + 1, budget))
                    .collect::<Option<_>>()?,
            ),
            Kind::Map { entries, .. } => {
                let mut map = serde_json::Map::new();
                for &(k, v) in entries {
                    let key = self.scalar(k).unwrap_or_default();
                    if key == "<<" {
                        let merged = self.to_json_depth(v, depth + 1, budget)?;
                        let parts = match merged {
                            Value::Array(a) => a,
                            other => vec![other],
                        };
                        for part in parts {
                            if let Value::Object(o) = part {
                                for (mk, mv) in o {
                                    map.entry(mk).or_insert(mv);
                                }
                            }
                        }
                        continue;
                    }
                    map.insert(key.to_string(), self.to_json_depth(v, depth + 1, budget)?);
                }
                Value::Object(map)
            }
            Kind::Alias(_) => Value::Null,
        })
    }
}

fn is_null_word(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

fn bool_word(s: &str) -> Option<bool> {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Some(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Some(false)
        }
        _ => None,
    }
}

/// YAML 1.1 `!!int`: `[-+]?0b[01_]+`, `[-+]?0[0-7_]+`, `[-+]?(0|[1-9][0-9_]*)`, `[-+]?0x[0-9a-fA-F_]+`.
fn int_word(s: &str) -> Option<i64> {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() || body.starts_with('_') {
        return None;
    }
    let digits: String = body.chars().filter(|c| *c != '_').collect();
    let (radix, digits) = if let Some(d) = digits.strip_prefix("0x") {
        (16, d.to_string())
    } else if let Some(d) = digits.strip_prefix("0b") {
        (2, d.to_string())
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, digits[1..].to_string())
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let value = i64::from_str_radix(&digits, radix).ok()?;
    Some(if negative { -value } else { value })
}

/// YAML 1.1 `!!float` (enough of it to tell numbers from strings).
fn float_word(s: &str) -> Option<f64> {
    let t = s.replace('_', "");
    let digits = t.trim_start_matches(['-', '+']);
    let looks = digits.contains('.')
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
        && digits
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '.');
    if looks {
        return t.parse().ok();
    }
    match digits {
        ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN" => Some(0.0),
        _ => None,
    }
}

/// At most 160 characters, control characters replaced.
fn clip(s: &str) -> String {
    s.chars()
        .take(160)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_scalars() {
        for (text, want) in [
            ("0440", Some(288)),
            ("1_000", Some(1000)),
            ("0x1F", Some(31)),
            ("0b101", Some(5)),
            ("-12", Some(-12)),
            ("0", Some(0)),
            ("08", None),
            ("1.5", None),
            ("abc", None),
        ] {
            assert_eq!(int_word(text), want, "{text}");
        }
        assert_eq!(bool_word("yes"), Some(true));
        assert_eq!(bool_word("Off"), Some(false));
        assert_eq!(bool_word("yep"), None);
    }

    #[test]
    fn spans_are_byte_offsets_and_block_ends_are_at_content() {
        let text = "a: é\nb:\n  - x: 1\n    y: 2\n\n# c\nc: d\n";
        let mut tree = Tree::default();
        tree.parse_yaml(text, 0).expect("parses");
        let root = tree.docs[0].root;
        let b = tree.get(root, "b").expect("b");
        let node = &tree.nodes[b];
        assert_eq!(&text[node.start..node.end], "- x: 1\n    y: 2");
        let c = tree.get(root, "c").expect("c");
        assert_eq!(&text[tree.nodes[c].start..tree.nodes[c].end], "d");
    }

    #[test]
    fn aliases_are_followed_not_copied() {
        let text = "a: &x {k: v}\nb: *x\nc:\n  <<: *x\n  m: 1\n";
        let mut tree = Tree::default();
        tree.parse_yaml(text, 0).expect("parses");
        let root = tree.docs[0].root;
        let b = tree.get(root, "b").expect("b");
        assert_eq!(tree.str_at(b, "k"), Some("v"));
        let c = tree.get(root, "c").expect("c");
        assert_eq!(tree.str_at(c, "k"), Some("v"));
        assert!(tree.is_aliased(tree.get(root, "a").expect("a")));
        assert_eq!(tree.to_json(c), Some(serde_json::json!({"k": "v", "m": 1})));
    }

    #[test]
    fn expanding_aliases_is_bounded() {
        // Ten levels of nine aliases: 9^10 nodes if expanded. Found comparing documents with
        // kubectl's reading, which took all memory here.
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        for i in 0..10 {
            let p = if i == 0 {
                "a".to_string()
            } else {
                format!("l{}", i - 1)
            };
            text.push_str(&format!(
                "l{i}: &l{i} [{}]\n",
                vec![format!("*{p}"); 9].join(", ")
            ));
        }
        let mut tree = Tree::default();
        tree.parse_yaml(&text, 0).expect("parses");
        assert_eq!(tree.to_json(tree.docs[0].root), None);
        let small = "a: &a [x, z]\nb: [*a, *a, *a]\n";
        let mut tree = Tree::default();
        tree.parse_yaml(small, 0).expect("parses");
        assert_eq!(
            tree.to_json(tree.docs[0].root),
            Some(serde_json::json!({"a": ["x", "z"], "b": [["x", "z"], ["x", "z"], ["x", "z"]]}))
        );
    }
}
