//! Flags, environment and files become one validated [`Config`] before any request is sent.
//! Every problem is collected and reported at once (exit 2), so a user fixes them in one go.

use crate::check::Options;
use crate::cli::{CheckArgs, OutputFormat, PlatformMatch};
use crate::credentials::{NodeCredentials, cloud, plugin};
use crate::input::{LimitedReadError, read_input, read_limited_file};
use crate::keyring::{self, Keyring};
use crate::platform::{MatchMode, Platform};
use crate::podspec;
use crate::reference::{DOCKER_HUB, Reference};
use crate::registry::{ClientOptions, PlatformPolicy};
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
        let mut errors = Vec::new();

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
        if let Some(path) = &args.images_file {
            match read_input(path, stdin) {
                Ok(text) => images.extend(images_file_lines(&text)),
                Err(e) => errors.push(format!("--images-file {}: {e}", path.display())),
            }
        }
        if let Some(path) = &args.pod_spec {
            let source = if path == Path::new("-") {
                "stdin".to_string()
            } else {
                path.display().to_string()
            };
            match read_input(path, stdin) {
                Ok(text) => match podspec::images_from_manifests(&text, &source) {
                    Ok(found) => images.extend(found.into_iter().map(|p| p.image)),
                    Err(e) => errors.push(format!("--pod-spec: {e}")),
                },
                Err(e) => errors.push(format!("--pod-spec {source}: {e}")),
            }
        }
        let any_source = !args.images.is_empty()
            || args.images_list.is_some()
            || args.images_file.is_some()
            || args.pod_spec.is_some();
        if !any_source {
            errors.push(
                "no images to check: give IMAGE arguments, --images (PULLCHECK_IMAGES), --images-file or --pod-spec"
                    .to_string(),
            );
        }
        let mut seen = std::collections::HashSet::new();
        images.retain(|i| seen.insert(i.clone()));
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
        let warnings = keyring.resolve_helpers(
            references
                .iter()
                .map(|r| (r.registry.as_str(), r.repository.as_str())),
        );

        let node_credentials = node_credentials(&args, &ca_certs, &mut errors);
        let mut resolve = Vec::new();
        for entry in args
            .test_resolve
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
        {
            match entry
                .split_once('=')
                .and_then(|(h, a)| Some((h.to_string(), a.parse().ok()?)))
            {
                Some(pair) => resolve.push(pair),
                None => errors.push(format!(
                    "PULLCHECK_TEST_RESOLVE {entry:?}: expected HOST=IP:PORT"
                )),
            }
        }

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

        let termination_log = match &args.termination_log {
            Some(p) if p.is_empty() => None,
            Some(p) => Some(PathBuf::from(p)),
            None => {
                let default = Path::new(DEFAULT_TERMINATION_LOG);
                default.exists().then(|| default.to_path_buf())
            }
        };

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
                node_credentials,
            },
            output: args.output,
            warnings,
            termination_log,
            quiet: args.quiet,
        })
    }
}

/// The node's credential sources: the built-in cloud providers (`--cloud-credentials`) and
/// the kubelet's exec plugins (`--image-credential-provider-config` and `-bin-dir`).
fn node_credentials(
    args: &CheckArgs,
    ca_certs: &[CertificateDer<'static>],
    errors: &mut Vec<String>,
) -> NodeCredentials {
    let cloud = match args.cloud_credentials {
        cloud::Mode::Off => None,
        cloud::Mode::Auto => Some(cloud::Cloud::new(cloud::Env::from_process(), ca_certs)),
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
    NodeCredentials::new(cloud, plugins)
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
    fn non_utf8_input_is_refused() {
        let e = Config::from_args(args(&["--images-file", "-"]), &mut &b"ok\n\xff\xfe"[..])
            .unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }
}
