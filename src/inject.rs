//! `pullcheck inject`: manifests in, the same manifests out with the pullcheck init container
//! added to every pod spec.
//!
//! # What is a pod spec
//!
//! - a `Pod`'s `spec`;
//! - in every other kind, each `template` whose `spec` has a `containers` list, wherever it is in
//!   the object: `PodTemplate` (`template.spec`), the workloads (`spec.template.spec`), `CronJob`
//!   (`spec.jobTemplate.spec.template.spec`), and custom resources without code for each
//!   (Kubeflow `spec.pytorchReplicaSpecs.<type>.template.spec`, JobSet
//!   `spec.replicatedJobs[].template.spec.template.spec`, RayJob and RayCluster group specs…);
//! - `List` kinds (`List`, `PodList`, `DeploymentList`…): each of `items`.
//!
//! A document without a pod spec (a Service, a ConfigMap) is written back byte for byte.
//!
//! # What is injected
//!
//! An init container named `pullcheck`, first among `initContainers` (one already named so is
//! replaced): `args: [check, CHECK_ARGS…]`, `PULLCHECK_IMAGES` = the other images of the pod
//! spec (init containers, then containers, in order, without duplicates, leaving out
//! `imagePullPolicy: Never`), each pull secret (the pod's `imagePullSecrets`, then `--secret`)
//! mounted read-only at `/var/run/pullcheck/secrets/<name>` from a secret volume marked
//! `optional: true`, a restricted security context, small resources and
//! `terminationMessagePolicy: FallbackToLogsOnError`. See [`init_container`].
//!
//! Injecting into its own output changes nothing: the output is byte-identical. The volumes it
//! added are recognised (named `pullcheck-secret-…`, a secret, mounted by no other container) and
//! replaced, never duplicated.
//!
//! # Formats
//!
//! Input that starts with `{` or `[` is read as JSON (one value or several in a row) and written
//! as JSON, pretty-printed with the input's indentation (compact when the input was on one line);
//! unchanged values are copied as they were. It is read as YAML only when it has `---` document
//! markers (JSON documents in a YAML stream). Anything else is YAML, one or more documents.
//!
//! YAML documents that are not changed are copied from the input as they were. A changed
//! document is written by this module's own emitter: key order is kept, but **comments inside
//! it are lost** (those before its first key are kept), and so are anchors and aliases (expanded)
//! and the original quoting. Strings are quoted whenever a YAML 1.1 reader (kubectl's go-yaml,
//! PyYAML) could take them for something else: `"yes"`, `"on"`, `"1_000"`, `"0x1F"`, `"12:30"`
//! stay strings.

use crate::cli::DEFAULT_INJECT_IMAGE;
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};
use std::collections::HashSet;
use std::fmt::Write as _;

/// The name of the injected init container.
pub const CONTAINER_NAME: &str = "pullcheck";
/// Where the pull secrets are mounted, one folder per secret (`pullcheck check --secrets-dir`).
pub const SECRETS_DIR: &str = "/var/run/pullcheck/secrets";
/// The start of the names of the volumes that `inject` adds.
pub const VOLUME_PREFIX: &str = "pullcheck-secret-";
/// The user the init container runs as (distroless `nonroot`).
pub const RUN_AS_USER: u64 = 65532;

// Resources of the init container. A pod's effective request is the larger of its biggest init
// container's request and the sum of its app containers' requests, so requests this small never
// change where a pod fits (no node has less than 10m CPU and 16Mi to spare for a pod that fits
// otherwise). Limits are set too, so that a namespace whose ResourceQuota demands limits still
// admits the pod; a check measured at 5 MiB peak RSS for 40 images, and the CPU limit only slows
// the TLS handshakes a little.
/// CPU request of the init container.
pub const CPU_REQUEST: &str = "10m";
/// Memory request of the init container.
pub const MEMORY_REQUEST: &str = "16Mi";
/// CPU limit of the init container; also its request in a Guaranteed pod.
pub const CPU_LIMIT: &str = "200m";
/// Memory limit of the init container; also its request in a Guaranteed pod.
pub const MEMORY_LIMIT: &str = "32Mi";

/// Settings of one `inject` run.
#[derive(Debug, Clone, Default)]
pub struct InjectOptions {
    /// The pullcheck image for the init container.
    pub image: String,
    /// Extra pull secrets to mount (`--secret`), besides each pod's `imagePullSecrets`.
    pub secrets: Vec<String>,
    /// Arguments after `check` in the init container.
    pub check_args: Vec<String>,
}

/// The format of the input, and so of the output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// One or more YAML documents.
    #[default]
    Yaml,
    /// One or more JSON values.
    Json,
}

/// The rewritten manifests and what the user should know about them.
#[derive(Debug, Clone, Default)]
pub struct Injected {
    /// The output document(s), in the input's format.
    pub output: String,
    /// Notes for stderr (e.g. a pod template whose `restartPolicy` is not `Never`).
    pub warnings: Vec<String>,
    /// How many pod specs received the init container.
    pub pod_specs: usize,
    /// The format that was read and written.
    pub format: Format,
}

/// Input that cannot be rewritten: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InjectError(pub String);

/// Rewrites `input` (YAML or JSON, one or more documents); `source` names it in messages.
///
/// An unparseable document is an error naming the document (1-based) and the parser's line and
/// column in the whole input, never the document's content.
pub fn inject(input: &str, source: &str, options: &InjectOptions) -> Result<Injected, InjectError> {
    validate_options(options)?;
    let mut run = Run {
        options,
        source,
        warnings: Vec::new(),
        pod_specs: 0,
        found: 0,
    };
    let body = input.strip_prefix('\u{feff}').unwrap_or(input);
    let (format, output) = if looks_like_json(body) {
        match parse_json(body, source) {
            Ok(docs) => (Format::Json, write_json(docs, &mut run)?),
            // JSON documents in a YAML stream (`{…}` `---` `{…}`) are YAML; anything else that
            // starts like JSON and is not is an error, never silently read as YAML.
            Err(json_error) if has_document_marker(body) => match parse_yaml(input, source) {
                Ok(chunks) => (Format::Yaml, write_yaml(chunks, &mut run)?),
                Err(_) => return Err(json_error),
            },
            Err(json_error) => return Err(json_error),
        }
    } else {
        (
            Format::Yaml,
            write_yaml(parse_yaml(input, source)?, &mut run)?,
        )
    };
    if run.found == 0 {
        run.warnings.push(format!(
            "{source}: no pod spec found; the output is the input unchanged"
        ));
    } else if options.image == DEFAULT_INJECT_IMAGE {
        run.warnings.push(format!(
            "the init container runs the default image {DEFAULT_INJECT_IMAGE}, which no \
             registry serves: push pullcheck's image to a registry every node can pull from \
             and pass --image REF (a pod whose own pullcheck image cannot be pulled is stuck \
             like any other)"
        ));
    }
    Ok(Injected {
        output,
        warnings: run.warnings,
        pod_specs: run.pod_specs,
        format,
    })
}

/// The init container `inject` adds: `images` is the value of `PULLCHECK_IMAGES`, `mounts` the
/// pull secrets as (secret name, volume name), and `guaranteed` whether every other container
/// of the pod has requests equal to limits for CPU and memory.
///
/// In a Guaranteed pod the requests are raised to the limits: one container with requests below
/// its limits would make the whole pod Burstable (QoS counts init containers too), losing it
/// exclusive CPUs under the static CPU manager policy and moving it up the eviction order.
pub fn init_container(
    image: &str,
    check_args: &[String],
    images: &str,
    mounts: &[(String, String)],
    guaranteed: bool,
) -> Mapping {
    let (cpu_request, memory_request) = if guaranteed {
        (CPU_LIMIT, MEMORY_LIMIT)
    } else {
        (CPU_REQUEST, MEMORY_REQUEST)
    };
    let mut args = vec![s("check")];
    args.extend(check_args.iter().map(|a| s(a)));
    let mut c = Mapping::new();
    c.insert(s("name"), s(CONTAINER_NAME));
    c.insert(s("image"), s(image));
    c.insert(s("args"), Value::Sequence(args));
    c.insert(
        s("env"),
        Value::Sequence(vec![map([
            ("name", s("PULLCHECK_IMAGES")),
            ("value", s(images)),
        ])]),
    );
    c.insert(
        s("resources"),
        map([
            (
                "requests",
                map([("cpu", s(cpu_request)), ("memory", s(memory_request))]),
            ),
            (
                "limits",
                map([("cpu", s(CPU_LIMIT)), ("memory", s(MEMORY_LIMIT))]),
            ),
        ]),
    );
    c.insert(
        s("securityContext"),
        map([
            ("allowPrivilegeEscalation", Value::Bool(false)),
            (
                "capabilities",
                map([("drop", Value::Sequence(vec![s("ALL")]))]),
            ),
            ("readOnlyRootFilesystem", Value::Bool(true)),
            ("runAsNonRoot", Value::Bool(true)),
            ("runAsUser", Value::Number(RUN_AS_USER.into())),
            ("seccompProfile", map([("type", s("RuntimeDefault"))])),
        ]),
    );
    c.insert(s("terminationMessagePolicy"), s("FallbackToLogsOnError"));
    if !mounts.is_empty() {
        let list = mounts
            .iter()
            .map(|(secret, volume)| {
                map([
                    ("name", s(volume)),
                    ("mountPath", s(&format!("{SECRETS_DIR}/{secret}"))),
                    ("readOnly", Value::Bool(true)),
                ])
            })
            .collect();
        c.insert(s("volumeMounts"), Value::Sequence(list));
    }
    c
}

/// The name of the volume for pull secret `secret`, a DNS label (at most 63 characters) not in
/// `taken`: `pullcheck-secret-<secret>` when that is one, else a shortened, sanitised name ending
/// in a hash of the secret's name (and of the attempt, on a clash).
pub fn volume_name(secret: &str, taken: &HashSet<String>) -> String {
    let plain = format!("{VOLUME_PREFIX}{secret}");
    if is_dns_label(&plain) && !taken.contains(&plain) {
        return plain;
    }
    let sanitised: String = secret
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    // 63 = prefix + body + '-' + 10 hex digits.
    let room = 63 - VOLUME_PREFIX.len() - 1 - 10;
    let body: String = sanitised.chars().take(room).collect();
    let body = body.trim_matches('-');
    let mut attempt: u64 = 0;
    loop {
        let key = if attempt == 0 {
            secret.to_string()
        } else {
            format!("{secret}#{attempt}")
        };
        let hash = format!("{:016x}", fnv1a64(key.as_bytes()));
        let name = if body.is_empty() {
            format!("{VOLUME_PREFIX}{}", &hash[..10])
        } else {
            format!("{VOLUME_PREFIX}{body}-{}", &hash[..10])
        };
        if !taken.contains(&name) {
            return name;
        }
        attempt += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Options

fn validate_options(options: &InjectOptions) -> Result<(), InjectError> {
    let image = options.image.trim();
    if image.is_empty() {
        return Err(InjectError("--image is empty".to_string()));
    }
    if image != options.image || image.contains(char::is_whitespace) {
        return Err(InjectError(format!(
            "--image {:?}: an image reference has no whitespace",
            options.image
        )));
    }
    for name in &options.secrets {
        if !name.is_empty() && !is_dns_subdomain(name) {
            return Err(InjectError(format!(
                "--secret {name:?}: not a Secret name (lower-case letters, digits, '-' and '.', \
                 starting and ending with a letter or digit, at most 253 characters)"
            )));
        }
    }
    Ok(())
}

/// An RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// An RFC 1123 subdomain (a Secret's name): labels joined by dots, at most 253 characters.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

// ---------------------------------------------------------------------------------------------
// Parsing

/// Whether a line of `input` is a YAML `---` document marker (never valid JSON).
fn has_document_marker(input: &str) -> bool {
    input
        .lines()
        .any(|line| separator_rest(line.trim_end_matches('\r')).is_some())
}

fn looks_like_json(input: &str) -> bool {
    matches!(input.trim_start().chars().next(), Some('{' | '['))
}

/// One JSON value of the input: its text and its value.
struct JsonDoc<'a> {
    text: &'a str,
    value: Value,
}

fn parse_json<'a>(input: &'a str, source: &str) -> Result<Vec<JsonDoc<'a>>, InjectError> {
    // serde_yaml_ng's Mapping keeps insertion order, serde_json's Map would not (no
    // `preserve_order` feature): JSON is read into the YAML value type.
    let mut stream = serde_json::Deserializer::from_str(input).into_iter::<Value>();
    let mut docs = Vec::new();
    let mut start = 0;
    while let Some(next) = stream.next() {
        match next {
            Ok(value) => {
                let end = stream.byte_offset();
                docs.push(JsonDoc {
                    text: input.get(start..end).unwrap_or("").trim(),
                    value,
                });
                start = end;
            }
            Err(e) => {
                return Err(InjectError(format!(
                    "{source}: document {}: not valid JSON at line {}, column {}: {}",
                    docs.len() + 1,
                    e.line(),
                    e.column(),
                    describe_parse_error(&e.to_string())
                )));
            }
        }
    }
    Ok(docs)
}

/// One YAML document of the input (more than one only after a `...` end marker without `---`),
/// with its text from its `---` line to the next.
struct YamlChunk<'a> {
    text: &'a str,
    docs: Vec<Value>,
}

fn parse_yaml<'a>(input: &'a str, source: &str) -> Result<Vec<YamlChunk<'a>>, InjectError> {
    let mut chunks = Vec::new();
    let mut number = 0;
    for (text, first_line) in split_yaml(input) {
        let mut docs = Vec::new();
        for de in serde_yaml_ng::Deserializer::from_str(text) {
            match Value::deserialize(de) {
                Ok(value) => {
                    number += 1;
                    docs.push(value);
                }
                Err(e) => {
                    let at = match e.location() {
                        Some(l) => format!(
                            " at line {}, column {}",
                            first_line + l.line().saturating_sub(1),
                            l.column()
                        ),
                        None => String::new(),
                    };
                    return Err(InjectError(format!(
                        "{source}: document {}: not valid YAML{at}: {}",
                        number + 1,
                        describe_parse_error(&e.to_string())
                    )));
                }
            }
        }
        chunks.push(YamlChunk { text, docs });
    }
    Ok(chunks)
}

/// Splits YAML text at its `---` lines (which the YAML spec forbids inside any scalar), so that
/// each document's text is known: unchanged documents are then copied as they were. Comments and
/// directives before a `---` belong to the document it starts. Returns each piece with its first
/// line number (1-based).
fn split_yaml(input: &str) -> Vec<(&str, usize)> {
    let mut pieces = Vec::new();
    let (mut start, mut start_line) = (0, 1);
    let (mut has_content, mut has_separator) = (false, false);
    let mut offset = 0;
    for (index, line) in input.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        if let Some(rest) = separator_rest(bare) {
            if has_content || has_separator {
                pieces.push((&input[start..offset], start_line));
                start = offset;
                start_line = index + 1;
            }
            has_separator = true;
            has_content = !is_blank_or_comment(rest);
        } else if !is_blank_or_comment(bare) && !bare.starts_with('%') {
            has_content = true;
        }
        offset += line.len();
    }
    pieces.push((&input[start..], start_line));
    pieces
}

/// For a `---` document start line, what follows the marker.
fn separator_rest(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("---")?;
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then_some(rest)
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// A parser's message without its positions (given separately, relative to the whole input) and
/// without anything it quoted from the document.
fn describe_parse_error(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while !rest.is_empty() {
        if let Some(after) = strip_position(rest) {
            rest = after;
            continue;
        }
        let mut chars = rest.chars();
        let Some(c) = chars.next() else { break };
        if c == '"' {
            // A quoted piece of the document (a duplicate key, say): keep the quotes only.
            let tail = chars.as_str();
            match tail.find('"') {
                Some(end) => {
                    out.push_str("\"…\"");
                    rest = &tail[end + 1..];
                }
                None => {
                    out.push_str("\"…");
                    rest = "";
                }
            }
            continue;
        }
        out.push(c);
        rest = chars.as_str();
    }
    out.trim().to_string()
}

/// `" at line N column M"` or `" at position N"` at the start of `s`: what follows it.
fn strip_position(s: &str) -> Option<&str> {
    fn digits(s: &str) -> Option<&str> {
        let n = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        (n > 0).then(|| &s[n..])
    }
    if let Some(r) = s.strip_prefix(" at line ") {
        let r = digits(r)?;
        let r = r.strip_prefix(" column ")?;
        return digits(r);
    }
    digits(s.strip_prefix(" at position ")?)
}

// ---------------------------------------------------------------------------------------------
// Output

fn write_json(docs: Vec<JsonDoc<'_>>, run: &mut Run<'_>) -> Result<String, InjectError> {
    let mut out = String::new();
    for (index, mut doc) in docs.into_iter().enumerate() {
        let before = doc.value.clone();
        run.document(&mut doc.value, index + 1);
        if doc.value == before {
            out.push_str(doc.text);
        } else {
            out.push_str(&json_text(&doc.value, doc.text).map_err(|e| {
                InjectError(format!(
                    "{}: document {}: cannot write JSON: {e}",
                    run.source,
                    index + 1
                ))
            })?);
        }
        out.push('\n');
    }
    Ok(out)
}

/// `value` as JSON: compact when `original` was on one line, else pretty with its indentation.
fn json_text(value: &Value, original: &str) -> Result<String, String> {
    use serde::Serialize;
    let Some(newline) = original.find('\n') else {
        return serde_json::to_string(value).map_err(|e| e.to_string());
    };
    let next = &original[newline + 1..];
    let indent = &next[..next.len() - next.trim_start_matches([' ', '\t']).len()];
    let indent = if indent.is_empty() || indent.len() > 16 {
        "    "
    } else {
        indent
    };
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut buf, formatter);
    value
        .serialize(&mut serializer)
        .map_err(|e| e.to_string())?;
    String::from_utf8(buf).map_err(|e| e.to_string())
}

fn write_yaml(chunks: Vec<YamlChunk<'_>>, run: &mut Run<'_>) -> Result<String, InjectError> {
    let mut out = String::new();
    let mut number = 0;
    for mut chunk in chunks {
        let mut changed = false;
        for doc in &mut chunk.docs {
            number += 1;
            let before = doc.clone();
            run.document(doc, number);
            changed |= *doc != before;
        }
        if !changed {
            out.push_str(chunk.text);
            if !chunk.text.is_empty() && !chunk.text.ends_with('\n') {
                out.push('\n');
            }
            continue;
        }
        out.push_str(&chunk_head(chunk.text));
        for (i, doc) in chunk.docs.iter().enumerate() {
            if i > 0 {
                out.push_str("---\n");
            }
            let text = emit_yaml(doc).map_err(|e| {
                InjectError(format!(
                    "{}: document {number}: cannot write YAML: {e}",
                    run.source
                ))
            })?;
            out.push_str(&text);
        }
    }
    Ok(out)
}

/// What a rewritten document keeps of its text: the comments, directives and `---` line before
/// its first key.
fn chunk_head(text: &str) -> String {
    let mut head = String::new();
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        match separator_rest(bare) {
            Some(rest) if is_blank_or_comment(rest) => head.push_str(line),
            Some(_) => {
                head.push_str("---\n");
                break;
            }
            None if is_blank_or_comment(bare) || bare.starts_with('%') => head.push_str(line),
            None => break,
        }
    }
    if !head.is_empty() && !head.ends_with('\n') {
        head.push('\n');
    }
    head
}

// ---------------------------------------------------------------------------------------------
// Finding pod specs

struct Run<'a> {
    options: &'a InjectOptions,
    source: &'a str,
    warnings: Vec<String>,
    /// Pod specs injected.
    pod_specs: usize,
    /// Pod specs found, injected or left alone with a warning.
    found: usize,
}

/// The object a pod spec belongs to, for messages.
struct Owner {
    doc: usize,
    kind: String,
    name: String,
    api_version: String,
}

impl Owner {
    fn describe(&self) -> String {
        let kind = if self.kind.is_empty() {
            "object"
        } else {
            &self.kind
        };
        format!("document {}: {kind}/{}", self.doc, self.name)
    }
}

/// The workload kinds whose pods may only restart `Always`.
const ALWAYS_ONLY_KINDS: [&str; 5] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ReplicationController",
];

impl Run<'_> {
    fn document(&mut self, doc: &mut Value, number: usize) {
        self.object(doc, "", number);
    }

    fn object(&mut self, value: &mut Value, path: &str, doc: usize) {
        let Some(map) = value.as_mapping_mut() else {
            return;
        };
        let kind = str_field(map, "kind").unwrap_or("").to_string();
        let is_list = kind == "List" || (kind.ends_with("List") && kind.len() > 4);
        if is_list && let Some(Value::Sequence(items)) = map.get_mut("items") {
            let items_path = child(path, "items");
            for (i, item) in items.iter_mut().enumerate() {
                self.object(item, &format!("{items_path}[{i}]"), doc);
            }
            return;
        }
        let metadata = map.get("metadata");
        let name = metadata
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                metadata
                    .and_then(|m| m.get("generateName"))
                    .and_then(Value::as_str)
                    .map(|g| format!("{g}*"))
            })
            .unwrap_or_else(|| "(no name)".to_string());
        let owner = Owner {
            doc,
            kind: kind.clone(),
            name,
            api_version: str_field(map, "apiVersion").unwrap_or("").to_string(),
        };
        if kind == "Pod" {
            if let Some(spec) = map.get_mut("spec")
                && has_containers(spec)
            {
                self.pod_spec(spec, &child(path, "spec"), None, &owner);
            }
            return;
        }
        self.walk(value, path, &owner);
    }

    /// Looks for pod templates everywhere in `value`.
    fn walk(&mut self, value: &mut Value, path: &str, owner: &Owner) {
        match value {
            Value::Mapping(map) => {
                // An operator's replica spec next to `template` (Kubeflow's ReplicaSpec) sets the
                // pods' restartPolicy, overriding the template's.
                let operator_policy = map
                    .get("restartPolicy")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                for (key, child_value) in map.iter_mut() {
                    let key_text = match key.as_str() {
                        Some(k) => k.to_string(),
                        None => continue,
                    };
                    let child_path = child(path, &key_text);
                    if key_text == "template" && is_pod_template(child_value) {
                        if let Some(spec) = child_value.get_mut("spec") {
                            let spec_path = child(&child_path, "spec");
                            self.pod_spec(spec, &spec_path, operator_policy.as_deref(), owner);
                        }
                        continue;
                    }
                    self.walk(child_value, &child_path, owner);
                }
            }
            Value::Sequence(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.walk(item, &format!("{path}[{i}]"), owner);
                }
            }
            Value::Tagged(tagged) => self.walk(&mut tagged.value, path, owner),
            _ => {}
        }
    }

    fn warn(&mut self, message: String) {
        self.warnings.push(format!("{}: {message}", self.source));
    }

    /// Injects into one pod spec.
    fn pod_spec(
        &mut self,
        spec_value: &mut Value,
        path: &str,
        operator_policy: Option<&str>,
        owner: &Owner,
    ) {
        let Some(spec) = spec_value.as_mapping_mut() else {
            return;
        };
        self.found += 1;
        let at = format!("{} {path}", owner.describe());
        for key in ["initContainers", "volumes", "imagePullSecrets"] {
            if !matches!(spec.get(key), None | Some(Value::Null | Value::Sequence(_))) {
                self.warn(format!("{at}: {key} is not a list; left unchanged"));
                return;
            }
        }
        let os = spec
            .get("os")
            .and_then(|o| o.get("name"))
            .and_then(Value::as_str);
        if os == Some("windows") {
            self.warn(format!(
                "{at}: a Windows pod; left unchanged (pullcheck's image is for Linux)"
            ));
            return;
        }
        if list(spec, "containers").any(|c| str_field_v(c, "name") == Some(CONTAINER_NAME)) {
            self.warn(format!(
                "{at}: a container is already named {CONTAINER_NAME}; left unchanged \
                 (container names are unique across initContainers and containers)"
            ));
            return;
        }
        self.restart_policy_warning(spec, &at, operator_policy, owner);

        // Images, in order, without duplicates.
        let mut images: Vec<String> = Vec::new();
        for key in ["initContainers", "containers"] {
            for c in list(spec, key) {
                if str_field_v(c, "name") == Some(CONTAINER_NAME)
                    || str_field_v(c, "imagePullPolicy") == Some("Never")
                {
                    continue;
                }
                let Some(image) = str_field_v(c, "image").map(str::trim) else {
                    continue;
                };
                if !image.is_empty() && !images.iter().any(|i| i == image) {
                    images.push(image.to_string());
                }
            }
        }

        // Pull secrets: the pod's, then --secret.
        let mut secrets: Vec<String> = Vec::new();
        let mut bad_secrets = Vec::new();
        for entry in list(spec, "imagePullSecrets") {
            let Some(name) = str_field_v(entry, "name").map(str::trim) else {
                continue;
            };
            if name.is_empty() {
                continue;
            }
            if !is_dns_subdomain(name) {
                bad_secrets.push(name.to_string());
            } else if !secrets.iter().any(|s| s == name) {
                secrets.push(name.to_string());
            }
        }
        for name in &self.options.secrets {
            if !name.is_empty() && !secrets.iter().any(|s| s == name) {
                secrets.push(name.clone());
            }
        }
        for name in bad_secrets {
            self.warn(format!(
                "{at}: imagePullSecrets name {name:?} is not a Secret name; not mounted"
            ));
        }

        // Volumes: ours (from an earlier run) go; the others' names are taken.
        let mut mounted_by_others = HashSet::new();
        for key in ["initContainers", "containers", "ephemeralContainers"] {
            for c in list(spec, key) {
                if str_field_v(c, "name") == Some(CONTAINER_NAME) {
                    continue;
                }
                for mount_key in ["volumeMounts", "volumeDevices"] {
                    if let Some(Value::Sequence(mounts)) = c.get(mount_key) {
                        for m in mounts {
                            if let Some(n) = str_field_v(m, "name") {
                                mounted_by_others.insert(n.to_string());
                            }
                        }
                    }
                }
            }
        }
        let is_ours = |v: &Value| {
            str_field_v(v, "name")
                .is_some_and(|n| n.starts_with(VOLUME_PREFIX) && !mounted_by_others.contains(n))
                && v.get("secret").is_some()
        };
        let mut removed_ours = false;
        let mut taken = HashSet::new();
        if let Some(Value::Sequence(volumes)) = spec.get_mut("volumes") {
            let before = volumes.len();
            volumes.retain(|v| !is_ours(v));
            removed_ours = volumes.len() != before;
            for v in volumes.iter() {
                if let Some(n) = str_field_v(v, "name") {
                    taken.insert(n.to_string());
                }
            }
        }
        let mut mounts = Vec::new();
        let mut new_volumes = Vec::new();
        for secret in &secrets {
            let volume = volume_name(secret, &taken);
            taken.insert(volume.clone());
            new_volumes.push(map([
                ("name", s(&volume)),
                (
                    "secret",
                    map([("secretName", s(secret)), ("optional", Value::Bool(true))]),
                ),
            ]));
            mounts.push((secret.clone(), volume));
        }

        let container = init_container(
            &self.options.image,
            &self.options.check_args,
            &images.join(" "),
            &mounts,
            is_guaranteed(spec),
        );

        // The init container, first.
        match spec.get_mut("initContainers") {
            Some(Value::Sequence(inits)) => {
                inits.retain(|c| str_field_v(c, "name") != Some(CONTAINER_NAME));
                inits.insert(0, Value::Mapping(container));
            }
            Some(other) => *other = Value::Sequence(vec![Value::Mapping(container)]),
            None => {
                // A new key goes just before `containers`, where people write it.
                let old = std::mem::take(spec);
                let mut pending = Some(Value::Sequence(vec![Value::Mapping(container)]));
                for (k, v) in old {
                    if k.as_str() == Some("containers")
                        && let Some(inits) = pending.take()
                    {
                        spec.insert(s("initContainers"), inits);
                    }
                    spec.insert(k, v);
                }
                if let Some(inits) = pending {
                    spec.insert(s("initContainers"), inits);
                }
            }
        }

        // The volumes, last.
        let mut drop_volumes = false;
        match spec.get_mut("volumes") {
            Some(Value::Sequence(volumes)) => {
                volumes.extend(new_volumes);
                drop_volumes = volumes.is_empty() && removed_ours;
            }
            Some(other) => {
                if !new_volumes.is_empty() {
                    *other = Value::Sequence(new_volumes);
                }
            }
            None => {
                if !new_volumes.is_empty() {
                    spec.insert(s("volumes"), Value::Sequence(new_volumes));
                }
            }
        }
        if drop_volumes {
            spec.shift_remove("volumes");
        }
        self.pod_specs += 1;
    }

    fn restart_policy_warning(
        &mut self,
        spec: &Mapping,
        at: &str,
        operator_policy: Option<&str>,
        owner: &Owner,
    ) {
        let description = match operator_policy {
            // Kubeflow's ExitCode: the pods get Never, and the operator restarts only on
            // retryable exit codes (128 and up); pullcheck's are 3 to 6.
            Some("Never" | "ExitCode") => return,
            Some(p) => {
                format!("{p} (the replica's restartPolicy, which the operator sets on the pods)")
            }
            // Kubeflow's training operator (kubeflow.org/v1) overwrites the template's
            // restartPolicy with the replica's, which defaults to OnFailure.
            None if owner.api_version == "kubeflow.org/v1" && owner.kind != "Pod" => {
                "OnFailure (the training operator's default for a replica without restartPolicy, \
                 which overrides the template's)"
                    .to_string()
            }
            None => match str_field(spec, "restartPolicy") {
                Some("Never") => return,
                Some(p) => p.to_string(),
                None => "not set (Always)".to_string(),
            },
        };
        let advice = if ALWAYS_ONLY_KINDS.contains(&owner.kind.as_str()) {
            format!(
                "; a {} allows only Always, so its pods wait in Init:CrashLoopBackOff with \
                 pullcheck's verdict in `kubectl describe pod`",
                owner.kind
            )
        } else {
            "; set restartPolicy: Never so that the pod fails at once".to_string()
        };
        self.warn(format!(
            "{at}: restartPolicy is {description}, not Never: a failed pullcheck init container \
             is then retried with back-off instead of failing the pod{advice}"
        ));
    }
}

/// Whether every container of the pod (but ours) has CPU and memory limits, with requests equal
/// to them or absent (the API server then copies the limits): the pod's QoS class is Guaranteed.
fn is_guaranteed(spec: &Mapping) -> bool {
    let mut any = false;
    for key in ["initContainers", "containers"] {
        for c in list(spec, key) {
            if str_field_v(c, "name") == Some(CONTAINER_NAME) {
                continue;
            }
            any = true;
            let resources = c.get("resources");
            let limits = resources.and_then(|r| r.get("limits"));
            let requests = resources.and_then(|r| r.get("requests"));
            for resource in ["cpu", "memory"] {
                let Some(limit) = limits.and_then(|l| l.get(resource)) else {
                    return false;
                };
                if let Some(request) = requests.and_then(|r| r.get(resource))
                    && quantity_text(request) != quantity_text(limit)
                {
                    return false;
                }
            }
        }
    }
    any
}

fn quantity_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn is_pod_template(v: &Value) -> bool {
    v.get("spec").is_some_and(has_containers)
}

fn has_containers(spec: &Value) -> bool {
    matches!(spec.get("containers"), Some(Value::Sequence(_)))
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn str_field<'a>(map: &'a Mapping, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

fn str_field_v<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The items of a list field, or none.
fn list<'a>(map: &'a Mapping, key: &str) -> impl Iterator<Item = &'a Value> + 'a {
    let items: &'a [Value] = match map.get(key) {
        Some(Value::Sequence(items)) => items,
        _ => &[],
    };
    items.iter()
}

fn s(text: &str) -> Value {
    Value::String(text.to_string())
}

fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut m = Mapping::new();
    for (k, v) in entries {
        m.insert(s(k), v);
    }
    Value::Mapping(m)
}

// ---------------------------------------------------------------------------------------------
// The YAML emitter

/// Writes one document in kubectl's block style (sequences in a mapping not indented, two
/// spaces per level), quoting every string that a YAML 1.1 or 1.2 reader could take for
/// something else.
pub fn emit_yaml(value: &Value) -> Result<String, String> {
    let mut e = Emitter { out: String::new() };
    match value {
        Value::Mapping(m) if !m.is_empty() => e.mapping(m, 0, false)?,
        Value::Sequence(items) if !items.is_empty() => e.sequence(items, 0, false)?,
        Value::Tagged(t) => {
            e.out.push_str(&t.tag.to_string());
            e.tagged_body(&t.value, 2)?;
        }
        other => e.scalar(other, 2)?,
    }
    Ok(e.out)
}

struct Emitter {
    out: String,
}

impl Emitter {
    fn pad(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    fn mapping(&mut self, m: &Mapping, indent: usize, inline_first: bool) -> Result<(), String> {
        for (i, (k, v)) in m.iter().enumerate() {
            if i > 0 || !inline_first {
                self.pad(indent);
            }
            self.key(k)?;
            self.out.push(':');
            match v {
                Value::Mapping(inner) if !inner.is_empty() => {
                    self.out.push('\n');
                    self.mapping(inner, indent + 2, false)?;
                }
                Value::Sequence(items) if !items.is_empty() => {
                    self.out.push('\n');
                    self.sequence(items, indent, false)?;
                }
                Value::Tagged(t) => {
                    self.out.push(' ');
                    self.out.push_str(&t.tag.to_string());
                    self.tagged_body(&t.value, indent + 2)?;
                }
                other => {
                    self.out.push(' ');
                    self.scalar(other, indent + 2)?;
                }
            }
        }
        Ok(())
    }

    fn sequence(
        &mut self,
        items: &[Value],
        indent: usize,
        inline_first: bool,
    ) -> Result<(), String> {
        for (i, item) in items.iter().enumerate() {
            if i > 0 || !inline_first {
                self.pad(indent);
            }
            self.out.push_str("- ");
            match item {
                Value::Mapping(m) if !m.is_empty() => self.mapping(m, indent + 2, true)?,
                Value::Sequence(inner) if !inner.is_empty() => {
                    self.sequence(inner, indent + 2, true)?;
                }
                Value::Tagged(t) => {
                    self.out.push_str(&t.tag.to_string());
                    self.tagged_body(&t.value, indent + 2)?;
                }
                other => self.scalar(other, indent + 2)?,
            }
        }
        Ok(())
    }

    /// What follows a tag on its line; collections start on the next line at `indent`.
    fn tagged_body(&mut self, v: &Value, indent: usize) -> Result<(), String> {
        match v {
            Value::Mapping(m) if !m.is_empty() => {
                self.out.push('\n');
                self.mapping(m, indent, false)
            }
            Value::Sequence(items) if !items.is_empty() => {
                self.out.push('\n');
                self.sequence(items, indent, false)
            }
            Value::Tagged(_) => Err("a tagged value inside a tagged value".to_string()),
            other => {
                self.out.push(' ');
                self.scalar(other, indent)
            }
        }
    }

    fn key(&mut self, k: &Value) -> Result<(), String> {
        match k {
            Value::String(text) => {
                if plain_ok(text) {
                    self.out.push_str(text);
                } else {
                    self.out.push_str(&double_quoted(text));
                }
                Ok(())
            }
            Value::Null => {
                self.out.push_str("null");
                Ok(())
            }
            Value::Bool(b) => {
                self.out.push_str(if *b { "true" } else { "false" });
                Ok(())
            }
            Value::Number(n) => {
                let _ = write!(self.out, "{n}");
                Ok(())
            }
            _ => Err("a mapping key that is not a scalar".to_string()),
        }
    }

    /// A scalar and its line end; `block_indent` is where a literal block's lines start.
    fn scalar(&mut self, v: &Value, block_indent: usize) -> Result<(), String> {
        match v {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => {
                let _ = write!(self.out, "{n}");
            }
            Value::String(text) => {
                if plain_ok(text) {
                    self.out.push_str(text);
                } else if literal_ok(text) {
                    self.literal(text, block_indent);
                    return Ok(());
                } else {
                    self.out.push_str(&double_quoted(text));
                }
            }
            Value::Mapping(_) => self.out.push_str("{}"),
            Value::Sequence(_) => self.out.push_str("[]"),
            Value::Tagged(_) => return Err("a tagged value in a scalar position".to_string()),
        }
        self.out.push('\n');
        Ok(())
    }

    /// A multi-line string as a literal block (`|`), chomping chosen to give it back exactly.
    fn literal(&mut self, text: &str, indent: usize) {
        let chomp = if text.ends_with("\n\n") {
            "+"
        } else if text.ends_with('\n') {
            ""
        } else {
            "-"
        };
        self.out.push('|');
        self.out.push_str(chomp);
        self.out.push('\n');
        let body = text.strip_suffix('\n').unwrap_or(text);
        for line in body.split('\n') {
            if !line.is_empty() {
                self.pad(indent);
                self.out.push_str(line);
            }
            self.out.push('\n');
        }
    }
}

/// Whether `text` can be written without quotes and read back as the same string by YAML 1.1
/// (go-yaml v2 in kubectl, PyYAML) and YAML 1.2 readers alike. Conservative: when in doubt, quote.
fn plain_ok(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    if text.trim() != text {
        return false;
    }
    let allowed = |c: char| {
        c.is_ascii_alphanumeric()
            || (!c.is_ascii() && c.is_alphanumeric())
            || " -_./:@+=~()$^;%?&*!<>,".contains(c)
    };
    if !text.chars().all(allowed) {
        return false;
    }
    if text.contains(": ") || text.ends_with(':') || text.contains(" #") {
        return false;
    }
    let lower = text.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "y" | "yes" | "n" | "no" | "true" | "false" | "on" | "off" | "null" | "~"
    ) {
        return false;
    }
    let second = text.chars().nth(1);
    match first {
        // `-c` and `--flag=x` are fine; `-`, `- x`, `-1`, `-.5` and `---` are not.
        '-' => {
            if text.starts_with("---") {
                return false;
            }
            match second {
                None | Some(' ' | '.') => return false,
                Some(c) if c.is_ascii_digit() => return false,
                _ => {}
            }
        }
        c if c.is_ascii_alphanumeric() || !c.is_ascii() => {}
        '/' | '_' | '$' | '(' => {}
        _ => return false,
    }
    // Numbers, dates, times and versions: anything starting with a digit (after a sign) that
    // has no letter, or whose letters make an exponent, a base prefix or a timestamp.
    let body = text.trim_start_matches(['-', '+']);
    if body.starts_with(|c: char| c.is_ascii_digit()) {
        let letters: Vec<char> = body.chars().filter(char::is_ascii_alphabetic).collect();
        if letters.is_empty() || letters.iter().all(|c| matches!(c, 'e' | 'E')) {
            return false;
        }
        let lower_body = body.to_ascii_lowercase();
        if ["0x", "0o", "0b"].iter().any(|p| lower_body.starts_with(p)) {
            return false;
        }
        let b = body.as_bytes();
        if b.len() > 4 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' {
            return false;
        }
    }
    true
}

/// Whether `text` can be a literal block: several lines, all printable, no line that starts with
/// a space or tab on the first line or ends with one (trailing space is fragile).
fn literal_ok(text: &str) -> bool {
    text.contains('\n')
        && !text.starts_with([' ', '\t', '\n'])
        && text
            .chars()
            .all(|c| c == '\n' || (c != '\r' && !needs_escape(c)))
        && text
            .split('\n')
            .all(|line| !line.ends_with([' ', '\t']) && !line.starts_with('\t'))
}

/// Characters a YAML double-quoted string must escape: non-printable ones, and those YAML 1.1
/// counts as line breaks or a byte order mark.
fn needs_escape(c: char) -> bool {
    let printable = matches!(c,
        '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}'
        | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
    !printable || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn double_quoted(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(image: &str) -> InjectOptions {
        InjectOptions {
            image: image.to_string(),
            ..InjectOptions::default()
        }
    }

    fn run(input: &str) -> Injected {
        inject(input, "test", &opts("reg.example.com/pullcheck:1")).unwrap()
    }

    fn parse(text: &str) -> Value {
        serde_yaml_ng::from_str(text).unwrap()
    }

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  restartPolicy: Never\n  \
                       containers:\n  - name: a\n    image: nginx\n";

    #[test]
    fn plain_scalars_only_when_unambiguous() {
        for plain in [
            "nginx:1.27",
            "reg.example.com:5000/team/app@sha256:abc",
            "/var/run/x",
            "app.kubernetes.io/name",
            "10m",
            "16Mi",
            "-c",
            "--timeout=30s",
            "sleep 3600",
            "$(POD_NAME)",
            "a,b",
            "日本",
            "RuntimeDefault",
            "https://x.example.com/a?b=c&d=e",
            "123abc",
        ] {
            assert!(plain_ok(plain), "{plain:?} should be plain");
        }
        for quoted in [
            "",
            "yes",
            "Yes",
            "NO",
            "on",
            "Off",
            "y",
            "N",
            "true",
            "False",
            "null",
            "~",
            "1",
            "1.5",
            "-1",
            "+1",
            ".5",
            ".inf",
            "1e3",
            "1E-3",
            "0x1f",
            "0o17",
            "0b101",
            "017",
            "1_000",
            "12:30",
            "2024-01-01",
            "2001-12-14t21:59:43.10-05:00",
            "1.2.3",
            "10.0.0.1",
            " a",
            "a ",
            "a: b",
            "a:",
            "a #b",
            "#a",
            "- a",
            "-",
            "---",
            "...",
            "*a",
            "&a",
            "!a",
            "%a",
            "@a",
            "`a",
            "'a'",
            "\"a\"",
            "{a}",
            "[a]",
            "|a",
            ">a",
            "?a",
            ":a",
            ",a",
            "=",
            "<<",
            "~/x",
            "a\tb",
            "a\nb",
            "\u{a0}a",
            "é\u{85}",
        ] {
            assert!(!plain_ok(quoted), "{quoted:?} should be quoted");
        }
    }

    #[test]
    fn emitted_yaml_reads_back_as_the_same_value() {
        let strings = [
            "yes",
            "",
            " x",
            "x ",
            "a\nb",
            "a\n",
            "a\n\n",
            "a\n\nb\n",
            "#!/bin/sh\n  indented\n",
            "tab\tin",
            "\ttab first\nx",
            "trailing \nspace",
            "\u{85}",
            "\u{2028}",
            "\u{feff}x",
            "\u{7}",
            "😀",
            "\"quoted\"",
            "back\\slash",
            "\r\n",
            "- item",
            "key: value",
            "日本",
        ];
        let mut m = Mapping::new();
        for (i, text) in strings.iter().enumerate() {
            m.insert(s(&format!("k{i}")), s(text));
            m.insert(s(text), Value::Number(i.into()));
        }
        m.insert(s("empty-map"), Value::Mapping(Mapping::new()));
        m.insert(s("empty-list"), Value::Sequence(vec![]));
        m.insert(s("null"), Value::Null);
        m.insert(s("bool"), Value::Bool(false));
        m.insert(s("float"), Value::Number(1.5.into()));
        m.insert(s("negative"), Value::Number((-3).into()));
        m.insert(
            s("nested"),
            Value::Sequence(vec![
                Value::Sequence(vec![s("a"), Value::Sequence(vec![s("b")])]),
                map([("x", s("line\nline")), ("y", Value::Sequence(vec![]))]),
                s("multi\nline\n"),
                Value::Mapping(Mapping::new()),
            ]),
        );
        let value = Value::Mapping(m);
        let text = emit_yaml(&value).unwrap();
        assert_eq!(parse(&text), value, "\n{text}");
        // Stable: emitting what was read gives the same text.
        assert_eq!(emit_yaml(&parse(&text)).unwrap(), text);
        // Escapes that YAML 1.1 needs.
        assert!(text.contains("k12: \"\\u0085\"\n"), "{text}");
        assert!(text.contains("k13: \"\\u2028\"\n"), "{text}");
        assert!(text.contains("k15: \"\\u0007\"\n"), "{text}");
        assert!(text.contains("\"yes\": 0\n"), "{text}");
        assert!(text.contains("k16: \"😀\"\n"), "{text}");
    }

    #[test]
    fn literal_blocks_keep_their_line_ends() {
        for (text, header) in [
            ("a\nb", "|-"),
            ("a\nb\n", "|"),
            ("a\nb\n\n", "|+"),
            ("a\n\n\nb", "|-"),
        ] {
            let v = map([("k", s(text))]);
            let out = emit_yaml(&v).unwrap();
            assert!(
                out.starts_with(&format!("k: {header}\n")),
                "{text:?}: {out}"
            );
            assert_eq!(parse(&out), v);
        }
        let v = Value::Sequence(vec![s("x\ny\n"), map([("k", s("p\nq"))])]);
        let out = emit_yaml(&v).unwrap();
        assert_eq!(out, "- |\n  x\n  y\n- k: |-\n    p\n    q\n");
        assert_eq!(parse(&out), v);
    }

    #[test]
    fn volume_names_are_dns_labels_without_clashes() {
        let none = HashSet::new();
        assert_eq!(volume_name("regcred", &none), "pullcheck-secret-regcred");
        let dotted = volume_name("reg.example.com", &none);
        assert!(
            dotted.starts_with("pullcheck-secret-reg-example-com-"),
            "{dotted}"
        );
        assert!(is_dns_label(&dotted));
        let long = volume_name(&"a".repeat(63), &none);
        assert!(long.len() <= 63 && is_dns_label(&long), "{long}");
        let exactly = "b".repeat(63 - VOLUME_PREFIX.len());
        assert_eq!(
            volume_name(&exactly, &none),
            format!("{VOLUME_PREFIX}{exactly}")
        );
        let taken: HashSet<String> = ["pullcheck-secret-regcred".to_string()].into();
        let other = volume_name("regcred", &taken);
        assert!(other.starts_with("pullcheck-secret-regcred-") && is_dns_label(&other));
        let mut both = taken.clone();
        both.insert(other.clone());
        let third = volume_name("regcred", &both);
        assert!(third != other && is_dns_label(&third));
        // Deterministic.
        assert_eq!(volume_name("reg.example.com", &none), dotted);
    }

    #[test]
    fn secret_names_are_dns_subdomains() {
        assert!(is_dns_subdomain("regcred"));
        assert!(is_dns_subdomain("reg.example-1.com"));
        for bad in ["", "Reg", "reg_cred", "-a", "a-", "a..b", ".a", "a/b"] {
            assert!(!is_dns_subdomain(bad), "{bad:?}");
        }
        assert!(!is_dns_subdomain(&"a.".repeat(127)));
    }

    #[test]
    fn yaml_is_split_at_document_markers_only() {
        let input =
            "# head\n%YAML 1.2\n---\na: 1\n---   # two\nb: '---'\nc: |\n  ---x\n---\n---\nd: 4\n";
        let pieces = split_yaml(input);
        let texts: Vec<&str> = pieces.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            texts,
            [
                "# head\n%YAML 1.2\n---\na: 1\n",
                "---   # two\nb: '---'\nc: |\n  ---x\n",
                "---\n",
                "---\nd: 4\n"
            ]
        );
        let lines: Vec<usize> = pieces.iter().map(|(_, l)| *l).collect();
        assert_eq!(lines, [1, 5, 9, 10]);
        assert_eq!(split_yaml(""), [("", 1)]);
        assert_eq!(split_yaml("a: 1"), [("a: 1", 1)]);
        assert_eq!(
            chunk_head("# c\n--- # x\n# d\nkind: Pod\n# e\n"),
            "# c\n--- # x\n# d\n"
        );
        assert_eq!(chunk_head("--- {a: 1}\n"), "---\n");
    }

    #[test]
    fn parse_errors_name_the_document_and_line_never_the_content() {
        let input = "a: 1\n---\nb: 2\n---\n# three\nc:\n  password: \"s3cr3t\n";
        let e = inject(input, "in.yaml", &opts("x")).unwrap_err().0;
        assert!(
            e.starts_with("in.yaml: document 3: not valid YAML at line 8, column "),
            "{e}"
        );
        assert!(!e.contains("s3cr3t") && !e.contains("password"), "{e}");
        let e = inject("k: 1\nk: 2\n", "in.yaml", &opts("x")).unwrap_err().0;
        assert!(
            e.contains("document 1") && e.contains("duplicate entry with key \"…\""),
            "{e}"
        );
        let e = inject("{\"a\": 1}\n[1, 2,]\n", "in.json", &opts("x"))
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("in.json: document 2: not valid JSON at line 2, column "),
            "{e}"
        );
        assert_eq!(
            describe_parse_error("bad \"thing\" at line 3 column 4, while x at position 12"),
            "bad \"…\", while x"
        );
        // Looks like JSON, is not JSON: an error, not a silent read as YAML.
        assert!(inject("{\"a\": 1,\n \"b\": }", "in", &opts("x")).is_err());
    }

    #[test]
    fn options_are_checked() {
        assert!(inject(POD, "t", &opts("")).is_err());
        assert!(inject(POD, "t", &opts("a b")).is_err());
        let bad = InjectOptions {
            image: "x".into(),
            secrets: vec!["Not_A_Secret".into()],
            ..InjectOptions::default()
        };
        assert!(
            inject(POD, "t", &bad)
                .unwrap_err()
                .0
                .contains("Not_A_Secret")
        );
        let empty = InjectOptions {
            image: "x".into(),
            secrets: vec![String::new()],
            ..InjectOptions::default()
        };
        assert!(inject(POD, "t", &empty).is_ok());
    }

    #[test]
    fn injects_first_and_idempotently() {
        let input = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
                     imagePullSecrets: [{name: regcred}]\n  initContainers: [{name: setup, image: busybox}]\n  \
                     containers: [{name: a, image: nginx}, {name: b, image: busybox}]\n";
        let once = run(input);
        assert_eq!(once.pod_specs, 1);
        assert_eq!(once.format, Format::Yaml);
        assert!(once.warnings.is_empty(), "{:?}", once.warnings);
        let v = parse(&once.output);
        let inits = v["spec"]["initContainers"].as_sequence().unwrap();
        assert_eq!(inits[0]["name"], "pullcheck");
        assert_eq!(inits[1]["name"], "setup");
        assert_eq!(inits[0]["env"][0]["value"], "busybox nginx");
        assert_eq!(
            inits[0]["volumeMounts"][0]["name"],
            "pullcheck-secret-regcred"
        );
        assert_eq!(v["spec"]["volumes"][0]["secret"]["secretName"], "regcred");
        let twice = run(&once.output);
        assert_eq!(twice.output, once.output);
        // JSON too.
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"nginx"}]}}"#;
        let once = run(json);
        assert_eq!(once.format, Format::Json);
        assert_eq!(run(&once.output).output, once.output);
    }

    #[test]
    fn json_documents_in_a_yaml_stream_are_yaml() {
        let input = "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \
                     \"spec\": {\"containers\": [{\"name\": \"a\", \"image\": \"x\"}]}}\n---\n{\"kind\": \"ConfigMap\"}\n";
        let out = run(input);
        assert_eq!(out.format, Format::Yaml);
        assert_eq!(out.pod_specs, 1);
        assert!(
            out.output.ends_with("---\n{\"kind\": \"ConfigMap\"}\n"),
            "{}",
            out.output
        );
    }

    #[test]
    fn lists_of_any_kind_are_walked() {
        let input = "apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n  \
                     spec: {restartPolicy: Never, containers: [{name: a, image: x}]}\n- apiVersion: v1\n  kind: Pod\n  \
                     metadata: {name: b}\n  spec: {containers: [{name: b, image: y}]}\n";
        let out = run(input);
        assert_eq!(out.pod_specs, 2);
        assert_eq!(out.warnings.len(), 1);
        assert!(
            out.warnings[0]
                .starts_with("test: document 1: Pod/b items[1].spec: restartPolicy is not set"),
            "{:?}",
            out.warnings
        );
    }

    #[test]
    fn pods_that_cannot_take_the_container_are_left_unchanged_with_a_warning() {
        for (spec, why) in [
            (
                "os: {name: windows}\n  containers: [{name: a, image: x}]",
                "Windows",
            ),
            (
                "containers: [{name: pullcheck, image: x}]",
                "already named pullcheck",
            ),
            (
                "initContainers: {a: 1}\n  containers: [{name: a, image: x}]",
                "not a list",
            ),
        ] {
            let input = format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  restartPolicy: Never\n  {spec}\n"
            );
            let out = run(&input);
            assert_eq!(out.output, input);
            assert_eq!(out.pod_specs, 0);
            // One warning: the reason, not also "no pod spec found".
            assert_eq!(out.warnings.len(), 1, "{why}: {:?}", out.warnings);
            assert!(out.warnings[0].contains(why), "{why}: {:?}", out.warnings);
        }
    }

    #[test]
    fn operator_restart_policies() {
        let job = |replica_policy: &str| {
            format!(
                "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {{name: t}}\nspec:\n  tfReplicaSpecs:\n    \
                 Worker:\n{replica_policy}      template:\n        spec:\n          containers: [{{name: tensorflow, image: x}}]\n"
            )
        };
        assert!(
            run(&job("      restartPolicy: Never\n"))
                .warnings
                .is_empty()
        );
        assert!(
            run(&job("      restartPolicy: ExitCode\n"))
                .warnings
                .is_empty()
        );
        let w = run(&job("      restartPolicy: OnFailure\n")).warnings;
        assert!(
            w[0].contains("restartPolicy is OnFailure (the replica's restartPolicy"),
            "{w:?}"
        );
        let w = run(&job("")).warnings;
        assert!(
            w[0].contains("OnFailure (the training operator's default"),
            "{w:?}"
        );
    }

    #[test]
    fn guaranteed_pods_stay_guaranteed() {
        let spec = |resources: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  restartPolicy: Never\n  \
                 containers:\n  - name: a\n    image: x\n    resources: {resources}\n"
            )
        };
        let requests = |input: &str| {
            let v = parse(&run(input).output);
            v["spec"]["initContainers"][0]["resources"]["requests"].clone()
        };
        let guaranteed = map([("cpu", s(CPU_LIMIT)), ("memory", s(MEMORY_LIMIT))]);
        let burstable = map([("cpu", s(CPU_REQUEST)), ("memory", s(MEMORY_REQUEST))]);
        assert_eq!(
            requests(&spec("{limits: {cpu: 1, memory: 1Gi}}")),
            guaranteed
        );
        assert_eq!(
            requests(&spec(
                "{limits: {cpu: 1, memory: 1Gi}, requests: {cpu: 1, memory: 1Gi}}"
            )),
            guaranteed
        );
        assert_eq!(
            requests(&spec(
                "{limits: {cpu: 1, memory: 1Gi}, requests: {cpu: 500m, memory: 1Gi}}"
            )),
            burstable
        );
        assert_eq!(requests(&spec("{limits: {cpu: 1}}")), burstable);
        assert_eq!(requests(&spec("{}")), burstable);
    }

    #[test]
    fn warnings_for_the_default_image_and_for_no_pod_spec() {
        let out = inject(POD, "t", &opts(DEFAULT_INJECT_IMAGE)).unwrap();
        assert_eq!(out.warnings.len(), 1);
        assert!(out.warnings[0].contains("--image"));
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
        let out = inject(cm, "t", &opts(DEFAULT_INJECT_IMAGE)).unwrap();
        assert_eq!(out.output, cm);
        assert_eq!(
            out.warnings,
            ["t: no pod spec found; the output is the input unchanged"]
        );
        assert_eq!(run("").output, "");
    }
}
