//! The kubelet's matching of a key to an image: a key's host (with globs), port and path
//! prefix, the packed entries that hold the keys and their credentials, and the index that
//! chooses which keys a lookup tries.

use super::{Credential, DEFAULT_REGISTRY_KEY, Secret};
use std::fmt;

/// The keys of a keyring indexed once, so that a lookup costs the keys that may match its
/// host, not all keys: a 1 MiB pull secret holds ~28,000 entries, and a run up to 10,000
/// images. The matching itself is [`KeyPattern::matches`], unchanged: the index only chooses
/// which keys are tried, and keeps the kubelet's order (reverse lexical by key).
#[derive(Debug, Clone, Default)]
pub(super) struct KeyIndex {
    /// The entries in lookup order: by key, reverse lexical; in source order within a key.
    pub(super) order: Vec<u32>,
    /// Where each distinct key's entries start in `order`, then `order.len()`.
    pub(super) starts: Vec<u32>,
    /// Keys whose host holds no glob, as (hash of host and port, key number), sorted.
    pub(super) literal: Vec<(u64, u32)>,
    /// Keys with a glob in their host, as (hash of label count and port, key number), sorted.
    pub(super) globbed: Vec<(u64, u32)>,
    /// The key number of `index.docker.io`, Docker Hub's key of last resort.
    pub(super) hub: Option<u32>,
}

/// Hashes hosts for the index (a fixed key: nothing here is secret, and every candidate is
/// matched in full).
pub(super) const INDEX_HASH: std::hash::BuildHasherDefault<
    std::collections::hash_map::DefaultHasher,
> = std::hash::BuildHasherDefault::new();

impl KeyIndex {
    pub(super) fn build(entries: &[Entry]) -> KeyIndex {
        use std::hash::BuildHasher;
        let mut order: Vec<u32> = (0..entries.len())
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect();
        // Stable: entries of one key stay in source order.
        order.sort_by(|a, b| {
            entries[*b as usize]
                .key_bytes()
                .cmp(entries[*a as usize].key_bytes())
        });
        let mut index = KeyIndex::default();
        for (position, i) in order.iter().enumerate() {
            let new_key = match index.starts.last() {
                Some(start) => {
                    !entries[order[*start as usize] as usize].same_key(&entries[*i as usize])
                }
                None => true,
            };
            if new_key {
                index
                    .starts
                    .push(u32::try_from(position).unwrap_or(u32::MAX));
            }
        }
        for (number, start) in index.starts.iter().enumerate() {
            let number = u32::try_from(number).unwrap_or(u32::MAX);
            let entry = &entries[order[*start as usize] as usize];
            let host = entry.host();
            if host.contains(['*', '?', '[', '\\']) {
                let labels = host.split('.').count();
                let hash = INDEX_HASH.hash_one((labels, entry.port()));
                index.globbed.push((hash, number));
            } else {
                index
                    .literal
                    .push((INDEX_HASH.hash_one((host, entry.port())), number));
            }
            if host == DEFAULT_REGISTRY_KEY && entry.port().is_empty() && entry.path().is_empty() {
                index.hub = Some(number);
            }
        }
        index
            .starts
            .push(u32::try_from(order.len()).unwrap_or(u32::MAX));
        index.order = order;
        index.literal.sort_unstable();
        index.globbed.sort_unstable();
        index
    }

    /// The key numbers filed under `hash`.
    pub(super) fn filed(list: &[(u64, u32)], hash: u64) -> impl Iterator<Item = u32> + '_ {
        let first = list.partition_point(|(h, _)| *h < hash);
        list[first..]
            .iter()
            .take_while(move |(h, _)| *h == hash)
            .map(|(_, n)| *n)
    }

    /// The entries of key number `number`, in source order.
    pub(super) fn entries_of(&self, number: u32) -> &[u32] {
        let n = number as usize;
        match (self.starts.get(n), self.starts.get(n + 1)) {
            (Some(a), Some(b)) => self.order.get(*a as usize..*b as usize).unwrap_or_default(),
            _ => &[],
        }
    }
}

/// Whether an image's registry is Docker Hub, for the `index.docker.io` fallback.
pub(super) fn is_default_registry_match(registry: &str) -> bool {
    matches!(
        registry,
        "docker.io" | "index.docker.io" | "registry-1.docker.io"
    )
}

/// A key of a docker config, parsed the kubelet's way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeyPattern {
    /// host labels (glob patterns)
    pub(super) labels: Vec<String>,
    pub(super) port: String,
    /// path, starting with `/` or empty
    pub(super) path: String,
}

impl KeyPattern {
    /// Parses a key as the kubelet does with Go's `url.Parse("https://" + key)`: user info, a
    /// query and a fragment fall away; a key with spaces or control characters in its host does
    /// not parse (`None`).
    pub(super) fn parse(key: &str) -> Option<KeyPattern> {
        let rest = key
            .strip_prefix("https://")
            .or_else(|| key.strip_prefix("http://"))
            .unwrap_or(key);
        let rest = rest.split(['#', '?']).next().unwrap_or("");
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let hostport = match authority.rsplit_once('@') {
            Some((_, host)) => host,
            None => authority,
        };
        if hostport.is_empty()
            || hostport.contains(|c: char| c.is_whitespace() || c.is_control() || c == '%')
        {
            return None;
        }
        let mut path = path;
        if path.starts_with("/v2/") || path.starts_with("/v1/") {
            path = &path[3..];
        }
        if path == "/" {
            path = "";
        }
        let (host, port) = split_host_port(hostport);
        Some(KeyPattern {
            labels: host.split('.').map(str::to_string).collect(),
            port: port.to_string(),
            path: path.to_string(),
        })
    }

    pub(super) fn key(&self) -> String {
        let mut k = self.labels.join(".");
        if !self.port.is_empty() {
            k.push(':');
            k.push_str(&self.port);
        }
        k.push_str(&self.path);
        k
    }

    /// Whether this key matches `target` (`host[:port]/repository`).
    pub(super) fn matches(&self, target: &str) -> bool {
        key_matches(&self.labels.join("."), &self.port, &self.path, target)
    }
}

/// The kubelet's match of a key (its host's labels as globs, port, path prefix) against
/// `target` (`host[:port]/repository`).
pub(super) fn key_matches(key_host: &str, key_port: &str, key_path: &str, target: &str) -> bool {
    let (hostport, path) = match target.find('/') {
        Some(i) => (&target[..i], &target[i..]),
        None => (target, ""),
    };
    let (host, port) = split_host_port(hostport);
    // The cheap comparisons first: a lookup may try a thousand keys of one host.
    if port != key_port || !path.starts_with(key_path) {
        return false;
    }
    if host.split('.').count() != key_host.split('.').count() {
        return false;
    }
    key_host
        .split('.')
        .zip(host.split('.'))
        .all(|(pattern, label)| glob_match(pattern.as_bytes(), label.as_bytes()).unwrap_or(false))
}

/// Splits `host:port` like Go's `net.SplitHostPort`, falling back to no port.
pub(super) fn split_host_port(hostport: &str) -> (&str, &str) {
    if let Some(rest) = hostport.strip_prefix('[') {
        if let Some((host, after)) = rest.split_once(']') {
            return (host, after.strip_prefix(':').unwrap_or(""));
        }
        return (hostport, "");
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, port),
        _ => (hostport, ""),
    }
}

/// Go's `filepath.Match` for one host label (no separators inside a label): `*`, `?`, `[...]`
/// with ranges and `^` negation, `\` escapes. `None` for a malformed pattern, which the kubelet
/// treats as no match.
pub(super) fn glob_match(pattern: &[u8], name: &[u8]) -> Option<bool> {
    let (mut p, mut n) = (0usize, 0usize);
    // Backtracking point for the last `*`: (pattern index after it, name index it consumed to).
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p + 1, n));
                    p += 1;
                    continue;
                }
                b'?' if n < name.len() => {
                    p += 1;
                    n += 1;
                    continue;
                }
                b'[' if n < name.len() => {
                    let (matched, next) = class_match(pattern, p, name[n])?;
                    if matched {
                        p = next;
                        n += 1;
                        continue;
                    }
                }
                b'\\' => {
                    let c = *pattern.get(p + 1)?;
                    if n < name.len() && name[n] == c {
                        p += 2;
                        n += 1;
                        continue;
                    }
                }
                c if c != b'?' && c != b'[' && n < name.len() && name[n] == c => {
                    p += 1;
                    n += 1;
                    continue;
                }
                _ => {}
            }
        } else if n == name.len() {
            return Some(true);
        }
        // Mismatch: let the last `*` eat one more byte, or fail.
        match star {
            Some((sp, sn)) if sn < name.len() => {
                star = Some((sp, sn + 1));
                p = sp;
                n = sn + 1;
            }
            _ => {
                // Go reports a malformed pattern even on mismatch; check the rest is well formed.
                validate_pattern(&pattern[p.min(pattern.len())..])?;
                return Some(false);
            }
        }
    }
}

/// Matches a `[...]` class at `pattern[start]` against `c`; returns (matched, index after `]`).
pub(super) fn class_match(pattern: &[u8], start: usize, c: u8) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let b = *pattern.get(i)?;
        if b == b']' && !first {
            i += 1;
            break;
        }
        first = false;
        let lo = if b == b'\\' {
            i += 1;
            *pattern.get(i)?
        } else {
            b
        };
        i += 1;
        let mut hi = lo;
        if pattern.get(i) == Some(&b'-') && pattern.get(i + 1).is_some_and(|b| *b != b']') {
            i += 1;
            hi = if pattern[i] == b'\\' {
                i += 1;
                *pattern.get(i)?
            } else {
                pattern[i]
            };
            i += 1;
        }
        if lo <= c && c <= hi {
            matched = true;
        }
    }
    Some((matched != negate, i))
}

pub(super) fn validate_pattern(pattern: &[u8]) -> Option<()> {
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'\\' => {
                pattern.get(i + 1)?;
                i += 2;
            }
            b'[' => {
                let (_, next) = class_match(pattern, i, 0)?;
                i = next;
            }
            _ => i += 1,
        }
    }
    Some(())
}

/// One credential, packed into one allocation: a 4 MiB docker config holds ~110,000 of them,
/// and each would otherwise be a dozen strings. `Debug` shows the key only.
#[derive(Clone)]
pub(super) struct Entry {
    /// The key's host (its labels joined), port and path, where it is shown from (`key …` or
    /// `helper for …`), the user name and the password, one after another.
    data: Box<str>,
    /// Where each of those six parts ends in `data`.
    ends: [u32; 6],
    /// The source's label: an index into the keyring's labels.
    pub(super) label: u32,
}

impl Entry {
    pub(super) fn new(
        pattern: &KeyPattern,
        shown: &str,
        username: &str,
        password: &str,
        label: u32,
    ) -> Entry {
        let host = pattern.labels.join(".");
        let parts = [
            host.as_str(),
            &pattern.port,
            &pattern.path,
            shown,
            username,
            password,
        ];
        let mut data = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        let mut ends = [0u32; 6];
        for (end, part) in ends.iter_mut().zip(parts) {
            data.push_str(part);
            // Every part comes from a file of at most 4 MiB.
            *end = u32::try_from(data.len()).unwrap_or(u32::MAX);
        }
        Entry {
            data: data.into_boxed_str(),
            ends,
            label,
        }
    }

    fn part(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.data
            .get(start..self.ends[i] as usize)
            .unwrap_or_default()
    }

    pub(super) fn host(&self) -> &str {
        self.part(0)
    }

    pub(super) fn port(&self) -> &str {
        self.part(1)
    }

    pub(super) fn path(&self) -> &str {
        self.part(2)
    }

    /// The normalised key's text (`host[:port]path`), byte by byte, for ordering.
    pub(super) fn key_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        let port = self.port();
        let colon: &[u8] = if port.is_empty() { b"" } else { b":" };
        self.host()
            .bytes()
            .chain(colon.iter().copied())
            .chain(port.bytes())
            .chain(self.path().bytes())
    }

    pub(super) fn same_key(&self, other: &Entry) -> bool {
        self.host() == other.host() && self.port() == other.port() && self.path() == other.path()
    }

    /// The normalised key's text (`host[:port]path`), as [`KeyPattern::key`] gives it.
    pub(super) fn key_text(&self) -> String {
        String::from_utf8_lossy(&self.key_bytes().collect::<Vec<u8>>()).into_owned()
    }

    /// [`KeyPattern::matches`] on the packed parts.
    pub(super) fn matches(&self, target: &str) -> bool {
        key_matches(self.host(), self.port(), self.path(), target)
    }

    pub(super) fn credential(&self, labels: &[String]) -> Credential {
        let label = labels.get(self.label as usize).map_or("", String::as_str);
        Credential {
            username: self.part(4).to_string(),
            password: Secret::new(self.part(5)),
            source: format!("{label}, {}", self.part(3)),
        }
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("key", &self.part(3))
            .field("password", &"<redacted>")
            .finish()
    }
}
