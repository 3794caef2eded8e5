//! What `--job-failure-policy` writes on a `batch/v1` Job (`podFailurePolicy`, and
//! `restartPolicy: Never` where unset), and the warning when a pod's restartPolicy keeps a
//! failed check from failing it.

use super::pod::{ALWAYS_ONLY_KINDS, Run};
use super::{CONTAINER_NAME, COUNT_EXIT_CODES, FAIL_JOB_EXIT_CODES, IGNORE_EXIT_CODES};
use crate::manifests::Spot;
use crate::manifests::splice::{Edit, Y};
use crate::manifests::tree::NodeId;

impl Run<'_> {
    /// `podFailurePolicy` for a `batch/v1` Job, and `restartPolicy: Never` when unset.
    pub(super) fn failure_policy(&mut self, job: NodeId, pod: NodeId, at: &str) {
        let t = self.tree;
        let restart = t.str_at(pod, "restartPolicy");
        if restart.is_some_and(|p| p != "Never") {
            self.warn(format!(
                "{at}: no podFailurePolicy added: it needs restartPolicy Never, and the pod \
                 template says {}",
                restart.unwrap_or_default()
            ));
            return;
        }
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
        if check_flag(&self.options.check_args, "--on-unreachable") == Some("fail") {
            let (action, why) = self.unreachable_rule(job);
            rules.push(rule(action, &IGNORE_EXIT_CODES));
            whys.push(why);
        }
        if check_flag(&self.options.check_args, "--on-unverifiable") == Some("fail") {
            rules.push(rule("Count", &COUNT_EXIT_CODES));
            whys.push("Count on 8, as --on-unverifiable fail asks (cannot be checked from the pod: retrying will not change it, but the node may pull it, so backoffLimit decides)".to_string());
        }
        let why = if whys.is_empty() {
            "no rule on 6 or 8: the init container only warns on them (unreachable, unverifiable from the pod), and the kubelet's own back-off waits an outage out".to_string()
        } else {
            whys.join("; ")
        };
        let result = (|| -> Result<Vec<Edit>, &'static str> {
            let mut edits = Vec::new();
            match t.own_entry(job, "podFailurePolicy") {
                None => {
                    edits.push(self.splicer.insert_key(
                        job,
                        &["template"],
                        "podFailurePolicy",
                        &Y::map([("rules", Y::Seq(rules))]),
                    )?);
                    edits.extend(self.replacement_policy(job)?);
                }
                Some((_, policy)) => {
                    let existing = t
                        .get(policy, "rules")
                        .ok_or("podFailurePolicy has no rules")?;
                    let ours = t.items(existing).iter().any(|&r| {
                        t.get(r, "onExitCodes")
                            .and_then(|o| t.str_at(o, "containerName"))
                            == Some(CONTAINER_NAME)
                    });
                    if ours {
                        return Ok(edits);
                    }
                    if t.resolve(existing) != existing || t.items(existing).is_empty() {
                        return Err("its rules are not a plain list");
                    }
                    edits.push(self.splicer.prepend(existing, &rules)?);
                }
            }
            if restart.is_none() {
                edits.push(self.splicer.insert_key(
                    pod,
                    &["containers"],
                    "restartPolicy",
                    &Y::s("Never"),
                )?);
            }
            Ok(edits)
        })();
        match result {
            Ok(edits) if edits.is_empty() => self.notes.push(format!(
                "{}: {at}: podFailurePolicy kept: it has rules for container {CONTAINER_NAME} already",
                self.source
            )),
            Ok(edits) => {
                self.edits.extend(edits);
                self.notes.push(format!(
                    "{}: {at}: podFailurePolicy rules for container {CONTAINER_NAME}: FailJob on 3, 4, 5, 7 (proven); {why}",
                    self.source
                ));
            }
            Err(why) => self.warn(format!("{at}: no podFailurePolicy added ({why})")),
        }
    }

    /// The rule on exit 6 when the check arguments make it count (`--on-unreachable fail`):
    /// exit 6 may pass, so the pod is retried; but a rule that does not count it must have an
    /// end, or a registry that stays unreachable recreates pods for ever.
    fn unreachable_rule(&self, job: NodeId) -> (&'static str, String) {
        let t = self.tree;
        let deadline = t
            .get(job, "activeDeadlineSeconds")
            .and_then(|v| t.as_i64(v))
            .filter(|n| *n > 0);
        // The API server's default backoffLimit is 6.
        let backoff = t
            .get(job, "backoffLimit")
            .and_then(|v| t.as_i64(v))
            .unwrap_or(6);
        match (&deadline, self.options.ignore_unreachable_without_deadline) {
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

    /// A Job with a `podFailurePolicy` may replace a pod only once it has failed: the API server
    /// refuses any `podReplacementPolicy` but `Failed` beside one. At admission the API server
    /// has already defaulted it to `TerminatingOrFailed` (a Job without a `podFailurePolicy`
    /// gets that), so adding the rules without this change would have the Job refused; a file
    /// that sets it gets the same change, and a note says so.
    fn replacement_policy(&mut self, job: NodeId) -> Result<Option<Edit>, &'static str> {
        let t = self.tree;
        let Some((key, value)) = t.own_entry(job, "podReplacementPolicy") else {
            return Ok(None);
        };
        let was = t.str_at(job, "podReplacementPolicy");
        if was == Some("Failed") {
            return Ok(None);
        }
        let edit = self.splicer.set_null(key, value, &Y::s("Failed"))?;
        self.notes.push(format!(
            "{}: podReplacementPolicy {} -> Failed: the podFailurePolicy added needs it",
            self.source,
            was.unwrap_or("(not a string)")
        ));
        Ok(Some(edit))
    }

    pub(super) fn restart_policy_warning(&mut self, spot: &Spot, at: &str) {
        let t = self.tree;
        let kind = self.manifests.pod_specs[spot.spec].origin.kind.clone();
        let written = spot.pod.and_then(|p| t.str_at(p, "restartPolicy"));
        let description = match spot.operator_policy.as_deref() {
            // Kubeflow's ExitCode: the pods get Never, and the operator restarts only on
            // retryable exit codes (128 and up); pullcheck's are 3 to 7.
            Some("Never" | "ExitCode") => return,
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
                Some("Never") => return,
                Some(p) => p.to_string(),
                None => "not set (Always)".to_string(),
            },
        };
        // A Pod at admission, of a controller that allows only Always: what it cannot change
        // is said as a fact, in few words (warnings of more than 256 characters are cut).
        if let Some(owner) = self.owner.filter(|o| ALWAYS_ONLY_KINDS.contains(o))
            && kind == "Pod"
        {
            self.warn(format!(
                "{at}: restartPolicy is {description}, as a {owner} requires: a failed check \
                 restarts with back-off (Init:CrashLoopBackOff) and never fails the pod; \
                 `kubectl describe pod` shows why"
            ));
            return;
        }
        let advice = if ALWAYS_ONLY_KINDS.contains(&kind.as_str()) {
            format!(
                "; a {kind} allows only Always, so its pods wait in Init:CrashLoopBackOff with \
                 pullcheck's verdict in `kubectl describe pod`"
            )
        } else {
            "; set restartPolicy: Never so that the pod fails at once".to_string()
        };
        self.warn(format!(
            "{at}: restartPolicy is {description}, not Never: a failed pullcheck init container \
             is then retried with back-off instead of failing the pod{advice}"
        ));
    }
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
