//! How a run checks ([`Options`]): its deadline, its concurrency, its credentials, the node it
//! answers for and what counts; `Default` gives the CLI's defaults.

use crate::container_start::{ContainerFacts, StartCheck};
use crate::credentials::NodeCredentials;
use crate::keyring::Keyring;
use crate::node::NodeOptions;
use crate::progress::Events;
use crate::proof::{Network, OnUnreachable, OnUnverifiable};
use crate::registry::ClientOptions;
use crate::route::Router;
use std::sync::Arc;
use std::time::Duration;

/// How to check. `Default` gives the CLI's defaults.
#[derive(Debug, Clone)]
pub struct Options {
    /// The deadline for the whole run.
    pub timeout: Duration,
    /// How many images are checked at once: 1 to [`MAX_CONCURRENCY`](super::MAX_CONCURRENCY) (a library caller's 0 or
    /// `usize::MAX` is taken as the nearest bound, as the CLI refuses them).
    pub concurrency: usize,
    /// Plain-HTTP registries and extra CA certificates.
    pub client: ClientOptions,
    /// Pull credentials.
    pub keyring: Keyring,
    /// Registries (`host[:port]`, `docker.io`, or `*`) whose `unauthorized` verdicts, when no
    /// credential matched, are warnings: the node may pull with credentials of its own.
    pub allow_unauthenticated: Vec<String>,
    /// When the run's clock started; `None`: when the check starts. The CLI starts it before
    /// it asks credential helpers, so that their time counts against `--timeout`.
    pub started: Option<std::time::Instant>,
    /// The containers of the pod spec, for the start check: each is matched to its image by
    /// normalised reference. Empty: no start prediction.
    pub containers: Vec<ContainerFacts>,
    /// Whether to predict that containers will not start.
    pub start_check: StartCheck,
    /// Where progress goes while the check runs (nothing by default).
    pub events: Events,
    /// Images (as given among the images checked) whose pull policy is `IfNotPresent`: the
    /// node's own list is read first, and those it holds are not asked of their registry,
    /// unless its kubelet re-verifies a pod's credentials first (Kubernetes 1.35+,
    /// [`NodeOptions::verification`]): then they are asked with the pod's credentials, and a
    /// refusal is not counted. The other images are `Always`. See
    /// [`pull_policy::to_check`](crate::pull_policy::to_check).
    pub if_not_present: Vec<String>,
    /// Where to read the node's images from.
    pub node: NodeOptions,
    /// The node's registry configuration: where each image is asked.
    pub router: Arc<Router>,
    /// Whether `unreachable` fails the run (`--on-unreachable`).
    pub on_unreachable: OnUnreachable,
    /// Whether `unverifiable` fails the run (`--on-unverifiable`).
    pub on_unverifiable: OnUnverifiable,
    /// Whose loopback the run sees (`--network`): from a pod's own network, a registry on
    /// loopback is the node's and is not asked.
    pub network: Network,
    /// What the node would pull with (cloud providers, exec plugins), tried after the pull
    /// secrets. None by default; the CLI builds them from `--cloud-credentials` and
    /// `--image-credential-provider-config`.
    pub node_credentials: NodeCredentials,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            timeout: Duration::from_secs(60),
            concurrency: 16,
            client: ClientOptions::default(),
            keyring: Keyring::default(),
            allow_unauthenticated: Vec::new(),
            containers: Vec::new(),
            start_check: StartCheck::Auto,
            events: Events::default(),
            if_not_present: Vec::new(),
            node: NodeOptions::default(),
            router: Arc::new(Router::default()),
            on_unreachable: OnUnreachable::Fail,
            on_unverifiable: OnUnverifiable::Warn,
            network: Network::Host,
            started: None,
            node_credentials: NodeCredentials::none(),
        }
    }
}
