//! The kubelet's own words for a container that waits, classified: [`Verdict::Permanent`] with
//! one of pullcheck's [`Reason`]s when nothing but a change by a person will let it start, or
//! [`Verdict::Transient`] with why it may pass. In one place, as a table of phrases each read in
//! the source that writes it (the kubelet, containerd 1.6 and 2's CRI plugin and resolver,
//! CRI-O's containers/image, runc); the test tables are `tests/fixtures/kubelet-messages.tsv`
//! and the words recorded from each runtime, `tests/fixtures/kubelet-recorded/`.
//!
//! Runtimes word the same cause differently, and each release rewords it (containerd 1.6's
//! `failed to resolve reference "X": X: not found` is containerd 2's `failed to resolve image:
//! X: not found`). So the phrases are the parts runtimes share rather than one version's
//! sentence: the resolver's final `: not found`, the registry's error codes and their
//! distribution-spec messages, the HTTP status line, Go's net errors.
//!
//! Never permanent on doubt: a message is transient when it holds any phrase of a failure that
//! can pass (checked first, so that a mirror's refused connection before an upstream 404 is not
//! taken for a missing image), and permanent only on a phrase that names a permanent cause.
//! Words known and left to the kubelet on purpose are [`Transient::Doubtful`]; anything else is
//! [`Transient::Unknown`], which the watcher reports as words it does not recognise. The phrases
//! all hold a space, a quote or a colon where an image reference cannot, so that an image named
//! `app:timeout-fix` or `x/not-found` cannot make a message say what it does not.

use crate::report::Reason;

/// What the kubelet's words say of a waiting container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Verdict {
    /// It will not start until a person changes something: the pod may be failed.
    Permanent(Reason),
    /// It may start on a later try: reported, never acted on.
    Transient(Transient),
}

/// Why a waiting container may still start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Transient {
    /// No answer in time (`i/o timeout`, `context deadline exceeded`).
    Timeout,
    /// The connection failed (refused, reset, no route, EOF).
    Connect,
    /// The name did not resolve. A registry host that does not exist is a typo that never
    /// mends, but the node's resolver failing (CoreDNS restarting, an upstream resolver down,
    /// a search domain answering for a while) gives the same words, and it recovers: the
    /// words cannot tell the two apart, so it is never acted on.
    Dns,
    /// A 5xx, or the kubelet's `RegistryUnavailable`.
    ServerError,
    /// A 429 (`toomanyrequests`).
    RateLimited,
    /// The kubelet's cache of Secrets or ConfigMaps has not caught up yet.
    CacheSync,
    /// Words this table knows and leaves to the kubelet on purpose: a CA or a plain-HTTP
    /// registry only the node may be configured for, a layer that may be pushed again, a
    /// signature policy, a volume's sub-path.
    Doubtful,
    /// Words this table does not know: reported as unrecognised, so that a runtime's new
    /// wording is seen the day it appears.
    Unknown,
}

impl Transient {
    /// The word in Events, metrics and logs.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Transient::Timeout => "timeout",
            Transient::Connect => "connect",
            Transient::Dns => "dns",
            Transient::ServerError => "server_error",
            Transient::RateLimited => "rate_limited",
            Transient::CacheSync => "cache_sync",
            Transient::Doubtful => "doubtful",
            Transient::Unknown => "unknown",
        }
    }
}

impl Verdict {
    /// The word in Events, metrics and logs: the reason's, or the transient cause's.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Permanent(r) => r.about().word,
            Verdict::Transient(t) => t.as_str(),
        }
    }

    /// Whether the words were none the table knows.
    pub(crate) fn unrecognized(self) -> bool {
        self == Verdict::Transient(Transient::Unknown)
    }
}

/// Every permanent reason the kubelet's words can give, in the order of the reference page:
/// what `--grace-for` takes besides the waiting reasons.
pub(crate) const REASONS: [Reason; 18] = [
    Reason::ManifestMissing,
    Reason::InvalidReference,
    Reason::NoMatchingPlatform,
    Reason::CredentialsRejected,
    Reason::InsufficientScope,
    Reason::Denied,
    Reason::RunsAsRoot,
    Reason::NonNumericUser,
    Reason::InvalidUserId,
    Reason::RunAsUserZero,
    Reason::NoCommand,
    Reason::NotOnNode,
    Reason::PullUnauthorized,
    Reason::SecretMissing,
    Reason::ConfigMapMissing,
    Reason::KeyMissing,
    Reason::WorkingDirNotADirectory,
    Reason::CommandNotFound,
];

/// The waiting reasons the watcher looks at (`state.waiting.reason`), as the kubelet spells them
/// (`pkg/kubelet/images/types.go`, `pkg/kubelet/container/sync_result.go`).
pub(crate) const WATCHED: [&str; 8] = [
    ERR_IMAGE_PULL,
    IMAGE_PULL_BACK_OFF,
    // The kubelet's own reason when the runtime answered the CRI's `Unavailable` (CRI-O does
    // for a registry it cannot reach; containerd's words stay an `ErrImagePull`).
    REGISTRY_UNAVAILABLE,
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];
/// The kubelet's waiting reason of a failed pull.
pub(crate) const ERR_IMAGE_PULL: &str = "ErrImagePull";
/// The kubelet's waiting reason between two pulls.
pub(crate) const IMAGE_PULL_BACK_OFF: &str = "ImagePullBackOff";
/// The kubelet's waiting reason of a pull the runtime said it could not make for want of the
/// registry (`ErrRegistryUnavailable`, `pkg/kubelet/images/types.go`).
pub(crate) const REGISTRY_UNAVAILABLE: &str = "RegistryUnavailable";

/// Phrases of failures that can pass, in the order they are tried.
const TRANSIENT: &[(&str, Transient)] = &[
    // Go's net package and containerd's resolver (`failed to do request: Head ...: dial tcp
    // ...`); the kubelet's own `context deadline exceeded` from a CRI call that ran too long.
    ("i/o timeout", Transient::Timeout),
    ("context deadline exceeded", Transient::Timeout),
    ("Client.Timeout exceeded", Transient::Timeout),
    ("TLS handshake timeout", Transient::Timeout),
    ("timed out waiting for the condition", Transient::CacheSync),
    ("failed to sync secret cache", Transient::CacheSync),
    ("failed to sync configmap cache", Transient::CacheSync),
    ("no such host", Transient::Dns),
    ("server misbehaving", Transient::Dns),
    ("Temporary failure in name resolution", Transient::Dns),
    ("connection refused", Transient::Connect),
    ("connection reset by peer", Transient::Connect),
    ("no route to host", Transient::Connect),
    ("network is unreachable", Transient::Connect),
    ("unexpected EOF", Transient::Connect),
    ("broken pipe", Transient::Connect),
    // The kubelet's `evalCRIPullErr` (`image pull failed for X because the registry is
    // unavailable`), from the CRI's `RegistryUnavailable`.
    (
        "because the registry is unavailable",
        Transient::ServerError,
    ),
    ("RegistryUnavailable", Transient::ServerError),
    (": 500 Internal Server Error", Transient::ServerError),
    (": 502 Bad Gateway", Transient::ServerError),
    (": 503 Service Unavailable", Transient::ServerError),
    (": 504 Gateway Timeout", Transient::ServerError),
    (": 429 Too Many Requests", Transient::RateLimited),
    ("toomanyrequests:", Transient::RateLimited),
    // containerd: `failed to reserve container name ...: name ... is reserved for ...`, while
    // an earlier CreateContainer of the same container still runs.
    ("failed to reserve container name", Transient::Timeout),
];

/// Classifies the kubelet's words for one waiting container: its waiting `reason` and
/// `message` (for `ImagePullBackOff`, the last `ErrImagePull` message or the kubelet's `Failed`
/// Event instead when the back-off message does not carry the pull's error: give it as
/// `pull_error`). `None` for a waiting reason the watcher does not look at.
pub(crate) fn classify(reason: &str, message: &str, pull_error: Option<&str>) -> Option<Verdict> {
    let verdict = match reason {
        "InvalidImageName" => Verdict::Permanent(Reason::InvalidReference),
        // Also, from Kubernetes 1.35, an image the node holds whose pull records do not let
        // this pod use it: the kubelet says "not present" then too, on purpose. Permanent in
        // both cases, since under `Never` it never pulls. A held image the kubelet re-verifies
        // under `IfNotPresent` is pulled with the pod's credentials, and a refusal then comes
        // as the pull's own words (`ErrImagePull`), classified as any pull's.
        "ErrImageNeverPull" => Verdict::Permanent(Reason::NotOnNode),
        ERR_IMAGE_PULL | REGISTRY_UNAVAILABLE => pull(message),
        IMAGE_PULL_BACK_OFF => match back_off_words(message).or(pull_error) {
            Some(words) => pull(words),
            None => Verdict::Transient(Transient::Unknown),
        },
        "CreateContainerConfigError" => config(message),
        "CreateContainerError" | "RunContainerError" => create(message),
        _ => return None,
    };
    Some(verdict)
}

/// The pull's error inside the kubelet's back-off message, when it carries one: since v1.31 it
/// is `Back-off pulling image "X": ErrImagePull: <the pull's words>` (`pullImage` in
/// `pkg/kubelet/images/image_manager.go`: the back-off message wraps `prevPullErrMsg`); before,
/// only `Back-off pulling image "X"`.
pub(crate) fn back_off_words(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Back-off pulling image \"")?;
    // The image is Go-quoted (`%q`): the first `": ` after it ends it (an image holds no quote).
    let (_, words) = rest.split_once("\": ")?;
    let words = words.strip_prefix("ErrImagePull: ").unwrap_or(words);
    (!words.trim().is_empty()).then_some(words)
}

/// The pull's error in a `Failed` Event: `Failed to pull image "X": <the pull's words>`
/// (`pullImage` in `pkg/kubelet/images/image_manager.go`). The kubelet's other `Failed` Events
/// (`Error: ErrImagePull`, `Error: ImagePullBackOff`) carry nothing more: `None`.
pub(crate) fn event_pull_error(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Failed to pull image \"")?;
    let (_, words) = rest.split_once("\": ")?;
    (!words.trim().is_empty()).then_some(words)
}

/// The first transient phrase the words hold.
fn transient(words: &str) -> Option<Transient> {
    TRANSIENT
        .iter()
        .find(|(phrase, _)| words.contains(phrase))
        .map(|(_, why)| *why)
}

/// `ErrImagePull`: containerd's and the kubelet's words of a failed pull.
fn pull(words: &str) -> Verdict {
    if let Some(why) = transient(words) {
        return Verdict::Transient(why);
    }
    // Checked before "not found": containerd's `no match for platform in manifest: not found`
    // (`images/handlers.go`, `images/image.go`); CRI-O's (containers/image `image/docker_list.go`,
    // `internal/manifest/docker_schema2_list.go`, `oci_index.go`) `no image found in image index
    // for architecture …` and `no image found in manifest list for architecture …`.
    let table: &[(&[&str], Reason)] = &[
        (
            &[
                "no match for platform in manifest",
                "no image found in image index for architecture",
                "no image found in manifest list for architecture",
            ],
            Reason::NoMatchingPlatform,
        ),
        // The kubelet's `Failed to apply default image tag` and containerd's
        // `failed to parse image reference`: a reference no parser takes.
        (
            &[
                "failed to parse image reference",
                "couldn't parse image name",
            ],
            Reason::InvalidReference,
        ),
        // containerd's `failed to fetch oauth token`: credentials were sent (the OAuth POST
        // is used only with a secret), and the token server refused them. CRI-O's
        // containers/image says `unable to retrieve auth token: invalid username/password`
        // (`docker/errors.go`, ErrUnauthorizedForCredentials) when its token request carried
        // credentials and got a 401.
        (
            &[
                "failed to fetch oauth token: unexpected status",
                "unable to retrieve auth token: invalid username/password",
            ],
            Reason::CredentialsRejected,
        ),
        // containerd 2's resolver on a registry with Basic auth and no credentials for it
        // (`core/remotes/docker/authorizer.go`): the same opening words as a missing or private
        // repository below, but the registry asked for credentials and none were given.
        (
            &["authorization failed: no basic auth credentials"],
            Reason::PullUnauthorized,
        ),
        // containerd's resolver after a token without access (`insufficient_scope`), and the
        // Docker Engine's `pull access denied for X, repository does not exist or may require
        // 'docker login'`: the repository is missing or private, and the registry does not say
        // which. Before a plain 403, which the Docker Engine's words also hold. CRI-O's
        // containers/image turns a 401 `insufficient_scope` challenge into the distribution
        // spec's DENIED message, unprefixed: `reading manifest T in R: requested access to the
        // resource is denied` (a registry's own 403 body reads `denied: …`, below).
        (
            &[
                "repository does not exist or may require",
                "insufficient_scope",
                ": requested access to the resource is denied",
            ],
            Reason::InsufficientScope,
        ),
        (&[": 403 Forbidden", "denied: "], Reason::Denied),
        (
            &[": 401 Unauthorized", "unauthorized: "],
            Reason::PullUnauthorized,
        ),
        // containerd's resolver when every host answered 404: `<ref>: not found`; registries
        // that answer a GET with a body say `manifest unknown`.
        (
            &["manifest unknown", "MANIFEST_UNKNOWN", "NAME_UNKNOWN"],
            Reason::ManifestMissing,
        ),
    ];
    for (phrases, reason) in table {
        if phrases.iter().any(|p| words.contains(p)) {
            return Verdict::Permanent(*reason);
        }
    }
    // CRI-O's containers/image words a registry's error code by its default message alone
    // (`docker/errors.go`, registryHTTPResponseToError), last: a 401 without a token challenge
    // (Basic auth, no credentials or wrong ones alike) is `…: authentication required`, and a
    // 403 on a HEAD, which has no body, is the bare code, `…: denied`.
    let last = words.trim_end();
    if last.ends_with(": authentication required") {
        return Verdict::Permanent(Reason::PullUnauthorized);
    }
    if last.ends_with(": denied") {
        return Verdict::Permanent(Reason::Denied);
    }
    // containerd's resolver when every host answered 404 ends `<ref>: not found`, behind
    // `failed to resolve reference "<ref>"` (1.6, 1.7) or `failed to resolve image` (2.x, the
    // transfer service and the local pull alike). A layer that is missing ends the same way
    // behind `failed to copy`, never behind a resolve: that one is doubtful (below).
    if words.contains("failed to resolve ") && words.trim_end().ends_with(": not found") {
        return Verdict::Permanent(Reason::ManifestMissing);
    }
    doubtful(words)
}

/// Words of a failure that may pass or that only the node can judge, known and left to the
/// kubelet on purpose ([`Transient::Doubtful`]); anything else is [`Transient::Unknown`].
fn doubtful(words: &str) -> Verdict {
    const PHRASES: &[&str] = &[
        // A CA the node lacks, or a registry that speaks plain HTTP to a TLS client: the node's
        // own configuration (containerd's `hosts.toml`, CRI-O's `registries.conf`) decides.
        "x509: ",
        "tls: failed to verify certificate",
        "server gave HTTP response to HTTPS client",
        // A layer missing behind a manifest that is there (an interrupted push): pushed again,
        // it mends (containerd's fetcher, `content at … not found`; containers/image's
        // `blob unknown`).
        "failed to copy: httpReadSeeker: failed open: content at ",
        "BLOB_UNKNOWN",
        "blob unknown",
        // The kubelet's `ErrSignatureValidationFailed` and CRI-O's policy: not a pull error.
        "signature validation failed",
        "Source image rejected",
        // The kubelet's sub-path preparation (`pkg/kubelet/kubelet_pods.go`): the volume's.
        "failed to prepare subPath",
        // runc: a command that is there but not executable (`exec: "x": permission denied`),
        // and a volume's mount point that is a file in the image (`error mounting …`): not in
        // pullcheck's permanent causes.
        ": permission denied",
        "error mounting ",
    ];
    if PHRASES.iter().any(|p| words.contains(p)) {
        Verdict::Transient(Transient::Doubtful)
    } else {
        Verdict::Transient(Transient::Unknown)
    }
}

/// `CreateContainerConfigError`: the kubelet could not build the container's configuration
/// (`generateContainerConfig` in `pkg/kubelet/kuberuntime/kuberuntime_container.go`).
fn config(words: &str) -> Verdict {
    if let Some(why) = transient(words) {
        return Verdict::Transient(why);
    }
    // `makeEnvironmentVariables` in `pkg/kubelet/kubelet_pods.go`.
    if words.contains("couldn't find key ")
        && (words.contains(" in Secret ") || words.contains(" in ConfigMap "))
    {
        return Verdict::Permanent(Reason::KeyMissing);
    }
    // The API's NotFound, `<resource> "<name>" not found`: `secret` from the kubelet's
    // watch-based Secret manager, `secrets` from a direct GET.
    if words.ends_with("\" not found") {
        if words.starts_with("secret \"") || words.starts_with("secrets \"") {
            return Verdict::Permanent(Reason::SecretMissing);
        }
        if words.starts_with("configmap \"") || words.starts_with("configmaps \"") {
            return Verdict::Permanent(Reason::ConfigMapMissing);
        }
    }
    // `verifyRunAsNonRoot` in `pkg/kubelet/kuberuntime/security_context_others.go`.
    let table: &[(&str, Reason)] = &[
        (
            "container's runAsUser breaks non-root policy",
            Reason::RunAsUserZero,
        ),
        (
            "container has runAsNonRoot and image has non-numeric user",
            Reason::NonNumericUser,
        ),
        (
            "container has runAsNonRoot and image will run as root",
            Reason::RunsAsRoot,
        ),
        (
            "container has runAsNonRoot and image has an invalid user id",
            Reason::InvalidUserId,
        ),
    ];
    match table.iter().find(|(phrase, _)| words.contains(phrase)) {
        Some((_, reason)) => Verdict::Permanent(*reason),
        None => doubtful(words),
    }
}

/// `CreateContainerError`, `RunContainerError`: the runtime could not create or start the
/// container (containerd's CRI plugin, runc).
fn create(words: &str) -> Verdict {
    if let Some(why) = transient(words) {
        return Verdict::Transient(why);
    }
    // runc's `chdir to cwd (%q) set in config.json failed: %w` (libcontainer/init_linux.go),
    // with ENOTDIR.
    // runc's MkdirAll of the cwd inside the container (libcontainer/rootfs_linux.go:158), which
    // comes first on runc 1.1: `error during container init: mkdir /etc/hostname: not a
    // directory`, unwrapped (a mount's own mkdir is wrapped in `error mounting ...`).
    let mkdir_cwd =
        words.contains("error during container init: mkdir ") && !words.contains("error mounting");
    if (words.contains("chdir to cwd") || mkdir_cwd) && words.contains(": not a directory") {
        return Verdict::Permanent(Reason::WorkingDirNotADirectory);
    }
    // CRI-O makes the working directory itself before runc runs (`setupWorkingDirectory` in
    // `server/container_create.go`), and the kubelet gets Go's error bare: `mkdir
    // <rootfs>/<cwd>: not a directory`, nothing before it.
    if words.starts_with("mkdir ") && words.trim_end().ends_with(": not a directory") {
        return Verdict::Permanent(Reason::WorkingDirNotADirectory);
    }
    // runc's exec.LookPath of the command (libcontainer/standard_init_linux.go): Go's
    // `exec: "x": executable file not found in $PATH`, or for a path,
    // `exec: "/x": stat /x: no such file or directory`.
    // CRI-O passes on runc's log line, where the quotes are escaped (`exec: \"/x\": stat /x`).
    if words.contains("executable file not found in $PATH")
        || ((words.contains("exec: \"") || words.contains("exec: \\\""))
            && words.contains("no such file or directory"))
    {
        return Verdict::Permanent(Reason::CommandNotFound);
    }
    // containerd's CRI spec options (pkg/cri/opts/spec.go): no command in the spec or image.
    if words.contains("no command specified") {
        return Verdict::Permanent(Reason::NoCommand);
    }
    doubtful(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of the kubelet's words: `tests/fixtures/kubelet-messages.tsv`.
    const MESSAGES: &str = include_str!("../../../tests/fixtures/kubelet-messages.tsv");

    /// `permanent:<reason word>` or `transient:<cause word>`.
    fn expected(word: &str) -> Verdict {
        if let Some(r) = word.strip_prefix("permanent:") {
            let reason = Reason::ALL.iter().find(|x| x.about().word == r);
            return Verdict::Permanent(*reason.unwrap_or_else(|| panic!("no reason {r}")));
        }
        let t = word.strip_prefix("transient:").unwrap_or(word);
        let all = [
            Transient::Timeout,
            Transient::Connect,
            Transient::Dns,
            Transient::ServerError,
            Transient::RateLimited,
            Transient::CacheSync,
            Transient::Doubtful,
            Transient::Unknown,
        ];
        Verdict::Transient(*all.iter().find(|x| x.as_str() == t).expect(t))
    }

    #[test]
    fn the_kubelets_words_table() {
        let mut rows = 0;
        for (n, line) in MESSAGES.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            assert!(fields.len() >= 4, "line {}: {line:?}", n + 1);
            let (reason, want, message, source) = (fields[0], fields[1], fields[2], fields[3]);
            assert!(!source.trim().is_empty(), "line {}: no source", n + 1);
            // `\n` in the file stands for a newline of the real message.
            let message = message.replace("\\n", "\n");
            let got = classify(reason, &message, None);
            assert_eq!(
                got,
                Some(expected(want)),
                "line {} ({source}): {reason}: {message}",
                n + 1
            );
            rows += 1;
        }
        assert!(rows >= 40, "{rows} rows");
    }

    /// The real kubelet's words, recorded on the test cluster from each runtime
    /// (tests/cluster/kubelet_words.rs writes one file per runtime and version), with the
    /// verdict the classifier gives each case: every case of each file is here, and every case
    /// here is in each file. A runtime whose words lead to another verdict for a case says so
    /// in [`RECORDED_DIFFERENT`].
    const RECORDED_DIR: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/kubelet-recorded"
    );
    const RECORDED_VERDICTS: &[(&str, &str)] = &[
        ("tag-missing", "permanent:manifest_missing"),
        ("digest-missing", "permanent:manifest_missing"),
        ("repository-missing", "permanent:manifest_missing"),
        ("no-credentials", "permanent:insufficient_scope"),
        ("wrong-password", "permanent:credentials_rejected"),
        ("no-credentials-basic", "permanent:pull_unauthorized"),
        ("wrong-password-basic", "permanent:pull_unauthorized"),
        ("denied", "permanent:denied"),
        ("rate-limited", "transient:rate_limited"),
        ("server-error", "transient:server_error"),
        ("connection-refused", "transient:connect"),
        ("no-such-host", "transient:dns"),
        ("invalid-name", "permanent:invalid_reference"),
        ("never-pull-absent", "permanent:not_on_node"),
        ("other-platform", "permanent:no_matching_platform"),
        ("missing-secret", "permanent:secret_missing"),
        ("missing-config-map", "permanent:config_map_missing"),
        ("missing-secret-key", "permanent:key_missing"),
        ("missing-config-map-key", "permanent:key_missing"),
        (
            "working-dir-is-a-file",
            "permanent:working_dir_not_a_directory",
        ),
        ("command-not-found", "permanent:command_not_found"),
        ("runs-as-root", "permanent:runs_as_root"),
        ("non-numeric-user", "permanent:non_numeric_user"),
        ("no-command", "permanent:no_command"),
        // restartPolicy Never: the container ends (StartError) and so does the pod; no container
        // waits, and the watcher has nothing to do.
        ("working-dir-is-a-file-never", "-"),
        ("command-not-found-never", "-"),
    ];
    /// (file stem, case, verdict): where a runtime's words give another verdict than
    /// [`RECORDED_VERDICTS`], with why.
    const RECORDED_DIFFERENT: &[(&str, &str, &str)] = &[
        // CRI-O fails these at CreateContainer, before any start (the working directory is made
        // by CRI-O itself, and runc 1.1's `create` looks the command up): the container waits
        // in CreateContainerError under restartPolicy Never too, for ever, where containerd's
        // ends in StartError and the pod fails.
        (
            "cri-o-1.34.0",
            "working-dir-is-a-file-never",
            "permanent:working_dir_not_a_directory",
        ),
        (
            "cri-o-1.34.0",
            "command-not-found-never",
            "permanent:command_not_found",
        ),
    ];

    /// Every recorded table: (file stem, its text).
    fn recorded_tables() -> Vec<(String, String)> {
        let mut tables: Vec<(String, String)> = std::fs::read_dir(RECORDED_DIR)
            .expect(RECORDED_DIR)
            .map(|e| e.expect(RECORDED_DIR).path())
            .filter(|p| p.extension().is_some_and(|x| x == "tsv"))
            .map(|p| {
                let stem = p
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                (stem, std::fs::read_to_string(&p).expect("a recorded table"))
            })
            .collect();
        tables.sort();
        tables
    }

    #[test]
    fn every_permanent_verdict_is_a_reason_grace_for_takes() {
        let words: Vec<&str> = REASONS.iter().map(|r| r.about().word).collect();
        for (_, verdict) in RECORDED_VERDICTS {
            if let Some(w) = verdict.strip_prefix("permanent:") {
                assert!(words.contains(&w), "{w} is not in REASONS");
            }
        }
        for line in MESSAGES.lines().filter(|l| l.contains("permanent:")) {
            let w = line
                .split('\t')
                .find_map(|f| f.strip_prefix("permanent:"))
                .unwrap_or_default();
            if w.is_empty() || w.contains(' ') {
                continue;
            }
            assert!(words.contains(&w), "{w} is not in REASONS");
        }
    }

    #[test]
    fn the_real_kubelets_words_recorded_on_the_test_cluster() {
        let tables = recorded_tables();
        assert!(
            tables
                .iter()
                .any(|(stem, _)| stem.starts_with("containerd-1.")),
            "no table of containerd 1.x in {RECORDED_DIR}"
        );
        let mut failures = Vec::new();
        for (stem, text) in &tables {
            failures.extend(replay(stem, text));
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// One runtime's recorded table, replayed: what differs from the verdicts expected.
    fn replay(stem: &str, text: &str) -> Vec<String> {
        // The table's escapes (`\t`, `\n`, `\\`), read left to right.
        let unescape = |s: &str| {
            let mut out = String::with_capacity(s.len());
            let mut chars = s.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => out.push('\\'),
                }
            }
            out
        };
        let mut header: Vec<&str> = Vec::new();
        let mut seen = Vec::new();
        let mut failures = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let fields: Vec<&str> = line.split('\t').collect();
            if header.is_empty() {
                header = fields;
                continue;
            }
            let field = |name: &str| {
                let i = header.iter().position(|h| *h == name).expect(name);
                fields.get(i).copied().unwrap_or("-")
            };
            let case = field("case");
            let different = RECORDED_DIFFERENT
                .iter()
                .find(|(s, c, _)| *s == stem && *c == case)
                .map(|(_, _, v)| *v);
            let Some(want) = different.or_else(|| {
                RECORDED_VERDICTS
                    .iter()
                    .find(|(c, _)| *c == case)
                    .map(|(_, v)| *v)
            }) else {
                failures.push(format!("{stem}: case {case} has no verdict here"));
                continue;
            };
            seen.push(case);
            let (state, reason, message) =
                (field("state"), field("reason"), unescape(field("message")));
            let want = (want != "-").then(|| expected(want));
            let mut verdicts = vec![(
                if state == "waiting" {
                    classify(reason, &message, None)
                } else {
                    None
                },
                want,
            )];
            // The back-off after it: a pull's gives the same verdict (its words, or the pull's);
            // a crash loop's (a container that started and failed) is not the watcher's.
            let backoff_reason = field("backoff_reason");
            if backoff_reason != "-" {
                let backoff = unescape(field("backoff_message"));
                let got = classify(backoff_reason, &backoff, Some(&message));
                let want = (backoff_reason == IMAGE_PULL_BACK_OFF)
                    .then_some(want)
                    .flatten();
                verdicts.push((got, want));
            }
            for (got, want) in verdicts {
                if got != want {
                    failures.push(format!(
                        "{stem}: {case}: {reason}: {got:?}, want {want:?}: {message}"
                    ));
                }
            }
        }
        for (case, _) in RECORDED_VERDICTS {
            if !seen.contains(case) {
                failures.push(format!("{stem}: case {case} is not in the recorded table"));
            }
        }
        failures
    }

    #[test]
    fn back_off_without_the_pulls_words_takes_the_last_pull_error() {
        let bare = "Back-off pulling image \"127.0.0.1:5000/app:v9\"";
        assert_eq!(
            classify(IMAGE_PULL_BACK_OFF, bare, None),
            Some(Verdict::Transient(Transient::Unknown))
        );
        let pulled = "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/app:v9\": failed to resolve reference \"127.0.0.1:5000/app:v9\": 127.0.0.1:5000/app:v9: not found";
        assert_eq!(
            classify(IMAGE_PULL_BACK_OFF, bare, Some(pulled)),
            Some(Verdict::Permanent(Reason::ManifestMissing))
        );
        let event = format!("Failed to pull image \"127.0.0.1:5000/app:v9\": {pulled}");
        assert_eq!(event_pull_error(&event), Some(pulled));
        assert_eq!(event_pull_error("Error: ErrImagePull"), None);
    }

    #[test]
    fn image_names_cannot_make_words() {
        // A tag or repository holding a phrase's letters, without its spaces or quotes.
        let m = "rpc error: code = NotFound desc = failed to pull and unpack image \"r/timeout-no-such-host:connection-refused\": failed to resolve reference \"r/timeout-no-such-host:connection-refused\": r/timeout-no-such-host:connection-refused: not found";
        assert_eq!(
            classify(ERR_IMAGE_PULL, m, None),
            Some(Verdict::Permanent(Reason::ManifestMissing))
        );
        assert_eq!(classify("ContainerCreating", "", None), None);
        assert_eq!(classify("CrashLoopBackOff", "back-off 10s", None), None);
    }
}
