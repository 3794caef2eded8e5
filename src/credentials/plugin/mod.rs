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

mod config;
mod response;

use config::Pattern;
pub use config::{
    CredentialProviderConfig, EnvVar, InjectAdditions, ProviderConfig, TokenAttributes,
    inject_additions, parse_go_duration,
};
use response::parse_response;
pub use response::{ResponseError, read_response_for};

use super::Lookup;
use crate::keyring::{Credential, Secret};
use crate::reference::Reference;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// Where `pullcheck inject` mounts the projected service-account tokens, and where a check
/// reads them by default.
pub(crate) const DEFAULT_TOKEN_DIR: &str = "/var/run/secrets/pullcheck/credential-providers";
/// The name of the projected volume `pullcheck inject` adds.
pub(crate) const TOKEN_VOLUME: &str = "pullcheck-provider-tokens";
/// The most of a plugin's stdout read.
const MAX_RESPONSE: u64 = 1024 * 1024;
/// The lifetime asked for projected tokens (the API's minimum is 10 minutes).
const TOKEN_EXPIRATION_SECONDS: u64 = 3600;

/// The providers of a run and what they answered.
pub(crate) struct Plugins {
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

impl Plugins {
    /// The providers of `config`, run from `bin_dir`; service-account tokens are read under
    /// `token_dir`. Fails when a provider's plugin is not a file of `bin_dir`.
    pub(crate) fn new(
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
    pub(crate) fn for_images<'a>(
        mut self,
        images: impl IntoIterator<Item = &'a Reference>,
    ) -> Plugins {
        self.targets = Some(std::sync::Arc::new(Targets::of(images)));
        self
    }

    /// The name of the first provider whose `matchImages` matches the image, if any.
    pub(crate) fn provider_for(&self, reference: &Reference) -> Option<String> {
        let image = format!("{}/{}", reference.registry, reference.repository);
        let target = Pattern::parse(&image)?;
        self.providers
            .iter()
            .find(|p| p.patterns.iter().any(|m| m.matches(&target)))
            .map(|p| p.config.name.escape_default().to_string())
    }

    /// The credentials of the first provider whose `matchImages` matches the image; `None`
    /// when none does.
    pub(crate) async fn lookup(&self, reference: &Reference, deadline: Instant) -> Option<Lookup> {
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
                    let why = why.to_string();
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
    ) -> Result<(&'static str, Duration, Vec<(Pattern, String, Credential)>), RunError> {
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
                    return Err(RunError::NoToken {
                        audience: t
                            .service_account_token_audience
                            .escape_default()
                            .to_string(),
                        path,
                    });
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
                .map_err(|e| RunError::Start(config.name.clone(), e))?;
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
                return Err(RunError::TooLarge);
            }
            let status = child.wait().await.map_err(RunError::Wait)?;
            Ok::<_, RunError>((status, out))
        };
        let (status, out) = match tokio::time::timeout(budget, run).await {
            Ok(r) => r?,
            Err(_) => return Err(RunError::Timeout(budget)),
        };
        if !status.success() {
            return Err(RunError::Exit(status));
        }
        let (key_type, response) = parse_response(&out, self.targets.clone())?;
        let duration = match &response.cache_duration {
            Some(d) => parse_go_duration(d).ok_or(RunError::CacheDuration)?,
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

/// Why a run of a plugin gave no answer.
#[derive(Debug, thiserror::Error)]
enum RunError {
    /// The plugin needs the pod's service-account token (of this audience, escaped), and
    /// there is none at the path.
    #[error(
        "it needs the pod's service-account token (audience {audience:?}), and there is none at {} (add it with `pullcheck inject --credential-provider-config`)",
        path.display()
    )]
    NoToken { audience: String, path: PathBuf },
    /// The plugin (its name, a file of the bin directory) cannot be started.
    #[error("cannot start {}: {}", Path::new(.0).display(), .1)]
    Start(String, std::io::Error),
    #[error("its output is larger than 1 MiB")]
    TooLarge,
    #[error("cannot wait for it: {0}")]
    Wait(std::io::Error),
    #[error("cannot read its output: {0}")]
    Read(std::io::Error),
    /// No answer within its budget, half of the time left.
    #[error("it did not answer within {:.1}s (half of the time left)", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("it exited with {0}")]
    Exit(std::process::ExitStatus),
    #[error(transparent)]
    Response(#[from] ResponseError),
    #[error("its response's cacheDuration is not a duration")]
    CacheDuration,
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
) -> Result<Vec<u8>, RunError> {
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
        match n.map_err(RunError::Read)? {
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
    use super::response::{KEEP_FOR, Response};
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
