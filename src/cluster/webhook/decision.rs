//! What one review comes to: the decision before it is written (a patch, the Job rule of
//! `--mode watch`, or nothing and why), and the outcome the metrics count. Apart from `admit`
//! and `watch_mode`, which both decide, so that neither reaches into the other for its words;
//! and what both check first ([`preamble`], [`opted_out`]).

use kube::core::admission::Operation;
use serde_json::Value;
use std::ops::ControlFlow;

/// What a review asks, as kube's types read it ([`super::review::Review::asked`]): what both
/// deciders read.
#[derive(Debug)]
pub(crate) struct Asked<'a> {
    /// CREATE, UPDATE, DELETE or CONNECT.
    pub(crate) operation: &'a Operation,
    /// The object's group (`""` for the core group), version and kind.
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) kind: &'a str,
    /// `pods/ephemeralcontainers`, `pods/binding` and the like: not a new object.
    pub(crate) sub_resource: Option<&'a str>,
    /// The request's namespace.
    pub(crate) namespace: Option<&'a str>,
    /// The object as sent, as JSON (`Null` when the review has none).
    pub(crate) object: &'a Value,
}

/// The kinds of object the webhook acts on: the one reading of a review's group, version and
/// kind that the deciders and the verdicts share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    /// A v1 Pod.
    Pod,
    /// A batch/v1 Job.
    Job,
    /// A batch/v1 CronJob.
    CronJob,
}

impl Workload {
    /// The workload of `group`, `version` and `kind`; `None` for any other object.
    pub(crate) fn of(group: &str, version: &str, kind: &str) -> Option<Workload> {
        match (group, version, kind) {
            ("", "v1", "Pod") => Some(Workload::Pod),
            ("batch", "v1", "Job") => Some(Workload::Job),
            ("batch", "v1", "CronJob") => Some(Workload::CronJob),
            _ => None,
        }
    }

    /// The pod template in `object` (a Pod is its own): where its pods' spec and metadata are.
    pub(crate) fn pod_template(self, object: &Value) -> &Value {
        match self {
            Workload::Pod => object,
            Workload::Job => &object["spec"]["template"],
            Workload::CronJob => &object["spec"]["jobTemplate"]["spec"]["template"],
        }
    }

    /// Its `apiVersion` and `kind`, as a manifest names them.
    pub(crate) fn api_version_and_kind(self) -> (&'static str, &'static str) {
        match self {
            Workload::Pod => ("v1", "Pod"),
            Workload::Job => ("batch/v1", "Job"),
            Workload::CronJob => ("batch/v1", "CronJob"),
        }
    }
}

impl<'a> Asked<'a> {
    /// The object's namespace: the request's, else the object's own metadata's.
    pub(crate) fn object_namespace(&self) -> Option<&'a str> {
        self.namespace
            .or(self.object["metadata"]["namespace"].as_str())
    }

    /// What the object is, of the kinds the webhook acts on.
    pub(crate) fn workload(&self) -> Option<Workload> {
        Workload::of(self.group, self.version, self.kind)
    }
}

/// The annotation that opts a Pod or Job out (`"false"`).
pub(crate) const OPT_OUT: &str = "pullcheck.dev/inject";

/// Whether `metadata` opts its object out: [`OPT_OUT`] `"false"` among its annotations (any
/// other value is no opt-out).
pub(crate) fn opted_out(metadata: &Value) -> bool {
    metadata["annotations"][OPT_OUT].as_str() == Some("false")
}

/// The checks both deciders make first, in this order: a CREATE; of a kind the mode acts on
/// (`kind` is given the workload, if any: `Continue` with what the mode makes of it, or
/// `Break` with the answer for one it does not act on); of the object itself, not of a
/// sub-resource (`pods/ephemeralcontainers`, `pods/binding`: not a new object); a JSON object;
/// outside the webhook's own namespace `own_namespace`. `Break`: the answer, already.
pub(crate) fn preamble<K>(
    asked: &Asked<'_>,
    own_namespace: Option<&str>,
    kind: impl FnOnce(Option<Workload>) -> ControlFlow<Decision, K>,
) -> Result<ControlFlow<Decision, K>, Unchanged> {
    let skip = |why| Ok(ControlFlow::Break(Decision::Skip(why, Vec::new())));
    if !matches!(asked.operation, Operation::Create) {
        return skip(Skip::Operation);
    }
    let kind = match kind(asked.workload()) {
        ControlFlow::Continue(kind) => kind,
        ControlFlow::Break(answer) => return Ok(ControlFlow::Break(answer)),
    };
    // A CREATE already: of a sub-resource, not of the object.
    if asked.sub_resource.is_some() {
        return skip(Skip::Operation);
    }
    if !asked.object.is_object() {
        return Err(Unchanged::NotAnObject);
    }
    let namespace = asked.object_namespace();
    if namespace.is_some() && namespace == own_namespace {
        return skip(Skip::OwnNamespace);
    }
    Ok(ControlFlow::Continue(kind))
}

/// What became of one review, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReviewOutcome {
    /// A patch that adds the container.
    Injected,
    /// `--mode watch`: a patch that adds the Job rule on the watcher's condition.
    RuleAdded,
    /// Admitted unchanged, for this reason.
    Skipped(Skip),
    /// `--audit`: admitted unchanged, with warnings of what enforcing would have done.
    Audited(Would),
    /// The review or its object could not be read or edited: admitted unchanged.
    Error,
    /// `--deny-missing`: refused, an image proven missing.
    Denied,
}

/// What an audited answer would have done: the outcome enforcing would have counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Would {
    /// Add the init container (`--mode init`, `both`).
    Inject,
    /// Add the Job rule on the watcher's condition (`--mode watch`).
    AddRule,
}

impl Would {
    /// Every value, in the order the metrics write them.
    pub(crate) const ALL: [Would; 2] = [Would::Inject, Would::AddRule];

    /// The `would` label of the metrics: the outcome enforcing would have counted.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Would::Inject => "injected",
            Would::AddRule => "rule-added",
        }
    }
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
    /// `--mode watch`: a Pod (watch mode adds nothing to pods).
    WatchMode,
    /// `--mode watch`: a Job with a podFailurePolicy of its own, without a rule on the
    /// watcher's condition.
    OwnPolicy,
    /// `--mode watch`: a Job with a rule on the watcher's condition already.
    HasRule,
    /// `--mode watch`: a Job whose restartPolicy is not Never (a podFailurePolicy needs it).
    RestartPolicy,
}

impl Skip {
    /// The metric label.
    pub(crate) const ALL: [Skip; 11] = [
        Skip::Operation,
        Skip::Kind,
        Skip::OwnNamespace,
        Skip::OptedOut,
        Skip::Mirror,
        Skip::AlreadyInjected,
        Skip::NotInjected,
        Skip::WatchMode,
        Skip::OwnPolicy,
        Skip::HasRule,
        Skip::RestartPolicy,
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
            Skip::WatchMode => "pod-in-watch-mode",
            Skip::OwnPolicy => "own-pod-failure-policy",
            Skip::HasRule => "has-condition-rule",
            Skip::RestartPolicy => "restart-policy-not-never",
        }
    }
}

/// What to answer, before it is written.
pub(crate) enum Decision {
    Patch(Vec<Value>, Vec<String>),
    /// `--mode watch`: the Job rule on the watcher's condition.
    Rule(Vec<Value>, Vec<String>),
    Skip(Skip, Vec<String>),
    /// An opted-out Job: only its template's annotation, for its pods (the patch).
    OptOutPods(Vec<Value>),
    /// `--audit`: no patch; the warnings say what enforcing would have added.
    Audited(Would, Vec<String>),
}

/// Why an object is admitted unchanged because it could not be read or edited: the `why` of
/// the warning "pullcheck: {why}; admitted unchanged".
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unchanged {
    /// The review's object is not a JSON object.
    #[error("the review's object is not a JSON object")]
    NotAnObject,
    /// `--mode watch`: a Job's or CronJob's spec (at `path`) is not an object.
    #[error("the {workload}'s spec at {path} is not an object")]
    Spec {
        /// `Job` or `CronJob`.
        workload: &'static str,
        /// The spec's JSON pointer.
        path: &'static str,
    },
    /// `inject` could not edit it.
    #[error(transparent)]
    Inject(#[from] crate::inject::InjectError),
}
