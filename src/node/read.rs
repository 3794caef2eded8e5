//! A Node object read in one pass: `kind`, `status.images[].names` and
//! `status.nodeInfo.kubeletVersion`, keeping only the names a run can use ([`Wanted`]), counting
//! every image, and noting where the kubelet's caps (images per node, names per image) leave
//! the list short. The kubelet's version says what "the node holds it" proves
//! ([`crate::proof::node_reverifies`]).

use super::{MAX_NAMES_PER_IMAGE, NodeError};
use crate::reference::Reference;
use std::collections::HashSet;

/// The most of `kubeletVersion` kept, in characters: a real one (`v1.35.0-gke.1234567`) is
/// about 20; the major and minor that decide come first.
const MAX_KUBELET_VERSION: usize = 64;

/// The images a node holds, as its Node object lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeImages {
    /// The node's name.
    pub(crate) node: String,
    /// Every listed name, normalised (`docker.io/library/nginx:1.27`, `…@sha256:…`).
    pub(super) names: HashSet<String>,
    /// How many images the node lists.
    pub listed: usize,
    /// The node lists as many images as the kubelet reports at most: it may hold more.
    pub(crate) truncated: bool,
    /// How many images are listed with [`MAX_NAMES_PER_IMAGE`] names (or more): each may have
    /// names the list leaves out, so a name not found proves nothing.
    pub(crate) names_capped: usize,
    /// The cap the list was read against, for messages.
    pub(super) max_images: Option<usize>,
    /// `status.nodeInfo.kubeletVersion` (`v1.35.0`), cut at [`MAX_KUBELET_VERSION`]
    /// characters; `None` when the Node does not say.
    pub(crate) kubelet_version: Option<String>,
}

/// The names a run can use of a Node's list: the normalised forms of its images (and, for a
/// digest, `registry/repository@digest`, as [`NodeImages::has`] asks), and the last component
/// of each repository (`nginx` for `docker.io/library/nginx:1.27`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    full: HashSet<String>,
    last: HashSet<String>,
}

impl Wanted {
    /// What `images` can match.
    pub fn of<'a>(images: impl IntoIterator<Item = &'a Reference>) -> Wanted {
        let mut wanted = Wanted::default();
        for r in images {
            wanted.full.insert(r.to_string());
            if let Some(digest) = &r.digest {
                wanted
                    .full
                    .insert(format!("{}/{}@{digest}", r.registry, r.repository));
            }
            let last = r.repository.rsplit('/').next().unwrap_or(&r.repository);
            wanted.last.insert(last.to_string());
        }
        wanted
    }
}

/// Which of a Node's image names are kept: those a run can use ([`Wanted`]), or all of them
/// (`None`). A name is parsed only when its last component is one of the run's, so a Node
/// listing a million names costs a scan of each, not a parse and an allocation, and only the
/// names that are one of the run's images are kept.
struct Keep<'a>(Option<&'a Wanted>);

impl Keep<'_> {
    /// The normalised name to keep, if any.
    fn keep(&self, name: &str) -> Option<String> {
        let Some(wanted) = self.0 else {
            return Reference::parse(name).ok().map(|r| r.to_string());
        };
        if wanted.full.contains(name) {
            return Some(name.to_string());
        }
        let bare = name.split('@').next().unwrap_or(name);
        let last = bare.rsplit('/').next().unwrap_or(bare);
        if !wanted.last.contains(last.split(':').next().unwrap_or(last)) {
            return None;
        }
        let Ok(r) = Reference::parse(name) else {
            return None;
        };
        let normal = r.to_string();
        let digest_form = r
            .digest
            .as_ref()
            .map(|d| format!("{}/{}@{d}", r.registry, r.repository));
        if wanted.full.contains(&normal) {
            Some(normal)
        } else {
            digest_form.filter(|d| wanted.full.contains(d))
        }
    }
}

/// What the Node's answer gave: the kind, how many images it lists, the names kept, how
/// many images are listed with as many names as the kubelet shows, and the kubelet's version.
#[derive(Default)]
struct Read {
    kind: Option<String>,
    listed: usize,
    names: HashSet<String>,
    names_capped: usize,
    kubelet_version: Option<String>,
}

/// A Node object read in one pass: `kind`, `status.images[].names` and
/// `status.nodeInfo.kubeletVersion`; serde skips the rest without keeping it, and each name is
/// looked at in place ([`Keep`]).
struct NodeSeed<'a>(&'a Keep<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Read;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Read, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for NodeSeed<'_> {
    type Value = Read;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Node object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
        let mut read = Read::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "kind" => read.kind = map.next_value::<Option<String>>()?,
                "status" => map.next_value_seed(Field {
                    keep: self.0,
                    read: &mut read,
                    level: Level::Status,
                })?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(read)
    }
}

/// Where [`Field`] is in the Node.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `status`: a map (or null).
    Status,
    /// `status.nodeInfo`: a map (or null).
    NodeInfo,
    /// `status.nodeInfo.kubeletVersion`: a string (or null).
    KubeletVersion,
    /// `status.images`: a list (or null).
    Images,
    /// One entry of `images`: a map.
    Image,
    /// Its `names`: a list of strings (or null).
    Names,
    /// One name.
    Name,
}

/// One field of `status` and below, read into `read`.
struct Field<'a, 'b> {
    keep: &'a Keep<'a>,
    read: &'b mut Read,
    level: Level,
}

impl<'de> serde::de::DeserializeSeed<'de> for Field<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.level {
            Level::Status
            | Level::NodeInfo
            | Level::KubeletVersion
            | Level::Images
            | Level::Names => d.deserialize_option(self),
            Level::Image => d.deserialize_map(self),
            Level::Name => d.deserialize_str(self),
        }
    }
}

impl<'de> serde::de::Visitor<'de> for Field<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.level {
            Level::Status | Level::NodeInfo | Level::Image => "a map",
            Level::Images | Level::Names => "a sequence",
            Level::Name | Level::KubeletVersion => "a string",
        })
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.level {
            Level::Status | Level::NodeInfo => d.deserialize_map(self),
            Level::KubeletVersion => d.deserialize_str(self),
            _ => d.deserialize_seq(self),
        }
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let next = match (self.level, key.as_ref()) {
                (Level::Status, "images") => Some(Level::Images),
                (Level::Status, "nodeInfo") => Some(Level::NodeInfo),
                (Level::NodeInfo, "kubeletVersion") => Some(Level::KubeletVersion),
                (Level::Image, "names") => Some(Level::Names),
                _ => None,
            };
            match next {
                Some(level) => map.next_value_seed(Field {
                    keep: self.keep,
                    read: &mut *self.read,
                    level,
                })?,
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let next = match self.level {
            Level::Images => Level::Image,
            _ => Level::Name,
        };
        let mut count = 0usize;
        loop {
            let field = Field {
                keep: self.keep,
                read: &mut *self.read,
                level: next,
            };
            if seq.next_element_seed(field)?.is_none() {
                break;
            }
            count += 1;
            if next == Level::Image {
                self.read.listed += 1;
            }
        }
        if next == Level::Name && count >= MAX_NAMES_PER_IMAGE {
            self.read.names_capped += 1;
        }
        Ok(())
    }
    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        if self.level == Level::KubeletVersion {
            // Looked at in place, and only its start kept: a Node may hold any string there.
            self.read.kubelet_version = Some(s.chars().take(MAX_KUBELET_VERSION).collect());
            return Ok(());
        }
        // Names that do not parse as references (none should) are skipped.
        if let Some(kept) = self.keep.keep(s) {
            self.read.names.insert(kept);
        }
        Ok(())
    }
}

impl NodeImages {
    #[cfg(test)]
    /// Reads a Node object (JSON), keeping every name. Names that do not parse as references
    /// (none should) are skipped.
    pub(crate) fn from_json(
        node: &str,
        body: &[u8],
        max_images: Option<usize>,
    ) -> Result<NodeImages, NodeError> {
        NodeImages::read(node, body, max_images, None)
    }

    /// Reads a Node object (JSON) in one pass, keeping only the names of the images asked
    /// about (`wanted`: their repositories' last components, see [`NodeOptions::wanted`](super::NodeOptions::wanted));
    /// `None` keeps every name.
    pub fn read(
        node: &str,
        body: &[u8],
        max_images: Option<usize>,
        wanted: Option<&Wanted>,
    ) -> Result<NodeImages, NodeError> {
        use serde::de::DeserializeSeed;
        let keep = Keep(wanted);
        let mut de = serde_json::Deserializer::from_slice(body);
        // serde's message may quote the answer (escaped), which may quote the token the
        // request carried: keep it short, and scrubbed.
        let not_a_node = |e: serde_json::Error| {
            let cut: String = e.to_string().chars().take(160).collect();
            NodeError::NotANode(crate::redact::foreign(&cut))
        };
        let parsed = NodeSeed(&keep).deserialize(&mut de).map_err(not_a_node)?;
        de.end().map_err(not_a_node)?;
        if let Some(kind) = parsed.kind.as_deref().filter(|k| *k != "Node") {
            return Err(NodeError::NotANode(crate::redact::foreign(&format!(
                "kind is {:?}",
                kind.chars().take(40).collect::<String>()
            ))));
        }
        let listed = parsed.listed;
        Ok(NodeImages {
            node: node.to_string(),
            names: parsed.names,
            listed,
            truncated: max_images.is_some_and(|max| listed >= max),
            names_capped: parsed.names_capped,
            max_images,
            kubelet_version: parsed.kubelet_version,
        })
    }

    /// Whether a name the list lacks is not on the node: every image is listed (fewer than
    /// the kubelet's cap), with every name (none at the kubelet's cap of names).
    pub(crate) fn complete(&self) -> bool {
        !self.truncated && self.names_capped == 0
    }

    /// Why the list cannot say that an image is not on the node, for a message; `None` when
    /// it is complete.
    pub(super) fn why_incomplete(&self) -> Option<String> {
        let cap = self.max_images.unwrap_or(self.listed);
        let images = self.truncated.then(|| {
            format!(
                "node {} lists only its {cap} largest images (--node-status-max-images {cap}), so it may hold this one",
                self.node
            )
        });
        let names = (self.names_capped > 0).then(|| {
            let (n, are) = match self.names_capped {
                1 => ("one".to_string(), "is"),
                n => (n.to_string(), "are"),
            };
            format!(
                "node {} lists at most {MAX_NAMES_PER_IMAGE} names of each image (the kubelet's limit) and {n} of its images {are} listed with {MAX_NAMES_PER_IMAGE}, so it may hold this one under a name it does not list",
                self.node
            )
        });
        match (images, names) {
            (Some(i), Some(n)) => Some(format!("{i}; {n}")),
            (i, n) => i.or(n),
        }
    }

    /// Whether the node lists this image: its normalised reference is among the names, or,
    /// for a reference with a digest, the same repository at that digest (the runtime
    /// resolves `app:v1@sha256:…` by the digest alone).
    pub fn has(&self, reference: &Reference) -> bool {
        self.names.contains(&reference.to_string())
            || reference.digest.as_ref().is_some_and(|digest| {
                self.names.contains(&format!(
                    "{}/{}@{digest}",
                    reference.registry, reference.repository
                ))
            })
    }
}
