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

mod found;
mod frameworks;
mod kinds;
mod kubectl;
pub(crate) mod names;
mod parse;
mod reader;
pub(crate) mod splice;
pub(crate) mod tree;

use found::Found;
pub(crate) use found::Spot;
use parse::{
    document_of_line, json_failure, nesting_error, parse, parse_json_each, syntax_or_template,
    template_line,
};
use reader::Reader;

use crate::container_start::{ContainerFacts, ContainerKind, SecurityFacts};
use std::fmt;
use tree::{NodeId, Stopped, Tree};

/// The name of pullcheck's own init container (left out of what the reader returns).
pub(crate) const PULLCHECK: &str = "pullcheck";

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
pub(crate) enum ContainerList {
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
    pub(crate) fn as_str(self) -> &'static str {
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
    pub(crate) name: String,
    /// The list it is in.
    pub(crate) list: ContainerList,
    /// The image as written (Spark: `driver.image`, else `spec.image`). Never empty.
    pub(crate) image: String,
    /// `imagePullPolicy` as written (`pullPolicy` of an image volume); `None` when unset.
    pub(crate) image_pull_policy: Option<String>,
    /// Whether `command` is set (not null, not an empty list); always `false` for an image
    /// volume.
    pub(crate) command_set: bool,
    /// Whether `args` is set (not null, not an empty list); always `false` for an image volume.
    pub(crate) args_set: bool,
    /// The effective `runAsNonRoot`: the container's `securityContext`, else the pod's;
    /// `None` when neither sets it (or for an image volume).
    pub(crate) run_as_non_root: Option<bool>,
    /// The effective `runAsUser`, as `run_as_non_root`.
    pub(crate) run_as_user: Option<i64>,
}

impl PodContainer {
    /// The facts the start check needs ([`crate::container_start`]); `None` for an image volume (it
    /// runs no process) and for an image with whitespace (not a reference). The security
    /// values here are the effective ones already, so the pod's context is empty.
    pub(crate) fn start_facts(&self) -> Option<ContainerFacts> {
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
    pub(crate) parameter_images: usize,
    /// A Windows pod (`spec.os.name: windows`, or a `kubernetes.io/os: windows` node
    /// selector): decided here once for both subcommands. pullcheck's image runs on Linux, so
    /// `inject` leaves it unchanged, and `check --pod-spec` does not check its images either
    /// (it checks for a Linux node); the reader's note says so.
    pub(crate) windows: bool,
}

impl PodSpec {
    /// The containers whose images `check --pod-spec` checks and `inject` passes to the
    /// check: none for a Windows pod, else every container and image volume read.
    pub(crate) fn checked(&self) -> &[PodContainer] {
        if self.windows { &[] } else { &self.containers }
    }
}

/// Everything the reader found.
#[derive(Debug, Default)]
pub struct Manifests {
    /// The input's format.
    pub(crate) format: Format,
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
    pub(crate) origin: String,
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
    read_tree(text, source, tree, format, notes)
}

/// The pod specs of every document of `tree`, read from `text` (empty: an object that was
/// never text), after the `notes` already said of the input.
fn read_tree(
    text: &str,
    source: &str,
    tree: Tree,
    format: Format,
    notes: Vec<String>,
) -> Result<Manifests, ManifestError> {
    let budget = tree.nodes.len().saturating_mul(4).saturating_add(1024);
    let mut found = Found::new(source, notes, budget);
    let reader = Reader::new(text, source, &tree);
    for (index, doc) in tree.docs.iter().enumerate() {
        kinds::document(&reader, &mut found, index, doc.root)?;
    }
    Ok(found.manifests(format, tree))
}

/// Reads the pod specs of one object that was never text (an admission's, as the API server
/// sent it) as [`read`] reads the same object written as JSON: the tree is built from the value
/// ([`Tree::from_json`]), and there is nothing of kubectl's reading to note.
///
/// # Errors
///
/// [`ManifestError`] when a pod spec cannot be read, or the object nests too deep.
#[cfg(feature = "webhook")]
pub(crate) fn read_object(
    object: &serde_json::Value,
    source: &str,
) -> Result<Manifests, ManifestError> {
    let tree = Tree::from_json(object).ok_or_else(|| ManifestError::Syntax {
        input: source.to_string(),
        format: "JSON",
        document: 1,
        line: 1,
        column: 1,
        message: format!("nested more than {} levels deep", tree::MAX_DEPTH),
    })?;
    read_tree("", source, tree, Format::Json, Vec::new())
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
        let mut found = Found::new(self.source, Vec::new(), budget);
        let reader = Reader::new(self.text, self.source, tree);
        let result = kinds::document(&reader, &mut found, index, root);
        if found.budget() == 0 {
            return tree::Next::Stop;
        }
        self.used += budget - found.budget();
        if let Err(e) = result {
            self.error = Some(e);
            return tree::Next::Go;
        }
        each.document(tree, found.manifests(self.format, Tree::default()));
        tree::Next::Go
    }

    fn finish(self) -> Result<Option<Format>, ManifestError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(Some(self.format)),
        }
    }
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

#[cfg(test)]
/// Every container and image volume of every pod spec, with where it is: the reader's output
/// flattened, for checks that look at containers one by one.
///
/// # Errors
///
/// As [`read`].
pub(crate) fn pod_containers(
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

// ---------------------------------------------------------------------------------------------
// Finding pod specs

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
