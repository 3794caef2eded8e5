//! Pull policies: when the kubelet pulls an image, and so what pullcheck must check.
//!
//! `Never` images are not pulled and not checked; `Always` images are pulled on every start, so
//! their registry is asked; `IfNotPresent` images are pulled only when the node lacks them, so
//! the node's own list is read first (see [`node`](crate::node)). A policy that is not written
//! is defaulted exactly as the API server does when it stores the pod.

use crate::reference::Reference;
use serde::Serialize;
use std::collections::HashSet;

/// A container's `imagePullPolicy`, spelt as Kubernetes spells it (also in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PullPolicy {
    /// Pulled on every start: the registry decides.
    Always,
    /// Pulled only when the node lacks it: the node's images decide first.
    IfNotPresent,
    /// Never pulled: nothing to check.
    Never,
}

impl PullPolicy {
    /// The policy as written in a pod spec. Kubernetes compares the words exactly (`always` is
    /// refused by the API server), so does this.
    pub(crate) fn parse(written: &str) -> Option<PullPolicy> {
        match written {
            "Always" => Some(PullPolicy::Always),
            "IfNotPresent" => Some(PullPolicy::IfNotPresent),
            "Never" => Some(PullPolicy::Never),
            _ => None,
        }
    }

    /// The policy the API server gives a container that does not write one
    /// (`SetDefaults_Container` in `pkg/apis/core/v1/defaults.go`): `Always` when the tag is
    /// `latest`, else `IfNotPresent`. The tag is read as `pkg/util/parsers.ParseImageName`
    /// reads it: no tag and no digest is `latest`; a digest alone is no tag at all; a tag
    /// beside a digest is kept (`app:latest@sha256:…` is `Always`); a reference that does not
    /// parse has no tag (`IfNotPresent`; admission refuses such a pod anyway).
    pub(crate) fn default_for(image: &str) -> PullPolicy {
        match Reference::parse(image) {
            Ok(r) if r.tag.as_deref() == Some("latest") => PullPolicy::Always,
            _ => PullPolicy::IfNotPresent,
        }
    }

    /// The policy of a container: the one written, else the API server's default. A word the
    /// API server would refuse is checked as `Always` (at the registry, as pullcheck always
    /// did): checking too much is safe, skipping is not.
    pub fn resolve(image: &str, written: Option<&str>) -> PullPolicy {
        match written.map(str::trim).filter(|w| !w.is_empty()) {
            None => PullPolicy::default_for(image),
            Some(w) => PullPolicy::parse(w).unwrap_or(PullPolicy::Always),
        }
    }

    #[cfg(test)]
    /// The word, as Kubernetes writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PullPolicy::Always => "Always",
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Never => "Never",
        }
    }
}

/// What a run checks: every image, and which of them the node may already have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToCheck {
    /// Every image to check, in the order first seen, without exact duplicates (`Never` ones
    /// left out): the `images` argument of [`check`](fn@crate::check).
    pub images: Vec<String>,
    /// Those of `images` that are `IfNotPresent` wherever they occur:
    /// [`Options::if_not_present`](crate::Options::if_not_present).
    pub if_not_present: Vec<String>,
}

/// Sorts images with their policy into what to check. An image that is `Always` in one place
/// and `IfNotPresent` in another (two containers of one pod) is `Always`: the kubelet pulls it
/// for the first whatever the node holds. Images are compared by normalised reference
/// (`nginx` and `docker.io/library/nginx:latest` are one image); an invalid reference stays,
/// so that it gets its `invalid_reference` verdict.
pub fn to_check(images: impl IntoIterator<Item = (String, PullPolicy)>) -> ToCheck {
    let key =
        |image: &str| Reference::parse(image).map_or_else(|_| image.to_string(), |r| r.to_string());
    let mut out = ToCheck::default();
    let mut seen = HashSet::new();
    let mut always = Vec::new();
    let mut maybe_present = Vec::new();
    for (image, policy) in images {
        match policy {
            PullPolicy::Never => continue,
            PullPolicy::Always => always.push(image.clone()),
            PullPolicy::IfNotPresent => maybe_present.push(image.clone()),
        }
        if seen.insert(image.clone()) {
            out.images.push(image);
        }
    }
    // References are normalised only when both policies occur: a run of thousands of `Always`
    // images parses none here.
    if maybe_present.is_empty() {
        return out;
    }
    let always: HashSet<String> = always.iter().map(|i| key(i)).collect();
    let mut listed = HashSet::new();
    out.if_not_present = maybe_present
        .into_iter()
        .filter(|i| !always.contains(&key(i)) && listed.insert(i.clone()))
        .collect();
    out
}

/// Which images of a run are `IfNotPresent`, by normalised reference (or as given, for an
/// invalid one); every other image is `Always`.
pub(crate) struct Policies(HashSet<String>);

impl Policies {
    /// From [`Options::if_not_present`](crate::Options::if_not_present).
    pub(crate) fn new(if_not_present: &[String]) -> Policies {
        let keys = if_not_present.iter().flat_map(|i| {
            let normalised = Reference::parse(i).ok().map(|r| r.to_string());
            [Some(i.clone()), normalised].into_iter().flatten()
        });
        Policies(keys.collect())
    }

    /// Whether no image is `IfNotPresent`.
    pub(crate) fn all_always(&self) -> bool {
        self.0.is_empty()
    }

    /// The policy of an image, by its normalised reference (`reference`, empty when invalid)
    /// or else as given.
    pub(crate) fn of(&self, image: &str, reference: &str) -> PullPolicy {
        let key = if reference.is_empty() {
            image
        } else {
            reference
        };
        if self.0.contains(key) {
            PullPolicy::IfNotPresent
        } else {
            PullPolicy::Always
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PullPolicy::{Always, IfNotPresent, Never};

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// The cases of the API server's defaulting (`SetDefaults_Container` with
    /// `parsers.ParseImageName`), by name.
    #[test]
    fn defaulting_as_the_api_server_does() {
        let cases: &[(&str, String, PullPolicy)] = &[
            ("no tag", "nginx".into(), Always),
            ("explicit latest", "nginx:latest".into(), Always),
            (
                "latest with registry and port",
                "reg:5000/team/app:latest".into(),
                Always,
            ),
            (
                "no tag with registry and port",
                "reg:5000/team/app".into(),
                Always,
            ),
            ("localhost without tag", "localhost/app".into(), Always),
            ("a version tag", "nginx:1.27".into(), IfNotPresent),
            (
                "a tag that merely contains latest",
                "app:latest-1".into(),
                IfNotPresent,
            ),
            ("tags are case-sensitive", "app:Latest".into(), IfNotPresent),
            (
                "digest only: no tag at all",
                format!("nginx@{DIGEST}"),
                IfNotPresent,
            ),
            (
                "version tag and digest",
                format!("nginx:1.27@{DIGEST}"),
                IfNotPresent,
            ),
            (
                "latest tag beside a digest is kept",
                format!("nginx:latest@{DIGEST}"),
                Always,
            ),
            (
                "an upper-case first part is a registry",
                "UPPER/case".into(),
                Always,
            ),
            ("unparseable: no tag", "team/UPPER".into(), IfNotPresent),
            ("unparseable tag: no tag", "app:-x".into(), IfNotPresent),
            ("empty: no tag", String::new(), IfNotPresent),
        ];
        for (name, image, want) in cases {
            assert_eq!(PullPolicy::default_for(image), *want, "{name}: {image}");
            assert_eq!(PullPolicy::resolve(image, None), *want, "{name}: {image}");
        }
    }

    #[test]
    fn a_written_policy_wins_and_an_unknown_one_is_always() {
        let cases: &[(&str, Option<&str>, PullPolicy)] = &[
            ("nginx", Some("IfNotPresent"), IfNotPresent),
            ("nginx:1.27", Some("Always"), Always),
            ("nginx:1.27", Some("Never"), Never),
            ("nginx:1.27", Some(""), IfNotPresent),
            ("nginx:1.27", Some("always"), Always),
            ("nginx:1.27", Some("Sometimes"), Always),
        ];
        for (image, written, want) in cases {
            assert_eq!(
                PullPolicy::resolve(image, *written),
                *want,
                "{image} {written:?}"
            );
        }
        for p in [Always, IfNotPresent, Never] {
            assert_eq!(PullPolicy::parse(p.as_str()), Some(p));
        }
    }

    #[test]
    fn what_to_check() {
        let got = to_check([
            ("app:v1".to_string(), IfNotPresent),
            ("local:1".to_string(), Never),
            ("db:2".to_string(), Always),
            ("docker.io/library/db:2".to_string(), IfNotPresent),
            ("app:v1".to_string(), IfNotPresent),
            ("UPPER".to_string(), IfNotPresent),
            ("cache:3".to_string(), IfNotPresent),
        ]);
        assert_eq!(
            got.images,
            [
                "app:v1",
                "db:2",
                "docker.io/library/db:2",
                "UPPER",
                "cache:3"
            ]
        );
        // db:2 is Always in one container: never looked up on the node.
        assert_eq!(got.if_not_present, ["app:v1", "UPPER", "cache:3"]);
    }
}
