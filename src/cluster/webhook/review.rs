//! One AdmissionReview, read once from the body: what the LimitRange reader, the verdicts and
//! the deciders all read of it (uid, operation, kind, namespace, sub-resource, the object as
//! JSON), so that none parses the body again or re-checks its fields its own way.
//!
//! kube's typed `AdmissionReview` reads it, as the API server sends it. A body those types
//! refuse is still read as far as plain JSON goes ([`Read::Loose`]), so that its answer is the
//! one such a body always had: allowed with a warning when it names a `request.uid`, else
//! HTTP 400 ([`super::admit`]).

use super::decision::{Asked, Workload};
use kube::core::admission::{AdmissionRequest, AdmissionReview, Operation};
use kube::core::{DynamicObject, GroupVersionKind};
use serde_json::Value;

/// The annotation the kubelet's mirror pods carry (static pods).
const MIRROR: &str = "kubernetes.io/config.mirror";

/// What the answer repeats when a review names no `apiVersion` of its own.
const DEFAULT_API_VERSION: &str = "admission.k8s.io/v1";

/// One review, as read.
#[derive(Debug)]
pub(crate) struct Review {
    /// The review's `apiVersion`, which its answer repeats.
    api_version: String,
    /// `request.uid`: the answer names it; without one there is no answer to give.
    uid: Option<String>,
    /// CREATE, UPDATE, DELETE or CONNECT.
    operation: Option<Operation>,
    /// The object's group (`""` for the core group), version and kind; `None` when the review
    /// does not name all three.
    kind: Option<GroupVersionKind>,
    /// `request.namespace`, as sent (maybe empty).
    namespace: Option<String>,
    /// `request.subResource`, as sent (maybe empty).
    sub_resource: Option<String>,
    /// The object as sent, as JSON (`Null` when the review has none): what `inject` reads, and
    /// what the patch is a diff of.
    object: Value,
    /// The old object's `spec` (an UPDATE's; `Null` otherwise).
    old_spec: Value,
    /// How far kube's types read it.
    read: Read,
}

/// How far a body was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Read {
    /// kube's typed AdmissionReview read it: what the API server sends.
    Typed,
    /// JSON that kube's types refuse, with their words: its fields read as far as they go.
    Loose(String),
    /// Not JSON, with the parser's words.
    NotJson(String),
}

impl Review {
    /// Reads `body`: with kube's types, or, when they refuse it, as plain JSON.
    pub(crate) fn read(body: &[u8]) -> Review {
        let typed = serde_json::from_slice::<AdmissionReview<DynamicObject>>(body)
            .map_err(|e| e.to_string())
            .and_then(|review| {
                TryInto::<AdmissionRequest<DynamicObject>>::try_into(review)
                    .map_err(|_| "no request".to_string())
            });
        match typed {
            Ok(request) => Review::typed(request),
            Err(why) => Review::loose(body, why),
        }
    }

    /// The review of kube's typed `request`.
    fn typed(request: AdmissionRequest<DynamicObject>) -> Review {
        // The object as JSON, as the deciders have always read it (its metadata through kube's
        // ObjectMeta); the typed object is dropped, so that a large one is held once.
        let object = match &request.object {
            Some(object) => serde_json::to_value(object).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let old_spec = request
            .old_object
            .and_then(|mut old| old.data.get_mut("spec").map(Value::take))
            .unwrap_or(Value::Null);
        Review {
            api_version: request.types.api_version,
            uid: Some(request.uid),
            operation: Some(request.operation),
            kind: Some(request.kind),
            namespace: request.namespace,
            sub_resource: request.sub_resource,
            object,
            old_spec,
            read: Read::Typed,
        }
    }

    /// The review of a `body` kube's types refused (`why`), read as plain JSON.
    fn loose(body: &[u8], why: String) -> Review {
        let mut raw: Value = match serde_json::from_slice(body) {
            Ok(raw) => raw,
            Err(e) => return Review::unread(Read::NotJson(e.to_string())),
        };
        let text = |v: &Value| v.as_str().map(String::from);
        let mut request = raw
            .get_mut("request")
            .map(Value::take)
            .unwrap_or(Value::Null);
        let gvk = &request["kind"];
        let kind = match (
            gvk["group"].as_str(),
            gvk["version"].as_str(),
            gvk["kind"].as_str(),
        ) {
            (Some(group), Some(version), Some(kind)) => {
                Some(GroupVersionKind::gvk(group, version, kind))
            }
            _ => None,
        };
        let operation = match request["operation"].as_str() {
            Some("CREATE") => Some(Operation::Create),
            Some("UPDATE") => Some(Operation::Update),
            Some("DELETE") => Some(Operation::Delete),
            Some("CONNECT") => Some(Operation::Connect),
            _ => None,
        };
        let old_spec = request
            .get_mut("oldObject")
            .and_then(|old| old.get_mut("spec"))
            .map(Value::take)
            .unwrap_or(Value::Null);
        Review {
            api_version: raw["apiVersion"]
                .as_str()
                .unwrap_or(DEFAULT_API_VERSION)
                .to_string(),
            uid: text(&request["uid"]),
            operation,
            kind,
            namespace: text(&request["namespace"]),
            sub_resource: text(&request["subResource"]),
            object: request
                .get_mut("object")
                .map(Value::take)
                .unwrap_or(Value::Null),
            old_spec,
            read: Read::Loose(why),
        }
    }

    /// A review of which nothing could be read.
    fn unread(read: Read) -> Review {
        Review {
            api_version: DEFAULT_API_VERSION.to_string(),
            uid: None,
            operation: None,
            kind: None,
            namespace: None,
            sub_resource: None,
            object: Value::Null,
            old_spec: Value::Null,
            read,
        }
    }

    /// How far kube's types read it.
    pub(crate) fn how_read(&self) -> &Read {
        &self.read
    }

    /// The review's `apiVersion` (`admission.k8s.io/v1` when it names none).
    pub(crate) fn api_version(&self) -> &str {
        &self.api_version
    }

    /// `request.uid`, when there is one to answer to.
    pub(crate) fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// The operation, when it is one of Kubernetes' four.
    pub(crate) fn operation(&self) -> Option<&Operation> {
        self.operation.as_ref()
    }

    /// A CREATE (of the object, or of a sub-resource).
    pub(crate) fn creates(&self) -> bool {
        self.operation == Some(Operation::Create)
    }

    /// The object's group, version and kind, when the review names all three.
    pub(crate) fn kind(&self) -> Option<&GroupVersionKind> {
        self.kind.as_ref()
    }

    /// The request's namespace, unless none or empty.
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref().filter(|n| !n.is_empty())
    }

    /// The request's namespace as sent: an empty one is the request's word too (the object's
    /// own is not read in its place).
    pub(crate) fn namespace_as_sent(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// `pods/ephemeralcontainers`, `pods/binding` and the like (not a new object); `None` for
    /// the object itself.
    pub(crate) fn sub_resource(&self) -> Option<&str> {
        self.sub_resource.as_deref().filter(|s| !s.is_empty())
    }

    /// The object as sent, as JSON (`Null` when the review has none).
    pub(crate) fn object(&self) -> &Value {
        &self.object
    }

    /// The old object's `spec` (`Null` but for an UPDATE).
    pub(crate) fn old_spec(&self) -> &Value {
        &self.old_spec
    }

    /// Whether the object is a mirror (static) pod's: the kubelet's, whose images its node
    /// already runs and whose spec no one may change.
    pub(crate) fn is_mirror(&self) -> bool {
        is_mirror(&self.object["metadata"])
    }

    /// What the deciders read of it, for a review kube's types read; `None` for any other.
    pub(crate) fn asked(&self) -> Option<Asked<'_>> {
        if self.read != Read::Typed {
            return None;
        }
        let kind = self.kind.as_ref()?;
        Some(Asked {
            operation: self.operation.as_ref()?,
            group: &kind.group,
            version: &kind.version,
            kind: &kind.kind,
            sub_resource: self.sub_resource(),
            namespace: self.namespace(),
            object: &self.object,
        })
    }

    /// What the object is, when it is a Pod, a Job or a CronJob.
    pub(crate) fn workload(&self) -> Option<Workload> {
        let kind = self.kind.as_ref()?;
        Workload::of(&kind.group, &kind.version, &kind.kind)
    }
}

/// Whether `metadata` is a mirror pod's: the one test of it, for the deciders and the verdicts.
pub(crate) fn is_mirror(metadata: &Value) -> bool {
    !metadata["annotations"][MIRROR].is_null()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_review_is_read_typed_loose_or_not_at_all() {
        let typed = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u1", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
                "operation": "UPDATE", "namespace": "team", "userInfo": {},
                "object": {"metadata": {"name": "j"}, "spec": {"suspend": false}},
                "oldObject": {"metadata": {"name": "j"}, "spec": {"suspend": true}}}});
        let review = Review::read(&serde_json::to_vec(&typed).unwrap());
        assert_eq!(review.how_read(), &Read::Typed);
        assert_eq!(review.uid(), Some("u1"));
        assert_eq!(review.operation(), Some(&Operation::Update));
        assert_eq!(review.kind().map(|k| k.kind.as_str()), Some("Job"));
        assert_eq!(review.namespace(), Some("team"));
        assert_eq!(review.old_spec(), &json!({"suspend": true}));
        assert_eq!(review.object()["spec"], json!({"suspend": false}));
        assert!(review.asked().is_some());
        // What kube's types refuse (no userInfo, no resource) is read as JSON.
        let loose = json!({"request": {"uid": "u2", "operation": "CREATE", "namespace": "",
            "subResource": "binding", "object": {"metadata": {"annotations":
                {"kubernetes.io/config.mirror": "x"}}}}});
        let review = Review::read(&serde_json::to_vec(&loose).unwrap());
        assert!(matches!(review.how_read(), Read::Loose(_)));
        assert_eq!(review.api_version(), DEFAULT_API_VERSION);
        assert_eq!(review.uid(), Some("u2"));
        assert!(review.creates() && review.kind().is_none());
        assert_eq!(
            (review.namespace(), review.namespace_as_sent()),
            (None, Some(""))
        );
        assert_eq!(review.sub_resource(), Some("binding"));
        assert!(review.is_mirror() && review.asked().is_none());
        let review = Review::read(b"not json");
        assert!(matches!(review.how_read(), Read::NotJson(_)));
        assert_eq!(review.uid(), None);
    }
}
