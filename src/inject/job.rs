//! The Job rule, decided: what `--job-failure-policy` writes on a `batch/v1` Job (the
//! `podFailurePolicy` rules on pullcheck's exit codes), what rule mode writes (the rule on
//! `pullcheck watch`'s pod condition, and when a Job keeps its own policy: `Kept`), and the
//! warning when a pod's restartPolicy keeps a failed check from failing it. Both are written
//! by [`super::rule`].

use super::{
    CONTAINER_NAME, COUNT_EXIT_CODES, FAIL_JOB_EXIT_CODES, IGNORE_EXIT_CODES, InjectOptions,
};
use crate::manifests::splice::Y;
use crate::manifests::tree::{NodeId, Tree};
use crate::manifests::{Manifests, Spot};

/// The workload kinds whose pods may only restart `Always`.
pub(super) const ALWAYS_ONLY_KINDS: [&str; 5] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ReplicationController",
];

/// Controllers that delete a failed pod and make another at once, with no back-off and no
/// limit, whatever its restartPolicy: KubeRay's RayCluster (v1.5.0, `raycluster_controller.go`
/// `shouldDeletePod` and `reconcilePods`; ray-project/kuberay#4637), which a RayJob's and a
/// RayService's cluster is too. A failed init container would fail each new pod in turn, one
/// every few seconds for ever (measured: 62 head pods in 196 s).
const REMADE_WHEN_FAILED: [&str; 3] = ["RayCluster", "RayJob", "RayService"];

/// Why a pod spec must not get the init container because its pods' controller makes a
/// failed pod again without end ([`REMADE_WHEN_FAILED`]) and its restartPolicy lets a failed
/// check fail the pod (`Never`, `OnFailure`; `Always` restarts the init container in place);
/// `None` for any other. `owner`: the kind of a Pod's controller, at admission; else the
/// manifest's own kind (ray.io), but for a RayJob's submitter, a Job's pod.
pub(super) fn remade_when_failed(
    t: &Tree,
    manifests: &Manifests,
    owner: Option<&str>,
    spot: &Spot,
    at: &str,
) -> Option<String> {
    let origin = &manifests.pod_specs[spot.spec].origin;
    let controller = match owner {
        Some(owner) => owner,
        None if origin.api_version.starts_with("ray.io/")
            && !origin.path.starts_with("spec.submitterPodTemplate") =>
        {
            origin.kind.as_str()
        }
        None => return None,
    };
    if !REMADE_WHEN_FAILED.contains(&controller) {
        return None;
    }
    let policy = spot.pod.and_then(|p| t.str_at(p, "restartPolicy"))?;
    if !matches!(policy, "Never" | "OnFailure") {
        return None;
    }
    Some(format!(
        "{at}: restartPolicy {policy} under a {controller}, which makes a failed pod again at \
         once and without end: left unchanged (the stuck-pod controller fails it within its \
         owner bound; restartPolicy Always would restart a failed check in place)"
    ))
}

/// The `podFailurePolicy` rules for pullcheck's exit codes, as the check arguments make them
/// count, and why (for the note that says what was written).
pub(super) fn rules(options: &InjectOptions, tree: &Tree, job: NodeId) -> (Vec<Y>, String) {
    let rule = |action: &str, codes: &[i64]| {
        Y::map([
            ("action", Y::s(action)),
            (
                "onExitCodes",
                Y::map([
                    ("containerName", Y::s(CONTAINER_NAME)),
                    ("operator", Y::s("In")),
                    (
                        "values",
                        Y::Flow(Box::new(Y::Seq(codes.iter().map(|c| Y::Int(*c)).collect()))),
                    ),
                ]),
            ),
        ])
    };
    let mut rules = vec![rule("FailJob", &FAIL_JOB_EXIT_CODES)];
    let mut whys = Vec::new();
    // Exits 6 and 8 are written only where the check arguments make them count: by
    // default the init container warns on them and exits 0, and the kubelet's own
    // back-off waits an outage out.
    if check_flag(&options.check_args, "--on-unreachable") == Some("fail") {
        let (action, why) = unreachable_rule(options, tree, job);
        rules.push(rule(action, &IGNORE_EXIT_CODES));
        whys.push(why);
    }
    if check_flag(&options.check_args, "--on-unverifiable") == Some("fail") {
        rules.push(rule("Count", &COUNT_EXIT_CODES));
        whys.push("Count on 8, as --on-unverifiable fail asks (cannot be checked from the pod: retrying will not change it, but the node may pull it, so backoffLimit decides)".to_string());
    }
    let why = if whys.is_empty() {
        "no rule on 6 or 8: the init container only warns on them (unreachable, unverifiable from the pod), and the kubelet's own back-off waits an outage out".to_string()
    } else {
        whys.join("; ")
    };
    (rules, why)
}

/// The rule on exit 6 when the check arguments make it count (`--on-unreachable fail`):
/// exit 6 may pass, so the pod is retried; but a rule that does not count it must have an
/// end, or a registry that stays unreachable recreates pods for ever.
fn unreachable_rule(options: &InjectOptions, t: &Tree, job: NodeId) -> (&'static str, String) {
    let deadline = t
        .get(job, "activeDeadlineSeconds")
        .and_then(|v| t.as_i64(v))
        .filter(|n| *n > 0);
    // The API server's default backoffLimit is 6.
    let backoff = t
        .get(job, "backoffLimit")
        .and_then(|v| t.as_i64(v))
        .unwrap_or(6);
    match (&deadline, options.ignore_unreachable_without_deadline) {
        (Some(seconds), _) => (
            "Ignore",
            format!(
                "Ignore on 6 (unreachable, not counted against backoffLimit): the Job's activeDeadlineSeconds: {seconds} ends the retries"
            ),
        ),
        (None, true) => (
            "Ignore",
            "Ignore on 6 (unreachable, not counted against backoffLimit), as --ignore-unreachable-without-deadline asks: the Job has no activeDeadlineSeconds, so it recreates a pod for as long as the registry stays unreachable".to_string(),
        ),
        (None, false) => (
            "Count",
            format!(
                "Count on 6 (unreachable, counted against backoffLimit {backoff}, so the Job fails after its retries): the Job has no activeDeadlineSeconds to bound an Ignore rule (set one to retry without counting)"
            ),
        ),
    }
}

/// The warning of a pod spec whose restartPolicy keeps a failed check from failing the
/// pod, if it has one; `owner`: the kind of a Pod's controller, at admission.
pub(super) fn restart_policy_warning(
    t: &Tree,
    manifests: &Manifests,
    owner: Option<&str>,
    spot: &Spot,
    at: &str,
) -> Option<String> {
    let kind = manifests.pod_specs[spot.spec].origin.kind.clone();
    let written = spot.pod.and_then(|p| t.str_at(p, "restartPolicy"));
    let description = match spot.operator_policy.as_deref() {
        // Kubeflow's ExitCode: the pods get Never, and the operator restarts only on
        // retryable exit codes (128 and up); pullcheck's are 3 to 7.
        Some("Never" | "ExitCode") => return None,
        Some(p) => {
            format!("{p} (the replica's restartPolicy, which the operator sets on the pods)")
        }
        // Kubeflow's training operator (kubeflow.org/v1) overwrites the template's
        // restartPolicy with the replica's, which defaults to OnFailure.
        None if spot.default_policy == Some("OnFailure") => {
            "OnFailure (the training operator's default for a replica without restartPolicy, \
             which overrides the template's)"
                .to_string()
        }
        None => match written.or(spot.default_policy) {
            Some("Never") => return None,
            Some(p) => p.to_string(),
            None => "not set (Always)".to_string(),
        },
    };
    // A Pod at admission, of a controller that allows only Always: what it cannot change
    // is said as a fact, in few words (warnings of more than 256 characters are cut).
    if let Some(owner) = owner.filter(|o| ALWAYS_ONLY_KINDS.contains(o))
        && kind == "Pod"
    {
        return Some(format!(
            "{at}: restartPolicy is {description}, as a {owner} requires: a failed check \
             restarts with back-off (Init:CrashLoopBackOff) and never fails the pod; \
             `kubectl describe pod` shows why"
        ));
    }
    let advice = if ALWAYS_ONLY_KINDS.contains(&kind.as_str()) {
        format!(
            "; a {kind} allows only Always, so its pods wait in Init:CrashLoopBackOff with \
             pullcheck's verdict in `kubectl describe pod`"
        )
    } else {
        "; set restartPolicy: Never so that the pod fails at once".to_string()
    };
    Some(format!(
        "{at}: restartPolicy is {description}, not Never: a failed pullcheck init container \
         is then retried with back-off instead of failing the pod{advice}"
    ))
}

/// The value the check arguments give `flag` (`--flag V` or `--flag=V`; the last one wins, as
/// clap reads them), before any `--`.
fn check_flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let mut value = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        if arg == flag {
            value = args.next().map(String::as_str);
        } else if let Some(v) = arg.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            value = Some(v);
        }
    }
    value
}

#[cfg(feature = "webhook")]
/// Why a Job spec keeps its policy as written in rule mode (the rule on `pullcheck watch`'s
/// pod condition, [`condition_rule`]): a `podFailurePolicy` is its author's, and one needs
/// `restartPolicy: Never`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Its own `podFailurePolicy` has a `FailJob` rule on the condition already.
    HasRule,
    /// Its own `podFailurePolicy` has a rule on the condition with another action (its
    /// value, `None` when it is not a string).
    OtherAction(Option<String>),
    /// Its own `podFailurePolicy`, without a rule on the condition.
    OwnPolicy,
    /// `restartPolicy: OnFailure`: a failed pod is replaced, never failed.
    OnFailure,
    /// `restartPolicy` Always, unset or odd: the API server refuses such a Job by itself.
    NotNever,
}

#[cfg(feature = "webhook")]
/// Why the Job spec `spec` (as JSON) keeps its policy as written in rule mode, `None` when it
/// gets the rule on `condition_type`: its own `podFailurePolicy` first, then a restartPolicy
/// other than `Never`.
pub(crate) fn kept(spec: &serde_json::Value, condition_type: &str) -> Option<Kept> {
    let policy = &spec["podFailurePolicy"];
    if !policy.is_null() {
        let ours = policy["rules"].as_array().and_then(|rules| {
            rules.iter().find(|r| {
                r["onPodConditions"]
                    .as_array()
                    .is_some_and(|cs| cs.iter().any(|c| c["type"] == condition_type))
            })
        });
        return Some(match ours {
            Some(rule) if rule["action"] == "FailJob" => Kept::HasRule,
            Some(rule) => Kept::OtherAction(rule["action"].as_str().map(str::to_string)),
            None => Kept::OwnPolicy,
        });
    }
    match spec["template"]["spec"]["restartPolicy"].as_str() {
        Some("Never") => None,
        Some("OnFailure") => Some(Kept::OnFailure),
        _ => Some(Kept::NotNever),
    }
}

#[cfg(feature = "webhook")]
/// The `podFailurePolicy` rule of rule mode: `FailJob` on the pod condition `condition_type`,
/// which `pullcheck watch` sets on a pod whose image it proves cannot be pulled.
pub(super) fn condition_rule(condition_type: &str) -> Y {
    Y::map([
        ("action", Y::s("FailJob")),
        (
            "onPodConditions",
            Y::Seq(vec![Y::map([
                ("type", Y::s(condition_type)),
                ("status", Y::s("True")),
            ])]),
        ),
    ])
}
