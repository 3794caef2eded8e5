//! Pull credentials: reading pull-secret files and choosing the credentials for an image the way
//! the kubelet does.
//!
//! Why not the `docker_credential` crate for this: it matches exact server names only, while the
//! kubelet (`pkg/credentialprovider/keyring.go`) matches keys as globs per host label, with a port
//! and a path prefix, and tries *every* matching credential in turn. pullcheck must reach the same
//! verdict as the kubelet, so this module implements the kubelet's rules:
//!
//! - a key without a scheme gets `https://`; the key is `host[:port]` plus path, and a leading
//!   `/v1/` or `/v2/` path is dropped (`https://index.docker.io/v1/` is `index.docker.io`);
//! - a key matches an image when the ports are equal, the hosts have the same number of labels,
//!   each label matches as a glob (`*`, `?`, `[…]`), and the key's path is a prefix of the image's
//!   repository path;
//! - all matching credentials are returned, keys in reverse lexical order (so `quay.io/team`
//!   before `quay.io`), sources in priority order within a key;
//! - images on Docker Hub fall back to an `index.docker.io` key when nothing else matched.
//!
//! Secrets are wrapped in [`Secret`], whose `Debug` and `Display` print `<redacted>`.

mod files;
mod helper;
mod matching;

use files::{find_config_in, folder_problem, secret_folders, shown_key};
use matching::{
    Entry, INDEX_HASH, KeyIndex, KeyPattern, is_default_registry_match, split_host_port,
};

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The least time a credential helper is given (a keychain answers in milliseconds).
const HELPER_MIN: Duration = Duration::from_millis(500);

/// A secret value. Never printed: `Debug` and `Display` show `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub(crate) fn new(s: impl Into<String>) -> Secret {
        let s = s.into();
        crate::redact::register(&s);
        Secret(s)
    }

    /// The secret itself, for the one place that sends it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A user name and password for a registry, and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The user name (not secret; shown in messages).
    pub(crate) username: String,
    /// The password or access token.
    pub(crate) password: Secret,
    /// Where it came from, for messages and JSON: `secret regcred, key 127.0.0.1:5443`.
    pub(crate) source: String,
}

impl Credential {
    /// What tells this credential from every other in a run, for caches (tokens, refusals):
    /// two entries may share a source when their keys differ only in the user info that is
    /// never shown. Holds a keyed hash of the secret, never the secret.
    pub(crate) fn cache_key(&self) -> String {
        use std::hash::BuildHasher;
        static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let hash = KEYS
            .get_or_init(Default::default)
            .hash_one(&self.password.0);
        format!("{}\n{}\n{hash:016x}", self.source, self.username)
    }
}

/// A file that could not be used as a credential source: a configuration error (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("credential file {path}: {what}")]
pub struct KeyringError {
    /// The file.
    pub(crate) path: PathBuf,
    /// What is wrong, naming the entry but never its secret.
    pub(crate) what: String,
}

/// The largest credential file read. A Kubernetes Secret holds at most 1 MiB.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// File names of a pull secret's key (`.dockerconfigjson`, legacy `.dockercfg`) and of a Docker
/// CLI config, in the order they are looked for in a folder.
const CONFIG_FILE_NAMES: [&str; 3] = [".dockerconfigjson", ".dockercfg", "config.json"];

/// Docker Hub's key of last resort, as in the kubelet.
const DEFAULT_REGISTRY_KEY: &str = "index.docker.io";

/// The most keys of one source listed in messages and JSON (the rest are counted).
const MAX_LISTED_KEYS: usize = 20;

/// A server whose credential a Docker credential helper keeps.
#[derive(Debug, Clone)]
struct HelperEntry {
    server: String,
    /// The helper program's name: `docker-credential-<helper>`.
    helper: String,
    pattern: KeyPattern,
    label: String,
}

/// Credentials from all sources, ready to be matched against images.
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    /// In source priority order; [`Keyring::lookup`] sorts by key.
    entries: Vec<Entry>,
    /// The sources' labels (`secret regcred`), shared by their entries.
    labels: Vec<String>,
    /// Not asked yet: see [`Keyring::resolve_helpers`].
    helpers: Vec<HelperEntry>,
    /// The keys indexed for lookups, built on the first lookup and dropped whenever entries
    /// change.
    index: std::sync::OnceLock<KeyIndex>,
    /// Every place credentials were looked for, with the keys it held, in priority order: what
    /// a user needs to see when no credential matches (see [`Keyring::sources`]).
    sources: Vec<SourceRecord>,
    /// The label of `--creds` ([`Keyring::add_first`]): its credential is tried before every
    /// other matching one, whatever the keys (as `--creds` in docs/reference/flags.md says),
    /// not in key order.
    first: Option<u32>,
}

/// One place credentials were read from, as shown to a person and in JSON
/// (`"credential_sources"`): its name, the keys it holds (registry names), and what is wrong
/// with it. Never a user name, password or token.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct CredentialSource {
    /// `secret regcred`, `file /path/config.json`, `docker config ~/.docker/config.json`,
    /// `--creds`.
    pub(crate) source: String,
    /// The file or folder read, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<String>,
    /// The keys it holds, normalised as the kubelet matches them (`quay.io`, `*.gcr.io`,
    /// `index.docker.io`), including servers whose secret a credential helper keeps.
    pub(crate) keys: Vec<String>,
    /// Whether one of its keys matches an image of this run.
    pub(crate) matches: bool,
    /// Why it gave no credentials, when that is known: an empty folder, a file of the wrong
    /// name, a folder that cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) problem: Option<String>,
}

/// A source as loaded: what is shown, and the keys to match.
#[derive(Debug, Clone)]
struct SourceRecord {
    source: String,
    path: Option<String>,
    /// The first [`MAX_LISTED_KEYS`] distinct keys, as shown (a 1 MiB pull secret holds
    /// ~28,000: listing them all helps nobody and costs memory).
    keys: Vec<String>,
    /// How many distinct keys it holds.
    key_count: usize,
    problem: Option<String>,
    /// The workstation's own config: read for a person, not pointed at; it is not warned about
    /// when its keys are for other registries (a person's config names many).
    implicit: bool,
}

/// A person's own credential files, in this order: the Docker CLI's config
/// (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`), then, on a workstation only,
/// the files podman, skopeo and buildah write (containers-auth.json(5)): `$REGISTRY_AUTH_FILE`,
/// `$XDG_RUNTIME_DIR/containers/auth.json`, and `$XDG_CONFIG_HOME/containers/auth.json`
/// (`~/.config/containers/auth.json`). The kubelet reads none of the latter, so in a pod
/// (`KUBERNETES_SERVICE_HOST` set, as in every container of a pod) they are left out: a pod's
/// check uses only what the node would. Each with its label for messages.
pub(crate) fn workstation_configs() -> Vec<(PathBuf, String)> {
    workstation_configs_from(|name| std::env::var_os(name))
}

/// [`workstation_configs`] with the environment given.
fn workstation_configs_from(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<(PathBuf, String)> {
    let home = env("HOME").map(PathBuf::from);
    let mut files = Vec::new();
    if let Some(dir) = env("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".docker")))
    {
        let file = dir.join("config.json");
        let label = format!("docker config {}", file.display());
        files.push((file, label));
    }
    if env("KUBERNETES_SERVICE_HOST").is_some() {
        return files;
    }
    let containers = [
        env("REGISTRY_AUTH_FILE").map(PathBuf::from),
        env("XDG_RUNTIME_DIR").map(|d| Path::new(&d).join("containers/auth.json")),
        env("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")))
            .map(|d| d.join("containers/auth.json")),
    ];
    for file in containers.into_iter().flatten() {
        if !files.iter().any(|(f, _)| *f == file) {
            let label = format!("containers auth {}", file.display());
            files.push((file, label));
        }
    }
    files
}

impl Keyring {
    /// Reads the credential sources in priority order: each `--docker-config` path (a file, or a
    /// folder holding one) in the order given, then each sub-folder of `secrets_dir` in name order.
    /// A missing `secrets_dir` means no mounted secrets.
    ///
    /// Last, for a person on a workstation, `workstation` (the Docker CLI's `config.json` and
    /// the containers tools' `auth.json`, see [`workstation_configs`]), each that exists: its
    /// `auths`, and its `credHelpers` / `credsStore`, which are asked only for the registries
    /// of the images checked ([`Keyring::resolve_helpers`]).
    pub(crate) fn load(
        docker_configs: &[PathBuf],
        secrets_dir: Option<&Path>,
        workstation: &[(PathBuf, String)],
    ) -> Result<Keyring, Vec<KeyringError>> {
        let mut keyring = Keyring::default();
        let mut errors = Vec::new();
        for path in docker_configs {
            match find_config_in(path) {
                Ok(file) => {
                    let label = format!("file {}", file.display());
                    if let Err(e) = keyring.add_source_file(&file, &label, false) {
                        errors.push(e);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        if let Some(dir) = secrets_dir {
            match secret_folders(dir) {
                Ok(folders) => {
                    for (name, folder) in folders {
                        let label = format!("secret {name}");
                        // A mounted optional secret that does not exist is an empty folder: it
                        // gives nothing, and says so (see `folder_problem`).
                        let Some(file) = CONFIG_FILE_NAMES[..2]
                            .iter()
                            .map(|n| folder.join(n))
                            .find(|p| p.is_file())
                        else {
                            keyring.sources.push(SourceRecord {
                                source: label,
                                path: Some(folder.display().to_string()),
                                keys: Vec::new(),
                                key_count: 0,
                                problem: Some(folder_problem(&folder)),
                                implicit: false,
                            });
                            continue;
                        };
                        if let Err(e) = keyring.add_source_file(&file, &label, false) {
                            errors.push(e);
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        for (file, label) in workstation.iter().filter(|(f, _)| f.is_file()) {
            if let Err(e) = keyring.add_source_file(file, label, true) {
                errors.push(e);
            }
            if let Some(source) = keyring.sources.last_mut() {
                source.implicit = true;
            }
        }
        if errors.is_empty() {
            Ok(keyring)
        } else {
            Err(errors)
        }
    }

    /// Adds the entries of one config file's content. `label` names the source in messages.
    pub fn add_json(&mut self, path: &Path, label: &str, text: &str) -> Result<(), KeyringError> {
        self.add_config(path, label, text, false)
    }

    /// The entries of one config's `text` (`files::read_config`); with `helpers`, also a
    /// workstation's credential helpers.
    fn add_config(
        &mut self,
        path: &Path,
        label: &str,
        text: &str,
        helpers: bool,
    ) -> Result<(), KeyringError> {
        files::read_config(self, path, label, text, helpers)
    }

    /// The entries of one pull-secret file.
    fn add_file(&mut self, file: &Path, label: &str, helpers: bool) -> Result<(), KeyringError> {
        let text = files::read_text(file)?;
        self.add_config(file, label, &text, helpers)
    }

    /// [`Keyring::add_file`], recording the source and the keys it added.
    fn add_source_file(
        &mut self,
        file: &Path,
        label: &str,
        helpers: bool,
    ) -> Result<(), KeyringError> {
        use std::hash::BuildHasher;
        let (entries, helper_entries) = (self.entries.len(), self.helpers.len());
        self.add_file(file, label, helpers)?;
        // Distinct keys counted by hash (a 4 MiB config holds ~110,000 entries: no second
        // copy of their text), the first few kept to be shown. Linear in the entries.
        let mut seen = std::collections::HashSet::new();
        let mut keys = Vec::new();
        let added = self.entries[entries..].iter().map(Entry::key_text).chain(
            self.helpers[helper_entries..]
                .iter()
                .map(|h| h.pattern.key()),
        );
        for key in added {
            if seen.insert(INDEX_HASH.hash_one(&key)) && keys.len() < MAX_LISTED_KEYS {
                keys.push(shown_key(&key));
            }
        }
        self.sources.push(SourceRecord {
            source: label.to_string(),
            path: Some(file.display().to_string()),
            keys,
            key_count: seen.len(),
            problem: None,
            implicit: false,
        });
        Ok(())
    }

    /// Adds one credential for `registry` (`host[:port]`, or `docker.io`), before every other
    /// source: `--creds USER:PASS`, given for one run by a person on the command line.
    pub(crate) fn add_first(
        &mut self,
        registry: &str,
        username: &str,
        password: Secret,
        label: &str,
    ) {
        let Some(pattern) = KeyPattern::parse(registry) else {
            return;
        };
        let key = pattern.key();
        self.index.take();
        let number = self.label(label);
        self.first = Some(number);
        let shown = format!("key {}", shown_key(&key));
        self.entries.insert(
            0,
            Entry::new(&pattern, &shown, username, password.expose(), number),
        );
        self.sources.insert(
            0,
            SourceRecord {
                source: label.to_string(),
                path: None,
                keys: vec![shown_key(&key)],
                key_count: 1,
                problem: None,
                implicit: false,
            },
        );
    }

    /// The sources read, in priority order, each with its keys and whether one of them matches
    /// an image of `images` (`(registry, repository)` pairs). Which sources match is asked of
    /// the index, image by image, as the check's own lookups: linear in images and keys.
    pub(crate) fn sources<'a>(
        &self,
        images: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<CredentialSource> {
        let mut matched: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut asked = std::collections::HashSet::new();
        for (registry, repository) in images {
            if !asked.insert((registry, repository)) {
                continue;
            }
            let target = format!("{registry}/{repository}");
            for e in self.lookup_entries(&target, is_default_registry_match(registry)) {
                if let Some(label) = self.labels.get(e.label as usize) {
                    matched.insert(label);
                }
            }
            // Servers a helper keeps and that it did not answer for still name the source.
            for h in &self.helpers {
                if h.pattern.matches(&target) {
                    matched.insert(&h.label);
                }
            }
        }
        self.sources
            .iter()
            .map(|s| {
                let mut keys = s.keys.clone();
                if s.key_count > keys.len() {
                    keys.push(format!("… and {} more", s.key_count - keys.len()));
                }
                CredentialSource {
                    source: s.source.clone(),
                    path: s.path.clone(),
                    keys,
                    matches: matched.contains(s.source.as_str()),
                    problem: s.problem.clone(),
                }
            })
            .collect()
    }

    /// One warning per source that gives nothing to this run: empty, of the wrong shape, or
    /// holding keys for other registries only. The workstation's own config is warned about
    /// only when something is wrong with it, not for naming other registries.
    pub(crate) fn source_warnings<'a>(
        &self,
        images: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    ) -> Vec<String> {
        let registries: Vec<&str> = {
            let mut r: Vec<&str> = images.clone().into_iter().map(|(reg, _)| reg).collect();
            r.sort_unstable();
            r.dedup();
            r
        };
        if registries.is_empty() {
            return Vec::new();
        }
        let checked = registries.join(", ");
        self.sources(images)
            .into_iter()
            .zip(&self.sources)
            .filter_map(|(shown, record)| {
                let name = match &shown.path {
                    Some(p) => format!("{} ({p})", shown.source),
                    None => shown.source.clone(),
                };
                if let Some(problem) = &shown.problem {
                    return Some(format!("credential source {name}: {problem}; no credentials from it"));
                }
                if shown.matches || record.implicit {
                    return None;
                }
                if shown.keys.is_empty() {
                    return Some(format!(
                        "credential source {name} holds no credentials (no entry with a user name or password)"
                    ));
                }
                Some(format!(
                    "credential source {name} holds keys for {} only, none for the registries checked ({checked}): its credentials are not used",
                    shown.keys.join(", ")
                ))
            })
            .collect()
    }

    /// The sources, in words for a `no_credentials` message: `secret a (keys: quay.io), secret b
    /// (empty folder…)`, or that none was read.
    pub(crate) fn describe_sources(&self) -> String {
        if self.sources.is_empty() {
            return "no credential source was read (no --docker-config, no pull secret under --secrets-dir)".to_string();
        }
        let each: Vec<String> = self
            .sources
            .iter()
            .map(|s| match (&s.problem, s.keys.is_empty()) {
                (Some(p), _) => format!("{} ({p})", s.source),
                (None, true) => format!("{} (no keys)", s.source),
                (None, false) => format!(
                    "{} (keys: {})",
                    s.source,
                    if s.key_count > s.keys.len() {
                        format!(
                            "{}, … and {} more",
                            s.keys.join(", "),
                            s.key_count - s.keys.len()
                        )
                    } else {
                        s.keys.join(", ")
                    }
                ),
            })
            .collect();
        format!("credential sources read: {}", each.join("; "))
    }

    fn add_helper(&mut self, server: &str, helper: &str, label: &str) {
        if self.helpers.iter().any(|h| h.server == server) {
            return;
        }
        if let Some(pattern) = KeyPattern::parse(server) {
            self.helpers.push(HelperEntry {
                server: server.to_string(),
                helper: helper.to_string(),
                pattern,
                label: label.to_string(),
            });
        }
    }

    /// Asks the credential helpers (`credHelpers`, `credsStore`) for the registries of these
    /// images, once each, and adds what they give. Each helper gets at most a quarter of
    /// `budget` and all of them together `budget`; one still running then is killed. Returns
    /// warnings for helpers that failed; a failed helper means anonymous, as with the Docker CLI.
    pub(crate) fn resolve_helpers<'a>(
        &mut self,
        images: impl IntoIterator<Item = (&'a str, &'a str)>,
        budget: Duration,
    ) -> Vec<String> {
        let targets: Vec<(String, bool)> = images
            .into_iter()
            .map(|(registry, repository)| {
                (
                    format!("{registry}/{repository}"),
                    is_default_registry_match(registry),
                )
            })
            .collect();
        let started = std::time::Instant::now();
        let mut warnings = Vec::new();
        for helper in std::mem::take(&mut self.helpers) {
            let wanted = targets.iter().any(|(target, hub)| {
                helper.pattern.matches(target)
                    || (*hub && helper.pattern.key() == DEFAULT_REGISTRY_KEY)
            });
            if !wanted {
                continue;
            }
            let source = format!("{}, helper for {}", helper.label, shown_key(&helper.server));
            let left = budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                warnings.push(format!(
                    "{source}: not asked, the credential helpers used their share of --timeout; checking anonymously"
                ));
                continue;
            }
            let limit = (budget / 4).max(HELPER_MIN).min(left);
            match helper::get(&helper.helper, &helper.server, limit) {
                Ok(helper::HelperAnswer::Password(username, password)) => {
                    self.index.take();
                    let label = self.label(&helper.label);
                    let shown = format!("helper for {}", shown_key(&helper.server));
                    self.entries.push(Entry::new(
                        &helper.pattern,
                        &shown,
                        &username,
                        &password,
                        label,
                    ));
                }
                Ok(helper::HelperAnswer::IdentityToken) => warnings.push(format!(
                    "{source}: gives an identity token, which pullcheck does not use; checking anonymously"
                )),
                Err(e) => warnings.push(format!(
                    "{source}: {}; checking anonymously",
                    e.describe(&helper.helper)
                )),
            }
        }
        warnings
    }

    /// The credentials to try for an image, in the order the kubelet tries them. Empty means
    /// anonymous.
    pub fn lookup(&self, registry: &str, repository: &str) -> Vec<Credential> {
        self.lookup_target(
            &format!("{registry}/{repository}"),
            is_default_registry_match(registry),
        )
    }

    /// [`Keyring::lookup`] on a `host[:port]/path` string, as the kubelet's `Lookup`: every
    /// key whose pattern matches, in reverse lexical order of the keys.
    fn lookup_target(&self, target: &str, docker_hub: bool) -> Vec<Credential> {
        self.lookup_entries(target, docker_hub)
            .into_iter()
            .map(|e| e.credential(&self.labels))
            .collect()
    }

    /// The entries [`Keyring::lookup_target`] returns, in its order.
    fn lookup_entries(&self, target: &str, docker_hub: bool) -> Vec<&Entry> {
        use std::hash::BuildHasher;
        let index = self.index.get_or_init(|| KeyIndex::build(&self.entries));
        let hostport = target.split('/').next().unwrap_or_default();
        let (host, port) = split_host_port(hostport);
        let labels = host.split('.').count();
        let mut candidates: Vec<u32> =
            KeyIndex::filed(&index.literal, INDEX_HASH.hash_one((host, port))).collect();
        candidates.extend(KeyIndex::filed(
            &index.globbed,
            INDEX_HASH.hash_one((labels, port)),
        ));
        // Key numbers are the lookup order.
        candidates.sort_unstable();
        candidates.dedup();
        let entry = |i: &u32| self.entries.get(*i as usize);
        let mut out = Vec::new();
        for number in candidates {
            let group = index.entries_of(number);
            if group
                .first()
                .and_then(entry)
                .is_some_and(|e| e.matches(target))
            {
                out.extend(group.iter().filter_map(entry));
            }
        }
        if out.is_empty() && docker_hub {
            if let Some(hub) = index.hub {
                out.extend(index.entries_of(hub).iter().filter_map(entry));
            }
        }
        // `--creds` first, then the kubelet's order (a stable sort keeps it for the rest).
        if let Some(first) = self.first {
            out.sort_by_key(|e| e.label != first);
        }
        out
    }

    /// The number of `label` in [`Keyring::labels`], added when new.
    fn label(&mut self, label: &str) -> u32 {
        if self.labels.last().map(String::as_str) != Some(label) {
            self.labels.push(label.to_string());
        }
        u32::try_from(self.labels.len() - 1).unwrap_or(u32::MAX)
    }
}

impl files::Sink for Keyring {
    fn helper(&mut self, server: &str, helper: &str, label: &str) {
        self.add_helper(server, helper, label);
    }

    fn credential(
        &mut self,
        pattern: &KeyPattern,
        shown: &str,
        username: &str,
        password: &str,
        label: &str,
    ) {
        // A new entry outdates the lookup index, built again at the next lookup.
        self.index.take();
        let label = self.label(label);
        self.entries
            .push(Entry::new(pattern, shown, username, password, label));
    }
}

#[cfg(test)]
mod tests {
    use super::files::strip_userinfo;
    use super::matching::glob_match;
    use super::*;
    use base64::Engine;

    #[test]
    fn the_containers_tools_files_are_read_on_a_workstation_only() {
        let files = |vars: &[(&str, &str)]| -> Vec<String> {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            workstation_configs_from(|name| {
                vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
            })
            .into_iter()
            .map(|(_, label)| label)
            .collect()
        };
        assert_eq!(
            files(&[("HOME", "/home/a"), ("XDG_RUNTIME_DIR", "/run/user/1000")]),
            [
                "docker config /home/a/.docker/config.json",
                "containers auth /run/user/1000/containers/auth.json",
                "containers auth /home/a/.config/containers/auth.json",
            ]
        );
        assert_eq!(
            files(&[
                ("HOME", "/home/a"),
                ("DOCKER_CONFIG", "/d"),
                ("REGISTRY_AUTH_FILE", "/d/config.json"),
                ("XDG_CONFIG_HOME", "/x"),
            ]),
            [
                "docker config /d/config.json",
                "containers auth /x/containers/auth.json",
            ]
        );
        // In a pod: only what the kubelet's own keyring could hold too.
        assert_eq!(
            files(&[
                ("HOME", "/root"),
                ("XDG_RUNTIME_DIR", "/run/user/0"),
                ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
            ]),
            ["docker config /root/.docker/config.json"]
        );
        assert!(files(&[]).is_empty());
    }

    fn keyring(json: &str) -> Keyring {
        let mut k = Keyring::default();
        k.add_json(Path::new("test.json"), "secret test", json)
            .unwrap();
        k
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn glob_table() {
        let cases: &[(&str, &str, &str, Option<bool>)] = &[
            ("literal", "abc", "abc", Some(true)),
            ("literal mismatch", "abc", "abd", Some(false)),
            ("star", "*", "anything", Some(true)),
            ("star empty", "*", "", Some(true)),
            ("star suffix", "*-good", "prefix-good", Some(true)),
            ("star middle", "a*c", "abbbc", Some(true)),
            ("star backtrack", "a*b*c", "axbxbxc", Some(true)),
            ("question", "a?c", "abc", Some(true)),
            ("question needs one", "a?c", "ac", Some(false)),
            ("class", "[abc]x", "bx", Some(true)),
            ("class range", "[a-c]x", "dx", Some(false)),
            ("class negated", "[^a-c]x", "dx", Some(true)),
            ("escape", "a\\*", "a*", Some(true)),
            ("malformed class", "[a", "a", None),
            ("malformed escape", "a\\", "a", None),
        ];
        for (name, pattern, label, want) in cases {
            assert_eq!(
                glob_match(pattern.as_bytes(), label.as_bytes()),
                *want,
                "{name}"
            );
        }
    }

    #[test]
    fn key_match_table() {
        let cases: &[(&str, &str, &str, bool)] = &[
            (
                "glob label",
                "*.kubernetes.io",
                "prefix.kubernetes.io/a",
                true,
            ),
            ("glob middle", "prefix.*.io", "prefix.kubernetes.io/a", true),
            (
                "glob tld",
                "prefix.kubernetes.*",
                "prefix.kubernetes.io/a",
                true,
            ),
            (
                "glob partial label",
                "*-good.kubernetes.io",
                "prefix-good.kubernetes.io/a",
                true,
            ),
            (
                "scheme http",
                "http://*.kubernetes.io",
                "prefix.kubernetes.io/a",
                true,
            ),
            (
                "scheme https",
                "https://*.kubernetes.io",
                "prefix.kubernetes.io/a",
                true,
            ),
            (
                "port",
                "prefix.kubernetes.*:8080",
                "prefix.kubernetes.io:8080/a",
                true,
            ),
            (
                "port missing in image",
                "prefix.kubernetes.io:8080",
                "prefix.kubernetes.io/a",
                false,
            ),
            (
                "port missing in key",
                "prefix.kubernetes.io",
                "prefix.kubernetes.io:8080/a",
                false,
            ),
            (
                "path prefix",
                "*.kubernetes.io/foo",
                "prefix.kubernetes.io/foo/bar",
                true,
            ),
            (
                "path other",
                "*.kubernetes.io/foo",
                "prefix.kubernetes.io/bar",
                false,
            ),
            (
                "root not matched by glob",
                "*.kubernetes.io",
                "kubernetes.io/a",
                false,
            ),
            (
                "too many labels",
                "*.kubernetes.io",
                "a.b.kubernetes.io/a",
                false,
            ),
            (
                "too few labels",
                "*.*.kubernetes.io",
                "prefix.kubernetes.io/a",
                false,
            ),
            (
                "v1 path dropped",
                "https://index.docker.io/v1/",
                "index.docker.io/a",
                true,
            ),
            ("v2 path dropped", "https://r.io/v2/", "r.io/a", true),
            ("exact", "127.0.0.1:5443", "127.0.0.1:5443/team/app", true),
            (
                "ip other port",
                "127.0.0.1:5443",
                "127.0.0.1:5000/team/app",
                false,
            ),
        ];
        for (name, key, target, want) in cases {
            let pattern = KeyPattern::parse(key).unwrap();
            assert_eq!(pattern.matches(target), *want, "{name}: {key} vs {target}");
        }
    }

    /// The kubelet's `TestUrlsMatch` (pkg/credentialprovider/keyring_test.go), case by case.
    #[test]
    fn kubelet_urls_match() {
        let cases: &[(&str, &str, bool)] = &[
            ("*.kubernetes.io", "prefix.kubernetes.io", true),
            ("prefix.*.io", "prefix.kubernetes.io", true),
            ("prefix.kubernetes.*", "prefix.kubernetes.io", true),
            ("*-good.kubernetes.io", "prefix-good.kubernetes.io", true),
            ("*.kubernetes.io/blah", "prefix.kubernetes.io/blah", true),
            ("prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", true),
            (
                "*.kubernetes.io:1111/blah",
                "prefix.kubernetes.io:1111/blah",
                true,
            ),
            (
                "prefix.*.io:1111/foo",
                "prefix.kubernetes.io:1111/foo/bar",
                true,
            ),
            ("*.kubernetes.io", "kubernetes.io", false),
            ("*.*.kubernetes.io", "prefix.kubernetes.io", false),
            ("*.*.kubernetes.io", "kubernetes.io", false),
            ("kubernetes.io", "kubernetes.com", false),
            ("k*.io", "quay.io", false),
            (
                "*.kubernetes.io:1234/blah",
                "prefix.kubernetes.io:1111/blah",
                false,
            ),
            (
                "prefix.*.io/foo",
                "prefix.kubernetes.io:1111/foo/bar",
                false,
            ),
        ];
        for (glob, target, want) in cases {
            let pattern = KeyPattern::parse(glob).unwrap();
            assert_eq!(pattern.matches(target), *want, "{glob} vs {target}");
        }
    }

    fn single_entry(key: &str) -> Keyring {
        keyring(&format!(
            r#"{{"{key}": {{"email": "foo@bar.baz", "auth": "{}"}}}}"#,
            b64("foo:bar")
        ))
    }

    /// The kubelet's `TestDockerKeyringForGlob` and `TestKeyringMiss`: a `.dockercfg` with one
    /// key, looked up as `<target>/foo/bar`.
    #[test]
    fn kubelet_keyring_for_glob_and_miss() {
        let hits: &[(&str, &str)] = &[
            ("https://hello.kubernetes.io", "hello.kubernetes.io"),
            ("https://*.docker.io", "prefix.docker.io"),
            ("https://prefix.*.io", "prefix.docker.io"),
            ("https://prefix.docker.*", "prefix.docker.io"),
            ("https://*.docker.io/path", "prefix.docker.io/path"),
            ("https://prefix.*.io/path", "prefix.docker.io/path/subpath"),
            ("https://prefix.docker.*/path", "prefix.docker.io/path"),
            ("https://*.docker.io:8888", "prefix.docker.io:8888"),
            ("https://prefix.*.io:8888", "prefix.docker.io:8888"),
            ("https://prefix.docker.*:8888", "prefix.docker.io:8888"),
            (
                "https://*.docker.io/path:1111",
                "prefix.docker.io/path:1111",
            ),
            ("https://*.docker.io/v1/", "prefix.docker.io/path:1111"),
            ("https://*.docker.io/v2/", "prefix.docker.io/path:1111"),
            (
                "https://prefix.docker.*/path:1111",
                "prefix.docker.io/path:1111",
            ),
            ("prefix.docker.io:1111", "prefix.docker.io:1111/path"),
            ("*.docker.io:1111", "prefix.docker.io:1111/path"),
        ];
        for (key, target) in hits {
            let k = single_entry(key);
            let found = k.lookup_target(&format!("{target}/foo/bar"), false);
            assert_eq!(found.len(), 1, "{key} should match {target}");
            assert_eq!(found[0].username, "foo");
            assert_eq!(found[0].password.expose(), "bar");
        }
        let misses: &[(&str, &str)] = &[
            ("https://hello.kubernetes.io", "world.mesos.org/foo/bar"),
            ("https://*.docker.com", "prefix.docker.io"),
            ("https://suffix.*.io", "prefix.docker.io"),
            ("https://prefix.docker.c*", "prefix.docker.io"),
            (
                "https://prefix.*.io/path:1111",
                "prefix.docker.io/path/subpath:1111",
            ),
            ("suffix.*.io", "prefix.docker.io"),
        ];
        for (key, target) in misses {
            let k = single_entry(key);
            assert!(
                k.lookup_target(&format!("{target}/foo/bar"), false)
                    .is_empty(),
                "{key} should not match {target}"
            );
        }
    }

    /// The kubelet's Docker Hub cases: `TestKeyringMissWithDockerHubCredentials`,
    /// `TestKeyringHitWithUnqualifiedDockerHub`, `…UnqualifiedLibraryDockerHub`,
    /// `…QualifiedDockerHub`, and `TestIsDefaultRegistryMatch` on normalised registries.
    #[test]
    fn kubelet_docker_hub_cases() {
        let k = single_entry("https://index.docker.io");
        assert!(k.lookup("world.mesos.org", "foo/bar").is_empty());
        for (registry, repository) in [
            ("docker.io", "google/docker-registry"),
            ("docker.io", "library/jenkins"),
        ] {
            let found = k.lookup(registry, repository);
            assert_eq!(found.len(), 1, "{registry}/{repository}");
            assert_eq!(found[0].username, "foo");
        }
        let cases: &[(&str, bool)] = &[
            ("docker.io", true),
            ("index.docker.io", true),
            ("registry.tld", false),
            ("registry:5000", false),
            ("myhostdocker.io", false),
        ];
        for (registry, want) in cases {
            assert_eq!(is_default_registry_match(registry), *want, "{registry}");
        }
    }

    #[test]
    fn credential_helpers_are_asked_only_for_matching_images() {
        let config = r#"{"auths": {"store.io": {}}, "credsStore": "pullcheck-test-none",
                "credHelpers": {"helper.io": "pullcheck-test-none"}}"#;
        let mut k = Keyring::default();
        k.add_json(Path::new("secret.json"), "secret s", config)
            .unwrap();
        assert!(k.helpers.is_empty(), "a pull secret runs no helper");
        k.add_config(
            Path::new("config.json"),
            "docker config config.json",
            config,
            true,
        )
        .unwrap();
        assert_eq!(k.helpers.len(), 2);
        assert!(
            k.resolve_helpers([("other.io", "x")], Duration::from_secs(4))
                .is_empty()
        );
        // The helper program does not exist: a warning, and anonymous.
        let mut k = Keyring::default();
        k.add_helper(
            "helper.io",
            "pullcheck-test-none",
            "docker config config.json",
        );
        let warnings = k.resolve_helpers([("helper.io", "team/app")], Duration::from_secs(4));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("helper for helper.io"), "{warnings:?}");
        assert!(k.lookup("helper.io", "team/app").is_empty());
    }

    #[test]
    fn lookup_order_is_reverse_lexical_by_key() {
        let k = keyring(&format!(
            r#"{{"auths": {{
                "quay.io": {{"auth": "{}"}},
                "quay.io/team": {{"auth": "{}"}},
                "other.io": {{"auth": "{}"}}
            }}}}"#,
            b64("host:p1"),
            b64("team:p2"),
            b64("other:p3")
        ));
        let users: Vec<_> = k
            .lookup("quay.io", "team/app")
            .into_iter()
            .map(|c| c.username)
            .collect();
        assert_eq!(users, ["team", "host"]);
        assert!(k.lookup("docker.io", "library/nginx").is_empty());
    }

    #[test]
    fn docker_hub_falls_back_to_index_docker_io() {
        let k = keyring(&format!(
            r#"{{"https://index.docker.io/v1/": {{"auth": "{}"}}}}"#,
            b64("hub:pw")
        ));
        assert_eq!(k.lookup("docker.io", "library/nginx")[0].username, "hub");
        assert!(k.lookup("quay.io", "x").is_empty());
    }

    #[test]
    fn entry_forms() {
        let unpadded = b64("u:p:with:colons").trim_end_matches('=').to_string();
        let k = keyring(&format!(
            r#"{{"auths": {{
                "a.io": {{"auth": "{unpadded}", "username": "ignored", "password": "ignored"}},
                "b.io": {{"username": "bob", "password": "pw"}},
                "c.io": {{}}
            }}}}"#
        ));
        let a = k.lookup("a.io", "x");
        assert_eq!(a[0].username, "u");
        assert_eq!(a[0].password.expose(), "p:with:colons");
        assert_eq!(a[0].source, "secret test, key a.io");
        assert_eq!(k.lookup("b.io", "x")[0].username, "bob");
        assert!(k.lookup("c.io", "x").is_empty());
    }

    #[test]
    fn malformed_files_name_the_entry_not_the_secret() {
        let cases: &[(&str, &str, &str)] = &[
            ("not json", "{ not json", "not valid JSON"),
            ("array", "[]", "not a JSON object"),
            (
                "bad base64",
                r#"{"auths":{"r.io":{"auth":"!!!s3cret!!!"}}}"#,
                "entry r.io: \"auth\" is not valid base64",
            ),
            (
                "no colon",
                &format!(r#"{{"auths":{{"r.io":{{"auth":"{}"}}}}}}"#, b64("s3cret")),
                "does not decode to user:password",
            ),
            (
                "entry not object",
                r#"{"auths":{"r.io":"s3cret"}}"#,
                "entry r.io: not a JSON object",
            ),
            (
                "auths not object",
                r#"{"auths":"s3cret"}"#,
                "\"auths\" is not a JSON object",
            ),
        ];
        for (name, json, want) in cases {
            let mut k = Keyring::default();
            let e = k
                .add_json(Path::new("f.json"), "file f.json", json)
                .unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(want), "{name}: {msg}");
            assert!(msg.contains("f.json"), "{name}: {msg}");
            assert!(!msg.contains("s3cret"), "{name}: {msg}");
            assert!(!msg.contains(&b64("s3cret")), "{name}: {msg}");
        }
    }

    #[test]
    fn user_info_never_shows_in_a_key() {
        let cases: &[(&str, &str)] = &[
            ("https://user:pw@r.io", "https://r.io"),
            ("user:pw@r.io:5000/team", "r.io:5000/team"),
            ("https://a@b:p@w@r.io/x@y", "https://r.io/x@y"),
            ("https://r.io/v2/", "https://r.io/v2/"),
            ("r.io?u=a@b", "r.io?u=a@b"),
        ];
        for (key, want) in cases {
            assert_eq!(strip_userinfo(key), *want, "{key}");
        }
        let k = keyring(&format!(
            r#"{{"auths":{{"https://bob:hunter2@r.io":{{"auth":"{}"}}}}}}"#,
            b64("bob:pw")
        ));
        let found = k.lookup("r.io", "app");
        assert_eq!(
            found.len(),
            1,
            "user info does not stop the key from matching"
        );
        assert!(!found[0].source.contains("hunter2"), "{}", found[0].source);
        assert!(
            found[0].source.ends_with("key https://r.io"),
            "{}",
            found[0].source
        );
    }

    #[test]
    fn secrets_do_not_show_in_debug() {
        let k = keyring(&format!(
            r#"{{"auths":{{"r.io":{{"auth":"{}"}}}}}}"#,
            b64("al:s3cret")
        ));
        let dbg = format!("{k:?}");
        assert!(!dbg.contains("s3cret"), "{dbg}");
        assert!(dbg.contains("<redacted>"));
    }

    #[test]
    fn sources_name_their_keys_and_whether_they_match() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("secrets");
        for name in ["a-empty", "b-quay", "c-config-json", "d-hub"] {
            std::fs::create_dir_all(secrets.join(name)).unwrap();
        }
        std::fs::create_dir_all(secrets.join("a-empty/..data")).unwrap();
        let entry = |key: &str| {
            format!(
                r#"{{"auths": {{"https://user:pw@{key}/v1/": {{"auth": "{}"}}}}}}"#,
                b64("u:p")
            )
        };
        std::fs::write(secrets.join("b-quay/.dockerconfigjson"), entry("quay.io")).unwrap();
        std::fs::write(secrets.join("c-config-json/config.json"), entry("r.io")).unwrap();
        std::fs::write(
            secrets.join("d-hub/.dockerconfigjson"),
            entry("index.docker.io"),
        )
        .unwrap();
        let k = Keyring::load(&[], Some(&secrets), &[]).unwrap();
        let images = [("docker.io", "library/nginx")];
        let sources = k.sources(images);
        let shown: Vec<_> = sources
            .iter()
            .map(|s| {
                (
                    s.source.as_str(),
                    s.keys.clone(),
                    s.matches,
                    s.problem.is_some(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("secret a-empty", vec![], false, true),
                ("secret b-quay", vec!["quay.io".to_string()], false, false),
                ("secret c-config-json", vec![], false, true),
                (
                    "secret d-hub",
                    vec!["index.docker.io".to_string()],
                    true,
                    false
                ),
            ]
        );
        assert!(
            sources[0]
                .problem
                .as_deref()
                .unwrap()
                .starts_with("empty folder")
        );
        assert!(
            sources[2]
                .problem
                .as_deref()
                .unwrap()
                .starts_with("holds config.json, not .dockerconfigjson")
        );
        let warnings = k.source_warnings(images);
        assert_eq!(warnings.len(), 3, "{warnings:#?}");
        assert!(
            warnings[1].contains(
                "holds keys for quay.io only, none for the registries checked (docker.io)"
            )
        );
        let described = k.describe_sources();
        assert!(
            described.contains("secret b-quay (keys: quay.io)"),
            "{described}"
        );
        // Names only: no user info of a key, no user name, no secret.
        let all = format!("{sources:?}{warnings:?}{described}");
        for hidden in ["user:pw", "user@", "dTpw"] {
            assert!(!all.contains(hidden), "{hidden}: {all}");
        }
        // No images: nothing to warn about.
        assert!(k.source_warnings(std::iter::empty()).is_empty());
        // A folder that cannot be read says so (as root, permissions cannot make one here).
        assert!(
            folder_problem(&secrets.join("gone")).starts_with("cannot read the folder: "),
            "{}",
            folder_problem(&secrets.join("gone"))
        );
    }

    #[test]
    fn creds_come_first() {
        let mut k = keyring(&format!(
            r#"{{"auths": {{"r.io": {{"auth": "{}"}}}}}}"#,
            b64("a:b")
        ));
        k.add_first("r.io", "c", Secret::new("d"), "--creds");
        let found: Vec<_> = k
            .lookup("r.io", "x")
            .iter()
            .map(|c| c.username.clone())
            .collect();
        assert_eq!(found, ["c", "a"]);
        assert_eq!(k.sources([("r.io", "x")])[0].source, "--creds");
    }

    #[test]
    fn creds_come_first_even_before_a_more_specific_key() {
        // A pull secret's path-scoped key sorts before `r.io` in the kubelet's order; the
        // docs/reference/flags.md promises --creds before every other source.
        let mut k = keyring(&format!(
            r#"{{"auths": {{"r.io/team": {{"auth": "{}"}}, "r.io": {{"auth": "{}"}}}}}}"#,
            b64("scoped:b"),
            b64("plain:b")
        ));
        k.add_first("r.io", "cli", Secret::new("d"), "--creds");
        let found: Vec<_> = k
            .lookup("r.io", "team/app")
            .iter()
            .map(|c| c.username.clone())
            .collect();
        assert_eq!(found, ["cli", "scoped", "plain"]);
    }
}
