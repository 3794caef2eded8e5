//! Reads Kubernetes manifests (YAML with one or more `---` documents, or JSON)
//! and lists the images a kubelet would pull for the pod(s) they describe:
//! `Pod`s, `PodTemplate`s, the workload kinds that embed a pod template
//! (`Deployment`, `Job`, `CronJob`, …) and `List`s of them. Parsing is bounded
//! (nesting depth, YAML alias expansion, flow nesting before libyaml sees it)
//! and error messages never quote values from the document.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, VariantAccess, Visitor};
use serde_json::{Map, Value};

/// One image of a pod spec, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodImage {
    pub image: String,
    /// `"<Kind>/<metadata.name> container <name>"`, e.g. `"Job/train initContainer fetch"` — for messages
    pub origin: String,
}

/// Where in the input an object is: a document (1-based) and, inside Lists,
/// the item numbers (1-based, outermost first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRef {
    pub document: usize,
    pub items: Vec<usize>,
}

impl DocRef {
    fn item(&self, index: usize) -> DocRef {
        let mut items = self.items.clone();
        items.push(index + 1);
        DocRef {
            document: self.document,
            items,
        }
    }
}

impl fmt::Display for DocRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "document {}", self.document)?;
        for (i, item) in self.items.iter().enumerate() {
            if i == 0 {
                write!(f, " item {item}")?;
            } else {
                write!(f, ".{item}")?;
            }
        }
        Ok(())
    }
}

/// Why a manifest could not be turned into a list of images. `input` is the
/// `source` given to [`images_from_manifests`]. Messages name the input and the
/// document, never values from the document.
#[derive(Debug, thiserror::Error)]
pub enum PodSpecError {
    #[error("pod spec {input}: no Kubernetes objects (the input is empty or only comments)")]
    Empty { input: String },

    #[error("pod spec {input}: document {document} is not valid JSON: {message}")]
    Json {
        input: String,
        document: usize,
        message: String,
    },

    #[error("pod spec {input}: document {document} could not be read as YAML: {message}")]
    Yaml {
        input: String,
        document: usize,
        message: String,
    },

    #[error("pod spec {input}: {at} is {found}, not a Kubernetes object")]
    NotAnObject {
        input: String,
        at: DocRef,
        found: &'static str,
    },

    #[error(
        "pod spec {input}: {at} has no `kind` string (and no `containers`, so it is not a bare pod spec either)"
    )]
    MissingKind { input: String, at: DocRef },

    #[error(
        "pod spec {input}: {at} is a {kind}, not a Pod or workload (Pod, Deployment, Job, CronJob, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, PodTemplate or a List of them)"
    )]
    UnsupportedKind {
        input: String,
        at: DocRef,
        kind: String,
    },

    #[error("pod spec {input}: {at} is a {kind} with no items")]
    EmptyList {
        input: String,
        at: DocRef,
        kind: String,
    },

    #[error("pod spec {input}: {at}: {object} has no pod spec at `{path}`")]
    MissingPodSpec {
        input: String,
        at: DocRef,
        object: String,
        path: &'static str,
    },

    #[error("pod spec {input}: {at}: {object} has no containers")]
    NoContainers {
        input: String,
        at: DocRef,
        object: String,
    },

    #[error("pod spec {input}: {at}: {object}: {problem}")]
    InvalidPodSpec {
        input: String,
        at: DocRef,
        object: String,
        problem: String,
    },

    #[error("pod spec {input}: {at}: {container} {problem}")]
    InvalidContainer {
        input: String,
        at: DocRef,
        /// Same form as [`PodImage::origin`].
        container: String,
        problem: &'static str,
    },
}

/// Nesting deeper than this is refused (`serde_json` and `serde_yaml_ng` use the same limit).
const MAX_DEPTH: usize = 128;
/// Longest parser message kept in an error.
const MAX_PARSER_MESSAGE: usize = 160;
/// Longest kind or name copied from the document into a message or origin.
const MAX_NAME: usize = 64;
/// Deepest `[`/`{` nesting let through to the YAML parser (see [`check_flow_depth`]).
const MAX_FLOW_DEPTH: u32 = 256;
/// Approximate bytes charged per parsed YAML node.
const NODE_COST: usize = 32;
/// Room beyond what the input's own size accounts for, for legitimate YAML aliases.
const ALIAS_ALLOWANCE: usize = 32 << 20;

/// `source` names the input in messages ("stdin" or a path). Returns the images of every pod spec found, in order:
/// for each pod spec, `initContainers` then `containers`; leaves out containers with `imagePullPolicy: Never`
/// and any container named `pullcheck` (that is us). Does not de-duplicate (the caller does).
///
/// # Errors
///
/// [`PodSpecError`] when the input is empty, does not parse, holds an object
/// that is not a pod or workload, or a pod spec without containers or with a
/// container without a usable image. The first problem found is reported.
pub fn images_from_manifests(text: &str, source: &str) -> Result<Vec<PodImage>, PodSpecError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        // YAML would reject a tab-only input instead of seeing no document.
        return Err(PodSpecError::Empty {
            input: source.to_owned(),
        });
    }
    let walker = Walker { input: source };
    let mut out = Vec::new();
    let mut objects = 0usize;

    let mut handle = |document: usize, value: Value| -> Result<(), PodSpecError> {
        if value.is_null() {
            return Ok(());
        }
        objects += 1;
        let at = DocRef {
            document,
            items: Vec::new(),
        };
        walker.document(&value, &at, &mut out)
    };

    if text.trim_start().starts_with(['{', '[']) {
        let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        for (index, result) in stream.enumerate() {
            let document = index + 1;
            let value = result.map_err(|e| PodSpecError::Json {
                input: source.to_owned(),
                document,
                message: clip(&e.to_string(), MAX_PARSER_MESSAGE),
            })?;
            handle(document, value)?;
        }
    } else {
        check_flow_depth(text, MAX_FLOW_DEPTH).map_err(|(document, line)| PodSpecError::Yaml {
            input: source.to_owned(),
            document,
            message: format!(
                "`[`/`{{` nested more than {MAX_FLOW_DEPTH} levels deep at line {line}"
            ),
        })?;
        let mut budget = text
            .len()
            .saturating_mul(NODE_COST / 2)
            .saturating_add(ALIAS_ALLOWANCE);
        // On a parse error the iterator would go on yielding the error: stop at the first.
        for (index, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let document = index + 1;
            let seed = Node {
                budget: &mut budget,
                depth: 0,
            };
            let value = seed.deserialize(doc).map_err(|e| PodSpecError::Yaml {
                input: source.to_owned(),
                document,
                message: yaml_message(&e),
            })?;
            handle(document, value)?;
        }
    }

    if objects == 0 {
        return Err(PodSpecError::Empty {
            input: source.to_owned(),
        });
    }
    Ok(out)
}

/// serde_yaml_ng's message, with the location it leaves out at the very start of the input.
fn yaml_message(error: &serde_yaml_ng::Error) -> String {
    let mut message = clip(&error.to_string(), MAX_PARSER_MESSAGE);
    match error.location() {
        Some(location) if !message.contains(" line ") => {
            message = format!(
                "{message} at line {} column {}",
                location.line(),
                location.column()
            );
        }
        _ => {}
    }
    message
}

/// Where the pod spec of each supported kind is: its keys, and them joined for messages.
fn pod_spec_path(kind: &str) -> Option<(&'static [&'static str], &'static str)> {
    Some(match kind {
        "Pod" => (&["spec"], "spec"),
        "PodTemplate" => (&["template", "spec"], "template.spec"),
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "ReplicationController"
        | "Job" => (&["spec", "template", "spec"], "spec.template.spec"),
        "CronJob" => (
            &["spec", "jobTemplate", "spec", "template", "spec"],
            "spec.jobTemplate.spec.template.spec",
        ),
        _ => return None,
    })
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

struct Walker<'a> {
    input: &'a str,
}

impl Walker<'_> {
    /// One top-level document: an object, or a bare array of objects.
    fn document(
        &self,
        value: &Value,
        at: &DocRef,
        out: &mut Vec<PodImage>,
    ) -> Result<(), PodSpecError> {
        match value {
            Value::Array(items) => self.items(items, "list", None, at, out),
            _ => self.object(value, None, at, out),
        }
    }

    fn items(
        &self,
        items: &[Value],
        kind: &str,
        item_kind: Option<&str>,
        at: &DocRef,
        out: &mut Vec<PodImage>,
    ) -> Result<(), PodSpecError> {
        if items.is_empty() {
            return Err(PodSpecError::EmptyList {
                input: self.input.to_owned(),
                at: at.clone(),
                kind: clip(kind, MAX_NAME),
            });
        }
        for (index, item) in items.iter().enumerate() {
            self.object(item, item_kind, &at.item(index), out)?;
        }
        Ok(())
    }

    /// `default_kind` is the kind implied by a typed list (`PodList` → `Pod`),
    /// whose items may leave `kind` out.
    fn object(
        &self,
        value: &Value,
        default_kind: Option<&str>,
        at: &DocRef,
        out: &mut Vec<PodImage>,
    ) -> Result<(), PodSpecError> {
        let Value::Object(object) = value else {
            return Err(PodSpecError::NotAnObject {
                input: self.input.to_owned(),
                at: at.clone(),
                found: type_name(value),
            });
        };
        let kind = match object.get("kind") {
            Some(Value::String(kind)) if !kind.is_empty() => kind.as_str(),
            None | Some(Value::Null) => match default_kind {
                Some(kind) => kind,
                None if object.contains_key("containers") => {
                    return self.pod_spec(value, "pod spec", at, out);
                }
                None => return Err(self.missing_kind(at)),
            },
            Some(_) => return Err(self.missing_kind(at)),
        };

        if let Some((path, dotted)) = pod_spec_path(kind) {
            let label = format!("{}/{}", clip(kind, MAX_NAME), object_name(object));
            let spec = path.iter().try_fold(value, |v, key| v.get(key));
            return match spec {
                Some(spec @ Value::Object(_)) => self.pod_spec(spec, &label, at, out),
                _ => Err(PodSpecError::MissingPodSpec {
                    input: self.input.to_owned(),
                    at: at.clone(),
                    object: label,
                    path: dotted,
                }),
            };
        }

        if let Some(item_kind) = kind.strip_suffix("List") {
            let item_kind = (!item_kind.is_empty()).then_some(item_kind);
            return match object.get("items") {
                Some(Value::Array(items)) => self.items(items, kind, item_kind, at, out),
                None | Some(Value::Null) => Err(PodSpecError::EmptyList {
                    input: self.input.to_owned(),
                    at: at.clone(),
                    kind: clip(kind, MAX_NAME),
                }),
                Some(other) => Err(PodSpecError::InvalidPodSpec {
                    input: self.input.to_owned(),
                    at: at.clone(),
                    object: clip(kind, MAX_NAME),
                    problem: format!("`items` is {}, not a list", type_name(other)),
                }),
            };
        }

        Err(PodSpecError::UnsupportedKind {
            input: self.input.to_owned(),
            at: at.clone(),
            kind: clip(kind, MAX_NAME),
        })
    }

    fn missing_kind(&self, at: &DocRef) -> PodSpecError {
        PodSpecError::MissingKind {
            input: self.input.to_owned(),
            at: at.clone(),
        }
    }

    fn pod_spec(
        &self,
        spec: &Value,
        label: &str,
        at: &DocRef,
        out: &mut Vec<PodImage>,
    ) -> Result<(), PodSpecError> {
        let invalid = |problem: String| PodSpecError::InvalidPodSpec {
            input: self.input.to_owned(),
            at: at.clone(),
            object: label.to_owned(),
            problem,
        };
        let list = |field: &str| -> Result<&[Value], PodSpecError> {
            match spec.get(field) {
                None | Some(Value::Null) => Ok(&[]),
                Some(Value::Array(items)) => Ok(items),
                Some(other) => Err(invalid(format!(
                    "`{field}` is {}, not a list",
                    type_name(other)
                ))),
            }
        };
        let init = list("initContainers")?;
        let main = list("containers")?;
        if main.is_empty() {
            return Err(PodSpecError::NoContainers {
                input: self.input.to_owned(),
                at: at.clone(),
                object: label.to_owned(),
            });
        }

        for (field, role, containers) in [
            ("initContainers", "initContainer", init),
            ("containers", "container", main),
        ] {
            for (index, container) in containers.iter().enumerate() {
                let Value::Object(container) = container else {
                    return Err(invalid(format!(
                        "entry {} of `{field}` is {}, not a container",
                        index + 1,
                        type_name(container)
                    )));
                };
                let name = container.get("name").and_then(Value::as_str);
                if name == Some("pullcheck") {
                    continue;
                }
                if container.get("imagePullPolicy").and_then(Value::as_str) == Some("Never") {
                    continue;
                }
                let name = match name {
                    Some(name) if !name.is_empty() => clip(name, MAX_NAME),
                    _ => format!("#{}", index + 1),
                };
                let origin = format!("{label} {role} {name}");
                let bad = |problem| PodSpecError::InvalidContainer {
                    input: self.input.to_owned(),
                    at: at.clone(),
                    container: origin.clone(),
                    problem,
                };
                let image = match container.get("image") {
                    None | Some(Value::Null) => return Err(bad("has no image")),
                    Some(Value::String(image)) => image,
                    Some(_) => return Err(bad("has an image that is not a string")),
                };
                if image.trim().is_empty() {
                    return Err(bad("has an empty image"));
                }
                if image.trim() != image {
                    return Err(bad("has an image with leading or trailing whitespace"));
                }
                out.push(PodImage {
                    image: image.clone(),
                    origin,
                });
            }
        }
        Ok(())
    }
}

/// `metadata.name`, else `metadata.generateName` and `*`, else `(unnamed)`.
fn object_name(object: &Map<String, Value>) -> String {
    let metadata = object.get("metadata");
    let field = |key| metadata.and_then(|m| m.get(key)).and_then(Value::as_str);
    match (field("name"), field("generateName")) {
        (Some(name), _) if !name.is_empty() => clip(name, MAX_NAME),
        (_, Some(prefix)) if !prefix.is_empty() => format!("{}*", clip(prefix, MAX_NAME)),
        _ => "(unnamed)".to_owned(),
    }
}

/// At most `max` characters of `s`, control characters replaced, "…" when cut.
fn clip(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

// ---------------------------------------------------------------------------
// Flow nesting pre-check
//
// libyaml's scanner walks its stack of possible simple keys, one per open flow
// collection, for every token, so `[a, [a, [a, …` takes time quadratic in the
// nesting depth (160 KB: seconds; 1 MB: minutes) before serde_yaml_ng's
// recursion limit is ever reached. So the text is scanned first for an upper
// bound of that depth.
//
// The scan cannot know for sure whether a quote starts a quoted scalar, a `#`
// a comment or a `!` a tag, so it follows every reading at once (a small
// nondeterministic automaton), keeping for each lexical state the deepest
// nesting any reading reaches. Every `[`/`{` that libyaml counts is counted
// in the reading that matches libyaml's, so the bound is never below libyaml's
// depth; it can be above it (unbalanced brackets inside block scalars or
// multi-line plain scalars), hence a limit well above the 128 that
// serde_yaml_ng enforces anyway.

/// Line breaks as libyaml knows them.
fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// What libyaml skips between tokens (a byte order mark included).
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{feff}') || is_break(c)
}

#[derive(Clone, Copy)]
enum Lex {
    Plain,
    /// Plain, after a quoted scalar, tag or anchor (where another token may start).
    AfterToken,
    Double,
    DoubleEscape,
    Single,
    Comment,
    /// A tag, anchor or alias, up to the next blank.
    Tag,
}

const LEX_STATES: [Lex; 7] = [
    Lex::Plain,
    Lex::AfterToken,
    Lex::Double,
    Lex::DoubleEscape,
    Lex::Single,
    Lex::Comment,
    Lex::Tag,
];

/// `Err((document, line))` (both 1-based, the document approximate) where the
/// bound first passes `limit` ([`MAX_FLOW_DEPTH`]).
fn check_flow_depth(text: &str, limit: u32) -> Result<(), (usize, usize)> {
    // Deepest nesting reached by a reading that is now in each Lex state.
    let mut depth: [Option<u32>; LEX_STATES.len()] = [None; LEX_STATES.len()];
    depth[Lex::Plain as usize] = Some(0);
    let mut line = 1;
    let mut document = 1;
    let mut document_open = false; // a `---` or content since the last document boundary
    let mut prev: Option<char> = None;
    let mut prev_nonblank: Option<char> = None;
    let mut line_blank = true; // only blanks so far on this line

    for (i, c) in text.char_indices() {
        if prev.is_none_or(is_break) {
            let rest = text.get(i..).unwrap_or_default();
            let marker = ["---", "..."].into_iter().find(|m| {
                rest.strip_prefix(m)
                    .is_some_and(|after| after.chars().next().is_none_or(is_blank))
            });
            if let Some(marker) = marker {
                // A document boundary: libyaml is back at depth 0 or fails here.
                depth = [None; LEX_STATES.len()];
                depth[Lex::Plain as usize] = Some(0);
                if document_open {
                    document += 1;
                }
                document_open = marker == "---";
            } else if !is_blank(c) && c != '#' {
                document_open = true;
            }
        }

        let blank = is_blank(c);
        // Could a token (quoted scalar, flow collection) start here? Over-approximated.
        // In block context (depth 0) flow indicators are plain text.
        let start_anywhere = line_blank || matches!(prev_nonblank, None | Some('?' | ':' | '-'));
        let start_in_flow = matches!(prev_nonblank, Some('[' | ']' | '{' | '}' | ','));
        let after_blank = prev.is_none_or(is_blank);

        let mut next: [Option<u32>; LEX_STATES.len()] = [None; LEX_STATES.len()];
        let mut put = |state: Lex, d: u32| {
            let slot = &mut next[state as usize];
            *slot = Some(slot.map_or(d, |old| old.max(d)));
        };
        for state in LEX_STATES {
            let Some(d) = depth[state as usize] else {
                continue;
            };
            match state {
                Lex::Plain | Lex::AfterToken => {
                    let token_may_start = start_anywhere
                        || (d > 0 && start_in_flow)
                        || matches!(state, Lex::AfterToken);
                    match c {
                        // At depth 0 libyaml is in block context, where a bracket
                        // inside a plain scalar (`echo a[1`) is just text.
                        '[' | '{' if d > 0 || token_may_start => {
                            put(Lex::Plain, d.saturating_add(1))
                        }
                        ']' | '}' => put(Lex::Plain, d.saturating_sub(1)),
                        '"' | '\'' if token_may_start => {
                            put(Lex::Plain, d);
                            put(if c == '"' { Lex::Double } else { Lex::Single }, d);
                        }
                        '#' if after_blank => put(Lex::Comment, d),
                        '#' => {
                            put(Lex::Plain, d);
                            put(Lex::Comment, d);
                        }
                        '!' | '&' | '*' => {
                            put(Lex::Plain, d);
                            put(Lex::Tag, d);
                        }
                        _ if blank => put(state, d),
                        _ => put(Lex::Plain, d),
                    }
                }
                Lex::Double => match c {
                    '\\' => put(Lex::DoubleEscape, d),
                    '"' => put(Lex::AfterToken, d),
                    _ => put(Lex::Double, d),
                },
                Lex::DoubleEscape => put(Lex::Double, d),
                Lex::Single => put(
                    if c == '\'' {
                        Lex::AfterToken
                    } else {
                        Lex::Single
                    },
                    d,
                ),
                Lex::Comment => put(
                    if is_break(c) {
                        Lex::Plain
                    } else {
                        Lex::Comment
                    },
                    d,
                ),
                Lex::Tag => put(if blank { Lex::AfterToken } else { Lex::Tag }, d),
            }
        }
        depth = next;
        if depth.iter().flatten().any(|&d| d > limit) {
            return Err((document, line));
        }

        if is_break(c) {
            if !(c == '\r' && text.get(i + 1..).is_some_and(|r| r.starts_with('\n'))) {
                line += 1;
            }
            line_blank = true;
        } else if !blank {
            line_blank = false;
        }
        if !blank {
            prev_nonblank = Some(c);
        }
        prev = Some(c);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Bounded YAML → serde_json::Value
//
// serde_yaml_ng refuses nesting deeper than 128 and stops alias "billion
// laughs" after a number of alias jumps, but a few aliases to a large node can
// still expand to far more memory than the input. This seed charges every node
// and string against a budget proportional to the input size, keeps its own
// depth limit, refuses non-string and duplicate keys, applies `<<` merge keys
// (as Kubernetes' YAML reader does) and drops custom tags.

fn charge<E: de::Error>(budget: &mut usize, cost: usize) -> Result<(), E> {
    match budget.checked_sub(cost) {
        Some(left) => {
            *budget = left;
            Ok(())
        }
        None => Err(E::custom(
            "the document expands to too much data (YAML aliases?)",
        )),
    }
}

struct Node<'b> {
    budget: &'b mut usize,
    depth: usize,
}

impl Node<'_> {
    fn child(&mut self) -> Node<'_> {
        Node {
            budget: &mut *self.budget,
            depth: self.depth + 1,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom("nested too deeply"));
        }
        charge(self.budget, NODE_COST)?;
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or_else(|_| Value::from(v as f64), Value::from))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Ok(u64::try_from(v).map_or_else(|_| Value::from(v as f64), Value::from))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // NaN and infinities have no JSON form; Value::from maps them to null.
        Ok(Value::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        charge(self.budget, v.len())?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.child())? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        let mut merges = Vec::new();
        while let Some(key) = map.next_key_seed(Key {
            budget: &mut *self.budget,
        })? {
            let value = map.next_value_seed(self.child())?;
            if key == "<<" {
                merges.push(value);
            } else if object.contains_key(&key) {
                return Err(de::Error::custom("duplicate mapping key"));
            } else {
                object.insert(key, value);
            }
        }
        // Keys written in the mapping win over merged ones; earlier merged maps win over later.
        for merge in merges {
            let sources = match merge {
                Value::Object(source) => vec![source],
                Value::Array(items) => items
                    .into_iter()
                    .map(|item| match item {
                        Value::Object(source) => Ok(source),
                        _ => Err(de::Error::custom("`<<` merge list holds a non-mapping")),
                    })
                    .collect::<Result<Vec<_>, A::Error>>()?,
                _ => return Err(de::Error::custom("`<<` merge value is not a mapping")),
            };
            for source in sources {
                for (key, value) in source {
                    object.entry(key).or_insert(value);
                }
            }
        }
        Ok(Value::Object(object))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        // serde_yaml_ng reports a custom tag (`!foo value`) as an enum: keep the value.
        let (IgnoredAny, variant) = data.variant::<IgnoredAny>()?;
        variant.newtype_variant_seed(self)
    }
}

/// A mapping key: only strings are accepted, as in Kubernetes objects.
struct Key<'b> {
    budget: &'b mut usize,
}

impl Key<'_> {
    fn not_a_string<E: de::Error>() -> E {
        E::custom("mapping key is not a string")
    }
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string mapping key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        charge(self.budget, NODE_COST.saturating_add(v.len()))?;
        Ok(v.to_owned())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_none<E: de::Error>(self) -> Result<String, E> {
        Err(Self::not_a_string())
    }

    fn visit_some<D: de::Deserializer<'de>>(self, _: D) -> Result<String, D::Error> {
        Err(Self::not_a_string())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(Self::not_a_string())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(Self::not_a_string())
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(Self::not_a_string())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn images(text: &str) -> Vec<(String, String)> {
        images_from_manifests(text, "test.yaml")
            .unwrap()
            .into_iter()
            .map(|p| (p.image, p.origin))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(i, o)| ((*i).to_owned(), (*o).to_owned()))
            .collect()
    }

    fn error(text: &str) -> String {
        let err = images_from_manifests(text, "stdin").unwrap_err();
        let message = err.to_string();
        assert!(message.starts_with("pod spec stdin: "), "{message}");
        assert!(message.chars().count() <= 300, "too long: {message}");
        message
    }

    const POD_YAML: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:1.27
  - name: sidecar
    image: ghcr.io/acme/sidecar@sha256:0123
";

    #[test]
    fn pod_yaml() {
        assert_eq!(
            images(POD_YAML),
            pairs(&[
                ("nginx:1.27", "Pod/web container app"),
                (
                    "ghcr.io/acme/sidecar@sha256:0123",
                    "Pod/web container sidecar"
                ),
            ])
        );
    }

    #[test]
    fn pod_json() {
        let text = r#"
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
         "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}"#;
        assert_eq!(
            images(text),
            pairs(&[("nginx:1.27", "Pod/web container app")])
        );
    }

    #[test]
    fn multi_document_yaml_with_trailing_separator() {
        let text = "\
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: 'registry.example.com/web:2'}
---
# a comment-only document between objects
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      initContainers:
      - name: fetch
        image: busybox
      containers:
      - name: main
        image: pytorch/pytorch:2
      restartPolicy: Never
---
";
        assert_eq!(
            images(text),
            pairs(&[
                ("registry.example.com/web:2", "Deployment/web container app"),
                ("busybox", "Job/train initContainer fetch"),
                ("pytorch/pytorch:2", "Job/train container main"),
            ])
        );
    }

    #[test]
    fn cronjob() {
        let text = "\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: '0 3 * * *'
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: backup
            image: acme/backup:1
";
        assert_eq!(
            images(text),
            pairs(&[("acme/backup:1", "CronJob/nightly container backup")])
        );
    }

    fn workload(kind: &str) -> String {
        format!(
            "apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  name: w\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: img:{kind}\n"
        )
    }

    #[test]
    fn statefulset() {
        assert_eq!(
            images(&workload("StatefulSet")),
            pairs(&[("img:StatefulSet", "StatefulSet/w container c")])
        );
    }

    #[test]
    fn daemonset() {
        assert_eq!(
            images(&workload("DaemonSet")),
            pairs(&[("img:DaemonSet", "DaemonSet/w container c")])
        );
    }

    #[test]
    fn replicaset() {
        assert_eq!(
            images(&workload("ReplicaSet")),
            pairs(&[("img:ReplicaSet", "ReplicaSet/w container c")])
        );
    }

    #[test]
    fn replication_controller() {
        assert_eq!(
            images(&workload("ReplicationController")),
            pairs(&[(
                "img:ReplicationController",
                "ReplicationController/w container c"
            )])
        );
    }

    #[test]
    fn pod_template() {
        let text = "kind: PodTemplate\nmetadata: {name: t}\ntemplate:\n  spec:\n    containers: [{name: c, image: x}]\n";
        assert_eq!(images(text), pairs(&[("x", "PodTemplate/t container c")]));
    }

    #[test]
    fn list_of_two_pods_yaml() {
        let text = "\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec: {containers: [{name: c, image: img-a}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec: {containers: [{name: c, image: img-b}]}
";
        assert_eq!(
            images(text),
            pairs(&[
                ("img-a", "Pod/a container c"),
                ("img-b", "Pod/b container c")
            ])
        );
    }

    #[test]
    fn list_of_two_pods_json() {
        let text = r#"{"apiVersion":"v1","kind":"List","items":[
            {"kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"img-a"}]}},
            {"kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"img-b"}]}}
        ]}"#;
        assert_eq!(
            images(text),
            pairs(&[
                ("img-a", "Pod/a container c"),
                ("img-b", "Pod/b container c")
            ])
        );
    }

    #[test]
    fn typed_list_items_without_kind() {
        // The API server's PodList leaves `kind` out of its items.
        let text = r#"{"kind":"PodList","items":[{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"img-a"}]}}]}"#;
        assert_eq!(images(text), pairs(&[("img-a", "Pod/a container c")]));
    }

    #[test]
    fn bare_pod_spec() {
        let text = "containers:\n- name: c\n  image: alpine\n";
        assert_eq!(images(text), pairs(&[("alpine", "pod spec container c")]));
    }

    #[test]
    fn init_containers_before_containers() {
        let text = "\
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: main, image: main-img}
  initContainers:
  - {name: init1, image: init-img-1}
  - {name: init2, image: init-img-2}
";
        assert_eq!(
            images(text),
            pairs(&[
                ("init-img-1", "Pod/p initContainer init1"),
                ("init-img-2", "Pod/p initContainer init2"),
                ("main-img", "Pod/p container main"),
            ])
        );
    }

    #[test]
    fn image_pull_policy_never_excluded() {
        let text = "\
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: local, image: local-only, imagePullPolicy: Never}
  - {name: remote, image: remote-img, imagePullPolicy: IfNotPresent}
";
        assert_eq!(
            images(text),
            pairs(&[("remote-img", "Pod/p container remote")])
        );
    }

    #[test]
    fn pullcheck_container_excluded() {
        let text = "\
kind: Pod
metadata: {name: p}
spec:
  initContainers:
  - {name: pullcheck, image: ghcr.io/acme/pullcheck:1}
  containers:
  - {name: app, image: app-img}
";
        assert_eq!(images(text), pairs(&[("app-img", "Pod/p container app")]));
    }

    #[test]
    fn duplicates_kept() {
        let text = "kind: Pod\nmetadata: {name: p}\nspec:\n  initContainers: [{name: a, image: x}]\n  containers: [{name: b, image: x}]\n";
        assert_eq!(images(text).len(), 2);
    }

    #[test]
    fn yaml_merge_keys_and_anchors() {
        let text = "\
kind: Pod
metadata: {name: p}
spec:
  containers:
  - &base {name: a, image: shared, imagePullPolicy: Always}
  - <<: *base
    name: b
";
        assert_eq!(
            images(text),
            pairs(&[
                ("shared", "Pod/p container a"),
                ("shared", "Pod/p container b")
            ])
        );
    }

    #[test]
    fn secret_is_an_error_naming_secret() {
        let text =
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  password: c2VjcmV0\n";
        let message = error(&format!("{POD_YAML}---\n{text}"));
        assert_eq!(
            message,
            "pod spec stdin: document 2 is a Secret, not a Pod or workload (Pod, Deployment, Job, CronJob, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, PodTemplate or a List of them)"
        );
    }

    #[test]
    fn configmap_is_an_error() {
        let message = error("kind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n");
        assert!(message.contains("document 1 is a ConfigMap"), "{message}");
    }

    #[test]
    fn list_item_of_other_kind_is_an_error() {
        let message =
            error(r#"{"kind":"List","items":[{"kind":"Service","metadata":{"name":"s"}}]}"#);
        assert!(
            message.contains("document 1 item 1 is a Service"),
            "{message}"
        );
    }

    #[test]
    fn empty_list_is_an_error() {
        let message = error("apiVersion: v1\nkind: List\nitems: []\n");
        assert!(message.contains("is a List with no items"), "{message}");
    }

    #[test]
    fn missing_kind_is_an_error() {
        let message = error(
            "apiVersion: v1\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: b}]\n",
        );
        assert!(message.contains("document 1 has no `kind`"), "{message}");
    }

    #[test]
    fn no_containers_is_an_error() {
        let message = error(
            "kind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: []\n",
        );
        assert_eq!(
            message,
            "pod spec stdin: document 1: Deployment/web has no containers"
        );
        let message = error(
            "kind: Pod\nmetadata: {name: p}\nspec:\n  initContainers: [{name: a, image: b}]\n",
        );
        assert!(message.contains("Pod/p has no containers"), "{message}");
    }

    #[test]
    fn missing_pod_spec_is_an_error() {
        let message = error("kind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n");
        assert!(
            message.contains("Deployment/web has no pod spec at `spec.template.spec`"),
            "{message}"
        );
    }

    #[test]
    fn container_without_image_is_an_error() {
        let message = error("kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app}]\n");
        assert_eq!(
            message,
            "pod spec stdin: document 1: Pod/p container app has no image"
        );
        let message = error(
            "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app, image: ''}]\n",
        );
        assert!(
            message.contains("container app has an empty image"),
            "{message}"
        );
        let message = error(
            "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app, image: [a]}]\n",
        );
        assert!(
            message.contains("container app has an image that is not a string"),
            "{message}"
        );
    }

    #[test]
    fn not_yaml_at_all() {
        for text in [
            "{{{",
            ": : :",
            "[[[",
            "kind: Pod\n  bad: indentation\n x",
            "just some words",
        ] {
            let message = error(text);
            assert!(!message.contains("kind: Pod"), "{message}");
            if text != "just some words" {
                assert!(message.contains(" line "), "{message}");
            }
        }
        let message = error("{{{");
        assert!(
            message.contains("not valid JSON") && message.contains("line 1 column 2"),
            "{message}"
        );
    }

    #[test]
    fn binary_garbage() {
        let mut state: u32 = 0x1234_5678;
        let bytes: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state.to_le_bytes()[0]
            })
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        error(&text);
        error("\u{0}\u{1}\u{2}ELF\u{7f}");
    }

    #[test]
    fn empty_input() {
        for text in [
            "",
            "   \n\t\n",
            "# only a comment\n",
            "---\n",
            "---\n---\n...\n",
        ] {
            let message = error(text);
            assert!(message.contains("no Kubernetes objects"), "{message}");
        }
    }

    #[test]
    fn deep_nesting_json_is_an_error_not_a_crash() {
        let open = "[".repeat(10_000);
        error(&open);
        let balanced = format!("{open}{}", "]".repeat(10_000));
        let message = error(&balanced);
        assert!(message.contains("recursion limit"), "{message}");
        let objects = format!("{}1{}", r#"{"a":"#.repeat(10_000), "}".repeat(10_000));
        error(&objects);
    }

    #[test]
    fn deep_nesting_yaml_is_an_error_not_a_crash() {
        let open = format!("kind: Pod\nspec: {}", "[".repeat(10_000));
        error(&open);
        let balanced = format!(
            "kind: Pod\nspec: {}{}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        error(&balanced);
        let maps = format!(
            "kind: Pod\nspec: {}1{}",
            "{a: ".repeat(10_000),
            "}".repeat(10_000)
        );
        error(&maps);
        let block = format!("{}a", "- ".repeat(10_000));
        let message = error(&block);
        assert!(message.contains("recursion limit exceeded"), "{message}");
        // Under the flow pre-check's limit: serde_yaml_ng's own limit applies.
        let message = error(&format!("kind: Pod\nspec: {}", "[".repeat(200)));
        assert!(message.contains("recursion limit exceeded"), "{message}");
    }

    #[test]
    fn billion_laughs_is_bounded() {
        let text = r#"
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
kind: Pod
"#;
        error(text);
    }

    #[test]
    fn wide_alias_expansion_is_bounded() {
        // Few alias jumps (under serde_yaml_ng's repetition limit) but each one
        // copies a large node: caught by the memory budget.
        let big = format!("'{}'", "x".repeat(16 * 1024));
        let base = vec![big; 64].join(",");
        let aliases = vec!["*a"; 20_000].join(",");
        let text = format!("kind: Pod\na: &a [{base}]\nb: [{aliases}]\n");
        let message = error(&text);
        assert!(message.contains("too much data"), "{message}");
    }

    #[test]
    fn non_string_keys_are_an_error() {
        let message = error("kind: Pod\nspec:\n  1: x\n");
        assert!(message.contains("mapping key is not a string"), "{message}");
        error("? [a, b]\n: c\n");
        error("~: x\n");
    }

    #[test]
    fn duplicate_keys_are_an_error() {
        let message = error("kind: Pod\nspec:\n  containers: [{name: a, image: b, image: c}]\n");
        assert!(message.contains("duplicate mapping key"), "{message}");
    }

    #[test]
    fn custom_tags_are_read_as_their_value() {
        let text = "kind: !Tag Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: !img b}]\n";
        assert_eq!(images(text), pairs(&[("b", "Pod/p container a")]));
    }

    #[test]
    fn top_level_json_array_of_objects() {
        let text = r#"[{"kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x"}]}}]"#;
        assert_eq!(images(text), pairs(&[("x", "Pod/a container c")]));
    }

    #[test]
    fn concatenated_json_objects() {
        let pod = r#"{"kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x"}]}}"#;
        assert_eq!(images(&format!("{pod}\n{pod}")).len(), 2);
        let message = error(&format!("{pod}\n{{\"kind\":\"Secret\"}}"));
        assert!(message.contains("document 2 is a Secret"), "{message}");
    }

    #[test]
    fn messages_never_contain_document_values() {
        let secret =
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  password: c2VjcmV0\n";
        let json_secret = r#"{"kind":"Secret","data":{"password":"c2VjcmV0"}}"#;
        let cases = [
            secret.to_owned(),
            json_secret.to_owned(),
            format!("{POD_YAML}---\n{secret}"),
            // Parse errors right next to the value.
            format!("{secret}  other: [c2VjcmV0\n"),
            "kind: Secret\ndata: {password: c2VjcmV0, password: c2VjcmV0}\n".to_owned(),
            r#"{"kind":"Secret","data":{"password":"c2VjcmV0" "x"}}"#.to_owned(),
            "kind: Pod\nspec:\n  containers: [{name: a, image: [c2VjcmV0]}]\n".to_owned(),
            "c2VjcmV0\n".to_owned(),
            "kind: Secret\ndata:\n  password: !!binary c2VjcmV0\n  x: [c2VjcmV0\n".to_owned(),
        ];
        for text in &cases {
            let message = error(text);
            assert!(!message.contains("c2VjcmV0"), "{message}");
        }
    }

    #[test]
    fn long_and_control_characters_in_names_are_clipped() {
        let long = "k".repeat(5000);
        let message = error(&format!("kind: \"{long}\\n\\u001b[31m\"\n"));
        assert!(message.chars().count() < 320, "{message}");
        assert!(
            !message.contains('\u{1b}') && !message.contains('\n'),
            "{message}"
        );
    }

    #[test]
    fn byte_order_mark_is_ignored() {
        let text = format!("\u{feff}{POD_YAML}");
        assert_eq!(images(&text).len(), 2);
        let json = "\u{feff}{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}";
        assert_eq!(images(json).len(), 1);
    }

    fn timed_error(text: &str) -> String {
        let start = std::time::Instant::now();
        let message = error(text);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "took {:?}",
            start.elapsed()
        );
        message
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_the_quadratic_yaml_scanner() {
        let attacks = [
            format!("kind: Pod\nspec: {}", "[a, ".repeat(200_000)),
            format!("kind: Pod\nspec: {}", "{a: ".repeat(200_000)),
            // Closers hidden in quoted scalars, comments and tags must not cancel the openers.
            format!("kind: Pod\nspec: {}", "[ \"]}\", ".repeat(100_000)),
            format!("kind: Pod\nspec: {}", "['a]', ".repeat(100_000)),
            format!("kind: Pod\nspec: {}", "[a, #]]\n".repeat(100_000)),
            format!("kind: Pod\nspec: {}", "[!t a, \"]\", ".repeat(100_000)),
            format!("kind: Pod\nspec: {}", "[\"\\\"]\", ".repeat(100_000)),
            // An apostrophe inside a plain scalar does not hide the openers that follow.
            format!("kind: Pod\nnote: don't\nspec: {}", "[a, ".repeat(100_000)),
            format!("kind: Pod\nnote: a, 'b\nspec: {}", "[a, ".repeat(100_000)),
            // Line breaks and blanks other than \n and space.
            format!("kind: Pod\nspec: {}", "[a,\u{2028}\"]\", ".repeat(100_000)),
            format!(
                "kind: Pod\nspec: {}",
                "[a,\n\u{feff}\"]\", ".repeat(100_000)
            ),
            format!("kind: Pod\r\nspec: {}", "[a,\r'}', ".repeat(100_000)),
        ];
        for text in &attacks {
            let message = timed_error(text);
            assert!(
                message.contains("nested more than 256 levels deep"),
                "{message}"
            );
        }
        let message = error(&format!(
            "{POD_YAML}---\nkind: Pod\nspec: {}",
            "[".repeat(300)
        ));
        assert!(
            message.contains("document 2") && message.contains("line 13"),
            "{message}"
        );
    }

    #[test]
    fn flow_depth_check_lets_ordinary_manifests_through() {
        let doc = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    note: it's [not] closed [here
    regex: "^[a-z]+(\\[[0-9]+\\])?$"
    single: 'it''s [ fine'
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"x":"[{\"a\":1}]"}},"spec":{}}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app   # the [main] container
        image: nginx
        args: ["--pattern=[a-z", '--x={', "--y=}"]
        command: [sh, -c, 'if [ -f /x ]; then echo "{"; fi']
        env: [{name: A, value: "]"}, {name: B, value: '['}]
"#;
        let text = vec![doc; 400].join("---\n");
        assert!(check_flow_depth(&text, MAX_FLOW_DEPTH).is_ok());
        assert_eq!(images(&text).len(), 400);
        // One document with many brackets inside scalars.
        let body: String = (0..2000)
            .map(|i| format!("    k{i}: it's [x and \"[y\" and '{{z'\n"))
            .collect();
        let text = format!(
            "kind: Pod\nmetadata:\n  name: p\n  annotations:\n{body}spec:\n  containers: [{{name: a, image: b}}]\n"
        );
        assert!(check_flow_depth(&text, MAX_FLOW_DEPTH).is_ok());
    }

    /// Flow collections nested `depth` deep, with scalars, comments, tags and
    /// line breaks that hold or look like brackets and quotes at every level.
    pub(super) fn tricky_nesting(depth: usize, rng: &mut u64) -> String {
        let mut next = |n: u64| {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            usize::try_from(*rng % n).unwrap()
        };
        const ITEMS: [&str; 32] = [
            "a",
            "don't",
            "a'b",
            "x\"y",
            "a#b",
            "a:b",
            "a-b",
            "!t a",
            "!t \"]\"",
            "&x a",
            "\"]}\\\"]\"",
            "'a]''}'",
            "\"'\"",
            "'\"'",
            "\"#]\"",
            "'\\'",
            "\"k\":'}'",
            "? '['",
            "!<tag:x> ']'",
            "b",
            "&y\t'{'",
            "\"a\\\n]\"",
            "'a\n ]'",
            "!",
            "{a: '}'}",
            "[']', \"]\"]",
            "!!str ']'",
            "'' ",
            "\"\\\\\"",
            "\"x\" #']\n",
            "a '#",
            "\"\"",
        ];
        const SEPARATORS: [&str; 12] = [
            ", ",
            ",",
            ",\n ",
            ", #]}\n ",
            ",\u{2028}",
            ",\r\n ",
            " ,",
            ",\t",
            ",\u{85}",
            ", #'\n ",
            ", #\"]\n",
            ",\n\u{feff}",
        ];
        let mut text = String::new();
        let mut closers = Vec::new();
        for _ in 0..depth {
            if next(4) == 0 {
                text.push_str("{k: ");
                closers.push("}");
            } else {
                text.push('[');
                closers.push("]");
                for _ in 0..next(3) {
                    text.push_str(ITEMS[next(ITEMS.len() as u64)]);
                    text.push_str(SEPARATORS[next(SEPARATORS.len() as u64)]);
                }
            }
        }
        text.push('z');
        for closer in closers.into_iter().rev() {
            text.push_str(closer);
        }
        text
    }

    const CASES: usize = 400;
    const PREFIXES: [&str; 14] = [
        "spec: ",
        "- ",
        "? ",
        "\"k\": ",
        "k: !t ",
        "k: &a ",
        "k:\n  ",
        "- - ",
        "--- ",
        "k: |\n  x'\"[\nk2: ",
        "\"it's\": ",
        "k: 'don''t'\nk2: ",
        "# c'\"\nk: ",
        "k: a[b \"c\n  d'\nk2: ",
    ];

    #[test]
    fn flow_depth_bound_is_never_below_the_yaml_parsers_depth() {
        // Every generated document nests exactly 100 flow collections: when
        // libyaml accepts it, the bound must be at least 100, and not so far
        // above it that MAX_FLOW_DEPTH refuses it.
        let mut rng = 0x9e37_79b9_7f4a_7c15;
        let mut valid = 0;
        for case in 0..CASES {
            let prefix = PREFIXES[case % PREFIXES.len()];
            let text = format!("{prefix}{}\n", tricky_nesting(100, &mut rng));
            if serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text).is_ok() {
                valid += 1;
                assert!(check_flow_depth(&text, 99).is_err(), "{text:?}");
                assert!(check_flow_depth(&text, MAX_FLOW_DEPTH).is_ok(), "{text:?}");
            }
        }
        assert!(valid > CASES / 2, "only {valid} cases were valid YAML");
    }
}
