//! `pullcheck inject`: manifests in, the same manifests out with the pullcheck init container
//! added to every pod spec. (Stub: being written.)

/// Settings of one `inject` run.
#[derive(Debug, Clone, Default)]
pub struct InjectOptions {
    /// The pullcheck image for the init container.
    pub image: String,
    /// Extra pull secrets to mount (`--secret`), besides each pod's `imagePullSecrets`.
    pub secrets: Vec<String>,
    /// Arguments after `check` in the init container.
    pub check_args: Vec<String>,
}

/// The rewritten manifests and what the user should know about them.
#[derive(Debug, Clone, Default)]
pub struct Injected {
    /// The output document(s), in the input's format.
    pub output: String,
    /// Notes for stderr (e.g. a pod template whose `restartPolicy` is not `Never`).
    pub warnings: Vec<String>,
}

/// Input that cannot be rewritten: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InjectError(pub String);

/// Rewrites `input` (YAML or JSON, one or more documents); `source` names it in messages.
pub fn inject(input: &str, source: &str, options: &InjectOptions) -> Result<Injected, InjectError> {
    let _ = (input, source, options);
    Err(InjectError("inject is not implemented yet".to_string()))
}
