//! What a review asks to be judged at admission, read from the review alone (no I/O): the
//! images of the pod template of a Pod, a Job or a CronJob being created, or of a suspended
//! Job being released (`spec.suspend` true → false, how Kueue admits a workload), each with
//! its pull policy as the API server defaults it.
//!
//! A Pod that a controller owns (a Job's, a ReplicaSet's) is not judged: its warnings would
//! reach the controller, not a person, and refusing it would only make the controller try
//! again. Its controller's own creation is where a person reads the verdict.

use crate::cluster::webhook::decision::Workload;
use crate::cluster::webhook::review::Review;
use crate::pull_policy::PullPolicy;
use kube::core::admission::Operation;
use serde_json::Value;

/// What one review asks to be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// Each image once, in the order of the pod spec (init containers first), with the pull
    /// policy of its first container.
    pub(crate) images: Vec<(String, PullPolicy)>,
    /// The object's namespace (the request's).
    pub(crate) namespace: Option<String>,
    /// The pod template's `imagePullSecrets`, by name.
    pub(crate) pull_secrets: Vec<String>,
    /// The service account whose `imagePullSecrets` the pods will get too, for a Job or a
    /// CronJob (`default` when unnamed); `None` for a Pod, which has them already (the
    /// ServiceAccount admission plugin runs before webhooks).
    pub(crate) service_account: Option<String>,
}

/// The pod template `review` asks to be judged, if any.
pub(crate) fn wanted(review: &Review) -> Option<Wanted> {
    let operation = review.operation()?;
    if review.sub_resource().is_some() {
        return None;
    }
    let workload = review.workload()?;
    let object = review.object();
    let is_pod = workload == Workload::Pod;
    let template = match (operation, workload) {
        (Operation::Create, Workload::Pod) => {
            if is_controlled(&object["metadata"]) || review.is_mirror() {
                return None;
            }
            workload.pod_template(object)
        }
        (Operation::Create, Workload::Job | Workload::CronJob) => workload.pod_template(object),
        (Operation::Update, Workload::Job) => {
            let was = review.old_spec()["suspend"].as_bool() == Some(true);
            let is = object["spec"]["suspend"].as_bool() == Some(true);
            // Released: suspended before, not now.
            if !was || is {
                return None;
            }
            workload.pod_template(object)
        }
        _ => return None,
    };
    let spec = &template["spec"];
    let mut images: Vec<(String, PullPolicy)> = Vec::new();
    for list in ["initContainers", "containers"] {
        for container in spec[list].as_array().into_iter().flatten() {
            let Some(image) = container["image"].as_str() else {
                continue;
            };
            if image.is_empty() || images.iter().any(|(i, _)| i == image) {
                continue;
            }
            let policy = PullPolicy::resolve(image, container["imagePullPolicy"].as_str());
            images.push((image.to_string(), policy));
        }
    }
    let pull_secrets = spec["imagePullSecrets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    let service_account = (!is_pod).then(|| {
        spec["serviceAccountName"]
            .as_str()
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
            .to_string()
    });
    let namespace = review
        .namespace_as_sent()
        .or(object["metadata"]["namespace"].as_str())
        .filter(|n| !n.is_empty())
        .map(String::from);
    Some(Wanted {
        images,
        namespace,
        pull_secrets,
        service_account,
    })
}

/// Whether `metadata` names a controller among its owners.
fn is_controlled(metadata: &Value) -> bool {
    metadata["ownerReferences"]
        .as_array()
        .is_some_and(|owners| owners.iter().any(|o| o["controller"] == true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(operation: &str, group: &str, kind: &str, object: Value, old: Value) -> Value {
        json!({"operation": operation, "kind": {"group": group, "version": "v1", "kind": kind},
            "object": object, "oldObject": old})
    }

    fn spec() -> Value {
        json!({"initContainers": [{"name": "i", "image": "r.example/init:1"}],
            "containers": [
                {"name": "a", "image": "r.example/app"},
                {"name": "b", "image": "r.example/app:v1", "imagePullPolicy": "Always"},
                {"name": "c", "image": "r.example/app"}]})
    }

    /// What the review whose `request` is this asks judged.
    fn wanted_of(request: &Value) -> Option<Wanted> {
        wanted(&Review::read(
            &serde_json::to_vec(&json!({"request": request})).unwrap(),
        ))
    }

    fn images(w: Option<Wanted>) -> Vec<(String, PullPolicy)> {
        w.expect("judged").images
    }

    #[test]
    fn what_is_judged_and_what_is_not() {
        let all = vec![
            ("r.example/init:1".to_string(), PullPolicy::IfNotPresent),
            ("r.example/app".to_string(), PullPolicy::Always),
            ("r.example/app:v1".to_string(), PullPolicy::Always),
        ];
        let cases: Vec<(&str, Value, bool)> = vec![
            (
                "a bare Pod",
                request("CREATE", "", "Pod", json!({"spec": spec()}), Value::Null),
                true,
            ),
            (
                "a Job",
                request(
                    "CREATE",
                    "batch",
                    "Job",
                    json!({"spec": {"template": {"spec": spec()}}}),
                    Value::Null,
                ),
                true,
            ),
            (
                "a CronJob",
                request(
                    "CREATE",
                    "batch",
                    "CronJob",
                    json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": spec()}}}}}),
                    Value::Null,
                ),
                true,
            ),
            (
                "a Job released from suspension",
                request(
                    "UPDATE",
                    "batch",
                    "Job",
                    json!({"spec": {"suspend": false, "template": {"spec": spec()}}}),
                    json!({"spec": {"suspend": true}}),
                ),
                true,
            ),
            (
                "a Job whose suspend field is dropped",
                request(
                    "UPDATE",
                    "batch",
                    "Job",
                    json!({"spec": {"template": {"spec": spec()}}}),
                    json!({"spec": {"suspend": true}}),
                ),
                true,
            ),
            (
                "any other update of a Job",
                request(
                    "UPDATE",
                    "batch",
                    "Job",
                    json!({"spec": {"suspend": false, "template": {"spec": spec()}}}),
                    json!({"spec": {"suspend": false}}),
                ),
                false,
            ),
            (
                "a Job suspended",
                request(
                    "UPDATE",
                    "batch",
                    "Job",
                    json!({"spec": {"suspend": true, "template": {"spec": spec()}}}),
                    json!({"spec": {}}),
                ),
                false,
            ),
            (
                "a Job's Pod",
                request(
                    "CREATE",
                    "",
                    "Pod",
                    json!({"metadata": {"ownerReferences": [{"kind": "Job", "controller": true}]},
                        "spec": spec()}),
                    Value::Null,
                ),
                false,
            ),
            (
                "a mirror Pod",
                request(
                    "CREATE",
                    "",
                    "Pod",
                    json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}},
                        "spec": spec()}),
                    Value::Null,
                ),
                false,
            ),
            (
                "a Deployment",
                request(
                    "CREATE",
                    "apps",
                    "Deployment",
                    json!({"spec": {"template": {"spec": spec()}}}),
                    Value::Null,
                ),
                false,
            ),
            (
                "a Pod's delete",
                request("DELETE", "", "Pod", json!({"spec": spec()}), Value::Null),
                false,
            ),
        ];
        for (name, request, judged) in cases {
            let got = wanted_of(&request);
            assert_eq!(got.is_some(), judged, "{name}");
            if judged {
                assert_eq!(images(got), all, "{name}");
            }
        }
        // Whose credentials: the template's secrets, and for a Job its service account's.
        let mut with_secrets = spec();
        with_secrets["imagePullSecrets"] = json!([{"name": "regcred"}, {"name": ""}]);
        with_secrets["serviceAccountName"] = json!("runner");
        let mut job = request(
            "CREATE",
            "batch",
            "Job",
            json!({"spec": {"template": {"spec": with_secrets.clone()}}}),
            Value::Null,
        );
        job["namespace"] = json!("team");
        let got = wanted_of(&job).expect("judged");
        assert_eq!(got.pull_secrets, ["regcred"]);
        assert_eq!(got.service_account.as_deref(), Some("runner"));
        assert_eq!(got.namespace.as_deref(), Some("team"));
        let pod = request(
            "CREATE",
            "",
            "Pod",
            json!({"spec": with_secrets}),
            Value::Null,
        );
        assert_eq!(wanted_of(&pod).expect("judged").service_account, None);
        let mut sub = request("CREATE", "", "Pod", json!({"spec": spec()}), Value::Null);
        sub["subResource"] = json!("ephemeralcontainers");
        assert_eq!(wanted_of(&sub), None, "a sub-resource");
        assert_eq!(wanted_of(&json!({})), None, "nothing");
        assert_eq!(wanted_of(&json!("text")), None, "not an object");
    }
}
