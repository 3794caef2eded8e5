//! Pull-secret files as the kubelet reads them: `.dockerconfigjson`, `.dockercfg` and
//! `config.json`, a folder of mounted Secrets, each entry's `auth` or username and password,
//! with errors that name the file and key and never the secret.

use super::matching::KeyPattern;
use super::{CONFIG_FILE_NAMES, KeyringError, MAX_FILE_BYTES};
use base64::Engine;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The three fields of a config entry that are used, as raw slices; the rest is skipped unread.
#[derive(serde::Deserialize)]
pub(super) struct EntryFields<'a> {
    #[serde(borrow, default)]
    pub(super) username: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) password: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub(super) auth: Option<&'a RawValue>,
}

/// What is wrong with one entry of a config's map (never its secret).
#[derive(Debug, thiserror::Error)]
pub(super) enum EntryError {
    #[error("not a JSON object")]
    NotObject,
    /// Not an object of the entry's fields: what kind of JSON error (never its text, which
    /// may quote the secret).
    #[error("not a usable entry ({0})")]
    Unusable(&'static str),
    /// A field (its name) that is not a string.
    #[error("\"{0}\" is not a string")]
    NotString(&'static str),
    #[error("\"auth\" is not valid base64")]
    AuthBase64,
    #[error("\"auth\" does not decode to user:password")]
    AuthPair,
}

/// Walks a JSON object's members in document order, handing each (key, raw value) to the
/// callback, which returns `false` to stop: nothing of the map is kept.
pub(super) struct EachEntry<'f, F>(&'f mut F);

impl<'de, F> serde::de::DeserializeSeed<'de> for EachEntry<'_, F>
where
    F: FnMut(String, &'de RawValue) -> bool,
{
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F> serde::de::Visitor<'de> for EachEntry<'_, F>
where
    F: FnMut(String, &'de RawValue) -> bool,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
            if !(self.0)(key, value) {
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// Where the entries read go (the keyring), one at a time: the files are read without
/// holding what they add a second time.
pub(super) trait Sink {
    /// A server whose secret the credential helper `helper` keeps, from the source `label`.
    fn helper(&mut self, server: &str, helper: &str, label: &str);
    /// A username and password for the key `pattern` (`shown` in messages), from `label`.
    fn credential(
        &mut self,
        pattern: &KeyPattern,
        shown: &str,
        username: &str,
        password: &str,
        label: &str,
    );
}

/// The entries of one pull-secret file's `text` into `sink` (`Keyring::add_json`); with
/// `helpers`, also the `credHelpers` / `credsStore` of a workstation's Docker CLI config.
///
/// Parsed straight into what is kept: the top level and the entries as raw slices of
/// `text`, each entry's three fields read from its slice, so that a 4 MiB file is never a
/// tree of values as well.
pub(super) fn read_config(
    sink: &mut impl Sink,
    path: &Path,
    label: &str,
    text: &str,
    helpers: bool,
) -> Result<(), KeyringError> {
    let err = |what: String| KeyringError {
        path: path.to_path_buf(),
        what,
    };
    let not_json = |e: serde_json::Error| {
        // serde_json's message holds only a position and a category, never the content.
        err(format!(
            "not valid JSON (line {}, column {}: {})",
            e.line(),
            e.column(),
            json_category(&e)
        ))
    };
    let whole: &RawValue = serde_json::from_str(text).map_err(not_json)?;
    if !whole.get().starts_with('{') {
        return Err(err("not a JSON object".to_string()));
    }
    let top: BTreeMap<String, &RawValue> = serde_json::from_str(whole.get()).map_err(not_json)?;
    // `.dockerconfigjson` and config.json wrap the map in "auths"; legacy `.dockercfg` is
    // the bare map.
    let is_cli_config = top.contains_key("credHelpers") || top.contains_key("credsStore");
    let map: Option<&RawValue> = match top.get("auths") {
        Some(auths) if auths.get().starts_with('{') => Some(auths),
        Some(_) => return Err(err("\"auths\" is not a JSON object".to_string())),
        None if is_cli_config => None,
        None => Some(whole),
    };
    // A Docker CLI config: servers whose secret a credential helper keeps. Only the
    // workstation's own config runs helpers; the kubelet runs none from a pull secret.
    let string_of = |raw: Option<&&RawValue>| {
        raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok())
            .filter(|s| !s.is_empty())
    };
    if helpers {
        if let Some(servers) = top.get("credHelpers") {
            let servers: BTreeMap<String, &RawValue> =
                serde_json::from_str(servers.get()).unwrap_or_default();
            for (server, helper) in servers {
                if let Some(helper) = string_of(Some(&helper)) {
                    sink.helper(&server, &helper, label);
                }
            }
        }
    }
    let store = if helpers {
        string_of(top.get("credsStore"))
    } else {
        None
    };
    let Some(map) = map else {
        return Ok(());
    };
    let mut failed = None;
    let mut visit = |key: String, entry: &RawValue| -> bool {
        match read_entry(sink, &key, entry, label, store.as_deref()) {
            Ok(()) => true,
            Err(what) => {
                failed = Some(err(format!("entry {}: {what}", shown_key(&key))));
                false
            }
        }
    };
    // Entries in document order: a JSON object has no order of its own, and the kubelet
    // walks a Go map (in random order); every matching entry is tried in turn anyway.
    let mut de = serde_json::Deserializer::from_str(map.get());
    let walked = serde::de::DeserializeSeed::deserialize(EachEntry(&mut visit), &mut de);
    if let Some(e) = failed {
        return Err(e);
    }
    walked.map_err(not_json)
}

/// One entry of a config's map into `sink`; the error says what is wrong with it, never
/// its secret.
pub(super) fn read_entry(
    sink: &mut impl Sink,
    key: &str,
    entry: &RawValue,
    label: &str,
    store: Option<&str>,
) -> Result<(), EntryError> {
    if !entry.get().starts_with('{') {
        return Err(EntryError::NotObject);
    }
    let fields: EntryFields<'_> =
        serde_json::from_str(entry.get()).map_err(|e| EntryError::Unusable(json_category(&e)))?;
    let field = |name: &'static str, raw: Option<&RawValue>| match raw {
        None => Ok(None),
        Some(r) if r.get() == "null" => Ok(None),
        Some(r) => serde_json::from_str::<String>(r.get())
            .map(Some)
            .map_err(|_| EntryError::NotString(name)),
    };
    let mut username = field("username", fields.username)?.unwrap_or_default();
    let mut password = field("password", fields.password)?.unwrap_or_default();
    // `auth` overrides username and password, as in the kubelet.
    if let Some(auth) = field("auth", fields.auth)?.filter(|a| !a.is_empty()) {
        let decoded = decode_auth(&auth).ok_or(EntryError::AuthBase64)?;
        let (u, p) = decoded.split_once(':').ok_or(EntryError::AuthPair)?;
        username = u.to_string();
        password = p.to_string();
    }
    if username.is_empty() && password.is_empty() {
        // An entry that only names a server: with a credentials store, the store keeps
        // the secret; otherwise there is nothing to use.
        if let Some(store) = store {
            sink.helper(key, store, label);
        }
        return Ok(());
    }
    // A key Go's url.Parse refuses is logged and ignored by the kubelet, which still
    // pulls with the other entries: do the same.
    let Some(pattern) = KeyPattern::parse(key) else {
        return Ok(());
    };
    let shown = format!("key {}", shown_key(key));
    sink.credential(&pattern, &shown, &username, &password, label);
    Ok(())
}

/// The text of a pull-secret file, read through a limit: a device (`/dev/zero`) reports no
/// size and never ends.
pub(super) fn read_text(file: &Path) -> Result<String, KeyringError> {
    let err = |what: String| KeyringError {
        path: file.to_path_buf(),
        what,
    };
    let bytes = crate::input::read_limited_file(file, MAX_FILE_BYTES).map_err(|e| match e {
        crate::input::LimitedReadError::TooLarge => err(format!(
            "larger than {} MiB: too large for a credential file (a Kubernetes Secret holds at most 1 MiB)",
            MAX_FILE_BYTES >> 20
        )),
        crate::input::LimitedReadError::Io(e) => err(format!("cannot read: {e}")),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| err("not UTF-8 text".to_string()))?;
    if text.trim().is_empty() {
        return Err(err("empty file".to_string()));
    }
    Ok(text)
}

/// Base64 of `user:password`, padded or not, standard or URL-safe alphabet.
pub(super) fn decode_auth(auth: &str) -> Option<String> {
    use base64::engine::DecodePaddingMode;
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    // Built once: an engine computes its tables, and a docker config may hold 100,000 entries.
    const CONFIG: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, CONFIG);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, CONFIG);
    let auth = auth.trim();
    let bytes = STANDARD
        .decode(auth)
        .or_else(|_| URL_SAFE.decode(auth))
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// A docker config key as shown in messages, JSON and the termination message: without user
/// info (`https://user:password@host` would print the password), escaped, at most 100
/// characters. The only way a key is shown.
pub(super) fn shown_key(key: &str) -> String {
    let key = strip_userinfo(key);
    let mut out: String = key
        .chars()
        .take(100)
        .flat_map(char::escape_default)
        .collect();
    if key.chars().count() > 100 {
        out.push('…');
    }
    out
}

/// `key` without the `user:password@` of its authority (where Go's URL parser finds it: before
/// the first `/`, `?` or `#` after an optional scheme, up to the last `@`).
pub(super) fn strip_userinfo(key: &str) -> std::borrow::Cow<'_, str> {
    let start = key.find("://").map_or(0, |i| i + 3);
    let authority_end = key[start..]
        .find(['/', '?', '#'])
        .map_or(key.len(), |i| start + i);
    match key[start..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &key[..start], &key[start + at + 1..]).into(),
        None => key.into(),
    }
}

/// A file name as shown: escaped, at most 100 characters.
pub(super) fn printable(s: &str) -> String {
    let mut out: String = s.chars().take(100).flat_map(char::escape_default).collect();
    if s.chars().count() > 100 {
        out.push('…');
    }
    out
}

pub(super) fn json_category(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "read error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected value",
        serde_json::error::Category::Eof => "unexpected end",
    }
}

/// Finds the config file at `path`: the file itself, or the first of `.dockerconfigjson`,
/// `.dockercfg`, `config.json` inside a folder.
pub(super) fn find_config_in(path: &Path) -> Result<PathBuf, KeyringError> {
    let meta = std::fs::metadata(path).map_err(|e| KeyringError {
        path: path.to_path_buf(),
        what: format!("cannot read: {e}"),
    })?;
    if !meta.is_dir() {
        return Ok(path.to_path_buf());
    }
    CONFIG_FILE_NAMES
        .iter()
        .map(|n| path.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| KeyringError {
            path: path.to_path_buf(),
            what: format!("folder holds none of {}", CONFIG_FILE_NAMES.join(", ")),
        })
}

/// Why a mounted secret's folder gave no credentials file: empty (an `optional: true` volume of
/// a Secret that does not exist), files of other names (a Secret with `config.json`), or not
/// readable.
pub(super) fn folder_problem(folder: &Path) -> String {
    let entries = match std::fs::read_dir(folder) {
        Ok(e) => e,
        Err(e) => return format!("cannot read the folder: {e}"),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        // Kubernetes' atomic-writer entries (`..data`, `..2024_…`) are not keys of the Secret.
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".."))
        .collect();
    names.sort();
    if names.is_empty() {
        return "empty folder: the Secret does not exist in the namespace (an optional volume mounts it empty) or has no keys".to_string();
    }
    let shown: Vec<String> = names.iter().take(5).map(|n| printable(n)).collect();
    let more = if names.len() > 5 { ", …" } else { "" };
    let advice = if names.iter().any(|n| n == "config.json") {
        "; a pull secret is of type kubernetes.io/dockerconfigjson with the key .dockerconfigjson: recreate it with `kubectl create secret docker-registry` or `--from-file=.dockerconfigjson=config.json`"
    } else {
        ""
    };
    format!(
        "holds {}{more}, not .dockerconfigjson or .dockercfg{advice}",
        shown.join(", ")
    )
}

/// The sub-folders of the secrets folder, by name. A missing folder means no secrets.
pub(super) fn secret_folders(dir: &Path) -> Result<Vec<(String, PathBuf)>, KeyringError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(KeyringError {
                path: dir.to_path_buf(),
                what: format!("cannot read the secrets folder: {e}"),
            });
        }
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        // Kubernetes' atomic-writer folders (`..data`, `..2024_…`) are not secrets.
        .filter(|e| !e.file_name().to_string_lossy().starts_with(".."))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    Ok(out)
}
