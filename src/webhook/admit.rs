//! One AdmissionReview in, its answer out: whether the object gets the init container, and
//! the JSON patch that adds it, made by [`crate::inject::inject`] itself on the object as JSON,
//! so that the webhook and `pullcheck inject` cannot write different pods.
//!
//! Every answer allows the object: a review that cannot be read, or an object `inject` cannot
//! edit, is admitted unchanged with a warning (the cluster must never wait on pullcheck).

use super::patch::diff;
use crate::inject::{CONTAINER_NAME, InjectOptions, inject};
use base64::Engine;
use serde_json::{Value, json};

/// The annotation that opts a Pod or Job out (`"false"`).
pub(crate) const OPT_OUT: &str = "pullcheck.dev/inject";
/// The annotation the kubelet's mirror pods carry (static pods).
const MIRROR: &str = "kubernetes.io/config.mirror";

/// What became of one review, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A patch that adds the container.
    Injected,
    /// Admitted unchanged, for this reason.
    Skipped(Skip),
    /// The review or its object could not be read or edited: admitted unchanged.
    Error,
}

/// Why an object was admitted unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Not a CREATE.
    Operation,
    /// Neither a Pod nor a batch/v1 Job.
    Kind,
    /// In the webhook's own namespace.
    OwnNamespace,
    /// Annotated `pullcheck.dev/inject: "false"`.
    OptedOut,
    /// A mirror (static) pod.
    Mirror,
    /// Already has the container (a Job's pod, or a second call).
    AlreadyInjected,
    /// `inject` left it alone; its warnings say why.
    NotInjected,
}

impl Skip {
    /// The metric label.
    pub(crate) const ALL: [Skip; 7] = [
        Skip::Operation,
        Skip::Kind,
        Skip::OwnNamespace,
        Skip::OptedOut,
        Skip::Mirror,
        Skip::AlreadyInjected,
        Skip::NotInjected,
    ];

    /// The `reason` label of the metrics.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Skip::Operation => "not-create",
            Skip::Kind => "other-kind",
            Skip::OwnNamespace => "own-namespace",
            Skip::OptedOut => "opted-out",
            Skip::Mirror => "mirror-pod",
            Skip::AlreadyInjected => "already-injected",
            Skip::NotInjected => "not-injected",
        }
    }
}

/// What the webhook needs to decide and edit.
#[derive(Debug)]
pub(crate) struct Admitter {
    /// `inject`'s options, from the webhook's own flags.
    pub(crate) options: InjectOptions,
    /// The same with `--job-failure-policy` off: for a Job with its own podFailurePolicy.
    pub(crate) without_policy: InjectOptions,
    /// The webhook's own namespace, whose objects are never edited.
    pub(crate) namespace: Option<String>,
}

/// A review whose `request.uid` cannot be read: no answer can name it (HTTP 400).
#[derive(Debug)]
pub(crate) struct Unreadable(pub(crate) String);

/// The answer's body and what happened.
pub(crate) struct Answer {
    pub(crate) body: Vec<u8>,
    pub(crate) outcome: Outcome,
}

/// The kind of object a review is about.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pod,
    Job,
}

impl Admitter {
    pub(crate) fn new(options: InjectOptions, namespace: Option<String>) -> Admitter {
        let without_policy = InjectOptions {
            job_failure_policy: false,
            ignore_unreachable_without_deadline: false,
            ..options.clone()
        };
        Admitter {
            options,
            without_policy,
            namespace: namespace.filter(|n| !n.is_empty()),
        }
    }

    /// Answers one AdmissionReview body.
    pub(crate) fn review(&self, body: &[u8]) -> Result<Answer, Unreadable> {
        let review: Value = serde_json::from_slice(body)
            .map_err(|e| Unreadable(format!("not an AdmissionReview: {e}")))?;
        let request = &review["request"];
        let Some(uid) = request["uid"].as_str() else {
            return Err(Unreadable("an AdmissionReview without request.uid".into()));
        };
        let api_version = review["apiVersion"]
            .as_str()
            .unwrap_or("admission.k8s.io/v1");
        let (outcome, patch, warnings) = match self.decide(request) {
            Ok(Decision::Patch(ops, warnings)) => (Outcome::Injected, Some(ops), warnings),
            Ok(Decision::Skip(why, warnings)) => (Outcome::Skipped(why), None, warnings),
            Err(why) => (
                Outcome::Error,
                None,
                vec![format!("pullcheck: {why}; admitted unchanged")],
            ),
        };
        let mut response = json!({"uid": uid, "allowed": true});
        if let Some(ops) = patch {
            let text = serde_json::to_vec(&ops).unwrap_or_default();
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(text));
        }
        if !warnings.is_empty() {
            response["warnings"] = json!(warnings);
        }
        let answer = json!({
            "apiVersion": api_version,
            "kind": "AdmissionReview",
            "response": response,
        });
        Ok(Answer {
            body: serde_json::to_vec(&answer).unwrap_or_default(),
            outcome,
        })
    }

    fn decide(&self, request: &Value) -> Result<Decision, String> {
        if request["operation"].as_str() != Some("CREATE") {
            return Ok(Decision::Skip(Skip::Operation, Vec::new()));
        }
        let gvk = &request["kind"];
        let kind = match (
            gvk["group"].as_str().unwrap_or(""),
            gvk["version"].as_str(),
            gvk["kind"].as_str(),
        ) {
            ("", Some("v1"), Some("Pod")) => Kind::Pod,
            ("batch", Some("v1"), Some("Job")) => Kind::Job,
            (group, version, kind) => {
                return Ok(Decision::Skip(
                    Skip::Kind,
                    vec![format!(
                        "pullcheck: acts on Pods and batch/v1 Jobs, not {}/{} {}; admitted \
                         unchanged",
                        group,
                        version.unwrap_or("?"),
                        kind.unwrap_or("?")
                    )],
                ));
            }
        };
        // A sub-resource (pods/ephemeralcontainers, pods/binding) is not a new pod.
        if request["subResource"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
        {
            return Ok(Decision::Skip(Skip::Operation, Vec::new()));
        }
        let object = request["object"]
            .as_object()
            .ok_or("the review's object is not a JSON object")?;
        let metadata = &request["object"]["metadata"];
        let namespace = request["namespace"]
            .as_str()
            .or(metadata["namespace"].as_str());
        if namespace.is_some() && namespace == self.namespace.as_deref() {
            return Ok(Decision::Skip(Skip::OwnNamespace, Vec::new()));
        }
        let template = match kind {
            Kind::Pod => &request["object"],
            Kind::Job => &request["object"]["spec"]["template"],
        };
        let opted_out = |m: &Value| m["annotations"][OPT_OUT].as_str() == Some("false");
        if opted_out(metadata) || opted_out(&template["metadata"]) {
            return Ok(Decision::Skip(Skip::OptedOut, Vec::new()));
        }
        if kind == Kind::Pod && !metadata["annotations"][MIRROR].is_null() {
            return Ok(Decision::Skip(Skip::Mirror, Vec::new()));
        }
        let has_ours = template["spec"]["initContainers"]
            .as_array()
            .is_some_and(|l| l.iter().any(|c| c["name"] == CONTAINER_NAME));
        if has_ours {
            return Ok(Decision::Skip(Skip::AlreadyInjected, Vec::new()));
        }
        let options =
            if kind == Kind::Job && !request["object"]["spec"]["podFailurePolicy"].is_null() {
                &self.without_policy
            } else {
                &self.options
            };
        let mut before = Value::Object(object.clone());
        // The object as a manifest: the reader finds pod specs by apiVersion and kind.
        let (api_version, kind_name) = match kind {
            Kind::Pod => ("v1", "Pod"),
            Kind::Job => ("batch/v1", "Job"),
        };
        before["apiVersion"] = json!(api_version);
        before["kind"] = json!(kind_name);
        let name = metadata["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .or(metadata["generateName"].as_str())
            .unwrap_or("");
        let source = format!("{}/{name}", namespace.unwrap_or(""));
        let text = serde_json::to_string_pretty(&before).map_err(|e| e.to_string())?;
        let injected = inject(&text, &source, options).map_err(|e| e.0)?;
        let after: Value = serde_json::from_str(&injected.output)
            .map_err(|e| format!("inject wrote JSON that does not parse back: {e}"))?;
        // `inject` names the input and its document: here there is one, the object itself.
        let prefix = format!("{source}: ");
        let warnings = injected
            .warnings
            .iter()
            .map(|w| {
                let w = w.strip_prefix(&prefix).unwrap_or(w);
                let w = w.strip_prefix("document 1: ").unwrap_or(w);
                format!("pullcheck: {w}")
            })
            .collect();
        let ops = diff(&before, &after);
        if ops.is_empty() {
            return Ok(Decision::Skip(Skip::NotInjected, warnings));
        }
        Ok(Decision::Patch(ops, warnings))
    }
}

/// What to answer, before it is written.
enum Decision {
    Patch(Vec<Value>, Vec<String>),
    Skip(Skip, Vec<String>),
}
