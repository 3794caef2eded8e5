//! Credentials that no pull secret holds: the ones the node would pull with. Two kinds, both
//! asked per image **after** the pod's pull secrets (the kubelet unions the secrets' keyring
//! first, then its providers'):
//!
//! - [`cloud`]: built-in providers for ECR, Artifact Registry / GCR and ACR, from the identity
//!   the pod has (`--cloud-credentials auto|off`);
//! - [`plugin`]: the kubelet's own exec credential-provider plugins
//!   (`--image-credential-provider-config`, `--image-credential-provider-bin-dir`).
//!
//! And, in the cluster's servers only, [`secrets`](self#modules): a pod's pull secrets read from
//! the API server by name, for the watcher's look and the webhook's verdicts.
//!
//! Everything here is asked at most once per run (per provider, region or registry), shared by
//! all images, and bounded by the run's deadline. A provider that cannot give a credential is
//! data ([`Lookup::notes`], [`Lookup::failed_plugin`]), never an error of the run.

pub(crate) mod cloud;
pub mod plugin;
#[cfg(any(feature = "webhook", feature = "watch"))]
pub(crate) mod secrets;

use crate::keyring::Credential;
use crate::reference::Reference;
use std::sync::Arc;
use tokio::time::Instant;

/// The node's credential sources for a run. Cheap to clone (shared state).
#[derive(Clone, Default)]
pub struct NodeCredentials {
    cloud: Option<Arc<cloud::Cloud>>,
    plugins: Option<Arc<plugin::Plugins>>,
    /// `--cloud-credentials required`: an image these sources serve and none gave a
    /// credential for is a failure, not a warning.
    required: bool,
}

impl std::fmt::Debug for NodeCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCredentials")
            .field("cloud", &self.cloud.is_some())
            .field("plugins", &self.plugins.is_some())
            .field("required", &self.required)
            .finish()
    }
}

/// What the node's sources gave for one image.
#[derive(Debug, Default, Clone)]
pub(crate) struct Lookup {
    /// Credentials to try after the pull secrets, in order.
    pub(crate) credentials: Vec<Credential>,
    /// Why a source that matched the image gave nothing (e.g. "aws: unavailable: …"), for the
    /// image's message. Never holds a secret.
    pub(crate) notes: Vec<String>,
    /// A plugin that matched the image and failed: its name and why (never its output).
    pub(crate) failed_plugin: Option<(String, String)>,
    /// Each source that serves the image (a built-in provider's patterns, a plugin's
    /// `matchImages`) and gave no credential for it, with why: for the JSON
    /// (`providers_tried`) and for deciding whether an `unauthorized` counts.
    pub(crate) unavailable: Vec<ProviderTried>,
}

/// A node-side credential source that serves an image and gave nothing for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct ProviderTried {
    /// `aws`, `google`, `azure`, or `plugin <name>`.
    pub(crate) provider: String,
    /// Whether it is a built-in cloud provider or a kubelet plugin.
    #[serde(skip)]
    pub(crate) kind: ProviderKind,
    /// Why it gave nothing (never a secret, never a plugin's output).
    pub(crate) why: String,
}

/// The two kinds of node-side credential source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProviderKind {
    /// ECR, Artifact Registry / GCR, ACR, from the pod's cloud identity.
    Cloud,
    /// A `CredentialProviderConfig` exec plugin.
    Plugin,
}

impl NodeCredentials {
    /// No node credentials at all.
    pub(crate) fn none() -> NodeCredentials {
        NodeCredentials::default()
    }

    /// The sources of a run: built-in cloud providers (when `cloud` is given) and exec
    /// plugins (when `plugins` is given).
    pub(crate) fn new(
        cloud: Option<cloud::Cloud>,
        plugins: Option<plugin::Plugins>,
    ) -> NodeCredentials {
        NodeCredentials {
            cloud: cloud.map(Arc::new),
            plugins: plugins.map(Arc::new),
            required: false,
        }
    }

    /// `--cloud-credentials required`: when the sources serve an image and none gives a
    /// credential for it, its `unauthorized` counts (by default it is a warning, since the
    /// kubelet asks the same sources with the node's identity).
    #[must_use]
    pub(crate) fn required(mut self, required: bool) -> NodeCredentials {
        self.required = required;
        self
    }

    /// Whether `--cloud-credentials required` was given.
    pub(crate) fn is_required(&self) -> bool {
        self.required
    }

    /// The node's credentials for one image. A plugin whose `matchImages` matches takes the
    /// image (as on a node where it is configured); the built-in providers serve the images no
    /// plugin matched. Returns by `deadline` at the latest.
    pub(crate) async fn lookup(&self, reference: &Reference, deadline: Instant) -> Lookup {
        let work = async {
            if let Some(plugins) = &self.plugins {
                if let Some(found) = plugins.lookup(reference, deadline).await {
                    return found;
                }
            }
            match &self.cloud {
                Some(cloud) => cloud.lookup(reference).await,
                None => Lookup::default(),
            }
        };
        match tokio::time::timeout_at(deadline, work).await {
            Ok(found) => found,
            Err(_) => {
                let why = "not ready before the deadline".to_string();
                // Which source would have served it, for the verdict and the JSON.
                let serving = match self
                    .plugins
                    .as_ref()
                    .and_then(|p| p.provider_for(reference))
                {
                    Some(name) => Some((format!("plugin {name}"), ProviderKind::Plugin)),
                    None => self
                        .cloud
                        .as_ref()
                        .and_then(|_| cloud::Provider::for_host(reference.api_host()))
                        .map(|p| (p.name().to_string(), ProviderKind::Cloud)),
                };
                Lookup {
                    notes: vec![format!("node credentials: {why}")],
                    unavailable: serving
                        .map(|(provider, kind)| ProviderTried {
                            provider,
                            kind,
                            why: why.clone(),
                        })
                        .into_iter()
                        .collect(),
                    ..Lookup::default()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyring::Secret;

    #[test]
    fn debug_shows_no_secret() {
        let lookup = Lookup {
            credentials: vec![Credential {
                username: "AWS".to_string(),
                password: Secret::new("ecr-token-value"),
                source: "aws pod identity".to_string(),
            }],
            notes: Vec::new(),
            failed_plugin: None,
            unavailable: Vec::new(),
        };
        let shown = format!("{lookup:?} {:?}", NodeCredentials::none());
        assert!(!shown.contains("ecr-token-value"), "{shown}");
        assert!(shown.contains("aws pod identity"));
    }
}
