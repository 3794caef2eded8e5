//! Azure: an Entra ID token for the pod's identity (workload identity: the federated token
//! file exchanged at `AZURE_AUTHORITY_HOST`; else the IMDS managed identity), then the
//! registry's `POST /oauth2/exchange`, which turns it into an ACR refresh token, used as Basic
//! `00000000-0000-0000-0000-000000000000:<refresh token>` (what `acr-credential-provider`
//! gives the kubelet).
//!
//! `AZURE_POD_IDENTITY_AUTHORITY_HOST` overrides the IMDS endpoint, as in Azure's SDKs.

use super::{
    Answered, CloudAnswer, CloudError, Env, Http, Step, form_encode, json_str, read_token_file,
};
use crate::keyring::{Credential, Secret};

/// The user name ACR expects with a refresh token.
pub(crate) const ACR_REFRESH_USER: &str = "00000000-0000-0000-0000-000000000000";
/// The audience of the Entra token: Azure Resource Manager, which ACR's exchange accepts.
const SCOPE: &str = "https://management.azure.com/.default";
const RESOURCE: &str = "https://management.azure.com/";

/// An Entra ID access token and who it is for.
#[derive(Debug, Clone)]
pub(crate) struct EntraToken {
    token: Secret,
    tenant: Option<String>,
    identity: String,
}

/// The pod's Entra token: workload identity when its three variables are set, else IMDS.
pub(crate) async fn entra_token(env: &Env, http: &Http) -> Result<EntraToken, CloudError> {
    if let (Some(file), Some(client), Some(tenant)) = (
        env.get("AZURE_FEDERATED_TOKEN_FILE"),
        env.get("AZURE_CLIENT_ID"),
        env.get("AZURE_TENANT_ID"),
    ) {
        let (client, tenant) = (client.trim(), tenant.trim());
        let identity = format!("azure workload identity {}", client.escape_default());
        let assertion = read_token_file(file).map_err(|e| Step::from(e).of(&identity))?;
        let authority = env
            .get("AZURE_AUTHORITY_HOST")
            .unwrap_or("https://login.microsoftonline.com/")
            .trim()
            .trim_end_matches('/')
            .to_string();
        let url = format!("{authority}/{tenant}/oauth2/v2.0/token");
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client),
            ("scope", SCOPE),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", assertion.as_str()),
        ];
        let answer = post_form(http, "Entra ID", &url, &form)
            .await
            .map_err(|e| e.of(&identity))?;
        let token = json_str(&answer.body, "access_token")
            .ok_or_else(|| Step::Empty("Entra ID answered without a token".into()).of(&identity))?;
        return Ok(EntraToken {
            token: Secret::new(token),
            tenant: Some(tenant.to_string()),
            identity,
        });
    }
    let base = env
        .get("AZURE_POD_IDENTITY_AUTHORITY_HOST")
        .unwrap_or("http://169.254.169.254")
        .trim()
        .trim_end_matches('/')
        .to_string();
    let client = env.get("AZURE_CLIENT_ID").map(str::trim);
    let identity = match client {
        Some(c) => format!("azure managed identity {}", c.escape_default()),
        None => "azure managed identity".to_string(),
    };
    let mut query = vec![("api-version", "2018-02-01"), ("resource", RESOURCE)];
    if let Some(c) = client {
        query.push(("client_id", c));
    }
    let url = format!(
        "{base}/metadata/identity/oauth2/token?{}",
        form_encode(&query)
    );
    let answer = http
        .metadata(|c| c.get(&url).header("metadata", "true"))
        .await
        .map_err(|e| CloudError::NoSource {
            sources: "no Azure credential source: no AZURE_FEDERATED_TOKEN_FILE + AZURE_CLIENT_ID + AZURE_TENANT_ID (workload identity), and IMDS",
            why: std::sync::Arc::new(e),
        })?;
    if answer.status != 200 {
        let detail = format!(" ({})", oauth_error(&answer.body));
        return Err(Step::refused(format!("IMDS at {url}"), answer.status, detail).of(&identity));
    }
    let token = json_str(&answer.body, "access_token")
        .ok_or_else(|| Step::Empty("IMDS answered without a token".into()).of(&identity))?;
    Ok(EntraToken {
        token: Secret::new(token),
        tenant: None,
        identity,
    })
}

/// POSTs an OAuth form to `endpoint` (Entra ID's token endpoint, ACR's exchange, as the
/// error names it) and returns a 200 answer.
async fn post_form(
    http: &Http,
    endpoint: &str,
    url: &str,
    form: &[(&str, &str)],
) -> Result<Answered, Step> {
    let answer = http
        .api(|c| {
            c.post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form_encode(form))
        })
        .await
        .map_err(|e| Step::unanswered(endpoint, e))?;
    if answer.status != 200 {
        let detail = format!(" ({})", oauth_error(&answer.body));
        return Err(Step::refused(
            format!("{endpoint} at {url}"),
            answer.status,
            detail,
        ));
    }
    Ok(answer)
}

/// The registry's exchange: Entra token in, ACR refresh token out.
pub(crate) async fn exchange(
    env: &Env,
    http: &Http,
    registry: &str,
    token: &EntraToken,
) -> CloudAnswer {
    // The exchange is on the registry itself; tests point it at a stand-in on loopback, in a
    // build with the `test-hooks` feature only (src/test_hooks.rs).
    let base = crate::test_hooks::acr_exchange_base(|k| env.get(k))
        .unwrap_or_else(|| format!("https://{registry}"));
    let url = format!("{base}/oauth2/exchange");
    let who = &token.identity;
    let mut form = vec![
        ("grant_type", "access_token"),
        ("service", registry),
        ("access_token", token.token.expose()),
    ];
    if let Some(t) = &token.tenant {
        form.push(("tenant", t.as_str()));
    }
    let answer = post_form(http, &format!("{registry}'s token exchange"), &url, &form)
        .await
        .map_err(|e| e.of(who))?;
    let refresh = json_str(&answer.body, "refresh_token")
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            Step::Empty(format!(
                "{registry}'s exchange answered without a refresh token"
            ))
            .of(who)
        })?;
    Ok(Credential {
        username: ACR_REFRESH_USER.to_string(),
        password: Secret::new(refresh.trim()),
        source: who.clone(),
    })
}

/// `error: error_description` of an OAuth error answer, cut and escaped.
fn oauth_error(body: &[u8]) -> String {
    // The answer is the server's words: it may quote what it was sent.
    let cut = |s: String| super::server_words(&s);
    match (json_str(body, "error"), json_str(body, "error_description")) {
        (Some(e), Some(d)) => format!("{}: {}", cut(e), cut(d)),
        (Some(e), None) => cut(e),
        _ => "no OAuth error in the answer".to_string(),
    }
}
