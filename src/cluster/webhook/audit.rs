//! `pullcheck webhook --audit`: a decision that would change an object becomes one that admits
//! it unchanged, with warnings that say what would have been added, read from the patch that
//! enforcing would have sent. Pure: the decision in, the audited decision out.
//!
//! The warnings name the object and what the patch adds (the init container and the images it
//! would check, each podFailurePolicy rule, a podReplacementPolicy set), so that an operator can
//! see, before enforcing, what enforcing does. No value of the object is quoted but its kind,
//! name and images (no environment, no secret).

use super::decision::{Asked, Decision, Skip, Would};
use crate::inject::CONTAINER_NAME;
use serde_json::Value;

/// How every warning of an audited answer starts, so that none reads as done.
const PREFIX: &str = "pullcheck (audit): ";

/// The audited form of `decision` for the object of `asked`: a patch becomes
/// [`Decision::Audited`] with what it would add said first, then the warnings enforcing
/// would give, as audit's; a skip or an error stays as it is.
pub(crate) fn audited(decision: Decision, asked: &Asked<'_>) -> Decision {
    let (would, ops, warnings) = match decision {
        Decision::Patch(ops, warnings) => (Would::Inject, ops, warnings),
        Decision::Rule(ops, warnings) => (Would::AddRule, ops, warnings),
        // The template annotation of a Job opted out only keeps the container from its pods;
        // in audit nothing adds one to them.
        Decision::OptOutPods(_) => return Decision::Skip(Skip::OptedOut, Vec::new()),
        Decision::Skip(..) | Decision::Audited(..) => return decision,
    };
    let object = object_name(asked);
    let mut out = would_add(&ops, &object);
    out.extend(warnings.into_iter().map(|w| {
        let w = w.strip_prefix("pullcheck: ").unwrap_or(&w);
        format!("{PREFIX}{w}")
    }));
    Decision::Audited(would, out)
}

/// `Kind namespace/name` (a generated name as `prefix<generated>`).
fn object_name(asked: &Asked<'_>) -> String {
    let metadata = &asked.object["metadata"];
    let name = match metadata["name"].as_str().filter(|n| !n.is_empty()) {
        Some(name) => name.to_string(),
        None => format!(
            "{}<generated>",
            metadata["generateName"].as_str().unwrap_or("")
        ),
    };
    match asked.object_namespace() {
        Some(namespace) => format!("{} {namespace}/{name}", asked.kind),
        None => format!("{} {name}", asked.kind),
    }
}

/// One warning per thing the patch `ops` adds to `object`: the init container, each
/// podFailurePolicy rule, a podReplacementPolicy; the rest (volumes, annotations) as one.
fn would_add(ops: &[Value], object: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Said after what it goes with (the patch lists keys as the object does, where
    // podReplacementPolicy may come first).
    let mut after = Vec::new();
    let mut other = 0;
    for op in ops {
        let path = op["path"].as_str().unwrap_or("");
        let value = &op["value"];
        if let Some(container) = ours(value) {
            let images = images(container);
            let list = images.join(", ");
            let count = match images.len() {
                1 => "1 image".to_string(),
                n => format!("{n} images"),
            };
            out.push(format!(
                "{PREFIX}would add to {object} the init container {CONTAINER_NAME} checking \
                 {count} ({list})"
            ));
        } else if path.ends_with("/podFailurePolicy") || path.contains("/podFailurePolicy/rules") {
            let rules = match &value["rules"] {
                Value::Array(rules) => rules.iter().collect(),
                Value::Null => vec![value],
                _ => Vec::new(),
            };
            out.extend(rules.into_iter().map(|rule| {
                format!(
                    "{PREFIX}would add to {object} the podFailurePolicy rule {}",
                    rule_text(rule)
                )
            }));
        } else if path.ends_with("/podReplacementPolicy") {
            after.push(format!(
                "{PREFIX}would set {object}'s podReplacementPolicy to {}",
                value.as_str().unwrap_or("(not a string)")
            ));
        } else {
            other += 1;
        }
    }
    out.extend(after);
    if other > 0 && !out.is_empty() {
        let edits = if other == 1 { "edit" } else { "edits" };
        out.push(format!(
            "{PREFIX}and {other} more {edits} to {object} for it (volumes, annotations)"
        ));
    }
    if out.is_empty() {
        out.push(format!("{PREFIX}would change {object}"));
    }
    out
}

/// The init container in an op's value: the container itself, or a list that holds it.
fn ours(value: &Value) -> Option<&Value> {
    let is_ours = |c: &Value| c["name"] == CONTAINER_NAME;
    match value {
        Value::Object(_) if is_ours(value) => Some(value),
        Value::Array(items) => items.iter().find(|c| is_ours(c)),
        _ => None,
    }
}

/// The images the init container checks: its `PULLCHECK_IMAGES` and
/// `PULLCHECK_IMAGES_IF_NOT_PRESENT`, and the images passed as arguments (those holding a
/// space or a comma, which the lists cannot), each once, in order.
fn images(container: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let env = container["env"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for e in env {
        if e["name"] == "PULLCHECK_IMAGES" || e["name"] == "PULLCHECK_IMAGES_IF_NOT_PRESENT" {
            let list = e["value"].as_str().unwrap_or("");
            for image in list.split(|c: char| c == ',' || c.is_whitespace()) {
                if !image.is_empty() && !out.iter().any(|i| i == image) {
                    out.push(image.to_string());
                }
            }
        }
    }
    let args = container["args"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for arg in args.iter().filter_map(Value::as_str) {
        if arg.contains(|c: char| c == ',' || c.is_whitespace()) && !out.iter().any(|i| i == arg) {
            out.push(arg.to_string());
        }
    }
    out
}

/// One podFailurePolicy rule: `FailJob on condition ConfigIssue`, `FailJob on exit codes 3,
/// 4 of pullcheck`.
fn rule_text(rule: &Value) -> String {
    let action = rule["action"].as_str().unwrap_or("(no action)");
    if let Some(conditions) = rule["onPodConditions"].as_array() {
        let types: Vec<&str> = conditions
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        return format!("{action} on condition {}", types.join(", "));
    }
    let codes = &rule["onExitCodes"];
    let values: Vec<String> = codes["values"]
        .as_array()
        .map(|l| l.iter().map(Value::to_string).collect())
        .unwrap_or_default();
    match codes["containerName"].as_str() {
        Some(container) => format!(
            "{action} on exit codes {} of {container}",
            values.join(", ")
        ),
        None => format!("{action} on exit codes {}", values.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::admission::Operation;
    use serde_json::json;

    fn asked<'a>(kind: &'a str, object: &'a Value) -> Asked<'a> {
        Asked {
            operation: &Operation::Create,
            group: if kind == "Pod" { "" } else { "batch" },
            version: "v1",
            kind,
            sub_resource: None,
            namespace: Some("team"),
            object,
        }
    }

    fn container(images: &str) -> Value {
        json!({"name": CONTAINER_NAME, "image": "registry.example/pullcheck:1",
            "args": ["check", "--", "-odd", "a b:1"],
            "env": [{"name": "PULLCHECK_IMAGES", "value": images},
                {"name": "PULLCHECK_IMAGES_IF_NOT_PRESENT", "value": "c:1,a:1"},
                {"name": "PULLCHECK_REGISTRY_PASSWORD", "value": "hunter2"}]})
    }

    #[test]
    fn a_patch_becomes_warnings_of_what_it_would_add_and_no_patch() {
        let pod = json!({"metadata": {"generateName": "web-"}});
        let ops = vec![
            json!({"op": "add", "path": "/spec/initContainers",
                "value": [container("a:1 b:2")]}),
            json!({"op": "add", "path": "/spec/volumes/-", "value": {"name": "x"}}),
        ];
        let decided = audited(
            Decision::Patch(ops, vec!["pullcheck: restartPolicy is Always".into()]),
            &asked("Pod", &pod),
        );
        let Decision::Audited(Would::Inject, warnings) = decided else {
            panic!("not audited");
        };
        assert_eq!(
            warnings,
            [
                "pullcheck (audit): would add to Pod team/web-<generated> the init container \
                 pullcheck checking 4 images (a:1, b:2, c:1, a b:1)",
                "pullcheck (audit): and 1 more edit to Pod team/web-<generated> for it \
                 (volumes, annotations)",
                "pullcheck (audit): restartPolicy is Always",
            ]
        );
        // The container's environment is never quoted.
        assert!(
            !warnings.iter().any(|w| w.contains("hunter2")),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_job_s_rules_are_each_named() {
        let job = json!({"metadata": {"name": "j", "namespace": "team"}});
        let exit_rule = json!({"action": "FailJob", "onExitCodes": {
            "containerName": CONTAINER_NAME, "operator": "In", "values": [3, 4]}});
        let ops = vec![
            json!({"op": "add", "path": "/spec/template/spec/initContainers/0",
                "value": container("a:1")}),
            json!({"op": "add", "path": "/spec/podFailurePolicy",
                "value": {"rules": [exit_rule]}}),
        ];
        let Decision::Audited(Would::Inject, warnings) =
            audited(Decision::Patch(ops, Vec::new()), &asked("Job", &job))
        else {
            panic!("not audited");
        };
        assert_eq!(
            warnings[1],
            "pullcheck (audit): would add to Job team/j the podFailurePolicy rule FailJob on \
             exit codes 3, 4 of pullcheck"
        );
        assert!(
            warnings[0].contains("checking 3 images (a:1, c:1, a b:1)"),
            "{warnings:?}"
        );
    }

    #[test]
    fn watch_mode_s_rule_is_named_by_its_condition() {
        let job = json!({"metadata": {"name": "j"}});
        // In the order the patch may list them: the replacement policy first.
        let ops = vec![
            json!({"op": "replace", "path": "/spec/jobTemplate/spec/podReplacementPolicy",
                "value": "Failed"}),
            json!({"op": "add", "path": "/spec/jobTemplate/spec/podFailurePolicy",
                "value": {"rules": [{"action": "FailJob",
                    "onPodConditions": [{"type": "ConfigIssue", "status": "True"}]}]}}),
        ];
        let Decision::Audited(Would::AddRule, warnings) =
            audited(Decision::Rule(ops, Vec::new()), &asked("CronJob", &job))
        else {
            panic!("not audited");
        };
        assert_eq!(
            warnings,
            [
                "pullcheck (audit): would add to CronJob team/j the podFailurePolicy rule \
                 FailJob on condition ConfigIssue",
                "pullcheck (audit): would set CronJob team/j's podReplacementPolicy to Failed",
            ]
        );
    }

    #[test]
    fn skips_stay_and_an_opted_out_job_gets_nothing() {
        let job = json!({"metadata": {"name": "j"}});
        let asked = asked("Job", &job);
        let skip = audited(Decision::Skip(Skip::HasRule, vec!["w".into()]), &asked);
        assert!(matches!(skip, Decision::Skip(Skip::HasRule, w) if w == ["w"]));
        let opted = audited(Decision::OptOutPods(vec![json!({"op": "add"})]), &asked);
        assert!(matches!(opted, Decision::Skip(Skip::OptedOut, w) if w.is_empty()));
    }
}
