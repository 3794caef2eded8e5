//! The namespace's LimitRanges for each review that may inject, so that the init container's
//! resources pass them ([`crate::inject::LimitRanges`]). They come from the cluster's
//! LimitRanges kept in memory by a watch ([`store`]) once that store is whole, with no call to
//! the API server on the review's way; before that, and while the watch fails, from a list of
//! the namespace's, made for the review. That list is bounded in time and never in the way of
//! admission: on any failure the review goes on with the LimitRanges unknown (the init
//! container then takes the values of one of the pod's own containers, which the namespace
//! admits) and a warning says why.

mod store;

use super::review::Review;
use crate::cluster::door::Door;
use crate::inject::{LimitRanges, LimitRangesError};
use k8s_openapi::api::core::v1::LimitRange;
use kube::api::ListParams;
use serde_json::{Value, json};
use std::time::Duration;

/// How long one list may take: well within the chart's `timeoutSeconds` (2 s), after which
/// the API server admits the object without the webhook's patch.
const READ_TIME: Duration = Duration::from_millis(750);
/// The most LimitRanges read in one namespace (a namespace holds one or two), listed or found
/// in the store alike.
const MAX_LIMIT_RANGES: u32 = 50;

/// Reads LimitRanges with the webhook's own service account (`list` and `watch` on
/// `limitranges`: the chart's ClusterRole).
pub(crate) struct Reader {
    /// The webhook's door to the API server; `None` outside a cluster (no in-cluster
    /// configuration): said once at start, and every review then goes on with the LimitRanges
    /// unknown.
    door: Option<Door>,
    /// The cluster's LimitRanges kept by a watch, once [`Reader::keep`] started it.
    store: Option<store::Store>,
}

/// Where a review's LimitRanges were read: the `source` label of the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The store the watch keeps: no call to the API server.
    Store,
    /// A list of the namespace's, made for the review (the store not whole).
    Api,
}

impl Source {
    /// Every source, in the order of the metrics.
    pub(crate) const ALL: [Source; 2] = [Source::Store, Source::Api];

    /// The `source` label of the metrics.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Store => "store",
            Source::Api => "api",
        }
    }
}

impl Reader {
    /// A reader through `door` (none outside a cluster).
    pub(crate) fn new(door: Option<Door>) -> Reader {
        Reader { door, store: None }
    }

    /// Starts keeping the cluster's LimitRanges in memory, on a task of the current runtime:
    /// reviews read them there from its first list on. Nothing outside a cluster.
    pub(crate) fn keep(&mut self) {
        if let Some(door) = &self.door {
            self.store = Some(store::Store::start(door));
        }
    }

    /// The LimitRanges of `namespace`, and where they were read (`None`: nowhere). From the
    /// store when it is whole; otherwise listed, and `Err` (a warning for the review) when
    /// they cannot be within [`READ_TIME`]. `Ok(Unknown)` without a client.
    pub(crate) async fn read(
        &self,
        namespace: &str,
    ) -> (Result<LimitRanges, ReadError>, Option<Source>) {
        let Some(door) = &self.door else {
            return (Ok(LimitRanges::Unknown), None);
        };
        let Some(store) = &self.store else {
            return (list(door, namespace).await, Some(Source::Api));
        };
        if let Some(kept) = store.lookup(namespace) {
            return (kept, Some(Source::Store));
        }
        let listed = list(door, namespace).await;
        if matches!(&listed, Ok(LimitRanges::Known(items)) if items.is_empty()) {
            store.listed_none(namespace);
        }
        (listed, Some(Source::Api))
    }
}

/// The LimitRanges of `namespace`, listed from the API server within [`READ_TIME`].
async fn list(door: &Door, namespace: &str) -> Result<LimitRanges, ReadError> {
    let params = ListParams::default().limit(MAX_LIMIT_RANGES);
    let list = match tokio::time::timeout(READ_TIME, door.limit_ranges(namespace, &params)).await {
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
    known(&list.items)
}

/// What a namespace's LimitRanges come to, listed or found in the store.
fn known<'a>(items: impl IntoIterator<Item = &'a LimitRange>) -> Result<LimitRanges, ReadError> {
    let objects: Vec<Value> = items
        .into_iter()
        .map(|lr| json!({"kind": "LimitRange", "spec": lr.spec}))
        .collect();
    Ok(LimitRanges::from_objects(&objects)?)
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
    /// More than this many in the namespace: the list was cut there, or the store holds more.
    #[error("more than {0} LimitRanges")]
    TooMany(u32),
    /// What was read is not LimitRanges.
    #[error(transparent)]
    Parse(#[from] LimitRangesError),
}

/// The namespace of a review that may inject (a CREATE); `None` for any other.
pub(crate) fn namespace_of(review: &Review) -> Option<&str> {
    review.namespace().filter(|_| review.creates())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_create_in_a_namespace_reads_limit_ranges() {
        let review = |op: &str, ns: &str| {
            Review::read(
                &serde_json::to_vec(&json!({"request": {"uid": "u", "operation": op,
                    "namespace": ns, "object": {"metadata": {}}}}))
                .unwrap(),
            )
        };
        assert_eq!(namespace_of(&review("CREATE", "team")), Some("team"));
        assert_eq!(namespace_of(&review("UPDATE", "team")), None);
        assert_eq!(namespace_of(&review("CREATE", "")), None);
        assert_eq!(namespace_of(&Review::read(b"not json")), None);
    }
}
