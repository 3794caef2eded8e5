//! The namespace's LimitRanges, read from the API server for each review that may inject, so
//! that the init container's resources pass them ([`crate::inject::LimitRanges`]). Bounded
//! in time and never in the way of admission: on any failure the review goes on with the
//! LimitRanges unknown (the init container then takes the values of one of the pod's own
//! containers, which the namespace admits) and a warning says why.

use crate::inject::{LimitRanges, LimitRangesError};
use k8s_openapi::api::core::v1::LimitRange;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};
use std::time::Duration;

/// How long one read may take: well within the chart's `timeoutSeconds` (2 s), after which
/// the API server admits the object without the webhook's patch.
const READ_TIME: Duration = Duration::from_millis(750);
/// The most LimitRanges read in one namespace (a namespace holds one or two).
const MAX_LIMIT_RANGES: u32 = 50;

/// Reads LimitRanges with the webhook's own service account (`list` on `limitranges`: the
/// chart's ClusterRole).
pub(crate) struct Reader {
    /// `None` outside a cluster (no in-cluster configuration): said once at start, and every
    /// review then goes on with the LimitRanges unknown.
    client: Option<kube::Client>,
}

impl Reader {
    /// A reader with the in-cluster configuration, or none (with the reason, for the log).
    pub(crate) fn in_cluster() -> (Reader, Option<String>) {
        let client = kube::Config::incluster()
            .map_err(|e| e.to_string())
            .and_then(|config| kube::Client::try_from(config).map_err(|e| e.to_string()));
        match client {
            Ok(client) => (
                Reader {
                    client: Some(client),
                },
                None,
            ),
            Err(e) => (Reader { client: None }, Some(e)),
        }
    }

    /// The in-cluster client it reads with, for the webhook's other reads (`None` outside a
    /// cluster).
    pub(crate) fn client(&self) -> Option<kube::Client> {
        self.client.clone()
    }

    /// The LimitRanges of `namespace`; `Err` (a warning for the review) when they cannot be
    /// read within [`READ_TIME`]. `Ok(Unknown)` without a client.
    pub(crate) async fn read(&self, namespace: &str) -> Result<LimitRanges, ReadError> {
        let Some(client) = &self.client else {
            return Ok(LimitRanges::Unknown);
        };
        let api: Api<LimitRange> = Api::namespaced(client.clone(), namespace);
        let params = ListParams::default().limit(MAX_LIMIT_RANGES);
        let list = match tokio::time::timeout(READ_TIME, api.list(&params)).await {
            Err(_) => return Err(ReadError::Timeout(READ_TIME)),
            Ok(Err(e)) if matches!(&e, kube::Error::Api(status) if status.code == 403) => {
                return Err(ReadError::Forbidden(e));
            }
            Ok(Err(e)) => return Err(ReadError::Api(e)),
            Ok(Ok(list)) => list,
        };
        if list
            .metadata
            .continue_
            .as_deref()
            .is_some_and(|c| !c.is_empty())
        {
            return Err(ReadError::TooMany(MAX_LIMIT_RANGES));
        }
        let objects: Vec<Value> = list
            .items
            .iter()
            .map(|lr| json!({"kind": "LimitRange", "spec": lr.spec}))
            .collect();
        Ok(LimitRanges::from_objects(&objects)?)
    }
}

/// Why a namespace's LimitRanges could not be read (the review goes on without them).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// No answer within the bound.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The service account may not list them.
    #[error(
        "forbidden: the webhook's service account needs list on limitranges (the chart's \
         ClusterRole)"
    )]
    Forbidden(#[source] kube::Error),
    /// Any other error of the API server or on the way to it.
    #[error("{0}")]
    Api(#[source] kube::Error),
    /// More than this many: the list was cut.
    #[error("more than {0} LimitRanges")]
    TooMany(u32),
    /// What was read is not LimitRanges.
    #[error(transparent)]
    Parse(#[from] LimitRangesError),
}

/// The few fields of a review that say whether to read LimitRanges, read without the object.
#[derive(serde::Deserialize)]
struct Head {
    request: Option<HeadRequest>,
}

#[derive(serde::Deserialize)]
struct HeadRequest {
    operation: Option<String>,
    namespace: Option<String>,
}

/// The namespace of a review that may inject (a CREATE); `None` for any other.
pub(crate) fn namespace_of(body: &[u8]) -> Option<String> {
    let head: Head = serde_json::from_slice(body).ok()?;
    let request = head.request?;
    if request.operation.as_deref() != Some("CREATE") {
        return None;
    }
    request.namespace.filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_create_in_a_namespace_reads_limit_ranges() {
        let review = |op: &str, ns: &str| {
            serde_json::to_vec(&json!({"request": {"uid": "u", "operation": op,
                "namespace": ns, "object": {"metadata": {}}}}))
            .unwrap()
        };
        assert_eq!(
            namespace_of(&review("CREATE", "team")).as_deref(),
            Some("team")
        );
        assert_eq!(namespace_of(&review("UPDATE", "team")), None);
        assert_eq!(namespace_of(&review("CREATE", "")), None);
        assert_eq!(namespace_of(b"not json"), None);
    }
}
