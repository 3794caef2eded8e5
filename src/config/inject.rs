//! `pullcheck inject`'s flags and the files they name become one validated [`InjectConfig`]
//! (with the options as the inject core reads them, for `pullcheck inject`): every problem at
//! once.

use super::ConfigErrors;
use crate::cli::InjectArgs;
use crate::credentials::plugin;
use crate::inject::{InjectOptions, LimitRanges, LimitRangesError, ValidOptions, validate};
use crate::input::read_input;
use std::path::Path;

/// A validated run of `pullcheck inject`: its input and the options of the edit.
#[derive(Debug)]
pub struct InjectConfig {
    /// How the input is named in messages: its path, or `stdin`.
    pub(crate) source: String,
    /// The options of the edit.
    pub(crate) options: InjectOptions,
    /// `--image` was left at its default, which no registry holds: said loudly.
    pub(crate) default_image: bool,
}

impl InjectConfig {
    /// Validates `inject`'s flags and reads the file they name (the kubelet's credential
    /// provider configuration); every problem of the files at once. The manifests themselves
    /// are read by the caller; the options are checked as the core reads them by
    /// [`InjectConfig::checked`] (the webhook checks them only where it injects).
    #[cfg(feature = "webhook")]
    pub(crate) fn from_args(args: InjectArgs) -> Result<InjectConfig, ConfigErrors> {
        let (config, errors) = InjectConfig::read(args);
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// `pullcheck inject`'s whole judgement: `InjectConfig::from_args`, and the options as
    /// the inject core reads them ([`validate`]); every problem of the flags and of the files
    /// they name at once, those of the files first.
    pub(crate) fn checked(args: InjectArgs) -> Result<(InjectConfig, ValidOptions), ConfigErrors> {
        let (config, mut errors) = InjectConfig::read(args);
        match validate(config.options.clone()) {
            Ok(valid) if errors.is_empty() => Ok((config, valid)),
            Ok(_) => Err(ConfigErrors(errors)),
            Err(invalid) => {
                errors.extend(invalid.0);
                Err(ConfigErrors(errors))
            }
        }
    }

    /// The flags and the files they name, and the problems of the files (a file that cannot
    /// be used leaves its choice off).
    fn read(args: InjectArgs) -> (InjectConfig, Vec<String>) {
        let mut errors = Vec::new();
        let source = inject_source(&args.file);
        // An empty value (an environment variable set to nothing) turns the choice off.
        let provider_tokens = match args
            .credential_provider_config
            .filter(|p| !p.as_os_str().is_empty())
        {
            None => None,
            Some(path) => provider_token_additions(&path).unwrap_or_else(|problems| {
                let name = path.display().to_string();
                errors.extend(
                    problems
                        .iter()
                        .map(|e| format!("--credential-provider-config {name}: {e}")),
                );
                None
            }),
        };
        let limit_ranges = match args
            .limit_range
            .limit_range_file
            .filter(|p| !p.as_os_str().is_empty())
        {
            None => LimitRanges::Unknown,
            Some(path) => limit_ranges(&path).unwrap_or_else(|e| {
                errors.push(format!("--limit-range-file {}: {e}", path.display()));
                LimitRanges::Unknown
            }),
        };
        let default_image = args.image == crate::cli::DEFAULT_INJECT_IMAGE;
        let options = InjectOptions {
            image: args.image,
            secrets: args.secrets,
            check_args: args.check_args,
            ca_configmap: args.ca_configmap,
            job_failure_policy: args.job_failure_policy,
            ignore_unreachable_without_deadline: args.ignore_unreachable_without_deadline,
            // On by default: `--no-node-images` (the last of the two given wins) turns it off.
            node_images: args.node_images || !args.no_node_images,
            provider_tokens,
            // An empty value (an environment variable set to nothing) turns a choice off.
            route: crate::route::inject::RouteMounts {
                hosts_configmap: args.hosts_configmap.filter(|v| !v.is_empty()),
                registries_configmap: args.registries_configmap.filter(|v| !v.is_empty()),
                hosts_from_node: args.hosts_from_node.filter(|v| !v.is_empty()),
                registries_from_node: args.registries_from_node.filter(|v| !v.is_empty()),
            },
            limit_ranges,
        };
        let config = InjectConfig {
            source,
            options,
            default_image,
        };
        (config, errors)
    }
}

/// How `inject`'s input is named in messages: its path, or `stdin` for `-`.
pub fn inject_source(file: &Path) -> String {
    if file == Path::new("-") {
        "stdin".to_string()
    } else {
        file.display().to_string()
    }
}

/// What `inject --credential-provider-config PATH` adds: the config read and checked as the
/// kubelet would, `None` when no provider has `tokenAttributes`.
fn provider_token_additions(path: &Path) -> Result<Option<plugin::InjectAdditions>, Vec<String>> {
    if path == Path::new("-") {
        return Err(vec![
            "a file, not stdin (stdin holds the manifests)".to_string(),
        ]);
    }
    let text = read_input(path, &mut std::io::empty()).map_err(|e| vec![e.to_string()])?;
    let config = plugin::CredentialProviderConfig::parse(&text)?;
    Ok(plugin::inject_additions(&config))
}

/// What `inject --limit-range-file PATH` holds: the `Container` items of its LimitRanges.
fn limit_ranges(path: &Path) -> Result<LimitRanges, LimitRangeFileError> {
    if path == Path::new("-") {
        return Err(LimitRangeFileError::Stdin);
    }
    let text = read_input(path, &mut std::io::empty()).map_err(LimitRangeFileError::Read)?;
    Ok(LimitRanges::parse(&text)?)
}

/// Why `--limit-range-file` could not be used.
#[derive(Debug, thiserror::Error)]
enum LimitRangeFileError {
    #[error("a file, not stdin (stdin holds the manifests)")]
    Stdin,
    /// Not read, in the words of the input reader.
    #[error("{0}")]
    Read(crate::input::InputError),
    #[error(transparent)]
    Parse(#[from] LimitRangesError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> InjectArgs {
        let full = ["pullcheck", "inject"].iter().chain(argv);
        match Cli::try_parse_from(full).unwrap().command {
            Command::Inject(a) => a,
            _ => unreachable!("parsed `inject`"),
        }
    }

    #[test]
    fn the_files_and_the_options_are_judged_together() {
        let argv = [
            "--image",
            "",
            "--credential-provider-config",
            "/nonexistent/providers.yaml",
            "--limit-range-file",
            "/nonexistent/limits.yaml",
        ];
        let errors = InjectConfig::checked(args(&argv)).unwrap_err().0;
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors[0].starts_with("--credential-provider-config /nonexistent/providers.yaml: ")
        );
        assert!(errors[1].starts_with("--limit-range-file /nonexistent/limits.yaml: "));
        assert_eq!(errors[2], "--image is empty");
        let (config, _) = InjectConfig::checked(args(&["--image", "r.example/p:1"])).unwrap();
        assert_eq!(config.source, "stdin");
        assert_eq!(config.options.image, "r.example/p:1");
    }
}
