//! `inject`'s options, checked once before any manifest is read (with `check`'s own parser for
//! the check arguments) into [`ValidOptions`], which the inject core reads: `pullcheck inject`
//! checks them per run, the webhook once at start, never per admission.

use super::container::with_route_args;
use super::{InjectError, InjectOptions};
use crate::manifests::names::is_dns_subdomain;
use crate::route::inject::Additions;

/// Options that passed [`validate`]: made only there, so that the core never reads options
/// that `inject` would refuse.
#[derive(Debug, Clone)]
pub(crate) struct ValidOptions {
    /// The options as given.
    pub(super) options: InjectOptions,
    /// The `--ca-file` paths of the check arguments (mounted from `--ca-configmap`).
    pub(super) ca_files: Vec<String>,
    /// What the route choices add (their warnings said once per run that edits a pod spec).
    pub(super) route: Additions,
}

impl ValidOptions {
    /// The same with `--job-failure-policy` off: for a Job with its own `podFailurePolicy`
    /// (turning a rule off keeps the options valid).
    #[cfg(feature = "webhook")]
    pub(crate) fn without_job_policy(&self) -> ValidOptions {
        let mut out = self.clone();
        out.options.job_failure_policy = false;
        out.options.ignore_unreachable_without_deadline = false;
        out
    }

    /// The same with the namespace's LimitRanges (any value is valid).
    #[cfg(feature = "webhook")]
    pub(crate) fn with_limit_ranges(&self, limit_ranges: super::LimitRanges) -> ValidOptions {
        let mut out = self.clone();
        out.options.limit_ranges = limit_ranges;
        out
    }
}

/// Checks the options, and the check arguments (with those the route choices add) with
/// `check`'s own parser; with the `--ca-file` paths of the check arguments and what the route
/// choices add.
pub(crate) fn validate(options: InjectOptions) -> Result<ValidOptions, InjectError> {
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
    Ok(ValidOptions {
        options,
        ca_files,
        route: additions,
    })
}
