//! `pullcheck doctor --probe`: the install proven on the user's own cluster, nodes and runtime.
//! A real Job whose image is the install's own image repository with a tag that cannot exist
//! (the nodes already pull from that registry, so nothing new is reached), created in the
//! namespace the user names; the install must fail it within the bound. What the pod and the
//! Job said is read back, and everything made is deleted, whatever the outcome.
//!
//! What to make and what the answer means are pure ([`job`], [`Probe::check`]); the calls to
//! the API server are [`run`]'s.

use super::decide::Check;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use serde_json::json;
use std::time::{Duration, Instant};

/// How often the Job is looked at while the probe waits.
const POLL: Duration = Duration::from_millis(250);

/// What became of the probe's Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The install failed it, `after` its creation: the Job's `Failed` condition's reason and
    /// the pod's words (a pullcheck condition's reason and message, or the init container's
    /// termination message).
    Failed {
        job: String,
        image: String,
        after: Duration,
        job_reason: String,
        verdict: Option<String>,
        words: Option<String>,
    },
    /// Still not failed at the bound: the kubelet's waiting words at that moment.
    NotFailed {
        job: String,
        image: String,
        bound: Duration,
        waiting: Option<String>,
    },
    /// It could not be made or read (the API server's words).
    Refused { namespace: String, error: String },
    /// No image of the install to probe with.
    NoImage,
}

/// The probe's image: the install's image repository (tag or digest dropped) with `tag`.
pub(crate) fn image(install_image: &str, tag: &str) -> Option<String> {
    let without_digest = install_image.split('@').next().unwrap_or_default();
    // A tag is a `:` after the last `/` (a registry's port comes before it).
    let repository = match without_digest.rfind(':') {
        Some(i) if !without_digest[i..].contains('/') => &without_digest[..i],
        _ => without_digest,
    };
    (!repository.is_empty()).then(|| format!("{repository}:{tag}"))
}

/// The Job: one container of `image`, no retries, `IfNotPresent` (the kubelet's default for a
/// tag other than `latest`, and the policy under which a miss needs the most proof).
pub(crate) fn job(name: &str, image: &str) -> Job {
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": "pullcheck-doctor"}
        },
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/managed-by": "pullcheck-doctor"}},
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": false,
                    "containers": [{
                        "name": "probe",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/probe-never-runs"],
                        "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}, "limits": {"memory": "16Mi"}}
                    }]
                }
            }
        }
    });
    serde_json::from_value(job).unwrap_or_default()
}

/// The pod's words: a condition whose reason is a pullcheck word (the watcher's), or the
/// terminated message of the `pullcheck` init container (init mode).
fn pod_words(pod: &Pod) -> (Option<String>, Option<String>) {
    let status = pod.status.as_ref();
    let ours = status
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .find(|c| {
            c.status == "True"
                && c.reason
                    .as_deref()
                    .is_some_and(|r| crate::Reason::ALL.iter().any(|x| x.about().word == r))
        });
    if let Some(c) = ours {
        return (c.reason.clone(), c.message.clone());
    }
    let init = status
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or_default()
        .iter()
        .find(|c| c.name == "pullcheck")
        .and_then(|c| c.state.as_ref()?.terminated.as_ref());
    if let Some(t) = init {
        return (t.reason.clone(), t.message.clone());
    }
    (None, None)
}

/// The kubelet's waiting words of the pod's first waiting container.
fn waiting_words(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let all = status.init_container_statuses.iter().flatten();
    all.chain(status.container_statuses.iter().flatten())
        .find_map(|c| c.state.as_ref()?.waiting.as_ref())
        .map(|w| {
            format!(
                "{}: {}",
                w.reason.as_deref().unwrap_or_default(),
                w.message.as_deref().unwrap_or_default()
            )
        })
}

/// The Job's `Failed` condition's reason, when it has failed.
fn failed(job: &Job) -> Option<String> {
    job.status
        .as_ref()?
        .conditions
        .as_deref()?
        .iter()
        .find(|c| c.type_ == "Failed" && c.status == "True")
        .map(|c| c.reason.clone().unwrap_or_default())
}

impl Probe {
    /// The `probe` line.
    pub(crate) fn check(&self) -> Check {
        let words = |w: &Option<String>| w.as_deref().unwrap_or("none read").to_string();
        match self {
            Probe::Failed {
                job,
                image,
                after,
                job_reason,
                verdict,
                words: said,
            } => Check {
                check: "probe",
                ok: true,
                says: format!(
                    "Job {job} (image {image}) failed in {:.1} s ({job_reason}); verdict {}; \
                     the words: {}",
                    after.as_secs_f64(),
                    words(verdict),
                    words(said)
                ),
                fix: None,
            },
            Probe::NotFailed {
                job,
                image,
                bound,
                waiting,
            } => Check {
                check: "probe",
                ok: false,
                says: format!(
                    "Job {job} (image {image}) was not failed within {bound:?}; the kubelet \
                     says: {}",
                    words(waiting)
                ),
                fix: Some(
                    "label the namespace for the install (`watched` and `namespaces` above), \
                     check the watcher's log and its Events on the pod (StuckUnrecognized: \
                     words it does not know on this runtime), or give a longer --probe-timeout"
                        .to_string(),
                ),
            },
            Probe::Refused { namespace, error } => Check {
                check: "probe",
                ok: false,
                says: format!("the probe's Job could not be made or read in {namespace}: {error}"),
                fix: Some(
                    "doctor needs create, get and delete on jobs and list on pods in the probe's \
                     namespace"
                        .to_string(),
                ),
            },
            Probe::NoImage => Check {
                check: "probe",
                ok: false,
                says: "no image of the install's Deployment to probe with".to_string(),
                fix: Some("install the chart first (`installed` above)".to_string()),
            },
        }
    }
}

/// Makes the Job in `namespace`, waits up to `bound` for it to fail, reads what was said, and
/// deletes it (and its pod) in every case.
pub(crate) async fn run(
    client: &Client,
    namespace: &str,
    install_image: Option<&str>,
    bound: Duration,
) -> Probe {
    let tag = format!("pullcheck-probe-{:016x}", fastrand::u64(..));
    let Some(image) = install_image.and_then(|i| image(i, &tag)) else {
        return Probe::NoImage;
    };
    let name = format!("pullcheck-probe-{:08x}", fastrand::u32(..));
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let refused = |e: kube::Error| Probe::Refused {
        namespace: namespace.to_string(),
        error: e.to_string(),
    };
    let params = PostParams {
        dry_run: false,
        field_manager: Some("pullcheck-doctor".into()),
    };
    let started = Instant::now();
    if let Err(e) = jobs.create(&params, &job(&name, &image)).await {
        return refused(e);
    }
    let by_job = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}"));
    let mut last_pod: Option<Pod> = None;
    let outcome = loop {
        match jobs.get(&name).await {
            Ok(j) => {
                if let Some(pod) = pods
                    .list(&by_job)
                    .await
                    .ok()
                    .and_then(|l| l.items.into_iter().next())
                {
                    last_pod = Some(pod);
                }
                if let Some(job_reason) = failed(&j) {
                    let (verdict, words) = last_pod.as_ref().map(pod_words).unwrap_or_default();
                    break Probe::Failed {
                        job: name.clone(),
                        image: image.clone(),
                        after: started.elapsed(),
                        job_reason,
                        verdict,
                        words,
                    };
                }
            }
            Err(e) => break refused(e),
        }
        if started.elapsed() >= bound {
            break Probe::NotFailed {
                job: name.clone(),
                image: image.clone(),
                bound,
                waiting: last_pod.as_ref().and_then(waiting_words),
            };
        }
        tokio::time::sleep(POLL).await;
    };
    let delete = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    // Bounded: an API server that stops answering must not hold doctor; the Job's
    // ttlSecondsAfterFinished removes it later all the same.
    let _ = tokio::time::timeout(Duration::from_secs(10), jobs.delete(&name, &delete)).await;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_image_is_the_installs_repository_with_the_tag() {
        for (install, want) in [
            (
                "ghcr.io/pullcheck/pullcheck:0.1.0-webhook",
                "ghcr.io/pullcheck/pullcheck:t",
            ),
            (
                "127.0.0.1:5000/pullcheck:ci-webhook",
                "127.0.0.1:5000/pullcheck:t",
            ),
            ("127.0.0.1:5000/pullcheck", "127.0.0.1:5000/pullcheck:t"),
            (
                "r.example/p/pullcheck:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "r.example/p/pullcheck:t",
            ),
        ] {
            assert_eq!(image(install, "t").as_deref(), Some(want), "{install}");
        }
        assert_eq!(image("", "t"), None);
    }

    #[test]
    fn the_job_never_retries_and_pulls_if_not_present() {
        let j = job("pullcheck-probe-1", "r/p:t");
        let spec = j.spec.expect("a spec");
        assert_eq!(spec.backoff_limit, Some(0));
        let pod = spec.template.spec.expect("a pod spec");
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(pod.containers[0].image.as_deref(), Some("r/p:t"));
        assert_eq!(
            pod.containers[0].image_pull_policy.as_deref(),
            Some("IfNotPresent")
        );
    }

    #[test]
    fn the_answer_says_the_time_the_verdict_and_the_words() {
        let ok = Probe::Failed {
            job: "pullcheck-probe-1".into(),
            image: "r/p:t".into(),
            after: Duration::from_millis(3400),
            job_reason: "PodFailurePolicy".into(),
            verdict: Some("manifest_missing".into()),
            words: Some("container \"probe\" … not found".into()),
        }
        .check();
        assert!(ok.ok);
        assert!(
            ok.says
                .contains("failed in 3.4 s (PodFailurePolicy); verdict manifest_missing"),
            "{}",
            ok.says
        );
        let no = Probe::NotFailed {
            job: "j".into(),
            image: "r/p:t".into(),
            bound: Duration::from_secs(60),
            waiting: Some("ImagePullBackOff: Back-off pulling image".into()),
        }
        .check();
        assert!(!no.ok && no.fix.is_some());
        assert!(no.says.contains("not failed within 60s"), "{}", no.says);
        assert!(!Probe::NoImage.check().ok);
    }
}
