//! Google: the metadata server's access token for the default service account (GKE Workload
//! Identity serves the pod's own identity there), used as Basic `oauth2accesstoken:<token>`
//! for Artifact Registry and Container Registry. `GCE_METADATA_HOST` overrides the host, as in
//! Google's client libraries.

use super::{CloudAnswer, Env, Http, Step, json_str};
use crate::keyring::{Credential, Secret};

/// The credential from the metadata server.
pub(crate) async fn credential(env: &Env, http: &Http) -> CloudAnswer {
    let host = env
        .get("GCE_METADATA_HOST")
        .unwrap_or("metadata.google.internal")
        .trim()
        .to_string();
    let url = format!("http://{host}/computeMetadata/v1/instance/service-accounts/default/token");
    let identity = "google metadata default".to_string();
    let answer = http
        .metadata(|c| c.get(&url).header("metadata-flavor", "Google"))
        .await
        .map_err(|e| Step::unanswered("the metadata server", e).of(&identity))?;
    if answer.status != 200 {
        let detail = format!(" ({})", answer.shown());
        return Err(Step::refused(url, answer.status, detail).of(&identity));
    }
    let token = json_str(&answer.body, "access_token")
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            Step::Empty("the metadata server answered without a token".into()).of(&identity)
        })?;
    Ok(Credential {
        username: "oauth2accesstoken".to_string(),
        password: Secret::new(token.trim()),
        source: identity,
    })
}
