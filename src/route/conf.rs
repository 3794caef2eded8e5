//! containers-registries.conf(5), version 2, as containers/image (the library CRI-O and Podman
//! pull with) reads it: `--registries-conf PATH`.
//!
//! - PATH is a file, or a folder. A folder that holds `registries.conf.d/` is a node's
//!   `/etc/containers`: its `registries.conf`, then the `*.conf` files of `registries.conf.d/`
//!   in name order, and nothing else of the folder (`storage.conf`, `policy.json`, ...). Any
//!   other folder is the flat layout of a ConfigMap: its `registries.conf` first, then its
//!   other `*.conf` files in name order as drop-ins.
//! - `--registries-conf-dir DIR` names the drop-in folder on its own (CRI-O's flag of that
//!   name): PATH is then the main file.
//! - In a node's layout, both are read as containers/image reads the system's
//!   `/etc/containers/registries.conf` and `registries.conf.d/`: an absent file is an empty
//!   configuration, an absent folder has no drop-ins. A drop-in replaces a `[[registry]]` of
//!   the same prefix, and `unqualified-search-registries` when it sets it; `[aliases]` merge,
//!   later files winning.
//! - `[[registry]]`: `prefix` (longest match on the repository name; `*.example.com` matches
//!   sub-domains), `location` (replaces the prefix), `insecure`, `blocked`, and
//!   `[[registry.mirror]]` tried in order before the location, each with `insecure` and
//!   `pull-from-mirror = all | digest-only | tag-only` (or the registry's legacy
//!   `mirror-by-digest-only`).
//! - Short names: an `[aliases]` entry, else each of `unqualified-search-registries` in order
//!   (what containers/image does without a terminal); without either, `docker.io`.
//! - What the library refuses is a configuration error naming the file and the entry: the
//!   same location twice with conflicting `insecure` or `blocked`, an unparsable file.

use super::{Endpoint, ReadError, Route, Tls, TooManyValues};
use crate::reference::{Reference, ReferenceError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
/// The most `[[registry]]` entries one file may hold.
pub const MAX_REGISTRIES: usize = 1000;
/// The most mirrors one `[[registry]]` may list.
pub const MAX_MIRRORS: usize = 100;
/// The most files of a registries.conf folder (`registries.conf` and its drop-ins).
pub(crate) const MAX_FILES: usize = 100;
/// The drop-in folder of a node's `/etc/containers`.
pub const DROPIN_DIR: &str = "registries.conf.d";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV2 {
    #[serde(rename = "unqualified-search-registries")]
    unqualified_search_registries: Option<Vec<String>>,
    #[serde(default)]
    registry: Vec<RegistryToml>,
    aliases: Option<BTreeMap<String, String>>,
    #[serde(rename = "short-name-mode")]
    _short_name_mode: Option<String>,
    #[serde(rename = "credential-helpers")]
    _credential_helpers: Option<Vec<String>>,
    #[serde(rename = "additional-layer-store-auth-helper")]
    _als: Option<String>,
    /// The v1 format's table: refused with a clear message.
    registries: Option<toml::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryToml {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(rename = "mirror-by-digest-only", default)]
    mirror_by_digest_only: bool,
    #[serde(rename = "pull-from-mirror", default)]
    pull_from_mirror: String,
    #[serde(default)]
    mirror: Vec<MirrorToml>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct MirrorToml {
    #[serde(default)]
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(rename = "pull-from-mirror", default)]
    pull_from_mirror: String,
}

/// Which references a mirror serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PullFromMirror {
    /// Tags and digests.
    All,
    /// Digests only.
    DigestOnly,
    /// Tags only.
    TagOnly,
}

/// A mirror of a `[[registry]]`.
#[derive(Debug, Clone)]
pub struct Mirror {
    /// Where it is (`host[:port][/path]`).
    pub(crate) location: String,
    /// HTTPS without verification, then plain HTTP.
    pub(crate) insecure: bool,
    /// Which references it serves.
    pub(crate) pull_from_mirror: PullFromMirror,
}

/// A `[[registry]]` after validation.
#[derive(Debug, Clone)]
pub struct Registry {
    /// What it matches.
    pub(crate) prefix: String,
    /// Where the prefix is rewritten to; empty for a wildcard without one.
    pub(crate) location: String,
    /// HTTPS without verification, then plain HTTP.
    pub(crate) insecure: bool,
    /// The runtime refuses to pull from it.
    pub(crate) blocked: bool,
    /// Mirrors, in order.
    pub mirrors: Vec<Mirror>,
    /// The file that defined it (the last one, with drop-ins).
    pub(crate) file: PathBuf,
}

/// Why `--registries-conf` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file or the folder cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The folder holds more than [`MAX_FILES`] files.
    #[error(
        "{}: {} files, more than the {MAX_FILES} pullcheck reads (registries.conf and its drop-ins)",
        .0.display(),
        .1
    )]
    TooManyFiles(PathBuf, usize),
    /// One file is refused, as containers/image refuses it.
    #[error("{}: {}", .0.display(), .1)]
    File(PathBuf, FileError),
}

/// Why containers/image refuses one registries.conf file.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// More values than pullcheck parses.
    #[error(transparent)]
    TooManyValues(#[from] TooManyValues),
    /// Not TOML, or not registries.conf's fields: the parser's message.
    #[error("{0}")]
    Toml(String),
    /// More than [`MAX_REGISTRIES`] `[[registry]]` tables.
    #[error("{0} [[registry]] entries, more than the {MAX_REGISTRIES} pullcheck reads in one file")]
    TooManyRegistries(usize),
    /// A `[[registry]]` (its prefix, cut short) with more than [`MAX_MIRRORS`] mirrors.
    #[error(
        "[[registry]] {0:?}: {1} mirrors, more than the {MAX_MIRRORS} pullcheck reads for one registry"
    )]
    TooManyMirrors(String, usize),
    /// The version 1 format.
    #[error(
        "the version 1 format ([registries.search]) is not read: write it as version 2 ([[registry]])"
    )]
    Version1,
    /// An `unqualified-search-registries` entry that is not a host.
    #[error("Invalid unqualified-search-registries entry {0:?}")]
    SearchEntry(String),
    /// A location or prefix given as a URL.
    #[error("invalid location '{0}': URI schemes are not supported")]
    Scheme(String),
    /// A `[[registry]]` with neither.
    #[error("invalid condition: both location and prefix are unset")]
    Unset,
    /// A prefix without a location that is not a wildcard.
    #[error(
        "[[registry]] prefix {0:?}: invalid condition: location is unset and prefix is not in the format: *.example.com"
    )]
    NoLocation(String),
    /// `pull-from-mirror` on the registry (the prefix) rather than a mirror.
    #[error("pull-from-mirror must not be set for a non-mirror registry {0:?}")]
    NotMirror(String),
    /// A mirror of the registry (the prefix) without a location.
    #[error("[[registry]] prefix {0:?}: invalid condition: mirror location is unset")]
    NoMirrorLocation(String),
    /// Both `mirror-by-digest-only` on the registry and `pull-from-mirror` on a mirror.
    #[error(
        "cannot set mirror usage mirror-by-digest-only for the registry ({prefix:?}) and pull-from-mirror for per-mirror ({location:?}) at the same time"
    )]
    BothMirrorUsages {
        /// The registry's prefix.
        prefix: String,
        /// The mirror's location.
        location: String,
    },
    /// A `pull-from-mirror` value that is none of the three.
    #[error("unsupported pull-from-mirror value {value:?} for mirror {location:?}")]
    PullFromMirror {
        /// The value.
        value: String,
        /// The mirror's location.
        location: String,
    },
    /// The same location defined twice with a different `insecure` or `blocked` (the setting).
    #[error("registry '{0}' is defined multiple times with conflicting '{1}' setting")]
    Conflict(String, &'static str),
}

/// Why a prefix cannot be rewritten to a location: a note, and the source is skipped.
#[derive(Debug, thiserror::Error)]
enum RewriteError {
    /// The prefix does not match the reference.
    #[error("invalid prefix {prefix:?} for reference {full:?}")]
    Prefix { prefix: String, full: String },
    /// The reference itself does not parse.
    #[error(transparent)]
    Reference(ReferenceError),
    /// The rewritten reference does not parse.
    #[error("rewriting reference: {0}")]
    Rewritten(ReferenceError),
}

/// registries.conf with its drop-ins, merged.
#[derive(Debug, Default)]
pub struct RegistriesConf {
    /// By prefix.
    pub registries: BTreeMap<String, Registry>,
    /// Tried in order for short names.
    pub(crate) unqualified_search_registries: Vec<String>,
    /// Short name → fully qualified repository.
    pub(crate) aliases: BTreeMap<String, String>,
}

impl RegistriesConf {
    /// Reads PATH: a file; a node's folder (it holds `registries.conf.d/`), read as
    /// [`RegistriesConf::load_node`] reads it; or a flat folder of `*.conf` with
    /// `registries.conf` first.
    pub(crate) fn load(path: &Path) -> Result<RegistriesConf, LoadError> {
        if !path.is_dir() {
            return RegistriesConf::read_files(path, vec![path.to_path_buf()]);
        }
        let main = path.join("registries.conf");
        let node_dropins = path.join(DROPIN_DIR);
        if node_dropins.is_dir() {
            return RegistriesConf::load_node(Some(&main), &node_dropins);
        }
        let mut dropins: Vec<PathBuf> = super::dir_files(path)?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "conf") && *p != main)
            .collect();
        dropins.sort();
        let mut files = Vec::new();
        if main.is_file() {
            files.push(main);
        }
        files.extend(dropins);
        RegistriesConf::read_files(path, files)
    }

    /// Reads a node's files as containers/image reads the system's: `main` (absent: an empty
    /// configuration), then the `*.conf` files of `dropins` in name order (absent: none).
    /// Nothing else of either folder is read.
    pub(crate) fn load_node(
        main: Option<&Path>,
        dropins: &Path,
    ) -> Result<RegistriesConf, LoadError> {
        let mut files = Vec::new();
        if let Some(main) = main
            && exists(main)?
        {
            files.push(main.to_path_buf());
        }
        if exists(dropins)? {
            let mut confs: Vec<PathBuf> = super::dir_files(dropins)?
                .into_iter()
                // containers/image takes the names that end in `.conf`, `.conf` itself too.
                .filter(|p| p.to_str().is_some_and(|n| n.ends_with(".conf")))
                .collect();
            confs.sort();
            files.extend(confs);
        }
        RegistriesConf::read_files(dropins, files)
    }

    /// Reads `files` in order, each laid over the ones before; `source` names them all.
    fn read_files(source: &Path, files: Vec<PathBuf>) -> Result<RegistriesConf, LoadError> {
        if files.len() > MAX_FILES {
            return Err(LoadError::TooManyFiles(source.to_path_buf(), files.len()));
        }
        let mut conf = RegistriesConf::default();
        for file in files {
            let text = super::read_text(&file)?;
            if let Err(e) = conf.merge(&text, &file) {
                return Err(LoadError::File(file, e));
            }
        }
        Ok(conf)
    }

    /// Parses one file and lays it over what was read before.
    pub fn merge(&mut self, text: &str, file: &Path) -> Result<(), FileError> {
        super::check_toml_size(text)?;
        let parsed: FileV2 =
            toml::from_str(text).map_err(|e| FileError::Toml(e.message().to_string()))?;
        if parsed.registry.len() > MAX_REGISTRIES {
            return Err(FileError::TooManyRegistries(parsed.registry.len()));
        }
        if let Some(r) = parsed
            .registry
            .iter()
            .find(|r| r.mirror.len() > MAX_MIRRORS)
        {
            return Err(FileError::TooManyMirrors(
                r.prefix.chars().take(80).collect(),
                r.mirror.len(),
            ));
        }
        if parsed.registries.is_some() {
            return Err(FileError::Version1);
        }
        let registries = validate(&parsed.registry, file)?;
        for r in registries {
            self.registries.insert(r.prefix.clone(), r);
        }
        if let Some(search) = parsed.unqualified_search_registries {
            let mut list = Vec::new();
            for s in search {
                let s = parse_location(&s)?;
                if s.is_empty() || s.contains('/') {
                    return Err(FileError::SearchEntry(s));
                }
                list.push(s);
            }
            self.unqualified_search_registries = list;
        }
        for (k, v) in parsed.aliases.unwrap_or_default() {
            self.aliases.insert(k, v);
        }
        Ok(())
    }

    /// The `[[registry]]` whose prefix matches `name` (`host/repository`) longest.
    pub(crate) fn find(&self, name: &str) -> Option<&Registry> {
        self.registries
            .values()
            .filter(|r| matching_prefix(name, &r.prefix).is_some())
            .max_by_key(|r| r.prefix.len())
    }

    /// The references a short name is tried as, in order; `None` when `input` is not short,
    /// or when nothing in the configuration resolves it (then `docker.io`, as parsed).
    pub fn candidates(&self, input: &str) -> Option<Vec<String>> {
        if !is_short_name(input) {
            return None;
        }
        // The name without tag or digest, for the aliases.
        let (name_tag, digest) = match input.split_once('@') {
            Some((n, d)) => (n, Some(d)),
            None => (input, None),
        };
        let (name, tag) = match name_tag.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => (n, Some(t)),
            _ => (name_tag, None),
        };
        let suffix = match (tag, digest) {
            (_, Some(d)) => format!("@{d}"),
            (Some(t), None) => format!(":{t}"),
            (None, None) => String::new(),
        };
        if let Some(target) = self.aliases.get(name) {
            return Some(vec![format!("{target}{suffix}")]);
        }
        if self.unqualified_search_registries.is_empty() {
            return None;
        }
        Some(
            self.unqualified_search_registries
                .iter()
                .map(|r| format!("{r}/{name}{suffix}"))
                .collect(),
        )
    }

    /// The endpoints for `input`, parsed as `reference`: each short-name candidate in turn,
    /// each with its mirrors and then its location. A blocked candidate is an endpoint that
    /// is never asked.
    pub fn route(&self, input: &str, reference: &Reference, plain_http: &[String]) -> Route {
        let mut notes = Vec::new();
        let candidates: Vec<Reference> = match self.candidates(input) {
            Some(list) => list
                .iter()
                .filter_map(|c| match Reference::parse(c) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        notes.push(format!("short-name candidate skipped: {e}"));
                        None
                    }
                })
                .collect(),
            None => vec![reference.clone()],
        };
        let mut endpoints = Vec::new();
        for candidate in &candidates {
            self.route_one(candidate, plain_http, &mut endpoints, &mut notes);
        }
        Route { endpoints, notes }
    }

    fn route_one(
        &self,
        reference: &Reference,
        plain_http: &[String],
        endpoints: &mut Vec<Endpoint>,
        notes: &mut Vec<String>,
    ) {
        let name = format!("{}/{}", reference.registry, reference.repository);
        let Some(reg) = self.find(&name) else {
            endpoints.push(Endpoint::direct(reference, plain_http));
            return;
        };
        if reg.blocked {
            endpoints.push(Endpoint {
                blocked: Some(reg.file.display().to_string()),
                ..Endpoint::direct(reference, plain_http)
            });
            return;
        }
        let full = reference.to_string();
        let by_digest = reference.digest.is_some();
        for m in &reg.mirrors {
            let serves = match m.pull_from_mirror {
                PullFromMirror::All => true,
                PullFromMirror::DigestOnly => by_digest,
                PullFromMirror::TagOnly => !by_digest,
            };
            if !serves {
                notes.push(format!(
                    "mirror {} skipped (pull-from-mirror = {})",
                    m.location,
                    if by_digest { "tag-only" } else { "digest-only" }
                ));
                continue;
            }
            match rewrite(&full, &reg.prefix, &m.location) {
                Ok(r) => endpoints.push(endpoint(reference, r, m.insecure, plain_http)),
                Err(e) => notes.push(e.to_string()),
            }
        }
        match rewrite(&full, &reg.prefix, &reg.location) {
            Ok(r) => endpoints.push(endpoint(reference, r, reg.insecure, plain_http)),
            Err(e) => notes.push(e.to_string()),
        }
    }
}

/// The endpoint of a pull source: `rewritten` on its own host, credentials only when that is
/// the image's own registry.
fn endpoint(
    original: &Reference,
    rewritten: Reference,
    insecure: bool,
    plain_http: &[String],
) -> Endpoint {
    let mut e = Endpoint::direct(&rewritten, plain_http);
    let same = rewritten.registry == original.registry;
    e.credentials = same;
    e.mirror_of = (!same).then(|| original.registry.clone());
    if insecure && e.origin.starts_with("https://") {
        e.http_fallback = true;
        e.tls = Some(Arc::new(Tls {
            skip_verify: true,
            ..Tls::default()
        }));
    }
    e
}

/// Whether `path` exists: `false` only when it does not, as containers/image ignores an absent
/// system file or drop-in folder; any other failure is an error.
fn exists(path: &Path) -> Result<bool, ReadError> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ReadError::Io(path.to_path_buf(), Arc::new(e))),
    }
}

/// containers/image's rewrite: the location replaces the matched prefix.
fn rewrite(full: &str, prefix: &str, location: &str) -> Result<Reference, RewriteError> {
    let Some(len) = matching_prefix(full, prefix) else {
        return Err(RewriteError::Prefix {
            prefix: prefix.to_string(),
            full: full.to_string(),
        });
    };
    if location.is_empty() {
        return Reference::parse(full).map_err(RewriteError::Reference);
    }
    let rewritten = format!("{location}{}", &full[len..]);
    Reference::parse(&rewritten).map_err(RewriteError::Rewritten)
}

/// How much of `reference` the prefix matches (containers/image's `refMatchingPrefix`).
fn matching_prefix(reference: &str, prefix: &str) -> Option<usize> {
    if let Some(domain) = prefix.strip_prefix('*') {
        // `*.example.com` matches a sub-domain in the host part only.
        let index = reference.find(domain)?;
        if reference[..index].contains('/') {
            return None;
        }
        let end = index + domain.len();
        return match reference.as_bytes().get(end) {
            None | Some(b':' | b'/' | b'@') => Some(end),
            _ => None,
        };
    }
    if reference == prefix {
        return Some(prefix.len());
    }
    let rest = reference.strip_prefix(prefix)?;
    matches!(rest.as_bytes().first(), Some(b':' | b'/' | b'@')).then_some(prefix.len())
}

fn parse_location(input: &str) -> Result<String, FileError> {
    let trimmed = input.trim_end_matches('/');
    if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        return Err(FileError::Scheme(input.to_string()));
    }
    Ok(trimmed.to_string())
}

fn pull_from_mirror(value: &str, location: &str) -> Result<PullFromMirror, FileError> {
    match value {
        "" | "all" => Ok(PullFromMirror::All),
        "digest-only" => Ok(PullFromMirror::DigestOnly),
        "tag-only" => Ok(PullFromMirror::TagOnly),
        v => Err(FileError::PullFromMirror {
            value: v.to_string(),
            location: location.to_string(),
        }),
    }
}

/// containers/image's checks of one file, in its order.
fn validate(entries: &[RegistryToml], file: &Path) -> Result<Vec<Registry>, FileError> {
    let mut out: Vec<Registry> = Vec::new();
    for r in entries {
        let location = parse_location(&r.location)?;
        let prefix = if r.prefix.is_empty() {
            if location.is_empty() {
                return Err(FileError::Unset);
            }
            location.clone()
        } else {
            let p = parse_location(&r.prefix)?;
            if !p.starts_with("*.") && location.is_empty() {
                return Err(FileError::NoLocation(p));
            }
            p
        };
        if !r.pull_from_mirror.is_empty() {
            return Err(FileError::NotMirror(prefix));
        }
        let mut mirrors = Vec::new();
        for m in &r.mirror {
            let loc = parse_location(&m.location)?;
            if loc.is_empty() {
                return Err(FileError::NoMirrorLocation(prefix));
            }
            if r.mirror_by_digest_only && !m.pull_from_mirror.is_empty() {
                return Err(FileError::BothMirrorUsages {
                    prefix,
                    location: loc,
                });
            }
            let mode = if r.mirror_by_digest_only {
                PullFromMirror::DigestOnly
            } else {
                pull_from_mirror(&m.pull_from_mirror, &loc)?
            };
            mirrors.push(Mirror {
                location: loc,
                insecure: m.insecure,
                pull_from_mirror: mode,
            });
        }
        out.push(Registry {
            prefix,
            location,
            insecure: r.insecure,
            blocked: r.blocked,
            mirrors,
            file: file.to_path_buf(),
        });
    }
    // The same location (or wildcard prefix) defined twice must agree on insecure and blocked.
    // One pass keeps the first definition of each key: the first one that disagrees with
    // it is the conflict containers/image names (a pair of loops was quadratic: 48,000
    // registries took 26 s).
    let key = |r: &Registry| {
        if r.location.is_empty() {
            r.prefix.clone()
        } else {
            r.location.clone()
        }
    };
    let mut first: std::collections::HashMap<String, (bool, bool)> =
        std::collections::HashMap::new();
    for r in &out {
        let k = key(r);
        let (insecure, blocked) = *first.entry(k.clone()).or_insert((r.insecure, r.blocked));
        if insecure != r.insecure {
            return Err(FileError::Conflict(k, "insecure"));
        }
        if blocked != r.blocked {
            return Err(FileError::Conflict(k, "blocked"));
        }
    }
    // The first definition of a prefix wins within a file.
    let mut seen = std::collections::HashSet::new();
    out.retain(|r| seen.insert(r.prefix.clone()));
    Ok(out)
}

/// A short name: no registry host in its first component (containers/image's test: a dot, a
/// colon, or `localhost`).
pub(crate) fn is_short_name(input: &str) -> bool {
    match input.split_once('/') {
        None => true,
        Some((first, _)) => !(first.contains('.') || first.contains(':') || first == "localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(text: &str) -> RegistriesConf {
        let mut c = RegistriesConf::default();
        c.merge(text, Path::new("registries.conf")).unwrap();
        c
    }

    fn urls(c: &RegistriesConf, input: &str) -> Vec<String> {
        let r = Reference::parse(input).unwrap();
        c.route(input, &r, &[])
            .endpoints
            .iter()
            .map(|e| {
                if e.blocked.is_some() {
                    "blocked".to_string()
                } else {
                    format!("{}/{}", e.url(), e.reference.repository)
                }
            })
            .collect()
    }

    #[test]
    fn prefix_matching_table() {
        let cases: &[(&str, &str, Option<usize>)] = &[
            ("example.com/foo/bar", "example.com/foo", Some(15)),
            ("example.com/foobar", "example.com/foo", None),
            ("example.com/foo", "example.com/foo", Some(15)),
            ("example.com/foo:tag", "example.com/foo", Some(15)),
            ("a.example.com/x", "*.example.com", Some(13)),
            ("example.com/x", "*.example.com", None),
            ("a.example.com.evil/x", "*.example.com", None),
            ("evil.com/a.example.com/x", "*.example.com", None),
        ];
        for (r, p, want) in cases {
            assert_eq!(matching_prefix(r, p), *want, "{r} {p}");
        }
    }

    #[test]
    fn mirrors_then_location_longest_prefix_wins() {
        let c = conf(
            r#"
[[registry]]
prefix = "reg.corp"
location = "reg.corp"
[[registry.mirror]]
location = "mirror.corp:5000"
[[registry]]
prefix = "reg.corp/team"
location = "other.corp/moved"
[[registry.mirror]]
location = "m2.corp/cache"
pull-from-mirror = "digest-only"
"#,
        );
        assert_eq!(
            urls(&c, "reg.corp/app:1"),
            ["https://mirror.corp:5000/v2/app", "https://reg.corp/v2/app"]
        );
        assert_eq!(
            urls(&c, "reg.corp/team/app:1"),
            ["https://other.corp/v2/moved/app"]
        );
        let d = format!("reg.corp/team/app@sha256:{}", "b".repeat(64));
        assert_eq!(
            urls(&c, &d),
            [
                "https://m2.corp/v2/cache/app",
                "https://other.corp/v2/moved/app"
            ]
        );
        let r = Reference::parse("reg.corp/app:1").unwrap();
        let route = c.route("reg.corp/app:1", &r, &[]);
        assert!(!route.endpoints[0].credentials && route.endpoints[1].credentials);
        assert_eq!(route.endpoints[0].mirror_of.as_deref(), Some("reg.corp"));
    }

    #[test]
    fn blocked_and_short_names() {
        let c = conf(
            r#"
unqualified-search-registries = ["one.corp", "two.corp:5000"]
[aliases]
"pinned" = "three.corp/tools/pinned"
[[registry]]
location = "bad.corp"
blocked = true
"#,
        );
        assert_eq!(urls(&c, "bad.corp/x:1"), ["blocked"]);
        assert_eq!(
            urls(&c, "app:2"),
            ["https://one.corp/v2/app", "https://two.corp:5000/v2/app"]
        );
        assert_eq!(urls(&c, "pinned:1"), ["https://three.corp/v2/tools/pinned"]);
        assert_eq!(urls(&c, "quay.io/x:1"), ["https://quay.io/v2/x"]);
    }

    #[test]
    fn legacy_digest_only_and_insecure() {
        let c = conf(
            "[[registry]]\nlocation = \"reg.corp\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.corp\"\ninsecure = true\n",
        );
        assert_eq!(urls(&c, "reg.corp/a:1"), ["https://reg.corp/v2/a"]);
        let d = format!("reg.corp/a@sha256:{}", "c".repeat(64));
        let r = Reference::parse(&d).unwrap();
        let route = c.route(&d, &r, &[]);
        assert!(route.endpoints[0].http_fallback);
        assert!(route.endpoints[0].tls.as_ref().unwrap().skip_verify);
    }

    #[test]
    fn refused_configurations() {
        let cases: &[(&str, &str)] = &[
            (
                "[[registry]]\nprefix=\"a.corp/x\"\nlocation=\"a.corp\"\n[[registry]]\nprefix=\"a.corp/y\"\nlocation=\"a.corp\"\ninsecure=true\n",
                "conflicting 'insecure'",
            ),
            (
                "[[registry]]\nprefix=\"a.corp/x\"\nlocation=\"a.corp\"\nblocked=true\n[[registry]]\nlocation=\"a.corp\"\n",
                "conflicting 'blocked'",
            ),
            (
                "[[registry]]\nlocation = \"https://a.corp\"\n",
                "URI schemes",
            ),
            ("[[registry]]\nprefix = \"a.corp\"\n", "location is unset"),
            ("[registries.search]\nregistries = [\"a\"]\n", "version 1"),
            ("[[registry]\n", ""),
            (
                "[[registry]]\nlocation=\"a\"\n[[registry.mirror]]\nlocation=\"b\"\npull-from-mirror=\"never\"\n",
                "unsupported pull-from-mirror",
            ),
        ];
        for (text, want) in cases {
            let mut c = RegistriesConf::default();
            let e = c.merge(text, Path::new("r.conf")).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn dropins_replace_by_prefix_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("registries.conf"),
            "unqualified-search-registries = [\"one.corp\"]\n[[registry]]\nlocation = \"a.corp\"\nblocked = true\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("50-unblock.conf"),
            "[[registry]]\nlocation = \"a.corp\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("ignored.txt"), "not toml [").unwrap();
        let c = RegistriesConf::load(dir.path()).unwrap();
        assert!(!c.registries["a.corp"].blocked);
        assert_eq!(c.unqualified_search_registries, ["one.corp"]);
        std::fs::write(dir.path().join("60-bad.conf"), "[[registry]\n").unwrap();
        let e = RegistriesConf::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("60-bad.conf"), "{e}");
    }

    #[test]
    fn a_nodes_folder_reads_registries_conf_d_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path();
        std::fs::write(
            node.join("registries.conf"),
            "unqualified-search-registries = [\"one.corp\"]\n[[registry]]\nlocation = \"a.corp\"\nblocked = true\n",
        )
        .unwrap();
        // What a node's /etc/containers also holds: none of it is registries.conf.
        std::fs::write(
            node.join("storage.conf"),
            "[storage]\ndriver = \"overlay\"\n",
        )
        .unwrap();
        std::fs::write(node.join("containers.conf"), "[engine]\n").unwrap();
        std::fs::write(node.join("policy.json"), "{}").unwrap();
        std::fs::write(
            node.join("mounts.conf"),
            "/usr/share/rhel/secrets:/run/secrets\n",
        )
        .unwrap();
        std::fs::create_dir_all(node.join("registries.d")).unwrap();
        let d = node.join(DROPIN_DIR);
        std::fs::create_dir_all(d.join("nested")).unwrap();
        std::fs::write(
            d.join("20-b.conf"),
            "unqualified-search-registries = [\"two.corp\"]\n",
        )
        .unwrap();
        std::fs::write(d.join("10-a.conf"), "[[registry]]\nlocation = \"a.corp\"\n").unwrap();
        std::fs::write(d.join("README"), "not toml [").unwrap();
        std::fs::write(d.join("nested").join("x.conf"), "not toml [").unwrap();
        let c = RegistriesConf::load(node).unwrap();
        assert!(!c.registries["a.corp"].blocked, "the drop-in replaces it");
        assert!(c.registries["a.corp"].file.ends_with("10-a.conf"));
        assert_eq!(c.unqualified_search_registries, ["two.corp"]);
        // The same files named apart, as `inject --registries-from-node` passes them.
        let apart = RegistriesConf::load_node(Some(&node.join("registries.conf")), &d).unwrap();
        assert!(!apart.registries["a.corp"].blocked);
        assert_eq!(apart.unqualified_search_registries, ["two.corp"]);
        // Drop-ins in name order: a later file wins.
        std::fs::write(
            d.join("30-c.conf"),
            "[[registry]]\nlocation = \"a.corp\"\nblocked = true\n",
        )
        .unwrap();
        assert!(RegistriesConf::load(node).unwrap().registries["a.corp"].blocked);
        // A bad drop-in is named.
        std::fs::write(d.join("40-bad.conf"), "[[registry]\n").unwrap();
        let e = RegistriesConf::load(node).unwrap_err().to_string();
        assert!(e.contains("40-bad.conf"), "{e}");
    }

    #[test]
    fn a_nodes_absent_files_are_an_empty_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path();
        // Neither the file nor the folder: nothing configured, as containers/image reads a
        // node without them.
        let c =
            RegistriesConf::load_node(Some(&node.join("registries.conf")), &node.join(DROPIN_DIR))
                .unwrap();
        assert!(c.registries.is_empty() && c.unqualified_search_registries.is_empty());
        // The folder alone, in a node's folder without registries.conf.
        let d = node.join(DROPIN_DIR);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("m.conf"), "[[registry]]\nlocation = \"a.corp\"\n").unwrap();
        assert!(
            RegistriesConf::load(node)
                .unwrap()
                .registries
                .contains_key("a.corp")
        );
        assert!(
            RegistriesConf::load_node(None, &d)
                .unwrap()
                .registries
                .contains_key("a.corp")
        );
        // More drop-ins than pullcheck reads.
        for i in 0..MAX_FILES {
            std::fs::write(d.join(format!("{i:03}.conf")), "").unwrap();
        }
        let e = RegistriesConf::load(node).unwrap_err();
        assert!(matches!(e, LoadError::TooManyFiles(..)), "{e}");
    }

    #[test]
    fn short_names() {
        for (input, short) in [
            ("nginx", true),
            ("library/nginx:1", true),
            ("localhost/x", false),
            ("reg.corp/x", false),
            ("reg:5000/x", false),
        ] {
            assert_eq!(is_short_name(input), short, "{input}");
        }
    }
}
