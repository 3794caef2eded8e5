//! `inject`'s options, checked before any manifest is read, with `check`'s own parser for the
//! check arguments.

use super::container::with_route_args;
use super::{InjectError, InjectOptions};
use crate::manifests::names::is_dns_subdomain;
use crate::route::inject::Additions;

/// Checks the options, and the check arguments (with those the route choices add) with
/// `check`'s own parser; returns the `--ca-file` paths of the check arguments and what the
/// route choices add.
pub(super) fn validate_options(
    options: &InjectOptions,
) -> Result<(Vec<String>, Additions), InjectError> {
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
