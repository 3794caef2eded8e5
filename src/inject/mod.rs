//! `pullcheck inject`: manifests in, the same manifests out with the pullcheck init container
//! added to every pod spec that [`crate::manifests`] finds (the same reader `check --pod-spec`
//! uses, so the two never disagree).
//!
//! # What is injected
//!
//! An init container named `pullcheck`, first among `initContainers` (one already named so is
//! replaced, unless it already is what would be written): `args: [check, CHECK_ARGS…]`,
//! `PULLCHECK_IMAGES` = the other images of the pod spec (init containers, then containers,
//! then image volumes, in order, without duplicates, leaving out `imagePullPolicy: Never`; an
//! image with whitespace or a comma in it, such as JobSet's `<CHANGE ME>` placeholder, is
//! passed as one argument instead, so that it stays one (invalid) image, after a `--` when it
//! starts with `-`, so that it is never read as an option), each pull secret (the pod's
//! `imagePullSecrets`, then `--secret`) mounted read-only at
//! `/var/run/pullcheck/secrets/<name>` from a secret volume marked `optional: true`, each
//! `--ca-file PATH` of the check arguments mounted from the ConfigMap `--ca-configmap` names, a
//! restricted security context, small resources and
//! `terminationMessagePolicy: FallbackToLogsOnError`. See [`init_container`]. Its resources
//! never raise the pod's requests or limits and pass the namespace's LimitRanges (the rule:
//! [`resources`]); a pod that leaves it too little memory is left unchanged, with a warning.
//!
//! `PULLCHECK_CONTAINERS` holds the start check's facts of each init, sidecar and app container
//! that is not `Never` ([`PodContainer::start_facts`](crate::manifests::PodContainer::start_facts),
//! the same facts `check --pod-spec` reads), left out with a warning above
//! [`container_start::MAX_CONTAINERS_JSON`](crate::container_start::MAX_CONTAINERS_JSON). For a pod with an
//! `IfNotPresent` image (unless `--no-node-images`), the images are split by pull policy
//! ([`pull_policy::to_check`](crate::pull_policy::to_check)) into `PULLCHECK_IMAGES` and `PULLCHECK_IMAGES_IF_NOT_PRESENT`,
//! `PULLCHECK_NODE_NAME` comes from `spec.nodeName`, and a pod with
//! `automountServiceAccountToken: false` gets a projected token volume mounted by the init
//! container alone. Every init container gets what decides what counts ([`crate::proof`]):
//! `PULLCHECK_ON_UNREACHABLE=warn` (the kubelet's back-off waits an outage out) and
//! `PULLCHECK_NETWORK` (`host` for a `hostNetwork` pod, else `pod`: the node's loopback is not
//! the pod's); the arguments after `--` still win, as flags win over variables. The route choices ([`RouteMounts`]) add their volumes, read-only mounts and
//! check arguments ([`crate::route::inject::additions`]).
//!
//! With `--job-failure-policy`, each `batch/v1` Job (and CronJob job template) also gets the
//! `podFailurePolicy` rules the README recommends (`FailJob` on the proven codes; on 6 and 8
//! only when the check arguments make them count), unless it already has rules for container
//! `pullcheck`, and `restartPolicy: Never` when its pod template sets none.
//!
//! # What is kept
//!
//! The output is the input text with insertions at the places that change (see
//! [`crate::manifests::splice`]): every other byte is kept, comments, anchors, quoting, octal
//! modes and the final newline included; a document that does not change is not touched.
//! Injecting into its own output changes nothing. The volumes it added are recognised (named
//! `pullcheck-secret-…` with a secret, `pullcheck-ca`, `pullcheck-hosts` or
//! `pullcheck-registries` with a ConfigMap, `pullcheck-node-hosts` or
//! `pullcheck-node-registries` with a hostPath,
//! `pullcheck-serviceaccount` or `pullcheck-provider-tokens` projected; mounted by no other
//! container) and replaced, never duplicated. A pod whose own volume has the name of one that
//! would be added is left unchanged, with a warning.
//!
//! # What it costs
//!
//! Linear in the input: each pod spec is edited once, and the spots that share a volume holder
//! are indexed once. Documents are read and edited one at a time
//! (`manifests::read_each`): the input, one document's tree and the output are held, never
//! the whole input's tree nor all its edits (those made it about 40 times the input). The peak
//! is about the input plus the output plus the binary's own 16 MiB; at most 8 times the input
//! plus 16 MiB for Pods of 140 bytes (14 MB of 100,000 Pods: 3.7 s and 96 MiB; it was 558 MiB;
//! the input is at most 16 MiB). One large document (a `List`) still holds its own tree, and
//! documents that share anchors are read whole.
//!
//! With `--credential-provider-config`, the projected token volume for the credential-provider
//! plugins with `tokenAttributes`
//! ([`inject_additions`](crate::credentials::plugin::inject_additions)) is added, mounted by
//! the init container alone, with the variable that says where it is.

mod container;
mod job;
#[cfg(feature = "webhook")]
mod object;
mod options;
mod pod;
mod resources;
mod rule;
mod wants;

pub use container::{env_value, init_container, volume_name};
#[cfg(feature = "webhook")]
pub(crate) use job::Kept;
#[cfg(feature = "webhook")]
pub(crate) use object::{RuleWritten, inject_object, push_token, rule_object};
use options::InvalidOptions;
pub(crate) use options::{ValidOptions, validate};
use pod::Run;
pub(crate) use resources::LimitRangesError;
pub use resources::{LimitRangeItem, LimitRanges, Requirements};
use wants::Wants;

use crate::cli::DEFAULT_INJECT_IMAGE;
use crate::credentials::plugin::InjectAdditions;
use crate::manifests::splice::{Edit, Output, Splicer, Writer, apply};
use crate::manifests::tree::Tree;
use crate::manifests::{self, Manifests};
use crate::route::inject::RouteMounts;
use std::collections::{HashMap, HashSet};

pub use crate::manifests::Format;

/// The name of the injected init container.
pub(crate) const CONTAINER_NAME: &str = manifests::PULLCHECK;
/// Where the pull secrets are mounted, one folder per secret (`pullcheck check --secrets-dir`).
pub(crate) const SECRETS_DIR: &str = "/var/run/pullcheck/secrets";
/// The start of the names of the secret volumes that `inject` adds.
pub(crate) const VOLUME_PREFIX: &str = "pullcheck-secret-";
/// The name of the ConfigMap volume that holds the `--ca-file` files.
pub(crate) const CA_VOLUME: &str = "pullcheck-ca";
/// The projected volume that gives the init container a service-account token where the pod
/// turns the automatic one off (`inject --node-images`).
pub(crate) const SERVICE_ACCOUNT_VOLUME: &str = "pullcheck-serviceaccount";
/// Where that token (`token`) and the cluster's CA (`ca.crt`) are mounted.
pub(crate) const SERVICE_ACCOUNT_MOUNT: &str = "/var/run/pullcheck/serviceaccount";
/// The names of the volumes the route choices add, with the kind of volume each is.
const ROUTE_VOLUMES: [(&str, &str); 4] = [
    ("pullcheck-hosts", "configMap"),
    ("pullcheck-registries", "configMap"),
    ("pullcheck-node-hosts", "hostPath"),
    ("pullcheck-node-registries", "hostPath"),
];
/// The user the init container runs as (distroless `nonroot`).
pub(crate) const RUN_AS_USER: u64 = 65532;

/// Exit codes of `pullcheck check` after which a Job must fail at once (not found or invalid,
/// no variant for the platform, access refused, will not start).
pub(crate) const FAIL_JOB_EXIT_CODES: [i64; 4] = [3, 4, 5, 7];
/// Exit codes of a registry that could not be reached (it may pass), written only with `--
/// --on-unreachable fail` (by default the init container warns and exits 0): the Job retries
/// the pod, counted against `backoffLimit` by default, not counted (`Ignore`) only when the
/// Job's `activeDeadlineSeconds` bounds the retries, or with
/// `--ignore-unreachable-without-deadline`.
pub(crate) const IGNORE_EXIT_CODES: [i64; 1] = [6];
/// Exit codes of a registry this pod cannot check (plain HTTP asked over TLS, an untrusted
/// certificate, a name its resolver does not know), written only with `-- --on-unverifiable
/// fail` (by default a warning): permanent for the pod, so never ignored, but maybe not for
/// the node, so not `FailJob` at once either: counted against `backoffLimit`.
pub(crate) const COUNT_EXIT_CODES: [i64; 1] = [8];

/// Settings of one `inject` run.
#[derive(Debug, Clone, Default)]
pub struct InjectOptions {
    /// The pullcheck image for the init container.
    pub image: String,
    /// Extra pull secrets to mount (`--secret`), besides each pod's `imagePullSecrets`.
    pub secrets: Vec<String>,
    /// Arguments after `check` in the init container.
    pub check_args: Vec<String>,
    /// The ConfigMap the `--ca-file` paths of `check_args` are mounted from.
    pub ca_configmap: Option<String>,
    /// Add the recommended `podFailurePolicy` to each `batch/v1` Job.
    pub job_failure_policy: bool,
    /// Write `Ignore` on exit 6 even for a Job without `activeDeadlineSeconds` (unbounded:
    /// only when the user says so).
    pub ignore_unreachable_without_deadline: bool,
    /// Look the node up (inject's default, off with `--no-node-images`): for a pod with an
    /// `IfNotPresent` image, split the images by pull policy, pass the node's name, and give
    /// the init container a token where the pod has none. `Default` leaves it off, as a
    /// library caller's choice; the CLI and the webhook turn it on.
    pub node_images: bool,
    /// `--credential-provider-config`: the projected token volume, its mount and variable for
    /// the credential-provider plugins with `tokenAttributes`.
    pub provider_tokens: Option<InjectAdditions>,
    /// The node's registry configuration to mount (`--hosts-configmap`,
    /// `--registries-configmap`, `--hosts-from-node`, `--registries-from-node`).
    pub route: RouteMounts,
    /// The namespace's LimitRanges (`--limit-range-file`; the webhook reads them), which the
    /// init container's resources must pass ([`resources`]).
    pub limit_ranges: LimitRanges,
}

/// The rewritten manifests and what the user should know about them.
#[derive(Debug, Clone, Default)]
pub struct Injected {
    /// The output document(s), in the input's format.
    pub output: String,
    /// Notes for stderr (e.g. a pod template whose `restartPolicy` is not `Never`).
    pub(crate) warnings: Vec<String>,
    /// What was written and why, for stderr (e.g. which `podFailurePolicy` rule on exit 6).
    pub(crate) notes: Vec<String>,
    /// How many pod specs have the init container (added now, or already as it would be).
    pub pod_specs: usize,
    /// The format that was read and written.
    pub format: Format,
}

/// Input or arguments that cannot be used: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InjectError(pub String);

/// Every problem of the options, one a line.
impl From<InvalidOptions> for InjectError {
    fn from(invalid: InvalidOptions) -> InjectError {
        InjectError(invalid.to_string())
    }
}

/// Rewrites `input` (YAML or JSON, one or more documents); `source` names it in messages.
///
/// # Errors
///
/// [`InjectError`] for bad options, check arguments that `pullcheck check` would refuse, and
/// input that cannot be read (naming the document and line, never its content).
pub fn inject(input: &str, source: &str, options: &InjectOptions) -> Result<Injected, InjectError> {
    let valid = validate(options.clone())?;
    inject_valid(input, source, &valid)
}

/// [`inject`] with options already checked: the text writer ([`Splicer`]) over each document.
pub(crate) fn inject_valid(
    input: &str,
    source: &str,
    valid: &ValidOptions,
) -> Result<Injected, InjectError> {
    let mut each = EachDocument {
        input,
        source,
        valid,
        crlf: input.contains("\r\n"),
        format: Format::Yaml,
        notes: Vec::new(),
        warnings: Vec::new(),
        written: Vec::new(),
        output: Output::default(),
        pending: Vec::new(),
        spots: 0,
        tally: Tally::default(),
    };
    let read =
        manifests::read_each(input, source, &mut each).map_err(|e| InjectError(e.to_string()))?;
    let done = match read {
        Some(format) => {
            // As `manifests::read` says them, first: what kubectl would read otherwise.
            let mut warnings = if format == Format::Yaml {
                manifests::kubectl_notes_of(input, source)
            } else {
                Vec::new()
            };
            warnings.append(&mut each.notes);
            warnings.append(&mut each.warnings);
            Done {
                warnings,
                notes: std::mem::take(&mut each.written),
                spots: each.spots,
                tally: each.tally,
                format,
                output: each.output(),
            }
        }
        // Inputs whose documents cannot be read one at a time (anchors shared across them).
        None => {
            drop(each);
            whole(input, source, valid)?
        }
    };
    let mut warnings = done.warnings;
    closing_warnings(source, done.spots, valid, &mut warnings);
    // `pullcheck inject`'s own: the webhook's pods are not the user's to change this way.
    warnings.extend(node_grant_warning(done.tally.node_lookups));
    Ok(Injected {
        output: done.output,
        warnings,
        notes: done.notes,
        pod_specs: done.tally.pod_specs,
        format: done.format,
    })
}

/// The one warning of a run that wrote `pods` pod specs whose init container looks the node up
/// for an `IfNotPresent` image: a registry miss of such an image counts only when the node's
/// image list proves the node lacks it, and the list is read only with `get` on nodes, which
/// inject cannot see from a manifest. `None` when there are none.
fn node_grant_warning(pods: usize) -> Option<String> {
    let have = match pods {
        0 => return None,
        1 => "1 pod spec has".to_string(),
        n => format!("{n} pod specs have"),
    };
    Some(format!(
        "{have} IfNotPresent images (set, or defaulted for a tag other than latest): a registry \
         miss of such an image is only a warning unless the pod's service account may get nodes \
         (examples/node-images-rbac.yaml), which lets the init container prove the node lacks it"
    ))
}

/// The warnings of a whole run, after those of its pod specs: nothing found, the default
/// image, and the route choices' (said once, where a pod spec was found).
pub(super) fn closing_warnings(
    source: &str,
    spots: usize,
    valid: &ValidOptions,
    warnings: &mut Vec<String>,
) {
    if spots == 0 {
        warnings.push(format!(
            "{source}: no pod spec found; the output is the input unchanged"
        ));
        return;
    }
    if valid.options.image == DEFAULT_INJECT_IMAGE {
        warnings.push(format!(
            "the init container runs the default image {DEFAULT_INJECT_IMAGE}, which no \
             registry serves: push pullcheck's image to a registry every node can pull from \
             and pass --image REF (a pod whose own pullcheck image cannot be pulled is stuck \
             like any other)"
        ));
    }
    warnings.extend(valid.route.warnings.iter().cloned());
}

/// What reading and editing all documents gave, before the closing warnings.
struct Done {
    /// The reader's notes, then the edits' warnings.
    warnings: Vec<String>,
    /// What was written and why (`pullcheck: note:` lines).
    notes: Vec<String>,
    /// Pod specs found.
    spots: usize,
    /// Pod specs edited, and what they need.
    tally: Tally,
    format: Format,
    output: String,
}

/// Edits each document as it is read ([`manifests::read_each`]) and writes its part of the
/// output: the input, one document's tree and the output live at once, never the whole
/// input's tree nor all the edits.
struct EachDocument<'a> {
    input: &'a str,
    source: &'a str,
    valid: &'a ValidOptions,
    crlf: bool,
    format: Format,
    notes: Vec<String>,
    warnings: Vec<String>,
    /// What was written and why (a Job's failure policy), for `pullcheck: note:` lines.
    written: Vec<String>,
    output: Output,
    /// The last document's edits, made at the next document (or at the end): its tree is
    /// dropped by then, so that a single large document (a `List`) never holds its tree,
    /// its edits and the output at once.
    pending: Vec<Edit>,
    spots: usize,
    tally: Tally,
}

/// What the pod specs written add up to, across the documents of a run.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    /// Pod specs with the init container (added now, or already as it would be).
    pub(super) pod_specs: usize,
    /// Of those, the ones whose init container looks the node up for an `IfNotPresent` image.
    pub(super) node_lookups: usize,
}

impl Tally {
    /// Adds what another document's pod specs add up to.
    pub(super) fn add(&mut self, other: Tally) {
        self.pod_specs += other.pod_specs;
        self.node_lookups += other.node_lookups;
    }
}

impl EachDocument<'_> {
    fn output(mut self) -> String {
        self.output
            .apply(self.input, &std::mem::take(&mut self.pending));
        self.output.finish(self.input)
    }
}

impl manifests::EachDocument for EachDocument<'_> {
    fn start(&mut self, format: Format) {
        self.format = format;
        self.notes.clear();
        self.warnings.clear();
        self.written.clear();
        self.output = Output::new(self.input.len());
        self.pending = Vec::new();
        self.spots = 0;
        self.tally = Tally::default();
    }

    fn document(&mut self, tree: &Tree, found: Manifests) {
        self.output
            .apply(self.input, &std::mem::take(&mut self.pending));
        let splicer = Splicer::new(self.input, tree, found.format == Format::Json);
        let context = Context {
            source: self.source,
            valid: self.valid,
            owner: None,
        };
        let planned = plan(&splicer, &context, tree, &found);
        self.warnings.extend(planned.warnings);
        self.written.extend(planned.notes);
        self.tally.add(planned.tally);
        self.spots += found.spots.len();
        self.notes.extend(found.notes);
        self.pending = crlf(planned.edits, self.crlf);
    }
}

/// Who the inject core edits for, the same for each document of a run: `source` names the
/// input in messages; `owner`: the kind of a Pod's controller, at admission (it decides what
/// the restart-policy warning can advise, where a manifest says it by its own kind).
pub(super) struct Context<'a> {
    pub(super) source: &'a str,
    pub(super) valid: &'a ValidOptions,
    pub(super) owner: Option<&'a str>,
}

/// What the inject core planned for one document.
pub(super) struct Planned<E> {
    /// The edits, as the writer wrote them.
    pub(super) edits: Vec<E>,
    /// The warnings of its pod specs.
    pub(super) warnings: Vec<String>,
    /// What was written and why (a Job's failure policy).
    pub(super) notes: Vec<String>,
    /// The pod specs edited, and what they need.
    pub(super) tally: Tally,
}

/// The inject core: the edits of the pod specs `found` in `tree`, as `writer` writes them,
/// with their warnings, notes and tally.
pub(super) fn plan<W: Writer>(
    writer: &W,
    context: &Context<'_>,
    tree: &Tree,
    found: &Manifests,
) -> Planned<W::Edit> {
    let valid = context.valid;
    let mut run = Run {
        wants: Wants {
            options: &valid.options,
            tree,
            manifests: found,
            ca_files: &valid.ca_files,
            route: &valid.route,
        },
        owner: context.owner,
        source: context.source,
        writer,
        warnings: Vec::new(),
        notes: Vec::new(),
        edits: Vec::new(),
        volumes_done: HashMap::new(),
        spots_by_volumes: HashMap::new(),
        jobs_done: HashSet::new(),
        tally: Tally::default(),
    };
    for (i, spot) in found.spots.iter().enumerate() {
        run.spots_by_volumes
            .entry(spot.volumes)
            .or_default()
            .push(i);
    }
    for spot in &found.spots {
        run.spot(spot);
    }
    Planned {
        edits: run.edits,
        warnings: run.warnings,
        notes: run.notes,
        tally: run.tally,
    }
}

/// What is inserted has the input's line ends (scalars pullcheck writes never hold a raw line
/// break: they are double-quoted with escapes).
fn crlf(mut edits: Vec<Edit>, crlf: bool) -> Vec<Edit> {
    if crlf {
        for edit in &mut edits {
            edit.insert = edit.insert.replace('\n', "\r\n");
        }
    }
    edits
}

/// The input read whole, then edited: for inputs [`manifests::read_each`] cannot read one
/// document at a time.
fn whole(input: &str, source: &str, valid: &ValidOptions) -> Result<Done, InjectError> {
    let found = manifests::read(input, source).map_err(|e| InjectError(e.to_string()))?;
    let mut warnings = found.notes.clone();
    let splicer = Splicer::new(input, &found.tree, found.format == Format::Json);
    let context = Context {
        source,
        valid,
        owner: None,
    };
    let planned = plan(&splicer, &context, &found.tree, &found);
    warnings.extend(planned.warnings);
    let (notes, tally) = (planned.notes, planned.tally);
    let edits = crlf(planned.edits, input.contains("\r\n"));
    let spots = found.spots.len();
    let format = found.format;
    // The tree and the pod specs are dropped before the output is built: the peak is then the
    // larger of the two, not their sum.
    drop(found);
    Ok(Done {
        warnings,
        notes,
        spots,
        tally,
        format,
        output: apply(input, &edits),
    })
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

    #[test]
    fn a_ray_pod_that_a_failed_check_would_have_made_again_for_ever_is_left_unchanged() {
        // The head restarts Never: KubeRay would make it again at once, without end. The
        // worker restarts Always (unset): the check restarts in place. A RayJob's submitter is
        // a Job's pod: it fails once.
        let input = "apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj}
spec:
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers: [{name: submit, image: r.example/submit:1}]
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: ray-head, image: r.example/ray:1}]
    workerGroupSpecs:
    - groupName: w
      template:
        spec:
          containers: [{name: ray-worker, image: r.example/ray:1}]
";
        let out = run(input);
        assert_eq!(out.pod_specs, 2, "{}", out.output);
        let head: Vec<&String> = out
            .warnings
            .iter()
            .filter(|w| w.contains("restartPolicy Never under a RayJob"))
            .collect();
        assert_eq!(head.len(), 1, "{:?}", out.warnings);
        assert!(
            head[0].contains("spec.rayClusterSpec.headGroupSpec.template.spec")
                && head[0].contains("left unchanged"),
            "{head:?}"
        );
        let doc = parse(&out.output);
        let head_spec = &doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"];
        assert!(head_spec.get("initContainers").is_none(), "{}", out.output);
        let submitter = &doc["spec"]["submitterPodTemplate"]["spec"];
        assert!(submitter.get("initContainers").is_some(), "{}", out.output);
    }

    fn parse(text: &str) -> serde_yaml_ng::Value {
        serde_yaml_ng::from_str(text).unwrap()
    }

    fn map<const N: usize>(entries: [(&str, &str); N]) -> serde_yaml_ng::Value {
        let mut m = serde_yaml_ng::Mapping::new();
        for (k, v) in entries {
            m.insert(k.into(), v.into());
        }
        serde_yaml_ng::Value::Mapping(m)
    }

    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  restartPolicy: Never\n  \
                       containers:\n  - name: a\n    image: nginx\n";

    #[test]
    fn parse_errors_name_the_document_and_line_never_the_content() {
        let input = "a: 1\n---\nb: 2\n---\n# three\nc:\n  password: \"s3cr3t\n";
        let e = inject(input, "in.yaml", &opts("x")).unwrap_err().0;
        assert!(
            e.starts_with("in.yaml: document 3: not valid YAML at line 7, column "),
            "{e}"
        );
        assert!(!e.contains("s3cr3t") && !e.contains("password"), "{e}");
        let e = inject("k: 1\nk: 2\n", "in.yaml", &opts("x")).unwrap_err().0;
        assert!(
            e.contains("document 1") && e.contains("duplicate key"),
            "{e}"
        );
        let e = inject("{\"a\": 1}\n[1, 2,]\n", "in.json", &opts("x"))
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("in.json: document 2: not valid JSON at line 2, column "),
            "{e}"
        );
        // Looks like JSON, is not JSON: an error, not a silent read as YAML.
        assert!(inject("{\"a\": 1,\n \"b\": }", "in", &opts("x")).is_err());
    }

    #[test]
    fn null_lists_anchors_and_merge_keys() {
        let opts = InjectOptions {
            image: "p/p:1".into(),
            secrets: vec!["s".into()],
            ..InjectOptions::default()
        };
        // `initContainers:` and `volumes: ~` are null: they become lists.
        let null = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
                    initContainers:\n  volumes: ~\n  containers:\n  - {name: a, image: a:1}\n";
        let out = inject(null, "t", &opts).unwrap();
        let v = parse(&out.output);
        assert_eq!(v["spec"]["initContainers"][0]["name"], "pullcheck");
        assert_eq!(v["spec"]["volumes"][0]["name"], "pullcheck-secret-s");
        assert_eq!(inject(&out.output, "t", &opts).unwrap().output, out.output);
        // A pod spec that is an anchor used elsewhere is left alone: editing it edits both.
        let shared = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  \
                      spec: &s\n    restartPolicy: Never\n    containers: [{name: a, image: a:1}]\n- apiVersion: v1\n  \
                      kind: Pod\n  metadata: {name: q}\n  spec: *s\n";
        let out = inject(shared, "t", &opts).unwrap();
        assert_eq!(out.output, shared);
        assert!(
            out.warnings[0].contains("YAML anchor"),
            "{:?}",
            out.warnings
        );
        // A merge key that brings only other fields is fine.
        let merged = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  <<: {restartPolicy: Never}\n  \
                      containers:\n  - {name: a, image: a:1}\n";
        let out = inject(merged, "t", &opts).unwrap();
        assert_eq!(out.pod_specs, 1);
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        assert_eq!(parse(&out.output)["spec"]["<<"]["restartPolicy"], "Never");
    }

    #[test]
    fn taking_out_the_last_volume_of_a_compact_list_keeps_the_yaml_valid() {
        let with = InjectOptions {
            image: "p/p:1".into(),
            secrets: vec!["s".into()],
            ..InjectOptions::default()
        };
        let once = inject(POD, "t", &with).unwrap();
        assert!(
            once.output
                .contains("\n  volumes:\n  - name: pullcheck-secret-s")
        );
        let without = run(&once.output);
        let v = parse(&without.output);
        assert_eq!(v["spec"]["volumes"], serde_yaml_ng::Value::Sequence(vec![]));
        assert_eq!(run(&without.output).output, without.output);
    }

    #[test]
    fn crlf_input_gets_crlf_insertions() {
        let input = POD.replace('\n', "\r\n");
        let out = run(&input);
        assert_eq!(out.pod_specs, 1);
        assert!(
            !out.output.replace("\r\n", "").contains('\n'),
            "{:?}",
            out.output
        );
        assert_eq!(run(&out.output).output, out.output);
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
    fn a_pod_spec_without_containers_is_left_unchanged() {
        // Found by fuzzing: two keys inserted into an empty JSON object lacked their comma.
        let input = "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"},\n \"spec\": {\n }}\n";
        let out = run(input);
        assert_eq!(out.output, input);
        assert!(
            out.warnings.iter().any(|w| w.contains("no containers")),
            "{:?}",
            out.warnings
        );
    }

    #[test]
    fn a_job_s_replacement_policy_becomes_failed_beside_the_rules_added() {
        let options = InjectOptions {
            job_failure_policy: true,
            ..opts("p:1")
        };
        let job = |policy: &str| {
            format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec:\n{policy}  template:\n    spec:\n      \
                 restartPolicy: Never\n      containers: [{{name: c, image: x:1}}]\n"
            )
        };
        // As the API server defaults it, and hands it to the webhook: in YAML and in JSON.
        let out = inject(
            &job("  podReplacementPolicy: TerminatingOrFailed\n"),
            "t",
            &options,
        )
        .unwrap();
        let spec = &parse(&out.output)["spec"];
        assert_eq!(spec["podReplacementPolicy"], "Failed", "{}", out.output);
        assert!(spec["podFailurePolicy"]["rules"].is_sequence());
        assert!(
            out.notes
                .iter()
                .any(|n| n.contains("podReplacementPolicy TerminatingOrFailed -> Failed")),
            "{:?}",
            out.notes
        );
        let json = r#"{"apiVersion":"batch/v1","kind":"Job","spec":{"podReplacementPolicy":"TerminatingOrFailed","template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x:1"}]}}}}"#;
        let out = inject(json, "t", &options).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out.output).unwrap();
        assert_eq!(
            v["spec"]["podReplacementPolicy"], "Failed",
            "{}",
            out.output
        );
        // Unset, or Failed already: left as it is.
        for policy in ["", "  podReplacementPolicy: Failed\n"] {
            let out = inject(&job(policy), "t", &options).unwrap();
            assert!(!out.notes.iter().any(|n| n.contains("podReplacementPolicy")));
            assert_eq!(
                parse(&out.output)["spec"]["podReplacementPolicy"].as_str(),
                (!policy.is_empty()).then_some("Failed")
            );
        }
        // A Job with a podFailurePolicy of its own keeps its podReplacementPolicy too.
        let own = job(
            "  podReplacementPolicy: Failed\n  podFailurePolicy:\n    rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]\n",
        );
        let out = inject(&own, "t", &options).unwrap();
        assert_eq!(parse(&out.output)["spec"]["podReplacementPolicy"], "Failed");
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
    fn guaranteed_pods_stay_guaranteed_and_best_effort_pods_get_no_resources() {
        let spec = |resources: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  restartPolicy: Never\n  \
                 containers:\n  - name: a\n    image: x\n    resources: {resources}\n"
            )
        };
        let known = InjectOptions {
            limit_ranges: LimitRanges::Known(Vec::new()),
            ..opts("reg.example.com/pullcheck:1")
        };
        let resources = |input: &str, options: &InjectOptions| {
            let out = inject(input, "t", options).unwrap().output;
            parse(&out)["spec"]["initContainers"][0]["resources"].clone()
        };
        let both = |cpu: &str, memory: &str| map([("cpu", cpu), ("memory", memory)]);
        let guaranteed = both("200m", "32Mi");
        let burstable = both("10m", "16Mi");
        for (input, requests) in [
            ("{limits: {cpu: 1, memory: 1Gi}}", &guaranteed),
            (
                "{limits: {cpu: 1, memory: 1Gi}, requests: {cpu: 1, memory: 1Gi}}",
                &guaranteed,
            ),
            (
                "{limits: {cpu: 1, memory: 1Gi}, requests: {cpu: 500m, memory: 1Gi}}",
                &burstable,
            ),
        ] {
            let r = resources(&spec(input), &known);
            assert_eq!(&r["requests"], requests, "{input}");
            assert_eq!(r["limits"], guaranteed, "{input}");
        }
        // No container asks for anything: neither does ours (the pod stays BestEffort).
        assert!(resources(&spec("{}"), &known).is_null());
        assert!(resources(&spec("{}"), &opts("p:1")).is_null());
        // The namespace's LimitRanges unknown: the values of the pod's own container.
        let r = resources(&spec("{limits: {cpu: 1, memory: 1Gi}}"), &opts("p:1"));
        assert_eq!(r["requests"], both("1", "1Gi"));
        assert_eq!(r["limits"], both("1", "1Gi"));
        // Too little memory for the check: left unchanged, with a warning.
        let tiny = spec("{limits: {memory: 8Mi}}");
        let out = inject(&tiny, "t", &known).unwrap();
        assert_eq!(out.output, tiny);
        assert!(
            out.warnings[0].contains("a memory limit of 8Mi, under the 16Mi it needs"),
            "{:?}",
            out.warnings
        );
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

    #[test]
    fn every_image_left_out_is_named_and_a_native_sidecars_placeholder_is_checked() {
        // JobSet's in-place restart example: a native sidecar with a placeholder image, as
        // `check --pod-spec` reads it (one invalid image), and a sidecar the kubelet never
        // pulls.
        let input = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
                     initContainers:\n  - {name: agent, image: <CHANGE ME>, restartPolicy: Always}\n  \
                     - {name: cache, image: 'local/cache:dev', restartPolicy: Always, imagePullPolicy: Never}\n  \
                     containers: [{name: main, image: 'reg.example.com/app:latest'}]\n";
        let checked: Vec<String> = manifests::read(input, "test")
            .unwrap()
            .images()
            .into_iter()
            .map(|i| i.image)
            .collect();
        assert_eq!(checked, ["<CHANGE ME>", "reg.example.com/app:latest"]);
        let out = run(input);
        let init = &parse(&out.output)["spec"]["initContainers"][0];
        assert_eq!(init["args"], parse("[check, \"<CHANGE ME>\"]"));
        assert_eq!(init["env"][0]["value"], "reg.example.com/app:latest");
        assert_eq!(
            out.notes,
            [
                "test: document 1: Pod/p spec: not checked: sidecar cache \"local/cache:dev\": \
              imagePullPolicy Never, so the kubelet never pulls it and the node must already hold \
              it (check --pod-spec leaves it out too)"
            ]
        );
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        // Many are counted past the first eight.
        let many: Vec<String> = (0..10)
            .map(|i| format!("container c{i} \"l:{i}\""))
            .collect();
        let note = pod::never_note(&many).unwrap();
        assert!(
            note.starts_with("not checked: container c0 \"l:0\", ")
                && note.contains("container c7 \"l:7\" and 2 more: imagePullPolicy Never, so the kubelet never pulls them"),
            "{note}"
        );
        assert_eq!(pod::never_note(&[]), None);
    }

    #[test]
    fn if_not_present_images_looked_up_on_the_node_are_said_once_per_run() {
        let pod = |name: &str, image: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  restartPolicy: Never\n  \
                 containers: [{{name: c, image: '{image}'}}]\n"
            )
        };
        let input = format!(
            "{}---\n{}---\n{}",
            pod("a", "r.io/a:1"),
            pod("b", "r.io/b:latest"),
            pod(
                "c",
                "r.io/c@sha256:0000000000000000000000000000000000000000000000000000000000000000"
            )
        );
        let node = InjectOptions {
            node_images: true,
            ..opts("reg.example.com/pullcheck:1")
        };
        let out = inject(&input, "test", &node).unwrap();
        assert_eq!(out.pod_specs, 3);
        assert_eq!(
            out.warnings,
            [
                "2 pod specs have IfNotPresent images (set, or defaulted for a tag other than \
              latest): a registry miss of such an image is only a warning unless the pod's \
              service account may get nodes (examples/node-images-rbac.yaml), which lets the \
              init container prove the node lacks it"
            ]
        );
        // Without the look-up (a library caller's default, or --no-node-images) a miss counts.
        assert!(run(&input).warnings.is_empty());
        assert_eq!(node_grant_warning(0), None);
        assert!(
            node_grant_warning(1)
                .unwrap()
                .starts_with("1 pod spec has ")
        );
    }

    /// `inject` as it was: the whole input read, then edited.
    fn read_whole(
        input: &str,
        options: &InjectOptions,
    ) -> Result<(String, Vec<String>), InjectError> {
        let valid = validate(options.clone())?;
        let done = whole(input, "t", &valid)?;
        Ok((done.output, done.warnings))
    }

    #[test]
    fn one_document_at_a_time_gives_what_the_whole_read_gives() {
        let pod = |name: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: [{{name: c, image: x:1}}]\n"
            )
        };
        let options = InjectOptions {
            job_failure_policy: true,
            ..opts("p:1")
        };
        let cases = [
            format!("---\n{}---\n{}", pod("a"), pod("b")),
            // An anchor of one document aliased in the next: read whole (both are shared).
            "---\napiVersion: v1\nkind: Pod\nspec: &s\n  containers: [{name: c, image: x:1}]\n---\napiVersion: v1\nkind: Pod\nspec: *s\n".to_string(),
            // Anchors within each document.
            "---\nkind: Pod\napiVersion: v1\nspec:\n  containers: [&c {name: c, image: x:1}]\n  initContainers: [*c]\n---\nkind: Pod\napiVersion: v1\nspec:\n  containers: [&c {name: c, image: y:1}]\n".to_string(),
            // JSON values in a row, a JSON List, JSON documents in a YAML stream.
            r#"{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"x:1"}]}} {"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"y:1"}]}}]}"#.to_string(),
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x:1\"}]}}\n---\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[]}}\n".to_string(),
            // Jobs, notes and warnings across documents, CRLF.
            format!("---\napiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers: [{{name: c, image: x:1}}]\n---\napiVersion: v1\nkind: ConfigMap\n---\napiVersion: example.com/v1\nkind: Thing\nspec:\n  template:\n    spec:\n      containers: [{{name: c, image: z:1}}]\n---\n{}", pod("c")).replace('\n', "\r\n"),
            // A template image in one document and a syntax error in a later one: the syntax
            // error comes first, as in a whole read.
            format!("---\n{}---\napiVersion: v1\nkind: Pod\nspec:\n  containers: [{{name: c, image: \"{{{{ .Values.image }}}}\"}}]\n---\na: [\n", pod("a")),
            format!("---\n{}---\napiVersion: v1\nkind: Pod\nspec:\n  containers: [{{name: c, image: \"{{{{ .Values.image }}}}\"}}]\n", pod("a")),
            format!("---\n{}---\nkey: [unclosed\n", pod("a")),
            "---\n---\n".to_string(),
            String::new(),
        ];
        for input in &cases {
            let streamed = inject(input, "t", &options).map(|d| {
                let mut warnings = d.warnings;
                warnings.retain(|w| !w.contains("no pod spec found"));
                (d.output, warnings)
            });
            let read_whole = read_whole(input, &options);
            assert_eq!(
                streamed.map_err(|e| e.0),
                read_whole.map_err(|e| e.0),
                "{input}"
            );
        }
        // Once its own output, a second inject changes nothing.
        let twice = run(&cases[0]).output;
        assert_eq!(run(&twice).output, twice);
    }
}
