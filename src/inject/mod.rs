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
//! `terminationMessagePolicy: FallbackToLogsOnError`. See [`init_container`].
//!
//! `PULLCHECK_CONTAINERS` holds the start check's facts of each init, sidecar and app container
//! that is not `Never` ([`PodContainer::start_facts`](crate::manifests::PodContainer::start_facts),
//! the same facts `check --pod-spec` reads), left out with a warning above
//! [`container_start::MAX_CONTAINERS_JSON`]. With `--node-images`, the images are split by pull policy
//! ([`pull_policy::to_check`]) into `PULLCHECK_IMAGES` and `PULLCHECK_IMAGES_IF_NOT_PRESENT`,
//! `PULLCHECK_NODE_NAME` comes from `spec.nodeName`, and a pod with
//! `automountServiceAccountToken: false` gets a projected token volume mounted by the init
//! container alone. The route choices ([`RouteMounts`]) add their volumes, read-only mounts and
//! check arguments ([`crate::route::inject::additions`]).
//!
//! With `--job-failure-policy`, each `batch/v1` Job (and CronJob job template) also gets the
//! `podFailurePolicy` rules the README recommends, unless it already has rules for container
//! `pullcheck`, and `restartPolicy: Never` when its pod template sets none.
//!
//! # What is kept
//!
//! The output is the input text with insertions at the places that change (see
//! [`crate::manifests::splice`]): every other byte is kept, comments, anchors, quoting, octal
//! modes and the final newline included; a document that does not change is not touched.
//! Injecting into its own output changes nothing. The volumes it added are recognised (named
//! `pullcheck-secret-…` with a secret, `pullcheck-ca`, `pullcheck-hosts` or
//! `pullcheck-registries` with a ConfigMap, `pullcheck-node-hosts` with a hostPath,
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

use crate::cli::DEFAULT_INJECT_IMAGE;
use crate::container_start::{self, ContainerFacts};
use crate::credentials::plugin::{InjectAdditions, TOKEN_VOLUME};
use crate::manifests::names::{is_dns_label, is_dns_subdomain};
use crate::manifests::splice::{Edit, Output, Splicer, Y, apply};
use crate::manifests::tree::{NodeId, Tree};
use crate::manifests::{self, Manifests, Spot};
use crate::pull_policy::{self, PullPolicy};
use crate::route::inject::{Additions, RouteMounts};
use std::collections::{HashMap, HashSet};

pub use crate::manifests::Format;

/// The name of the injected init container.
pub const CONTAINER_NAME: &str = manifests::PULLCHECK;
/// Where the pull secrets are mounted, one folder per secret (`pullcheck check --secrets-dir`).
pub const SECRETS_DIR: &str = "/var/run/pullcheck/secrets";
/// The start of the names of the secret volumes that `inject` adds.
pub const VOLUME_PREFIX: &str = "pullcheck-secret-";
/// The name of the ConfigMap volume that holds the `--ca-file` files.
pub const CA_VOLUME: &str = "pullcheck-ca";
/// The projected volume that gives the init container a service-account token where the pod
/// turns the automatic one off (`inject --node-images`).
pub const SERVICE_ACCOUNT_VOLUME: &str = "pullcheck-serviceaccount";
/// Where that token (`token`) and the cluster's CA (`ca.crt`) are mounted.
pub const SERVICE_ACCOUNT_MOUNT: &str = "/var/run/pullcheck/serviceaccount";
/// The names of the volumes the route choices add, with the kind of volume each is.
const ROUTE_VOLUMES: [(&str, &str); 3] = [
    ("pullcheck-hosts", "configMap"),
    ("pullcheck-registries", "configMap"),
    ("pullcheck-node-hosts", "hostPath"),
];
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

/// Exit codes of `pullcheck check` after which a Job must fail at once (not found or invalid,
/// no variant for the platform, access refused, will not start).
pub const FAIL_JOB_EXIT_CODES: [i64; 4] = [3, 4, 5, 7];
/// Exit codes of a registry that could not be reached (it may pass): the Job retries the pod,
/// counted against `backoffLimit` by default, not counted (`Ignore`) only when the Job's
/// `activeDeadlineSeconds` bounds the retries, or with `--ignore-unreachable-without-deadline`.
pub const IGNORE_EXIT_CODES: [i64; 1] = [6];
/// Exit codes of a registry this pod cannot check (plain HTTP asked over TLS, an untrusted
/// certificate, a name its resolver does not know): permanent for the pod, so never ignored,
/// but maybe not for the node, so not `FailJob` at once either: counted against
/// `backoffLimit`.
pub const COUNT_EXIT_CODES: [i64; 1] = [8];

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
    /// `--node-images`: split the images by pull policy, pass the node's name, and give the
    /// init container a token where the pod has none.
    pub node_images: bool,
    /// `--credential-provider-config`: the projected token volume, its mount and variable for
    /// the credential-provider plugins with `tokenAttributes`.
    pub provider_tokens: Option<InjectAdditions>,
    /// The node's registry configuration to mount (`--hosts-configmap`,
    /// `--registries-configmap`, `--hosts-from-node`).
    pub route: RouteMounts,
}

/// The rewritten manifests and what the user should know about them.
#[derive(Debug, Clone, Default)]
pub struct Injected {
    /// The output document(s), in the input's format.
    pub output: String,
    /// Notes for stderr (e.g. a pod template whose `restartPolicy` is not `Never`).
    pub warnings: Vec<String>,
    /// What was written and why, for stderr (e.g. which `podFailurePolicy` rule on exit 6).
    pub notes: Vec<String>,
    /// How many pod specs have the init container (added now, or already as it would be).
    pub pod_specs: usize,
    /// The format that was read and written.
    pub format: Format,
}

/// Input or arguments that cannot be used: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InjectError(pub String);

/// Rewrites `input` (YAML or JSON, one or more documents); `source` names it in messages.
///
/// # Errors
///
/// [`InjectError`] for bad options, check arguments that `pullcheck check` would refuse, and
/// input that cannot be read (naming the document and line, never its content).
pub fn inject(input: &str, source: &str, options: &InjectOptions) -> Result<Injected, InjectError> {
    let (ca_files, mut route) = validate_options(options)?;
    let route_warnings = std::mem::take(&mut route.warnings);
    let mut each = EachDocument {
        input,
        source,
        options,
        ca_files: &ca_files,
        route: &route,
        crlf: input.contains("\r\n"),
        format: Format::Yaml,
        notes: Vec::new(),
        warnings: Vec::new(),
        written: Vec::new(),
        output: Output::default(),
        pending: Vec::new(),
        spots: 0,
        pod_specs: 0,
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
                pod_specs: each.pod_specs,
                format,
                output: each.output(),
            }
        }
        // Inputs whose documents cannot be read one at a time (anchors shared across them).
        None => {
            drop(each);
            whole(input, source, options, &ca_files, &route)?
        }
    };
    let mut warnings = done.warnings;
    if done.spots == 0 {
        warnings.push(format!(
            "{source}: no pod spec found; the output is the input unchanged"
        ));
    } else if options.image == DEFAULT_INJECT_IMAGE {
        warnings.push(format!(
            "the init container runs the default image {DEFAULT_INJECT_IMAGE}, which no \
             registry serves: push pullcheck's image to a registry every node can pull from \
             and pass --image REF (a pod whose own pullcheck image cannot be pulled is stuck \
             like any other)"
        ));
    }
    if done.spots != 0 {
        warnings.extend(route_warnings);
    }
    Ok(Injected {
        output: done.output,
        warnings,
        notes: done.notes,
        pod_specs: done.pod_specs,
        format: done.format,
    })
}

/// What reading and editing all documents gave, before the closing warnings.
struct Done {
    /// The reader's notes, then the edits' warnings.
    warnings: Vec<String>,
    /// What was written and why (`pullcheck: note:` lines).
    notes: Vec<String>,
    /// Pod specs found.
    spots: usize,
    /// Pod specs edited.
    pod_specs: usize,
    format: Format,
    output: String,
}

/// Edits each document as it is read ([`manifests::read_each`]) and writes its part of the
/// output: the input, one document's tree and the output live at once, never the whole
/// input's tree nor all the edits.
struct EachDocument<'a> {
    input: &'a str,
    source: &'a str,
    options: &'a InjectOptions,
    ca_files: &'a [String],
    route: &'a Additions,
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
    pod_specs: usize,
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
        self.pod_specs = 0;
    }

    fn document(&mut self, tree: &Tree, found: Manifests) {
        self.output
            .apply(self.input, &std::mem::take(&mut self.pending));
        let edits = edit(
            self.input,
            self.source,
            self.options,
            tree,
            &found,
            self.ca_files,
            self.route,
            &mut self.warnings,
            &mut self.written,
            &mut self.pod_specs,
        );
        self.spots += found.spots.len();
        self.notes.extend(found.notes);
        self.pending = crlf(edits, self.crlf);
    }
}

/// The edits of the pod specs `found` in `tree`, their warnings added to `warnings`, what was
/// written and why (a Job's failure policy) to `notes`, and the pod specs edited counted in
/// `pod_specs`.
#[allow(clippy::too_many_arguments)]
fn edit(
    input: &str,
    source: &str,
    options: &InjectOptions,
    tree: &Tree,
    found: &Manifests,
    ca_files: &[String],
    route: &Additions,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
    pod_specs: &mut usize,
) -> Vec<Edit> {
    let mut run = Run {
        options,
        source,
        manifests: found,
        tree,
        splicer: Splicer::new(input, tree, found.format == Format::Json),
        ca_files,
        route,
        warnings: std::mem::take(warnings),
        notes: std::mem::take(notes),
        edits: Vec::new(),
        volumes_done: HashMap::new(),
        spots_by_volumes: HashMap::new(),
        jobs_done: HashSet::new(),
        pod_specs: *pod_specs,
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
    *warnings = run.warnings;
    *notes = run.notes;
    *pod_specs = run.pod_specs;
    run.edits
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
fn whole(
    input: &str,
    source: &str,
    options: &InjectOptions,
    ca_files: &[String],
    route: &Additions,
) -> Result<Done, InjectError> {
    let found = manifests::read(input, source).map_err(|e| InjectError(e.to_string()))?;
    let mut warnings = found.notes.clone();
    let mut notes = Vec::new();
    let mut pod_specs = 0;
    let edits = edit(
        input,
        source,
        options,
        &found.tree,
        &found,
        ca_files,
        route,
        &mut warnings,
        &mut notes,
        &mut pod_specs,
    );
    let edits = crlf(edits, input.contains("\r\n"));
    let spots = found.spots.len();
    let format = found.format;
    // The tree and the pod specs are dropped before the output is built: the peak is then the
    // larger of the two, not their sum.
    drop(found);
    Ok(Done {
        warnings,
        notes,
        spots,
        pod_specs,
        format,
        output: apply(input, &edits),
    })
}

/// The init container `inject` adds: `env` its environment (`PULLCHECK_IMAGES` first, see
/// [`env_value`]), `extra_args` images passed as arguments (those with whitespace), `mounts`
/// the volume mounts, and `guaranteed` whether every other container of the pod has requests
/// equal to limits for CPU and memory.
///
/// In a Guaranteed pod the requests are raised to the limits: one container with requests below
/// its limits would make the whole pod Burstable (QoS counts init containers too), losing it
/// exclusive CPUs under the static CPU manager policy and moving it up the eviction order.
pub fn init_container(
    image: &str,
    check_args: &[String],
    env: &[Y],
    extra_args: &[String],
    mounts: &[Y],
    guaranteed: bool,
) -> Y {
    let (cpu_request, memory_request) = if guaranteed {
        (CPU_LIMIT, MEMORY_LIMIT)
    } else {
        (CPU_REQUEST, MEMORY_REQUEST)
    };
    let mut args = vec![Y::s("check")];
    args.extend(check_args.iter().map(|a| Y::s(a)));
    // Images are data: one that starts with '-' goes after a `--` (the user's, or one added),
    // so that `check` never reads it as an option (`--allow-unauthenticated=*,x y` would
    // otherwise turn the check off).
    let ended = check_args.iter().any(|a| a == "--");
    let (dashed, plain): (Vec<&String>, Vec<&String>) = extra_args
        .iter()
        .partition(|a| !ended && a.starts_with('-'));
    args.extend(plain.into_iter().map(|a| Y::s(a)));
    if !dashed.is_empty() {
        args.push(Y::s("--"));
        args.extend(dashed.into_iter().map(|a| Y::s(a)));
    }
    let flow = |y: Y| Y::Flow(Box::new(y));
    let mut c = vec![
        ("name".to_string(), Y::s(CONTAINER_NAME)),
        ("image".to_string(), Y::s(image)),
        ("args".to_string(), flow(Y::Seq(args))),
        ("env".to_string(), Y::Seq(env.to_vec())),
        (
            "resources".to_string(),
            Y::map([
                (
                    "requests",
                    flow(Y::map([
                        ("cpu", Y::s(cpu_request)),
                        ("memory", Y::s(memory_request)),
                    ])),
                ),
                (
                    "limits",
                    flow(Y::map([
                        ("cpu", Y::s(CPU_LIMIT)),
                        ("memory", Y::s(MEMORY_LIMIT)),
                    ])),
                ),
            ]),
        ),
        (
            "securityContext".to_string(),
            Y::map([
                ("allowPrivilegeEscalation", Y::Bool(false)),
                (
                    "capabilities",
                    Y::map([("drop", flow(Y::Seq(vec![Y::s("ALL")])))]),
                ),
                ("readOnlyRootFilesystem", Y::Bool(true)),
                ("runAsNonRoot", Y::Bool(true)),
                ("runAsUser", Y::Int(RUN_AS_USER as i64)),
                ("seccompProfile", Y::map([("type", Y::s("RuntimeDefault"))])),
            ]),
        ),
        (
            "terminationMessagePolicy".to_string(),
            Y::s("FallbackToLogsOnError"),
        ),
    ];
    if !mounts.is_empty() {
        c.push(("volumeMounts".to_string(), Y::Seq(mounts.to_vec())));
    }
    Y::Map(c)
}

/// The check arguments with those of the route choices after the user's flags (before a `--`
/// that ends them).
fn with_route_args(check_args: &[String], route_args: &[String]) -> Vec<String> {
    let end = check_args
        .iter()
        .position(|a| a == "--")
        .unwrap_or(check_args.len());
    let mut out = check_args[..end].to_vec();
    out.extend(route_args.iter().cloned());
    out.extend(check_args[end..].iter().cloned());
    out
}

/// One `env` entry with a plain value.
pub fn env_value(name: &str, value: &str) -> Y {
    Y::map([("name", Y::s(name)), ("value", Y::s(value))])
}

/// A serde JSON value (what [`crate::route::inject`] returns) as a value to splice in, `name`
/// first in each mapping as Kubernetes writes it (a JSON object's keys come sorted); `null` and
/// floats do not occur there and become strings.
fn from_json(v: &serde_json::Value) -> Y {
    use serde_json::Value;
    match v {
        Value::String(s) => Y::s(s),
        Value::Bool(b) => Y::Bool(*b),
        Value::Number(n) => n.as_i64().map_or_else(|| Y::s(&n.to_string()), Y::Int),
        Value::Array(items) => Y::Seq(items.iter().map(from_json).collect()),
        Value::Object(entries) => {
            let mut entries: Vec<(String, Y)> = entries
                .iter()
                .map(|(k, v)| (k.clone(), from_json(v)))
                .collect();
            entries.sort_by_key(|(k, _)| k != "name");
            Y::Map(entries)
        }
        Value::Null => Y::s(""),
    }
}

/// Whether a volume named `name` whose source is `source` (`secret`, `configMap`, …) is one
/// `inject` adds.
fn is_our_volume(name: &str, source: &str) -> bool {
    (name.starts_with(VOLUME_PREFIX) && source == "secret")
        || (name == CA_VOLUME && source == "configMap")
        || (name == SERVICE_ACCOUNT_VOLUME && source == "projected")
        || (name == TOKEN_VOLUME && source == "projected")
        || ROUTE_VOLUMES.contains(&(name, source))
}

/// Whether a volume mount name is one of the volumes `inject` adds (whatever its source).
fn is_our_volume_name(name: &str) -> bool {
    name.starts_with(VOLUME_PREFIX)
        || name == CA_VOLUME
        || name == SERVICE_ACCOUNT_VOLUME
        || name == TOKEN_VOLUME
        || ROUTE_VOLUMES.iter().any(|(n, _)| *n == name)
}

/// The projected volume with a service-account token and the cluster's CA, as the kubelet
/// mounts for a pod that does not turn it off (the token's path `token`, the CA from the
/// `kube-root-ca.crt` ConfigMap every namespace has).
fn service_account_volume() -> Y {
    Y::map([
        ("name", Y::s(SERVICE_ACCOUNT_VOLUME)),
        (
            "projected",
            Y::map([(
                "sources",
                Y::Seq(vec![
                    Y::map([(
                        "serviceAccountToken",
                        Y::Flow(Box::new(Y::map([("path", Y::s("token"))]))),
                    )]),
                    Y::map([(
                        "configMap",
                        Y::map([
                            ("name", Y::s("kube-root-ca.crt")),
                            (
                                "items",
                                Y::Flow(Box::new(Y::Seq(vec![Y::map([
                                    ("key", Y::s("ca.crt")),
                                    ("path", Y::s("ca.crt")),
                                ])]))),
                            ),
                        ]),
                    )]),
                ]),
            )]),
        ),
    ])
}

// ---------------------------------------------------------------------------------------------
// Options

/// Checks the options, and the check arguments (with those the route choices add) with
/// `check`'s own parser; returns the `--ca-file` paths of the check arguments and what the
/// route choices add.
fn validate_options(options: &InjectOptions) -> Result<(Vec<String>, Additions), InjectError> {
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
    let route = &options.route;
    for (flag, name) in [
        ("--hosts-configmap", &route.hosts_configmap),
        ("--registries-configmap", &route.registries_configmap),
    ] {
        if let Some(name) = name
            && !is_dns_subdomain(name)
        {
            return Err(InjectError(format!(
                "{flag} {name:?}: not a ConfigMap name"
            )));
        }
    }
    if let Some(path) = &route.hosts_from_node
        && !path.is_empty()
        && (!path.starts_with('/') || path.split('/').any(|p| p == ".."))
    {
        return Err(InjectError(format!(
            "--hosts-from-node {path:?}: an absolute path on the node"
        )));
    }
    if route.registries_configmap.is_some()
        && (route.hosts_configmap.is_some() || route.hosts_from_node.is_some())
    {
        return Err(InjectError(
            "--registries-configmap (CRI-O, Podman) and --hosts-configmap / --hosts-from-node \
             (containerd) describe different runtimes: give the one your nodes run"
                .to_string(),
        ));
    }
    let additions = crate::route::inject::additions(route);
    // Refused here, once, rather than in every pod the manifests start.
    let argv = ["pullcheck", "check"]
        .into_iter()
        .map(str::to_string)
        .chain(with_route_args(&options.check_args, &additions.args));
    if let Err(e) = <crate::cli::Cli as clap::Parser>::try_parse_from(argv) {
        let message = e.render().to_string();
        // clap's message and its tip, without the usage lines.
        let first = message
            .lines()
            .take_while(|l| !l.starts_with("Usage:"))
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        let first = first.trim_start_matches("error: ");
        return Err(InjectError(format!(
            "the arguments after -- are for `pullcheck check`, which refuses them: {first}"
        )));
    }
    let mut ca_files = Vec::new();
    let mut args = options.check_args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        if arg == "--ca-file" {
            ca_files.extend(args.next().cloned());
        } else if let Some(path) = arg.strip_prefix("--ca-file=") {
            ca_files.push(path.to_string());
        }
    }
    let ca_files: Vec<String> = ca_files
        .iter()
        .flat_map(|p| p.split(':'))
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    if let Some(name) = &options.ca_configmap {
        if !is_dns_subdomain(name) {
            return Err(InjectError(format!(
                "--ca-configmap {name:?}: not a ConfigMap name"
            )));
        }
        if ca_files.is_empty() {
            return Err(InjectError(
                "--ca-configmap mounts the files of --ca-file: give `-- --ca-file PATH` (the \
                 ConfigMap key is the file name of PATH)"
                    .to_string(),
            ));
        }
        for path in &ca_files {
            if !path.starts_with('/') || path.ends_with('/') || path.contains("/../") {
                return Err(InjectError(format!(
                    "--ca-file {path:?}: with --ca-configmap, an absolute path to a file"
                )));
            }
        }
    }
    Ok((ca_files, additions))
}

// ---------------------------------------------------------------------------------------------
// Editing

struct Run<'a> {
    options: &'a InjectOptions,
    source: &'a str,
    manifests: &'a Manifests,
    tree: &'a Tree,
    splicer: Splicer<'a>,
    ca_files: &'a [String],
    route: &'a Additions,
    warnings: Vec<String>,
    edits: Vec<Edit>,
    /// Volume holders already edited (shared by a workflow's templates, a Spark app's driver
    /// and executor), with the volume names chosen there.
    volumes_done: HashMap<NodeId, Vec<(String, String)>>,
    /// The spots of each volume holder, indexed once: looking them up by scanning every spot
    /// for each pod spec made 100,000 documents quadratic (60 s).
    spots_by_volumes: HashMap<NodeId, Vec<usize>>,
    /// Job specs already given a failure policy.
    jobs_done: HashSet<NodeId>,
    /// What was written and why, for stderr.
    notes: Vec<String>,
    pod_specs: usize,
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
    fn warn(&mut self, message: String) {
        self.warnings.push(format!("{}: {message}", self.source));
    }

    fn spot(&mut self, spot: &Spot) {
        let t = self.tree;
        let spec = &self.manifests.pod_specs[spot.spec];
        let at = spec.origin.to_string();
        if let Some(key) = spot.not_lists.first() {
            self.warn(format!("{at}: {key} is not a list; left unchanged"));
            return;
        }
        if spec.windows {
            // The reader's note says why (and that check --pod-spec leaves it out too).
            return;
        }
        if spot.name_taken {
            self.warn(format!(
                "{at}: a container is already named {CONTAINER_NAME}; left unchanged \
                 (container names are unique across initContainers and containers)"
            ));
            return;
        }
        if spec.containers.is_empty() && spec.parameter_images > 0 {
            // The template has a container: its image is known only when the workflow runs.
            self.warn(format!(
                "{at}: its image is an Argo workflow parameter, known only at run time; left \
                 unchanged (there is no image to check before the workflow fills it in)"
            ));
            return;
        }
        if spec.containers.is_empty() {
            // Nothing to check, and the API server refuses a pod without containers. (Found by
            // fuzzing: two keys inserted into an empty JSON object `{}` lacked their comma.)
            self.warn(format!(
                "{at}: no containers and no image volumes; left unchanged (nothing to check)"
            ));
            return;
        }
        // A list that comes through a `<<` merge key cannot be edited where it is written.
        let merged = |node: NodeId, key: &str| {
            t.has_merge(node) && t.own_entry(node, key).is_none() && t.get(node, key).is_some()
        };
        for (node, what) in [
            (spot.holder, "the pod spec"),
            (spot.volumes, "the volumes' holder"),
        ] {
            if t.is_aliased(node) || merged(node, "initContainers") || merged(node, "volumes") {
                self.warn(format!(
                    "{at}: {what} is shared through a YAML anchor or merge key; left unchanged \
                     (an edit would change every copy)"
                ));
                return;
            }
        }
        // --job-failure-policy sets restartPolicy: Never where a Job's pod template has none.
        let policy_set_here = self.options.job_failure_policy
            && spot.job.is_some()
            && spot
                .pod
                .is_some_and(|p| t.str_at(p, "restartPolicy").is_none());
        if !policy_set_here {
            self.restart_policy_warning(spot, &at);
        }

        // Images, in order, without duplicates; those with whitespace as arguments. The
        // containers' facts for the start check, from the same containers.
        let mut images: Vec<(String, PullPolicy)> = Vec::new();
        let mut extra_args: Vec<String> = Vec::new();
        let mut facts: Vec<ContainerFacts> = Vec::new();
        for c in &spec.containers {
            if c.image_pull_policy.as_deref() == Some("Never") {
                continue;
            }
            // The reader trimmed it and left out what cannot be checked.
            let image = c.image.as_str();
            if let Some(f) = c.start_facts() {
                facts.push(f);
            }
            // PULLCHECK_IMAGES is split at whitespace and commas: an image holding either
            // would become other images there, so it is an argument, never dropped (the check
            // then says it is an invalid reference, as the kubelet would).
            if image.contains(|c: char| c.is_whitespace() || c == ',') {
                if !extra_args.iter().any(|i| i == &c.image) {
                    extra_args.push(c.image.clone());
                }
            } else {
                let policy = PullPolicy::resolve(image, c.image_pull_policy.as_deref());
                images.push((image.to_string(), policy));
            }
        }
        let env = self.env(spot, images, &facts, &at);

        // Pull secrets: the pod's, then --secret.
        let mut secrets = spot.secrets.clone();
        for name in &self.options.secrets {
            if !name.is_empty() && !secrets.iter().any(|s| s == name) {
                secrets.push(name.clone());
            }
        }
        for name in &spot.bad_secrets {
            self.warn(format!(
                "{at}: imagePullSecrets name {name:?} is not a Secret name; not mounted"
            ));
        }

        let Some(volume_names) = self.volumes(spot, &secrets, &at) else {
            return;
        };
        let mut mounts: Vec<Y> = volume_names
            .iter()
            .map(|(secret, volume)| {
                Y::map([
                    ("name", Y::s(volume)),
                    ("mountPath", Y::s(&format!("{SECRETS_DIR}/{secret}"))),
                    ("readOnly", Y::Bool(true)),
                ])
            })
            .collect();
        if self.options.ca_configmap.is_some() {
            for path in self.ca_files {
                let file = path.rsplit('/').next().unwrap_or(path);
                mounts.push(Y::map([
                    ("name", Y::s(CA_VOLUME)),
                    ("mountPath", Y::s(path)),
                    ("subPath", Y::s(file)),
                    ("readOnly", Y::Bool(true)),
                ]));
            }
        }
        mounts.extend(self.route.mounts.iter().map(from_json));
        if let Some(tokens) = &self.options.provider_tokens {
            mounts.push(from_json(&tokens.mount));
        }
        if self.needs_token(spot) {
            mounts.push(Y::map([
                ("name", Y::s(SERVICE_ACCOUNT_VOLUME)),
                ("mountPath", Y::s(SERVICE_ACCOUNT_MOUNT)),
                ("readOnly", Y::Bool(true)),
            ]));
        }
        let check_args = with_route_args(&self.options.check_args, &self.route.args);
        let container = init_container(
            &self.options.image,
            &check_args,
            &env,
            &extra_args,
            &mounts,
            is_guaranteed(t, &spot.container_nodes),
        );
        if let Some(main) = spot.main_mounts
            && let Err(why) = self.main_mounts(main, &mounts)
        {
            self.warn(format!(
                "{at}: cannot add the volume mounts the operator needs ({why}); left unchanged"
            ));
            return;
        }
        if let Err(why) = self.init_containers(spot, &container) {
            self.warn(format!(
                "{at}: cannot edit initContainers ({why}); left unchanged"
            ));
            return;
        }
        if self.options.job_failure_policy
            && let (Some(job), Some(pod)) = (spot.job, spot.pod)
            && self.jobs_done.insert(job)
        {
            self.failure_policy(job, pod, &at);
        }
        self.pod_specs += 1;
    }

    /// Whether the init container gets its own service-account token: with `--node-images`,
    /// where the pod turns the automatic one off.
    fn needs_token(&self, spot: &Spot) -> bool {
        let t = self.tree;
        self.options.node_images
            && [spot.pod, Some(spot.volumes)]
                .into_iter()
                .flatten()
                .any(|n| {
                    t.get(n, "automountServiceAccountToken")
                        .and_then(|v| t.as_bool(v))
                        == Some(false)
                })
    }

    /// The init container's environment: the images (split by pull policy with
    /// `--node-images`), the containers' facts for the start check, and with `--node-images`
    /// the node's name and where the token is.
    fn env(
        &mut self,
        spot: &Spot,
        images: Vec<(String, PullPolicy)>,
        facts: &[ContainerFacts],
        at: &str,
    ) -> Vec<Y> {
        let mut env = Vec::new();
        if self.options.node_images {
            let to_check = pull_policy::to_check(images);
            let always: Vec<&str> = to_check
                .images
                .iter()
                .filter(|i| !to_check.if_not_present.contains(i))
                .map(String::as_str)
                .collect();
            env.push(env_value("PULLCHECK_IMAGES", &always.join(" ")));
            if !to_check.if_not_present.is_empty() {
                env.push(env_value(
                    "PULLCHECK_IMAGES_IF_NOT_PRESENT",
                    &to_check.if_not_present.join(","),
                ));
            }
        } else {
            let mut plain: Vec<String> = Vec::new();
            for (image, _) in images {
                if !plain.contains(&image) {
                    plain.push(image);
                }
            }
            env.push(env_value("PULLCHECK_IMAGES", &plain.join(" ")));
        }
        if !facts.is_empty() {
            let json = ContainerFacts::to_env(facts);
            if json.len() > container_start::MAX_CONTAINERS_JSON {
                self.warn(format!(
                    "{at}: the containers' facts take {} bytes, more than the {} KiB \
                     PULLCHECK_CONTAINERS may hold; left out, so the init container does not \
                     predict whether the containers start",
                    json.len(),
                    container_start::MAX_CONTAINERS_JSON / 1024
                ));
            } else {
                env.push(env_value("PULLCHECK_CONTAINERS", &json));
            }
        }
        if self.options.node_images {
            env.push(Y::map([
                ("name", Y::s("PULLCHECK_NODE_NAME")),
                (
                    "valueFrom",
                    Y::map([(
                        "fieldRef",
                        Y::Flow(Box::new(Y::map([("fieldPath", Y::s("spec.nodeName"))]))),
                    )]),
                ),
            ]));
            if self.needs_token(spot) {
                env.push(env_value(
                    "PULLCHECK_SERVICE_ACCOUNT_DIR",
                    SERVICE_ACCOUNT_MOUNT,
                ));
            }
        }
        if let Some(tokens) = &self.options.provider_tokens {
            env.push(from_json(&tokens.env));
        }
        env
    }

    /// The init container, first in `initContainers`.
    fn init_containers(&mut self, spot: &Spot, container: &Y) -> Result<(), &'static str> {
        let t = self.tree;
        let Some((key, list)) = t.own_entry(spot.holder, "initContainers") else {
            let value = Y::Seq(vec![container.clone()]);
            let e = self
                .splicer
                .insert_key(spot.holder, spot.before, "initContainers", &value)?;
            self.edits.push(e);
            return Ok(());
        };
        if t.is_null(list) {
            let e = self
                .splicer
                .set_null(key, list, &Y::Seq(vec![container.clone()]))?;
            self.edits.push(e);
            return Ok(());
        }
        if t.is_aliased(list) || t.resolve(list) != list {
            return Err("the list is shared through a YAML anchor");
        }
        let ours = t
            .items(list)
            .iter()
            .position(|&c| t.str_at(c, "name") == Some(CONTAINER_NAME));
        match ours {
            Some(0) if t.to_json(t.items(list)[0]) == Some(container.to_json()) => {}
            Some(0) => self
                .edits
                .push(self.splicer.replace_item(list, 0, container)?),
            Some(i) => {
                let remove = self.splicer.remove_item(list, i)?;
                let add = self
                    .splicer
                    .prepend(list, std::slice::from_ref(container))?;
                self.edits.push(add);
                self.edits.push(remove);
            }
            None => self.edits.push(
                self.splicer
                    .prepend(list, std::slice::from_ref(container))?,
            ),
        }
        Ok(())
    }

    /// The Spark operator copies into a pod only the application's volumes that the driver or
    /// executor container mounts: that container mounts ours too (read-only, where the init
    /// container does), and no longer mounts ours of an earlier run that are gone.
    fn main_mounts(&mut self, main: NodeId, mounts: &[Y]) -> Result<(), &'static str> {
        let t = self.tree;
        let wanted: Vec<(String, &Y)> = mounts
            .iter()
            .filter_map(|m| match m {
                Y::Map(entries) => entries.iter().find_map(|(k, v)| match (k.as_str(), v) {
                    ("name", Y::Str(n)) => Some((n.clone(), m)),
                    _ => None,
                }),
                _ => None,
            })
            .collect();
        let ours = is_our_volume_name;
        let Some((key, list)) = t.own_entry(main, "volumeMounts") else {
            if !wanted.is_empty() {
                let value = Y::Seq(wanted.iter().map(|(_, y)| (*y).clone()).collect());
                let e = self.splicer.insert_key(main, &[], "volumeMounts", &value)?;
                self.edits.push(e);
            }
            return Ok(());
        };
        if t.is_null(list) {
            if !wanted.is_empty() {
                let value = Y::Seq(wanted.iter().map(|(_, y)| (*y).clone()).collect());
                self.edits.push(self.splicer.set_null(key, list, &value)?);
            }
            return Ok(());
        }
        if t.is_aliased(list) || t.resolve(list) != list {
            return Err("the list is shared through a YAML anchor");
        }
        let items = t.items(list).to_vec();
        let present: Vec<(usize, String)> = items
            .iter()
            .enumerate()
            .filter_map(|(i, &m)| t.str_at(m, "name").map(|n| (i, n.to_string())))
            .collect();
        let missing: Vec<Y> = wanted
            .iter()
            .filter(|(n, _)| !present.iter().any(|(_, p)| p == n))
            .map(|(_, y)| (*y).clone())
            .collect();
        if !missing.is_empty() {
            self.edits.push(self.splicer.prepend(list, &missing)?);
        }
        for (i, name) in present {
            if ours(&name) && !wanted.iter().any(|(n, _)| *n == name) {
                self.edits.push(self.splicer.remove_item(list, i)?);
            }
        }
        Ok(())
    }

    /// Makes the volumes' holder have exactly the volumes this run wants (once per holder);
    /// returns (secret, volume name) pairs, `None` (with a warning) when it cannot be edited.
    fn volumes(
        &mut self,
        spot: &Spot,
        secrets: &[String],
        at: &str,
    ) -> Option<Vec<(String, String)>> {
        if let Some(done) = self.volumes_done.get(&spot.volumes) {
            return Some(done.clone());
        }
        let t = self.tree;
        // Volumes any container but ours mounts are the user's, whatever their name.
        let mut mounted_by_others = HashSet::new();
        let sharing = self
            .spots_by_volumes
            .get(&spot.volumes)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for spot2 in sharing.iter().map(|&i| &self.manifests.spots[i]) {
            for &c in &spot2.container_nodes {
                for key in ["volumeMounts", "volumeDevices"] {
                    if let Some(list) = t.get(c, key) {
                        for &m in t.items(list) {
                            if let Some(n) = t.str_at(m, "name") {
                                mounted_by_others.insert(n.to_string());
                            }
                        }
                    }
                }
            }
        }
        let entry = t.own_entry(spot.volumes, "volumes");
        let items: Vec<NodeId> = entry.map(|(_, v)| t.items(v).to_vec()).unwrap_or_default();
        let is_ours = |v: NodeId| {
            let name = t.str_at(v, "name").unwrap_or("");
            !mounted_by_others.contains(name)
                && ["secret", "configMap", "projected", "hostPath"]
                    .iter()
                    .any(|source| t.get(v, source).is_some() && is_our_volume(name, source))
        };
        let ours: Vec<usize> = (0..items.len()).filter(|&i| is_ours(items[i])).collect();
        let ours_set: HashSet<usize> = ours.iter().copied().collect();
        let mut taken: HashSet<String> = items
            .iter()
            .enumerate()
            .filter(|(i, _)| !ours_set.contains(i))
            .filter_map(|(_, &v)| t.str_at(v, "name").map(str::to_string))
            .collect();
        let user_volumes = taken.clone();
        let mut names = Vec::new();
        let mut wanted = Vec::new();
        for secret in secrets {
            let volume = volume_name(secret, &taken);
            taken.insert(volume.clone());
            wanted.push(Y::map([
                ("name", Y::s(&volume)),
                (
                    "secret",
                    Y::Flow(Box::new(Y::map([
                        ("secretName", Y::s(secret)),
                        ("optional", Y::Bool(true)),
                    ]))),
                ),
            ]));
            names.push((secret.clone(), volume));
        }
        if let Some(cm) = &self.options.ca_configmap {
            wanted.push(Y::map([
                ("name", Y::s(CA_VOLUME)),
                ("configMap", Y::Flow(Box::new(Y::map([("name", Y::s(cm))])))),
            ]));
        }
        for volume in &self.route.volumes {
            wanted.push(from_json(volume));
        }
        if let Some(tokens) = &self.options.provider_tokens {
            wanted.push(from_json(&tokens.volume));
        }
        if self.needs_token(spot) {
            wanted.push(service_account_volume());
        }
        // A volume of the pod's own with the name of one added here would make the pod
        // invalid (volume names are unique): leave the pod alone and say so.
        if let Some(clash) = wanted.iter().find_map(|v| {
            let name = v.to_json().get("name")?.as_str()?.to_string();
            user_volumes.contains(&name).then_some(name)
        }) {
            self.warn(format!(
                "{at}: the pod already has a volume named {clash:?} of its own; left unchanged"
            ));
            return None;
        }
        self.volumes_done.insert(spot.volumes, names.clone());

        let result = (|| -> Result<Vec<Edit>, &'static str> {
            let mut edits = Vec::new();
            let Some((key, list)) = entry else {
                if !wanted.is_empty() {
                    let before: &[&str] = if spot.pod.is_some() {
                        &["containers"]
                    } else {
                        &[]
                    };
                    edits.push(self.splicer.insert_key(
                        spot.volumes,
                        before,
                        "volumes",
                        &Y::Seq(wanted),
                    )?);
                }
                return Ok(edits);
            };
            if t.is_null(list) {
                if !wanted.is_empty() {
                    edits.push(self.splicer.set_null(key, list, &Y::Seq(wanted))?);
                }
                return Ok(edits);
            }
            if t.is_aliased(list) || t.resolve(list) != list {
                return Err("the list is shared through a YAML anchor");
            }
            let current: Vec<serde_json::Value> =
                ours.iter().filter_map(|&i| t.to_json(items[i])).collect();
            let want_json: Vec<serde_json::Value> = wanted.iter().map(Y::to_json).collect();
            let leading = ours.iter().enumerate().all(|(n, &i)| n == i);
            if current == want_json && leading {
                return Ok(edits);
            }
            if leading {
                for (n, &i) in ours.iter().enumerate() {
                    match wanted.get(n) {
                        Some(y) => edits.push(self.splicer.replace_item(list, i, y)?),
                        None => edits.push(self.splicer.remove_item(list, i)?),
                    }
                }
                if wanted.len() > ours.len() {
                    edits.insert(0, self.splicer.prepend(list, &wanted[ours.len()..])?);
                }
            } else {
                if !wanted.is_empty() {
                    edits.push(self.splicer.prepend(list, &wanted)?);
                }
                for &i in &ours {
                    edits.push(self.splicer.remove_item(list, i)?);
                }
            }
            Ok(edits)
        })();
        match result {
            Ok(edits) => {
                self.edits.extend(edits);
                Some(names)
            }
            Err(why) => {
                self.warn(format!("{at}: cannot edit volumes ({why}); left unchanged"));
                None
            }
        }
    }

    /// `podFailurePolicy` for a `batch/v1` Job, and `restartPolicy: Never` when unset.
    fn failure_policy(&mut self, job: NodeId, pod: NodeId, at: &str) {
        let t = self.tree;
        let restart = t.str_at(pod, "restartPolicy");
        if restart.is_some_and(|p| p != "Never") {
            self.warn(format!(
                "{at}: no podFailurePolicy added: it needs restartPolicy Never, and the pod \
                 template says {}",
                restart.unwrap_or_default()
            ));
            return;
        }
        let rule = |action: &str, codes: &[i64]| {
            Y::map([
                ("action", Y::s(action)),
                (
                    "onExitCodes",
                    Y::map([
                        ("containerName", Y::s(CONTAINER_NAME)),
                        ("operator", Y::s("In")),
                        (
                            "values",
                            Y::Flow(Box::new(Y::Seq(codes.iter().map(|c| Y::Int(*c)).collect()))),
                        ),
                    ]),
                ),
            ])
        };
        // Exit 6 may pass, so the pod is retried; but a rule that does not count it must
        // have an end, or a registry that stays unreachable recreates pods for ever.
        let deadline = t
            .get(job, "activeDeadlineSeconds")
            .and_then(|v| t.as_i64(v))
            .filter(|n| *n > 0);
        // The API server's default backoffLimit is 6.
        let backoff = t
            .get(job, "backoffLimit")
            .and_then(|v| t.as_i64(v))
            .unwrap_or(6);
        let (unreachable, why) = match (&deadline, self.options.ignore_unreachable_without_deadline)
        {
            (Some(seconds), _) => (
                "Ignore",
                format!(
                    "Ignore on 6 (unreachable, not counted against backoffLimit): the Job's activeDeadlineSeconds: {seconds} ends the retries"
                ),
            ),
            (None, true) => (
                "Ignore",
                "Ignore on 6 (unreachable, not counted against backoffLimit), as --ignore-unreachable-without-deadline asks: the Job has no activeDeadlineSeconds, so it recreates a pod for as long as the registry stays unreachable".to_string(),
            ),
            (None, false) => (
                "Count",
                format!(
                    "Count on 6 (unreachable, counted against backoffLimit {backoff}, so the Job fails after its retries): the Job has no activeDeadlineSeconds to bound an Ignore rule (set one to retry without counting)"
                ),
            ),
        };
        let rules = vec![
            rule("FailJob", &FAIL_JOB_EXIT_CODES),
            rule(unreachable, &IGNORE_EXIT_CODES),
            rule("Count", &COUNT_EXIT_CODES),
        ];
        let result = (|| -> Result<Vec<Edit>, &'static str> {
            let mut edits = Vec::new();
            match t.own_entry(job, "podFailurePolicy") {
                None => edits.push(self.splicer.insert_key(
                    job,
                    &["template"],
                    "podFailurePolicy",
                    &Y::map([("rules", Y::Seq(rules))]),
                )?),
                Some((_, policy)) => {
                    let existing = t
                        .get(policy, "rules")
                        .ok_or("podFailurePolicy has no rules")?;
                    let ours = t.items(existing).iter().any(|&r| {
                        t.get(r, "onExitCodes")
                            .and_then(|o| t.str_at(o, "containerName"))
                            == Some(CONTAINER_NAME)
                    });
                    if ours {
                        return Ok(edits);
                    }
                    if t.resolve(existing) != existing || t.items(existing).is_empty() {
                        return Err("its rules are not a plain list");
                    }
                    edits.push(self.splicer.prepend(existing, &rules)?);
                }
            }
            if restart.is_none() {
                edits.push(self.splicer.insert_key(
                    pod,
                    &["containers"],
                    "restartPolicy",
                    &Y::s("Never"),
                )?);
            }
            Ok(edits)
        })();
        match result {
            Ok(edits) if edits.is_empty() => self.notes.push(format!(
                "{}: {at}: podFailurePolicy kept: it has rules for container {CONTAINER_NAME} already",
                self.source
            )),
            Ok(edits) => {
                self.edits.extend(edits);
                self.notes.push(format!(
                    "{}: {at}: podFailurePolicy rules for container {CONTAINER_NAME}: FailJob on 3, 4, 5, 7 (permanent); {why}; Count on 8 (cannot be checked from the pod: retrying will not change it, but the node may pull it, so backoffLimit decides)",
                    self.source
                ));
            }
            Err(why) => self.warn(format!("{at}: no podFailurePolicy added ({why})")),
        }
    }

    fn restart_policy_warning(&mut self, spot: &Spot, at: &str) {
        let t = self.tree;
        let kind = self.manifests.pod_specs[spot.spec].origin.kind.clone();
        let written = spot.pod.and_then(|p| t.str_at(p, "restartPolicy"));
        let description = match spot.operator_policy.as_deref() {
            // Kubeflow's ExitCode: the pods get Never, and the operator restarts only on
            // retryable exit codes (128 and up); pullcheck's are 3 to 7.
            Some("Never" | "ExitCode") => return,
            Some(p) => {
                format!("{p} (the replica's restartPolicy, which the operator sets on the pods)")
            }
            // Kubeflow's training operator (kubeflow.org/v1) overwrites the template's
            // restartPolicy with the replica's, which defaults to OnFailure.
            None if spot.default_policy == Some("OnFailure") => {
                "OnFailure (the training operator's default for a replica without restartPolicy, \
                 which overrides the template's)"
                    .to_string()
            }
            None => match written.or(spot.default_policy) {
                Some("Never") => return,
                Some(p) => p.to_string(),
                None => "not set (Always)".to_string(),
            },
        };
        let advice = if ALWAYS_ONLY_KINDS.contains(&kind.as_str()) {
            format!(
                "; a {kind} allows only Always, so its pods wait in Init:CrashLoopBackOff with \
                 pullcheck's verdict in `kubectl describe pod`"
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
fn is_guaranteed(t: &Tree, containers: &[NodeId]) -> bool {
    let quantity = |n: NodeId| t.scalar(n).map(|s| s.trim().to_string());
    let mut any = false;
    for &c in containers {
        any = true;
        let resources = t.get(c, "resources");
        let limits = resources.and_then(|r| t.get(r, "limits"));
        let requests = resources.and_then(|r| t.get(r, "requests"));
        for resource in ["cpu", "memory"] {
            let Some(limit) = limits.and_then(|l| t.get(l, resource)) else {
                return false;
            };
            if let Some(request) = requests.and_then(|r| t.get(r, resource))
                && quantity(request) != quantity(limit)
            {
                return false;
            }
        }
    }
    any
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

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
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
        let guaranteed = map([("cpu", CPU_LIMIT), ("memory", MEMORY_LIMIT)]);
        let burstable = map([("cpu", CPU_REQUEST), ("memory", MEMORY_REQUEST)]);
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

    /// `inject` as it was: the whole input read, then edited.
    fn read_whole(input: &str, options: &InjectOptions) -> Result<(String, Vec<String>), String> {
        let (ca_files, route) = validate_options(options).map_err(|e| e.0)?;
        let done = whole(input, "t", options, &ca_files, &route).map_err(|e| e.0)?;
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
            assert_eq!(streamed.map_err(|e| e.0), read_whole, "{input}");
        }
        // Once its own output, a second inject changes nothing.
        let twice = run(&cases[0]).output;
        assert_eq!(run(&twice).output, twice);
    }
}
