//! Reading an image index (or Docker manifest list) for the platform check, entry by entry as
//! it is parsed: only the best entry for the node so far and a few platform names are kept,
//! never the list of entries. A 4 MiB index holds ~85,000 entries; the work is linear in its
//! size, and distinct platforms are counted through a set of hashes.

use crate::platform::{self, MatchMode, Platform};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault};

/// Platform names an index scan keeps for the message and JSON; the rest are counted.
pub const MAX_SHOWN_PLATFORMS: usize = 32;

/// What an index says about the node's platform.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct IndexScan {
    /// Entries with a platform that is not an attestation's (`unknown/unknown`).
    pub usable: usize,
    /// Attestation entries (`unknown/unknown`): no node runs them.
    pub(crate) attestations: usize,
    /// The first entry without a `platform` (`Some(None)`: it has no digest): containerd keeps
    /// such an entry, after those that match, and reads its config to decide.
    pub(crate) no_platform: Option<Option<String>>,
    /// The digest of the entry the runtime would pick (`Some(None)`: it has no digest), or
    /// `None` when no entry fits the node.
    pub(crate) best: Option<Option<String>>,
    /// The first distinct platforms, in index order, at most [`MAX_SHOWN_PLATFORMS`].
    pub shown: Vec<String>,
    /// Distinct platforms beyond `shown`.
    pub more: usize,
}

/// Scans an index body. `None` when it is not an index that can be read: that says nothing
/// against the image.
pub fn scan_index(body: &[u8], want: &Platform, mode: MatchMode) -> Option<IndexScan> {
    let mut state = State {
        want: want.normalize(),
        mode,
        best_rank: None,
        scan: IndexScan::default(),
        distinct: HashSet::new(),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    Top(&mut state).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(state.scan)
}

struct State {
    want: Platform,
    mode: MatchMode,
    best_rank: Option<u64>,
    scan: IndexScan,
    /// Hashes of the distinct platforms seen (8 bytes each, however long the names).
    distinct: HashSet<u64>,
}

impl State {
    fn entry(&mut self, d: Descriptor<'_>) {
        let Some(p) = d.platform else {
            if self.scan.no_platform.is_none() {
                self.scan.no_platform = Some(d.digest.map(Cow::into_owned));
            }
            return;
        };
        // Attestations are `unknown/unknown`: no node runs them. `os.features` is not looked
        // at: containerd 1.6 and 1.7 match os, architecture and variant only (a Windows
        // entry's os is `windows`, which a Linux node does not match anyway).
        if p.os == "unknown" || p.architecture == "unknown" {
            self.scan.attestations += 1;
            return;
        }
        let spec = match p.variant.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => format!("{}/{}/{v}", p.os, p.architecture),
            None => format!("{}/{}", p.os, p.architecture),
        };
        let Ok(have) = Platform::parse(&spec) else {
            return;
        };
        self.scan.usable += 1;
        // `have` is normalised by `parse`, `want` when the scan began.
        if let Some(rank) = platform::preference(&self.want, &have, self.mode) {
            // The first among equals, as containerd's stable sort picks.
            if self.best_rank.is_none_or(|best| rank < best) {
                self.best_rank = Some(rank);
                self.scan.best = Some(d.digest.map(Cow::into_owned));
            }
        }
        let hash = DISTINCT.hash_one((&have.os, &have.architecture, &have.variant));
        if self.distinct.insert(hash) {
            if self.scan.shown.len() < MAX_SHOWN_PLATFORMS {
                self.scan.shown.push(have.to_string());
            } else {
                self.scan.more += 1;
            }
        }
    }
}

/// Hashes platforms for the count of distinct ones (a fixed key: nothing here is secret).
const DISTINCT: BuildHasherDefault<DefaultHasher> = BuildHasherDefault::new();

/// An index entry, its strings borrowed from the body where they hold no escapes.
#[derive(serde::Deserialize)]
struct Descriptor<'a> {
    #[serde(borrow)]
    digest: Option<Cow<'a, str>>,
    #[serde(borrow)]
    platform: Option<DescriptorPlatform<'a>>,
}

#[derive(serde::Deserialize)]
struct DescriptorPlatform<'a> {
    #[serde(borrow, default)]
    os: Cow<'a, str>,
    #[serde(borrow, default)]
    architecture: Cow<'a, str>,
    #[serde(borrow)]
    variant: Option<Cow<'a, str>>,
}

/// The index object: `manifests` is walked, every other member skipped unread.
struct Top<'s>(&'s mut State);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an image index")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "manifests" {
                map.next_value_seed(Entries(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The `manifests` list: each entry is read, judged and dropped.
struct Entries<'s>(&'s mut State);

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of descriptors")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(d) = seq.next_element::<Descriptor<'de>>()? {
            self.0.entry(d);
        }
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Platform {
        Platform::parse(s).unwrap()
    }

    fn entry(platform: &str, digest: &str) -> String {
        let mut parts = platform.split('/');
        let os = parts.next().unwrap();
        let arch = parts.next().unwrap();
        let variant = parts
            .next()
            .map(|v| format!(r#","variant":"{v}""#))
            .unwrap_or_default();
        format!(
            r#"{{"mediaType":"m","digest":"{digest}","size":1,"platform":{{"os":"{os}","architecture":"{arch}"{variant}}}}}"#
        )
    }

    #[test]
    fn picks_what_the_runtime_picks_and_keeps_first_among_equals() {
        let body = format!(
            r#"{{"schemaVersion":2,"manifests":[{},{},{},{}],"annotations":{{"a":"b"}}}}"#,
            entry("linux/arm/v6", "d6"),
            entry("linux/arm/v7", "d7"),
            entry("linux/arm/v7", "d7b"),
            entry("linux/amd64", "da"),
        );
        let scan = scan_index(body.as_bytes(), &p("linux/arm/v7"), MatchMode::Lenient).unwrap();
        assert_eq!(scan.best, Some(Some("d7".to_string())));
        assert_eq!(scan.usable, 4);
        assert_eq!(scan.shown, ["linux/arm/v6", "linux/arm/v7", "linux/amd64"]);
        let scan = scan_index(body.as_bytes(), &p("linux/arm/v5"), MatchMode::Lenient).unwrap();
        assert_eq!(scan.best, None);
    }

    #[test]
    fn os_features_are_ignored_attestations_never_match_and_no_platform_is_kept() {
        // As containerd 1.6 and 1.7: os.features plays no part in matching.
        let body = r#"{"manifests":[
            {"digest":"w","platform":{"os":"linux","architecture":"amd64","os.features":["x"]}},
            {"digest":"u","platform":{"os":"unknown","architecture":"unknown"}},
            {"digest":"n"}]}"#;
        let scan = scan_index(body.as_bytes(), &p("linux/amd64"), MatchMode::Lenient).unwrap();
        assert_eq!(scan.usable, 1);
        assert_eq!(scan.attestations, 1);
        assert_eq!(scan.best, Some(Some("w".to_string())));
        assert_eq!(scan.no_platform, Some(Some("n".to_string())));
        // Only Windows entries (with os.features) and attestations: nothing matches.
        let body = r#"{"manifests":[
            {"digest":"w","platform":{"os":"windows","architecture":"amd64","os.features":["win32k"]}},
            {"digest":"u","platform":{"os":"unknown","architecture":"unknown"}}]}"#;
        let scan = scan_index(body.as_bytes(), &p("linux/amd64"), MatchMode::Lenient).unwrap();
        assert_eq!(scan.best, None);
        assert_eq!(scan.shown, ["windows/amd64"]);
        assert_eq!(scan.no_platform, None);
    }

    #[test]
    fn not_an_index_is_none() {
        for body in ["", "[]", "{", r#"{"manifests":{}}"#, r#"{"manifests":[1]}"#] {
            assert!(
                scan_index(body.as_bytes(), &p("linux/amd64"), MatchMode::Lenient).is_none(),
                "{body}"
            );
        }
        let empty = scan_index(b"{}", &p("linux/amd64"), MatchMode::Lenient).unwrap();
        assert_eq!(empty.usable, 0);
    }

    #[test]
    fn eighty_five_thousand_platforms_are_linear_and_capped() {
        let entries: Vec<String> = (0..85_000)
            .map(|i| entry(&format!("linux/arch{i}"), "d"))
            .collect();
        let body = format!(r#"{{"manifests":[{}]}}"#, entries.join(","));
        assert!(body.len() > 4 * 1024 * 1024, "{}", body.len());
        let started = std::time::Instant::now();
        let scan = scan_index(body.as_bytes(), &p("linux/amd64"), MatchMode::Lenient).unwrap();
        eprintln!("{} bytes in {:?}", body.len(), started.elapsed());
        assert_eq!(scan.best, None);
        assert_eq!(scan.shown.len(), MAX_SHOWN_PLATFORMS);
        assert_eq!(scan.more, 85_000 - MAX_SHOWN_PLATFORMS);
    }
}
