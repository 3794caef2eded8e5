//! Reading an image's config blob for the start check ([`crate::container_start`]), after the `HEAD`
//! found the image, with the same credentials and token:
//!
//! 1. the manifest for the node: by the index entry the platform check already chose (its
//!    `platform_digest`), else by the digest the `HEAD` gave; an index read here (the platform
//!    check did not run: `--platform-check off`, or Docker Hub under `auto`) gives the entry for
//!    the node's platform, one more `GET`;
//! 2. the config blob the manifest names.
//!
//! Manifests are read up to 4 MiB and configs up to 1 MiB, incrementally, never more. A config
//! already read by the platform check of a single manifest is not read again ([`ImageConfigs`]
//! keeps what each manifest's config said for the run). Nothing here is a verdict: what could
//! not be read makes the prediction `unknown`, never the image a failure.

use super::http::Wire;
use super::state::{Registries, RegistryState};
use super::{Fact, MANIFEST_ACCEPT, PlatformPolicy, Progress, authorized, read_limited};
use crate::container_start::RunConfig;
use crate::http::error_chain;
use crate::keyring::Credential;
use crate::platform::Platform;
use crate::reference::Reference;
use crate::route::Endpoint;
use reqwest::header;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Mutex;

/// The most of a manifest or index read.
const MAX_MANIFEST: usize = 4 * 1024 * 1024;
/// The most of a config blob read (real configs are a few KiB; a long history makes tens).
const MAX_CONFIG: usize = 1024 * 1024;

/// What reading an image's config found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigRead {
    /// The config of a Linux image.
    Read(RunConfig),
    /// A config for another OS (the OS): out of scope.
    NotLinux(String),
    /// It could not be read: what went wrong, naming the request.
    Failed(String),
    /// The manifest is an OCI artifact, not an image (what it is): the runtime refuses it.
    NotAnImage(String),
}

#[derive(Deserialize)]
struct Manifest {
    config: Option<ConfigDescriptor>,
    /// Present on an index: its entries are read by [`super::index::scan_index`], never
    /// built as a tree here.
    manifests: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct ConfigDescriptor {
    digest: String,
}

#[derive(Deserialize)]
struct ConfigBlob {
    #[serde(default)]
    os: String,
    #[serde(default)]
    config: Option<ContainerConfig>,
}

/// The OCI image config's `config` object (Docker's `ContainerConfig` names).
#[derive(Deserialize)]
struct ContainerConfig {
    #[serde(rename = "User", default)]
    user: Option<String>,
    #[serde(rename = "Entrypoint", default)]
    entrypoint: Option<Vec<String>>,
    #[serde(rename = "Cmd", default)]
    cmd: Option<Vec<String>>,
}

/// Reads a config blob. An empty `os` is taken as Linux (every runtime would try to run it).
pub(super) fn parse_config(body: &[u8]) -> ConfigRead {
    let blob = match serde_json::from_slice::<ConfigBlob>(body) {
        Ok(b) => b,
        Err(e) => return ConfigRead::Failed(format!("the config is not an image config: {e}")),
    };
    if !blob.os.is_empty() && !blob.os.eq_ignore_ascii_case("linux") {
        return ConfigRead::NotLinux(blob.os.chars().take(64).collect());
    }
    let config = blob.config.unwrap_or(ContainerConfig {
        user: None,
        entrypoint: None,
        cmd: None,
    });
    ConfigRead::Read(RunConfig::new(
        config.user.unwrap_or_default(),
        config.entrypoint.unwrap_or_default(),
        config.cmd.unwrap_or_default(),
    ))
}

/// The image configs of a run: how to read one, and those already read.
pub(super) struct ImageConfigs {
    /// The node's platform, which picks an index's entry.
    platform: PlatformPolicy,
    /// Image configs already read in this run, by manifest digest: the platform check of a
    /// single manifest reads the same config the start check needs.
    read: Mutex<HashMap<String, ConfigRead>>,
}

impl ImageConfigs {
    /// None read yet; an index's entry is picked for `platform`.
    pub(super) fn new(platform: PlatformPolicy) -> ImageConfigs {
        ImageConfigs {
            platform,
            read: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the config of an image the probe found (`found` is its [`Fact::Found`]), with the
    /// credential the probe used (`None`: anonymous), at the registry or endpoint
    /// `registries` knows it by, over `wire`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn image_config(
        &self,
        wire: &Wire,
        registries: &Registries,
        reference: &Reference,
        found: &Fact,
        credential: Option<&Credential>,
        endpoint: Option<&Endpoint>,
        progress: &Progress,
    ) -> ConfigRead {
        let Fact::Found {
            digest,
            platform_digest,
            ..
        } = found
        else {
            return ConfigRead::Failed("the image was not found".to_string());
        };
        // Where the probe found it: the image's registry, or the endpoint of the node's route
        // (a mirror, a rewritten location) that answered, with its own root and client.
        let (state, reference) = match registries.found_at(reference, endpoint) {
            Ok(found) => found,
            Err(e) => return ConfigRead::Failed(e.to_string()),
        };
        // What the registry asked of the probe (none when it found the image anonymously).
        let scheme = state.known_scheme();
        let authorization = match registries
            .token_source(&state, wire)
            .authorization(&scheme, reference, credential, false, progress)
            .await
        {
            Ok(a) => a,
            Err(_) => return ConfigRead::Failed("no token for the config".to_string()),
        };
        let authorization = authorization.as_deref();
        let manifest_ref = platform_digest
            .clone()
            .or_else(|| digest.clone())
            .unwrap_or_else(|| reference.manifest_ref().to_string());
        let (manifest_ref, manifest) = match self
            .manifest_for_config(
                wire,
                &state,
                reference,
                manifest_ref,
                authorization,
                progress,
            )
            .await
        {
            Ok(found) => found,
            Err(read) => return read,
        };
        let Some(config) = manifest.config else {
            return ConfigRead::Failed("the manifest names no config".to_string());
        };
        let url = format!(
            "{}{}/{}/blobs/{}",
            state.base, state.root, reference.repository, config.digest
        );
        let read = match Self::get_limited(
            wire,
            &state.http,
            &url,
            "*/*",
            authorization,
            MAX_CONFIG,
            progress,
        )
        .await
        {
            Ok(b) => parse_config(&b),
            Err(e) => ConfigRead::Failed(e.to_string()),
        };
        if manifest_ref.starts_with("sha256:") {
            self.remember_config(&manifest_ref, read.clone());
        }
        read
    }

    /// The manifest that names the config, and its reference: the one found; for an index the
    /// platform check did not read, once more for the node's entry (an index of indexes is not
    /// followed: it names no config). `Err` is the answer already: a config read earlier in
    /// the run, or why none can be.
    async fn manifest_for_config(
        &self,
        wire: &Wire,
        state: &RegistryState,
        reference: &Reference,
        mut manifest_ref: String,
        authorization: Option<&str>,
        progress: &Progress,
    ) -> Result<(String, Manifest), ConfigRead> {
        let mut descended = false;
        loop {
            if let Some(known) = self.known_config(&manifest_ref) {
                return Err(known);
            }
            let url = format!(
                "{}{}/{}/manifests/{manifest_ref}",
                state.base, state.root, reference.repository
            );
            let body = Self::get_limited(
                wire,
                &state.http,
                &url,
                MANIFEST_ACCEPT,
                authorization,
                MAX_MANIFEST,
                progress,
            )
            .await
            .map_err(|e| ConfigRead::Failed(e.to_string()))?;
            let manifest = serde_json::from_slice::<Manifest>(&body)
                .map_err(|e| ConfigRead::Failed(format!("the manifest is not JSON: {e}")))?;
            if manifest.manifests.is_none() || descended {
                // An artifact is not an image: the runtime refuses it.
                if let Some(what) = super::artifact_kind(&body) {
                    return Err(ConfigRead::NotAnImage(what));
                }
                return Ok((manifest_ref, manifest));
            }
            let Some(child) = self.entry_for_node(&body) else {
                return Err(ConfigRead::Failed(
                    "the index has no entry for the node's platform".to_string(),
                ));
            };
            manifest_ref = child;
            descended = true;
        }
    }

    /// The digest of the index entry for the node's platform; with `--platform any`, the first
    /// Linux entry (an image's user and command rarely differ between architectures).
    fn entry_for_node(&self, index: &[u8]) -> Option<String> {
        // Without a platform to check (`--platform any`), the node is still Linux: this
        // machine's platform picks the entry, as the runtime's default would.
        let want = self.platform.want.clone().unwrap_or_else(Platform::host);
        super::index::scan_index(index, &want, self.platform.mode)?
            .best
            .flatten()
    }

    /// Remembers what a manifest's config said, for the rest of the run. Failures are not kept.
    pub(super) fn remember_config(&self, manifest_digest: &str, read: ConfigRead) {
        if matches!(read, ConfigRead::Failed(_)) {
            return;
        }
        let mut configs = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Bounded like the run's images: one entry per image at most.
        if configs.len() < 10_000 {
            configs.insert(manifest_digest.to_string(), read);
        }
    }

    fn known_config(&self, manifest_ref: &str) -> Option<ConfigRead> {
        self.read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(manifest_ref)
            .cloned()
    }

    /// `GET` with a size limit: the body, or what stopped it (naming the request).
    async fn get_limited(
        wire: &Wire,
        http: &reqwest::Client,
        url: &str,
        accept: &str,
        authorization: Option<&str>,
        max: usize,
        progress: &Progress,
    ) -> Result<Vec<u8>, GetError> {
        progress.set(format!("GET {url}"));
        let req = authorized(http.get(url).header(header::ACCEPT, accept), authorization);
        let url = url.to_string();
        let too_large = |url: String| GetError::TooLarge {
            url,
            kib: max / 1024,
        };
        let resp = match wire.execute(req).await {
            Ok(resp) => resp,
            Err(e) => {
                let cause =
                    std::error::Error::source(&e).map_or_else(|| error_chain(&e), error_chain);
                return Err(GetError::Send { url, cause });
            }
        };
        let status = resp.status();
        if !status.is_success() {
            return Err(GetError::Status {
                url,
                status: status.as_u16(),
            });
        }
        // A declared length over the limit is refused before reading.
        if resp
            .content_length()
            .is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX))
        {
            return Err(too_large(url));
        }
        let body = match read_limited(resp, max.saturating_add(1)).await {
            Ok(body) => body,
            Err(e) => {
                let cause = error_chain(&e);
                return Err(GetError::Send { url, cause });
            }
        };
        if body.len() > max {
            return Err(too_large(url));
        }
        Ok(body)
    }
}

/// Why a `GET` with a size limit gave no body, naming the request.
#[derive(Debug, thiserror::Error)]
enum GetError {
    /// Not sent, or its body not read: the transport's error chain.
    #[error("GET {url}: {cause}")]
    Send { url: String, cause: String },
    /// Answered, but not with a success.
    #[error("GET {url} answered {status}")]
    Status { url: String, status: u16 },
    /// Larger than its limit (declared, or as read).
    #[error("GET {url}: larger than {kib} KiB")]
    TooLarge { url: String, kib: usize },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_read_as_the_runtime_reads_them() {
        let cases: &[(&str, &str, ConfigRead)] = &[
            (
                "user and command",
                r#"{"os":"linux","config":{"User":"1000:1000","Entrypoint":["/e"],"Cmd":["c"]}}"#,
                ConfigRead::Read(RunConfig {
                    user: "1000:1000".into(),
                    entrypoint: vec!["/e".into()],
                    cmd: vec!["c".into()],
                }),
            ),
            (
                "nulls and no config",
                r#"{"os":"linux","config":{"User":null,"Entrypoint":null,"Cmd":null}}"#,
                ConfigRead::Read(RunConfig::default()),
            ),
            (
                "no config object",
                r#"{"os":"linux"}"#,
                ConfigRead::Read(RunConfig::default()),
            ),
            (
                "windows",
                r#"{"os":"windows","config":{"User":"ContainerUser"}}"#,
                ConfigRead::NotLinux("windows".into()),
            ),
        ];
        for (name, body, want) in cases {
            assert_eq!(parse_config(body.as_bytes()), *want, "{name}");
        }
        assert!(matches!(
            parse_config(br#"{"config":{"Cmd":"not a list"}}"#),
            ConfigRead::Failed(_)
        ));
    }
}
