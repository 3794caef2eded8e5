//! A plugin's `CredentialProviderResponse`, read without building a tree of it: its kind and
//! version first, then only the `auth` entries that serve an image of the run. Never the
//! output itself in a message.

use super::Targets;
use super::config::{Pattern, REQUEST_VERSIONS};
use crate::reference::Reference;
use serde::Deserialize;

/// A response's `kind` and `apiVersion`, whatever their types (a value that is not a string is
/// no match), read first: the fields' types are judged only in a response.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Head {
    #[serde(default)]
    kind: Loose,
    #[serde(default)]
    api_version: Loose,
}

/// A string, or anything else (skipped, kept as `None`).
#[derive(Default)]
pub(super) struct Loose(Option<String>);

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
pub(super) struct Response {
    pub(super) cache_key_type: String,
    #[serde(default)]
    pub(super) cache_duration: Option<String>,
    #[serde(default)]
    pub(super) auth: Auth,
}

/// The `auth` entries kept: those whose key parses and serves an image of the run
/// ([`Targets`]), decided as each is read, so that an answer of 100,000 entries never holds
/// more than the few that can be used.
#[derive(Default)]
pub(super) struct Auth(pub(super) Vec<(Pattern, String, AuthConfig)>);

std::thread_local! {
    /// The targets the `auth` entries being read are kept for (set around one read, on the
    /// thread doing it: serde's derive gives a field's `Deserialize` no seed).
    pub(super) static KEEP_FOR: std::cell::RefCell<Option<std::sync::Arc<Targets>>> =
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
pub(super) struct AuthConfig {
    #[serde(default)]
    pub(super) username: String,
    #[serde(default)]
    pub(super) password: String,
}

/// Why a plugin's output is not an answer; never the output itself, nor serde's message,
/// which can quote it.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    /// Not JSON, or not the response's shape: where.
    #[error(
        "its output is not a CredentialProviderResponse (invalid at line {line} column {column})"
    )]
    NotJson {
        /// The line of the error.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// Another kind or apiVersion.
    #[error("its output is not a CredentialProviderResponse (kind or apiVersion)")]
    NotResponse,
    /// A field of the wrong type.
    #[error("its CredentialProviderResponse has fields of the wrong type")]
    WrongTypes,
    /// No `Image`, `Registry` or `Global` cacheKeyType.
    #[error("its response has no valid cacheKeyType")]
    NoCacheKeyType,
}

/// Reads a plugin's stdout as a `CredentialProviderResponse`: its cache key type and the
/// response, with only the `auth` entries that serve one of `targets` (all with `None`).
/// Never the output itself in a message, nor serde's, which can quote it.
pub(super) fn parse_response(
    out: &[u8],
    targets: Option<std::sync::Arc<Targets>>,
) -> Result<(&'static str, Response), ResponseError> {
    let invalid = |e: serde_json::Error| ResponseError::NotJson {
        line: e.line(),
        column: e.column(),
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
        return Err(ResponseError::NotResponse);
    }
    KEEP_FOR.with(|k| *k.borrow_mut() = targets);
    let response = serde_json::from_slice::<Response>(out);
    KEEP_FOR.with(|k| *k.borrow_mut() = None);
    let response: Response = response.map_err(|_| ResponseError::WrongTypes)?;
    let key_type = match response.cache_key_type.as_str() {
        "Image" => "Image",
        "Registry" => "Registry",
        "Global" => "Global",
        _ => return Err(ResponseError::NoCacheKeyType),
    };
    Ok((key_type, response))
}

/// A plugin's answer read as a run reads it, for the fuzz target: the cache key type and how
/// many `auth` entries serve one of `images`, or why the answer is refused.
pub fn read_response_for(
    out: &[u8],
    images: &[Reference],
) -> Result<(&'static str, usize), ResponseError> {
    let targets = std::sync::Arc::new(Targets::of(images));
    let (key_type, response) = parse_response(out, Some(targets))?;
    Ok((key_type, response.auth.0.len()))
}
