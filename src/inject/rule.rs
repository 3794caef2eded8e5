//! The Job rule written, by any [`Writer`]: a `podFailurePolicy` with the rules decided in
//! [`super::job`], and `podReplacementPolicy: Failed` beside it. One writer for both modes of
//! the core: init mode's rules on pullcheck's exit codes (`--job-failure-policy`, through
//! [`super::pod`]), and rule mode's rule on `pullcheck watch`'s pod condition (through
//! `object.rs`'s `rule_object`, the webhook's `--mode watch`).

use crate::manifests::splice::{Refusal, Writer, Y};
use crate::manifests::tree::{NodeId, Tree};

/// The edits that add a `podFailurePolicy` to a Job spec.
pub(super) struct PolicyEdits<E> {
    /// In the order written: the policy, then the replacement policy.
    pub(super) edits: Vec<E>,
    /// The `podReplacementPolicy` value node that was set to `Failed`, if one was.
    pub(super) replaced: Option<NodeId>,
}

/// The edits that give the Job spec `job` (which has no `podFailurePolicy`, or a null one) a
/// `podFailurePolicy` of `rules`, and `podReplacementPolicy: Failed` where it says something
/// else. The API server refuses any `podReplacementPolicy` but `Failed` beside a
/// `podFailurePolicy`, and at admission it has already defaulted a Job's to
/// `TerminatingOrFailed`: adding the rules without this change would have the Job refused. A
/// null one is left: the API server defaults it to `Failed` beside a `podFailurePolicy`.
pub(super) fn add_policy<W: Writer>(
    writer: &W,
    t: &Tree,
    job: NodeId,
    rules: Vec<Y>,
) -> Result<PolicyEdits<W::Edit>, Refusal> {
    let policy = Y::map([("rules", Y::Seq(rules))]);
    let mut edits = vec![match t.own_entry(job, "podFailurePolicy") {
        Some((key, value)) if t.is_null(value) => writer.set_null(key, value, &policy)?,
        _ => writer.insert_key(job, &["template"], "podFailurePolicy", &policy)?,
    }];
    let mut replaced = None;
    if let Some((key, value)) = t.own_entry(job, "podReplacementPolicy")
        && !t.is_null(value)
        && t.scalar(value) != Some("Failed")
    {
        edits.push(writer.set_null(key, value, &Y::s("Failed"))?);
        replaced = Some(value);
    }
    Ok(PolicyEdits { edits, replaced })
}
