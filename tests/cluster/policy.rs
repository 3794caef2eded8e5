//! The policy inject writes when asked to count exit 6 (`-- --on-unreachable fail`; by default
//! the init container only warns on it, and no rule is written) ends: a registry that stays
//! unreachable does not make the Job recreate pods for ever. Without `activeDeadlineSeconds`, exit 6 counts against
//! `backoffLimit` and the Job fails after its retries; with one, exit 6 is ignored until the
//! deadline fails the Job. The real Job controller decides both.

use crate::harness::{cluster, condition};
use crate::jobs::{injected, job, wait_job};

#[test]
fn an_unreachable_registry_ends_the_job_after_its_retries() {
    let c = cluster();
    let ns = c.namespace("pc-policy-count");
    // Nothing listens on port 1: every attempt is refused, for as long as the test runs.
    let image = "127.0.0.1:1/never/there:1";
    c.apply(
        &ns.name,
        &injected(
            &job("unreachable", image, 1),
            &[],
            &["--timeout", "5s", "--on-unreachable", "fail"],
        ),
    );
    let failed = wait_job(&ns.name, "unreachable", "Failed");
    let reason = &condition(&failed, "Failed").unwrap()["reason"];
    assert_eq!(reason, "BackoffLimitExceeded", "{failed}");
    let pods = c.job_pods(&ns.name, "unreachable");
    assert_eq!(pods.len(), 2, "backoffLimit 1: the first pod and one retry");
    for pod in &pods {
        let init = &pod["status"]["initContainerStatuses"][0];
        assert_eq!(init["state"]["terminated"]["exitCode"], 6, "{init}");
    }
}

#[test]
fn an_unreachable_registry_with_a_deadline_ends_at_the_deadline() {
    let c = cluster();
    let ns = c.namespace("pc-policy-deadline");
    let image = "127.0.0.1:1/never/there:1";
    let with_deadline = job("unreachable", image, 0).replace(
        "  backoffLimit: 0\n",
        "  backoffLimit: 0\n  activeDeadlineSeconds: 30\n",
    );
    c.apply(
        &ns.name,
        &injected(
            &with_deadline,
            &[],
            &["--timeout", "5s", "--on-unreachable", "fail"],
        ),
    );
    let failed = wait_job(&ns.name, "unreachable", "Failed");
    let reason = &condition(&failed, "Failed").unwrap()["reason"];
    assert_eq!(reason, "DeadlineExceeded", "{failed}");
    // Ignored failures do not count: more pods than backoffLimit 0 allows were tried.
    assert!(c.job_pods(&ns.name, "unreachable").len() >= 2);
}
