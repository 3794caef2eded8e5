//! Follow-ups to a probe, sent only when they are needed, with the credentials the probe used:
//!
//! - after a `HEAD` that found an index (or with `--platform-check full`, any manifest), the
//!   `GET`s that check the node's platform;
//! - after a 404, `tags/list` to tell a missing tag from a missing repository, and to suggest
//!   close tags (or, where `_catalog` answers, close repositories).
//!
//! Suggestions are best effort: bounded in pages, bytes and time, and no failure here changes a
//! verdict. The platform check is not best effort: an image without a variant for the node will
//! not start, so that is a verdict of its own.
//!
//! [`FollowUps`] sends them, over the wire, within the run's budget of bodies in memory at once
//! ([`Bodies`]), and leaves what a single manifest's config said to [`ImageConfigs`].

use super::http::Wire;
use super::image_config::{self, ImageConfigs};
use super::state::RegistryState;
use super::{
    Fact, MANIFEST_ACCEPT, PlatformCheck, PlatformPolicy, PlatformSeen, Progress, Step, authorized,
    index, read_limited, transport,
};
use crate::platform::{self, Platform};
use crate::reference::{DOCKER_HUB, Reference};
use crate::suggest::suggest;
use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap};
use serde::Deserialize;
use tokio::time::Instant;

/// Index and list media types: a `HEAD` answering one of these found an index.
const INDEX_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
/// The most of a manifest, index or config read.
const MAX_MANIFEST: usize = 4 * 1024 * 1024;
/// Tags asked per page of `tags/list`.
const TAGS_PAGE: usize = 100;
/// Pages of tags read at most, and bytes in all.
const TAGS_MAX_PAGES: usize = 10;
const TAGS_MAX_BYTES: usize = 1024 * 1024;
/// Suggestions given at most.
const MAX_SUGGESTIONS: usize = 3;
/// Tags listed when none is close to the one asked for.
const MAX_SOME_TAGS: usize = 5;
/// Manifest and config `GET`s in flight at once, whatever `--concurrency`.
const BODY_GETS: usize = 2;
/// KiB of manifest and config bodies read and parsed at once: one 4 MiB index and small ones.
const BODY_BUDGET_KIB: u32 = 5 * 1024;

/// The run's bounds on manifest and config bodies, shared by every probe.
pub(super) struct Bodies {
    /// The budget for manifest and config bodies in memory at once, one permit per KiB (an
    /// index may be 4 MiB): peak memory is bounded by it, not by `--concurrency`.
    budget: tokio::sync::Semaphore,
    /// Manifest and config `GET`s in flight at once (see [`BODY_GETS`]).
    gets: tokio::sync::Semaphore,
}

impl Default for Bodies {
    fn default() -> Bodies {
        Bodies {
            budget: tokio::sync::Semaphore::new(BODY_BUDGET_KIB as usize),
            gets: tokio::sync::Semaphore::new(BODY_GETS),
        }
    }
}

/// The follow-ups of a probe, with the parts of the client they need.
pub(super) struct FollowUps<'a> {
    /// Where every request goes out.
    pub(super) wire: &'a Wire,
    /// The run's bounds on bodies.
    pub(super) bodies: &'a Bodies,
    /// Where a single manifest's config is kept for the start check.
    pub(super) configs: &'a ImageConfigs,
    /// The node's platform, and how it is checked.
    pub(super) platform: &'a PlatformPolicy,
}

#[derive(Deserialize)]
struct Manifest {
    config: Option<ConfigDescriptor>,
}

#[derive(Deserialize)]
struct ConfigDescriptor {
    digest: String,
}

#[derive(Deserialize)]
struct ImageConfig {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
    variant: Option<String>,
}

#[derive(Deserialize)]
struct TagList {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Catalog {
    #[serde(default)]
    repositories: Vec<String>,
}

/// What the manifest `HEAD` said, for the facts the platform check returns.
struct Head {
    digest: Option<String>,
    media_type: Option<String>,
}

impl Head {
    /// The image found, with what was learnt of its platform.
    fn found(&self, platform_digest: Option<String>, platform: PlatformSeen) -> Fact {
        Fact::Found {
            digest: self.digest.clone(),
            media_type: self.media_type.clone(),
            platform_digest,
            platform,
            digest_invalid: false,
        }
    }
}

/// The platform to check the image against, or why it is not checked: the user turned the
/// check off, or it would cost a `GET` that `--platform-check auto` does not spend.
fn platform_to_check<'a>(
    policy: &'a PlatformPolicy,
    reference: &Reference,
    is_index: bool,
) -> Result<&'a Platform, PlatformSeen> {
    let Some(want) = &policy.want else {
        return Err(PlatformSeen::NotAsked);
    };
    let wanted = match (policy.check, is_index) {
        (PlatformCheck::Off, _) => false,
        // A manifest GET counts as a pull on Docker Hub: `auto` does not spend one there.
        (PlatformCheck::Auto, true) => reference.registry != DOCKER_HUB,
        (PlatformCheck::Auto, false) => false,
        (PlatformCheck::Full, _) => true,
    };
    if wanted {
        return Ok(want);
    }
    Err(match (policy.check, is_index) {
        (PlatformCheck::Off, _) => PlatformSeen::NotAsked,
        (_, true) => PlatformSeen::Skipped(
            "Docker Hub index; --platform-check full checks it, as one counted pull",
        ),
        (_, false) => PlatformSeen::Skipped("single manifest; --platform-check full checks it"),
    })
}

impl FollowUps<'_> {
    /// After a `HEAD` found the manifest: does it have a variant for the node? Decides what
    /// to read ([`platform_to_check`]), reads the manifest, then matches an index's entries
    /// ([`FollowUps::match_index`]) or a single manifest's config ([`FollowUps::match_config`]).
    pub(super) async fn check_platform(
        &self,
        state: &RegistryState,
        reference: &Reference,
        digest: Option<String>,
        media_type: Option<String>,
        authorization: Option<&str>,
        progress: &Progress,
    ) -> Fact {
        let head = Head { digest, media_type };
        // The HEAD's own type can already say "artifact" (OCI 1.1's draft artifact manifest):
        // no GET is needed to know that no runtime pulls it.
        if let Some(t) = head.media_type.as_deref().and_then(|t| t.split(';').next()) {
            if t.trim() == "application/vnd.oci.artifact.manifest.v1+json" {
                return Fact::NotAnImage {
                    url: "the HEAD's Content-Type".to_string(),
                    what: format!("manifest type {}", t.trim().escape_default()),
                };
            }
        }
        let is_index = head
            .media_type
            .as_deref()
            .and_then(|t| t.split(';').next())
            .is_some_and(|t| INDEX_TYPES.contains(&t.trim()));
        let want = match platform_to_check(self.platform, reference, is_index) {
            Ok(want) => want,
            Err(seen) => return head.found(None, seen),
        };
        // By digest when the HEAD gave one: the same manifest the HEAD saw.
        let manifest_ref = head.digest.as_deref().unwrap_or(reference.manifest_ref());
        let url = format!(
            "{}{}/{}/manifests/{manifest_ref}",
            state.base, state.root, reference.repository
        );
        progress.set(format!("GET {url}"));
        let (body, permit) = match self
            .get_json(&state.http, &url, MANIFEST_ACCEPT, authorization)
            .await
        {
            Ok(b) => b,
            Err(fact) => return fact,
        };
        if is_index {
            return self.match_index(head, want, body, permit).await;
        }
        // An artifact is not an image: the runtime refuses it, whatever the platform.
        if let Some(what) = super::artifact_kind(&body) {
            return Fact::NotAnImage {
                url: format!("GET {url}"),
                what,
            };
        }
        // A single manifest: its platform is in its config blob.
        let Some(config) = serde_json::from_slice::<Manifest>(&body)
            .ok()
            .and_then(|m| m.config)
        else {
            return head.found(None, PlatformSeen::Skipped("the manifest names no config"));
        };
        drop(permit);
        self.match_config(
            state,
            reference,
            head,
            want,
            &config,
            authorization,
            progress,
        )
        .await
    }

    /// An index's entries against the node's platform, as containerd matches them.
    async fn match_index(
        &self,
        head: Head,
        want: &Platform,
        body: Vec<u8>,
        permit: Option<tokio::sync::SemaphorePermit<'_>>,
    ) -> Fact {
        // Parsed on a blocking thread: a 4 MiB index is CPU work that must not hold up the
        // runtime (signals, the deadline, the other images).
        let (node, mode) = (want.clone(), self.platform.mode);
        let scan = tokio::task::spawn_blocking(move || {
            let scan = index::scan_index(&body, &node, mode);
            drop(body);
            scan
        })
        .await;
        drop(permit);
        // An index we cannot read says nothing against the image: never block on it.
        let Ok(Some(scan)) = scan else {
            return head.found(None, PlatformSeen::Skipped("the index could not be read"));
        };
        // As containerd: an entry that matches wins; else an entry without a platform,
        // whose config the runtime reads to decide (pullcheck does not: never a false
        // wrong_platform); else no match, attestations and Windows entries included.
        match (scan.best, scan.no_platform) {
            (Some(platform_digest), _) => head.found(platform_digest, PlatformSeen::Checked),
            (None, Some(entry)) => head.found(
                entry,
                PlatformSeen::Skipped(
                    "an index entry names no platform; the runtime reads its config to decide",
                ),
            ),
            (None, None) => Fact::WrongPlatform {
                digest: head.digest,
                wanted: want.to_string(),
                available: scan.shown,
                more_platforms: scan.more,
            },
        }
    }

    /// A single manifest's config blob against the node's platform; what it says of the
    /// user and command is kept for the start check.
    #[allow(clippy::too_many_arguments)]
    async fn match_config(
        &self,
        state: &RegistryState,
        reference: &Reference,
        head: Head,
        want: &Platform,
        config: &ConfigDescriptor,
        authorization: Option<&str>,
        progress: &Progress,
    ) -> Fact {
        let url = format!(
            "{}{}/{}/blobs/{}",
            state.base, state.root, reference.repository, config.digest
        );
        progress.set(format!("GET {url}"));
        let (body, _permit) = match self.get_json(&state.http, &url, "*/*", authorization).await {
            Ok(b) => b,
            Err(fact) => return fact,
        };
        // The start check needs this same config: keep what it says for the run.
        if let Some(d) = &head.digest {
            self.configs
                .remember_config(d, image_config::parse_config(&body));
        }
        let Ok(config) = serde_json::from_slice::<ImageConfig>(&body) else {
            return head.found(None, PlatformSeen::Skipped("the config could not be read"));
        };
        match platform_of(&config.os, &config.architecture, config.variant.as_deref()) {
            Some(have) if platform::matches(want, &have, self.platform.mode) => {
                head.found(None, PlatformSeen::Checked)
            }
            Some(have) => Fact::WrongPlatform {
                digest: head.digest,
                wanted: want.to_string(),
                available: vec![have.to_string()],
                more_platforms: 0,
            },
            None => head.found(None, PlatformSeen::Skipped("the config names no platform")),
        }
    }

    /// `GET` a manifest or blob: the body, or the fact that stopped it. The body is read under
    /// permits of the client's body budget, one per KiB it announces (the most a body may be
    /// when it does not say), held until the caller drops them: whatever `--concurrency`, the
    /// large bodies in memory at once stay within the budget, while small ones pass freely.
    async fn get_json(
        &self,
        http: &reqwest::Client,
        url: &str,
        accept: &str,
        authorization: Option<&str>,
    ) -> Result<(Vec<u8>, Option<tokio::sync::SemaphorePermit<'_>>), Fact> {
        let req = authorized(http.get(url).header(header::ACCEPT, accept), authorization);
        // Few of these GETs at once: each open answer holds connection buffers until its body
        // is read.
        let sending = self.bodies.gets.acquire().await.ok();
        let resp = self
            .wire
            .send(req, "GET", url)
            .await
            .map_err(|e| transport(Step::Platform, "GET", url, &e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(Fact::Status {
                step: Step::Platform,
                method: "GET",
                url: url.to_string(),
                status: status.as_u16(),
                retry_after: super::retry_after(resp.headers()),
                bearer_error: None,
            });
        }
        // The HTTP layer ends a body at its Content-Length: the announced size bounds it.
        let size = resp
            .content_length()
            .and_then(|n| usize::try_from(n).ok())
            .map_or(MAX_MANIFEST, |n| n.min(MAX_MANIFEST));
        let kib = u32::try_from(size.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, BODY_BUDGET_KIB);
        let permit = self.bodies.budget.acquire_many(kib).await.ok();
        let body = super::read_body(resp, MAX_MANIFEST, size)
            .await
            .map_err(|e| transport(Step::Platform, "GET", url, &e))?;
        drop(sending);
        Ok((body, permit))
    }

    /// After a manifest 404: is the repository there, and what close tags does it have?
    pub(super) async fn explain_missing(
        &self,
        state: &RegistryState,
        reference: &Reference,
        url: String,
        authorization: Option<&str>,
        progress: &Progress,
        suggest_by: Instant,
    ) -> Fact {
        let mut next = Some(format!(
            "{}{}/{}/tags/list?n={TAGS_PAGE}",
            state.base, state.root, reference.repository
        ));
        let mut repository_missing = None;
        let mut tags: Vec<String> = Vec::new();
        let mut bytes = 0usize;
        let mut pages = 0usize;
        while let Some(page_url) = next.take() {
            if pages >= TAGS_MAX_PAGES || bytes >= TAGS_MAX_BYTES {
                break;
            }
            // Only the first page decides the verdict; later pages are for suggestions alone.
            if pages > 0 && (reference.digest.is_some() || Instant::now() >= suggest_by) {
                break;
            }
            pages += 1;
            progress.set(format!("GET {page_url}"));
            let page = tokio::time::timeout_at(
                suggest_by,
                self.get_page(&state.http, &page_url, authorization),
            );
            let Ok(Some((status, headers, body))) = page.await else {
                break;
            };
            bytes += body.len();
            if status == StatusCode::NOT_FOUND {
                let name_unknown = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| {
                        v["errors"]
                            .as_array()
                            .map(|e| e.iter().any(|e| e["code"] == "NAME_UNKNOWN"))
                    })
                    .unwrap_or(false);
                if name_unknown {
                    repository_missing = Some(true);
                }
                break;
            }
            if !status.is_success() {
                break;
            }
            repository_missing = Some(false);
            if let Ok(list) = serde_json::from_slice::<TagList>(&body) {
                tags.extend(list.tags.unwrap_or_default());
            }
            next = next_link(&state.base, &headers);
        }
        let suggestions = match (repository_missing, &reference.tag, &reference.digest) {
            (Some(false), Some(tag), None) => {
                suggest(tag, tags.iter().map(String::as_str), MAX_SUGGESTIONS)
            }
            (Some(true), _, _) => {
                self.close_repositories(state, reference, authorization, progress, suggest_by)
                    .await
            }
            _ => Vec::new(),
        };
        // No tag is close: a few that exist still tell the user what to ask for.
        let some_tags = if suggestions.is_empty()
            && repository_missing == Some(false)
            && reference.tag.is_some()
            && reference.digest.is_none()
        {
            crate::suggest::some_tags(&tags, MAX_SOME_TAGS)
        } else {
            Vec::new()
        };
        Fact::Missing {
            url,
            repository_missing,
            suggestions,
            some_tags,
        }
    }

    /// Repositories close to a missing one, where the registry's `_catalog` answers.
    async fn close_repositories(
        &self,
        state: &RegistryState,
        reference: &Reference,
        authorization: Option<&str>,
        progress: &Progress,
        suggest_by: Instant,
    ) -> Vec<String> {
        let url = format!("{}{}/_catalog?n=1000", state.base, state.root);
        progress.set(format!("GET {url}"));
        let page =
            tokio::time::timeout_at(suggest_by, self.get_page(&state.http, &url, authorization))
                .await;
        let Ok(Some((status, _, body))) = page else {
            return Vec::new();
        };
        if !status.is_success() {
            return Vec::new();
        }
        let Ok(catalog) = serde_json::from_slice::<Catalog>(&body) else {
            return Vec::new();
        };
        suggest(
            &reference.repository,
            catalog.repositories.iter().map(String::as_str),
            MAX_SUGGESTIONS,
        )
    }

    /// One `GET` whose failure only means "no more to learn".
    async fn get_page(
        &self,
        http: &reqwest::Client,
        url: &str,
        authorization: Option<&str>,
    ) -> Option<(StatusCode, HeaderMap, Vec<u8>)> {
        let req = authorized(http.get(url), authorization);
        let resp = self.wire.send(req, "GET", url).await.ok()?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = read_limited(resp, TAGS_MAX_BYTES).await.ok()?;
        Some((status, headers, body))
    }
}

/// The `rel="next"` target of a `Link` header, made absolute against the registry, and only
/// when it stays on the registry (a page elsewhere would get our credentials).
fn next_link(base: &str, headers: &HeaderMap) -> Option<String> {
    let link = headers.get(header::LINK)?.to_str().ok()?;
    let part = link.split(',').find(|p| p.contains("rel=\"next\""))?;
    let target = part
        .split(';')
        .next()?
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>');
    if target.starts_with('/') {
        Some(format!("{base}{target}"))
    } else if target.starts_with(&format!("{base}/")) {
        Some(target.to_string())
    } else {
        None
    }
}

/// The platform of an index entry or image config, when it reads as one.
fn platform_of(os: &str, architecture: &str, variant: Option<&str>) -> Option<Platform> {
    let spec = match variant.filter(|v| !v.is_empty()) {
        Some(v) => format!("{os}/{architecture}/{v}"),
        None => format!("{os}/{architecture}"),
    };
    Platform::parse(&spec).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn next_links() {
        let base = "http://127.0.0.1:5000";
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "relative",
                r#"</v2/a/tags/list?last=v9&n=100>; rel="next""#,
                Some("http://127.0.0.1:5000/v2/a/tags/list?last=v9&n=100"),
            ),
            (
                "absolute on the registry",
                r#"<http://127.0.0.1:5000/v2/a/tags/list?last=x>; rel="next""#,
                Some("http://127.0.0.1:5000/v2/a/tags/list?last=x"),
            ),
            (
                "another host is not followed",
                r#"<http://evil.example/v2/a/tags/list>; rel="next""#,
                None,
            ),
            ("not next", r#"</v2/a/tags/list>; rel="prev""#, None),
        ];
        for (name, link, want) in cases {
            let mut h = HeaderMap::new();
            h.insert(header::LINK, HeaderValue::from_str(link).unwrap());
            assert_eq!(next_link(base, &h).as_deref(), *want, "{name}");
        }
    }
}
