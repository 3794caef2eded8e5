//! Credentials that no pull secret holds: the ones the node would pull with. Two kinds, both
//! asked per image **after** the pod's pull secrets (the kubelet unions the secrets' keyring
//! first, then its providers'):
//!
//! - [`cloud`]: built-in providers for ECR, Artifact Registry / GCR and ACR, from the identity
//!   the pod has (`--cloud-credentials auto|off`);
//! - [`plugin`]: the kubelet's own exec credential-provider plugins
//!   (`--image-credential-provider-config`, `--image-credential-provider-bin-dir`).
//!
//! Everything here is asked at most once per run (per provider, region or registry), shared by
//! all images, and bounded by the run's deadline. A provider that cannot give a credential is
//! data ([`Lookup::notes`], [`Lookup::failed_plugin`]), never an error of the run.

pub mod cloud;
pub mod plugin;

use crate::keyring::Credential;
use crate::reference::Reference;
use std::sync::Arc;
use tokio::time::Instant;

/// The node's credential sources for a run. Cheap to clone (shared state).
#[derive(Clone, Default)]
pub struct NodeCredentials {
    cloud: Option<Arc<cloud::Cloud>>,
    plugins: Option<Arc<plugin::Plugins>>,
}

impl std::fmt::Debug for NodeCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCredentials")
            .field("cloud", &self.cloud.is_some())
            .field("plugins", &self.plugins.is_some())
            .finish()
    }
}

/// What the node's sources gave for one image.
#[derive(Debug, Default, Clone)]
pub struct Lookup {
    /// Credentials to try after the pull secrets, in order.
    pub credentials: Vec<Credential>,
    /// Why a source that matched the image gave nothing (e.g. "aws: unavailable: …"), for the
    /// image's message. Never holds a secret.
    pub notes: Vec<String>,
    /// A plugin that matched the image and failed: its name and why (never its output).
    pub failed_plugin: Option<(String, String)>,
}

impl NodeCredentials {
    /// No node credentials at all.
    pub fn none() -> NodeCredentials {
        NodeCredentials::default()
    }

    /// The sources of a run: built-in cloud providers (when `cloud` is given) and exec
    /// plugins (when `plugins` is given).
    pub fn new(cloud: Option<cloud::Cloud>, plugins: Option<plugin::Plugins>) -> NodeCredentials {
        NodeCredentials {
            cloud: cloud.map(Arc::new),
            plugins: plugins.map(Arc::new),
        }
    }

    /// The node's credentials for one image. A plugin whose `matchImages` matches takes the
    /// image (as on a node where it is configured); the built-in providers serve the images no
    /// plugin matched. Returns by `deadline` at the latest.
    pub async fn lookup(&self, reference: &Reference, deadline: Instant) -> Lookup {
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
            Err(_) => Lookup {
                notes: vec!["node credentials: not ready before the deadline".to_string()],
                ..Lookup::default()
            },
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
        };
        let shown = format!("{lookup:?} {:?}", NodeCredentials::none());
        assert!(!shown.contains("ecr-token-value"), "{shown}");
        assert!(shown.contains("aws pod identity"));
    }
}
