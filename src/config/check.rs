//! `pullcheck check`'s flags, environment and files become one validated [`Config`] before any
//! request is sent, every problem collected and reported at once (exit 2).
//!
//! [`Config::from_args`] reads the flags one concern at a time, each a small builder: the
//! limits, the images (and the containers' facts), the node's platform, the credentials, the
//! node, the routes, and the output.

use super::ConfigErrors;
use super::values::{images_file_lines, split_list};
use crate::check::Options;

use crate::cli::{CheckArgs, OutputFormat, PlatformMatch};
use crate::container_start::ContainerFacts;
use crate::credentials::{NodeCredentials, cloud, plugin};
use crate::input::{LimitedReadError, read_input, read_limited_file};
use crate::keyring::{self, Keyring};
use crate::manifests;
use crate::node::{self, NodeOptions};
use crate::platform::{MatchMode, Platform};
use crate::pull_policy::{self, PullPolicy};
use crate::reference::{DOCKER_HUB, Reference};
use crate::registry::{ClientOptions, PlatformPolicy};
use crate::route::certs::CertsDirs;
use crate::route::conf::RegistriesConf;
use crate::route::hosts::HostsDirs;
use crate::route::{RouteFlags, Router};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::collections::HashSet;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The Kubernetes path of the termination message, used when it exists.
pub(crate) const DEFAULT_TERMINATION_LOG: &str = "/dev/termination-log";

/// The most images one run accepts.
const MAX_IMAGES: usize = 10_000;

/// A validated run of `pullcheck check`.
#[derive(Debug)]
pub struct Config {
    /// The images, from every source, in order, without exact duplicates.
    pub images: Vec<String>,
    /// How to check them.
    pub(crate) options: Options,
    /// The stdout format.
    pub(crate) output: OutputFormat,
    /// Where the termination message goes, if anywhere.
    pub(crate) termination_log: Option<PathBuf>,
    /// The most bytes the termination message may hold: the kubelet's share for the pod's
    /// containers ([`crate::report::termination_limit`]).
    pub(crate) termination_max: usize,
    /// Print problems only.
    pub(crate) quiet: bool,
    /// Notes for stderr that do not stop the run (a credential helper that failed).
    pub(crate) warnings: Vec<String>,
    /// Whether a look-up of the node's images was asked for (`--node`, `PULLCHECK_NODE_NAME`,
    /// or `--if-not-present` images). When it was not, a missing node name is no news: the
    /// `IfNotPresent` images of a `--pod-spec` are checked at their registries without a word.
    pub(crate) node_lookup_asked: bool,
    /// Where the run is (a pod, a workstation), for the report's words.
    pub(crate) place: crate::report::Place,
}

/// What the builders found wrong (each error stops the run) or worth saying (warnings), in the
/// order they were found.
#[derive(Debug, Default)]
struct Problems {
    errors: Vec<String>,
    warnings: Vec<String>,
}

impl Problems {
    fn error(&mut self, e: impl Into<String>) {
        self.errors.push(e.into());
    }

    fn warn(&mut self, w: impl Into<String>) {
        self.warnings.push(w.into());
    }
}

impl Config {
    /// Validates the flags and reads the files they name. `stdin` serves `-`.
    pub fn from_args(args: CheckArgs, stdin: &mut dyn Read) -> Result<Config, ConfigErrors> {
        // The run's clock: credential helpers asked here count against --timeout.
        let started = Instant::now();
        let mut problems = Problems::default();

        let limits = Limits::from_args(&args, &mut problems);
        let images = Images::from_args(&args, stdin, &mut problems);
        let plain_http = plain_http_hosts(&args, &mut problems);
        let platform = platform_policy(&args, &mut problems);
        let ca_certs = ca_certs(&args, &mut problems);
        let references: Vec<Reference> = images
            .images
            .iter()
            .filter_map(|i| Reference::parse(i).ok())
            .collect();
        // The manifests' notes come after the platform's warning and before the credentials',
        // as the run meets them.
        problems.warnings.extend(images.notes);
        let credentials =
            Credentials::from_args(&args, &references, &ca_certs, limits.timeout, &mut problems);
        let mut errors = std::mem::take(&mut problems.errors);
        // Tests only, and only in a build with the `test-hooks` feature (src/test_hooks.rs).
        let resolve = crate::test_hooks::pinned_hosts(&mut errors);
        problems.errors = errors;
        let node = node_options(&args, &references, &mut problems);
        let node_lookup_asked = node.name.is_some() || !args.if_not_present.is_empty();
        let router = routes(&args, &plain_http, &references, &mut problems);
        let output = Output::from_args(&args, images.listed_containers);

        if !problems.errors.is_empty() {
            return Err(ConfigErrors(problems.errors));
        }
        Ok(Config {
            images: images.images,
            options: Options {
                timeout: limits.timeout,
                concurrency: limits.concurrency,
                client: ClientOptions {
                    plain_http,
                    ca_certs,
                    platform,
                    resolve,
                },
                keyring: credentials.keyring,
                allow_unauthenticated: credentials.allow_unauthenticated,
                containers: images.containers,
                start_check: args.start_check.into(),
                events: crate::progress::Events::for_cli(args.verbose),
                if_not_present: images.if_not_present,
                node,
                router: std::sync::Arc::new(router),
                on_unreachable: args.on_unreachable.into(),
                on_unverifiable: args.on_unverifiable.into(),
                network: args.network.into(),
                started: Some(started),
                node_credentials: credentials.node,
            },
            output: args.output,
            warnings: problems.warnings,
            termination_log: output.termination_log,
            termination_max: output.termination_max,
            quiet: args.quiet,
            node_lookup_asked,
            place: crate::report::Place::of(
                std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
                args.network == crate::cli::Network::Pod,
            ),
        })
    }
}

/// `--timeout` and `--concurrency`.
struct Limits {
    timeout: Duration,
    concurrency: usize,
}

impl Limits {
    fn from_args(args: &CheckArgs, problems: &mut Problems) -> Limits {
        let timeout = match &args.timeout.value {
            Ok(d) => *d,
            Err(e) => {
                problems.error(format!("--timeout {:?}: {e}", args.timeout.given));
                Duration::from_secs(60)
            }
        };
        let concurrency = match &args.concurrency.value {
            Ok(n) => *n,
            Err(e) => {
                problems.error(format!("--concurrency {:?}: {e}", args.concurrency.given));
                16
            }
        };
        Limits {
            timeout,
            concurrency,
        }
    }
}

/// The images to check, each with its pull policy, and the containers' facts for the start
/// check: from every source, in the documented order.
struct Images {
    /// Every image, in order, without exact duplicates.
    images: Vec<String>,
    /// Those only ever given as `IfNotPresent`.
    if_not_present: Vec<String>,
    /// The containers' facts, from `--pod-spec` and `--containers`.
    containers: Vec<ContainerFacts>,
    /// How many containers `--containers` lists, when given.
    listed_containers: Option<usize>,
    /// What the manifests' reader has to say (documents left out, kubectl's reading).
    notes: Vec<String>,
}

impl Images {
    fn from_args(args: &CheckArgs, stdin: &mut dyn Read, problems: &mut Problems) -> Images {
        let stdin_users = [&args.images_file, &args.pod_spec]
            .iter()
            .filter(|p| p.as_deref() == Some(Path::new("-")))
            .count();
        if stdin_users > 1 {
            problems.error("--images-file and --pod-spec cannot both read stdin (-)");
        }
        let mut found = Images {
            images: args.images.clone(),
            if_not_present: Vec::new(),
            containers: Vec::new(),
            listed_containers: None,
            notes: Vec::new(),
        };
        if let Some(list) = &args.images_list {
            if let Some(text) = utf8(list, "--images / PULLCHECK_IMAGES", problems) {
                found.images.extend(split_list(text));
            }
        }
        // `IfNotPresent` images: also checked, and looked up on the node first. Where in
        // `images` they are; every other image is `Always`.
        let mut if_not_present_at = HashSet::new();
        for list in &args.if_not_present {
            let source = "--if-not-present / PULLCHECK_IMAGES_IF_NOT_PRESENT";
            if let Some(text) = utf8(list, source, problems) {
                for image in split_list(text) {
                    if_not_present_at.insert(found.images.len());
                    found.images.push(image);
                }
            }
        }
        if let Some(path) = &args.images_file {
            match read_input(path, stdin) {
                Ok(text) => found.images.extend(images_file_lines(&text)),
                Err(e) => problems.error(format!("--images-file {}: {e}", path.display())),
            }
        }
        if let Some(path) = &args.pod_spec {
            found.read_pod_spec(path, stdin, &mut if_not_present_at, problems);
        }
        found.read_containers(args, problems);
        let any_source = !args.images.is_empty()
            || args.containers.is_some()
            || args.images_list.is_some()
            || !args.if_not_present.is_empty()
            || args.images_file.is_some()
            || args.pod_spec.is_some();
        if !any_source {
            problems.error(
                "no images to check: give IMAGE arguments, --images (PULLCHECK_IMAGES), --if-not-present, --images-file, --pod-spec or --containers (PULLCHECK_CONTAINERS)",
            );
        }
        // Every image is `Always` unless it is only ever given as `IfNotPresent`.
        let given = std::mem::take(&mut found.images);
        let to_check = pull_policy::to_check(given.into_iter().enumerate().map(|(at, i)| {
            let policy = if if_not_present_at.contains(&at) {
                PullPolicy::IfNotPresent
            } else {
                PullPolicy::Always
            };
            (i, policy)
        }));
        found.images = to_check.images;
        found.if_not_present = to_check.if_not_present;
        if found.images.len() > MAX_IMAGES {
            problems.error(format!(
                "{} images given; at most {MAX_IMAGES} are checked in one run",
                found.images.len()
            ));
        }
        found
    }

    /// `--pod-spec`: each image with its pull policy, as `inject --node-images` passes them;
    /// each container (not an image volume) with its facts.
    fn read_pod_spec(
        &mut self,
        path: &Path,
        stdin: &mut dyn Read,
        if_not_present_at: &mut HashSet<usize>,
        problems: &mut Problems,
    ) {
        let source = if path == Path::new("-") {
            "stdin".to_string()
        } else {
            path.display().to_string()
        };
        let text = match read_input(path, stdin) {
            Ok(text) => text,
            Err(e) => return problems.error(format!("--pod-spec {source}: {e}")),
        };
        let found = match manifests::read(&text, &source) {
            Ok(found) => found,
            Err(e) => return problems.error(format!("--pod-spec {e}")),
        };
        self.notes.extend(found.notes.iter().cloned());
        if found.pod_specs.is_empty() {
            self.notes.push(format!(
                "--pod-spec {source}: no pod spec found, so no images from it"
            ));
        }
        for c in found.pod_specs.iter().flat_map(|p| p.checked()) {
            let written = c.image_pull_policy.as_deref();
            match PullPolicy::resolve(&c.image, written) {
                PullPolicy::Never => continue,
                PullPolicy::IfNotPresent => {
                    if_not_present_at.insert(self.images.len());
                }
                PullPolicy::Always => {}
            }
            self.images.push(c.image.clone());
            self.containers.extend(c.start_facts());
        }
    }

    /// `--containers`: the facts of the pod's containers, and their images.
    fn read_containers(&mut self, args: &CheckArgs, problems: &mut Problems) {
        let Some(json) = &args.containers else {
            return;
        };
        let source = "--containers / PULLCHECK_CONTAINERS";
        let Some(text) = utf8(json, source, problems) else {
            return;
        };
        let list = match ContainerFacts::parse_list(text) {
            Ok(list) => list,
            Err(e) => return problems.error(format!("{source}: {e}")),
        };
        self.listed_containers = Some(list.len());
        // The containers' images are checked too (they are the pod's images), but they carry no
        // pull policy: one already given keeps the policy it was given with (`inject` lists
        // each container's image in PULLCHECK_IMAGES or PULLCHECK_IMAGES_IF_NOT_PRESENT), and
        // only an image given nowhere else is added, as `Always`.
        let key = |image: &str| {
            Reference::parse(image).map_or_else(|_| image.to_string(), |r| r.to_string())
        };
        let mut given: HashSet<String> = self.images.iter().map(|i| key(i)).collect();
        for c in &list {
            if given.insert(key(&c.image)) {
                self.images.push(c.image.clone());
            }
        }
        self.containers.extend(list);
    }
}

/// A value taken as bytes, so that a bad byte is reported here, naming its source.
fn utf8<'a>(value: &'a std::ffi::OsStr, source: &str, problems: &mut Problems) -> Option<&'a str> {
    match std::str::from_utf8(value.as_bytes()) {
        Ok(text) => Some(text),
        Err(e) => {
            problems.error(format!(
                "{source}: not UTF-8 text (invalid byte at offset {})",
                e.valid_up_to()
            ));
            None
        }
    }
}

/// `--plain-http`: hosts, without a scheme or path.
fn plain_http_hosts(args: &CheckArgs, problems: &mut Problems) -> Vec<String> {
    let hosts = args
        .plain_http
        .iter()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect::<Vec<_>>();
    for host in &hosts {
        if host.contains('/') || host.contains(char::is_whitespace) {
            problems.error(format!(
                "--plain-http {host:?}: expected HOST or HOST:PORT, without a scheme or path"
            ));
        }
    }
    hosts
}

/// `--platform`, `--platform-match` and `--platform-check`: the node's platform and how an
/// index must match it.
fn platform_policy(args: &CheckArgs, problems: &mut Problems) -> PlatformPolicy {
    let want = match args.platform.as_deref().map(str::trim) {
        None | Some("") => Some(Platform::host()),
        Some("any") => None,
        Some(spec) => match Platform::parse(spec) {
            Ok(p) => Some(p),
            Err(e) => {
                problems.error(format!("--platform: {e}"));
                None
            }
        },
    };
    // An unknown variant of a known architecture is a typo far more often than a platform:
    // refuse it, unless strict matching says the user means exactly that string.
    if let Some((p, variant)) = want.as_ref().and_then(|p| Some((p, p.unknown_variant()?))) {
        let known = crate::platform::known_variants(&p.architecture)
            .unwrap_or_default()
            .join(", ");
        let text = format!(
            "--platform {p}: {variant:?} is not a known variant of {} (known: {known})",
            p.architecture
        );
        match args.platform_match {
            PlatformMatch::Strict => problems.warn(format!(
                "{text}; with --platform-match strict only index entries for exactly {p} match"
            )),
            PlatformMatch::Lenient => problems.error(format!(
                "{text}; use --platform-match strict if you mean it"
            )),
        }
    }
    PlatformPolicy {
        want,
        mode: match args.platform_match {
            PlatformMatch::Lenient => MatchMode::Lenient,
            PlatformMatch::Strict => MatchMode::Strict,
        },
        check: args.platform_check.into(),
    }
}

/// `--ca-file`: the certificates trusted besides the built-in roots.
fn ca_certs(args: &CheckArgs, problems: &mut Problems) -> Vec<CertificateDer<'static>> {
    let mut certs = Vec::new();
    for path in &args.ca_file {
        match read_certs(path) {
            Ok(read) => certs.extend(read),
            Err(e) => problems.error(format!("--ca-file {}: {e}", path.display())),
        }
    }
    certs
}

/// Who the run is to the registries: the pull secrets and docker configs (with `--creds`
/// first), the node's credential sources, and the registries allowed without any.
struct Credentials {
    keyring: Keyring,
    node: NodeCredentials,
    allow_unauthenticated: Vec<String>,
}

impl Credentials {
    fn from_args(
        args: &CheckArgs,
        references: &[Reference],
        ca_certs: &[CertificateDer<'static>],
        timeout: Duration,
        problems: &mut Problems,
    ) -> Credentials {
        let workstation = keyring::workstation_configs();
        let mut keyring =
            match Keyring::load(&args.docker_config, Some(&args.secrets_dir), &workstation) {
                Ok(k) => k,
                Err(errs) => {
                    problems
                        .errors
                        .extend(errs.into_iter().map(|e| e.to_string()));
                    Keyring::default()
                }
            };
        let wanted = || {
            references
                .iter()
                .map(|r| (r.registry.as_str(), r.repository.as_str()))
        };
        // Helpers run before the check, on its clock: at most a quarter of --timeout in all.
        problems.warnings.extend(
            keyring.resolve_helpers(wanted(), timeout.min(crate::deadline::MAX_TIMEOUT) / 4),
        );
        if let Some(creds) = &args.creds {
            match creds_for(creds, references) {
                Ok(Some((registry, user, password))) => {
                    keyring.add_first(registry, user, keyring::Secret::new(password), "--creds");
                }
                Ok(None) => {}
                Err(e) => problems.error(format!("--creds: {e}")),
            }
        }
        problems.warnings.extend(keyring.source_warnings(wanted()));
        let node = node_credentials(args, ca_certs, references, &mut problems.errors);
        let allow_unauthenticated = args
            .allow_unauthenticated
            .iter()
            .map(|h| h.trim())
            .filter(|h| !h.is_empty())
            .map(|h| match h {
                "index.docker.io" | "registry-1.docker.io" => DOCKER_HUB.to_string(),
                h => h.to_string(),
            })
            .collect();
        Credentials {
            keyring,
            node,
            allow_unauthenticated,
        }
    }
}

/// `--node`, `--node-status-max-images` and `--image-pull-credentials-verification`: where the
/// node's image list comes from, and what it proves.
fn node_options(
    args: &CheckArgs,
    references: &[Reference],
    problems: &mut Problems,
) -> NodeOptions {
    let name = args
        .node
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    if let Some(name) = name {
        if !node::is_node_name(name) {
            problems.error(format!(
                "--node {name:?}: expected a node name (lower-case letters, digits, '-' and '.', as spec.nodeName gives)"
            ));
        }
    }
    let max_images = match &args.node_status_max_images.value {
        Ok(max) => *max,
        Err(e) => {
            problems.error(format!(
                "--node-status-max-images {:?}: {e}",
                args.node_status_max_images.given
            ));
            None
        }
    };
    NodeOptions {
        name: name.map(str::to_string),
        max_images,
        service_account_dir: args.service_account_dir.clone(),
        api_host: std::env::var("KUBERNETES_SERVICE_HOST").ok(),
        api_port: std::env::var("KUBERNETES_SERVICE_PORT").ok(),
        wanted: None,
        verification: args.image_pull_credentials_verification.into(),
    }
    .for_images(references)
}

/// The paths of a list flag, without the empty ones (a variable set to nothing, `a::b`).
fn given(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|p| !p.as_os_str().is_empty())
        .cloned()
        .collect()
}

/// A path flag, unless it is empty (a variable set to nothing).
fn given_one(path: Option<&PathBuf>) -> Option<&PathBuf> {
    path.filter(|p| !p.as_os_str().is_empty())
}

/// Which route flags `args` gives (an empty value is none).
fn route_flags(args: &CheckArgs) -> RouteFlags {
    RouteFlags {
        hosts_dir: !given(&args.hosts_dir).is_empty(),
        registries_conf: given_one(args.registries_conf.as_ref()).is_some(),
        registries_conf_dir: given_one(args.registries_conf_dir.as_ref()).is_some(),
        certs_dir: !given(&args.certs_dir).is_empty(),
    }
}

/// The node's registry configuration (`--hosts-dir`, `--registries-conf`,
/// `--registries-conf-dir`, `--certs-dir`), read before any request so that a file the runtime
/// could not use either stops the run here (exit 2), naming it. (A host's certs.d folder is
/// read when a route reaches it: containers/image fails that host alone.)
fn routes(
    args: &CheckArgs,
    plain_http: &[String],
    references: &[Reference],
    problems: &mut Problems,
) -> Router {
    let mut router = Router {
        plain_http: plain_http.to_vec(),
        ..Router::default()
    };
    let hosts_dirs = given(&args.hosts_dir);
    if let Some(conflict) = route_flags(args).conflict() {
        problems.error(conflict);
    }
    if !hosts_dirs.is_empty() {
        for dir in &hosts_dirs {
            if !dir.is_dir() {
                problems.warn(format!(
                    "--hosts-dir {}: not a directory; containerd skips it, and so does pullcheck",
                    dir.display()
                ));
            }
        }
        let hosts = HostsDirs::new(hosts_dirs);
        let mut registries: Vec<&str> = references.iter().map(|r| r.registry.as_str()).collect();
        registries.sort_unstable();
        registries.dedup();
        for registry in registries {
            match hosts.load(registry) {
                Ok(w) => problems
                    .warnings
                    .extend(w.into_iter().map(|w| format!("--hosts-dir: {w}"))),
                Err(e) => problems.error(format!("--hosts-dir: {e}")),
            }
        }
        router.hosts = Some(hosts);
    }
    let conf = given_one(args.registries_conf.as_ref());
    match (conf, given_one(args.registries_conf_dir.as_ref())) {
        (Some(path), Some(dir)) if path.is_dir() => problems.error(format!(
            "--registries-conf {} is a folder, which names its own drop-ins: with \
             --registries-conf-dir {}, give the registries.conf file",
            path.display(),
            dir.display()
        )),
        (conf, Some(dir)) => match RegistriesConf::load_node(conf.map(PathBuf::as_path), dir) {
            Ok(c) => router.conf = Some(c),
            // The error names the file or folder.
            Err(e) => problems.error(format!("--registries-conf {e}")),
        },
        (Some(path), None) => match RegistriesConf::load(path) {
            Ok(c) => router.conf = Some(c),
            Err(e) => problems.error(format!("--registries-conf {e}")),
        },
        (None, None) => {}
    }
    let certs = given(&args.certs_dir);
    if !certs.is_empty() {
        router.certs = Some(CertsDirs::new(certs));
    }
    router
}

/// Where the termination message goes, and how much of it the kubelet keeps.
struct Output {
    termination_log: Option<PathBuf>,
    termination_max: usize,
}

impl Output {
    fn from_args(args: &CheckArgs, listed_containers: Option<usize>) -> Output {
        let termination_log = match &args.termination_log {
            Some(p) if p.is_empty() => None,
            Some(p) => Some(PathBuf::from(p)),
            None => {
                let default = Path::new(DEFAULT_TERMINATION_LOG);
                default.exists().then(|| default.to_path_buf())
            }
        };
        // The pod's containers: as given, else those PULLCHECK_CONTAINERS lists and pullcheck.
        let pod_containers = args
            .pod_containers
            .map(|n| n as usize)
            .or(listed_containers.map(|n| n.saturating_add(1)));
        Output {
            termination_log,
            termination_max: crate::report::termination_limit(pod_containers),
        }
    }
}

/// `--creds USER:PASS`: one credential for the one registry of the images, tried first: that
/// registry, the user and the password (`None`: no image). Errors never repeat the value.
fn creds_for<'c, 'r>(
    creds: &'c keyring::Secret,
    references: &'r [Reference],
) -> Result<Option<(&'r str, &'c str, &'c str)>, CredsError> {
    let (user, password) = creds
        .expose()
        .split_once(':')
        .filter(|(u, p)| !u.is_empty() && !p.is_empty())
        .ok_or(CredsError::NotUserPass)?;
    let mut registries: Vec<&str> = references.iter().map(|r| r.registry.as_str()).collect();
    registries.sort_unstable();
    registries.dedup();
    match registries.as_slice() {
        [] => Ok(None),
        [registry] => Ok(Some((registry, user, password))),
        several => Err(CredsError::SeveralRegistries(
            several.iter().map(|r| r.to_string()).collect(),
        )),
    }
}

/// Why `--creds` could not be used; never with the value.
#[derive(Debug, thiserror::Error)]
enum CredsError {
    #[error(
        "expected USER:PASS, a user name and a password separated by ':' (the value is not shown)"
    )]
    NotUserPass,
    /// The images' registries, more than one.
    #[error(
        "the images are on {} registries ({}), and --creds gives one credential to one registry: check them in separate runs, or use --docker-config",
        .0.len(),
        .0.join(", ")
    )]
    SeveralRegistries(Vec<String>),
}

/// The node's credential sources: the built-in cloud providers (`--cloud-credentials`) and
/// the kubelet's exec plugins (`--image-credential-provider-config` and `-bin-dir`); a plugin's
/// answer keeps only the entries of `references`.
fn node_credentials(
    args: &CheckArgs,
    ca_certs: &[CertificateDer<'static>],
    references: &[Reference],
    errors: &mut Vec<String>,
) -> NodeCredentials {
    let mode = cloud::Mode::from(args.cloud_credentials);
    let cloud = match mode {
        cloud::Mode::Off => None,
        cloud::Mode::Auto | cloud::Mode::Required => {
            Some(cloud::Cloud::new(cloud::Env::from_process(), ca_certs))
        }
    };
    let plugins = match (
        &args.image_credential_provider_config,
        &args.image_credential_provider_bin_dir,
    ) {
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => {
            errors.push("--image-credential-provider-config and --image-credential-provider-bin-dir go together, as on the kubelet".to_string());
            None
        }
        (Some(file), Some(dir)) => {
            let shown = file.display();
            let parsed = match read_limited_file(file, 1024 * 1024) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => plugin::CredentialProviderConfig::parse(&text),
                    Err(_) => Err(vec!["not UTF-8 text".to_string()]),
                },
                Err(LimitedReadError::TooLarge) => Err(vec!["larger than 1 MiB".to_string()]),
                Err(LimitedReadError::Io(e)) => Err(vec![e.to_string()]),
            };
            let built = parsed.and_then(|c| {
                plugin::Plugins::new(c, dir.clone(), args.credential_provider_token_dir.clone())
                    .map(|p| p.for_images(references))
            });
            match built {
                Ok(p) => Some(p),
                Err(es) => {
                    errors.extend(
                        es.into_iter()
                            .map(|e| format!("--image-credential-provider-config {shown}: {e}")),
                    );
                    None
                }
            }
        }
    };
    NodeCredentials::new(cloud, plugins).required(mode == cloud::Mode::Required)
}

/// The largest CA file read (a full system bundle is about 200 KiB).
const MAX_CA_BYTES: u64 = 4 * 1024 * 1024;

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, CaFileError> {
    // Read through a limit: a device (`/dev/zero`) reports no size and never ends.
    let bytes = read_limited_file(path, MAX_CA_BYTES).map_err(|e| match e {
        LimitedReadError::TooLarge => CaFileError::TooLarge,
        LimitedReadError::Io(e) => CaFileError::Read(e),
    })?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(CaFileError::Pem)?;
    if certs.is_empty() {
        return Err(CaFileError::NoCertificate);
    }
    Ok(certs)
}

/// Why a `--ca-file` could not be used.
#[derive(Debug, thiserror::Error)]
enum CaFileError {
    #[error("larger than {} MiB", MAX_CA_BYTES >> 20)]
    TooLarge,
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    #[error("not a valid PEM file: {0}")]
    Pem(#[source] rustls_pki_types::pem::Error),
    #[error("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")]
    NoCertificate,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::parse_duration;
    use clap::Parser;

    fn args(argv: &[&str]) -> CheckArgs {
        let mut full = vec![
            "pullcheck",
            "check",
            "--secrets-dir",
            "/nonexistent/secrets",
        ];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full).unwrap().command {
            Command::Check(a) => a,
            _ => unreachable!("parsed `check`"),
        }
    }

    fn config(argv: &[&str], stdin: &str) -> Result<Config, ConfigErrors> {
        Config::from_args(args(argv), &mut stdin.as_bytes())
    }

    #[test]
    fn durations() {
        let cases: &[(&str, Option<Duration>)] = &[
            ("500ms", Some(Duration::from_millis(500))),
            ("30s", Some(Duration::from_secs(30))),
            ("2m", Some(Duration::from_secs(120))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("0s", None),
            ("-1s", None),
            ("10x", None),
            ("30", None),
            ("24h", Some(Duration::from_secs(86_400))),
            ("25h", None),
            ("18446744073709551615s", None),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_duration(input).ok(), *want, "{input:?}");
        }
    }

    #[test]
    fn route_flags_of_two_runtimes_are_refused_and_a_nodes_files_may_be_absent() {
        let cases: &[(&[&str], Option<&str>)] = &[
            (&["--hosts-dir", "/h"], None),
            (
                &["--registries-conf", "/r", "--registries-conf-dir", "/d"],
                None,
            ),
            (&["--certs-dir", "/c:/d"], None),
            (
                &["--hosts-dir", "/h", "--certs-dir", "/c"],
                Some("--hosts-dir (containerd) and --certs-dir (CRI-O, Podman)"),
            ),
            (
                &["--hosts-dir", "/h", "--registries-conf", "/r"],
                Some("--hosts-dir (containerd) and --registries-conf (CRI-O, Podman)"),
            ),
            (
                &["--hosts-dir", "/h", "--registries-conf-dir", "/d"],
                Some("and --registries-conf-dir (CRI-O, Podman)"),
            ),
        ];
        for (argv, want) in cases {
            let got = route_flags(&args(argv)).conflict();
            match want {
                None => assert!(got.is_none(), "{argv:?}: {got:?}"),
                Some(w) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(w)),
                    "{argv:?}: {got:?}"
                ),
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        let absent = format!("{d}/registries.conf");
        let dropins = format!("{d}/registries.conf.d");
        let c = config(
            &[
                "--registries-conf",
                &absent,
                "--registries-conf-dir",
                &dropins,
                "--certs-dir",
                &format!("{d}/certs.d"),
                "a.corp/x:1",
            ],
            "",
        )
        .unwrap();
        assert!(c.options.router.configured());
        let e = config(
            &[
                "--registries-conf",
                &d,
                "--registries-conf-dir",
                &dropins,
                "a.corp/x:1",
            ],
            "",
        )
        .unwrap_err();
        assert!(
            e.0.iter()
                .any(|m| m.contains("is a folder, which names its own drop-ins")),
            "{e:?}"
        );
    }

    #[test]
    fn images_from_every_source_in_order_without_duplicates() {
        let c = config(
            &["a", "b", "--images", " c,,a \n d\t", "--images-file", "-"],
            "# comment\n\ne  # trailing\nb\n",
        )
        .unwrap();
        assert_eq!(c.images, ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn pod_spec_from_stdin() {
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n  - {name: pullcheck, image: pullcheck:1}\n  - {name: i, image: init:1}\n  containers:\n  - {name: c, image: app:1}\n  - {name: n, image: local:1, imagePullPolicy: Never}\n";
        let c = config(&["--pod-spec", "-"], pod).unwrap();
        assert_eq!(c.images, ["init:1", "app:1"]);
    }

    #[test]
    fn pod_spec_images_keep_their_pull_policy_and_containers_their_facts() {
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  securityContext: {runAsNonRoot: true}\n  \
                   initContainers:\n  - {name: i, image: 'init:1', imagePullPolicy: Always, command: [sh]}\n  containers:\n  \
                   - {name: c, image: 'app:1'}\n  - {name: l, image: tool}\n  - {name: n, image: 'local:1', imagePullPolicy: Never}\n  \
                   volumes: [{name: v, image: {reference: 'model:1'}}]\n";
        let c = config(&["--pod-spec", "-"], pod).unwrap();
        assert_eq!(c.images, ["init:1", "app:1", "tool", "model:1"]);
        // No tag is `latest`: Always. A tag: IfNotPresent.
        assert_eq!(c.options.if_not_present, ["app:1", "model:1"]);
        let names: Vec<&str> = c
            .options
            .containers
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["i", "c", "l"]);
        assert!(c.options.containers[0].has_command);
        assert!(
            c.options
                .containers
                .iter()
                .all(|f| f.run_as_non_root == Some(true))
        );
        // An image of --containers given as IfNotPresent elsewhere stays IfNotPresent.
        let json = r#"[{"name":"a","image":"docker.io/library/app:1","command":false,"args":false},{"name":"b","image":"other:2","command":true,"args":false}]"#;
        let c = config(&["--if-not-present", "app:1", "--containers", json], "").unwrap();
        assert_eq!(c.images, ["app:1", "other:2"]);
        assert_eq!(c.options.if_not_present, ["app:1"]);
    }

    #[test]
    fn all_errors_at_once() {
        let e = config(
            &[
                "--timeout",
                "-1s",
                "--concurrency",
                "0",
                "--images-file",
                "-",
                "--pod-spec",
                "-",
                "--ca-file",
                "/nonexistent.pem",
                "--plain-http",
                "http://x",
            ],
            "",
        )
        .unwrap_err();
        let text = e.to_string();
        for want in [
            "--timeout",
            "--concurrency",
            "cannot both read stdin",
            "--ca-file /nonexistent.pem",
            "--plain-http",
        ] {
            assert!(text.contains(want), "missing {want}: {text}");
        }
    }

    #[test]
    fn no_source_is_a_usage_error_but_an_empty_source_is_not() {
        assert!(config(&[], "").is_err());
        let c = config(&["--images", "  "], "").unwrap();
        assert!(c.images.is_empty());
    }

    #[test]
    fn containers_bring_their_images_and_bad_json_is_a_usage_error() {
        let json = r#"[{"name":"a","image":"app:1","command":false,"args":false,"runAsNonRoot":true},{"name":"b","image":"b:2","command":true,"args":false}]"#;
        let c = config(&["app:1", "--containers", json], "").unwrap();
        assert_eq!(c.images, ["app:1", "b:2"]);
        assert_eq!(c.options.containers.len(), 2);
        assert_eq!(
            c.options.start_check,
            crate::container_start::StartCheck::Auto
        );
        let c = config(&["--containers", json, "--start-check", "off"], "").unwrap();
        assert_eq!(
            c.options.start_check,
            crate::container_start::StartCheck::Off
        );
        let e = config(&["--containers", "[{"], "").unwrap_err();
        assert!(
            e.to_string()
                .contains("--containers / PULLCHECK_CONTAINERS"),
            "{e}"
        );
    }

    #[test]
    fn if_not_present_images_are_checked_and_always_wins() {
        let c = config(
            &[
                "a:1",
                "--if-not-present",
                "a:1, b:2",
                "--if-not-present",
                "docker.io/library/c:3 b:2",
                "--images",
                "c:3",
            ],
            "",
        )
        .unwrap();
        assert_eq!(c.images, ["a:1", "c:3", "b:2", "docker.io/library/c:3"]);
        // a:1 and c:3 are also given as Always: the kubelet would pull them.
        assert_eq!(c.options.if_not_present, ["b:2"]);
        let only = config(&["--if-not-present", "x:1"], "").unwrap();
        assert_eq!(only.images, ["x:1"]);
        assert_eq!(only.options.if_not_present, ["x:1"]);
    }

    #[test]
    fn node_flags() {
        let c = config(&["x", "--node", " kind-worker "], "").unwrap();
        assert_eq!(c.options.node.name.as_deref(), Some("kind-worker"));
        assert_eq!(c.options.node.max_images, Some(50));
        let c = config(&["x", "--node", "", "--node-status-max-images", "-1"], "").unwrap();
        assert_eq!(c.options.node.name, None);
        assert_eq!(c.options.node.max_images, None);
        let c = config(&["x", "--node-status-max-images", "0"], "").unwrap();
        assert_eq!(c.options.node.max_images, Some(0));
        let e = config(
            &["x", "--node", "Node/../x", "--node-status-max-images", "-2"],
            "",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--node \"Node/../x\""), "{e}");
        assert!(e.contains("--node-status-max-images \"-2\""), "{e}");
        for bad in ["many", "1000001", "1.5"] {
            let e = config(&["x", "--node-status-max-images", bad], "").unwrap_err();
            assert!(e.to_string().contains("--node-status-max-images"), "{bad}");
        }
    }

    #[test]
    fn non_utf8_input_is_refused() {
        let e = Config::from_args(args(&["--images-file", "-"]), &mut &b"ok\n\xff\xfe"[..])
            .unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn an_unknown_variant_is_a_usage_error_unless_strict() {
        let e = config(&["--platform", "linux/amd64/v9", "x"], "").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("\"v9\" is not a known variant of amd64 (known: v1, v2, v3, v4)"),
            "{text}"
        );
        let c = config(
            &[
                "--platform",
                "linux/amd64/v9",
                "--platform-match",
                "strict",
                "x",
            ],
            "",
        )
        .unwrap();
        assert!(
            c.warnings.iter().any(|w| w.contains("not a known variant")),
            "{:?}",
            c.warnings
        );
        for known in [
            "linux/amd64/v3",
            "linux/arm64/v8.2",
            "linux/arm/v6",
            "linux/s390x",
            "linux/riscv64/rva23",
        ] {
            assert!(config(&["--platform", known, "x"], "").is_ok(), "{known}");
        }
    }
}
