//! The kubelet's exec credential-provider plugins, run as the kubelet runs them.
//!
//! `--image-credential-provider-config` is the kubelet's own file (`CredentialProviderConfig`,
//! `kubelet.config.k8s.io/v1`) and `--image-credential-provider-bin-dir` its plugin folder. For
//! an image, the first provider whose `matchImages` matches (the kubelet's rules: a glob per
//! host label, the same number of labels, the port exactly, the path as a prefix) runs with its
//! `args` and `env` (added to pullcheck's own), a `CredentialProviderRequest` on stdin, and its
//! `CredentialProviderResponse` is read from stdout. The `auth` entries that match the image
//! are its credentials, most specific first. Answers are cached within the run by
//! `cacheKeyType` (`Image`, `Registry`, `Global`) for `cacheDuration` (else the provider's
//! `defaultCacheDuration`; zero: not cached).
//!
//! With `tokenAttributes`, the plugin also gets the pod's service-account token for the
//! configured audience, read from a projected volume (`<token dir>/<provider name>/token`,
//! which `pullcheck inject --credential-provider-config` adds: see [`inject_additions`]).
//!
//! A plugin that fails, hangs past half of the time left, or prints something that is not a
//! response, fails the lookup for the run (it is not run again) and the image's verdict names
//! it (`provider_failed`). Its output is never shown: it may hold secrets.
//!
//! A plugin runs in a process group of its own, killed when its run ends (a child it leaves
//! behind would outlive pullcheck), and its answer is read once the plugin itself has exited,
//! whoever still holds the pipe. Of the answer, read without building a tree of it, only the
//! `auth` entries that serve an image of the run are kept ([`Plugins::for_images`]).

use super::Lookup;
use crate::keyring::{Credential, Secret};
use crate::reference::Reference;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// Where `pullcheck inject` mounts the projected service-account tokens, and where a check
/// reads them by default.
pub const DEFAULT_TOKEN_DIR: &str = "/var/run/secrets/pullcheck/credential-providers";
/// The name of the projected volume `pullcheck inject` adds.
pub const TOKEN_VOLUME: &str = "pullcheck-provider-tokens";
/// The most of a plugin's stdout read.
const MAX_RESPONSE: u64 = 1024 * 1024;
/// The lifetime asked for projected tokens (the API's minimum is 10 minutes).
const TOKEN_EXPIRATION_SECONDS: u64 = 3600;

/// `CredentialProviderConfig`, as the kubelet reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialProviderConfig {
    /// `kubelet.config.k8s.io/v1` (or `v1beta1`, `v1alpha1`).
    pub api_version: String,
    /// `CredentialProviderConfig`.
    pub kind: String,
    /// The providers, in order.
    #[serde(default)]
    pub providers: Vec<ProviderConfig>,
}

/// One provider of the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    /// The plugin's file name in the bin dir.
    pub name: String,
    /// The images it serves.
    #[serde(default)]
    pub match_images: Vec<String>,
    /// How long an answer without `cacheDuration` is kept (a Go duration, `12h`).
    #[serde(default)]
    pub default_cache_duration: Option<String>,
    /// `credentialprovider.kubelet.k8s.io/v1`.
    pub api_version: String,
    /// Command-line arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables added to pullcheck's own.
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Service-account tokens for image pulls.
    #[serde(default)]
    pub token_attributes: Option<TokenAttributes>,
}

/// `name`/`value`.
#[derive(Debug, Clone, Deserialize)]
pub struct EnvVar {
    /// The name.
    pub name: String,
    /// The value.
    #[serde(default)]
    pub value: String,
}

/// A provider's service-account token settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenAttributes {
    /// The token's audience.
    pub service_account_token_audience: String,
    /// Whether the plugin must get a token.
    #[serde(default)]
    pub require_service_account: Option<bool>,
    /// Annotations the kubelet must pass (pullcheck cannot read them: none are passed).
    #[serde(default)]
    pub required_service_account_annotation_keys: Vec<String>,
    /// Annotations the kubelet passes when present.
    #[serde(default)]
    pub optional_service_account_annotation_keys: Vec<String>,
}

const REQUEST_VERSIONS: [&str; 3] = [
    "credentialprovider.kubelet.k8s.io/v1",
    "credentialprovider.kubelet.k8s.io/v1beta1",
    "credentialprovider.kubelet.k8s.io/v1alpha1",
];

impl CredentialProviderConfig {
    /// Parses the file (YAML or JSON) and checks what the kubelet checks; all problems at once.
    pub fn parse(text: &str) -> Result<CredentialProviderConfig, Vec<String>> {
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
    pub volume: Value,
    /// The init container's new volume mount.
    pub mount: Value,
    /// The init container's new environment variable.
    pub env: Value,
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
struct Pattern {
    labels: Vec<String>,
    port: Option<String>,
    path: String,
}

impl Pattern {
    fn parse(s: &str) -> Option<Pattern> {
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
    fn matches(&self, target: &Pattern) -> bool {
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
fn glob(p: &[u8], s: &[u8]) -> bool {
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

fn class_char(p: &[u8], i: &mut usize) -> Option<u8> {
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

/// The providers of a run and what they answered.
pub struct Plugins {
    bin_dir: PathBuf,
    token_dir: PathBuf,
    providers: Vec<Provider>,
    /// The run's images: an `auth` entry that matches none of them is not kept
    /// ([`Plugins::for_images`]); `None`: every entry is kept.
    targets: Option<std::sync::Arc<Targets>>,
}

/// The images of a run, as `auth` keys are matched against them: by host (labels and port),
/// each with its repositories' paths sorted, so that an answer of 100,000 entries costs a
/// glob per distinct host and a binary search per entry, and only the entries that serve an
/// image of the run are kept.
#[derive(Debug, Default)]
struct Targets {
    hosts: Vec<(Pattern, Vec<String>)>,
}

impl Targets {
    fn of<'a>(images: impl IntoIterator<Item = &'a Reference>) -> Targets {
        let mut by_host: HashMap<(Vec<String>, Option<String>), Vec<String>> = HashMap::new();
        for r in images {
            if let Some(t) = Pattern::parse(&format!("{}/{}", r.registry, r.repository)) {
                by_host.entry((t.labels, t.port)).or_default().push(t.path);
            }
        }
        let hosts = by_host
            .into_iter()
            .map(|((labels, port), mut paths)| {
                paths.sort_unstable();
                paths.dedup();
                let host = Pattern {
                    labels,
                    port,
                    path: String::new(),
                };
                (host, paths)
            })
            .collect();
        Targets { hosts }
    }

    /// Whether the `auth` key `key` matches an image of the run.
    fn serves(&self, key: &Pattern) -> bool {
        self.hosts.iter().any(|(host, paths)| {
            let host_only = Pattern {
                labels: key.labels.clone(),
                port: key.port.clone(),
                path: String::new(),
            };
            host_only.matches(host) && {
                let at = paths.partition_point(|p| p.as_str() < key.path.as_str());
                paths.get(at).is_some_and(|p| p.starts_with(&key.path))
            }
        })
    }
}

struct Provider {
    config: ProviderConfig,
    patterns: Vec<Pattern>,
    default_cache: Duration,
    /// One run of the plugin at a time: the images waiting for it use its answer.
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    cache: Vec<Cached>,
    /// Why it failed: it is not run again in this run.
    failed: Option<String>,
}

struct Cached {
    key: CacheKey,
    until: Instant,
    auth: Vec<(Pattern, String, Credential)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum CacheKey {
    Image(String),
    Registry(String),
    Global,
}

/// A response's `kind` and `apiVersion`, whatever their types (a value that is not a string is
/// no match), read first: the fields' types are judged only in a response.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    #[serde(default)]
    kind: Loose,
    #[serde(default)]
    api_version: Loose,
}

/// A string, or anything else (skipped, kept as `None`).
#[derive(Default)]
struct Loose(Option<String>);

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Loose, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Loose;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
                Ok(Loose(Some(v.to_string())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_unit<E>(self) -> Result<Loose, E> {
                Ok(Loose(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Loose, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Loose, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Loose(None))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    cache_key_type: String,
    #[serde(default)]
    cache_duration: Option<String>,
    #[serde(default)]
    auth: Auth,
}

/// The `auth` entries kept: those whose key parses and serves an image of the run
/// ([`Targets`]), decided as each is read, so that an answer of 100,000 entries never holds
/// more than the few that can be used.
#[derive(Default)]
struct Auth(Vec<(Pattern, String, AuthConfig)>);

std::thread_local! {
    /// The targets the `auth` entries being read are kept for (set around one read, on the
    /// thread doing it: serde's derive gives a field's `Deserialize` no seed).
    static KEEP_FOR: std::cell::RefCell<Option<std::sync::Arc<Targets>>> =
        const { std::cell::RefCell::new(None) };
}

impl<'de> Deserialize<'de> for Auth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Auth, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Auth;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of registry to username and password")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Auth, A::Error> {
                let targets = KEEP_FOR.with(|k| k.borrow().clone());
                let mut kept = Vec::new();
                while let Some(key) = a.next_key::<std::borrow::Cow<'de, str>>()? {
                    let entry: AuthConfig = a.next_value()?;
                    let Some(pattern) = Pattern::parse(&key) else {
                        continue;
                    };
                    if targets.as_ref().is_none_or(|t| t.serves(&pattern)) {
                        kept.push((pattern, key.into_owned(), entry));
                    }
                }
                Ok(Auth(kept))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Deserialize)]
struct AuthConfig {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

impl Plugins {
    /// The providers of `config`, run from `bin_dir`; service-account tokens are read under
    /// `token_dir`. Fails when a provider's plugin is not a file of `bin_dir`.
    pub fn new(
        config: CredentialProviderConfig,
        bin_dir: PathBuf,
        token_dir: PathBuf,
    ) -> Result<Plugins, Vec<String>> {
        let mut errors = Vec::new();
        let mut providers = Vec::new();
        for p in config.providers {
            let path = bin_dir.join(&p.name);
            if !path.is_file() {
                errors.push(format!(
                    "provider {}: no plugin {}",
                    p.name.escape_default(),
                    path.display()
                ));
            }
            let patterns = p
                .match_images
                .iter()
                .filter_map(|m| Pattern::parse(m))
                .collect();
            let default_cache = p
                .default_cache_duration
                .as_deref()
                .and_then(parse_go_duration)
                .unwrap_or(Duration::ZERO);
            providers.push(Provider {
                config: p,
                patterns,
                default_cache,
                state: tokio::sync::Mutex::new(State::default()),
            });
        }
        if errors.is_empty() {
            Ok(Plugins {
                bin_dir,
                token_dir,
                providers,
                targets: None,
            })
        } else {
            Err(errors)
        }
    }

    /// Keeps, of each plugin's answer, only the `auth` entries that match one of `images` (the
    /// run's): the others could never be used.
    pub fn for_images<'a>(mut self, images: impl IntoIterator<Item = &'a Reference>) -> Plugins {
        self.targets = Some(std::sync::Arc::new(Targets::of(images)));
        self
    }

    /// The name of the first provider whose `matchImages` matches the image, if any.
    pub fn provider_for(&self, reference: &Reference) -> Option<String> {
        let image = format!("{}/{}", reference.registry, reference.repository);
        let target = Pattern::parse(&image)?;
        self.providers
            .iter()
            .find(|p| p.patterns.iter().any(|m| m.matches(&target)))
            .map(|p| p.config.name.escape_default().to_string())
    }

    /// The credentials of the first provider whose `matchImages` matches the image; `None`
    /// when none does.
    pub async fn lookup(&self, reference: &Reference, deadline: Instant) -> Option<Lookup> {
        let image = format!("{}/{}", reference.registry, reference.repository);
        let target = Pattern::parse(&image)?;
        let provider = self
            .providers
            .iter()
            .find(|p| p.patterns.iter().any(|m| m.matches(&target)))?;
        let name = provider.config.name.escape_default().to_string();
        let mut state = provider.state.lock().await;
        if let Some(why) = &state.failed {
            return Some(failed(&name, why));
        }
        let now = Instant::now();
        state.cache.retain(|c| c.until > now);
        let cached = state.cache.iter().find(|c| match &c.key {
            CacheKey::Image(i) => *i == image,
            CacheKey::Registry(r) => *r == reference.registry,
            CacheKey::Global => true,
        });
        let auth = match cached {
            Some(c) => c.auth.clone(),
            None => match self.run(provider, &image, deadline).await {
                Ok((key_type, duration, auth)) => {
                    let key = match key_type {
                        "Image" => CacheKey::Image(image.clone()),
                        "Registry" => CacheKey::Registry(reference.registry.clone()),
                        _ => CacheKey::Global,
                    };
                    if !duration.is_zero() {
                        state.cache.push(Cached {
                            key,
                            until: Instant::now() + duration,
                            auth: auth.clone(),
                        });
                    }
                    auth
                }
                Err(why) => {
                    state.failed = Some(why.clone());
                    return Some(failed(&name, &why));
                }
            },
        };
        let mut matching: Vec<&(Pattern, String, Credential)> =
            auth.iter().filter(|(p, _, _)| p.matches(&target)).collect();
        // Most specific first, as the kubelet's keyring orders its keys.
        matching.sort_by(|a, b| b.1.cmp(&a.1));
        let credentials: Vec<Credential> =
            matching.into_iter().map(|(_, _, c)| c.clone()).collect();
        let (notes, unavailable) = if credentials.is_empty() {
            (
                vec![format!(
                    "credential provider {name} gave no credential for {image}"
                )],
                vec![super::ProviderTried {
                    provider: format!("plugin {name}"),
                    kind: super::ProviderKind::Plugin,
                    why: format!("its answer has no auth entry matching {image}"),
                }],
            )
        } else {
            (Vec::new(), Vec::new())
        };
        Some(Lookup {
            credentials,
            notes,
            failed_plugin: None,
            unavailable,
        })
    }

    /// Runs a plugin once: its answer's cache key type, cache duration and `auth` entries.
    async fn run(
        &self,
        provider: &Provider,
        image: &str,
        deadline: Instant,
    ) -> Result<(&'static str, Duration, Vec<(Pattern, String, Credential)>), String> {
        let config = &provider.config;
        let name = config.name.escape_default().to_string();
        let mut request = json!({
            "apiVersion": config.api_version,
            "kind": "CredentialProviderRequest",
            "image": image,
        });
        if let Some(t) = &config.token_attributes {
            let path = self.token_dir.join(&config.name).join("token");
            match super::cloud::read_token_file(&path.to_string_lossy()) {
                Ok(token) => {
                    request["serviceAccountToken"] = Value::String(token);
                    request["serviceAccountAnnotations"] = json!({});
                }
                _ if t.require_service_account == Some(true) => {
                    return Err(format!(
                        "it needs the pod's service-account token (audience {:?}), and there is none at {} (add it with `pullcheck inject --credential-provider-config`)",
                        t.service_account_token_audience
                            .escape_default()
                            .to_string(),
                        path.display()
                    ));
                }
                _ => {}
            }
        }
        // Half of the time left: a hung plugin leaves the other half for the verdict.
        let budget = deadline.saturating_duration_since(Instant::now()) / 2;
        let mut cmd = tokio::process::Command::new(self.bin_dir.join(&config.name));
        cmd.args(&config.args)
            .envs(config.env.iter().map(|e| (&e.name, &e.value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // Its own process group, so that what it starts ends with it (see KillGroup).
            .process_group(0)
            .kill_on_drop(true);
        let run = async {
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", Path::new(&config.name).display()))?;
            let pid = child.id();
            let _group = KillGroup(pid);
            let body = request.to_string().into_bytes();
            if let Some(mut stdin) = child.stdin.take() {
                // A plugin that exits without reading its stdin closes the pipe: its exit
                // status says what happened.
                let _ = stdin.write_all(&body).await;
            }
            let out = read_answer(&mut child, pid).await?;
            if out.len() as u64 > MAX_RESPONSE {
                // Not waited for: it may be blocked writing more (its group is killed).
                return Err("its output is larger than 1 MiB".to_string());
            }
            let status = child
                .wait()
                .await
                .map_err(|e| format!("cannot wait for it: {e}"))?;
            Ok::<_, String>((status, out))
        };
        let (status, out) = match tokio::time::timeout(budget, run).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(format!(
                    "it did not answer within {:.1}s (half of the time left)",
                    budget.as_secs_f64()
                ));
            }
        };
        if !status.success() {
            return Err(format!("it exited with {status}"));
        }
        let (key_type, response) = parse_response(&out, self.targets.clone())?;
        let duration = match &response.cache_duration {
            Some(d) => parse_go_duration(d)
                .ok_or_else(|| "its response's cacheDuration is not a duration".to_string())?,
            None => provider.default_cache,
        };
        let mut auth = Vec::new();
        for (pattern, key, entry) in response.auth.0 {
            let shown_key: String = key
                .chars()
                .take(200)
                .collect::<String>()
                .escape_default()
                .to_string();
            auth.push((
                pattern,
                key.clone(),
                Credential {
                    username: entry.username,
                    password: Secret::new(entry.password),
                    source: format!("credential provider {name} ({shown_key})"),
                },
            ));
        }
        Ok((key_type, duration, auth))
    }
}

/// Reads a plugin's stdout as a `CredentialProviderResponse`: its cache key type and the
/// response, with only the `auth` entries that serve one of `targets` (all with `None`).
/// Never the output itself in a message, nor serde's, which can quote it.
fn parse_response(
    out: &[u8],
    targets: Option<std::sync::Arc<Targets>>,
) -> Result<(&'static str, Response), String> {
    let invalid = |e: serde_json::Error| {
        format!(
            "its output is not a CredentialProviderResponse (invalid at line {} column {})",
            e.line(),
            e.column()
        )
    };
    // Three passes over at most 1 MiB, none of which builds a tree of the answer: is it JSON
    // at all, is it a response, and its fields, keeping only the entries of the run.
    serde_json::from_slice::<serde::de::IgnoredAny>(out).map_err(invalid)?;
    let head: Head = serde_json::from_slice(out).map_err(invalid)?;
    let is_response = head.kind.0.as_deref() == Some("CredentialProviderResponse")
        && head
            .api_version
            .0
            .as_deref()
            .is_some_and(|v| REQUEST_VERSIONS.contains(&v));
    if !is_response {
        return Err(
            "its output is not a CredentialProviderResponse (kind or apiVersion)".to_string(),
        );
    }
    KEEP_FOR.with(|k| *k.borrow_mut() = targets);
    let response = serde_json::from_slice::<Response>(out);
    KEEP_FOR.with(|k| *k.borrow_mut() = None);
    let response: Response = response
        .map_err(|_| "its CredentialProviderResponse has fields of the wrong type".to_string())?;
    let key_type = match response.cache_key_type.as_str() {
        "Image" => "Image",
        "Registry" => "Registry",
        "Global" => "Global",
        _ => return Err("its response has no valid cacheKeyType".to_string()),
    };
    Ok((key_type, response))
}

/// A plugin's answer read as a run reads it, for the fuzz target: the cache key type and how
/// many `auth` entries serve one of `images`, or why the answer is refused.
pub fn read_response_for(
    out: &[u8],
    images: &[Reference],
) -> Result<(&'static str, usize), String> {
    let targets = std::sync::Arc::new(Targets::of(images));
    let (key_type, response) = parse_response(out, Some(targets))?;
    Ok((key_type, response.auth.0.len()))
}

/// A plugin's process group, killed when the run of the plugin ends in any way (answered,
/// timed out, failed): a child it left behind holding stdout would otherwise outlive
/// pullcheck, and keep the answer from ever ending.
struct KillGroup(Option<u32>);

impl Drop for KillGroup {
    fn drop(&mut self) {
        let pid = self
            .0
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            // ESRCH when the group is already gone: nothing to do.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Reads a plugin's stdout while waiting for it to exit. Once it has exited, its answer is in
/// the pipe: what is there is read, and a child of the plugin that keeps the pipe open is not
/// waited for (its group is killed, and reading stops when the pipe has nothing more for
/// 100 ms). More than 1 MiB stops the reading at once.
async fn read_answer(
    child: &mut tokio::process::Child,
    pid: Option<u32>,
) -> Result<Vec<u8>, String> {
    let Some(mut stdout) = child.stdout.take() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut exited = false;
    loop {
        let n = if exited {
            match tokio::time::timeout(Duration::from_millis(100), stdout.read(&mut buf)).await {
                Ok(n) => n,
                Err(_) => return Ok(out),
            }
        } else {
            tokio::select! {
                n = stdout.read(&mut buf) => n,
                _ = child.wait() => {
                    exited = true;
                    drop(KillGroup(pid));
                    continue;
                }
            }
        };
        match n.map_err(|e| format!("cannot read its output: {e}"))? {
            0 => return Ok(out),
            n => {
                out.extend_from_slice(&buf[..n]);
                if out.len() as u64 > MAX_RESPONSE {
                    return Ok(out);
                }
            }
        }
    }
}

fn failed(name: &str, why: &str) -> Lookup {
    Lookup {
        credentials: Vec::new(),
        notes: Vec::new(),
        failed_plugin: Some((name.to_string(), why.to_string())),
        unavailable: vec![super::ProviderTried {
            provider: format!("plugin {name}"),
            kind: super::ProviderKind::Plugin,
            why: format!("it failed: {why}"),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_auth_keys_that_serve_an_image_of_the_run_are_kept() {
        let images: Vec<Reference> = ["reg.corp:5000/team/app:1", "quay.io/org/tool:2"]
            .iter()
            .map(|i| Reference::parse(i).unwrap())
            .collect();
        let targets = Targets::of(&images);
        let cases: &[(&str, &str, bool)] = &[
            ("the host", "reg.corp:5000", true),
            ("a path prefix", "reg.corp:5000/team", true),
            ("the repository", "reg.corp:5000/team/app", true),
            ("another path", "reg.corp:5000/other", false),
            ("no port", "reg.corp", false),
            ("a glob", "*.io", true),
            ("a glob of another depth", "*.corp:5000", true),
            ("another host", "r1.example.com", false),
            ("a longer repository", "quay.io/org/tool2", false),
            ("a path beyond the repository", "quay.io/org/tool/x", false),
        ];
        for (name, key, want) in cases {
            let key = Pattern::parse(key).unwrap();
            assert_eq!(targets.serves(&key), *want, "{name}");
        }
        // An answer of 100,000 entries keeps the two that serve.
        let mut answer = String::from(r#"{"cacheKeyType":"Global","auth":{"#);
        for i in 0..100_000 {
            answer.push_str(&format!(r#""r{i}.example.com":{{}},"#));
        }
        answer.push_str(r#""quay.io":{"username":"u","password":"p"},"reg.corp:5000/team":{}}}"#);
        KEEP_FOR.with(|k| *k.borrow_mut() = Some(std::sync::Arc::new(targets)));
        let response: Response = serde_json::from_str(&answer).unwrap();
        KEEP_FOR.with(|k| *k.borrow_mut() = None);
        let kept: Vec<&str> = response.auth.0.iter().map(|(_, k, _)| k.as_str()).collect();
        assert_eq!(kept, ["quay.io", "reg.corp:5000/team"]);
    }

    #[test]
    fn kubelet_matching() {
        let table: &[(&str, &str, bool)] = &[
            (
                "*.dkr.ecr.*.amazonaws.com",
                "123.dkr.ecr.us-east-1.amazonaws.com/app",
                true,
            ),
            (
                "*.dkr.ecr.*.amazonaws.com",
                "123.dkr.ecr.us-east-1.amazonaws.com.cn/app",
                false,
            ),
            ("*.azurecr.io", "a.b.azurecr.io/app", false),
            ("gcr.io", "gcr.io/p/app", true),
            ("registry.io:5000", "registry.io/app", false),
            ("registry.io:5000", "registry.io:5000/app", true),
            ("registry.io", "registry.io:5000/app", false),
            ("registry.io/team", "registry.io/team/app", true),
            ("registry.io/team", "registry.io/other/app", false),
            ("https://registry.io", "registry.io/app", true),
            ("reg-[0-9].io", "reg-7.io/app", true),
            ("reg-[^0-9].io", "reg-7.io/app", false),
            ("r?g.io", "reg.io/x", true),
            ("*", "localhost/x", true),
            ("*", "a.b/x", false),
        ];
        for (pattern, image, want) in table {
            let p = Pattern::parse(pattern).unwrap();
            let t = Pattern::parse(image).unwrap();
            assert_eq!(p.matches(&t), *want, "{pattern} vs {image}");
        }
        assert!(Pattern::parse("host:port").is_none());
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("12h"), Some(Duration::from_secs(43200)));
        assert_eq!(parse_go_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("0s"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration("12"), None);
        assert_eq!(parse_go_duration("1d"), None);
    }

    const CONFIG: &str = r#"
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-credential-provider
    matchImages: ["*.dkr.ecr.*.amazonaws.com"]
    defaultCacheDuration: 12h
    apiVersion: credentialprovider.kubelet.k8s.io/v1
  - name: token-plugin
    matchImages: ["registry.example"]
    defaultCacheDuration: 0s
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    tokenAttributes:
      serviceAccountTokenAudience: registry.example
      requireServiceAccount: true
"#;

    #[test]
    fn config_parses_and_validates() {
        let c = CredentialProviderConfig::parse(CONFIG).unwrap();
        assert_eq!(c.providers.len(), 2);
        let bad = "apiVersion: v1\nkind: Pod\nproviders:\n  - name: ../x\n    apiVersion: x\n    tokenAttributes: {serviceAccountTokenAudience: ''}\n";
        let errors = CredentialProviderConfig::parse(bad).unwrap_err();
        assert_eq!(errors.len(), 8, "{errors:#?}");
    }

    #[test]
    fn inject_adds_one_projected_token_per_token_provider() {
        let c = CredentialProviderConfig::parse(CONFIG).unwrap();
        let add = inject_additions(&c).unwrap();
        assert_eq!(
            add.volume,
            json!({
                "name": "pullcheck-provider-tokens",
                "projected": {"sources": [{"serviceAccountToken": {
                    "audience": "registry.example",
                    "expirationSeconds": 3600,
                    "path": "token-plugin/token"
                }}]}
            })
        );
        assert_eq!(add.mount["mountPath"], DEFAULT_TOKEN_DIR);
        assert_eq!(add.mount["readOnly"], true);
        assert_eq!(add.env["name"], "PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR");
        let mut none = c.clone();
        none.providers.truncate(1);
        assert_eq!(inject_additions(&none), None);
    }
}
