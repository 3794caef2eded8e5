//! One AdmissionReview in, its answer out: whether the object gets the init container, and
//! the JSON patch that adds it, planned by the inject core that `pullcheck inject` uses, on the
//! object as sent, and written by its object writer ([`crate::inject::inject_object`]), so that
//! the webhook and `pullcheck inject` cannot write different pods.
//!
//! Every answer allows the object but one: an object whose image is proven missing, under
//! `--deny-missing` ([`super::verdicts`]). A review that cannot be read, or an object `inject`
//! cannot edit, is admitted unchanged with a warning (the cluster must never wait on pullcheck).

use super::decision::{
    Asked, Decision, OPT_OUT, ReviewOutcome, Skip, Unchanged, Workload, opted_out, preamble,
};
use super::limit_ranges::ReadError;
use super::patch::diff;
use super::review::{Read, Review, is_mirror};
use super::verdicts::Judged;
use crate::escape::{cut, escape};
use crate::inject::{CONTAINER_NAME, LimitRanges, ValidOptions, inject_object};
use base64::Engine;
use serde::Serialize;
use serde_json::{Value, json};
use std::ops::ControlFlow;

/// What the webhook needs to decide and edit.
#[derive(Debug)]
pub(crate) struct Admitter {
    mode: Mode,
    /// `--audit`: what it would add is said in warnings, never patched ([`super::audit`]).
    audit: bool,
    /// The webhook's own namespace, whose objects are never edited.
    namespace: Option<String>,
}

/// What the webhook adds.
#[derive(Debug)]
enum Mode {
    /// The init container (`--mode init` and `both`), with `inject`'s options from the
    /// webhook's own flags, checked once at start.
    Inject {
        /// Boxed: two sets of options are large beside the other mode's one string.
        options: Box<ValidOptions>,
        /// The same with `--job-failure-policy` off: for a Job with its own podFailurePolicy.
        without_policy: Box<ValidOptions>,
    },
    /// `--mode watch`: only the Job rule on the watcher's condition type
    /// ([`super::watch_mode`]).
    Watch { condition_type: String },
}

/// The answer: an AdmissionReview with its response. Typed here rather than kube's
/// `AdmissionResponse`, which writes the patch as an array of numbers: the API server reads
/// that too, but every other reader of a review (and Kubernetes' own clients) expects the
/// base64 string Go writes for `[]byte`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Reviewed<'a> {
    api_version: &'a str,
    kind: &'static str,
    response: Response<'a>,
}

/// One AdmissionResponse: allowed, but for a proven miss under `--deny-missing`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    uid: &'a str,
    allowed: bool,
    /// Why it is refused: what `kubectl` prints after "denied the request:".
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Refused>,
    /// `JSONPatch` with a patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    /// The JSON patch, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<Vec<String>>,
}

/// The status of a refusal (a `metav1.Status`).
#[derive(Serialize)]
struct Refused {
    code: u16,
    reason: &'static str,
    message: String,
}

/// A review whose `request.uid` cannot be read: no answer can name it (HTTP 400).
#[derive(Debug)]
pub(crate) struct Unreadable(pub(crate) String);

/// The answer's body and what happened.
pub(crate) struct ReviewAnswer {
    pub(crate) body: Vec<u8>,
    pub(crate) outcome: ReviewOutcome,
}

/// The most bytes (and so characters) of one warning. The API server drops a warning that
/// holds a control character, and once a response's warnings pass 4096 characters in all, cuts
/// each to its first 256 without a mark (k8s.io/apiserver's warning recorder); the
/// AdmissionResponse API asks for no more than 256.
const MAX_WARNING: usize = 256;
/// The most warnings of one answer: 8 of 256 are half the 4096 characters the API server keeps
/// for all the warnings of a request (it drops those past them), which other webhooks and its
/// own deprecation warnings share.
const MAX_WARNINGS: usize = 8;

/// The warnings as the API server passes them on whole: each escaped as the termination
/// message is (a control character would have it dropped), cut at a word or character
/// boundary with `…` to [`MAX_WARNING`], and past [`MAX_WARNINGS`] the rest counted in a last
/// one.
fn bounded(warnings: &[String]) -> Vec<String> {
    let keep = if warnings.len() > MAX_WARNINGS {
        MAX_WARNINGS - 1
    } else {
        warnings.len()
    };
    let mut out: Vec<String> = warnings[..keep]
        .iter()
        .map(|w| cut(&escape(w), MAX_WARNING))
        .collect();
    if warnings.len() > keep {
        out.push(format!(
            "pullcheck: … and {} more warnings",
            warnings.len() - keep
        ));
    }
    out
}

impl Admitter {
    /// The admitter of `--mode init` and `both`, adding the init container as `inject` would
    /// with `options`.
    pub(crate) fn injecting(options: ValidOptions, namespace: Option<String>) -> Admitter {
        let without_policy = Box::new(options.without_job_policy());
        Admitter {
            mode: Mode::Inject {
                options: Box::new(options),
                without_policy,
            },
            namespace: namespace.filter(|n| !n.is_empty()),
            audit: false,
        }
    }

    /// The admitter of `--mode watch`, adding the rule on `condition_type` to Jobs and nothing
    /// to pods.
    pub(crate) fn watching(condition_type: String, namespace: Option<String>) -> Admitter {
        Admitter {
            mode: Mode::Watch { condition_type },
            namespace: namespace.filter(|n| !n.is_empty()),
            audit: false,
        }
    }

    /// The same admitter in audit mode (`--audit`): it adds nothing, and answers each object
    /// it would change with warnings of what it would add.
    pub(crate) fn auditing(self, audit: bool) -> Admitter {
        Admitter { audit, ..self }
    }

    /// Whether it adds the init container (and so needs the namespaces' LimitRanges).
    pub(crate) fn injects(&self) -> bool {
        matches!(self.mode, Mode::Inject { .. })
    }

    /// Answers one AdmissionReview body, with the LimitRanges of the options.
    #[cfg(test)]
    pub(crate) fn review(&self, body: &[u8]) -> Result<ReviewAnswer, Unreadable> {
        self.answer(&Review::read(body), None, Judged::default())
    }

    /// Answers one review, with the namespace's LimitRanges as read for it (`Err`: why they
    /// could not be read; the init container's resources are then those of one of the pod's
    /// containers, and a warning says so) and the verdicts of its images (their warnings
    /// first; a refusal refuses the object, or in audit mode is a warning).
    pub(crate) fn answer(
        &self,
        review: &Review,
        ranges: Option<Result<LimitRanges, ReadError>>,
        judged: Judged,
    ) -> Result<ReviewAnswer, Unreadable> {
        let (asked, uid) = match (review.how_read(), review.asked(), review.uid()) {
            (Read::Typed, Some(asked), Some(uid)) => (asked, uid),
            (Read::NotJson(e), _, _) => {
                return Err(Unreadable(format!("not an AdmissionReview: {e}")));
            }
            (Read::Loose(why), _, _) => return unreadable_but_answerable(review, why),
            // kube's types read every field an answer needs: never.
            (Read::Typed, _, _) => return unreadable_but_answerable(review, "no request"),
        };
        let decided = match &self.mode {
            Mode::Watch { condition_type } => {
                super::watch_mode::decide(&asked, self.namespace.as_deref(), condition_type)
            }
            Mode::Inject {
                options,
                without_policy,
            } => self.decide(&asked, options, without_policy, ranges),
        };
        let decided = match decided {
            Ok(decision) if self.audit => Ok(super::audit::audited(decision, &asked)),
            other => other,
        };
        let (outcome, patch, warnings) = match decided {
            Ok(Decision::Patch(ops, warnings)) => (ReviewOutcome::Injected, Some(ops), warnings),
            Ok(Decision::Rule(ops, warnings)) => (ReviewOutcome::RuleAdded, Some(ops), warnings),
            Ok(Decision::Skip(why, warnings)) => (ReviewOutcome::Skipped(why), None, warnings),
            Ok(Decision::Audited(would, warnings)) => {
                (ReviewOutcome::Audited(would), None, warnings)
            }
            Ok(Decision::OptOutPods(ops)) => (
                ReviewOutcome::Skipped(Skip::OptedOut),
                Some(ops),
                Vec::new(),
            ),
            Err(why) => (
                ReviewOutcome::Error,
                None,
                vec![format!("pullcheck: {why}; admitted unchanged")],
            ),
        };
        let Judged {
            warnings: mut said,
            refusal,
        } = judged;
        match refusal {
            Some(why) if !self.audit => {
                return Ok(refused(review.api_version(), uid, why, &said));
            }
            Some(why) => said.push(format!("pullcheck (audit): would refuse: {why}")),
            None => {}
        }
        said.extend(warnings);
        let patch = patch.map(|ops| {
            let text = serde_json::to_vec(&ops).unwrap_or_default();
            base64::engine::general_purpose::STANDARD.encode(text)
        });
        Ok(answer(review.api_version(), uid, patch, &said, outcome))
    }

    fn decide(
        &self,
        request: &Asked<'_>,
        options: &ValidOptions,
        without_policy: &ValidOptions,
        ranges: Option<Result<LimitRanges, ReadError>>,
    ) -> Result<Decision, Unchanged> {
        let kind = match preamble(
            request,
            self.namespace.as_deref(),
            |workload| match workload {
                Some(kind @ (Workload::Pod | Workload::Job)) => ControlFlow::Continue(kind),
                _ => ControlFlow::Break(Decision::Skip(
                    Skip::Kind,
                    vec![format!(
                        "pullcheck: acts on Pods and batch/v1 Jobs, not {}/{} {}; admitted \
                         unchanged",
                        request.group, request.version, request.kind
                    )],
                )),
            },
        )? {
            ControlFlow::Continue(kind) => kind,
            ControlFlow::Break(answer) => return Ok(answer),
        };
        let object = request.object.as_object().ok_or(Unchanged::NotAnObject)?;
        let metadata = &request.object["metadata"];
        let namespace = request.object_namespace();
        let template = kind.pod_template(request.object);
        if opted_out(&template["metadata"]) {
            return Ok(Decision::Skip(Skip::OptedOut, Vec::new()));
        }
        if opted_out(metadata) {
            // A Job opted out on its own metadata: its pods carry its template's annotations,
            // not its own, and would get the container as Pods. The template is annotated too,
            // so that they are left alone as well.
            if kind == Workload::Job
                && let Some(after) = opt_out_template(request.object)
            {
                let ops = diff(request.object, &after);
                return Ok(Decision::OptOutPods(ops));
            }
            return Ok(Decision::Skip(Skip::OptedOut, Vec::new()));
        }
        if kind == Workload::Pod && is_mirror(metadata) {
            return Ok(Decision::Skip(Skip::Mirror, Vec::new()));
        }
        let has_ours = template["spec"]["initContainers"]
            .as_array()
            .is_some_and(|l| l.iter().any(|c| c["name"] == CONTAINER_NAME));
        if has_ours {
            return Ok(Decision::Skip(Skip::AlreadyInjected, Vec::new()));
        }
        let options =
            if kind == Workload::Job && !request.object["spec"]["podFailurePolicy"].is_null() {
                without_policy
            } else {
                options
            };
        let (options, unread) = with_limit_ranges(options, ranges);
        let mut before = Value::Object(object.clone());
        // The object as a manifest: the reader finds pod specs by apiVersion and kind.
        let (api_version, kind_name) = kind.api_version_and_kind();
        before["apiVersion"] = json!(api_version);
        before["kind"] = json!(kind_name);
        let name = metadata["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .or(metadata["generateName"].as_str())
            .unwrap_or("");
        let source = format!("{}/{name}", namespace.unwrap_or(""));
        // A Pod's controller (a ReplicaSet's, a StatefulSet's) decides which restart-policy
        // advice is true for it.
        let owner = match kind {
            Workload::Pod => controller_kind(metadata),
            Workload::Job | Workload::CronJob => None,
        };
        let injected = inject_object(&before, &source, &options, owner)?;
        let mut warnings = as_admission_warnings(&injected.warnings, &source);
        let ops = diff(&before, &injected.after);
        warnings.extend(
            unread
                .filter(|_| !ops.is_empty())
                .map(|why| unread_warning(&why)),
        );
        if ops.is_empty() {
            return Ok(Decision::Skip(Skip::NotInjected, warnings));
        }
        Ok(Decision::Patch(ops, warnings))
    }
}

/// The answer to a review kube's types cannot read (the API server sends none such): allowed
/// unchanged with a warning when it still has a `request.uid` to answer to, else HTTP 400
/// (which `failurePolicy: Ignore` admits too).
fn unreadable_but_answerable(review: &Review, why: &str) -> Result<ReviewAnswer, Unreadable> {
    let Some(uid) = review.uid() else {
        return Err(Unreadable("an AdmissionReview without request.uid".into()));
    };
    let api_version = review.api_version();
    // A review that names no kind is of no kind acted on, as it was counted before the typed
    // reader: skipped, not an error.
    if review.kind().is_none() {
        let warning = "pullcheck: the review names no kind of object; admitted unchanged";
        return Ok(answer(
            api_version,
            uid,
            None,
            &[warning.to_string()],
            ReviewOutcome::Skipped(Skip::Kind),
        ));
    }
    let warning = format!("pullcheck: the review cannot be read ({why}); admitted unchanged");
    Ok(answer(
        api_version,
        uid,
        None,
        &[warning],
        ReviewOutcome::Error,
    ))
}

/// The answer's body: allowed, with the patch (base64) and the warnings (bounded).
fn answer(
    api_version: &str,
    uid: &str,
    patch: Option<String>,
    warnings: &[String],
    outcome: ReviewOutcome,
) -> ReviewAnswer {
    let response = Response {
        uid,
        allowed: true,
        status: None,
        patch_type: patch.as_ref().map(|_| "JSONPatch"),
        patch,
        warnings: (!warnings.is_empty()).then(|| bounded(warnings)),
    };
    written(api_version, response, outcome)
}

/// The answer that refuses an object (`--deny-missing`): 403 with `why`, escaped and cut as
/// a warning is (the API server prints it whole), and the verdicts' warnings.
fn refused(api_version: &str, uid: &str, why: String, warnings: &[String]) -> ReviewAnswer {
    let response = Response {
        uid,
        allowed: false,
        status: Some(Refused {
            code: 403,
            reason: "Forbidden",
            message: cut(&escape(&why), MAX_REFUSAL),
        }),
        patch_type: None,
        patch: None,
        warnings: (!warnings.is_empty()).then(|| bounded(warnings)),
    };
    written(api_version, response, ReviewOutcome::Denied)
}

/// The AdmissionReview that carries `response`, as bytes.
fn written(api_version: &str, response: Response<'_>, outcome: ReviewOutcome) -> ReviewAnswer {
    let review = Reviewed {
        api_version,
        kind: "AdmissionReview",
        response,
    };
    ReviewAnswer {
        body: serde_json::to_vec(&review).unwrap_or_default(),
        outcome,
    }
}

/// The most bytes of a refusal's message: every miss of a pod of many containers, still short
/// enough to read in a terminal.
const MAX_REFUSAL: usize = 2048;

/// `options` with the namespace's LimitRanges as read (`Err`: unknown, and why, for a
/// warning); as they are without a read.
fn with_limit_ranges(
    options: &ValidOptions,
    ranges: Option<Result<LimitRanges, ReadError>>,
) -> (std::borrow::Cow<'_, ValidOptions>, Option<ReadError>) {
    let Some(read) = ranges else {
        return (std::borrow::Cow::Borrowed(options), None);
    };
    let (limit_ranges, unread) = match read {
        Ok(ranges) => (ranges, None),
        Err(why) => (LimitRanges::Unknown, Some(why)),
    };
    (
        std::borrow::Cow::Owned(options.with_limit_ranges(limit_ranges)),
        unread,
    )
}

/// The warning of a pod admitted without its namespace's LimitRanges, which could not be read.
fn unread_warning(why: &ReadError) -> String {
    format!(
        "pullcheck: cannot read the namespace's LimitRanges ({why}); the init container takes \
         the requests and limits of one of the pod's own containers"
    )
}

/// `inject`'s warnings as the webhook gives them: `inject` names the input and its document,
/// and here there is one, the object itself.
fn as_admission_warnings(warnings: &[String], source: &str) -> Vec<String> {
    let prefix = format!("{source}: ");
    warnings
        .iter()
        .map(|w| {
            let w = w.strip_prefix(&prefix).unwrap_or(w);
            let w = w.strip_prefix("document 1: ").unwrap_or(w);
            format!("pullcheck: {w}")
        })
        .collect()
}

/// The kind of the object's controller: its `ownerReferences` entry with `controller: true`
/// (there is at most one).
fn controller_kind(metadata: &Value) -> Option<&str> {
    metadata["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)?["kind"]
        .as_str()
}

/// The Job `job` with [`OPT_OUT`] `"false"` in its template's annotations; `None` when its
/// template or their metadata is not an object to add it to.
fn opt_out_template(job: &Value) -> Option<Value> {
    let mut after = job.clone();
    let template = after
        .get_mut("spec")?
        .get_mut("template")?
        .as_object_mut()?;
    let metadata = template.entry("metadata").or_insert(Value::Null);
    if metadata.is_null() {
        *metadata = json!({});
    }
    let annotations = metadata
        .as_object_mut()?
        .entry("annotations")
        .or_insert(Value::Null);
    if annotations.is_null() {
        *annotations = json!({});
    }
    annotations
        .as_object_mut()?
        .insert(OPT_OUT.to_string(), json!("false"));
    Some(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inject::{InjectOptions, inject};

    fn options() -> InjectOptions {
        InjectOptions {
            image: "registry.example/pullcheck:1".into(),
            ..InjectOptions::default()
        }
    }

    fn valid() -> ValidOptions {
        crate::inject::validate(options()).unwrap()
    }

    /// The response of one CREATE review of `object`, of the kind `gvk`, by an admitter with
    /// `options()`.
    fn response(gvk: Value, object: Value) -> Value {
        let review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u1",
                "kind": gvk,
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "operation": "CREATE",
                "namespace": "team",
                "userInfo": {"username": "system:serviceaccount:team:default"},
                "object": object,
            },
        });
        let admitter = Admitter::injecting(valid(), Some("pullcheck-system".into()));
        let answer = admitter
            .review(&serde_json::to_vec(&review).unwrap())
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer.body).unwrap();
        answer["response"].clone()
    }

    fn warnings(response: &Value) -> Vec<String> {
        response["warnings"]
            .as_array()
            .map(|l| l.iter().map(|w| w.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn warnings_are_cut_with_an_ellipsis_on_a_boundary_and_escaped() {
        let long = format!("pullcheck: {}", "word ".repeat(100));
        let cases: &[(&str, &str)] = &[
            ("short, unchanged", "pullcheck: restartPolicy is Always"),
            ("long, cut at a word", &long),
            ("one long word of multi-byte characters", &"é".repeat(300)),
            (
                "control characters",
                "pullcheck: a\nb \x1b[2J \u{85} \u{202e}",
            ),
        ];
        for (name, warning) in cases {
            let raw = warning.to_string();
            for w in bounded(&[raw.clone(), "\u{1b}[2J\n\u{9b}".to_string()]) {
                assert!(w.chars().count() <= MAX_WARNING, "{name}: {w}");
                assert!(w.len() <= MAX_WARNING, "{name}: {w}");
                assert!(!w.chars().any(char::is_control), "{name}: {w:?}");
            }
            let got = &bounded(std::slice::from_ref(&raw))[0];
            if raw.len() <= MAX_WARNING && !raw.chars().any(char::is_control) {
                assert_eq!(got, &raw, "{name}");
            } else if raw.len() > MAX_WARNING {
                let kept = got
                    .strip_suffix('…')
                    .unwrap_or_else(|| panic!("{name}: {got}"));
                assert!(raw.starts_with(kept), "{name}: {got}");
            }
        }
        // Escaped as the termination message is, before it is measured.
        assert_eq!(
            bounded(&["pullcheck: a\nok \u{1b}[2J".to_string()]),
            ["pullcheck: a\\nok \\x1b[2J"]
        );
        // Cut at the last whole word.
        let got = &bounded(std::slice::from_ref(&long))[0];
        assert!(got.ends_with("word…"), "{got}");
    }

    #[test]
    fn past_eight_warnings_the_rest_are_counted() {
        let eight: Vec<String> = (0..8).map(|i| format!("pullcheck: w{i}")).collect();
        assert_eq!(bounded(&eight), eight);
        let twenty: Vec<String> = (0..20).map(|i| format!("pullcheck: w{i}")).collect();
        let got = bounded(&twenty);
        assert_eq!(got.len(), MAX_WARNINGS);
        assert_eq!(got[..7], twenty[..7]);
        assert_eq!(got[7], "pullcheck: … and 13 more warnings");
        let total: usize = got.iter().map(|w| w.chars().count()).sum();
        assert!(total <= MAX_WARNINGS * MAX_WARNING);
    }

    #[test]
    fn a_review_s_warnings_reach_the_answer_bounded_and_escaped() {
        // A kind no API server sends, in a review all the same: the warning that names it is
        // escaped (the API server would drop it for its ESC) and cut (at the last word that
        // fits: here before the long kind).
        let gvk = json!({"group": "x\u{1b}[2J", "version": "v1", "kind": "K".repeat(300)});
        let response = response(gvk, json!({"metadata": {"name": "k"}}));
        assert_eq!(response["allowed"], true);
        assert!(response["patch"].is_null(), "{response}");
        let warnings = warnings(&response);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = &warnings[0];
        assert!(
            w.starts_with("pullcheck: acts on Pods and batch/v1 Jobs, not x\\x1b[2J/v1"),
            "{w:?}"
        );
        assert!(w.ends_with('…') && w.chars().count() <= MAX_WARNING, "{w}");
    }

    fn pod_of(owners: Value, restart: &str) -> Value {
        json!({
            "metadata": {"generateName": "web-", "namespace": "team", "ownerReferences": owners},
            "spec": {"restartPolicy": restart, "containers": [{"name": "a", "image": "a:1"}]},
        })
    }

    fn owner(kind: &str, controller: bool) -> Value {
        json!({"apiVersion": "apps/v1", "kind": kind, "name": "web", "uid": "1",
            "controller": controller})
    }

    #[test]
    fn pods_of_controllers_that_allow_only_always_get_the_container_and_a_true_warning() {
        let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
        for kind in [
            "ReplicaSet",
            "StatefulSet",
            "DaemonSet",
            "ReplicationController",
        ] {
            let response = response(pod.clone(), pod_of(json!([owner(kind, true)]), "Always"));
            assert!(response["patch"].is_string(), "{kind}: {response}");
            let warnings = warnings(&response);
            assert_eq!(warnings.len(), 1, "{kind}: {warnings:?}");
            let w = &warnings[0];
            assert!(
                w.contains(&format!(
                    "restartPolicy is Always, as a {kind} requires: a failed check restarts \
                     with back-off (Init:CrashLoopBackOff) and never fails the pod"
                )),
                "{kind}: {w}"
            );
            // No advice it cannot follow.
            assert!(!w.contains("set restartPolicy: Never"), "{kind}: {w}");
        }
        // A Job's pod, an owner that is not the controller, no owner: inject's advice, which
        // they can follow (in the Job's template, or the pod's own spec).
        let job = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "2",
            "controller": true}]);
        for (name, owners, restart) in [
            ("a Job's pod", job, "OnFailure"),
            (
                "not the controller",
                json!([owner("ReplicaSet", false)]),
                "Always",
            ),
            ("no owner", json!([]), "Always"),
        ] {
            let warnings = warnings(&response(pod.clone(), pod_of(owners, restart)));
            assert!(
                warnings.len() == 1 && warnings[0].contains("set restartPolicy: Never"),
                "{name}: {warnings:?}"
            );
        }
    }

    #[test]
    fn a_ray_clusters_pod_that_a_failed_check_would_fail_is_left_to_the_watcher() {
        let pod = json!({"group": "", "version": "v1", "kind": "Pod"});
        let ray = |controller| {
            json!([{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "r", "uid": "3",
                "controller": controller}])
        };
        for restart in ["Never", "OnFailure"] {
            let response = response(pod.clone(), pod_of(ray(true), restart));
            assert_eq!(response["allowed"], true);
            assert!(response["patch"].is_null(), "{restart}: {response}");
            let warnings = warnings(&response);
            assert_eq!(warnings.len(), 1, "{restart}: {warnings:?}");
            assert!(
                warnings[0].contains(&format!(
                    "restartPolicy {restart} under a RayCluster, which makes a failed pod again \
                     at once and without end: left unchanged"
                )),
                "{warnings:?}"
            );
        }
        // Always restarts the init container in place: no loop, the container is added; so it
        // is for a RayCluster that is not the controller.
        for (owners, restart) in [(ray(true), "Always"), (ray(false), "Never")] {
            let response = response(pod.clone(), pod_of(owners, restart));
            assert!(response["patch"].is_string(), "{restart}: {response}");
        }
    }

    #[test]
    fn inject_keeps_its_advice_for_a_pod_manifest_with_an_owner() {
        // `pullcheck inject` of a file: the manifest's kind, not its owner, decides, as before.
        let mut manifest = pod_of(json!([owner("ReplicaSet", true)]), "Always");
        manifest["apiVersion"] = json!("v1");
        manifest["kind"] = json!("Pod");
        manifest["metadata"]["name"] = json!("web-1");
        let text = serde_json::to_string(&manifest).unwrap();
        let injected = inject(&text, "pod.json", &options()).unwrap();
        assert_eq!(injected.warnings.len(), 1, "{:?}", injected.warnings);
        assert!(
            injected.warnings[0]
                .contains("; set restartPolicy: Never so that the pod fails at once"),
            "{:?}",
            injected.warnings
        );
    }

    #[test]
    fn a_job_opted_out_on_its_own_metadata_gets_the_annotation_in_its_template_only() {
        let job = |template_metadata: Value| {
            json!({
                "metadata": {"name": "j", "annotations": {"pullcheck.dev/inject": "false"}},
                "spec": {"template": {"metadata": template_metadata, "spec": {
                    "restartPolicy": "Never", "containers": [{"name": "a", "image": "a:1"}]}}},
            })
        };
        let gvk = json!({"group": "batch", "version": "v1", "kind": "Job"});
        let ours = json!({"pullcheck.dev/inject": "false"});
        for (name, template_metadata, ops) in [
            (
                "no metadata",
                Value::Null,
                json!([{"op": "replace", "path": "/spec/template/metadata",
                    "value": {"annotations": ours}}]),
            ),
            (
                "labels only",
                json!({"labels": {"app": "a"}}),
                json!([{"op": "add", "path": "/spec/template/metadata/annotations",
                    "value": ours}]),
            ),
            (
                "other annotations",
                json!({"annotations": {"team": "x"}}),
                json!([{"op": "add",
                    "path": "/spec/template/metadata/annotations/pullcheck.dev~1inject",
                    "value": "false"}]),
            ),
        ] {
            let response = response(gvk.clone(), job(template_metadata.clone()));
            assert_eq!(response["allowed"], true, "{name}");
            assert!(warnings(&response).is_empty(), "{name}: {response}");
            let patch = base64::engine::general_purpose::STANDARD
                .decode(response["patch"].as_str().unwrap())
                .unwrap();
            let patch: Value = serde_json::from_slice(&patch).unwrap();
            assert_eq!(patch, ops, "{name}");
        }
        // Metadata that is no object: left as it is.
        let response = response(gvk.clone(), job(json!("odd")));
        assert!(response["patch"].is_null(), "{response}");
    }

    #[test]
    fn the_namespace_s_limit_ranges_decide_the_resources_and_a_failed_read_is_a_warning() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "team"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "a:1",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"cpu": "150m", "memory": "128Mi"}}}]},
        });
        let review = serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "userInfo": {"username": "system:serviceaccount:team:default"},
                "operation": "CREATE", "namespace": "team", "object": pod},
        }))
        .unwrap();
        let strict = LimitRanges::parse(
            "kind: LimitRange\nspec:\n  limits:\n  - type: Container\n    min: {cpu: 50m, memory: 32Mi}\n    \
             max: {cpu: 150m, memory: 256Mi}\n    maxLimitRequestRatio: {cpu: 2}\n",
        )
        .unwrap();
        let admitter = Admitter::injecting(valid(), None);
        let resources_of = |ranges| {
            let answer = admitter
                .answer(&Review::read(&review), Some(ranges), Judged::default())
                .unwrap();
            let response =
                serde_json::from_slice::<Value>(&answer.body).unwrap()["response"].clone();
            let patch = base64::engine::general_purpose::STANDARD
                .decode(response["patch"].as_str().unwrap())
                .unwrap();
            let patch: Value = serde_json::from_slice(&patch).unwrap();
            let container = patch
                .as_array()
                .unwrap()
                .iter()
                .find(|op| op["path"] == "/spec/initContainers")
                .unwrap()["value"][0]
                .clone();
            (container["resources"].clone(), warnings(&response))
        };
        let (resources, warnings) = resources_of(Ok(strict));
        assert_eq!(
            resources,
            json!({"requests": {"cpu": "75m", "memory": "32Mi"},
                "limits": {"cpu": "150m", "memory": "32Mi"}})
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let (resources, warnings) = resources_of(Err(ReadError::Timeout(
            std::time::Duration::from_millis(750),
        )));
        assert_eq!(
            resources,
            json!({"requests": {"cpu": "100m", "memory": "64Mi"},
                "limits": {"cpu": "150m", "memory": "128Mi"}})
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "pullcheck: cannot read the namespace's LimitRanges (no answer within 750ms)"
            ),
            "{warnings:?}"
        );
    }
}
