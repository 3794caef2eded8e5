//! The sample doctor sends through the API server with a server-side dry run, and what came
//! back, without I/O: a Pod (init and both modes) should come back with the `pullcheck` init
//! container, a Job (watch mode) with a podFailurePolicy rule on a pod condition. Dry-run
//! admission calls mutating webhooks as a real create does, and stores nothing.

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The init container's name, as `inject` adds it.
const INIT_CONTAINER: &str = "pullcheck";

fn spec() -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "sample".into(),
            image: Some("registry.k8s.io/pause:3.10".into()),
            ..Container::default()
        }],
        restart_policy: Some("Never".into()),
        ..PodSpec::default()
    }
}

fn meta() -> ObjectMeta {
    ObjectMeta {
        // A generated name: a dry run with a fixed one would fail when such an object exists.
        generate_name: Some("pullcheck-doctor-".into()),
        labels: Some(
            [(
                "app.kubernetes.io/managed-by".into(),
                "pullcheck-doctor".into(),
            )]
            .into(),
        ),
        ..ObjectMeta::default()
    }
}

/// The sample Pod.
pub(crate) fn pod() -> Pod {
    Pod {
        metadata: meta(),
        spec: Some(spec()),
        ..Pod::default()
    }
}

/// The sample Job (no podFailurePolicy of its own, so that the webhook adds its rule).
pub(crate) fn job() -> Job {
    Job {
        metadata: meta(),
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: None,
                spec: Some(spec()),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

/// (changed, added): whether the Pod came back with any init container, and with pullcheck's.
pub(crate) fn pod_outcome(_sent: &Pod, got: &Pod) -> (bool, bool) {
    let inits = got
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    (
        !inits.is_empty(),
        inits.iter().any(|c| c.name == INIT_CONTAINER),
    )
}

/// (changed, added): whether the Job came back with a podFailurePolicy, and with a rule on a
/// pod condition (the watcher's).
pub(crate) fn job_outcome(_sent: &Job, got: &Job) -> (bool, bool) {
    let policy = got
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    let rule = policy.is_some_and(|p| {
        p.rules.iter().any(|r| {
            r.action == "FailJob" && r.on_pod_conditions.as_ref().is_some_and(|c| !c.is_empty())
        })
    });
    (policy.is_some(), rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{
        PodFailurePolicy, PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
    };

    #[test]
    fn a_pod_is_injected_only_with_pullcheck_s_init_container() {
        let sent = pod();
        assert_eq!(pod_outcome(&sent, &sent), (false, false));
        let mut got = pod();
        let other = Container {
            name: "istio-init".into(),
            ..Container::default()
        };
        got.spec.as_mut().unwrap().init_containers = Some(vec![other.clone()]);
        assert_eq!(pod_outcome(&sent, &got), (true, false));
        let ours = Container {
            name: "pullcheck".into(),
            ..Container::default()
        };
        got.spec.as_mut().unwrap().init_containers = Some(vec![ours, other]);
        assert_eq!(pod_outcome(&sent, &got), (true, true));
    }

    #[test]
    fn a_job_gets_the_rule_on_a_condition() {
        let sent = job();
        assert_eq!(job_outcome(&sent, &sent), (false, false));
        let mut got = job();
        let rule = |conditions: bool| PodFailurePolicyRule {
            action: "FailJob".into(),
            on_pod_conditions: conditions.then(|| {
                vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "ConfigIssue".into(),
                    status: "True".into(),
                }]
            }),
            ..PodFailurePolicyRule::default()
        };
        got.spec.as_mut().unwrap().pod_failure_policy = Some(PodFailurePolicy {
            rules: vec![rule(false)],
        });
        assert_eq!(job_outcome(&sent, &got), (true, false));
        got.spec.as_mut().unwrap().pod_failure_policy = Some(PodFailurePolicy {
            rules: vec![rule(true)],
        });
        assert_eq!(job_outcome(&sent, &got), (true, true));
    }
}
