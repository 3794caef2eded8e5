//! The one reader of pod specs, for `check --pod-spec` and `inject` alike, so that the two can
//! never disagree about which images a manifest has.
//!
//! Reads YAML (any number of `---` documents) or JSON (one value or several in a row, `List`s
//! included) into a [`tree::Tree`] that keeps every node's place in the text, then finds every
//! pod spec of every document. Kinds are matched by `apiVersion` group **and** `kind`
//! (Volcano's `batch.volcano.sh` `Job` is not a `batch/v1` `Job`):
//!
//! | kind (group) | where the init container goes | images |
//! |---|---|---|
//! | `Pod`, `PodTemplate`, workloads, `Job`, `CronJob`, `List`s, a bare pod spec | the pod spec | its containers |
//! | Argo `Workflow`, `WorkflowTemplate`, `ClusterWorkflowTemplate`, `CronWorkflow` (argoproj.io) | each of `templates[]` with `container` or `script`: its `initContainers` (volumes: the workflow's) | `container`/`script`, `initContainers`, `sidecars` |
//! | Spark `SparkApplication`, `ScheduledSparkApplication` (sparkoperator.k8s.io) | `driver.initContainers`, `executor.initContainers` (volumes: the application's) | `spec.image`, `driver.image`, `executor.image`, their init containers and sidecars |
//! | KubeRay `RayCluster`, `RayJob`, `RayService` (ray.io) | head and worker group templates, RayJob's `submitterPodTemplate` | their containers |
//! | Kubeflow `PyTorchJob`, `TFJob`, `MPIJob`, `XGBoostJob`, `PaddleJob`, `JAXJob` (kubeflow.org) | each replica's `template.spec` | its containers |
//! | Trainer `TrainingRuntime`, `ClusterTrainingRuntime` (trainer.kubeflow.org) | each `replicatedJobs[]` pod template | its containers |
//! | `JobSet` (jobset.x-k8s.io) | each `replicatedJobs[].template.spec.template.spec` | its containers |
//! | Volcano `Job` (batch.volcano.sh) | each `tasks[].template.spec` | its containers |
//! | any other kind | each `template` whose `spec` has `containers`, not under a patch or rule (with a note) | its containers |
//!
//! Skipped with a note naming what and why: policy objects (Kyverno, Gatekeeper), Knative
//! `Service`/`Configuration`/`Revision` (init containers are off by default there), Tekton
//! runs (no init-container hook; Tekton already fails a TaskRun on `ImagePullBackOff`) and
//! Trainer `TrainJob` (its pods come from its runtime). Documents without a pod spec (a
//! Service, a ConfigMap) are not errors. Image volumes (`volumes[].image.reference`) count as
//! images. The container named `pullcheck` is pullcheck itself and is left out.

mod kubectl;
pub mod names;
pub mod splice;
pub mod tree;

use crate::container_start::{ContainerFacts, ContainerKind, SecurityFacts};
use std::fmt;
use tree::{NodeId, ParseError, Stopped, Tree};

/// The name of pullcheck's own init container (left out of what the reader returns).
pub const PULLCHECK: &str = "pullcheck";

/// The format of the input, and so of `inject`'s output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// One or more YAML documents.
    #[default]
    Yaml,
    /// One or more JSON values.
    Json,
}

/// Which list of the pod a [`PodContainer`] is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContainerList {
    /// `initContainers`, run to completion one after the other before the app containers.
    Init,
    /// `initContainers` with `restartPolicy: Always`: a native sidecar, started in order and
    /// kept running.
    Sidecar,
    /// `containers` (and the frameworks' main containers: Argo's `container`/`script`, Spark's
    /// driver and executor, their `sidecars`).
    App,
    /// An image volume (`volumes[].image.reference`, Kubernetes 1.31+): pulled like a
    /// container's image, never run. `name` is the volume's.
    ImageVolume,
}

impl ContainerList {
    /// The word used in origins: `initContainer`, `sidecar`, `container`, `image volume`.
    pub fn as_str(self) -> &'static str {
        match self {
            ContainerList::Init => "initContainer",
            ContainerList::Sidecar => "sidecar",
            ContainerList::App => "container",
            ContainerList::ImageVolume => "image volume",
        }
    }
}

/// One image a pod pulls: a container (or an image volume) as written in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodContainer {
    /// The container's name (`#N`, 1-based in its list, when it has none).
    pub name: String,
    /// The list it is in.
    pub list: ContainerList,
    /// The image as written (Spark: `driver.image`, else `spec.image`). Never empty.
    pub image: String,
    /// `imagePullPolicy` as written (`pullPolicy` of an image volume); `None` when unset.
    pub image_pull_policy: Option<String>,
    /// Whether `command` is set (not null, not an empty list); always `false` for an image
    /// volume.
    pub command_set: bool,
    /// Whether `args` is set (not null, not an empty list); always `false` for an image volume.
    pub args_set: bool,
    /// The effective `runAsNonRoot`: the container's `securityContext`, else the pod's;
    /// `None` when neither sets it (or for an image volume).
    pub run_as_non_root: Option<bool>,
    /// The effective `runAsUser`, as `run_as_non_root`.
    pub run_as_user: Option<i64>,
}

impl PodContainer {
    /// The facts the start check needs ([`crate::container_start`]); `None` for an image volume (it
    /// runs no process) and for an image with whitespace (not a reference). The security
    /// values here are the effective ones already, so the pod's context is empty.
    pub fn start_facts(&self) -> Option<ContainerFacts> {
        let kind = match self.list {
            ContainerList::Init => ContainerKind::Init,
            ContainerList::Sidecar => ContainerKind::Sidecar,
            ContainerList::App => ContainerKind::App,
            ContainerList::ImageVolume => return None,
        };
        let image = self.image.trim();
        if image.is_empty() || image.contains(char::is_whitespace) {
            return None;
        }
        Some(ContainerFacts::from_spec(
            &self.name,
            image,
            Some(kind),
            self.command_set,
            self.args_set,
            &SecurityFacts::default(),
            &SecurityFacts {
                run_as_non_root: self.run_as_non_root,
                run_as_user: self.run_as_user,
            },
        ))
    }
}

/// Where a pod spec is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// 1-based document number in the input.
    pub document: usize,
    /// The object's `kind` (of a `List`'s item, for lists); empty for a bare pod spec.
    pub kind: String,
    /// The object's `apiVersion`.
    pub api_version: String,
    /// `metadata.name`, else `generateName` and `*`, else `(unnamed)`.
    pub name: String,
    /// Dotted path of the pod spec in the document: `spec.template.spec`,
    /// `items[0].spec`, `spec.templates[2]`, `spec.driver`.
    pub path: String,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.kind.is_empty() {
            "pod spec"
        } else {
            &self.kind
        };
        write!(
            f,
            "document {}: {kind}/{} {}",
            self.document, self.name, self.path
        )
    }
}

/// One pod spec: where it is and what it pulls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSpec {
    /// Where it is.
    pub origin: Origin,
    /// Its containers and image volumes, in the kubelet's order: init containers (and native
    /// sidecars), then app containers, then image volumes. pullcheck's own container is left
    /// out.
    pub containers: Vec<PodContainer>,
    /// Containers whose image is an Argo workflow parameter (`{{inputs.parameters.image}}`),
    /// known only at run time: left out of `containers`, with a note.
    pub parameter_images: usize,
    /// A Windows pod (`spec.os.name: windows`, or a `kubernetes.io/os: windows` node
    /// selector): decided here once for both subcommands. pullcheck's image runs on Linux, so
    /// `inject` leaves it unchanged, and `check --pod-spec` does not check its images either
    /// (it checks for a Linux node); the reader's note says so.
    pub windows: bool,
}

impl PodSpec {
    /// The containers whose images `check --pod-spec` checks and `inject` passes to the
    /// check: none for a Windows pod, else every container and image volume read.
    pub fn checked(&self) -> &[PodContainer] {
        if self.windows { &[] } else { &self.containers }
    }
}

/// Everything the reader found.
#[derive(Debug, Default)]
pub struct Manifests {
    /// The input's format.
    pub format: Format,
    /// The pod specs, in document order.
    pub pod_specs: Vec<PodSpec>,
    /// Things the user should know (skipped kinds and why, unknown kinds read generically,
    /// containers without an image); for stderr.
    pub notes: Vec<String>,
    /// The parsed input, for `inject`.
    pub(crate) tree: Tree,
    /// Where `inject` edits, one per pod spec (same order as `pod_specs`).
    pub(crate) spots: Vec<Spot>,
}

/// One image and where it is, for `check --pod-spec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodImage {
    /// The image as written.
    pub image: String,
    /// `"document 1: Job/train spec.template.spec initContainer fetch"`, for messages.
    pub origin: String,
}

/// Input that cannot be read: exit 2. Messages name the input and the document, never values
/// from it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ManifestError {
    /// Not YAML or JSON.
    #[error(
        "{input}: document {document}: not valid {format} at line {line}, column {column}: {message}"
    )]
    Syntax {
        /// The input's name.
        input: String,
        /// 1-based.
        document: usize,
        /// `YAML` or `JSON`.
        format: &'static str,
        /// 1-based, in the whole input.
        line: usize,
        /// 1-based.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// Go template syntax where YAML was expected.
    #[error(
        "{input}: document {document}: this looks like an unrendered Helm template: render it first, e.g. helm template RELEASE CHART, and read its output (`{{{{` at line {line})"
    )]
    Template {
        /// The input's name.
        input: String,
        /// 1-based.
        document: usize,
        /// 1-based line of the first `{{`.
        line: usize,
    },
    /// `{{ }}` in an image.
    #[error(
        "{input}: {at} {list} {container}: the image is a template (`{{{{ }}}}`): render it first, e.g. helm template RELEASE CHART"
    )]
    TemplateImage {
        /// The input's name.
        input: String,
        /// Where the pod spec is.
        at: Box<Origin>,
        /// Its list.
        list: &'static str,
        /// The container's name.
        container: String,
    },
}

/// Reads every pod spec of `text`; `source` names the input in messages.
///
/// # Errors
///
/// [`ManifestError`] when the text is not YAML or JSON, or holds Go template syntax.
pub fn read(text: &str, source: &str) -> Result<Manifests, ManifestError> {
    let (tree, format) = parse(text, source)?;
    // What kubectl would read otherwise, first: it is about the input as a whole.
    let notes = kubectl_notes(text, source, &tree, format);
    let mut reader = Reader {
        text,
        source,
        tree: &tree,
        out: Vec::new(),
        spots: Vec::new(),
        notes,
        budget: tree.nodes.len().saturating_mul(4).saturating_add(1024),
        parameter_images: 0,
    };
    for (index, doc) in tree.docs.iter().enumerate() {
        reader.document(index, doc.root)?;
    }
    let Reader {
        out, spots, notes, ..
    } = reader;
    Ok(Manifests {
        format,
        pod_specs: out,
        notes,
        tree,
        spots,
    })
}

/// What [`read_each`] hands over, in order.
pub(crate) trait EachDocument {
    /// Reading starts (again) in this format: forget what earlier calls gave. JSON input that
    /// turns out to be a YAML stream (`{…}` `---` `{…}`) is read again as YAML.
    fn start(&mut self, format: Format);
    /// One document: its tree (node ids and spans as in a whole read, but only this
    /// document's nodes) and what the reader found in it (`tree` left empty; `spots` index
    /// `pod_specs` of this document).
    fn document(&mut self, tree: &Tree, found: Manifests);
}

/// Reads `text` as [`read`] does, but one document at a time, handing each to `each` as soon
/// as it is read: only one document's tree lives at once (the whole input's tree was most of
/// `inject`'s memory). The errors are [`read`]'s, in the same precedence: a syntax error
/// anywhere, then Go template syntax, then the first error of the pod specs.
///
/// `Ok(None)` when the input must be read whole with [`read`] for the same answer: an alias
/// to an anchor of an earlier document, or aliases that made the generic search of unknown
/// kinds use up the part of its budget known so far (its budget is four times the whole
/// input's nodes, not known until the end).
///
/// # Errors
///
/// As [`read`].
pub(crate) fn read_each(
    text: &str,
    source: &str,
    each: &mut dyn EachDocument,
) -> Result<Option<Format>, ManifestError> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - body.len();
    if body.trim_start().starts_with(['{', '[']) {
        each.start(Format::Json);
        let mut reading = Reading::new(text, source, Format::Json);
        match parse_json_each(text, bom, source, &mut |tree, index, root| {
            reading.document(tree, index, root, each)
        }) {
            Ok(Err(Stopped)) => return Ok(None),
            Ok(Ok(())) => return reading.finish(),
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
    each.start(Format::Yaml);
    let mut reading = Reading::new(text, source, Format::Yaml);
    let mut tree = Tree::default();
    let parsed = tree.parse_each(body, bom, &mut |tree, index, root| {
        reading.document(tree, index, root, each)
    });
    match parsed {
        Ok(Err(Stopped)) => Ok(None),
        Ok(Ok(())) if tree.complex_key && template_line(body).is_some() => {
            let line = template_line(body).unwrap_or(1);
            Err(ManifestError::Template {
                input: source.to_string(),
                document: document_of_line(body, line),
                line,
            })
        }
        Ok(Ok(())) => reading.finish(),
        Err(e) => Err(syntax_or_template(text, source, "YAML", e)),
    }
}

/// The state of [`read_each`] between documents.
struct Reading<'a> {
    text: &'a str,
    source: &'a str,
    format: Format,
    /// The first error of the pod specs: given once the whole input has parsed (a syntax
    /// error later on comes first, as in [`read`]). No document is read after it.
    error: Option<ManifestError>,
    /// Nodes of the documents read so far, and generic-search steps used: the least the whole
    /// input's budget can be is four times these nodes plus 1024.
    nodes: usize,
    used: usize,
}

impl<'a> Reading<'a> {
    fn new(text: &'a str, source: &'a str, format: Format) -> Reading<'a> {
        Reading {
            text,
            source,
            format,
            error: None,
            nodes: 0,
            used: 0,
        }
    }

    fn document(
        &mut self,
        tree: &Tree,
        index: usize,
        root: NodeId,
        each: &mut dyn EachDocument,
    ) -> tree::Next {
        if self.error.is_some() {
            return tree::Next::Go;
        }
        self.nodes = self.nodes.saturating_add(tree.nodes.len());
        let budget = self
            .nodes
            .saturating_mul(4)
            .saturating_add(1024)
            .saturating_sub(self.used);
        let mut reader = Reader {
            text: self.text,
            source: self.source,
            tree,
            out: Vec::new(),
            spots: Vec::new(),
            notes: Vec::new(),
            parameter_images: 0,
            budget,
        };
        let result = reader.document(index, root);
        if reader.budget == 0 {
            return tree::Next::Stop;
        }
        self.used += budget - reader.budget;
        if let Err(e) = result {
            self.error = Some(e);
            return tree::Next::Go;
        }
        let Reader {
            out, spots, notes, ..
        } = reader;
        each.document(
            tree,
            Manifests {
                format: self.format,
                pod_specs: out,
                notes,
                tree: Tree::default(),
                spots,
            },
        );
        tree::Next::Go
    }

    fn finish(self) -> Result<Option<Format>, ManifestError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(Some(self.format)),
        }
    }
}

/// What a failed JSON read of `body` is, for both readers: Helm template syntax first; an input
/// with document markers is `None`, to be read again as YAML (JSON documents in a YAML stream,
/// `{…}` `---` `{…}`, are YAML); else the JSON error itself.
fn json_failure(e: ManifestError, body: &str, source: &str) -> Option<ManifestError> {
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
fn nesting_error(body: &str, source: &str) -> Option<ManifestError> {
    flow_depth_error(body).map(|line| ManifestError::Syntax {
        input: source.to_string(),
        document: 1,
        format: "YAML",
        line,
        column: 1,
        message: format!("`[`/`{{` nested more than {} levels deep", tree::MAX_DEPTH),
    })
}

/// The notes of [`kubectl::differences`] for a YAML input, each naming `source`.
fn kubectl_notes(text: &str, source: &str, tree: &Tree, format: Format) -> Vec<String> {
    if format != Format::Yaml {
        return Vec::new();
    }
    kubectl::differences(text, tree)
        .into_iter()
        .map(|d| format!("{source}: {d}"))
        .collect()
}

/// What [`read`] says first of a YAML input that kubectl would read otherwise, for a reader
/// that keeps one document's tree at a time ([`read_each`]): the whole input is parsed for it
/// only when [`kubectl::may_differ`] finds something to look at.
pub(crate) fn kubectl_notes_of(text: &str, source: &str) -> Vec<String> {
    if !kubectl::may_differ(text) {
        return Vec::new();
    }
    match parse(text, source) {
        Ok((tree, format)) => kubectl_notes(text, source, &tree, format),
        Err(_) => Vec::new(),
    }
}

/// Every container and image volume of every pod spec, with where it is: the reader's output
/// flattened, for checks that look at containers one by one.
///
/// # Errors
///
/// As [`read`].
pub fn pod_containers(
    text: &str,
    source: &str,
) -> Result<Vec<(Origin, PodContainer)>, ManifestError> {
    let manifests = read(text, source)?;
    Ok(manifests
        .pod_specs
        .into_iter()
        .flat_map(|spec| {
            let origin = spec.origin;
            spec.containers
                .into_iter()
                .map(move |c| (origin.clone(), c))
        })
        .collect())
}

impl Manifests {
    /// The images a check must pull, in order (duplicates kept: the caller removes them):
    /// every container and image volume but those with `imagePullPolicy: Never` (the node must
    /// already have them).
    pub fn images(&self) -> Vec<PodImage> {
        let mut out = Vec::new();
        for spec in &self.pod_specs {
            for c in spec.checked() {
                if c.image_pull_policy.as_deref() == Some("Never") {
                    continue;
                }
                out.push(PodImage {
                    image: c.image.clone(),
                    origin: format!("{} {} {}", spec.origin, c.list.as_str(), c.name),
                });
            }
        }
        out
    }
}

impl Manifests {
    /// Every document's value as kubectl reads it (YAML 1.1 scalars, merge keys applied; an
    /// empty document is null), in order: what the tests compare with kubectl's own reading.
    pub fn documents(&self) -> Vec<serde_json::Value> {
        self.tree
            .docs
            .iter()
            .map(|d| self.tree.to_json(d.root).unwrap_or(serde_json::Value::Null))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

/// Whether a line of `input` is a YAML `---` document marker (never valid JSON).
fn has_document_marker(input: &str) -> bool {
    input.lines().any(|line| {
        line.strip_prefix("---")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
    })
}

fn parse(text: &str, source: &str) -> Result<(Tree, Format), ManifestError> {
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
fn syntax_or_template(
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
fn template_line(text: &str) -> Option<usize> {
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
fn document_of_line(text: &str, line: usize) -> usize {
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
fn flow_depth_error(text: &str) -> Option<usize> {
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

fn parse_json(text: &str, bom: usize, source: &str) -> Result<Tree, ManifestError> {
    let mut tree = Tree::default();
    // Read whole, it never stops early.
    let _whole = json_values(text, bom, source, &mut |piece, base| {
        tree.parse_yaml(piece, base).map(Ok)
    })?;
    Ok(tree)
}

/// As [`parse_json`], one document at a time ([`Tree::parse_each`]).
fn parse_json_each(
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
fn json_values(
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
fn json_message(e: &serde_json::Error) -> String {
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

// ---------------------------------------------------------------------------------------------
// Finding pod specs

/// Where `inject` edits one pod spec.
#[derive(Debug, Clone)]
pub(crate) struct Spot {
    /// Index of the public [`PodSpec`] in `pod_specs`.
    pub spec: usize,
    /// The mapping that holds (or gets) `initContainers`.
    pub holder: NodeId,
    /// New keys go before the first of these keys found in `holder` (else before its first).
    pub before: &'static [&'static str],
    /// The mapping that holds (or gets) `volumes` (the pod spec; a workflow's or a Spark
    /// application's spec, shared by several spots).
    pub volumes: NodeId,
    /// The pod spec proper, when the spot is one (restartPolicy, os, QoS).
    pub pod: Option<NodeId>,
    /// The `batch/v1` Job spec this pod spec belongs to.
    pub job: Option<NodeId>,
    /// The pull secrets' names (pod `imagePullSecrets`, Spark's list of names).
    pub secrets: Vec<String>,
    /// `imagePullSecrets` entries that are not Secret names.
    pub bad_secrets: Vec<String>,
    /// The restartPolicy an operator sets on the pods (Kubeflow's replica restartPolicy).
    pub operator_policy: Option<String>,
    /// The restartPolicy the framework gives its pods when it is not written.
    pub default_policy: Option<&'static str>,
    /// Every container node (init, app, sidecars), pullcheck's own left out, for mounts and
    /// QoS.
    pub container_nodes: Vec<NodeId>,
    /// An app container is already named `pullcheck`.
    pub name_taken: bool,
    /// Fields that must be lists and are not.
    pub not_lists: Vec<&'static str>,
    /// The pod runs on Windows.
    pub windows: bool,
    /// A container that must mount the added volumes too: the Spark operator adds to a pod
    /// only the application's volumes that the driver or executor mounts.
    pub main_mounts: Option<NodeId>,
}

struct Reader<'a> {
    text: &'a str,
    source: &'a str,
    tree: &'a Tree,
    out: Vec<PodSpec>,
    spots: Vec<Spot>,
    notes: Vec<String>,
    /// Nodes the generic search may still visit (aliases can make a walk revisit nodes).
    budget: usize,
    /// Argo parameter images seen since the last pod spec was recorded.
    parameter_images: usize,
}

/// The object being read, for origins.
#[derive(Clone)]
struct Owner {
    document: usize,
    kind: String,
    api_version: String,
    name: String,
}

/// What a spot's pod spec is, besides the common fields.
struct SpotShape {
    holder: NodeId,
    before: &'static [&'static str],
    volumes: NodeId,
    pod: Option<NodeId>,
    job: Option<NodeId>,
    operator_policy: Option<String>,
    default_policy: Option<&'static str>,
}

impl SpotShape {
    /// A spot of this shape, with nothing found in it yet.
    fn spot(self) -> Spot {
        Spot {
            spec: 0,
            holder: self.holder,
            before: self.before,
            volumes: self.volumes,
            pod: self.pod,
            job: self.job,
            secrets: Vec::new(),
            bad_secrets: Vec::new(),
            operator_policy: self.operator_policy,
            default_policy: self.default_policy,
            container_nodes: Vec::new(),
            name_taken: false,
            not_lists: Vec::new(),
            windows: false,
            main_mounts: None,
        }
    }
}

/// Keys under which a pod template is a piece of a policy or patch, never a pod of its own.
const PATCH_KEYS: [&str; 10] = [
    "patch",
    "patches",
    "patchStrategicMerge",
    "patchesStrategicMerge",
    "patchesJson6902",
    "jsonPatch",
    "rules",
    "mutate",
    "overlay",
    "match",
];

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl Reader<'_> {
    fn note(&mut self, message: String) {
        self.notes.push(format!("{}: {message}", self.source));
    }

    fn document(&mut self, index: usize, root: NodeId) -> Result<(), ManifestError> {
        let t = self.tree;
        let root = t.resolve(root);
        if t.is_seq(root) {
            // A bare JSON/YAML array of objects.
            for (i, &item) in t.items(root).iter().enumerate() {
                self.object(index, t.resolve(item), &format!("[{i}]"))?;
            }
            return Ok(());
        }
        self.object(index, root, "")
    }

    fn object(&mut self, doc: usize, node: NodeId, path: &str) -> Result<(), ManifestError> {
        let t = self.tree;
        if !t.is_map(node) {
            return Ok(());
        }
        let kind = t.str_at(node, "kind").unwrap_or("").to_string();
        let api_version = t.str_at(node, "apiVersion").unwrap_or("").to_string();
        let metadata = t.get(node, "metadata");
        let name = match (
            metadata.and_then(|m| t.str_at(m, "name")),
            metadata.and_then(|m| t.str_at(m, "generateName")),
        ) {
            (Some(n), _) if !n.is_empty() => clip(n),
            (_, Some(g)) if !g.is_empty() => format!("{}*", clip(g)),
            _ => "(unnamed)".to_string(),
        };
        let owner = Owner {
            document: doc + 1,
            kind: clip(&kind),
            api_version: clip(&api_version),
            name,
        };
        let group = match api_version.split_once('/') {
            Some((group, _)) => group,
            None => "",
        };
        let at = |p: &str| join(path, p);
        let describe = format!(
            "document {}: {}/{} ({})",
            owner.document, owner.kind, owner.name, owner.api_version
        );

        if kind.is_empty() {
            if t.get(node, "containers").is_some_and(|c| t.is_seq(c)) {
                return self.pod_spec(&owner, node, &at(""), None, None, None);
            }
            return Ok(());
        }
        if kind.len() > 4 && kind.ends_with("List") || kind == "List" {
            if let Some(items) = t.get(node, "items") {
                for (i, &item) in t.items(items).iter().enumerate() {
                    self.object(doc, t.resolve(item), &at(&format!("items[{i}]")))?;
                }
            }
            return Ok(());
        }
        let spec = t.get(node, "spec");
        match (group, kind.as_str()) {
            ("", "Pod") => {
                if let Some(s) = spec {
                    self.pod_spec(&owner, s, &at("spec"), None, None, None)?;
                }
            }
            ("", "PodTemplate") => {
                if let Some(s) = t.get(node, "template").and_then(|tp| t.get(tp, "spec")) {
                    self.pod_spec(&owner, s, &at("template.spec"), None, None, None)?;
                }
            }
            ("", "ReplicationController")
            | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => {
                if let Some(s) = spec {
                    self.template(&owner, s, &at("spec"), None, None)?;
                }
            }
            ("batch", "Job") => {
                if let Some(s) = spec {
                    self.job(&owner, s, &at("spec"))?;
                }
            }
            ("batch", "CronJob") => {
                if let Some(js) = spec
                    .and_then(|s| t.get(s, "jobTemplate"))
                    .and_then(|j| t.get(j, "spec"))
                {
                    self.job(&owner, js, &at("spec.jobTemplate.spec"))?;
                }
            }
            (
                "argoproj.io",
                "Workflow" | "WorkflowTemplate" | "ClusterWorkflowTemplate" | "CronWorkflow",
            ) => {
                let (wf, wf_path) = if kind == "CronWorkflow" {
                    (
                        spec.and_then(|s| t.get(s, "workflowSpec")),
                        "spec.workflowSpec",
                    )
                } else {
                    (spec, "spec")
                };
                if let Some(wf) = wf {
                    self.argo(&owner, wf, &at(wf_path))?;
                }
            }
            ("sparkoperator.k8s.io", "SparkApplication" | "ScheduledSparkApplication") => {
                let (app, app_path) = if kind == "ScheduledSparkApplication" {
                    (spec.and_then(|s| t.get(s, "template")), "spec.template")
                } else {
                    (spec, "spec")
                };
                if let Some(app) = app {
                    self.spark(&owner, app, &at(app_path))?;
                }
            }
            ("ray.io", "RayCluster" | "RayJob" | "RayService") => {
                let Some(spec) = spec else { return Ok(()) };
                let (cluster, cluster_path) = match kind.as_str() {
                    "RayCluster" => (Some(spec), "spec"),
                    "RayJob" => (t.get(spec, "rayClusterSpec"), "spec.rayClusterSpec"),
                    _ => (t.get(spec, "rayClusterConfig"), "spec.rayClusterConfig"),
                };
                if let Some(c) = cluster {
                    if let Some(head) = t.get(c, "headGroupSpec") {
                        self.template(
                            &owner,
                            head,
                            &at(&format!("{cluster_path}.headGroupSpec")),
                            None,
                            None,
                        )?;
                    }
                    if let Some(groups) = t.get(c, "workerGroupSpecs") {
                        for (i, &g) in t.items(groups).iter().enumerate() {
                            let p = at(&format!("{cluster_path}.workerGroupSpecs[{i}]"));
                            self.template(&owner, t.resolve(g), &p, None, None)?;
                        }
                    }
                }
                if kind == "RayJob"
                    && let Some(sub) = t.get(spec, "submitterPodTemplate")
                    && let Some(s) = t.get(sub, "spec")
                {
                    self.pod_spec(
                        &owner,
                        s,
                        &at("spec.submitterPodTemplate.spec"),
                        None,
                        None,
                        Some("Never"),
                    )?;
                }
            }
            (
                "kubeflow.org",
                "PyTorchJob" | "TFJob" | "MPIJob" | "XGBoostJob" | "PaddleJob" | "JAXJob",
            ) => {
                let Some(spec) = spec else { return Ok(()) };
                for &(k, v) in t.entries(spec) {
                    let Some(key) = t.scalar(k) else { continue };
                    if !key.ends_with("ReplicaSpecs") {
                        continue;
                    }
                    for &(rk, rv) in t.entries(v) {
                        let replica = t.scalar(rk).unwrap_or("");
                        let rv = t.resolve(rv);
                        let policy = t.str_at(rv, "restartPolicy").map(str::to_string);
                        // The training operator (kubeflow.org/v1) sets the replica's policy on
                        // the pods, OnFailure when unset.
                        let default = (api_version == "kubeflow.org/v1").then_some("OnFailure");
                        let p = at(&format!("spec.{key}.{replica}"));
                        self.template(&owner, rv, &p, policy, default)?;
                    }
                }
            }
            ("trainer.kubeflow.org", "TrainingRuntime" | "ClusterTrainingRuntime") => {
                if let Some(js) = spec
                    .and_then(|s| t.get(s, "template"))
                    .and_then(|tp| t.get(tp, "spec"))
                {
                    self.jobset(&owner, js, &at("spec.template.spec"))?;
                }
            }
            ("trainer.kubeflow.org", "TrainJob") => self.note(format!(
                "{describe}: skipped: a TrainJob's pods come from its runtime; inject into the \
                 TrainingRuntime or ClusterTrainingRuntime instead"
            )),
            ("jobset.x-k8s.io", "JobSet") => {
                if let Some(s) = spec {
                    self.jobset(&owner, s, &at("spec"))?;
                }
            }
            ("batch.volcano.sh", "Job") => {
                if let Some(tasks) = spec.and_then(|s| t.get(s, "tasks")) {
                    for (i, &task) in t.items(tasks).iter().enumerate() {
                        let p = at(&format!("spec.tasks[{i}]"));
                        self.template(&owner, t.resolve(task), &p, None, None)?;
                    }
                }
            }
            ("tekton.dev", _) => self.note(format!(
                "{describe}: skipped: Tekton has no init-container hook for its steps; Tekton \
                 already fails a TaskRun whose step image cannot be pulled (ImagePullBackOff)"
            )),
            ("kyverno.io", _)
            | (
                "templates.gatekeeper.sh"
                | "mutations.gatekeeper.sh"
                | "constraints.gatekeeper.sh"
                | "expansion.gatekeeper.sh"
                | "config.gatekeeper.sh"
                | "admissionregistration.k8s.io",
                _,
            ) => self.note(format!(
                "{describe}: skipped: a policy object; pod specs inside it are patterns or \
                 patches, not pods"
            )),
            ("serving.knative.dev", "Service" | "Configuration" | "Revision") => {
                self.note(format!(
                    "{describe}: skipped: Knative Serving does not allow init containers \
                     unless its `kubernetes.podspec-init-containers` feature flag is on"
                ))
            }
            _ => {
                let before = self.out.len();
                self.generic(&owner, node, path, 0)?;
                if self.out.len() > before {
                    let paths: Vec<String> = self.out[before..]
                        .iter()
                        .map(|s| s.origin.path.clone())
                        .collect();
                    self.note(format!(
                        "{describe}: not a kind pullcheck knows; read the pod template(s) at {}",
                        paths.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// A Job spec: its pod template, with the Job for `--job-failure-policy`.
    fn job(&mut self, owner: &Owner, spec: NodeId, path: &str) -> Result<(), ManifestError> {
        let t = self.tree;
        if let Some(s) = t.get(spec, "template").and_then(|tp| t.get(tp, "spec")) {
            self.pod_spec(
                owner,
                s,
                &join(path, "template.spec"),
                None,
                Some(spec),
                None,
            )?;
        }
        Ok(())
    }

    /// The pod spec at `node.template.spec` (a workload, a replica, a task, a Ray group).
    fn template(
        &mut self,
        owner: &Owner,
        node: NodeId,
        path: &str,
        operator_policy: Option<String>,
        default: Option<&'static str>,
    ) -> Result<(), ManifestError> {
        let t = self.tree;
        if let Some(s) = t.get(node, "template").and_then(|tp| t.get(tp, "spec")) {
            let shape = SpotShape {
                holder: s,
                before: &["containers"],
                volumes: s,
                pod: Some(s),
                job: None,
                operator_policy,
                default_policy: default,
            };
            self.pod_spec_shaped(owner, s, &join(path, "template.spec"), shape)?;
        }
        Ok(())
    }

    /// A JobSet spec (also a Trainer runtime's template): each replicated Job's pod template.
    fn jobset(&mut self, owner: &Owner, spec: NodeId, path: &str) -> Result<(), ManifestError> {
        let t = self.tree;
        if let Some(jobs) = t.get(spec, "replicatedJobs") {
            for (i, &rj) in t.items(jobs).iter().enumerate() {
                let js = t
                    .get(t.resolve(rj), "template")
                    .and_then(|tp| t.get(tp, "spec"));
                if let Some(js) = js
                    && let Some(s) = t.get(js, "template").and_then(|tp| t.get(tp, "spec"))
                {
                    let p = join(
                        path,
                        &format!("replicatedJobs[{i}].template.spec.template.spec"),
                    );
                    self.pod_spec(owner, s, &p, None, None, None)?;
                }
            }
        }
        Ok(())
    }

    fn pod_spec(
        &mut self,
        owner: &Owner,
        spec: NodeId,
        path: &str,
        operator_policy: Option<String>,
        job: Option<NodeId>,
        default: Option<&'static str>,
    ) -> Result<(), ManifestError> {
        let shape = SpotShape {
            holder: spec,
            before: &["containers"],
            volumes: spec,
            pod: Some(spec),
            job,
            operator_policy,
            default_policy: default,
        };
        self.pod_spec_shaped(owner, spec, path, shape)
    }

    /// A real pod spec (`containers`, `initContainers`, `volumes`, `imagePullSecrets`).
    fn pod_spec_shaped(
        &mut self,
        owner: &Owner,
        spec: NodeId,
        path: &str,
        shape: SpotShape,
    ) -> Result<(), ManifestError> {
        let t = self.tree;
        if !t.is_map(spec) {
            return Ok(());
        }
        let origin = self.origin(owner, path);
        let pod_security = t.get(spec, "securityContext");
        let mut containers = Vec::new();
        let mut nodes = Vec::new();
        let mut name_taken = false;
        let mut not_lists = Vec::new();
        for key in [
            "initContainers",
            "volumes",
            "imagePullSecrets",
            "containers",
        ] {
            if let Some(v) = t.get(spec, key)
                && !t.is_seq(v)
                && !t.is_null(v)
            {
                not_lists.push(key);
            }
        }
        for (key, list) in [
            ("initContainers", ContainerList::Init),
            ("containers", ContainerList::App),
        ] {
            let Some(l) = t.get(spec, key) else { continue };
            for (i, &c) in t.items(l).iter().enumerate() {
                let c = t.resolve(c);
                if t.str_at(c, "name") == Some(PULLCHECK) {
                    name_taken |= list == ContainerList::App;
                    continue;
                }
                nodes.push(c);
                let list = if list == ContainerList::Init
                    && t.str_at(c, "restartPolicy") == Some("Always")
                {
                    ContainerList::Sidecar
                } else {
                    list
                };
                if let Some(pc) =
                    self.container(&origin, c, &format!("#{}", i + 1), list, pod_security, None)?
                {
                    containers.push(pc);
                }
            }
        }
        self.image_volumes(&origin, spec, &mut containers);
        let (secrets, bad_secrets) = self.pull_secrets(t.get(spec, "imagePullSecrets"));
        // `spec.os.name` is what the API server checks; a node selector for Windows nodes
        // means the same pod.
        let windows = t.get(spec, "os").and_then(|o| t.str_at(o, "name")) == Some("windows")
            || t.get(spec, "nodeSelector").is_some_and(|s| {
                ["kubernetes.io/os", "beta.kubernetes.io/os"]
                    .iter()
                    .any(|k| t.str_at(s, k) == Some("windows"))
            });
        if windows {
            self.note(format!(
                "{origin}: a Windows pod; left out: pullcheck's image runs on Linux and checks for Linux nodes, so inject leaves it unchanged and check --pod-spec does not check its images"
            ));
        }
        self.push(
            origin,
            containers,
            Spot {
                secrets,
                bad_secrets,
                container_nodes: nodes,
                name_taken,
                not_lists,
                windows,
                ..shape.spot()
            },
        );
        Ok(())
    }

    /// Records a pod spec and where `inject` edits it.
    fn push(&mut self, origin: Origin, containers: Vec<PodContainer>, mut spot: Spot) {
        spot.spec = self.out.len();
        let windows = spot.windows;
        self.spots.push(spot);
        let parameter_images = std::mem::take(&mut self.parameter_images);
        self.out.push(PodSpec {
            origin,
            containers,
            parameter_images,
            windows,
        });
    }

    fn origin(&self, owner: &Owner, path: &str) -> Origin {
        Origin {
            document: owner.document,
            kind: owner.kind.clone(),
            api_version: owner.api_version.clone(),
            name: owner.name.clone(),
            path: if path.is_empty() {
                ".".to_string()
            } else {
                path.to_string()
            },
        }
    }

    /// Image volumes of a pod spec's `volumes`.
    fn image_volumes(&mut self, origin: &Origin, spec: NodeId, out: &mut Vec<PodContainer>) {
        let t = self.tree;
        let Some(volumes) = t.get(spec, "volumes") else {
            return;
        };
        for (i, &v) in t.items(volumes).iter().enumerate() {
            let v = t.resolve(v);
            let Some(image) = t.get(v, "image") else {
                continue;
            };
            let name = t
                .str_at(v, "name")
                .map_or_else(|| format!("#{}", i + 1), clip);
            match t.str_at(image, "reference") {
                Some(r) if !r.trim().is_empty() => out.push(PodContainer {
                    name,
                    list: ContainerList::ImageVolume,
                    image: r.to_string(),
                    image_pull_policy: t.str_at(image, "pullPolicy").map(str::to_string),
                    command_set: false,
                    args_set: false,
                    run_as_non_root: None,
                    run_as_user: None,
                }),
                _ => self.note(format!(
                    "{origin}: image volume {name} has no reference; not checked"
                )),
            }
        }
    }

    /// Pull secret names: a list of `{name: …}` or (Spark) of strings.
    fn pull_secrets(&self, list: Option<NodeId>) -> (Vec<String>, Vec<String>) {
        let t = self.tree;
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        let Some(list) = list else { return (good, bad) };
        for &e in t.items(list) {
            let e = t.resolve(e);
            let name = if t.is_map(e) {
                t.str_at(e, "name")
            } else {
                t.scalar(e)
            };
            let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
                continue;
            };
            if !names::is_dns_subdomain(name) {
                bad.push(clip(name));
            } else if !good.iter().any(|g| g == name) {
                good.push(name.to_string());
            }
        }
        (good, bad)
    }

    /// One container. `image_default` is Spark's `spec.image` for the driver and executor.
    fn container(
        &mut self,
        origin: &Origin,
        c: NodeId,
        default_name: &str,
        list: ContainerList,
        pod_security: Option<NodeId>,
        image_default: Option<&str>,
    ) -> Result<Option<PodContainer>, ManifestError> {
        let t = self.tree;
        let name = t
            .str_at(c, "name")
            .filter(|n| !n.is_empty())
            .map_or_else(|| default_name.to_string(), clip);
        let image_node = t.get(c, "image");
        let image = match image_node {
            Some(n) => match t.scalar(n) {
                Some(s) => Some(s.to_string()),
                None if t.is_null(n) => None,
                None => {
                    // `image: {{ .Values.image }}` unquoted reads as a mapping.
                    if template_line(self.text).is_some() {
                        return Err(ManifestError::TemplateImage {
                            input: self.source.to_string(),
                            at: Box::new(origin.clone()),
                            list: list.as_str(),
                            container: name,
                        });
                    }
                    self.note(format!(
                        "{origin} {} {name}: the image is not a string; not checked",
                        list.as_str()
                    ));
                    return Ok(None);
                }
            },
            None => None,
        };
        let Some(image) = image.or_else(|| image_default.map(str::to_string)) else {
            self.note(format!(
                "{origin} {} {name}: no image; not checked",
                list.as_str()
            ));
            return Ok(None);
        };
        if image.trim().is_empty() {
            self.note(format!(
                "{origin} {} {name}: an empty image; not checked",
                list.as_str()
            ));
            return Ok(None);
        }
        // One answer for both subcommands: the image as the check sees it, without the
        // whitespace around it; a placeholder with whitespace inside (JobSet's `<CHANGE ME>`)
        // stays one (invalid) image, checked as one, and so does one that starts with '-':
        // inject passes such images after a `--`, where no value is read as an option.
        let image = image.trim().to_string();
        if image.contains("{{") {
            if origin.api_version.starts_with("argoproj.io/") {
                // Argo fills `{{inputs.parameters.image}}` in at run time.
                self.parameter_images += 1;
                self.note(format!(
                    "{origin} {} {name}: the image is an Argo parameter, known only at run time; not checked",
                    list.as_str()
                ));
                return Ok(None);
            }
            return Err(ManifestError::TemplateImage {
                input: self.source.to_string(),
                at: Box::new(origin.clone()),
                list: list.as_str(),
                container: name,
            });
        }
        let security = t.get(c, "securityContext");
        let effective_bool = |key: &str| {
            security
                .and_then(|s| t.get(s, key))
                .and_then(|v| t.as_bool(v))
                .or_else(|| {
                    pod_security
                        .and_then(|s| t.get(s, key))
                        .and_then(|v| t.as_bool(v))
                })
        };
        let effective_int = |key: &str| {
            security
                .and_then(|s| t.get(s, key))
                .and_then(|v| t.as_i64(v))
                .or_else(|| {
                    pod_security
                        .and_then(|s| t.get(s, key))
                        .and_then(|v| t.as_i64(v))
                })
        };
        // The kubelet and the runtimes read an empty list as no command (`len(Command) == 0`).
        let set = |key: &str| {
            t.get(c, key)
                .is_some_and(|v| !(t.is_null(v) || (t.is_seq(v) && t.items(v).is_empty())))
        };
        Ok(Some(PodContainer {
            name,
            list,
            image,
            image_pull_policy: t.str_at(c, "imagePullPolicy").map(str::to_string),
            command_set: set("command"),
            args_set: set("args"),
            run_as_non_root: effective_bool("runAsNonRoot"),
            run_as_user: effective_int("runAsUser"),
        }))
    }

    /// An Argo workflow spec: each template that runs a container or script.
    fn argo(&mut self, owner: &Owner, wf: NodeId, path: &str) -> Result<(), ManifestError> {
        let t = self.tree;
        let Some(templates) = t.get(wf, "templates") else {
            return Ok(());
        };
        let pod_security = t.get(wf, "securityContext");
        let (secrets, bad_secrets) = self.pull_secrets(t.get(wf, "imagePullSecrets"));
        for (i, &tpl) in t.items(templates).iter().enumerate() {
            let tpl = t.resolve(tpl);
            let main_key = if t.get(tpl, "container").is_some() {
                "container"
            } else if t.get(tpl, "script").is_some() {
                "script"
            } else {
                continue;
            };
            let origin = self.origin(owner, &join(path, &format!("templates[{i}]")));
            let mut containers = Vec::new();
            let mut nodes = Vec::new();
            let mut name_taken = false;
            let mut not_lists = Vec::new();
            for key in ["initContainers", "sidecars"] {
                if let Some(v) = t.get(tpl, key)
                    && !t.is_seq(v)
                    && !t.is_null(v)
                {
                    not_lists.push(key);
                }
            }
            if let Some(v) = t.get(wf, "volumes")
                && !t.is_seq(v)
                && !t.is_null(v)
            {
                not_lists.push("volumes");
            }
            if let Some(inits) = t.get(tpl, "initContainers") {
                for (j, &c) in t.items(inits).iter().enumerate() {
                    let c = t.resolve(c);
                    if t.str_at(c, "name") == Some(PULLCHECK) {
                        continue;
                    }
                    nodes.push(c);
                    if let Some(pc) = self.container(
                        &origin,
                        c,
                        &format!("#{}", j + 1),
                        ContainerList::Init,
                        pod_security,
                        None,
                    )? {
                        containers.push(pc);
                    }
                }
            }
            if let Some(main) = t.get(tpl, main_key) {
                nodes.push(main);
                let pc = self.container(
                    &origin,
                    main,
                    "main",
                    ContainerList::App,
                    pod_security,
                    None,
                )?;
                containers.extend(pc);
            }
            if let Some(sidecars) = t.get(tpl, "sidecars") {
                for (j, &c) in t.items(sidecars).iter().enumerate() {
                    let c = t.resolve(c);
                    name_taken |= t.str_at(c, "name") == Some(PULLCHECK);
                    nodes.push(c);
                    if let Some(pc) = self.container(
                        &origin,
                        c,
                        &format!("#{}", j + 1),
                        ContainerList::App,
                        pod_security,
                        None,
                    )? {
                        containers.push(pc);
                    }
                }
            }
            let shape = SpotShape {
                holder: tpl,
                before: &["container", "script"],
                volumes: wf,
                pod: None,
                job: None,
                operator_policy: None,
                // Argo runs each step's pod with restartPolicy Never unless a retryStrategy
                // says otherwise.
                default_policy: Some("Never"),
            };
            self.push(
                origin,
                containers,
                Spot {
                    secrets: secrets.clone(),
                    bad_secrets: bad_secrets.clone(),
                    container_nodes: nodes,
                    name_taken,
                    not_lists,
                    ..shape.spot()
                },
            );
        }
        Ok(())
    }

    /// A Spark application spec: the driver and the executor.
    fn spark(&mut self, owner: &Owner, app: NodeId, path: &str) -> Result<(), ManifestError> {
        let t = self.tree;
        let (secrets, bad_secrets) = self.pull_secrets(t.get(app, "imagePullSecrets"));
        let app_image = t.str_at(app, "image").map(str::to_string);
        let app_policy = t.str_at(app, "imagePullPolicy").map(str::to_string);
        for role in ["driver", "executor"] {
            let Some(r) = t.get(app, role) else { continue };
            if !t.is_map(r) {
                continue;
            }
            let origin = self.origin(owner, &join(path, role));
            let mut containers = Vec::new();
            let mut nodes = Vec::new();
            let mut name_taken = false;
            let mut not_lists = Vec::new();
            for key in ["initContainers", "sidecars"] {
                if let Some(v) = t.get(r, key)
                    && !t.is_seq(v)
                    && !t.is_null(v)
                {
                    not_lists.push(key);
                }
            }
            if let Some(inits) = t.get(r, "initContainers") {
                for (j, &c) in t.items(inits).iter().enumerate() {
                    let c = t.resolve(c);
                    if t.str_at(c, "name") == Some(PULLCHECK) {
                        continue;
                    }
                    nodes.push(c);
                    if let Some(pc) = self.container(
                        &origin,
                        c,
                        &format!("#{}", j + 1),
                        ContainerList::Init,
                        None,
                        None,
                    )? {
                        containers.push(pc);
                    }
                }
            }
            // The driver or executor container itself: its image, else the application's.
            // (The driver map's `name`, if any, is not the container's.)
            if let Some(mut pc) = self.container(
                &origin,
                r,
                &format!("spark-kubernetes-{role}"),
                ContainerList::App,
                None,
                app_image.as_deref(),
            )? {
                pc.name = format!("spark-kubernetes-{role}");
                if pc.image_pull_policy.is_none() {
                    pc.image_pull_policy.clone_from(&app_policy);
                }
                containers.push(pc);
            }
            if let Some(sidecars) = t.get(r, "sidecars") {
                for (j, &c) in t.items(sidecars).iter().enumerate() {
                    let c = t.resolve(c);
                    name_taken |= t.str_at(c, "name") == Some(PULLCHECK);
                    nodes.push(c);
                    if let Some(pc) = self.container(
                        &origin,
                        c,
                        &format!("#{}", j + 1),
                        ContainerList::App,
                        None,
                        None,
                    )? {
                        containers.push(pc);
                    }
                }
            }
            let shape = SpotShape {
                holder: r,
                before: &[],
                volumes: app,
                pod: None,
                job: None,
                operator_policy: None,
                default_policy: Some("Never"),
            };
            self.push(
                origin,
                containers,
                Spot {
                    secrets: secrets.clone(),
                    bad_secrets: bad_secrets.clone(),
                    container_nodes: nodes,
                    name_taken,
                    not_lists,
                    main_mounts: Some(r),
                    ..shape.spot()
                },
            );
        }
        Ok(())
    }

    /// An unknown kind: every `template` whose `spec` has `containers`, not under a patch or
    /// rule, nor inside another object's pod spec.
    fn generic(
        &mut self,
        owner: &Owner,
        node: NodeId,
        path: &str,
        depth: usize,
    ) -> Result<(), ManifestError> {
        let t = self.tree;
        if depth > tree::MAX_DEPTH || self.budget == 0 {
            return Ok(());
        }
        self.budget -= 1;
        let node = t.resolve(node);
        if t.is_seq(node) {
            for (i, &item) in t.items(node).iter().enumerate() {
                self.generic(owner, item, &format!("{path}[{i}]"), depth + 1)?;
            }
            return Ok(());
        }
        // A whole object nested in another (CodeFlare's AppWrapper): read it as its own kind.
        if depth > 0 && t.str_at(node, "kind").is_some() && t.str_at(node, "apiVersion").is_some() {
            return self.object(owner.document - 1, node, path);
        }
        let operator_policy = t.str_at(node, "restartPolicy").map(str::to_string);
        for &(k, v) in t.entries(node) {
            let Some(key) = t.scalar(k) else { continue };
            if PATCH_KEYS.contains(&key) {
                continue;
            }
            let p = join(path, key);
            if key == "template"
                && let Some(s) = t.get(v, "spec")
                && t.get(s, "containers").is_some_and(|c| t.is_seq(c))
            {
                // An operator's replica spec next to `template` (Kubeflow's ReplicaSpec style)
                // sets the pods' restartPolicy, overriding the template's.
                let policy = operator_policy.clone();
                self.pod_spec(owner, s, &join(&p, "spec"), policy, None, None)?;
                continue;
            }
            self.generic(owner, v, &p, depth + 1)?;
        }
        Ok(())
    }
}

/// At most 64 characters of a name from the document, control characters replaced.
fn clip(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 64 {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (image, origin) of every image a check pulls.
    fn images(text: &str) -> Vec<(String, String)> {
        read(text, "t")
            .expect("readable")
            .images()
            .into_iter()
            .map(|i| (i.image, i.origin))
            .collect()
    }

    fn image_list(text: &str) -> Vec<String> {
        images(text).into_iter().map(|(i, _)| i).collect()
    }

    fn notes(text: &str) -> Vec<String> {
        read(text, "t").expect("readable").notes
    }

    fn error(text: &str) -> String {
        read(text, "t").expect_err("an error").to_string()
    }

    #[test]
    fn built_in_kinds_in_yaml_and_json() {
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n  - {name: i, image: init:1}\n  containers:\n  - {name: a, image: app:1}\n";
        assert_eq!(
            images(pod),
            [
                (
                    "init:1".to_string(),
                    "document 1: Pod/p spec initContainer i".to_string()
                ),
                (
                    "app:1".to_string(),
                    "document 1: Pod/p spec container a".to_string()
                ),
            ]
        );
        let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"app:1"}]}}"#;
        assert_eq!(image_list(json), ["app:1"]);
        assert_eq!(read(json, "t").expect("json").format, Format::Json);
        for (kind, api) in [
            ("Deployment", "apps/v1"),
            ("StatefulSet", "apps/v1"),
            ("DaemonSet", "apps/v1"),
            ("ReplicaSet", "apps/v1"),
            ("ReplicationController", "v1"),
            ("Job", "batch/v1"),
        ] {
            let text = format!(
                "apiVersion: {api}\nkind: {kind}\nmetadata: {{name: w}}\nspec:\n  template:\n    spec:\n      containers: [{{name: a, image: {kind}:1}}]\n"
            );
            assert_eq!(image_list(&text), [format!("{kind}:1")], "{kind}");
        }
        let cron = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: [{name: a, image: cron:1}]\n";
        assert_eq!(
            images(cron)[0].1,
            "document 1: CronJob/c spec.jobTemplate.spec.template.spec container a"
        );
        let tpl = "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\ntemplate:\n  spec:\n    containers: [{name: a, image: tpl:1}]\n";
        assert_eq!(image_list(tpl), ["tpl:1"]);
        // A bare pod spec (no kind) is read too.
        assert_eq!(
            image_list("containers: [{name: a, image: bare:1}]\n"),
            ["bare:1"]
        );
    }

    #[test]
    fn documents_without_pod_specs_are_skipped_and_lists_are_walked() {
        let text = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n---\n\
                    apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n---\n---\n\
                    apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n  spec: {containers: [{name: a, image: a:1}]}\n\
                    - {apiVersion: v1, kind: Service, metadata: {name: s2}}\n";
        let found = read(text, "t").expect("readable");
        assert_eq!(found.pod_specs.len(), 1);
        assert_eq!(found.pod_specs[0].origin.document, 4);
        assert_eq!(found.pod_specs[0].origin.path, "items[0].spec");
        assert!(found.notes.is_empty(), "{:?}", found.notes);
        assert!(read("", "t").expect("empty").pod_specs.is_empty());
        assert!(
            read("# only a comment\n", "t")
                .expect("comment")
                .pod_specs
                .is_empty()
        );
        // Typed lists, JSON arrays and JSON values in a row.
        let json = r#"{"kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"a","image":"x:1"}]}}]}
[{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"b","image":"y:1"}]}}]"#;
        assert_eq!(image_list(json), ["x:1", "y:1"]);
    }

    #[test]
    fn kinds_are_matched_by_api_group_and_kind() {
        // Volcano's Job is not a batch/v1 Job: its pods are under spec.tasks[].template.
        let volcano = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n  tasks:\n  - name: ps\n    template:\n      spec:\n        containers: [{name: ps, image: ps:1}]\n  - name: worker\n    template:\n      spec:\n        containers: [{name: w, image: w:1}]\n";
        let found = images(volcano);
        assert_eq!(
            found.iter().map(|(_, o)| o.as_str()).collect::<Vec<_>>(),
            [
                "document 1: Job/v spec.tasks[0].template.spec container ps",
                "document 1: Job/v spec.tasks[1].template.spec container w"
            ]
        );
        // A Pod of another group is not a Pod.
        let other = "apiVersion: example.com/v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: a, image: a:1}]\n";
        assert!(image_list(other).is_empty());
    }

    #[test]
    fn a_quoted_scalars_continuation_may_be_indented_less_as_kubectl_reads_it() {
        // go-yaml (libyaml) does not check a quoted scalar's continuation indentation;
        // neither does the vendored parser (vendor/saphyr-parser/PATCHES.md).
        for indent in 0..6 {
            let text = format!(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: busybox:1.36\n    command: [\"bash\", \"-c\", \"python train.py\n{}--epochs 3\"]\n",
                " ".repeat(indent)
            );
            let found = read(&text, "t").unwrap_or_else(|e| panic!("{indent}: {e}"));
            assert_eq!(found.pod_specs[0].containers[0].image, "busybox:1.36");
            assert!(found.pod_specs[0].containers[0].command_set, "{indent}");
        }
    }

    #[test]
    fn job_frameworks() {
        let argo = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {generateName: wf-}\nspec:\n  entrypoint: main\n  \
                    templates:\n  - name: main\n    steps: [[{name: s, template: echo}]]\n  - name: echo\n    initContainers: [{name: i, image: argo-init:1}]\n    \
                    container: {image: argo-main:1}\n    sidecars: [{name: side, image: argo-side:1}]\n  - name: py\n    script: {image: \"python:3.12\", source: print(1)}\n  \
                    - name: param\n    container: {image: \"{{inputs.parameters.image}}\"}\n";
        let found = images(argo);
        assert_eq!(
            found.iter().map(|(i, _)| i.as_str()).collect::<Vec<_>>(),
            ["argo-init:1", "argo-main:1", "argo-side:1", "python:3.12"]
        );
        assert_eq!(
            found[1].1,
            "document 1: Workflow/wf-* spec.templates[1] container main"
        );
        assert!(notes(argo)[0].contains("Argo parameter"));

        let spark = "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nmetadata: {name: pi}\nspec:\n  image: spark:3.5\n  \
                     imagePullSecrets: [regcred]\n  driver:\n    cores: 1\n    initContainers: [{name: fetch, image: fetch:1}]\n  \
                     executor:\n    image: spark-exec:3.5\n    sidecars: [{name: log, image: log:1}]\n";
        assert_eq!(
            image_list(spark),
            ["fetch:1", "spark:3.5", "spark-exec:3.5", "log:1"]
        );
        let found = read(spark, "t").expect("spark");
        assert_eq!(found.spots[0].secrets, ["regcred"]);
        assert_eq!(
            found.pod_specs[0].containers[1].name,
            "spark-kubernetes-driver"
        );

        let ray = "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: r}\nspec:\n  entrypoint: python x.py\n  rayClusterSpec:\n    \
                   headGroupSpec:\n      template:\n        spec:\n          containers: [{name: head, image: ray-head:1}]\n    \
                   workerGroupSpecs:\n    - groupName: g\n      template:\n        spec:\n          containers: [{name: w, image: ray-worker:1}]\n  \
                   submitterPodTemplate:\n    spec:\n      restartPolicy: Never\n      containers: [{name: submit, image: ray-submit:1}]\n";
        assert_eq!(
            image_list(ray),
            ["ray-head:1", "ray-worker:1", "ray-submit:1"]
        );

        let pytorch = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      \
                       restartPolicy: OnFailure\n      template:\n        spec:\n          containers: [{name: pytorch, image: pt:1}]\n    \
                       Worker:\n      template:\n        spec:\n          containers: [{name: pytorch, image: pt:1}]\n";
        let found = read(pytorch, "t").expect("pytorch");
        assert_eq!(
            found.pod_specs[0].origin.path,
            "spec.pytorchReplicaSpecs.Master.template.spec"
        );
        assert_eq!(found.spots[0].operator_policy.as_deref(), Some("OnFailure"));
        assert_eq!(found.spots[1].default_policy, Some("OnFailure"));

        let jobset = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs:\n  - name: w\n    \
                      template:\n      spec:\n        template:\n          spec:\n            containers: [{name: c, image: <CHANGE ME>}]\n";
        // The placeholder is one (invalid) image.
        assert_eq!(image_list(jobset), ["<CHANGE ME>"]);

        let runtime = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nmetadata: {name: torch}\nspec:\n  \
                       template:\n    spec:\n      replicatedJobs:\n      - name: node\n        template:\n          spec:\n            \
                       template:\n              spec:\n                containers: [{name: node, image: torch:1}]\n";
        assert_eq!(
            images(runtime)[0].1,
            "document 1: ClusterTrainingRuntime/torch spec.template.spec.replicatedJobs[0].template.spec.template.spec container node"
        );
    }

    #[test]
    fn skipped_kinds_say_why() {
        for (text, words) in [
            (
                "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: k}\nspec:\n  rules:\n  - mutate:\n      patchStrategicMerge:\n        spec:\n          template:\n            spec:\n              containers: [{name: a, image: a:1}]\n",
                "a policy object",
            ),
            (
                "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k}\nspec:\n  template:\n    spec:\n      containers: [{image: a:1}]\n",
                "Knative",
            ),
            (
                "apiVersion: tekton.dev/v1\nkind: TaskRun\nmetadata: {name: t}\nspec:\n  taskSpec:\n    steps: [{name: s, image: a:1}]\n",
                "ImagePullBackOff",
            ),
            (
                "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\nspec:\n  runtimeRef: {name: torch}\n",
                "runtime",
            ),
        ] {
            let found = read(text, "t").expect("readable");
            assert!(found.pod_specs.is_empty(), "{text}");
            assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
            assert!(found.notes[0].contains(words), "{:?}", found.notes);
        }
        // Unknown kinds: every pod template, not under a patch or rule, with a note.
        let crd = "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: x}\nspec:\n  a:\n    template:\n      spec:\n        containers: [{name: a, image: a:1}]\n  \
                   rules:\n  - template:\n      spec:\n        containers: [{name: b, image: b:1}]\n";
        assert_eq!(image_list(crd), ["a:1"]);
        assert!(
            notes(crd)[0].contains("spec.a.template.spec"),
            "{:?}",
            notes(crd)
        );
    }

    #[test]
    fn containers_carry_what_other_checks_need() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  securityContext: {runAsNonRoot: yes, runAsUser: 1_000}\n  \
                    initContainers:\n  - {name: pullcheck, image: ours:1}\n  - {name: side, image: side:1, restartPolicy: Always, command: [sh]}\n  \
                    containers:\n  - name: app\n    image: app:1\n    imagePullPolicy: Never\n    args: [x]\n    securityContext: {runAsUser: 0, runAsNonRoot: false}\n  \
                    volumes:\n  - name: model\n    image: {reference: models/llm:1, pullPolicy: IfNotPresent}\n";
        let all = pod_containers(text, "t").expect("readable");
        let got: Vec<&PodContainer> = all.iter().map(|(_, c)| c).collect();
        assert_eq!(got.len(), 3, "pullcheck itself is left out");
        assert_eq!(
            *got[0],
            PodContainer {
                name: "side".into(),
                list: ContainerList::Sidecar,
                image: "side:1".into(),
                image_pull_policy: None,
                command_set: true,
                args_set: false,
                run_as_non_root: Some(true),
                run_as_user: Some(1000),
            }
        );
        assert_eq!(got[1].list, ContainerList::App);
        assert_eq!(got[1].image_pull_policy.as_deref(), Some("Never"));
        assert!(got[1].args_set && !got[1].command_set);
        assert_eq!(
            (got[1].run_as_non_root, got[1].run_as_user),
            (Some(false), Some(0))
        );
        assert_eq!(got[2].list, ContainerList::ImageVolume);
        assert_eq!(got[2].image, "models/llm:1");
        assert_eq!(all[2].0.path, "spec");
        // Never is left out of what check pulls.
        assert_eq!(image_list(text), ["side:1", "models/llm:1"]);
    }

    #[test]
    fn yaml_features_kubectl_reads() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - &base {name: a, image: &img app:1}\n  - <<: *base\n    name: b\n  - {name: c, image: *img}\n";
        assert_eq!(image_list(text), ["app:1", "app:1", "app:1"]);
        assert_eq!(
            image_list("\u{feff}containers: [{name: a, image: x:1}]\n"),
            ["x:1"]
        );
    }

    #[test]
    fn brackets_inside_scalars_are_not_nesting_and_inject_keeps_such_input_readable() {
        // Found by fuzzing `inject`: an image with 200 `[` in a plain scalar was readable,
        // but inject repeats image names (PULLCHECK_IMAGES, PULLCHECK_CONTAINERS), and the
        // bracket count of the output then passed the nesting guard.
        let image = format!("registry.example/a{}:1", "[".repeat(200));
        let pod = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: c\n    image: {image}\n    env:\n    - {{name: A, value: \"{q}\"}}\n    - {{name: B, value: '{q}'}}  # {q}\n",
            q = "[".repeat(300)
        );
        assert!(read(&pod, "t").is_ok(), "{:?}", read(&pod, "t").err());
        let options = crate::inject::InjectOptions {
            image: "registry.example.com/pullcheck:1".to_string(),
            ..crate::inject::InjectOptions::default()
        };
        let done = crate::inject::inject(&pod, "t", &options).expect("inject");
        let again = read(&done.output, "t").expect("inject's output reads again");
        assert_eq!(again.pod_specs.len(), 1);
        // Real nesting still meets the guard.
        let deep = format!("a: {}{}", "[".repeat(300), "]".repeat(300));
        assert!(read(&deep, "t").is_err());
    }

    #[test]
    fn hostile_input_is_bounded() {
        let mut laughs = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        for i in 0..30 {
            laughs.push_str(&format!(
                "l{i}: &l{i} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n",
                p = if i == 0 {
                    "a".to_string()
                } else {
                    format!("l{}", i - 1)
                }
            ));
        }
        laughs.push_str("kind: Thing\napiVersion: x/v1\nspec: *l29\n");
        assert!(read(&laughs, "t").expect("readable").pod_specs.is_empty());
        let deep = "[".repeat(100_000);
        assert!(error(&deep).contains("not valid"));
        let deep_yaml = format!("{}x: 1\n", "- ".repeat(5000));
        assert!(
            error(&deep_yaml).contains("nested more than"),
            "{}",
            error(&deep_yaml)
        );
        assert!(error("k: 1\nk: 2\n").contains("duplicate key"));
    }

    #[test]
    fn errors_name_the_document_never_its_content() {
        let e = error("a: 1\n---\nb: \"s3cr3t\n");
        assert!(
            e.starts_with("t: document 2: not valid YAML at line 3"),
            "{e}"
        );
        assert!(!e.contains("s3cr3t"), "{e}");
        let e = error("{\"a\": 1}\n{\"password\": s3cr3t}\n");
        assert!(
            e.starts_with("t: document 2: not valid JSON at line 2"),
            "{e}"
        );
        assert!(!e.contains("s3cr3t"), "{e}");
        let e = error(
            "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    image: \"{{ .Values.image }}\"\n",
        );
        assert!(e.contains("container a: the image is a template"), "{e}");
        // Go template syntax that still parses (as a mapping key) is a template too.
        let e =
            error("kind: ConfigMap\n---\nkind: Secret\ndata: {password: {{ .Values.password }}}\n");
        assert!(e.starts_with("t: document 2: this looks like an unrendered Helm template: render it first, e.g. helm template"), "{e}");
        assert!(!e.contains("Values"), "{e}");
    }
}
