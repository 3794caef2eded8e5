//! Flags, environment and files become one validated [`Config`] before any request is sent.
//! Every problem is collected and reported at once (exit 2), so a user fixes them in one go.

use crate::check::Options;
use crate::cli::{CheckArgs, OutputFormat, PlatformMatch};
use crate::credentials::{NodeCredentials, cloud, plugin};
use crate::input::{LimitedReadError, read_input, read_limited_file};
use crate::keyring::{self, Keyring};
use crate::manifests;
use crate::node::{self, NodeOptions};
use crate::platform::{MatchMode, Platform};
use crate::pull_policy::{self, PullPolicy};
use crate::reference::{DOCKER_HUB, Reference};
use crate::registry::{ClientOptions, PlatformPolicy};
use crate::route::Router;
use crate::route::conf::RegistriesConf;
use crate::route::hosts::HostsDirs;
use crate::start::ContainerFacts;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The Kubernetes path of the termination message, used when it exists.
pub const DEFAULT_TERMINATION_LOG: &str = "/dev/termination-log";

/// The most images one run accepts.
const MAX_IMAGES: usize = 10_000;

/// A validated run of `pullcheck check`.
#[derive(Debug)]
pub struct Config {
    /// The images, from every source, in order, without exact duplicates.
    pub images: Vec<String>,
    /// How to check them.
    pub options: Options,
    /// The stdout format.
    pub output: OutputFormat,
    /// Where the termination message goes, if anywhere.
    pub termination_log: Option<PathBuf>,
    /// The most bytes the termination message may hold: the kubelet's share for the pod's
    /// containers ([`crate::report::termination_limit`]).
    pub termination_max: usize,
    /// Print problems only.
    pub quiet: bool,
    /// Notes for stderr that do not stop the run (a credential helper that failed).
    pub warnings: Vec<String>,
}

/// Everything wrong with the flags and files, one line each.
#[derive(Debug)]
pub struct ConfigErrors(pub Vec<String>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl Config {
    /// Validates the flags and reads the files they name. `stdin` serves `-`.
    pub fn from_args(args: CheckArgs, stdin: &mut dyn Read) -> Result<Config, ConfigErrors> {
        // The run's clock: credential helpers asked here count against --timeout.
        let started = std::time::Instant::now();
        let mut errors = Vec::new();
        let mut pod_spec_notes = Vec::new();

        let timeout = match parse_duration(&args.timeout) {
            Ok(d) => d,
            Err(e) => {
                errors.push(format!("--timeout {:?}: {e}", args.timeout));
                Duration::from_secs(60)
            }
        };
        let concurrency = match args.concurrency.trim().parse::<usize>() {
            Ok(n) if (1..=1024).contains(&n) => n,
            _ => {
                errors.push(format!(
                    "--concurrency {:?}: expected a whole number from 1 to 1024",
                    args.concurrency
                ));
                16
            }
        };

        // Images from all sources, in the documented order.
        let stdin_users = [&args.images_file, &args.pod_spec]
            .iter()
            .filter(|p| p.as_deref() == Some(Path::new("-")))
            .count();
        if stdin_users > 1 {
            errors.push("--images-file and --pod-spec cannot both read stdin (-)".to_string());
        }
        let mut images: Vec<String> = args.images.clone();
        if let Some(list) = &args.images_list {
            // Taken as bytes so that a bad byte is reported here, naming its source.
            use std::os::unix::ffi::OsStrExt;
            match std::str::from_utf8(list.as_bytes()) {
                Ok(text) => images.extend(split_list(text)),
                Err(e) => errors.push(format!(
                    "--images / PULLCHECK_IMAGES: not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                )),
            }
        }
        // `IfNotPresent` images: also checked, and looked up on the node first.
        let mut if_not_present = Vec::new();
        for list in &args.if_not_present {
            use std::os::unix::ffi::OsStrExt;
            match std::str::from_utf8(list.as_bytes()) {
                Ok(text) => if_not_present.extend(split_list(text)),
                Err(e) => errors.push(format!(
                    "--if-not-present / PULLCHECK_IMAGES_IF_NOT_PRESENT: not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                )),
            }
        }
        // Where in `images` the `IfNotPresent` ones are; every other image is `Always`.
        let mut if_not_present_at: std::collections::HashSet<usize> =
            (images.len()..images.len() + if_not_present.len()).collect();
        images.extend(if_not_present);
        if let Some(path) = &args.images_file {
            match read_input(path, stdin) {
                Ok(text) => images.extend(images_file_lines(&text)),
                Err(e) => errors.push(format!("--images-file {}: {e}", path.display())),
            }
        }
        // The start check's facts: from --pod-spec here, from --containers below.
        let mut containers = Vec::new();
        if let Some(path) = &args.pod_spec {
            let source = if path == Path::new("-") {
                "stdin".to_string()
            } else {
                path.display().to_string()
            };
            match read_input(path, stdin) {
                Ok(text) => match manifests::read(&text, &source) {
                    Ok(found) => {
                        pod_spec_notes.extend(found.notes.iter().cloned());
                        if found.pod_specs.is_empty() {
                            pod_spec_notes.push(format!(
                                "--pod-spec {source}: no pod spec found, so no images from it"
                            ));
                        }
                        // Each image with its pull policy, as `inject --node-images` passes
                        // them; each container (not an image volume) with its facts.
                        for c in found.pod_specs.iter().flat_map(|p| p.checked()) {
                            let written = c.image_pull_policy.as_deref();
                            match PullPolicy::resolve(&c.image, written) {
                                PullPolicy::Never => continue,
                                PullPolicy::IfNotPresent => {
                                    if_not_present_at.insert(images.len());
                                }
                                PullPolicy::Always => {}
                            }
                            images.push(c.image.clone());
                            containers.extend(c.start_facts());
                        }
                    }
                    Err(e) => errors.push(format!("--pod-spec {e}")),
                },
                Err(e) => errors.push(format!("--pod-spec {source}: {e}")),
            }
        }
        let from_pod_spec = containers.len();
        let mut listed_containers = None;
        if let Some(json) = &args.containers {
            use std::os::unix::ffi::OsStrExt;
            match std::str::from_utf8(json.as_bytes()) {
                Ok(text) => match ContainerFacts::parse_list(text) {
                    Ok(list) => {
                        listed_containers = Some(list.len());
                        containers.extend(list);
                    }
                    Err(e) => errors.push(format!("--containers / PULLCHECK_CONTAINERS: {e}")),
                },
                Err(e) => errors.push(format!(
                    "--containers / PULLCHECK_CONTAINERS: not UTF-8 text (invalid byte at offset {})",
                    e.valid_up_to()
                )),
            }
        }
        // The containers' images are checked too (they are the pod's images), but they carry no
        // pull policy: one already given keeps the policy it was given with (`inject` lists
        // each container's image in PULLCHECK_IMAGES or PULLCHECK_IMAGES_IF_NOT_PRESENT), and
        // only an image given nowhere else is added, as `Always`.
        if containers.len() > from_pod_spec {
            let key = |image: &str| {
                Reference::parse(image).map_or_else(|_| image.to_string(), |r| r.to_string())
            };
            let mut given: std::collections::HashSet<String> =
                images.iter().map(|i| key(i)).collect();
            for c in &containers[from_pod_spec..] {
                if given.insert(key(&c.image)) {
                    images.push(c.image.clone());
                }
            }
        }
        let any_source = !args.images.is_empty()
            || args.containers.is_some()
            || args.images_list.is_some()
            || !args.if_not_present.is_empty()
            || args.images_file.is_some()
            || args.pod_spec.is_some();
        if !any_source {
            errors.push(
                "no images to check: give IMAGE arguments, --images (PULLCHECK_IMAGES), --if-not-present, --images-file, --pod-spec or --containers (PULLCHECK_CONTAINERS)"
                    .to_string(),
            );
        }
        // Every image is `Always` unless it is only ever given as `IfNotPresent`.
        let to_check = pull_policy::to_check(images.into_iter().enumerate().map(|(at, i)| {
            let policy = if if_not_present_at.contains(&at) {
                PullPolicy::IfNotPresent
            } else {
                PullPolicy::Always
            };
            (i, policy)
        }));
        let images = to_check.images;
        let if_not_present = to_check.if_not_present;
        if images.len() > MAX_IMAGES {
            errors.push(format!(
                "{} images given; at most {MAX_IMAGES} are checked in one run",
                images.len()
            ));
        }

        let plain_http = args
            .plain_http
            .iter()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .collect::<Vec<_>>();
        for host in &plain_http {
            if host.contains('/') || host.contains(char::is_whitespace) {
                errors.push(format!(
                    "--plain-http {host:?}: expected HOST or HOST:PORT, without a scheme or path"
                ));
            }
        }

        let want = match args.platform.as_deref().map(str::trim) {
            None | Some("") => Some(Platform::host()),
            Some("any") => None,
            Some(spec) => match Platform::parse(spec) {
                Ok(p) => Some(p),
                Err(e) => {
                    errors.push(format!("--platform: {e}"));
                    None
                }
            },
        };
        let mut warnings = Vec::new();
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
                PlatformMatch::Strict => warnings.push(format!(
                    "{text}; with --platform-match strict only index entries for exactly {p} match"
                )),
                PlatformMatch::Lenient => errors.push(format!(
                    "{text}; use --platform-match strict if you mean it"
                )),
            }
        }
        let platform = PlatformPolicy {
            want,
            mode: match args.platform_match {
                PlatformMatch::Lenient => MatchMode::Lenient,
                PlatformMatch::Strict => MatchMode::Strict,
            },
            check: args.platform_check,
        };

        let mut ca_certs = Vec::new();
        for path in &args.ca_file {
            match read_certs(path) {
                Ok(certs) => ca_certs.extend(certs),
                Err(e) => errors.push(format!("--ca-file {}: {e}", path.display())),
            }
        }

        let workstation = keyring::workstation_config();
        let mut keyring = match Keyring::load(
            &args.docker_config,
            Some(&args.secrets_dir),
            workstation.as_deref(),
        ) {
            Ok(k) => k,
            Err(errs) => {
                errors.extend(errs.into_iter().map(|e| e.to_string()));
                Keyring::default()
            }
        };
        let references: Vec<Reference> = images
            .iter()
            .filter_map(|i| Reference::parse(i).ok())
            .collect();
        warnings.extend(pod_spec_notes);
        // Helpers run before the check, on its clock: at most a quarter of --timeout in all.
        warnings.extend(
            keyring.resolve_helpers(
                references
                    .iter()
                    .map(|r| (r.registry.as_str(), r.repository.as_str())),
                timeout.min(crate::check::MAX_TIMEOUT) / 4,
            ),
        );
        if let Some(creds) = &args.creds {
            if let Err(e) = add_creds(&mut keyring, creds, &references) {
                errors.push(format!("--creds: {e}"));
            }
        }
        warnings.extend(
            keyring.source_warnings(
                references
                    .iter()
                    .map(|r| (r.registry.as_str(), r.repository.as_str())),
            ),
        );

        let node_credentials = node_credentials(&args, &ca_certs, &references, &mut errors);
        // Tests only, and only in a build with the `test-hooks` feature (src/test_hooks.rs).
        let resolve = crate::test_hooks::pinned_hosts(&mut errors);

        let allow_unauthenticated = args
            .allow_unauthenticated
            .iter()
            .map(|h| h.trim())
            .filter(|h| !h.is_empty())
            .map(|h| match h {
                "index.docker.io" | "registry-1.docker.io" => DOCKER_HUB.to_string(),
                h => h.to_string(),
            })
            .collect::<Vec<_>>();

        let node_name = args
            .node
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty());
        if let Some(name) = node_name {
            if !node::is_node_name(name) {
                errors.push(format!(
                    "--node {name:?}: expected a node name (lower-case letters, digits, '-' and '.', as spec.nodeName gives)"
                ));
            }
        }
        let max_images = match args.node_status_max_images.trim().parse::<i64>() {
            Ok(-1) => None,
            Ok(n) if (0..=1_000_000).contains(&n) => usize::try_from(n).ok(),
            _ => {
                errors.push(format!(
                    "--node-status-max-images {:?}: expected the kubelet's nodeStatusMaxImages, a whole number from -1 (no cap) to 1000000",
                    args.node_status_max_images
                ));
                None
            }
        };
        let node = NodeOptions {
            name: node_name.map(str::to_string),
            max_images,
            service_account_dir: args.service_account_dir.clone(),
            api_host: std::env::var("KUBERNETES_SERVICE_HOST").ok(),
            api_port: std::env::var("KUBERNETES_SERVICE_PORT").ok(),
            wanted: None,
        }
        .for_images(&references);
        // The node's registry configuration, read before any request so that a file the
        // runtime could not use either stops the run here (exit 2), naming it.
        let mut router = Router {
            plain_http: plain_http.clone(),
            ..Router::default()
        };
        let hosts_dirs: Vec<PathBuf> = args
            .hosts_dir
            .iter()
            .filter(|p| !p.as_os_str().is_empty())
            .cloned()
            .collect();
        if !hosts_dirs.is_empty() && args.registries_conf.is_some() {
            errors.push(
                "--hosts-dir (containerd) and --registries-conf (CRI-O, Podman) describe different runtimes: give one"
                    .to_string(),
            );
        }
        if !hosts_dirs.is_empty() {
            for dir in &hosts_dirs {
                if !dir.is_dir() {
                    warnings.push(format!(
                        "--hosts-dir {}: not a directory; containerd skips it, and so does pullcheck",
                        dir.display()
                    ));
                }
            }
            let hosts = HostsDirs::new(hosts_dirs);
            let mut registries: Vec<&str> =
                references.iter().map(|r| r.registry.as_str()).collect();
            registries.sort_unstable();
            registries.dedup();
            for registry in registries {
                match hosts.load(registry) {
                    Ok(w) => warnings.extend(w.into_iter().map(|w| format!("--hosts-dir: {w}"))),
                    Err(e) => errors.push(format!("--hosts-dir: {e}")),
                }
            }
            router.hosts = Some(hosts);
        }
        if let Some(path) = &args.registries_conf {
            match RegistriesConf::load(path) {
                Ok(c) => router.conf = Some(c),
                Err(e) => errors.push(format!("--registries-conf {e}")),
            }
        }

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
        let termination_max = crate::report::termination_limit(pod_containers);

        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        Ok(Config {
            images,
            options: Options {
                timeout,
                concurrency,
                client: ClientOptions {
                    plain_http,
                    ca_certs,
                    platform,
                    resolve,
                },
                keyring,
                allow_unauthenticated,
                containers,
                start_check: args.start_check,
                events: crate::progress::Events::for_cli(args.verbose),
                if_not_present,
                node,
                router: std::sync::Arc::new(router),
                on_unreachable: args.on_unreachable,
                started: Some(started),
                node_credentials,
            },
            output: args.output,
            warnings,
            termination_log,
            termination_max,
            quiet: args.quiet,
        })
    }
}

/// `--creds USER:PASS`: one credential for the one registry of the images, tried first. Errors
/// never repeat the value.
fn add_creds(
    keyring: &mut Keyring,
    creds: &keyring::Secret,
    references: &[Reference],
) -> Result<(), String> {
    let (user, password) = creds
        .expose()
        .split_once(':')
        .filter(|(u, p)| !u.is_empty() && !p.is_empty())
        .ok_or("expected USER:PASS, a user name and a password separated by ':' (the value is not shown)")?;
    let mut registries: Vec<&str> = references.iter().map(|r| r.registry.as_str()).collect();
    registries.sort_unstable();
    registries.dedup();
    match registries.as_slice() {
        [] => Ok(()),
        [registry] => {
            keyring.add_first(registry, user, keyring::Secret::new(password), "--creds");
            Ok(())
        }
        several => Err(format!(
            "the images are on {} registries ({}), and --creds gives one credential to one registry: check them in separate runs, or use --docker-config",
            several.len(),
            several.join(", ")
        )),
    }
}

/// The node's credential sources: the built-in cloud providers (`--cloud-credentials`) and
/// the kubelet's exec plugins (`--image-credential-provider-config` and `-bin-dir`).
/// The node's credential sources; a plugin's answer keeps only the entries of `references`.
fn node_credentials(
    args: &CheckArgs,
    ca_certs: &[CertificateDer<'static>],
    references: &[Reference],
    errors: &mut Vec<String>,
) -> NodeCredentials {
    let cloud = match args.cloud_credentials {
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
    NodeCredentials::new(cloud, plugins).required(args.cloud_credentials == cloud::Mode::Required)
}

/// Parses `500ms`, `30s`, `2m`, `1h30m`. Zero and negative durations are refused.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e}; expected a duration such as 500ms, 30s or 2m"))?;
    if d.is_zero() {
        return Err("must be longer than zero".to_string());
    }
    if d > crate::check::MAX_TIMEOUT {
        return Err("must be at most 24h".to_string());
    }
    Ok(d)
}

/// Splits `PULLCHECK_IMAGES`: whitespace or commas, empty items dropped.
fn split_list(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|i| !i.is_empty())
        .map(str::to_string)
}

/// One image per line; `#` starts a comment (a reference never holds `#`).
fn images_file_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
}

/// The largest CA file read (a full system bundle is about 200 KiB).
const MAX_CA_BYTES: u64 = 4 * 1024 * 1024;

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    // Read through a limit: a device (`/dev/zero`) reports no size and never ends.
    let bytes = read_limited_file(path, MAX_CA_BYTES).map_err(|e| match e {
        LimitedReadError::TooLarge => format!("larger than {} MiB", MAX_CA_BYTES >> 20),
        LimitedReadError::Io(e) => format!("cannot read: {e}"),
    })?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a valid PEM file: {e}"))?;
    if certs.is_empty() {
        return Err("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_string());
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
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
            Command::Inject(_) => unreachable!("parsed `check`"),
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
        assert_eq!(c.options.start_check, crate::start::StartCheck::Auto);
        let c = config(&["--containers", json, "--start-check", "off"], "").unwrap();
        assert_eq!(c.options.start_check, crate::start::StartCheck::Off);
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
