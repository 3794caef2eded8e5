//! The kubelet's `CredentialProviderConfig`, read and checked as the kubelet does: its
//! providers, their `matchImages` (globs per host label), Go durations, and what `inject`
//! adds for the providers that want a service-account token.

use super::{DEFAULT_TOKEN_DIR, TOKEN_EXPIRATION_SECONDS, TOKEN_VOLUME};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

/// `CredentialProviderConfig`, as the kubelet reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialProviderConfig {
    /// `kubelet.config.k8s.io/v1` (or `v1beta1`, `v1alpha1`).
    pub(crate) api_version: String,
    /// `CredentialProviderConfig`.
    pub(crate) kind: String,
    /// The providers, in order.
    #[serde(default)]
    pub(crate) providers: Vec<ProviderConfig>,
}

/// One provider of the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    /// The plugin's file name in the bin dir.
    pub(crate) name: String,
    /// The images it serves.
    #[serde(default)]
    pub(crate) match_images: Vec<String>,
    /// How long an answer without `cacheDuration` is kept (a Go duration, `12h`).
    #[serde(default)]
    pub(crate) default_cache_duration: Option<String>,
    /// `credentialprovider.kubelet.k8s.io/v1`.
    pub(crate) api_version: String,
    /// Command-line arguments.
    #[serde(default)]
    pub(crate) args: Vec<String>,
    /// Environment variables added to pullcheck's own.
    #[serde(default)]
    pub(crate) env: Vec<EnvVar>,
    /// Service-account tokens for image pulls.
    #[serde(default)]
    pub(crate) token_attributes: Option<TokenAttributes>,
}

/// `name`/`value`.
#[derive(Debug, Clone, Deserialize)]
pub struct EnvVar {
    /// The name.
    pub(crate) name: String,
    /// The value.
    #[serde(default)]
    pub(crate) value: String,
}

/// A provider's service-account token settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenAttributes {
    /// The token's audience.
    pub(crate) service_account_token_audience: String,
    /// Whether the plugin must get a token.
    #[serde(default)]
    pub(crate) require_service_account: Option<bool>,
    /// Annotations the kubelet must pass (pullcheck cannot read them: none are passed).
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "read so that a config reads as the kubelet reads it"
    )]
    pub(crate) required_service_account_annotation_keys: Vec<String>,
    /// Annotations the kubelet passes when present.
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "read so that a config reads as the kubelet reads it"
    )]
    pub(crate) optional_service_account_annotation_keys: Vec<String>,
}

pub(super) const REQUEST_VERSIONS: [&str; 3] = [
    "credentialprovider.kubelet.k8s.io/v1",
    "credentialprovider.kubelet.k8s.io/v1beta1",
    "credentialprovider.kubelet.k8s.io/v1alpha1",
];

impl CredentialProviderConfig {
    /// Parses the file (YAML or JSON) and checks what the kubelet checks; all problems at once.
    pub(crate) fn parse(text: &str) -> Result<CredentialProviderConfig, Vec<String>> {
        let config: CredentialProviderConfig =
            serde_yaml_ng::from_str(text).map_err(|e| vec![e.to_string()])?;
        let mut errors = Vec::new();
        if !config.api_version.starts_with("kubelet.config.k8s.io/") {
            errors.push(format!(
                "apiVersion {:?} is not kubelet.config.k8s.io/v1",
                config.api_version
            ));
        }
        if config.kind != "CredentialProviderConfig" {
            errors.push(format!(
                "kind {:?} is not CredentialProviderConfig",
                config.kind
            ));
        }
        if config.providers.is_empty() {
            errors.push("no providers".to_string());
        }
        let mut names = std::collections::HashSet::new();
        for p in &config.providers {
            let name = p.name.escape_default();
            if p.name.is_empty()
                || p.name.contains('/')
                || p.name.contains('\\')
                || p.name == "."
                || p.name == ".."
            {
                errors.push(format!("provider name {name:?} is not a file name"));
            }
            if !names.insert(p.name.clone()) {
                errors.push(format!("provider {name} appears twice"));
            }
            if p.match_images.is_empty() {
                errors.push(format!("provider {name}: matchImages is empty"));
            }
            for m in &p.match_images {
                if Pattern::parse(m).is_none() {
                    errors.push(format!(
                        "provider {name}: matchImages {:?} is not a valid pattern",
                        m.escape_default().to_string()
                    ));
                }
            }
            match &p.default_cache_duration {
                None => errors.push(format!("provider {name}: defaultCacheDuration is missing")),
                Some(d) if parse_go_duration(d).is_none() => errors.push(format!(
                    "provider {name}: defaultCacheDuration {:?} is not a duration",
                    d.escape_default().to_string()
                )),
                Some(_) => {}
            }
            if !REQUEST_VERSIONS.contains(&p.api_version.as_str()) {
                errors.push(format!(
                    "provider {name}: apiVersion {:?} is not credentialprovider.kubelet.k8s.io/v1",
                    p.api_version.escape_default().to_string()
                ));
            }
            if let Some(t) = &p.token_attributes {
                if t.service_account_token_audience.trim().is_empty() {
                    errors.push(format!(
                        "provider {name}: tokenAttributes.serviceAccountTokenAudience is empty"
                    ));
                }
                if t.require_service_account.is_none() {
                    errors.push(format!(
                        "provider {name}: tokenAttributes.requireServiceAccount is missing"
                    ));
                }
            }
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }
}

/// What `pullcheck inject --credential-provider-config` adds to the init container so that
/// providers with `tokenAttributes` get the pod's service-account token: one projected
/// `serviceAccountToken` source per such provider (its audience, at `<name>/token`), the
/// volume's mount and the variable that tells the check where it is. `None` when no provider
/// has `tokenAttributes`.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectAdditions {
    /// The pod's new volume.
    pub(crate) volume: Value,
    /// The init container's new volume mount.
    pub(crate) mount: Value,
    /// The init container's new environment variable.
    pub(crate) env: Value,
}

/// See [`InjectAdditions`].
pub fn inject_additions(config: &CredentialProviderConfig) -> Option<InjectAdditions> {
    let sources: Vec<Value> = config
        .providers
        .iter()
        .filter_map(|p| {
            let t = p.token_attributes.as_ref()?;
            Some(json!({
                "serviceAccountToken": {
                    "audience": t.service_account_token_audience,
                    "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                    "path": format!("{}/token", p.name),
                }
            }))
        })
        .collect();
    if sources.is_empty() {
        return None;
    }
    Some(InjectAdditions {
        volume: json!({
            "name": TOKEN_VOLUME,
            "projected": { "sources": sources },
        }),
        mount: json!({
            "name": TOKEN_VOLUME,
            "mountPath": DEFAULT_TOKEN_DIR,
            "readOnly": true,
        }),
        env: json!({
            "name": "PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR",
            "value": DEFAULT_TOKEN_DIR,
        }),
    })
}

/// A `matchImages` pattern or an `auth` key, parsed as the kubelet parses them (a URL without
/// scheme).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pattern {
    pub(super) labels: Vec<String>,
    pub(super) port: Option<String>,
    pub(super) path: String,
}

impl Pattern {
    pub(super) fn parse(s: &str) -> Option<Pattern> {
        let s = s.trim();
        let s = s
            .strip_prefix("https://")
            .or_else(|| s.strip_prefix("http://"))
            .unwrap_or(s);
        let (host_port, path) = match s.find('/') {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, ""),
        };
        let (host, port) = match host_port.rsplit_once(':') {
            Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                (h, Some(p.to_string()))
            }
            Some(_) => return None,
            None => (host_port, None),
        };
        if host.is_empty() {
            return None;
        }
        Some(Pattern {
            labels: host.split('.').map(str::to_ascii_lowercase).collect(),
            port,
            path: path.to_string(),
        })
    }

    /// The kubelet's `URLsMatch`: the port exactly, as many labels, the path a prefix, each
    /// label a glob (`filepath.Match`).
    pub(super) fn matches(&self, target: &Pattern) -> bool {
        self.port == target.port
            && self.labels.len() == target.labels.len()
            && target.path.starts_with(&self.path)
            && self
                .labels
                .iter()
                .zip(&target.labels)
                .all(|(p, t)| glob(p.as_bytes(), t.as_bytes()))
    }
}

/// Go's `filepath.Match` for one label (no separators inside): `*`, `?`, `[…]` with ranges and
/// `^`, `\` escapes. A malformed pattern matches nothing.
pub(super) fn glob(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => (0..=s.len()).any(|i| glob(&p[1..], &s[i..])),
        Some(b'?') => !s.is_empty() && glob(&p[1..], &s[1..]),
        Some(b'[') => {
            let Some((&c, rest)) = s.split_first() else {
                return false;
            };
            let mut i = 1;
            let negate = p.get(i) == Some(&b'^');
            if negate {
                i += 1;
            }
            let mut matched = false;
            let mut first = true;
            loop {
                match p.get(i) {
                    None => return false,
                    Some(b']') if !first => break,
                    Some(_) => {}
                }
                first = false;
                let Some(lo) = class_char(p, &mut i) else {
                    return false;
                };
                let mut hi = lo;
                if p.get(i) == Some(&b'-') && p.get(i + 1) != Some(&b']') {
                    i += 1;
                    let Some(h) = class_char(p, &mut i) else {
                        return false;
                    };
                    hi = h;
                }
                if lo <= c && c <= hi {
                    matched = true;
                }
            }
            matched != negate && glob(&p[i + 1..], rest)
        }
        Some(b'\\') => match (p.get(1), s.first()) {
            (Some(e), Some(c)) => e == c && glob(&p[2..], &s[1..]),
            _ => false,
        },
        Some(&c) => s.first() == Some(&c) && glob(&p[1..], &s[1..]),
    }
}

pub(super) fn class_char(p: &[u8], i: &mut usize) -> Option<u8> {
    let mut c = *p.get(*i)?;
    if c == b'\\' {
        *i += 1;
        c = *p.get(*i)?;
    }
    *i += 1;
    Some(c)
}

/// A Go duration (`12h`, `1h30m`, `0s`, `500ms`, `1.5h`).
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s == "0" {
        return Some(Duration::ZERO);
    }
    if s.is_empty() || s.starts_with('-') {
        return None;
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    // Saturates: a year is far beyond any run.
    Some(Duration::from_secs_f64(total.min(366.0 * 86_400.0)))
}
