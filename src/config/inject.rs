//! `pullcheck inject`'s flags and the file they name become one validated [`InjectConfig`].

use super::ConfigErrors;
use crate::cli::InjectArgs;
use crate::credentials::plugin;
use crate::inject::{InjectOptions, LimitRanges, LimitRangesError};
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
    /// provider configuration). The manifests themselves are read by the caller.
    pub(crate) fn from_args(args: InjectArgs) -> Result<InjectConfig, ConfigErrors> {
        let source = inject_source(&args.file);
        // An empty value (an environment variable set to nothing) turns the choice off.
        let provider_tokens = match args
            .credential_provider_config
            .filter(|p| !p.as_os_str().is_empty())
        {
            None => None,
            Some(path) => provider_token_additions(&path).map_err(|errors| {
                let name = path.display().to_string();
                ConfigErrors(
                    errors
                        .iter()
                        .map(|e| format!("--credential-provider-config {name}: {e}"))
                        .collect(),
                )
            })?,
        };
        let limit_ranges = match args
            .limit_range
            .limit_range_file
            .filter(|p| !p.as_os_str().is_empty())
        {
            None => LimitRanges::Unknown,
            Some(path) => limit_ranges(&path).map_err(|e| {
                ConfigErrors(vec![format!("--limit-range-file {}: {e}", path.display())])
            })?,
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
        Ok(InjectConfig {
            source,
            options,
            default_image,
        })
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
