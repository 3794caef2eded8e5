//! Where each kind keeps its pod specs: a table of (API group, kind) to the walk that finds
//! them ([`KINDS`]), and the walks, from a document's root (`document`) down to each pod spec,
//! which the [`Reader`] reads into the [`Found`]. A kind the table does not name is searched
//! for pod templates (`generic`), with a note. The walks only decide where to look: they read
//! through the reader and record through `Found`'s methods.

use super::ManifestError;
use super::found::{Found, SpotShape};
use super::frameworks::{argo, spark};
use super::reader::{Owner, PATCH_KEYS, Reader, clip, join};
use super::tree::{NodeId, Tree};

/// Where the pod specs of a kind are, from the object's root. Paths are dotted keys.
#[derive(Clone, Copy)]
enum Pods {
    /// A pod spec at this path.
    PodSpec(&'static str),
    /// A workload spec at this path: its `template.spec`.
    Template(&'static str),
    /// A `batch/v1` Job spec at this path (for `--job-failure-policy`).
    Job(&'static str),
    /// An Argo workflow spec at this path: its templates.
    Argo(&'static str),
    /// A Spark application spec at this path: its driver and executor.
    Spark(&'static str),
    /// A KubeRay cluster spec at this path (head and worker groups), and for a RayJob the
    /// submitter's pod template.
    Ray {
        cluster: &'static str,
        submitter: bool,
    },
    /// A JobSet spec at this path: each replicated Job's pod template.
    JobSet(&'static str),
    /// Kubeflow's `spec.*ReplicaSpecs`: each replica's pod template.
    Replicas,
    /// Volcano's `spec.tasks[]`: each task's pod template.
    Tasks,
    /// Not read, with why.
    Skip(&'static str),
}

/// Every kind whose pod specs have a known place, by API group and kind (no kinds: any kind
/// of the group). First match wins; the groups and kinds do not overlap.
const KINDS: &[(&str, &[&str], Pods)] = &[
    ("", &["Pod"], Pods::PodSpec("spec")),
    ("", &["PodTemplate"], Pods::PodSpec("template.spec")),
    ("", &["ReplicationController"], Pods::Template("spec")),
    (
        "apps",
        &["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"],
        Pods::Template("spec"),
    ),
    ("batch", &["Job"], Pods::Job("spec")),
    ("batch", &["CronJob"], Pods::Job("spec.jobTemplate.spec")),
    (
        "argoproj.io",
        &["Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate"],
        Pods::Argo("spec"),
    ),
    (
        "argoproj.io",
        &["CronWorkflow"],
        Pods::Argo("spec.workflowSpec"),
    ),
    (
        "sparkoperator.k8s.io",
        &["SparkApplication"],
        Pods::Spark("spec"),
    ),
    (
        "sparkoperator.k8s.io",
        &["ScheduledSparkApplication"],
        Pods::Spark("spec.template"),
    ),
    (
        "ray.io",
        &["RayCluster"],
        Pods::Ray {
            cluster: "spec",
            submitter: false,
        },
    ),
    (
        "ray.io",
        &["RayJob"],
        Pods::Ray {
            cluster: "spec.rayClusterSpec",
            submitter: true,
        },
    ),
    (
        "ray.io",
        &["RayService"],
        Pods::Ray {
            cluster: "spec.rayClusterConfig",
            submitter: false,
        },
    ),
    (
        "kubeflow.org",
        &[
            "PyTorchJob",
            "TFJob",
            "MPIJob",
            "XGBoostJob",
            "PaddleJob",
            "JAXJob",
        ],
        Pods::Replicas,
    ),
    (
        "trainer.kubeflow.org",
        &["TrainingRuntime", "ClusterTrainingRuntime"],
        Pods::JobSet("spec.template.spec"),
    ),
    (
        "trainer.kubeflow.org",
        &["TrainJob"],
        Pods::Skip(
            "a TrainJob's pods come from its runtime; inject into the TrainingRuntime or \
             ClusterTrainingRuntime instead",
        ),
    ),
    ("jobset.x-k8s.io", &["JobSet"], Pods::JobSet("spec")),
    ("batch.volcano.sh", &["Job"], Pods::Tasks),
    (
        "tekton.dev",
        &[],
        Pods::Skip(
            "Tekton has no init-container hook for its steps; Tekton already fails a TaskRun \
             whose step image cannot be pulled (ImagePullBackOff)",
        ),
    ),
    ("kyverno.io", &[], POLICY),
    ("templates.gatekeeper.sh", &[], POLICY),
    ("mutations.gatekeeper.sh", &[], POLICY),
    ("constraints.gatekeeper.sh", &[], POLICY),
    ("expansion.gatekeeper.sh", &[], POLICY),
    ("config.gatekeeper.sh", &[], POLICY),
    ("admissionregistration.k8s.io", &[], POLICY),
    (
        "serving.knative.dev",
        &["Service", "Configuration", "Revision"],
        Pods::Skip(
            "Knative Serving does not allow init containers unless its \
             `kubernetes.podspec-init-containers` feature flag is on",
        ),
    ),
];

const POLICY: Pods =
    Pods::Skip("a policy object; pod specs inside it are patterns or patches, not pods");

/// Where the pod specs of `kind` in `group` are, if the table knows.
fn pods_of(group: &str, kind: &str) -> Option<Pods> {
    KINDS
        .iter()
        .find(|(g, kinds, _)| *g == group && (kinds.is_empty() || kinds.contains(&kind)))
        .map(|(_, _, pods)| *pods)
}

/// The node at a dotted path of keys below `node` (`""`: `node` itself).
fn at_path(t: &Tree, node: NodeId, path: &str) -> Option<NodeId> {
    if path.is_empty() {
        return Some(node);
    }
    path.split('.').try_fold(node, |n, key| t.get(n, key))
}

/// The object's group: `apps` of `apps/v1`, `""` of `v1`.
fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

pub(super) fn document(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    index: usize,
    root: NodeId,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    let root = t.resolve(root);
    if t.is_seq(root) {
        // A bare JSON/YAML array of objects.
        for (i, &item) in t.items(root).iter().enumerate() {
            object(reader, found, index, t.resolve(item), &format!("[{i}]"))?;
        }
        return Ok(());
    }
    object(reader, found, index, root, "")
}

/// An unknown kind: every `template` whose `spec` has `containers`, not under a patch or
/// rule, nor inside another object's pod spec.
pub(super) fn generic(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    node: NodeId,
    path: &str,
    depth: usize,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    if depth > super::tree::MAX_DEPTH || !found.step() {
        return Ok(());
    }
    let node = t.resolve(node);
    if t.is_seq(node) {
        for (i, &item) in t.items(node).iter().enumerate() {
            generic(
                reader,
                found,
                owner,
                item,
                &format!("{path}[{i}]"),
                depth + 1,
            )?;
        }
        return Ok(());
    }
    // A whole object nested in another (CodeFlare's AppWrapper): read it as its own kind.
    if depth > 0 && t.str_at(node, "kind").is_some() && t.str_at(node, "apiVersion").is_some() {
        return object(reader, found, owner.document - 1, node, path);
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
            let shape = SpotShape {
                operator_policy: operator_policy.clone(),
                ..SpotShape::pod(s)
            };
            reader.pod_spec(found, owner, &join(&p, "spec"), shape)?;
            continue;
        }
        generic(reader, found, owner, v, &p, depth + 1)?;
    }
    Ok(())
}

/// One object: a bare pod spec, a `List`, or a kind, walked as [`KINDS`] says.
pub(super) fn object(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    doc: usize,
    node: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    if !t.is_map(node) {
        return Ok(());
    }
    let owner = owner(reader, doc, node);
    let kind = t.str_at(node, "kind").unwrap_or("");
    if kind.is_empty() {
        if t.get(node, "containers").is_some_and(|c| t.is_seq(c)) {
            return reader.pod_spec(found, &owner, &join(path, ""), SpotShape::pod(node));
        }
        return Ok(());
    }
    if kind.len() > 4 && kind.ends_with("List") || kind == "List" {
        if let Some(items) = t.get(node, "items") {
            for (i, &item) in t.items(items).iter().enumerate() {
                object(
                    reader,
                    found,
                    doc,
                    t.resolve(item),
                    &join(path, &format!("items[{i}]")),
                )?;
            }
        }
        return Ok(());
    }
    let api_version = t.str_at(node, "apiVersion").unwrap_or("");
    match pods_of(group_of(api_version), kind) {
        Some(pods) => walk(reader, found, &owner, node, path, pods, api_version),
        None => unknown_kind(reader, found, &owner, node, path),
    }
}

/// Who the object is, for origins and notes.
fn owner(reader: &Reader<'_>, doc: usize, node: NodeId) -> Owner {
    let t = reader.tree();
    let metadata = t.get(node, "metadata");
    let name = match (
        metadata.and_then(|m| t.str_at(m, "name")),
        metadata.and_then(|m| t.str_at(m, "generateName")),
    ) {
        (Some(n), _) if !n.is_empty() => clip(n),
        (_, Some(g)) if !g.is_empty() => format!("{}*", clip(g)),
        _ => "(unnamed)".to_string(),
    };
    Owner {
        document: doc + 1,
        kind: clip(t.str_at(node, "kind").unwrap_or("")),
        api_version: clip(t.str_at(node, "apiVersion").unwrap_or("")),
        name,
    }
}

/// `document 2: Job/train (batch/v1)`, for notes.
fn describe(owner: &Owner) -> String {
    format!(
        "document {}: {}/{} ({})",
        owner.document, owner.kind, owner.name, owner.api_version
    )
}

/// Reads the pod specs of a known kind where `pods` says they are.
fn walk(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    node: NodeId,
    path: &str,
    pods: Pods,
    api_version: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    let at = |p: &str| join(path, p);
    let find = |p: &str| at_path(t, node, p);
    match pods {
        Pods::PodSpec(p) => match find(p) {
            Some(s) => reader.pod_spec(found, owner, &at(p), SpotShape::pod(s)),
            None => Ok(()),
        },
        Pods::Template(p) => match find(p) {
            Some(s) => template(reader, found, owner, s, &at(p), None, None),
            None => Ok(()),
        },
        Pods::Job(p) => match find(p) {
            Some(s) => job(reader, found, owner, s, &at(p)),
            None => Ok(()),
        },
        Pods::Argo(p) => match find(p) {
            Some(wf) => argo(reader, found, owner, wf, &at(p)),
            None => Ok(()),
        },
        Pods::Spark(p) => match find(p) {
            Some(app) => spark(reader, found, owner, app, &at(p)),
            None => Ok(()),
        },
        Pods::JobSet(p) => match find(p) {
            Some(s) => jobset(reader, found, owner, s, &at(p)),
            None => Ok(()),
        },
        Pods::Ray { cluster, submitter } => {
            ray(reader, found, owner, node, path, cluster, submitter)
        }
        Pods::Replicas => match find("spec") {
            Some(spec) => replicas(reader, found, owner, spec, path, api_version),
            None => Ok(()),
        },
        Pods::Tasks => {
            if let Some(tasks) = find("spec.tasks") {
                for (i, &task) in t.items(tasks).iter().enumerate() {
                    let p = at(&format!("spec.tasks[{i}]"));
                    template(reader, found, owner, t.resolve(task), &p, None, None)?;
                }
            }
            Ok(())
        }
        Pods::Skip(why) => {
            found.note(format!("{}: skipped: {why}", describe(owner)));
            Ok(())
        }
    }
}

/// A kind the table does not name: its pod templates, wherever they are, with a note
/// that says where they were read.
fn unknown_kind(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    node: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let before = found.pod_specs().len();
    generic(reader, found, owner, node, path, 0)?;
    if found.pod_specs().len() > before {
        let paths: Vec<String> = found.pod_specs()[before..]
            .iter()
            .map(|s| s.origin.path.clone())
            .collect();
        found.note(format!(
            "{}: not a kind pullcheck knows; read the pod template(s) at {}",
            describe(owner),
            paths.join(", ")
        ));
    }
    Ok(())
}

/// A KubeRay cluster spec: the head group, each worker group, and a RayJob's submitter
/// (which the operator runs with `restartPolicy: Never`).
fn ray(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    node: NodeId,
    path: &str,
    cluster_path: &'static str,
    submitter: bool,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    let at = |p: &str| join(path, p);
    let Some(spec) = t.get(node, "spec") else {
        return Ok(());
    };
    if let Some(c) = at_path(t, node, cluster_path) {
        if let Some(head) = t.get(c, "headGroupSpec") {
            let p = at(&format!("{cluster_path}.headGroupSpec"));
            template(reader, found, owner, head, &p, None, None)?;
        }
        if let Some(groups) = t.get(c, "workerGroupSpecs") {
            for (i, &g) in t.items(groups).iter().enumerate() {
                let p = at(&format!("{cluster_path}.workerGroupSpecs[{i}]"));
                template(reader, found, owner, t.resolve(g), &p, None, None)?;
            }
        }
    }
    if submitter
        && let Some(sub) = t.get(spec, "submitterPodTemplate")
        && let Some(s) = t.get(sub, "spec")
    {
        let p = at("spec.submitterPodTemplate.spec");
        let shape = SpotShape {
            default_policy: Some("Never"),
            ..SpotShape::pod(s)
        };
        reader.pod_spec(found, owner, &p, shape)?;
    }
    Ok(())
}

/// Kubeflow's training jobs: each `*ReplicaSpecs` replica's pod template, with the
/// replica's restartPolicy (which the operator sets on the pods).
fn replicas(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    spec: NodeId,
    path: &str,
    api_version: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree();
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
            let p = join(path, &format!("spec.{key}.{replica}"));
            template(reader, found, owner, rv, &p, policy, default)?;
        }
    }
    Ok(())
}

/// A Job spec: its pod template, with the Job for `--job-failure-policy`.
pub(super) fn job(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    spec: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    if let Some(s) = t.get(spec, "template").and_then(|tp| t.get(tp, "spec")) {
        let shape = SpotShape {
            job: Some(spec),
            ..SpotShape::pod(s)
        };
        reader.pod_spec(found, owner, &join(path, "template.spec"), shape)?;
    }
    Ok(())
}

/// The pod spec at `node.template.spec` (a workload, a replica, a task, a Ray group).
pub(super) fn template(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    node: NodeId,
    path: &str,
    operator_policy: Option<String>,
    default: Option<&'static str>,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    if let Some(s) = t.get(node, "template").and_then(|tp| t.get(tp, "spec")) {
        let shape = SpotShape {
            operator_policy,
            default_policy: default,
            ..SpotShape::pod(s)
        };
        reader.pod_spec(found, owner, &join(path, "template.spec"), shape)?;
    }
    Ok(())
}

/// A JobSet spec (also a Trainer runtime's template): each replicated Job's pod template.
pub(super) fn jobset(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    spec: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree();
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
                reader.pod_spec(found, owner, &p, SpotShape::pod(s))?;
            }
        }
    }
    Ok(())
}
