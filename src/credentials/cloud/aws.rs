//! AWS: the pod's AWS identity, in the SDKs' order as it applies in a pod (static env keys;
//! web identity, i.e. IRSA, through STS `AssumeRoleWithWebIdentity`; EKS Pod Identity or the
//! ECS container endpoint; IMDSv2, then the instance role), then ECR's
//! `GetAuthorizationToken` for the registry's region, signed with SigV4, which gives the
//! registry credential `AWS:<token>`.
//!
//! SigV4 is written here over `ring`'s HMAC-SHA256 and SHA-256 (already linked for TLS) rather
//! than taken from an SDK: the whole signer is the canonical request, the string to sign and
//! four HMACs, and the SDK crates would cost megabytes of the binary's 4 MiB budget. The
//! integration tests check every signature with botocore's independent signer.
//!
//! Endpoints follow the SDKs' overrides: `AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL_ECR`,
//! `AWS_ENDPOINT_URL` (both), `AWS_EC2_METADATA_SERVICE_ENDPOINT`; `AWS_EC2_METADATA_DISABLED`
//! turns IMDS off.

use super::{
    Answered, CloudAnswer, CloudError, Env, Http, Step, form_encode, json_str, read_token_file,
    uri_encode,
};
use crate::keyring::{Credential, Secret};
use base64::Engine;
use ring::{digest, hmac};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The sources looked at before the instance metadata service, for its errors.
const NO_SOURCE: &str = "no AWS credential source: no AWS_ACCESS_KEY_ID, no AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (IRSA), no AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity), and the instance metadata service";

/// What a metadata hop limit of 1 looks like, and what to do about it.
const HOP_HINT: &str = "the IMDSv2 token answer did not arrive within 0.5s, as when the instance's metadata hop limit is 1 (raise HttpPutResponseHopLimit to 2, or give the pod IRSA or EKS Pod Identity)";

/// Why the instance metadata service (at its base URL) gives no role to ask for keys.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ImdsError {
    /// A 403 to the session token: IMDS is off.
    #[error(
        "{NO_SOURCE} at {0} refused a session token (403: IMDS is turned off for this instance)"
    )]
    Off(String),
    /// The session token never came and the roles could not be asked.
    #[error("instance metadata at {0}: {HOP_HINT}")]
    HopLimit(String),
    /// The session token never came, and IMDSv1 is off.
    #[error("instance metadata at {0}: {HOP_HINT}, and IMDSv1 is off (401)")]
    HopLimitV1Off(String),
    /// The instance has no role.
    #[error("instance metadata at {0}: the instance has no IAM role (404)")]
    NoRole(String),
    /// The roles' URL answered another status.
    #[error("instance metadata at {0} answered {1}")]
    Status(String, u16),
    /// The role's name is empty or would leave the roles' path.
    #[error("instance metadata at {0}: no usable IAM role name")]
    BadRole(String),
}

/// An ECR registry host, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EcrHost {
    /// The region, from the host name.
    pub(crate) region: String,
    /// `dkr.ecr-fips`: the FIPS API endpoint.
    pub(crate) fips: bool,
    /// `amazonaws.com.cn`: the China partition.
    pub(crate) china: bool,
}

impl EcrHost {
    /// `<account>.dkr.ecr.<region>.amazonaws.com`, `….amazonaws.com.cn`,
    /// `<account>.dkr.ecr-fips.<region>.amazonaws.com`: one label per `*` of the upstream
    /// patterns.
    pub(crate) fn parse(host: &str) -> Option<EcrHost> {
        let labels: Vec<&str> = host.split('.').collect();
        let (head, china) = match labels.as_slice() {
            [head @ .., "amazonaws", "com"] => (head, false),
            [head @ .., "amazonaws", "com", "cn"] => (head, true),
            _ => return None,
        };
        match head {
            [account, "dkr", ecr @ ("ecr" | "ecr-fips"), region]
                if !account.is_empty() && !region.is_empty() =>
            {
                let fips = *ecr == "ecr-fips";
                if fips && china {
                    return None;
                }
                Some(EcrHost {
                    region: (*region).to_string(),
                    fips,
                    china,
                })
            }
            _ => None,
        }
    }

    /// One ECR token per API endpoint.
    pub(crate) fn api_key(&self) -> String {
        format!(
            "{}{}{}",
            self.region,
            if self.fips { " fips" } else { "" },
            if self.china { " cn" } else { "" }
        )
    }

    fn api_endpoint(&self, env: &Env) -> String {
        if let Some(url) = env
            .get("AWS_ENDPOINT_URL_ECR")
            .or_else(|| env.get("AWS_ENDPOINT_URL"))
        {
            return url.trim().trim_end_matches('/').to_string();
        }
        let region = &self.region;
        match (self.fips, self.china) {
            (true, _) => format!("https://ecr-fips.{region}.amazonaws.com"),
            (false, true) => format!("https://api.ecr.{region}.amazonaws.com.cn"),
            (false, false) => format!("https://api.ecr.{region}.amazonaws.com"),
        }
    }
}

/// AWS credentials, and the identity they are (for messages: never the secret).
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    /// The access key ID.
    pub(crate) access_key_id: String,
    /// The secret access key.
    pub(crate) secret_access_key: Secret,
    /// The session token of temporary credentials.
    pub(crate) session_token: Option<Secret>,
    /// Who: `aws web identity arn:aws:iam::…:role/x`.
    pub(crate) identity: String,
}

/// The pod's AWS identity, from the first source that is configured. `region` is the
/// registry's, for STS when `AWS_REGION` is not set.
pub(crate) async fn identity(env: &Env, http: &Http, region: &str) -> Result<Keys, CloudError> {
    if let (Some(id), Some(secret)) = (
        env.get("AWS_ACCESS_KEY_ID"),
        env.get("AWS_SECRET_ACCESS_KEY"),
    ) {
        return Ok(Keys {
            access_key_id: id.trim().to_string(),
            secret_access_key: Secret::new(secret.trim()),
            session_token: env.get("AWS_SESSION_TOKEN").map(|t| Secret::new(t.trim())),
            identity: format!("aws env keys {}", shown_key_id(id)),
        });
    }
    if let (Some(file), Some(role)) = (
        env.get("AWS_WEB_IDENTITY_TOKEN_FILE"),
        env.get("AWS_ROLE_ARN"),
    ) {
        return web_identity(env, http, region, file, role.trim()).await;
    }
    if env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
        || env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
    {
        return container(env, http).await;
    }
    if env
        .get("AWS_EC2_METADATA_DISABLED")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Err(CloudError::AwsDisabled);
    }
    // One second in all, whatever each step's own limit leaves over (connecting, reading a
    // body that trickles in): a metadata service answering each step just in time must not
    // stretch it.
    match tokio::time::timeout(super::METADATA_TIMEOUT, imds(env, http)).await {
        Ok(keys) => keys,
        Err(_) => Err(CloudError::MetadataTimeout(super::METADATA_TIMEOUT)),
    }
}

/// Only the key ID's last four characters: enough to tell keys apart.
fn shown_key_id(id: &str) -> String {
    let id = id.trim();
    let tail: String = id
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("…{}", tail.escape_default())
}

async fn web_identity(
    env: &Env,
    http: &Http,
    region: &str,
    file: &str,
    role: &str,
) -> Result<Keys, CloudError> {
    let identity = format!("aws web identity {}", role.escape_default());
    let token = read_token_file(file).map_err(|e| Step::from(e).of(&identity))?;
    let region = env
        .get("AWS_REGION")
        .or_else(|| env.get("AWS_DEFAULT_REGION"))
        .unwrap_or(region)
        .trim();
    let endpoint = match env
        .get("AWS_ENDPOINT_URL_STS")
        .or_else(|| env.get("AWS_ENDPOINT_URL"))
    {
        Some(url) => url.trim().trim_end_matches('/').to_string(),
        None if region.starts_with("cn-") => format!("https://sts.{region}.amazonaws.com.cn"),
        None => format!("https://sts.{region}.amazonaws.com"),
    };
    let session = env
        .get("AWS_ROLE_SESSION_NAME")
        .map(str::to_string)
        .unwrap_or_else(|| format!("pullcheck-{}", unix_now()));
    let form = [
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", role),
        ("RoleSessionName", session.as_str()),
        ("WebIdentityToken", token.as_str()),
    ];
    let body = form_encode(&form);
    let url = format!("{endpoint}/");
    let answer = http
        .api(|c| {
            c.post(&url)
                .header("content-type", "application/x-www-form-urlencoded")
                .header("accept", "application/xml")
                .body(body)
        })
        .await
        .map_err(|e| Step::unanswered("STS", e).of(&identity))?;
    if answer.status != 200 {
        let endpoint = format!("STS AssumeRoleWithWebIdentity at {url}");
        return Err(Step::refused(endpoint, answer.status, aws_error(&answer)).of(&identity));
    }
    let text = String::from_utf8_lossy(&answer.body);
    let field = |tag: &str| xml_text(&text, tag);
    match (field("AccessKeyId"), field("SecretAccessKey")) {
        (Some(id), Some(secret)) => Ok(Keys {
            access_key_id: id,
            secret_access_key: Secret::new(secret),
            session_token: field("SessionToken").map(Secret::new),
            identity,
        }),
        _ => Err(Step::Empty("STS answered 200 without credentials".into()).of(&identity)),
    }
}

/// EKS Pod Identity (`AWS_CONTAINER_CREDENTIALS_FULL_URI` with a token file), or the ECS
/// container endpoint.
async fn container(env: &Env, http: &Http) -> Result<Keys, CloudError> {
    let url = match (
        env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
        env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
    ) {
        (Some(full), _) => full.trim().to_string(),
        (None, Some(rel)) => format!("http://169.254.170.2{}", rel.trim()),
        (None, None) => return Err(CloudError::NoContainerEndpoint),
    };
    let identity = "aws pod identity".to_string();
    // The SDKs send credentials-endpoint tokens over plain HTTP only to the link-local agents
    // and loopback.
    let parsed = reqwest::Url::parse(&url).map_err(|_| Step::NotUrl.of(&identity))?;
    let host = parsed.host_str().unwrap_or_default();
    let allowed_plain = matches!(
        host,
        "127.0.0.1" | "localhost" | "[::1]" | "169.254.170.2" | "169.254.170.23" | "[fd00:ec2::23]"
    );
    if parsed.scheme() != "https" && !allowed_plain {
        return Err(Step::PlainHttp(url.escape_default().to_string()).of(&identity));
    }
    let token = match (
        env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
        env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
    ) {
        (Some(file), _) => Some(read_token_file(file).map_err(|e| Step::from(e).of(&identity))?),
        (None, Some(t)) => Some(t.trim().to_string()),
        (None, None) => None,
    };
    let answer = http
        .metadata(|c| {
            let req = c.get(parsed.clone());
            match &token {
                Some(t) => req.header("authorization", super::sensitive(t)),
                None => req,
            }
        })
        .await
        .map_err(|e| Step::transport(e).of(&identity))?;
    if answer.status != 200 {
        return Err(Step::refused(url, answer.status, aws_error(&answer)).of(&identity));
    }
    keys_from_json(&answer.body, identity)
}

async fn imds(env: &Env, http: &Http) -> Result<Keys, CloudError> {
    let base = env
        .get("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .unwrap_or("http://169.254.169.254")
        .trim()
        .trim_end_matches('/')
        .to_string();
    let token_url = format!("{base}/latest/api/token");
    // IMDSv2: a session token first. Its answer is the one a hop limit of 1 drops on its way
    // into a pod: the connection opens, the answer never comes.
    let mut hop_limit = false;
    // One second for the whole exchange (token, role, keys), as for every metadata endpoint:
    // each step gets what is left of it (each had its own second, 2.5 s in all).
    let until = tokio::time::Instant::now() + super::METADATA_TIMEOUT;
    let left = || until.saturating_duration_since(tokio::time::Instant::now());
    let half = super::METADATA_TIMEOUT / 2;
    let token = match http
        .metadata_within(half.min(left()), |c| {
            c.put(&token_url)
                .header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
        })
        .await
    {
        Ok(a) if a.status == 200 => Some(String::from_utf8_lossy(&a.body).trim().to_string()),
        Ok(a) if a.status == 403 => return Err(ImdsError::Off(base).into()),
        // 404/405: an IMDS without v2; the v1 request below says more.
        Ok(_) => None,
        Err(e) if e.is_timeout() => {
            hop_limit = true;
            None
        }
        Err(e) => return Err(no_source(e)),
    };
    let with_token = |req: reqwest::RequestBuilder| match &token {
        Some(t) => req.header("x-aws-ec2-metadata-token", super::sensitive(t)),
        None => req,
    };
    let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
    let roles = http
        .metadata_within(left(), |c| with_token(c.get(&roles_url)))
        .await
        .map_err(|e| {
            if hop_limit {
                ImdsError::HopLimit(base.clone()).into()
            } else {
                no_source(e)
            }
        })?;
    match roles.status {
        200 => {}
        401 if hop_limit => return Err(ImdsError::HopLimitV1Off(base).into()),
        404 => return Err(ImdsError::NoRole(base).into()),
        s => return Err(ImdsError::Status(roles_url, s).into()),
    }
    let role = String::from_utf8_lossy(&roles.body)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if role.is_empty() || role.contains('/') {
        return Err(ImdsError::BadRole(base).into());
    }
    let identity = format!("aws instance profile {}", role.escape_default());
    let keys_url = format!("{roles_url}{role}");
    let answer = http
        .metadata_within(left(), |c| with_token(c.get(&keys_url)))
        .await
        .map_err(|e| Step::transport(e).of(&identity))?;
    if answer.status != 200 {
        return Err(Step::refused(keys_url, answer.status, String::new()).of(&identity));
    }
    keys_from_json(&answer.body, identity)
}

/// The instance metadata service, the last source, did not answer.
fn no_source(e: super::TransportError) -> CloudError {
    CloudError::NoSource {
        sources: NO_SOURCE,
        why: Arc::new(e),
    }
}

fn keys_from_json(body: &[u8], identity: String) -> Result<Keys, CloudError> {
    match (
        json_str(body, "AccessKeyId"),
        json_str(body, "SecretAccessKey"),
    ) {
        (Some(id), Some(secret)) => Ok(Keys {
            access_key_id: id,
            secret_access_key: Secret::new(secret),
            session_token: json_str(body, "Token").map(Secret::new),
            identity,
        }),
        _ => Err(Step::Empty("the answer holds no credentials".into()).of(&identity)),
    }
}

/// ECR's `GetAuthorizationToken` for the registry's region: the credential `AWS:<token>`.
pub(crate) async fn ecr_token(env: &Env, http: &Http, host: &EcrHost, keys: &Keys) -> CloudAnswer {
    let endpoint = host.api_endpoint(env);
    let url = reqwest::Url::parse(&format!("{endpoint}/"))
        .map_err(|_| CloudError::EcrEndpoint(endpoint.escape_default().to_string()))?;
    let body = b"{}".to_vec();
    let amz_date = amz_date(SystemTime::now());
    let mut headers = vec![
        (
            "content-type".to_string(),
            "application/x-amz-json-1.1".to_string(),
        ),
        ("host".to_string(), host_header(&url)),
        ("x-amz-date".to_string(), amz_date.clone()),
        (
            "x-amz-target".to_string(),
            "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken".to_string(),
        ),
    ];
    if let Some(t) = &keys.session_token {
        headers.push(("x-amz-security-token".to_string(), t.expose().to_string()));
    }
    let authorization = sign(&Signing {
        method: "POST",
        url: &url,
        headers: &headers,
        body: &body,
        keys,
        region: &host.region,
        service: "ecr",
        amz_date: &amz_date,
    });
    let who = &keys.identity;
    let answer = http
        .api(|c| {
            let mut req = c.post(url.clone()).body(body);
            for (name, value) in &headers {
                if name != "host" {
                    req = req.header(name.as_str(), super::sensitive(value));
                }
            }
            req.header("authorization", super::sensitive(&authorization))
        })
        .await
        .map_err(|e| Step::unanswered("ECR GetAuthorizationToken", e).of(who))?;
    if answer.status != 200 {
        let endpoint = format!("ECR GetAuthorizationToken in {}", host.region);
        return Err(Step::refused(endpoint, answer.status, aws_error(&answer)).of(who));
    }
    let token = serde_json::from_slice::<serde_json::Value>(&answer.body)
        .ok()
        .and_then(|v| {
            v.get("authorizationData")?
                .get(0)?
                .get("authorizationToken")?
                .as_str()
                .map(str::to_string)
        })
        .ok_or_else(|| {
            Step::Empty("ECR GetAuthorizationToken answered 200 without a token".into()).of(who)
        })?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| Step::Empty("ECR's token is not base64 text".into()).of(who))?;
    let Some((user, password)) = decoded.split_once(':') else {
        return Err(Step::Empty("ECR's token is not user:password".into()).of(who));
    };
    Ok(Credential {
        username: user.to_string(),
        password: Secret::new(password),
        source: who.clone(),
    })
}

/// `Code: Message` of an AWS error answer (XML or JSON), cut and escaped.
fn aws_error(answer: &Answered) -> String {
    let text = String::from_utf8_lossy(&answer.body);
    let code = xml_text(&text, "Code")
        .or_else(|| json_str(&answer.body, "__type").or_else(|| json_str(&answer.body, "code")));
    let message = xml_text(&text, "Message").or_else(|| {
        json_str(&answer.body, "message").or_else(|| json_str(&answer.body, "Message"))
    });
    // The answer is the server's words: it may quote the token it was sent.
    let cut = |s: String| super::server_words(&s);
    match (code, message) {
        (Some(c), Some(m)) => format!(" ({}: {})", cut(c), cut(m)),
        (Some(c), None) => format!(" ({})", cut(c)),
        (None, Some(m)) => format!(" ({})", cut(m)),
        (None, None) => String::new(),
    }
}

/// The text of the first `<tag>…</tag>`, with XML's five entities decoded.
fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    Some(
        xml[start..end]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// What a SigV4 signature covers.
pub(crate) struct Signing<'a> {
    /// `POST`.
    pub(crate) method: &'a str,
    /// The URL (path and query are signed).
    pub(crate) url: &'a reqwest::Url,
    /// The headers to sign, lower-case names, `host` included.
    pub(crate) headers: &'a [(String, String)],
    /// The payload.
    pub(crate) body: &'a [u8],
    /// The credentials.
    pub(crate) keys: &'a Keys,
    /// The region.
    pub(crate) region: &'a str,
    /// The service (`ecr`).
    pub(crate) service: &'a str,
    /// `YYYYMMDD'T'HHMMSS'Z'`, as in the `x-amz-date` header.
    pub(crate) amz_date: &'a str,
}

/// The `Authorization` header of a SigV4-signed request.
pub(crate) fn sign(s: &Signing<'_>) -> String {
    let mut headers: Vec<(String, String)> = s
        .headers
        .iter()
        .map(|(k, v)| {
            let value = v.split_whitespace().collect::<Vec<_>>().join(" ");
            (k.to_ascii_lowercase(), value)
        })
        .collect();
    headers.sort();
    let signed_headers = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let path = s.url.path();
    let canonical_uri = if path.is_empty() {
        "/".to_string()
    } else {
        path.split('/')
            .map(uri_encode)
            .collect::<Vec<_>>()
            .join("/")
    };
    let mut query: Vec<(String, String)> = s
        .url
        .query_pairs()
        .map(|(k, v)| (uri_encode(&k), uri_encode(&v)))
        .collect();
    query.sort();
    let canonical_query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let canonical_request = format!(
        "{}\n{canonical_uri}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{}",
        s.method,
        hex(digest::digest(&digest::SHA256, s.body).as_ref())
    );
    let date = s.amz_date.get(..8).unwrap_or_default();
    let scope = format!("{date}/{}/{}/aws4_request", s.region, s.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{scope}\n{}",
        s.amz_date,
        hex(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let mut key = format!("AWS4{}", s.keys.secret_access_key.expose()).into_bytes();
    for part in [date, s.region, s.service, "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes());
    }
    let signature = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        s.keys.access_key_id
    )
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, data).as_ref().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `Host` header reqwest sends: the port only when it is not the scheme's default.
fn host_header(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
pub(crate) fn amz_date(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn example_keys() -> Keys {
        Keys {
            access_key_id: "AKIDEXAMPLE".to_string(),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: None,
            identity: "test".to_string(),
        }
    }

    /// The signature of a `GET` of `url` in AWS's SigV4 test suite (its keys, region, service
    /// and date), with the host and date headers under the names given (their case varies).
    fn suite_get(url: &str, [host, date]: [&str; 2]) -> String {
        let url = reqwest::Url::parse(url).unwrap();
        let headers = vec![
            (host.to_string(), "example.amazonaws.com".to_string()),
            (date.to_string(), "20150830T123600Z".to_string()),
        ];
        sign(&Signing {
            method: "GET",
            url: &url,
            headers: &headers,
            body: b"",
            keys: &example_keys(),
            region: "us-east-1",
            service: "service",
            amz_date: "20150830T123600Z",
        })
    }

    /// AWS's SigV4 test suite, case `get-vanilla`.
    #[test]
    fn sigv4_test_suite_get_vanilla() {
        let auth = suite_get("https://example.amazonaws.com/", ["Host", "X-Amz-Date"]);
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    /// AWS's SigV4 test suite, case `get-vanilla-query-order-key-case`.
    #[test]
    fn sigv4_test_suite_query_order() {
        let auth = suite_get(
            "https://example.amazonaws.com/?Param2=value2&Param1=value1",
            ["host", "x-amz-date"],
        );
        assert!(
            auth.ends_with(
                "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
            ),
            "{auth}"
        );
    }

    #[test]
    fn amz_dates() {
        assert_eq!(amz_date(UNIX_EPOCH), "19700101T000000Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        assert_eq!(amz_date(t), "20150830T123600Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(amz_date(leap), "20000229T000000Z");
    }

    #[test]
    fn ecr_hosts() {
        let h = EcrHost::parse("123456789012.dkr.ecr.eu-west-1.amazonaws.com").unwrap();
        assert_eq!(h.region, "eu-west-1");
        let env = Env::default();
        assert_eq!(
            h.api_endpoint(&env),
            "https://api.ecr.eu-west-1.amazonaws.com"
        );
        let cn = EcrHost::parse("1.dkr.ecr.cn-north-1.amazonaws.com.cn").unwrap();
        assert_eq!(
            cn.api_endpoint(&env),
            "https://api.ecr.cn-north-1.amazonaws.com.cn"
        );
        let fips = EcrHost::parse("1.dkr.ecr-fips.us-east-1.amazonaws.com").unwrap();
        assert_eq!(
            fips.api_endpoint(&env),
            "https://ecr-fips.us-east-1.amazonaws.com"
        );
        let env = Env::from_pairs([("AWS_ENDPOINT_URL_ECR", "http://127.0.0.1:9/")]);
        assert_eq!(h.api_endpoint(&env), "http://127.0.0.1:9");
        assert!(EcrHost::parse("1.dkr.ecr.amazonaws.com").is_none());
        assert!(EcrHost::parse("1.dkr.ecr-fips.cn-north-1.amazonaws.com.cn").is_none());
    }

    #[test]
    fn keys_debug_hides_secrets() {
        let mut k = example_keys();
        k.session_token = Some(Secret::new("session-secret"));
        let shown = format!("{k:?}");
        assert!(!shown.contains("EXAMPLEKEY") && !shown.contains("session-secret"));
    }

    #[test]
    fn sts_xml() {
        let xml = "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s&amp;k</SecretAccessKey></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>";
        assert_eq!(xml_text(xml, "AccessKeyId").as_deref(), Some("ASIA1"));
        assert_eq!(xml_text(xml, "SecretAccessKey").as_deref(), Some("s&k"));
        assert_eq!(xml_text(xml, "SessionToken"), None);
    }
}
