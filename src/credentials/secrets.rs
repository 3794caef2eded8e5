//! Pull secrets read from the API server by name (the `watch` and `webhook` features): the
//! watcher's own look before it fails a pod, and the webhook's verdicts at admission, both read a
//! pod's `imagePullSecrets` into a [`Keyring`] matched as the kubelet matches it. Read for one
//! look and dropped after it: never logged (an API error may quote a Secret's name, never its
//! content), never kept.

use crate::keyring::Keyring;
use k8s_openapi::api::core::v1::Secret;
#[cfg(feature = "webhook")]
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::Api;

/// The most pull secrets read for one look: a pod names a few; a list longer than this is cut,
/// not read whole.
pub(crate) const MAX_PULL_SECRETS: usize = 16;

/// The Secrets `names` of namespace `ns` as a keyring, and those that could not be read with
/// why. At most [`MAX_PULL_SECRETS`]; a Secret that is not a Docker config is skipped.
pub(crate) async fn read(
    client: &kube::Client,
    ns: &str,
    names: impl IntoIterator<Item = String>,
) -> (Keyring, Vec<(String, String)>) {
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let mut keyring = Keyring::default();
    let mut unread = Vec::new();
    for name in names
        .into_iter()
        .filter(|n| !n.is_empty())
        .take(MAX_PULL_SECRETS)
    {
        let secret = match api.get(&name).await {
            Ok(s) => s,
            Err(e) => {
                unread.push((name, e.to_string()));
                continue;
            }
        };
        let data = secret.data.unwrap_or_default();
        let Some(text) = [".dockerconfigjson", ".dockercfg"]
            .iter()
            .find_map(|k| data.get(*k))
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
        else {
            unread.push((name, "not a Docker config Secret".into()));
            continue;
        };
        let label = format!("pull secret {ns}/{name}");
        // Its words are not logged: they may quote the Secret's content.
        if keyring
            .add_json(std::path::Path::new(&label), &label, &text)
            .is_err()
        {
            unread.push((name, "not a Docker config the kubelet reads".into()));
        }
    }
    (keyring, unread)
}

/// The `imagePullSecrets` of service account `name` in `ns` (what the ServiceAccount admission
/// plugin merges into a Pod when it is created, and so into every Pod of a Job); none when it
/// cannot be read.
#[cfg(feature = "webhook")]
pub(crate) async fn of_service_account(client: &kube::Client, ns: &str, name: &str) -> Vec<String> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    match api.get(name).await {
        Ok(sa) => sa
            .image_pull_secrets
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.name)
            .collect(),
        Err(_) => Vec::new(),
    }
}
