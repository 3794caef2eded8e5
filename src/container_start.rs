//! Will each container *start* once its image is pulled? The kubelet refuses some containers
//! after a successful pull and retries for ever (`CreateContainerConfigError`,
//! `CreateContainerError`), which never fails the pod, exactly like `ImagePullBackOff`. The
//! causes below are known before the pod's containers start, from the pod spec and the image's
//! config blob, so they are predicted here with the kubelet's and the runtimes' own rules:
//!
//! - **runAsNonRoot** ([`verify_run_as_non_root`]): the kubelet's `verifyRunAsNonRoot`
//!   (`pkg/kubelet/kuberuntime/security_context_others.go`), called from
//!   `generateContainerConfig` (`kuberuntime_container.go`) before the runtime is asked to create
//!   the container; its failure is `CreateContainerConfigError`. With `runAsNonRoot: true`,
//!   `runAsUser: 0` is refused without looking at the image; without `runAsUser`, the image's
//!   user decides: no user or uid 0 is root, a user name cannot be verified, a uid outside
//!   0–2147483647 is invalid.
//! - **The image's user** ([`image_user`]): the runtime's `getUserFromImage` (containerd's CRI
//!   plugin and CRI-O alike: the part of the config's `User` before `:`, a uid when it parses as a
//!   64-bit integer, else a user name) and the kubelet's `getImageUser` (neither set: uid 0).
//! - **The command** ([`no_command`]): the runtime's command assembly, containerd's CRI
//!   `WithProcessArgs` (`internal/cri/opts/spec_opts.go`) and CRI-O's `buildOCIProcessArgs`: with
//!   no `command` in the pod spec, the image's `Entrypoint` is the command; with no `args`
//!   either, the image's `Cmd` is the arguments; nothing at all is "no command specified", a
//!   `CreateContainerError`. containerd also reads an `Entrypoint` of exactly `[""]` as none
//!   (CRI-O would run `""` and fail at start instead: the container does not run either way).
//!
//! The facts about a container ([`ContainerFacts`]) come from the pod spec, with the effective
//! security context (container fields over pod fields, [`SecurityFacts::effective`], as the
//! kubelet's `DetermineEffectiveSecurityContext`). `pullcheck inject` hands them to the init
//! container in `PULLCHECK_CONTAINERS` as compact JSON ([`ContainerFacts::to_env`],
//! [`ContainerFacts::parse_list`]).
//!
//! Everything here is pure: the registry reads the config ([`RunConfig`]) only when
//! [`ContainerFacts::needs_image_config`] says a container's spec leaves the answer to the image.

use crate::report::{ContainerStart, Reason, StartReason, StartStatus};
use serde::{Deserialize, Serialize};

/// The largest user id the kubelet accepts (`validation.IsValidUserID`: 0 to `math.MaxInt32`).
pub(crate) const MAX_USER_ID: i64 = i32::MAX as i64;

/// The most containers `PULLCHECK_CONTAINERS` may describe.
pub const MAX_CONTAINERS: usize = 10_000;
/// The most bytes of JSON `PULLCHECK_CONTAINERS` may hold (an environment variable; a pod with
/// a thousand containers needs about 150 KiB).
pub const MAX_CONTAINERS_JSON: usize = 64 * 1024;

/// Whether to predict that containers will not start (`--start-check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartCheck {
    /// Predict from the pod spec, and read an image's config when a container's spec leaves
    /// the answer to the image (a manifest and a blob `GET`).
    #[default]
    Auto,
    /// No prediction, no extra request.
    Off,
}

/// Which list of the pod spec a container is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerKind {
    /// `initContainers` (without `restartPolicy: Always`).
    Init,
    /// `initContainers` with `restartPolicy: Always` (a native sidecar).
    Sidecar,
    /// `containers`.
    App,
}

/// The two security-context fields the rules read; either may be unset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SecurityFacts {
    /// `runAsNonRoot`.
    pub run_as_non_root: Option<bool>,
    /// `runAsUser`.
    pub run_as_user: Option<i64>,
}

impl SecurityFacts {
    /// The effective values for a container: each field of the container's `securityContext`
    /// over the same field of the pod's (field by field, as the kubelet's
    /// `DetermineEffectiveSecurityContext` does). Pass `SecurityFacts::default()` for a context
    /// that is absent.
    pub(crate) fn effective(pod: &SecurityFacts, container: &SecurityFacts) -> SecurityFacts {
        SecurityFacts {
            run_as_non_root: container.run_as_non_root.or(pod.run_as_non_root),
            run_as_user: container.run_as_user.or(pod.run_as_user),
        }
    }
}

/// What the pod spec says about one container, as far as the start rules need it.
///
/// Serialised (in `PULLCHECK_CONTAINERS`) as `{"name":"app","image":"nginx:1.27","kind":"app",
/// "command":false,"args":true,"runAsNonRoot":true,"runAsUser":1000}`: `command` and `args` say
/// whether the spec sets them (a non-empty list); `kind`, `runAsNonRoot` and `runAsUser` are
/// left out when unset. Unknown keys are ignored, so that a newer `inject` can add some.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerFacts {
    /// The container's name.
    pub(crate) name: String,
    /// Its image, as written in the pod spec.
    pub(crate) image: String,
    /// Which list it is in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<ContainerKind>,
    /// The spec sets a non-empty `command`.
    #[serde(rename = "command")]
    pub(crate) has_command: bool,
    /// The spec sets non-empty `args`.
    #[serde(rename = "args")]
    pub(crate) has_args: bool,
    /// The effective `runAsNonRoot` (container over pod).
    #[serde(
        rename = "runAsNonRoot",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) run_as_non_root: Option<bool>,
    /// The effective `runAsUser` (container over pod).
    #[serde(rename = "runAsUser", default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_as_user: Option<i64>,
}

/// What the rules read from an image's config blob (`config.User`, `config.Entrypoint`,
/// `config.Cmd`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunConfig {
    /// `User`, as written (`""`, `"0:0"`, `"nginx"`, `"1000:1000"`).
    pub(crate) user: String,
    /// `Entrypoint` (absent or `null`: empty).
    pub(crate) entrypoint: Vec<String>,
    /// `Cmd` (absent or `null`: empty).
    pub(crate) cmd: Vec<String>,
}

/// The most characters of `User` and of each `Entrypoint` and `Cmd` item kept, and the most
/// items kept: a config may be 1 MiB, and a run may hold thousands.
const KEEP_CHARS: usize = 256;
const KEEP_ITEMS: usize = 4;

impl RunConfig {
    /// A config as the rules need it, its strings bounded without changing any verdict: a
    /// numeric user keeps its value, a name stays a name; `Entrypoint` and `Cmd` keep whether
    /// they are empty or exactly `[""]`.
    pub(crate) fn new(user: String, entrypoint: Vec<String>, cmd: Vec<String>) -> RunConfig {
        let user = if user.chars().count() <= KEEP_CHARS {
            user
        } else {
            match image_user(&user) {
                (Some(uid), _) => uid.to_string(),
                // Cut, then marked: a cut name must not turn into a number.
                (None, _) => format!("{}…", user.chars().take(KEEP_CHARS).collect::<String>()),
            }
        };
        let bound = |items: Vec<String>| -> Vec<String> {
            items
                .into_iter()
                .take(KEEP_ITEMS)
                .map(|i| i.chars().take(KEEP_CHARS).collect())
                .collect()
        };
        RunConfig {
            user,
            entrypoint: bound(entrypoint),
            cmd: bound(cmd),
        }
    }
}

/// Why a container will not start: one of the rules above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `runAsNonRoot: true` with `runAsUser: 0`.
    RunAsUserZero,
    /// `runAsNonRoot: true`, no `runAsUser`, and the image runs as root (no user, or uid 0).
    RunsAsRoot,
    /// `runAsNonRoot: true`, no `runAsUser`, and the image names its user (the name).
    NonNumericUser,
    /// `runAsNonRoot: true`, no `runAsUser`, and the image's uid is negative or above
    /// 2147483647.
    InvalidUserId,
    /// Neither the spec nor the image gives a command.
    NoCommand,
}

impl Refusal {
    /// The image's reason (its word and its hint are in [`Reason::about`]).
    pub(crate) fn reason(self) -> Reason {
        match self {
            Refusal::RunAsUserZero => Reason::RunAsUserZero,
            Refusal::RunsAsRoot => Reason::RunsAsRoot,
            Refusal::NonNumericUser => Reason::NonNumericUser,
            Refusal::InvalidUserId => Reason::InvalidUserId,
            Refusal::NoCommand => Reason::NoCommand,
        }
    }

    /// What to change.
    pub(crate) fn hint(self) -> &'static str {
        self.reason().hint()
    }
}

/// The user an image runs as, as the runtime reports it (`getUserFromImage`) and the kubelet
/// reads it (`getImageUser`): `(Some(uid), "")` or `(None, name)`; a config without `User`
/// runs as uid 0.
pub(crate) fn image_user(config_user: &str) -> (Option<i64>, String) {
    if config_user.is_empty() {
        return (Some(0), String::new());
    }
    // The part before `:` (`user:group`); Go's `strings.Split(user, ":")[0]`.
    let user = config_user.split(':').next().unwrap_or_default();
    // Go's `strconv.ParseInt(user, 10, 64)`: an optional sign and decimal digits, no spaces,
    // in range; Rust's `i64::from_str` accepts exactly the same.
    match user.parse::<i64>() {
        Ok(uid) => (Some(uid), String::new()),
        // `"nginx"`, or `":0"` whose user part is empty: a name, as the runtime reports it (an
        // empty name then counts as neither, and the kubelet takes uid 0).
        Err(_) if user.is_empty() => (Some(0), String::new()),
        Err(_) => (None, user.to_string()),
    }
}

/// The kubelet's `verifyRunAsNonRoot`, over the effective security context and the image's
/// user as [`image_user`] gives it. `None` when the container may start.
pub(crate) fn verify_run_as_non_root(
    sc: &SecurityFacts,
    uid: Option<i64>,
    username: &str,
) -> Option<Refusal> {
    if sc.run_as_non_root != Some(true) {
        return None;
    }
    if let Some(user) = sc.run_as_user {
        return (user == 0).then_some(Refusal::RunAsUserZero);
    }
    match uid {
        None if !username.is_empty() => Some(Refusal::NonNumericUser),
        Some(0) => Some(Refusal::RunsAsRoot),
        Some(uid) if !(0..=MAX_USER_ID).contains(&uid) => Some(Refusal::InvalidUserId),
        _ => None,
    }
}

/// The runtime's command assembly: `true` when neither the spec nor the image gives a command
/// ("no command specified").
pub(crate) fn no_command(has_command: bool, has_args: bool, config: &RunConfig) -> bool {
    if has_command || has_args {
        return false;
    }
    // containerd: an Entrypoint of exactly [""] is no entrypoint (`docker run --entrypoint ""`).
    let entrypoint_empty = config.entrypoint.is_empty()
        || (config.entrypoint.len() == 1
            && config.entrypoint.first().is_some_and(String::is_empty));
    entrypoint_empty && config.cmd.is_empty()
}

/// Why a config was not read, for containers whose answer depends on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotRead {
    /// `--start-check off`.
    Off,
    /// The image cannot be pulled (its own status says why).
    PullFailed,
    /// The config is for another OS (`windows`): out of scope.
    NotLinux(String),
    /// The manifest or config could not be read (what went wrong).
    Failed(String),
}

impl ContainerFacts {
    /// The effective security values of a container (container over pod), see
    /// [`SecurityFacts::effective`].
    #[cfg(test)]
    pub(crate) fn effective(pod: &SecurityFacts, container: &SecurityFacts) -> SecurityFacts {
        SecurityFacts::effective(pod, container)
    }

    /// The facts of one container of a pod spec, with the effective security values computed
    /// from the pod's and the container's `securityContext` (pass `SecurityFacts::default()`
    /// for one that is absent). `has_command` and `has_args`: the container sets a non-empty
    /// `command` / `args`.
    pub fn from_spec(
        name: &str,
        image: &str,
        kind: Option<ContainerKind>,
        has_command: bool,
        has_args: bool,
        pod: &SecurityFacts,
        container: &SecurityFacts,
    ) -> ContainerFacts {
        let effective = SecurityFacts::effective(pod, container);
        ContainerFacts {
            name: name.to_string(),
            image: image.to_string(),
            kind,
            has_command,
            has_args,
            run_as_non_root: effective.run_as_non_root,
            run_as_user: effective.run_as_user,
        }
    }

    /// The security facts of this container.
    pub(crate) fn security(&self) -> SecurityFacts {
        SecurityFacts {
            run_as_non_root: self.run_as_non_root,
            run_as_user: self.run_as_user,
        }
    }

    /// Whether a rule needs the image's config for this container: `runAsNonRoot: true`
    /// without `runAsUser` (the image's user decides), or neither `command` nor `args` (the
    /// image's `Entrypoint` and `Cmd` decide). Otherwise the spec alone settles it, and no
    /// request is sent for it.
    pub(crate) fn needs_image_config(&self) -> bool {
        let user_from_image = self.run_as_non_root == Some(true) && self.run_as_user.is_none();
        let command_from_image = !self.has_command && !self.has_args;
        user_from_image || command_from_image
    }

    /// The refusal the spec alone decides (`runAsNonRoot: true` with `runAsUser: 0`).
    pub(crate) fn refusal_without_image(&self) -> Option<Refusal> {
        match self.security() {
            sc @ SecurityFacts {
                run_as_user: Some(_),
                ..
            } => verify_run_as_non_root(&sc, None, ""),
            _ => None,
        }
    }

    /// The verdict for this container: with the image's config when it was read, or why not.
    /// The kubelet checks `runAsNonRoot` before the runtime assembles the command, so the first
    /// refusal is the one reported.
    pub(crate) fn evaluate(&self, config: Result<&RunConfig, &NotRead>) -> ContainerStart {
        if let Err(NotRead::Off) = config {
            return self.start(
                StartStatus::Unknown,
                StartReason::StartCheckOff,
                "not predicted (--start-check off)".to_string(),
            );
        }
        let sc = self.security();
        if let Some(refusal) = self.refusal_without_image() {
            return self.refused(refusal, None);
        }
        if !self.needs_image_config() {
            return self.start(
                StartStatus::Ok,
                StartReason::Spec,
                "the pod spec alone lets it start (runAsUser set or runAsNonRoot not required; command or args set)".to_string(),
            );
        }
        let config = match config {
            Ok(c) => c,
            Err(why) => {
                let (reason, message) = match why {
                    NotRead::Off => (
                        StartReason::StartCheckOff,
                        "not predicted (--start-check off)".to_string(),
                    ),
                    NotRead::PullFailed => (
                        StartReason::NotPulled,
                        "not predicted: the image cannot be pulled".to_string(),
                    ),
                    NotRead::NotLinux(os) => (
                        StartReason::NotLinux,
                        format!("not predicted: the image's config is for {}", printable(os)),
                    ),
                    NotRead::Failed(detail) => (
                        StartReason::ConfigNotRead,
                        format!("not predicted: the image's config could not be read ({detail})"),
                    ),
                };
                return self.start(StartStatus::Unknown, reason, message);
            }
        };
        let (uid, username) = image_user(&config.user);
        if let Some(refusal) = verify_run_as_non_root(&sc, uid, &username) {
            return self.refused(refusal, Some(config));
        }
        if no_command(self.has_command, self.has_args, config) {
            return self.refused(Refusal::NoCommand, Some(config));
        }
        self.start(
            StartStatus::Ok,
            StartReason::ImageConfig,
            format!(
                "the image's config lets it start (User {}, Entrypoint {}, Cmd {})",
                quoted(&config.user),
                list(&config.entrypoint),
                list(&config.cmd)
            ),
        )
    }

    fn start(&self, start: StartStatus, reason: StartReason, message: String) -> ContainerStart {
        ContainerStart {
            name: self.name.clone(),
            start,
            reason,
            message,
            hint: String::new(),
        }
    }

    fn refused(&self, refusal: Refusal, config: Option<&RunConfig>) -> ContainerStart {
        let name = printable(&self.name);
        let user = config.map(|c| quoted(&c.user)).unwrap_or_default();
        let message = match refusal {
            Refusal::RunAsUserZero => format!(
                "container {name}: runAsNonRoot is true and runAsUser is 0: \"container's runAsUser breaks non-root policy\" (CreateContainerConfigError)"
            ),
            Refusal::RunsAsRoot => format!(
                "container {name}: runAsNonRoot is true, runAsUser is not set and the image's User is {user}: \"container has runAsNonRoot and image will run as root\" (CreateContainerConfigError)"
            ),
            Refusal::NonNumericUser => {
                let (_, username) = image_user(config.map(|c| c.user.as_str()).unwrap_or(""));
                format!(
                    "container {name}: runAsNonRoot is true, runAsUser is not set and the image's User is {user}: \"container has runAsNonRoot and image has non-numeric user ({}), cannot verify user is non-root\" (CreateContainerConfigError)",
                    printable_bare(&username)
                )
            }
            Refusal::InvalidUserId => format!(
                "container {name}: runAsNonRoot is true, runAsUser is not set and the image's User is {user}: \"container has runAsNonRoot and image has an invalid user id\" (must be 0-{MAX_USER_ID}; CreateContainerConfigError)"
            ),
            Refusal::NoCommand => format!(
                "container {name}: neither command nor args in the pod spec, and the image's config has neither Entrypoint nor Cmd: \"no command specified\" (CreateContainerError)"
            ),
        };
        ContainerStart {
            name: self.name.clone(),
            start: StartStatus::WontStart,
            reason: StartReason::WontStart(refusal.reason()),
            message,
            hint: refusal.hint().to_string(),
        }
    }

    /// The compact JSON list for `PULLCHECK_CONTAINERS`.
    pub fn to_env(list: &[ContainerFacts]) -> String {
        // Plain strings, booleans and numbers always serialise.
        serde_json::to_string(list).unwrap_or_else(|_| "[]".to_string())
    }

    /// Reads `PULLCHECK_CONTAINERS` / `--containers`: a JSON list of objects, at most
    /// [`MAX_CONTAINERS_JSON`] bytes and [`MAX_CONTAINERS`] entries, each with a non-empty
    /// `name` and `image`.
    pub fn parse_list(text: &str) -> Result<Vec<ContainerFacts>, ListError> {
        if text.len() > MAX_CONTAINERS_JSON {
            return Err(ListError::TooLarge(text.len()));
        }
        let list: Vec<ContainerFacts> = serde_json::from_str(text).map_err(ListError::Json)?;
        if list.len() > MAX_CONTAINERS {
            return Err(ListError::TooMany(list.len()));
        }
        for (i, c) in list.iter().enumerate() {
            if c.name.trim().is_empty() {
                return Err(ListError::NoName(i));
            }
            if c.image.trim().is_empty() {
                return Err(ListError::NoImage(i, printable(&c.name)));
            }
        }
        Ok(list)
    }
}

/// Why [`ContainerFacts::parse_list`] refuses a list.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// Longer than [`MAX_CONTAINERS_JSON`] (its length in bytes).
    #[error("{} bytes; at most {} KiB are read", .0, MAX_CONTAINERS_JSON / 1024)]
    TooLarge(usize),
    /// Not a JSON list of container objects.
    #[error(
        "not a valid JSON list of containers ({0}); expected e.g. [{{\"name\":\"app\",\"image\":\"nginx:1.27\",\"command\":false,\"args\":false,\"runAsNonRoot\":true}}]"
    )]
    Json(serde_json::Error),
    /// More than [`MAX_CONTAINERS`] entries (how many).
    #[error("{0} containers; at most {MAX_CONTAINERS} are read")]
    TooMany(usize),
    /// The entry (its index) has an empty `name`.
    #[error("entry {0}: \"name\" is empty")]
    NoName(usize),
    /// The entry (its index and name, quoted) has an empty `image`.
    #[error("entry {0} ({1}): \"image\" is empty")]
    NoImage(usize, String),
}

/// A string from outside, quoted with its control characters escaped, at most 100 characters.
fn printable(s: &str) -> String {
    format!("\"{}\"", printable_bare(s))
}

fn printable_bare(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(100)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if s.chars().count() > 100 {
        out.push('…');
    }
    out
}

fn quoted(s: &str) -> String {
    if s.is_empty() {
        "empty".to_string()
    } else {
        printable(s)
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        return "none".to_string();
    }
    let shown: Vec<String> = items.iter().take(4).map(|s| printable(s)).collect();
    let more = if items.len() > 4 { ", …" } else { "" };
    format!("[{}{more}]", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(non_root: Option<bool>, user: Option<i64>) -> SecurityFacts {
        SecurityFacts {
            run_as_non_root: non_root,
            run_as_user: user,
        }
    }

    /// The kubelet's own `TestVerifyRunAsNonRoot` (`security_context_others_test.go`), case by
    /// case: (description, security context, image uid, image user name, fails).
    #[test]
    fn kubelet_verify_run_as_non_root_cases() {
        let root = Some(0);
        let any_user = Some(1000);
        let cases: &[(&str, SecurityFacts, Option<i64>, &str, bool)] = &[
            (
                "Pass if SecurityContext is not set",
                sc(None, None),
                root,
                "",
                false,
            ),
            (
                "Pass if RunAsUser is non-root and RunAsNonRoot is true",
                sc(Some(true), any_user),
                None,
                "",
                false,
            ),
            (
                "Pass if RunAsNonRoot is not set",
                sc(None, root),
                root,
                "",
                false,
            ),
            (
                "Pass if RunAsNonRoot is false (image user is root)",
                sc(Some(false), None),
                root,
                "",
                false,
            ),
            (
                "Pass if RunAsNonRoot is false (RunAsUser is root)",
                sc(Some(false), root),
                root,
                "",
                false,
            ),
            (
                "Fail if container's RunAsUser is root and RunAsNonRoot is true",
                sc(Some(true), root),
                root,
                "",
                true,
            ),
            (
                "Fail if image's user is root and RunAsNonRoot is true",
                sc(Some(true), None),
                root,
                "",
                true,
            ),
            (
                "Fail if image's username is set and RunAsNonRoot is true",
                sc(Some(true), None),
                None,
                "test",
                true,
            ),
            (
                "Pass if image's user is non-root and RunAsNonRoot is true",
                sc(Some(true), None),
                any_user,
                "",
                false,
            ),
            (
                "Pass if container's user and image's user aren't set and RunAsNonRoot is true",
                sc(Some(true), None),
                None,
                "",
                false,
            ),
            (
                "Fail if image's user is invalid and RunAsNonRoot is true",
                sc(Some(true), None),
                Some(2_147_483_648),
                "",
                true,
            ),
            (
                "Fail if image's user is negative and RunAsNonRoot is true",
                sc(Some(true), None),
                Some(-1000),
                "",
                true,
            ),
            (
                "Pass if image's user is math.MaxInt32 and RunAsNonRoot is true",
                sc(Some(true), None),
                Some(i64::from(i32::MAX)),
                "",
                false,
            ),
        ];
        for (desc, sc, uid, username, fail) in cases {
            let got = verify_run_as_non_root(sc, *uid, username);
            assert_eq!(got.is_some(), *fail, "{desc}: {got:?}");
        }
    }

    #[test]
    fn kubelet_reasons_for_each_failing_case() {
        let cases: &[(&str, SecurityFacts, Option<i64>, &str, Refusal)] = &[
            (
                "runAsUser 0",
                sc(Some(true), Some(0)),
                Some(1000),
                "",
                Refusal::RunAsUserZero,
            ),
            (
                "image uid 0",
                sc(Some(true), None),
                Some(0),
                "",
                Refusal::RunsAsRoot,
            ),
            (
                "image user name",
                sc(Some(true), None),
                None,
                "nginx",
                Refusal::NonNumericUser,
            ),
            (
                "image uid too large",
                sc(Some(true), None),
                Some(2_147_483_648),
                "",
                Refusal::InvalidUserId,
            ),
        ];
        for (name, sc, uid, username, want) in cases {
            assert_eq!(
                verify_run_as_non_root(sc, *uid, username),
                Some(*want),
                "{name}"
            );
        }
    }

    /// The runtime's `getUserFromImage` and the kubelet's `getImageUser`, over config `User`s.
    #[test]
    fn image_users() {
        let cases: &[(&str, Option<i64>, &str)] = &[
            ("", Some(0), ""),
            ("0", Some(0), ""),
            ("0:0", Some(0), ""),
            ("root", None, "root"),
            ("root:root", None, "root"),
            ("nginx", None, "nginx"),
            ("1000", Some(1000), ""),
            ("1000:1000", Some(1000), ""),
            ("1000:nogroup", Some(1000), ""),
            ("+7", Some(7), ""),
            ("-1", Some(-1), ""),
            (" 1000", None, " 1000"),
            ("99999999999999999999", None, "99999999999999999999"),
            (":1000", Some(0), ""),
        ];
        for (user, uid, name) in cases {
            assert_eq!(image_user(user), (*uid, name.to_string()), "{user:?}");
        }
    }

    /// containerd's `WithProcessArgs` (and CRI-O's `buildOCIProcessArgs`), over spec and image.
    #[test]
    fn command_assembly() {
        let cfg = |entrypoint: &[&str], cmd: &[&str]| RunConfig {
            user: String::new(),
            entrypoint: entrypoint.iter().map(|s| s.to_string()).collect(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
        };
        let cases: &[(&str, bool, bool, RunConfig, bool)] = &[
            ("nothing anywhere", false, false, cfg(&[], &[]), true),
            ("image Cmd", false, false, cfg(&[], &["/app"]), false),
            ("image Entrypoint", false, false, cfg(&["/app"], &[]), false),
            (
                "Entrypoint [\"\"] is none",
                false,
                false,
                cfg(&[""], &[]),
                true,
            ),
            (
                "Entrypoint [\"\"] with Cmd",
                false,
                false,
                cfg(&[""], &["x"]),
                false,
            ),
            ("spec command only", true, false, cfg(&[], &[]), false),
            ("spec args only", false, true, cfg(&[], &[]), false),
        ];
        for (name, command, args, config, want) in cases {
            assert_eq!(no_command(*command, *args, config), *want, "{name}");
        }
    }

    #[test]
    fn bounded_configs_keep_their_verdicts() {
        let long_uid = format!("{}1:0", "0".repeat(1000));
        let digits_then_name = format!("{}x", "1".repeat(1000));
        // (case, User, uid, a name)
        let cases: &[(&str, &str, Option<i64>, bool)] = &[
            ("short name", "nginx", None, true),
            ("long uid with leading zeros", &long_uid, Some(1), false),
            (
                "long name starting with digits",
                &digits_then_name,
                None,
                true,
            ),
        ];
        for (name, user, uid, named) in cases {
            let c = RunConfig::new(user.to_string(), vec![], vec![]);
            assert!(c.user.chars().count() <= KEEP_CHARS + 1, "{name}");
            let (got_uid, got_name) = image_user(&c.user);
            assert_eq!((got_uid, !got_name.is_empty()), (*uid, *named), "{name}");
        }
        let many: Vec<String> = (0..100).map(|i| "x".repeat(i * 100)).collect();
        let c = RunConfig::new(String::new(), many, vec![String::new()]);
        assert_eq!(c.entrypoint.len(), KEEP_ITEMS);
        assert!(c.entrypoint.iter().all(|i| i.len() <= KEEP_CHARS));
        assert_eq!(c.cmd, [""]);
        let empty_entrypoint = RunConfig::new(String::new(), vec![String::new()], vec![]);
        assert!(no_command(false, false, &empty_entrypoint));
    }

    #[test]
    fn effective_values_take_the_container_over_the_pod_field_by_field() {
        let cases: &[(&str, SecurityFacts, SecurityFacts, SecurityFacts)] = &[
            ("none", sc(None, None), sc(None, None), sc(None, None)),
            (
                "pod only",
                sc(Some(true), Some(1000)),
                sc(None, None),
                sc(Some(true), Some(1000)),
            ),
            (
                "container only",
                sc(None, None),
                sc(Some(true), Some(0)),
                sc(Some(true), Some(0)),
            ),
            (
                "container wins",
                sc(Some(true), Some(1000)),
                sc(Some(false), Some(0)),
                sc(Some(false), Some(0)),
            ),
            (
                "mixed: pod runAsNonRoot, container runAsUser",
                sc(Some(true), None),
                sc(None, Some(0)),
                sc(Some(true), Some(0)),
            ),
        ];
        for (name, pod, container, want) in cases {
            assert_eq!(ContainerFacts::effective(pod, container), *want, "{name}");
        }
    }

    fn facts(
        command: bool,
        args: bool,
        non_root: Option<bool>,
        user: Option<i64>,
    ) -> ContainerFacts {
        ContainerFacts {
            name: "app".into(),
            image: "nginx".into(),
            kind: Some(ContainerKind::App),
            has_command: command,
            has_args: args,
            run_as_non_root: non_root,
            run_as_user: user,
        }
    }

    #[test]
    fn a_config_is_needed_only_when_the_spec_leaves_it_to_the_image() {
        let cases: &[(&str, ContainerFacts, bool)] = &[
            ("command, no policy", facts(true, false, None, None), false),
            (
                "args, runAsNonRoot false",
                facts(false, true, Some(false), None),
                false,
            ),
            (
                "command, runAsNonRoot with uid",
                facts(true, false, Some(true), Some(1000)),
                false,
            ),
            (
                "command, runAsNonRoot with uid 0",
                facts(true, false, Some(true), Some(0)),
                false,
            ),
            (
                "command, runAsNonRoot without uid",
                facts(true, false, Some(true), None),
                true,
            ),
            ("no command nor args", facts(false, false, None, None), true),
        ];
        for (name, f, want) in cases {
            assert_eq!(f.needs_image_config(), *want, "{name}");
        }
    }

    #[test]
    fn evaluation_reports_the_first_refusal_as_the_kubelet_does() {
        let root_no_cmd = RunConfig::default();
        let f = facts(false, false, Some(true), None);
        let s = f.evaluate(Ok(&root_no_cmd));
        assert_eq!(
            (s.start, s.reason.as_str()),
            (StartStatus::WontStart, "runs_as_root")
        );
        assert!(s.message.contains("container \"app\""), "{}", s.message);
        assert!(s.hint.contains("runAsUser: 1000"), "{}", s.hint);

        let f = facts(false, false, None, None);
        let s = f.evaluate(Ok(&root_no_cmd));
        assert_eq!(
            (s.start, s.reason.as_str()),
            (StartStatus::WontStart, "no_command")
        );
        assert!(s.hint.contains("Add a command"), "{}", s.hint);

        // runAsUser 0 needs no image, even when none was read.
        let f = facts(false, false, Some(true), Some(0));
        let s = f.evaluate(Err(&NotRead::PullFailed));
        assert_eq!(
            (s.start, s.reason.as_str()),
            (StartStatus::WontStart, "run_as_user_zero")
        );

        let f = facts(false, false, Some(true), None);
        let s = f.evaluate(Err(&NotRead::NotLinux("windows".into())));
        assert_eq!(
            (s.start, s.reason.as_str()),
            (StartStatus::Unknown, "not_linux")
        );

        // Off predicts nothing, not even what the spec alone decides.
        let f = facts(true, false, Some(true), Some(0));
        let s = f.evaluate(Err(&NotRead::Off));
        assert_eq!(
            (s.start, s.reason.as_str()),
            (StartStatus::Unknown, "start_check_off")
        );
        let f = facts(true, false, None, None);
        let s = f.evaluate(Err(&NotRead::PullFailed));
        assert_eq!((s.start, s.reason.as_str()), (StartStatus::Ok, "spec"));

        let nginx = RunConfig {
            user: "nginx\u{1b}[31m".into(),
            entrypoint: vec!["/docker-entrypoint.sh".into()],
            cmd: vec![],
        };
        let s = facts(false, false, Some(true), None).evaluate(Ok(&nginx));
        assert_eq!(s.reason.as_str(), "non_numeric_user");
        assert!(!s.message.contains('\u{1b}'), "escaped: {}", s.message);
    }

    #[test]
    fn the_env_form_round_trips_and_is_compact() {
        let list = vec![
            facts(false, true, Some(true), Some(1000)),
            ContainerFacts {
                kind: None,
                ..facts(true, false, None, None)
            },
        ];
        let env = ContainerFacts::to_env(&list);
        assert_eq!(
            env,
            r#"[{"name":"app","image":"nginx","kind":"app","command":false,"args":true,"runAsNonRoot":true,"runAsUser":1000},{"name":"app","image":"nginx","command":true,"args":false}]"#
        );
        assert_eq!(ContainerFacts::parse_list(&env).unwrap(), list);
    }

    #[test]
    fn malformed_lists_are_refused_with_a_reason() {
        let cases: &[(&str, &str, &str)] = &[
            ("not JSON", "nope", "not a valid JSON list"),
            ("an object", r#"{"name":"a"}"#, "not a valid JSON list"),
            (
                "no command key",
                r#"[{"name":"a","image":"x","args":false}]"#,
                "command",
            ),
            (
                "a command list",
                r#"[{"name":"a","image":"x","command":["sh"],"args":false}]"#,
                "boolean",
            ),
            (
                "empty name",
                r#"[{"name":" ","image":"x","command":true,"args":false}]"#,
                "name",
            ),
            (
                "empty image",
                r#"[{"name":"a","image":"","command":true,"args":false}]"#,
                "image",
            ),
            (
                "bad uid",
                r#"[{"name":"a","image":"x","command":true,"args":false,"runAsUser":"0"}]"#,
                "expected i64",
            ),
        ];
        for (name, text, want) in cases {
            let e = ContainerFacts::parse_list(text).unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
        let big = format!("[{}]", " ".repeat(MAX_CONTAINERS_JSON));
        assert!(
            ContainerFacts::parse_list(&big)
                .unwrap_err()
                .to_string()
                .contains("KiB")
        );
        let ok = ContainerFacts::parse_list(
            r#"[{"name":"a","image":"x","command":true,"args":false,"future":1}]"#,
        );
        assert!(ok.is_ok(), "unknown keys are ignored: {ok:?}");
    }
}
