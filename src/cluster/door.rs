//! The one door to the API server: a Kubernetes client made once per process, from the
//! configuration its command finds (the webhook: in-cluster only, and `--self-signed` outside a
//! cluster kube-rs's default order; the watcher: kube-rs's default order; doctor: kubectl's
//! order, or `--kubeconfig` and `--context`), and lent to every part that reads or writes
//! through it. The reads the wing shares (pull Secrets, the nodes, the LimitRanges, the Events'
//! recorder) are its methods, so that each is written once; the rest of a part's calls take
//! [`Door::client`].

#[cfg(feature = "webhook")]
use k8s_openapi::api::core::v1::LimitRange;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, ObjectList};

/// A client to the API server, cheap to clone (kube's client is shared underneath).
#[derive(Clone)]
pub(crate) struct Door {
    client: kube::Client,
}

impl Door {
    /// The door of the in-cluster configuration alone (the pod's service account), or why
    /// there is none: the webhook reads the LimitRanges, Nodes and Secrets of the cluster it
    /// runs in, and of no other.
    #[cfg(feature = "webhook")]
    pub(crate) fn in_cluster() -> Result<Door, String> {
        let config = kube::Config::incluster().map_err(|e| e.to_string())?;
        let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        Ok(Door { client })
    }

    /// The door of kube-rs's default order: `KUBECONFIG` (or `~/.kube/config`) when there is
    /// one, else the in-cluster configuration.
    pub(crate) async fn inferred() -> Result<Door, kube::Error> {
        Ok(Door {
            client: kube::Client::try_default().await?,
        })
    }

    /// The door of `kubeconfig` (a file) and `context`, in kubectl's order when neither is
    /// given (`KUBECONFIG`, `~/.kube/config`, in-cluster); why not, in words.
    pub(crate) async fn of_kubeconfig(
        kubeconfig: Option<&std::path::Path>,
        context: Option<&str>,
    ) -> Result<Door, String> {
        use kube::config::{KubeConfigOptions, Kubeconfig};
        let options = KubeConfigOptions {
            context: context.map(String::from),
            ..KubeConfigOptions::default()
        };
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let config = match (kubeconfig, context) {
            (Some(path), _) => {
                let file = Kubeconfig::read_from(path).map_err(|e| err(&e))?;
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|e| err(&e))?
            }
            (None, Some(_)) => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|e| err(&e))?,
            (None, None) => kube::Config::infer().await.map_err(|e| err(&e))?,
        };
        let client = kube::Client::try_from(config).map_err(|e| err(&e))?;
        Ok(Door { client })
    }

    /// The client itself, for the calls that are one part's alone (kube-runtime's watchers,
    /// the Lease, a pod's patch).
    pub(crate) fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The pull Secrets `names` of namespace `ns` as a keyring, and those that could not be
    /// read with why ([`crate::credentials::secrets::read`]).
    pub(crate) async fn pull_secrets(
        &self,
        ns: &str,
        names: impl IntoIterator<Item = String>,
    ) -> (crate::keyring::Keyring, Vec<(String, String)>) {
        crate::credentials::secrets::read(&self.client, ns, names).await
    }

    /// The `imagePullSecrets` of service account `name` in `ns`; none when it cannot be read.
    #[cfg(feature = "webhook")]
    pub(crate) async fn service_account_pull_secrets(&self, ns: &str, name: &str) -> Vec<String> {
        crate::credentials::secrets::of_service_account(&self.client, ns, name).await
    }

    /// One page of the cluster's Nodes, `params` saying its size and where it starts.
    pub(crate) async fn nodes(&self, params: &ListParams) -> Result<ObjectList<Node>, kube::Error> {
        Api::<Node>::all(self.client.clone()).list(params).await
    }

    /// One page of namespace `ns`'s LimitRanges.
    #[cfg(feature = "webhook")]
    pub(crate) async fn limit_ranges(
        &self,
        ns: &str,
        params: &ListParams,
    ) -> Result<ObjectList<LimitRange>, kube::Error> {
        Api::<LimitRange>::namespaced(self.client.clone(), ns)
            .list(params)
            .await
    }

    /// Every namespace's LimitRanges, for the watch that keeps them in memory.
    #[cfg(feature = "webhook")]
    pub(crate) fn all_limit_ranges(&self) -> Api<LimitRange> {
        Api::all(self.client.clone())
    }

    /// The writer of Events signed by `reporter` (kube-runtime's, which folds repeats into one
    /// Event with a count).
    #[cfg(feature = "watch")]
    pub(crate) fn recorder(
        &self,
        reporter: kube::runtime::events::Reporter,
    ) -> kube::runtime::events::Recorder {
        kube::runtime::events::Recorder::new(self.client.clone(), reporter)
    }
}
