//! `inject`'s options, checked once before any manifest is read (with `check`'s own parser for
//! the check arguments) into [`ValidOptions`], which the inject core reads: `pullcheck inject`
//! checks them per run, the webhook once at start, never per admission. Every problem is
//! said at once ([`InvalidOptions`]).

use super::InjectOptions;
use super::container::with_route_args;
use crate::manifests::names::is_dns_subdomain;
use crate::route::RouteFlags;
use crate::route::inject::{Additions, RouteMounts};

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

/// Every problem [`validate`] found in the options, in the order of their flags.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.join("\n"))]
pub(crate) struct InvalidOptions(pub(crate) Vec<String>);

/// The problems of the route choices: ConfigMap names, absolute paths on the node, and one
/// runtime.
fn route_choices(route: &RouteMounts, problems: &mut Vec<String>) {
    for (flag, name) in [
        ("--hosts-configmap", &route.hosts_configmap),
        ("--registries-configmap", &route.registries_configmap),
    ] {
        if let Some(name) = name
            && !is_dns_subdomain(name)
        {
            problems.push(format!("{flag} {name:?}: not a ConfigMap name"));
        }
    }
    for (flag, path) in [
        ("--hosts-from-node", &route.hosts_from_node),
        ("--registries-from-node", &route.registries_from_node),
    ] {
        if let Some(path) = path
            && !path.is_empty()
            && (!path.starts_with('/') || path.split('/').any(|p| p == ".."))
        {
            problems.push(format!("{flag} {path:?}: an absolute path on the node"));
        }
    }
    let containerd = route.hosts_configmap.is_some() || route.hosts_from_node.is_some();
    for (flag, set) in [
        (
            "--registries-configmap",
            route.registries_configmap.is_some(),
        ),
        (
            "--registries-from-node",
            route.registries_from_node.is_some(),
        ),
    ] {
        if set && containerd {
            problems.push(format!(
                "{flag} (CRI-O, Podman) and --hosts-configmap / --hosts-from-node \
                 (containerd) describe different runtimes: give the one your nodes run"
            ));
        }
    }
    if route.registries_from_node.is_some() && route.registries_configmap.is_some() {
        // Both would pass --registries-conf: the check reads one configuration.
        problems.push(
            "--registries-from-node and --registries-configmap both give registries.conf: \
             give one (the node's own, or a copy in a ConfigMap)"
                .to_string(),
        );
    }
}

/// The problem of the check arguments, with those the route choices add, as `check`'s own
/// parser and its rule of one runtime see it: refused here, once, rather than in every pod the
/// manifests start.
fn check_arguments(check_args: &[String], route_args: &[String]) -> Option<String> {
    let argv = ["pullcheck", "check"]
        .into_iter()
        .map(str::to_string)
        .chain(with_route_args(check_args, route_args));
    let args = match <crate::cli::Cli as clap::Parser>::try_parse_from(argv) {
        Ok(crate::cli::Cli {
            command: crate::cli::Command::Check(args),
        }) => args,
        Ok(_) => return None,
        Err(e) => {
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
            return Some(format!(
                "the arguments after -- are for `pullcheck check`, which refuses them: {first}"
            ));
        }
    };
    // Values from the command line are never empty (clap refuses them).
    let flags = RouteFlags {
        hosts_dir: !args.hosts_dir.is_empty(),
        registries_conf: args.registries_conf.is_some(),
        registries_conf_dir: args.registries_conf_dir.is_some(),
        certs_dir: !args.certs_dir.is_empty(),
    };
    flags.conflict().map(|conflict| {
        format!(
            "the arguments after -- are for `pullcheck check`, which refuses them with what inject adds: {conflict}"
        )
    })
}

/// The `--ca-file` paths of the check arguments (before any `--`; each may list several,
/// `:`-separated).
fn ca_files(check_args: &[String]) -> Vec<String> {
    let mut ca_files = Vec::new();
    let mut args = check_args.iter();
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
    ca_files
        .iter()
        .flat_map(|p| p.split(':'))
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// The problems of `--ca-configmap`, which mounts the `--ca-file` paths `ca_files`.
fn ca_configmap(name: &str, ca_files: &[String], problems: &mut Vec<String>) {
    if !is_dns_subdomain(name) {
        problems.push(format!("--ca-configmap {name:?}: not a ConfigMap name"));
    }
    if ca_files.is_empty() {
        problems.push(
            "--ca-configmap mounts the files of --ca-file: give `-- --ca-file PATH` (the \
             ConfigMap key is the file name of PATH)"
                .to_string(),
        );
    }
    for path in ca_files {
        if !path.starts_with('/') || path.ends_with('/') || path.contains("/../") {
            problems.push(format!(
                "--ca-file {path:?}: with --ca-configmap, an absolute path to a file"
            ));
        }
    }
}

/// Checks the options, and the check arguments (with those the route choices add) with
/// `check`'s own parser; with the `--ca-file` paths of the check arguments and what the route
/// choices add. Every problem at once, in the order of their flags.
pub(crate) fn validate(options: InjectOptions) -> Result<ValidOptions, InvalidOptions> {
    let mut problems = Vec::new();
    let image = options.image.trim();
    if image.is_empty() {
        problems.push("--image is empty".to_string());
    } else if image != options.image || image.contains(char::is_whitespace) {
        problems.push(format!(
            "--image {:?}: an image reference has no whitespace",
            options.image
        ));
    }
    for name in &options.secrets {
        if !name.is_empty() && !is_dns_subdomain(name) {
            problems.push(format!(
                "--secret {name:?}: not a Secret name (lower-case letters, digits, '-' and '.', \
                 starting and ending with a letter or digit, at most 253 characters)"
            ));
        }
    }
    let before = problems.len();
    route_choices(&options.route, &mut problems);
    let additions = crate::route::inject::additions(&options.route);
    // What the route choices add is checked with the check arguments only when the choices
    // themselves are sound: else the check arguments alone, not the same conflict twice.
    let route_args: &[String] = if problems.len() == before {
        &additions.args
    } else {
        &[]
    };
    problems.extend(check_arguments(&options.check_args, route_args));
    let ca_files = ca_files(&options.check_args);
    if let Some(name) = &options.ca_configmap {
        ca_configmap(name, &ca_files, &mut problems);
    }
    if !problems.is_empty() {
        return Err(InvalidOptions(problems));
    }
    Ok(ValidOptions {
        options,
        ca_files,
        route: additions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_said_at_once_in_the_order_of_the_flags() {
        let options = InjectOptions {
            image: "a b".into(),
            secrets: vec!["Bad_One".into(), "ok".into(), "Bad_Two".into()],
            check_args: vec!["--timout".into(), "30s".into()],
            ca_configmap: Some("Not_A_Name".into()),
            route: RouteMounts {
                hosts_configmap: Some("Also_Bad".into()),
                ..RouteMounts::default()
            },
            ..InjectOptions::default()
        };
        let problems = validate(options).unwrap_err().0;
        let starts: Vec<&str> = problems
            .iter()
            .map(|p| p.split(':').next().unwrap())
            .collect();
        assert_eq!(
            starts,
            [
                "--image \"a b\"",
                "--secret \"Bad_One\"",
                "--secret \"Bad_Two\"",
                "--hosts-configmap \"Also_Bad\"",
                "the arguments after -- are for `pullcheck check`, which refuses them",
                "--ca-configmap \"Not_A_Name\"",
                "--ca-configmap mounts the files of --ca-file",
            ],
            "{problems:#?}"
        );
        // One problem alone reads as before, and as `inject`'s error.
        let one = InjectOptions {
            image: String::new(),
            ..InjectOptions::default()
        };
        assert_eq!(validate(one.clone()).unwrap_err().0, ["--image is empty"]);
        assert_eq!(
            super::super::inject("", "t", &one).unwrap_err().0,
            "--image is empty"
        );
    }
}
