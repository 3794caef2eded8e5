//! `pullcheck webhook --mode watch`: nothing for pods, and for a batch/v1 Job (or a CronJob's
//! job template) only what lets `pullcheck watch`'s verdict fail it: a `podFailurePolicy` rule
//! `FailJob` on the watcher's pod condition, and `podReplacementPolicy: Failed` where the API
//! server requires it beside one.
//!
//! The rule is the inject core's, in its rule mode ([`crate::inject::rule_object`]: decided and
//! written as `--job-failure-policy` writes its rules, through the same object writer). What is
//! watch mode's own is here: which reviews it acts on ([`decide`], after the checks shared with
//! init mode, [`preamble`]), the opt-out annotation wherever a Job or CronJob carries it, and
//! the words of what the core did ([`rule_patch`]). A Job that has its own `podFailurePolicy`,
//! or a restartPolicy other than `Never`, is admitted as written: its policy is its author's,
//! and a warning says what a pod the watcher fails then means for it.

use super::decision::{Asked, Decision, Skip, Unchanged, Workload, opted_out, preamble};
use crate::inject::{Kept, RuleWritten, rule_object};
use serde_json::Value;
use std::ops::ControlFlow;

/// What a review in watch mode is about: the workloads ([`Workload`]) that have a JobSpec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// A batch/v1 Job: its spec at `/spec`.
    Job,
    /// A batch/v1 CronJob: its Jobs' spec at `/spec/jobTemplate/spec`.
    CronJob,
}

impl JobKind {
    /// The JSON pointer of the JobSpec.
    fn spec_path(self) -> &'static str {
        match self {
            JobKind::Job => "/spec",
            JobKind::CronJob => "/spec/jobTemplate/spec",
        }
    }

    /// The keys from the object down to the JobSpec.
    fn spec_keys(self) -> &'static [&'static str] {
        match self {
            JobKind::Job => &["spec"],
            JobKind::CronJob => &["spec", "jobTemplate", "spec"],
        }
    }

    /// The JobSpec in `object`.
    fn spec(self, object: &Value) -> &Value {
        match self {
            JobKind::Job => &object["spec"],
            JobKind::CronJob => &object["spec"]["jobTemplate"]["spec"],
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            JobKind::Job => "Job",
            JobKind::CronJob => "CronJob",
        }
    }

    /// What the warnings call the JobSpec.
    fn what(self) -> &'static str {
        match self {
            JobKind::Job => "the Job",
            JobKind::CronJob => "the CronJob's job template",
        }
    }
}

/// The decision for one Job or CronJob.
#[derive(Debug, PartialEq)]
pub(crate) enum Rule {
    /// These JSON patch operations add the rule (and `podReplacementPolicy: Failed`); the
    /// warnings say what else changed.
    Add(Vec<Value>, Vec<String>),
    /// Admitted as written, for this reason, with these warnings.
    Leave(Skip, Vec<String>),
}

/// Answers one CREATE review in watch mode: the checks shared with init mode ([`preamble`]:
/// operation, kind, sub-resource, own namespace), then [`rule_patch`].
pub(crate) fn decide(
    request: &Asked<'_>,
    own_namespace: Option<&str>,
    condition_type: &str,
) -> Result<Decision, Unchanged> {
    let workload = match preamble(request, own_namespace, |workload| match workload {
        Some(Workload::Job) => ControlFlow::Continue(JobKind::Job),
        Some(Workload::CronJob) => ControlFlow::Continue(JobKind::CronJob),
        // Pods are not sent in watch mode (the chart's rules name none); one sent all the same
        // (a configuration of an earlier mode) is admitted unchanged, without a word.
        Some(Workload::Pod) => ControlFlow::Break(Decision::Skip(Skip::WatchMode, Vec::new())),
        None => ControlFlow::Break(Decision::Skip(
            Skip::Kind,
            vec![format!(
                "pullcheck: in watch mode acts on batch/v1 Jobs and CronJobs, not {}/{} {}; \
                 admitted unchanged",
                request.group, request.version, request.kind
            )],
        )),
    })? {
        ControlFlow::Continue(workload) => workload,
        ControlFlow::Break(answer) => return Ok(answer),
    };
    Ok(
        match rule_patch(workload, request.object, condition_type)? {
            Rule::Add(ops, warnings) => Decision::Rule(ops, warnings),
            Rule::Leave(why, warnings) => Decision::Skip(why, warnings),
        },
    )
}

/// The decision for `object`, a Job or a CronJob as the API server sent it (defaulted):
/// - annotated `pullcheck.dev/inject: "false"` (on itself, a CronJob's job template, or the pod
///   template): left alone;
/// - otherwise the inject core's rule mode ([`rule_object`]): with a `podFailurePolicy` of its
///   own, left as written, with a warning unless it has a rule on `condition_type` with
///   `FailJob` already; with a restartPolicy other than `Never` (a podFailurePolicy needs it),
///   left as written, with a warning for `OnFailure` (any other value the API server refuses
///   by itself); else the rule, and `podReplacementPolicy: Failed` where it says something
///   else.
///
/// `Err` for an object whose spec cannot be read as a Job's.
pub(crate) fn rule_patch(
    workload: JobKind,
    object: &Value,
    condition_type: &str,
) -> Result<Rule, Unchanged> {
    let spec = workload.spec(object);
    if !spec.is_object() {
        return Err(Unchanged::Spec {
            workload: workload.as_str(),
            path: workload.spec_path(),
        });
    }
    if opted_out(&object["metadata"])
        || opted_out(&object["spec"]["jobTemplate"]["metadata"])
        || opted_out(&spec["template"]["metadata"])
    {
        return Ok(Rule::Leave(Skip::OptedOut, Vec::new()));
    }
    let what = workload.what();
    Ok(
        match rule_object(object, workload.spec_keys(), condition_type)? {
            RuleWritten::Kept(why) => {
                let (skip, warning) = left(&why, what, condition_type);
                Rule::Leave(skip, warning.into_iter().collect())
            }
            RuleWritten::Added { ops, replaced } => {
                let mut warnings = Vec::new();
                // A Job's replacement policy is already defaulted (TerminatingOrFailed) when the
                // review is sent, so its change is every Job's case and says nothing; a CronJob's
                // job template is not defaulted, so a value there is its author's, and the warning
                // says it changed.
                if let Some(was) = replaced.filter(|_| workload == JobKind::CronJob) {
                    warnings.push(format!(
                        "pullcheck: {what}'s podReplacementPolicy {} -> Failed: the \
                     podFailurePolicy added needs it (a failed pod is replaced once it has \
                     stopped)",
                        was.as_str().unwrap_or("(not a string)")
                    ));
                }
                Rule::Add(ops, warnings)
            }
        },
    )
}

/// The skip reason of a Job that keeps its policy as written, and the warning that says what
/// a pod `pullcheck watch` fails then means for it (`what`: the JobSpec, as warnings call it).
fn left(why: &Kept, what: &str, condition_type: &str) -> (Skip, Option<String>) {
    match why {
        Kept::HasRule => (Skip::HasRule, None),
        Kept::OtherAction(action) => (
            Skip::HasRule,
            Some(format!(
                "pullcheck: {what} has its own podFailurePolicy rule on {condition_type} \
                 with action {}, not FailJob: a pod `pullcheck watch` fails is handled by \
                 that rule; left as written",
                action.as_deref().unwrap_or("(not a string)")
            )),
        ),
        Kept::OwnPolicy => (
            Skip::OwnPolicy,
            Some(format!(
                "pullcheck: {what} has its own podFailurePolicy, left as written: a pod \
                 `pullcheck watch` fails then counts against backoffLimit instead of \
                 failing the Job; to fail it, add first {{action: FailJob, onPodConditions: \
                 [{{type: {condition_type}}}]}}"
            )),
        ),
        Kept::OnFailure => (
            Skip::RestartPolicy,
            Some(format!(
                "pullcheck: {what} has restartPolicy OnFailure, left as written: a \
                 podFailurePolicy needs Never, so a pod `pullcheck watch` fails is replaced \
                 and only counts against backoffLimit; set Never to fail the Job"
            )),
        ),
        // Always, unset or odd: the API server refuses such a Job by itself.
        Kept::NotNever => (Skip::RestartPolicy, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::admission::Operation;
    use serde_json::json;

    const T: &str = "ConfigIssue";

    /// A Job as the API server sends it: `restartPolicy` Never and `podReplacementPolicy`
    /// defaulted; `edit` changes it.
    fn job(edit: impl FnOnce(&mut Value)) -> Value {
        let mut job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "team"},
            "spec": {
                "backoffLimit": 6,
                "completionMode": "NonIndexed",
                "podReplacementPolicy": "TerminatingOrFailed",
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "registry.example/team/train:1"}],
                }},
            },
        });
        edit(&mut job);
        job
    }

    /// A CronJob whose job template is [`job`]'s spec, without the defaulted replacement policy.
    fn cron_job(edit: impl FnOnce(&mut Value)) -> Value {
        let mut spec = job(|_| {})["spec"].clone();
        spec.as_object_mut().unwrap().remove("podReplacementPolicy");
        let mut cron = json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "team"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": spec}},
        });
        edit(&mut cron);
        cron
    }

    fn the_rule() -> Value {
        json!({"rules": [{"action": "FailJob",
            "onPodConditions": [{"type": T, "status": "True"}]}]})
    }

    fn added(rule: Rule) -> (Vec<Value>, Vec<String>) {
        match rule {
            Rule::Add(ops, warnings) => (ops, warnings),
            other => panic!("expected a patch, got {other:?}"),
        }
    }

    #[test]
    fn a_job_gets_the_rule_and_podreplacementpolicy_failed_and_nothing_else() {
        let (ops, warnings) = added(rule_patch(JobKind::Job, &job(|_| {}), T).unwrap());
        assert_eq!(
            ops,
            [
                json!({"op": "add", "path": "/spec/podFailurePolicy", "value": the_rule()}),
                json!({"op": "replace", "path": "/spec/podReplacementPolicy", "value": "Failed"}),
            ]
        );
        // The defaulted replacement policy is every Job's: no word of it.
        assert!(warnings.is_empty(), "{warnings:?}");
        // Nothing in the pod template: the pods are left as written.
        assert!(
            ops.iter()
                .all(|op| !op["path"].as_str().unwrap().contains("template"))
        );
    }

    #[test]
    fn podreplacementpolicy_is_changed_only_where_it_says_something_else() {
        let cases: &[(&str, Option<Value>, bool)] = &[
            (
                "TerminatingOrFailed (the default at admission)",
                Some(json!("TerminatingOrFailed")),
                true,
            ),
            ("Failed already", Some(json!("Failed")), false),
            ("absent (a feature gate off)", None, false),
            ("null", Some(Value::Null), false),
        ];
        for (name, value, replaced) in cases {
            let object = job(|j| {
                let spec = j["spec"].as_object_mut().unwrap();
                match value {
                    Some(v) => spec.insert("podReplacementPolicy".into(), v.clone()),
                    None => spec.remove("podReplacementPolicy"),
                };
            });
            let (ops, _) = added(rule_patch(JobKind::Job, &object, T).unwrap());
            assert_eq!(ops.len(), if *replaced { 2 } else { 1 }, "{name}: {ops:?}");
            assert_eq!(ops[0]["path"], "/spec/podFailurePolicy", "{name}");
        }
    }

    #[test]
    fn a_cronjob_gets_the_rule_in_its_job_template() {
        let (ops, warnings) = added(rule_patch(JobKind::CronJob, &cron_job(|_| {}), T).unwrap());
        assert_eq!(
            ops,
            [
                json!({"op": "add", "path": "/spec/jobTemplate/spec/podFailurePolicy",
                "value": the_rule()})
            ]
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        // A replacement policy its author wrote is changed, and said.
        let object = cron_job(|c| {
            c["spec"]["jobTemplate"]["spec"]["podReplacementPolicy"] = json!("TerminatingOrFailed");
        });
        let (ops, warnings) = added(rule_patch(JobKind::CronJob, &object, T).unwrap());
        assert_eq!(
            ops[1],
            json!({"op": "replace", "path": "/spec/jobTemplate/spec/podReplacementPolicy",
                "value": "Failed"})
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("TerminatingOrFailed -> Failed"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_job_with_its_own_policy_is_left_as_written_with_a_warning_that_says_what_to_add() {
        let object = job(|j| {
            j["spec"]["podFailurePolicy"] = json!({"rules": [{"action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]});
        });
        let Rule::Leave(why, warnings) = rule_patch(JobKind::Job, &object, T).unwrap() else {
            panic!("left as written");
        };
        assert_eq!(why, Skip::OwnPolicy);
        assert_eq!(warnings.len(), 1);
        let w = &warnings[0];
        assert!(
            w.contains("its own podFailurePolicy, left as written"),
            "{w}"
        );
        assert!(w.contains("counts against backoffLimit"), "{w}");
        assert!(
            w.ends_with("add first {action: FailJob, onPodConditions: [{type: ConfigIssue}]}"),
            "{w}"
        );
        // The same in a CronJob's job template.
        let object = cron_job(|c| {
            c["spec"]["jobTemplate"]["spec"]["podFailurePolicy"] =
                object["spec"]["podFailurePolicy"].clone();
        });
        let Rule::Leave(why, warnings) = rule_patch(JobKind::CronJob, &object, T).unwrap() else {
            panic!("left as written");
        };
        assert_eq!(why, Skip::OwnPolicy);
        assert!(
            warnings[0].contains("the CronJob's job template"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_job_with_our_rule_already_is_left_alone_in_silence_another_action_is_said() {
        for (name, rules, warned) in [
            (
                "ours alone",
                json!([{"action": "FailJob", "onPodConditions": [{"type": T, "status": "True"}]}]),
                false,
            ),
            (
                "ours among others (the CronJob's Job, or the author's)",
                json!([
                    {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
                    {"action": "FailJob", "onPodConditions": [{"type": T}]},
                ]),
                false,
            ),
            (
                "the same condition, another action",
                json!([{"action": "Count", "onPodConditions": [{"type": T}]}]),
                true,
            ),
        ] {
            let object = job(|j| j["spec"]["podFailurePolicy"] = json!({"rules": rules}));
            let Rule::Leave(why, warnings) = rule_patch(JobKind::Job, &object, T).unwrap() else {
                panic!("{name}: left as written");
            };
            assert_eq!(why, Skip::HasRule, "{name}");
            assert_eq!(warnings.len(), usize::from(warned), "{name}: {warnings:?}");
            if warned {
                assert!(
                    warnings[0].contains("with action Count, not FailJob"),
                    "{warnings:?}"
                );
            }
        }
        // Another condition type is not ours.
        let object = job(|j| {
            j["spec"]["podFailurePolicy"] =
                json!({"rules": [{"action": "FailJob", "onPodConditions": [{"type": T}]}]});
        });
        let Rule::Leave(why, _) = rule_patch(JobKind::Job, &object, "example.com/Stuck").unwrap()
        else {
            panic!("left as written");
        };
        assert_eq!(why, Skip::OwnPolicy);
    }

    #[test]
    fn restartpolicy_onfailure_is_left_as_written_with_what_it_means() {
        let object = job(|j| j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure"));
        let Rule::Leave(why, warnings) = rule_patch(JobKind::Job, &object, T).unwrap() else {
            panic!("left as written");
        };
        assert_eq!(why, Skip::RestartPolicy);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("restartPolicy OnFailure"),
            "{warnings:?}"
        );
        assert!(
            warnings[0].contains("only counts against backoffLimit"),
            "{warnings:?}"
        );
        // Always or unset: the API server refuses the Job itself; nothing added, nothing said.
        for value in [json!("Always"), Value::Null] {
            let object = job(|j| j["spec"]["template"]["spec"]["restartPolicy"] = value.clone());
            assert_eq!(
                rule_patch(JobKind::Job, &object, T).unwrap(),
                Rule::Leave(Skip::RestartPolicy, Vec::new()),
                "{value}"
            );
        }
    }

    #[test]
    fn the_opt_out_annotation_leaves_it_alone_wherever_it_is() {
        let no = json!({"pullcheck.dev/inject": "false"});
        let cases: Vec<(&str, JobKind, Value)> = vec![
            (
                "the Job's metadata",
                JobKind::Job,
                job(|j| j["metadata"]["annotations"] = no.clone()),
            ),
            (
                "the Job's pod template",
                JobKind::Job,
                job(|j| j["spec"]["template"]["metadata"] = json!({"annotations": no.clone()})),
            ),
            (
                "the CronJob's metadata",
                JobKind::CronJob,
                cron_job(|c| c["metadata"]["annotations"] = no.clone()),
            ),
            (
                "the CronJob's job template",
                JobKind::CronJob,
                cron_job(|c| {
                    c["spec"]["jobTemplate"]["metadata"] = json!({"annotations": no.clone()})
                }),
            ),
            (
                "the CronJob's pod template",
                JobKind::CronJob,
                cron_job(|c| {
                    c["spec"]["jobTemplate"]["spec"]["template"]["metadata"] =
                        json!({"annotations": no.clone()})
                }),
            ),
        ];
        for (name, workload, object) in cases {
            assert_eq!(
                rule_patch(workload, &object, T).unwrap(),
                Rule::Leave(Skip::OptedOut, Vec::new()),
                "{name}"
            );
        }
        // Any other value is no opt-out.
        let object =
            job(|j| j["metadata"]["annotations"] = json!({"pullcheck.dev/inject": "true"}));
        assert!(matches!(
            rule_patch(JobKind::Job, &object, T).unwrap(),
            Rule::Add(..)
        ));
    }

    /// The API server cuts a response's warnings past 256 characters: each is whole, with the
    /// longest condition type a qualified name may have.
    #[test]
    fn every_warning_fits_in_256_characters() {
        let label = "d".repeat(63);
        let longest = format!(
            "{label}.{label}.{label}.{}/{}",
            "d".repeat(61),
            "n".repeat(63)
        );
        assert!(crate::manifests::names::is_qualified_name(&longest));
        let own = json!({"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}]});
        let count = json!({"rules": [{"action": "Count", "onPodConditions": [{"type": T}]}]});
        let mut all = Vec::new();
        for t in [T, longest.as_str()] {
            for (workload, object) in [
                (
                    JobKind::Job,
                    job(|j| j["spec"]["podFailurePolicy"] = own.clone()),
                ),
                (
                    JobKind::CronJob,
                    cron_job(|c| {
                        c["spec"]["jobTemplate"]["spec"]["podFailurePolicy"] = own.clone()
                    }),
                ),
                (
                    JobKind::CronJob,
                    cron_job(|c| {
                        c["spec"]["jobTemplate"]["spec"]["podFailurePolicy"] = count.clone()
                    }),
                ),
                (
                    JobKind::CronJob,
                    cron_job(|c| {
                        c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] =
                            json!("OnFailure")
                    }),
                ),
                (
                    JobKind::CronJob,
                    cron_job(|c| {
                        c["spec"]["jobTemplate"]["spec"]["podReplacementPolicy"] =
                            json!("TerminatingOrFailed")
                    }),
                ),
            ] {
                match rule_patch(workload, &object, t).unwrap() {
                    Rule::Add(_, w) | Rule::Leave(_, w) => all.extend(w),
                }
            }
        }
        assert_eq!(all.len(), 10, "{all:#?}");
        for w in &all {
            // The longest condition type makes the rule's own text long: only that warning
            // may pass, and it is the one that names the type.
            let limit = if w.contains(&longest) {
                256 + longest.len()
            } else {
                256
            };
            assert!(
                w.chars().count() <= limit,
                "{} characters: {w}",
                w.chars().count()
            );
        }
    }

    #[test]
    fn a_spec_that_is_not_an_object_is_an_error() {
        for (workload, object) in [
            (JobKind::Job, json!({"metadata": {"name": "j"}})),
            (JobKind::Job, json!({"spec": "odd"})),
            (JobKind::CronJob, json!({"spec": {"jobTemplate": []}})),
        ] {
            assert!(rule_patch(workload, &object, T).is_err(), "{object}");
        }
    }

    #[test]
    fn the_condition_type_given_is_the_rules() {
        let (ops, _) = added(rule_patch(JobKind::Job, &job(|_| {}), "example.com/Stuck").unwrap());
        assert_eq!(
            ops[0]["value"]["rules"][0]["onPodConditions"],
            json!([{"type": "example.com/Stuck", "status": "True"}])
        );
    }

    /// The decision around it: the review's kind, operation and namespace.
    #[test]
    fn reviews_in_watch_mode() {
        // The deciding on what a review asks (the typed request itself is read in `admit`).
        let review = |kind: Value, operation: &str, namespace: &str, object: Value| {
            let operation: Operation = serde_json::from_value(json!(operation)).unwrap();
            let asked = Asked {
                operation: &operation,
                group: kind["group"].as_str().unwrap(),
                version: kind["version"].as_str().unwrap(),
                kind: kind["kind"].as_str().unwrap(),
                sub_resource: None,
                namespace: Some(namespace),
                object: &object,
            };
            super::decide(&asked, Some("pullcheck-system"), T)
        };
        let job_kind = json!({"group": "batch", "version": "v1", "kind": "Job"});
        let pod_kind = json!({"group": "", "version": "v1", "kind": "Pod"});
        let decide = |r: Result<Decision, Unchanged>| r.unwrap();
        assert!(matches!(
            decide(review(job_kind.clone(), "CREATE", "team", job(|_| {}))),
            Decision::Rule(ops, _) if ops.len() == 2
        ));
        assert!(matches!(
            decide(review(
                json!({"group": "batch", "version": "v1", "kind": "CronJob"}),
                "CREATE", "team", cron_job(|_| {})
            )),
            Decision::Rule(ops, _) if ops.len() == 1
        ));
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
        assert!(matches!(
            decide(review(pod_kind, "CREATE", "team", pod)),
            Decision::Skip(Skip::WatchMode, w) if w.is_empty()
        ));
        assert!(matches!(
            decide(review(job_kind.clone(), "UPDATE", "team", job(|_| {}))),
            Decision::Skip(Skip::Operation, _)
        ));
        assert!(matches!(
            decide(review(
                job_kind.clone(),
                "CREATE",
                "pullcheck-system",
                job(|_| {})
            )),
            Decision::Skip(Skip::OwnNamespace, _)
        ));
        assert!(matches!(
            decide(review(
                json!({"group": "apps", "version": "v1", "kind": "Deployment"}),
                "CREATE", "team", json!({})
            )),
            Decision::Skip(Skip::Kind, w) if w.len() == 1
        ));
        assert!(review(job_kind, "CREATE", "team", json!("x")).is_err());
    }
}
