//! The outcome of a run: one [`ImageResult`] per image, the [`Report`] that holds them, the
//! [`ExitCode`] they add up to, and the three ways a report is written out (text for people,
//! JSON for programs, the termination message for Kubernetes). The words of every verdict (its
//! [`Reason`], and why it may not count) are in `reason.rs`; those that differ between a pod
//! and a workstation are chosen in `place.rs`.
//!
//! The JSON field names and status and reason words are a contract with job frameworks and
//! `podFailurePolicy` rules: later versions add fields but never rename these. The JSON keeps
//! the images in the order given, with `counts` by status; its schema is
//! `docs/reference/pullcheck.schema.json`, and the reasons are listed in
//! `docs/reference/reasons.md` (both checked by the integration tests).

mod place;
mod reason;
mod termination;
mod text;

pub use place::Place;
pub(crate) use place::TOKEN_ANONYMOUS_HINT;
pub use reason::{About, Counted, NotCounted, Reason, StartReason};
pub use termination::{
    KUBELET_CONTAINER_MAX, KUBELET_POD_MAX, TERMINATION_MESSAGE_MAX, termination_limit,
    termination_message,
};
pub use text::{Layout, render_text};

use crate::credentials::ProviderTried;
use crate::keyring::CredentialSource;
use crate::pull_policy::PullPolicy;
use serde::Serialize;

/// What happened to one image. Each status maps to exactly one exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The manifest exists and the credentials in use may read it.
    Ok,
    /// The tag, the digest or the whole repository does not exist.
    NotFound,
    /// The reference cannot be parsed (the kubelet's `InvalidImageName`).
    InvalidReference,
    /// The image exists but has no variant for this node's platform.
    WrongPlatform,
    /// No credentials, credentials rejected, or a token without access (401).
    Unauthorized,
    /// The registry refused access (403).
    Denied,
    /// Connect errors, time-outs or 5xx that lasted until the deadline, or 429 (retried once at
    /// most): it may pass.
    Unreachable,
    /// The registry cannot be checked from this pod, and retrying will not change it: a
    /// plain-HTTP registry asked over TLS, a certificate this pod does not trust, a name this
    /// pod's resolver says does not exist. Permanent for the pod, possibly not for the node
    /// (its runtime's configuration, its CAs, its DNS).
    Unverifiable,
    /// The image can be pulled, but a container using it will not start
    /// (`CreateContainerConfigError`, `CreateContainerError`).
    WontStart,
}

impl Status {
    /// Every status, in the order of JSON `counts` and the reference page.
    pub const ALL: [Status; 9] = [
        Status::Ok,
        Status::NotFound,
        Status::InvalidReference,
        Status::WrongPlatform,
        Status::Unauthorized,
        Status::Denied,
        Status::Unreachable,
        Status::Unverifiable,
        Status::WontStart,
    ];

    /// The exit code this status calls for on its own.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Status::Ok => ExitCode::Ok,
            Status::NotFound | Status::InvalidReference => ExitCode::NotFound,
            Status::WrongPlatform => ExitCode::WrongPlatform,
            Status::Unauthorized | Status::Denied => ExitCode::AccessRefused,
            Status::Unreachable => ExitCode::Unreachable,
            Status::WontStart => ExitCode::WontStart,
            Status::Unverifiable => ExitCode::Unverifiable,
        }
    }

    /// What it means, for the reference page.
    pub fn meaning(self) -> &'static str {
        match self {
            Status::Ok => "The image can be pulled (or the node holds it and will not pull it).",
            Status::NotFound => "The tag, the digest or the whole repository does not exist.",
            Status::InvalidReference => {
                "The reference cannot be parsed (the kubelet's `InvalidImageName`)."
            }
            Status::WrongPlatform => {
                "The image exists but has no variant for this node's platform."
            }
            Status::Unauthorized => {
                "No credentials, credentials rejected, or a token without access (401)."
            }
            Status::Denied => "The registry refused access (403).",
            Status::Unreachable => {
                "Connect errors, time-outs or 5xx that lasted until the deadline, or 429 (retried once at most): it may pass."
            }
            Status::Unverifiable => {
                "The registry cannot be checked from this pod, and retrying will not change it; the node may differ."
            }
            Status::WontStart => {
                "The image can be pulled, but a container using it will not start."
            }
        }
    }

    /// The word used in text output and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NotFound => "not_found",
            Status::InvalidReference => "invalid_reference",
            Status::WrongPlatform => "wrong_platform",
            Status::Unauthorized => "unauthorized",
            Status::Denied => "denied",
            Status::Unreachable => "unreachable",
            Status::WontStart => "wont_start",
            Status::Unverifiable => "unverifiable",
        }
    }
}

/// The process exit codes: one enum, documented in `--help` and the README.
///
/// When images fail differently the lowest of 3–8 wins, so that a Job's `podFailurePolicy`
/// can fail the Job at once on 3–5 and 7 (permanent), retry on 6 (it may pass), and count 8
/// (permanent for the pod, maybe not for the node) against `backoffLimit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ExitCode {
    /// Every image can be pulled (`doctor`: every check is ok).
    Ok = 0,
    /// `pullcheck doctor` only: a check said no (the cluster unreachable among them). Not a
    /// code `check` gives, so not in [`ExitCode::ALL`].
    Unhealthy = 1,
    /// Usage or configuration error; nothing was checked.
    Usage = 2,
    /// An image does not exist, or its reference is invalid (permanent).
    NotFound = 3,
    /// An image exists but has no variant for this node's platform.
    WrongPlatform = 4,
    /// Access refused: no credentials, credentials rejected, or no permission.
    AccessRefused = 5,
    /// A registry could not be reached, or kept failing, until the deadline (transient).
    Unreachable = 6,
    /// An image can be pulled, but a container using it will not start (permanent).
    WontStart = 7,
    /// A registry cannot be checked from this pod, and retrying will not change it (plain
    /// HTTP asked over TLS, an untrusted certificate, a name the pod's resolver does not
    /// know): permanent for the pod, possibly not for the node.
    Unverifiable = 8,
}

impl ExitCode {
    /// Every exit code of `check` (and `inject`, `webhook`, `watch`), in numeric order; `doctor`
    /// adds [`ExitCode::Unhealthy`].
    pub const ALL: [ExitCode; 8] = [
        ExitCode::Ok,
        ExitCode::Usage,
        ExitCode::NotFound,
        ExitCode::WrongPlatform,
        ExitCode::AccessRefused,
        ExitCode::Unreachable,
        ExitCode::WontStart,
        ExitCode::Unverifiable,
    ];

    /// What the code means, as `--help` says it ([`EXIT_CODES_HELP`]).
    pub fn meaning(self) -> &'static str {
        match self {
            ExitCode::Ok => "every image can be pulled",
            ExitCode::Unhealthy => "pullcheck doctor: a check said no",
            ExitCode::Usage => "usage or configuration error; nothing was checked",
            ExitCode::NotFound => {
                "an image does not exist, or its reference is invalid (permanent)"
            }
            ExitCode::WrongPlatform => {
                "an image exists but has no variant for this node's platform"
            }
            ExitCode::AccessRefused => {
                "access refused: no credentials, credentials rejected, or no permission"
            }
            ExitCode::Unreachable => {
                "a registry could not be reached, or kept failing, until the deadline (transient)"
            }
            ExitCode::WontStart => {
                "an image can be pulled, but a container using it will not start (permanent)"
            }
            ExitCode::Unverifiable => {
                "a registry cannot be checked from this pod, and retrying will not change it: plain HTTP asked over TLS, an untrusted certificate, a name the pod's resolver does not know (permanent for the pod; the node may differ)"
            }
        }
    }

    /// The numeric code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The code a set of results adds up to: 0 when all are fine, else the lowest failing code.
    pub(crate) fn for_results<'a>(results: impl IntoIterator<Item = &'a ImageResult>) -> ExitCode {
        results
            .into_iter()
            .filter(|r| r.fatal())
            .map(|r| r.status.exit_code())
            .filter(|c| *c != ExitCode::Ok)
            .min()
            .unwrap_or(ExitCode::Ok)
    }
}

impl Serialize for ExitCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.code())
    }
}

/// The text of the exit-code table, shared by `--help` and the tests that keep the README honest.
pub(crate) const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  every image can be pulled
  2  usage or configuration error; nothing was checked
  3  an image does not exist, or its reference is invalid (permanent)
  4  an image exists but has no variant for this node's platform
  5  access refused: no credentials, credentials rejected, or no permission
  6  a registry could not be reached, or kept failing, until the deadline (transient)
  7  an image can be pulled, but a container using it will not start (permanent)
  8  a registry cannot be checked from this pod, and retrying will not change it: plain
     HTTP asked over TLS, an untrusted certificate, a name the pod's resolver does not know
     (permanent for the pod; the node may differ)
When images fail differently, the lowest code of 3-8 wins.";

/// The verdict for one image. A failed image is data, not an error.
///
/// Serialised by hand (below) so that `fatal` appears on failures only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageResult {
    /// The reference exactly as given.
    pub image: String,
    /// The normalised reference (`docker.io/library/nginx:latest`); empty when invalid.
    pub(crate) reference: String,
    /// `host[:port]` of the registry; empty when the reference is invalid.
    pub(crate) registry: String,
    /// The verdict: always the reason's own status ([`Reason::status`]); give a result another
    /// verdict with [`ImageResult::set_verdict`], which sets both.
    pub status: Status,
    /// A finer, machine-readable reason within the status, e.g. `tag_missing`,
    /// `repository_missing`, `credentials_rejected`, `timeout`.
    pub(crate) reason: Reason,
    /// The manifest digest, when the image exists and the registry said it.
    pub(crate) digest: Option<String>,
    /// What was found, naming the image, the registry and what was tried.
    pub(crate) message: String,
    /// What to do next; empty (and left out of JSON) when the image is fine.
    pub(crate) hint: String,
    /// Which credential was used: `anonymous`, or where it came from (never its content).
    pub(crate) auth: String,
    /// Whether this result counts towards the exit code, and if not, why. Meaningful for
    /// failures only: JSON leaves `fatal` and `not_counted` out on `ok` images.
    pub(crate) counted: Counted,
    /// Requests for the manifest, counting retries.
    pub(crate) attempts: u32,
    /// Time spent on this image.
    pub(crate) elapsed_ms: u64,
    /// The digest of the index entry that matches the node's platform, when an index was checked.
    pub(crate) platform_digest: Option<String>,
    /// On `ok` images: whether the node's platform was checked (an index entry or a config
    /// matched); `None` on failures.
    pub(crate) platform_checked: Option<bool>,
    /// On `ok` images whose platform was not checked although a platform was wanted: why, and
    /// how to check it (for the text report).
    pub(crate) platform_note: Option<&'static str>,
    /// The platforms the image has, when none matches the node (`wrong_platform`).
    pub(crate) available_platforms: Vec<String>,
    /// Close tags or repositories, when the image is `not_found` (best effort).
    pub(crate) suggestions: Vec<String>,
    /// When no tag is close to a missing one: a few of the tags the repository has, newest
    /// versions first (best effort; JSON `existing_tags`).
    pub(crate) existing_tags: Vec<String>,
    /// The image's pull policy: `Always` is checked at the registry, `IfNotPresent` on the
    /// node first.
    pub pull_policy: PullPolicy,
    /// Whether the node lists the image; `null` when its images were not looked up, or its
    /// list is truncated and does not name it.
    pub present_on_node: Option<bool>,
    /// With a node configuration (`--hosts-dir`, `--registries-conf`): the API root URL of
    /// the endpoint that gave the verdict.
    pub(crate) endpoint: Option<String>,
    /// The registry that endpoint stands in for, when it is a mirror (or a rewritten
    /// location on another host).
    pub(crate) mirror_of: Option<String>,
    /// The registry was asked over plain HTTP (`--plain-http`, or its alias `--insecure`):
    /// said in the report, since crane's `--insecure` could also mean HTTPS unverified.
    pub(crate) plain_http: bool,
    /// The node-side credential sources (built-in cloud providers, credential-provider
    /// plugins) that serve this image and gave no credential for it, each with why; empty,
    /// and left out of JSON, when none did.
    pub(crate) providers_tried: Vec<ProviderTried>,
    /// Will each container using this image start? One entry per container of the pod spec
    /// (`--containers`, `PULLCHECK_CONTAINERS`); empty, and left out of JSON, without them.
    pub(crate) containers: Vec<ContainerStart>,
}

/// Whether a container will start once its image is pulled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StartStatus {
    /// Nothing found that stops it.
    Ok,
    /// The kubelet or the runtime will refuse to create it.
    WontStart,
    /// Not predicted: the image's config was needed and not read.
    Unknown,
}

/// The start prediction for one container (see [`crate::container_start`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerStart {
    /// The container's name.
    pub(crate) name: String,
    /// The prediction.
    pub(crate) start: StartStatus,
    /// Why: for `wont_start` the rule (`runs_as_root`, `non_numeric_user`, `invalid_user_id`,
    /// `run_as_user_zero`, `no_command`); for `ok`, `spec` or `image_config` (what settled it);
    /// for `unknown`, `start_check_off`, `not_pulled`, `not_linux` or `config_not_read`.
    pub(crate) reason: StartReason,
    /// The container, the rule and what was found.
    pub(crate) message: String,
    /// What to change (empty unless `wont_start`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) hint: String,
}

impl Serialize for ImageResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ImageResult", 25)?;
        st.serialize_field("image", &self.image)?;
        st.serialize_field("reference", &self.reference)?;
        st.serialize_field("registry", &self.registry)?;
        st.serialize_field("status", &self.status)?;
        st.serialize_field("reason", &self.reason)?;
        if let Some(d) = &self.digest {
            st.serialize_field("digest", d)?;
        }
        st.serialize_field("message", &self.message)?;
        if !self.hint.is_empty() {
            st.serialize_field("hint", &self.hint)?;
        }
        st.serialize_field("auth", &self.auth)?;
        // `fatal` belongs to failures: an image that can be pulled is neither fatal nor not.
        if !self.is_ok() {
            st.serialize_field("fatal", &self.fatal())?;
            if let Counted::No(why) = self.counted {
                st.serialize_field("not_counted", why.as_str())?;
            }
        }
        st.serialize_field("attempts", &self.attempts)?;
        st.serialize_field("elapsed_ms", &self.elapsed_ms)?;
        if let Some(d) = &self.platform_digest {
            st.serialize_field("platform_digest", d)?;
        }
        if let Some(checked) = self.platform_checked {
            st.serialize_field("platform_checked", &checked)?;
        }
        if !self.available_platforms.is_empty() {
            st.serialize_field("available_platforms", &self.available_platforms)?;
        }
        if !self.suggestions.is_empty() {
            st.serialize_field("suggestions", &self.suggestions)?;
        }
        if !self.existing_tags.is_empty() {
            st.serialize_field("existing_tags", &self.existing_tags)?;
        }
        if let Some(e) = &self.endpoint {
            st.serialize_field("endpoint", e)?;
        }
        if let Some(m) = &self.mirror_of {
            st.serialize_field("mirror_of", m)?;
        }
        if self.plain_http {
            st.serialize_field("plain_http", &true)?;
        }
        st.serialize_field("pull_policy", &self.pull_policy)?;
        st.serialize_field("present_on_node", &self.present_on_node)?;
        if !self.providers_tried.is_empty() {
            st.serialize_field("providers_tried", &self.providers_tried)?;
        }
        if !self.containers.is_empty() {
            st.serialize_field("containers", &self.containers)?;
        }
        st.end()
    }
}

impl ImageResult {
    /// What was found, in words that name the image, the registry and what was tried (the
    /// message of the text report and the JSON's `message`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The result of `image` (as given) for `reason`, with its message and the reason's own
    /// hint: no reference, no request, anonymous, counted. The check fills in the rest.
    pub(crate) fn new(image: &str, reason: Reason, message: String) -> ImageResult {
        ImageResult {
            image: image.to_string(),
            reference: String::new(),
            registry: String::new(),
            status: reason.status(),
            reason,
            digest: None,
            message,
            hint: reason.hint().to_string(),
            auth: "anonymous".to_string(),
            counted: Counted::Yes,
            attempts: 0,
            elapsed_ms: 0,
            platform_digest: None,
            platform_checked: None,
            platform_note: None,
            available_platforms: Vec::new(),
            suggestions: Vec::new(),
            existing_tags: Vec::new(),
            pull_policy: PullPolicy::Always,
            present_on_node: None,
            endpoint: None,
            mirror_of: None,
            plain_http: false,
            providers_tried: Vec::new(),
            containers: Vec::new(),
        }
    }

    /// The result of an image whose reference cannot be parsed. The reference as given, and
    /// the parser's message that quotes it, are foreign text (a pod spec pasted with a token
    /// in it): scrubbed of the run's secrets. A valid reference is shown as given: it names a
    /// repository, and a word in it is no echo of a password.
    pub(crate) fn invalid_reference(
        image: &str,
        error: &crate::reference::ReferenceError,
    ) -> ImageResult {
        let mut result = ImageResult::new(
            image,
            Reason::InvalidReference,
            crate::redact::foreign(&error.to_string()),
        );
        result.image = crate::redact::foreign(image);
        result
    }

    /// Names the normalised reference and its registry.
    pub(crate) fn of_reference(mut self, reference: &crate::reference::Reference) -> ImageResult {
        self.reference = reference.to_string();
        self.registry = reference.registry.clone();
        self
    }

    /// Gives the result another verdict: the reason (and so the status), message and hint.
    pub(crate) fn set_verdict(&mut self, reason: Reason, message: String, hint: String) {
        self.status = reason.status();
        self.reason = reason;
        self.message = message;
        self.hint = hint;
    }

    /// Whether this result counts towards the exit code (JSON `fatal`).
    pub(crate) fn fatal(&self) -> bool {
        self.counted == Counted::Yes
    }

    /// Marks the result as not counted, for `why`, and says so at the end of its message in
    /// the cause's own words. A result already not counted keeps its first cause.
    pub(crate) fn not_counted(&mut self, why: NotCounted, words: &str) {
        if self.counted == Counted::Yes {
            self.counted = Counted::No(why);
            self.message.push_str("; not counted: ");
            self.message.push_str(words);
        }
    }

    /// Whether the image can be pulled.
    pub(crate) fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// Sort key: failures first, in exit-code order (the one that decides the exit code first),
    /// then the rest in input order (the sort is stable).
    pub(crate) fn severity(&self) -> (u8, u8) {
        match self.status.exit_code() {
            ExitCode::Ok => (2, 0),
            code if self.fatal() => (0, code.code()),
            code => (1, code.code()),
        }
    }
}

/// The result of a whole run.
///
/// Serialised by hand (below) so that `counts` is computed from the images as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// pullcheck's version.
    pub(crate) version: &'static str,
    /// The node platform the images were checked for (`linux/amd64`), or `any`.
    pub(crate) platform: String,
    /// The exit code the results add up to.
    pub exit_code: ExitCode,
    /// One result per distinct image, in the order the images were given (the first of
    /// duplicates); [`Report::by_severity`] gives them problems first.
    pub images: Vec<ImageResult>,
    /// What stopped the run before it finished (`SIGTERM`), if anything.
    pub(crate) stopped: Option<String>,
    /// Where credentials were looked for: each source with its keys (registry names), whether
    /// one matches an image of the run, and what is wrong with it. Never a secret.
    pub(crate) credential_sources: Vec<CredentialSource>,
    /// Notes for stderr about the run as a whole (the node's images not looked up).
    pub warnings: Vec<String>,
    /// Where the run is, which chooses the words of the summary and of some hints.
    pub(crate) place: Place,
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeStruct};
        /// `{"ok": 3, "not_found": 1, …}`: every status, in [`Status::ALL`] order, zeros included.
        struct Counts<'a>(&'a [ImageResult]);
        impl Serialize for Counts<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(Status::ALL.len()))?;
                for status in Status::ALL {
                    let n = self.0.iter().filter(|r| r.status == status).count();
                    map.serialize_entry(status.as_str(), &n)?;
                }
                map.end()
            }
        }
        let mut st = s.serialize_struct("Report", 7)?;
        st.serialize_field("version", self.version)?;
        st.serialize_field("platform", &self.platform)?;
        st.serialize_field("exit_code", &self.exit_code)?;
        st.serialize_field("counts", &Counts(&self.images))?;
        st.serialize_field("images", &self.images)?;
        if let Some(why) = &self.stopped {
            st.serialize_field("stopped", why)?;
        }
        st.serialize_field("credential_sources", &self.credential_sources)?;
        st.end()
    }
}

impl Report {
    /// Builds a report of the results, in the order given, and computes the exit code.
    pub(crate) fn new(images: Vec<ImageResult>) -> Report {
        Report {
            version: env!("CARGO_PKG_VERSION"),
            platform: "any".to_string(),
            exit_code: ExitCode::for_results(&images),
            images,
            stopped: None,
            credential_sources: Vec::new(),
            warnings: Vec::new(),
            place: Place::Pod,
        }
    }

    /// Tells the report where the run is: its summary and the hints written for a pod are
    /// then in that place's words.
    pub(crate) fn fit_to(&mut self, place: Place) {
        self.place = place;
        for r in &mut self.images {
            if let Some(own) = place.hint(&r.hint) {
                r.hint = own.to_string();
            }
        }
    }

    /// The results problems first: failures in exit-code order (the one that decides the exit
    /// code first), then warnings, then the images that are fine, each group in the order
    /// given. For people (the text report, the termination message); JSON keeps the order given.
    pub(crate) fn by_severity(&self) -> Vec<&ImageResult> {
        let mut sorted: Vec<&ImageResult> = self.images.iter().collect();
        sorted.sort_by_key(|r| r.severity());
        sorted
    }

    /// The images that cannot be pulled and count towards the exit code.
    pub(crate) fn failures(&self) -> impl Iterator<Item = &ImageResult> {
        self.images.iter().filter(|r| !r.is_ok() && r.fatal())
    }

    /// The report as pretty JSON (the `-o json` contract).
    pub(crate) fn to_json(&self) -> String {
        // Serialising plain strings and numbers cannot fail; fall back to a minimal document
        // rather than panic if it ever did.
        let json = serde_json::to_string_pretty(self).unwrap_or_else(|_| {
            format!(
                "{{\"version\":\"{}\",\"exit_code\":{},\"images\":[]}}",
                self.version,
                self.exit_code.code()
            )
        });
        crate::escape::escape_json_text(json)
    }

    /// The one-line summary that opens the termination message and ends the text report. True
    /// for its case, in the singular and the plural: `the 1 image can be pulled`, `all 3 images
    /// can be pulled`, `1 of 3 images can be pulled; 2 not verified (…)`.
    pub(crate) fn summary(&self) -> String {
        let total = self.images.len();
        let failing = self.failures().count();
        let unverified = self
            .images
            .iter()
            .filter(|r| !r.is_ok() && !r.fatal())
            .count();
        let pullable = self.images.iter().filter(|r| r.is_ok()).count();
        let images = |n: usize| if n == 1 { "image" } else { "images" };
        if let Some(why) = &self.stopped {
            let unfinished = self
                .images
                .iter()
                .filter(|r| r.reason == Reason::Stopped)
                .count();
            return format!(
                "pullcheck: stopped by {why} before the check finished ({unfinished} of {total} {} not checked)",
                images(total)
            );
        }
        let wont_start = self
            .failures()
            .filter(|r| r.status == Status::WontStart)
            .count();
        // Images that could not be checked from here (exit 8) are not said to be impossible
        // to pull: the node may pull them.
        let here = self.place.here();
        let unverifiable = self
            .failures()
            .filter(|r| r.status == Status::Unverifiable)
            .count();
        let failing = failing - unverifiable;
        let not_pulled = failing - wont_start;
        let noun = if total == 1 { "image" } else { "images" };
        let mut s = if total == 0 {
            "pullcheck: no images to check".to_string()
        } else if unverifiable > 0 && failing == 0 {
            if total == 1 {
                format!("pullcheck: the 1 image cannot be checked from {here}")
            } else {
                format!("pullcheck: {unverifiable} of {total} images cannot be checked from {here}")
            }
        } else if failing > 0 && wont_start == 0 {
            if total == 1 {
                "pullcheck: the 1 image cannot be pulled".to_string()
            } else {
                format!("pullcheck: {failing} of {total} images cannot be pulled")
            }
        } else if failing > 0 && not_pulled == 0 {
            let all = if unverified == 0 {
                if total == 1 {
                    "the 1 image".to_string()
                } else {
                    format!("all {total} images")
                }
            } else {
                format!("{} of {total} images", total - unverified)
            };
            format!(
                "pullcheck: {all} can be pulled, but {}",
                containers_will_not_start(wont_start, total == 1)
            )
        } else if failing > 0 {
            format!(
                "pullcheck: {not_pulled} of {total} {noun} cannot be pulled, and {} more {}",
                wont_start,
                if wont_start == 1 {
                    "has a container that will not start"
                } else {
                    "have containers that will not start"
                }
            )
        } else if pullable == total {
            if total == 1 {
                "pullcheck: the 1 image can be pulled".to_string()
            } else {
                format!("pullcheck: all {total} images can be pulled")
            }
        } else if pullable == 0 {
            // Only unverified images: nothing failed, and nothing was shown to be pullable.
            "pullcheck: no image failed".to_string()
        } else {
            format!("pullcheck: {pullable} of {total} images can be pulled")
        };
        if unverifiable > 0 && failing > 0 {
            s.push_str(&format!(
                "; {unverifiable} more cannot be checked from {here}"
            ));
        }
        // One clause per cause, in the order of [`NotCounted::ALL`], each in its own words.
        for why in NotCounted::ALL {
            let n = self
                .images
                .iter()
                .filter(|r| !r.is_ok() && r.counted == Counted::No(why))
                .count();
            if n > 0 {
                s.push_str(&format!(
                    "; {n} {} not verified ({}; not counted: {})",
                    images(n),
                    self.place.what(why),
                    why.because()
                ));
            }
        }
        s
    }
}

/// "1 has a container that will not start", "2 have containers…"; for a single image, "a
/// container using it will not start".
fn containers_will_not_start(images: usize, single: bool) -> String {
    match (single, images) {
        (true, _) => "a container using it will not start".to_string(),
        (false, 1) => "1 has a container that will not start".to_string(),
        (false, n) => format!("{n} have containers that will not start"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A result of `status`, for the first reason of that status.
    pub(crate) fn result(image: &str, status: Status) -> ImageResult {
        let reason = Reason::ALL
            .iter()
            .copied()
            .find(|r| r.status() == status)
            .unwrap();
        let mut r = ImageResult::new(image, reason, format!("{image} is {}", status.as_str()));
        r.reference = format!("docker.io/library/{image}");
        r.registry = "docker.io".to_string();
        r.hint = if status == Status::Ok {
            String::new()
        } else {
            "do something".to_string()
        };
        r.attempts = 1;
        r.elapsed_ms = 1;
        r
    }

    #[test]
    fn lowest_failing_code_wins() {
        let cases: &[(&str, &[Status], ExitCode)] = &[
            ("all ok", &[Status::Ok, Status::Ok], ExitCode::Ok),
            ("empty", &[], ExitCode::Ok),
            (
                "unreachable and not found",
                &[Status::Unreachable, Status::NotFound],
                ExitCode::NotFound,
            ),
            (
                "invalid is permanent like missing",
                &[Status::Denied, Status::InvalidReference],
                ExitCode::NotFound,
            ),
            (
                "access beats unreachable",
                &[Status::Unreachable, Status::Unauthorized, Status::Ok],
                ExitCode::AccessRefused,
            ),
            (
                "platform beats access",
                &[Status::Unauthorized, Status::WrongPlatform],
                ExitCode::WrongPlatform,
            ),
            (
                "only unreachable",
                &[Status::Unreachable],
                ExitCode::Unreachable,
            ),
            (
                "every pull failure beats wont_start",
                &[Status::WontStart, Status::Unreachable],
                ExitCode::Unreachable,
            ),
            (
                "wont_start alone is 7",
                &[Status::Ok, Status::WontStart],
                ExitCode::WontStart,
            ),
        ];
        for (name, statuses, want) in cases {
            let results: Vec<_> = statuses.iter().map(|s| result("x", *s)).collect();
            assert_eq!(ExitCode::for_results(&results), *want, "{name}");
        }
    }

    #[test]
    fn the_summary_tells_pull_failures_from_containers_that_will_not_start() {
        let report = Report::new(vec![
            result("a", Status::Ok),
            result("b", Status::WontStart),
        ]);
        assert_eq!(report.exit_code.code(), 7);
        assert_eq!(
            report.summary(),
            "pullcheck: all 2 images can be pulled, but 1 has a container that will not start"
        );
        let report = Report::new(vec![
            result("a", Status::NotFound),
            result("b", Status::WontStart),
        ]);
        assert_eq!(
            report.summary(),
            "pullcheck: 1 of 2 images cannot be pulled, and 1 more has a container that will not start"
        );
    }

    #[test]
    fn non_fatal_results_do_not_count() {
        let mut r = result("x", Status::Unauthorized);
        r.counted = Counted::No(NotCounted::AllowUnauthenticated);
        assert_eq!(ExitCode::for_results([&r]), ExitCode::Ok);
    }

    #[test]
    fn problems_come_first_in_code_order() {
        let report = Report::new(vec![
            result("a", Status::Ok),
            result("b", Status::Unreachable),
            result("c", Status::NotFound),
            result("d", Status::Ok),
        ]);
        let order: Vec<_> = report
            .by_severity()
            .iter()
            .map(|r| r.image.as_str())
            .collect();
        assert_eq!(order, ["c", "b", "a", "d"]);
        // The data keeps the order given.
        let given: Vec<_> = report.images.iter().map(|r| r.image.as_str()).collect();
        assert_eq!(given, ["a", "b", "c", "d"]);
        assert_eq!(report.exit_code, ExitCode::NotFound);
        assert_eq!(
            report.summary(),
            "pullcheck: 2 of 4 images cannot be pulled"
        );
    }

    #[test]
    fn json_has_the_contract_fields() {
        let mut ok = result("a", Status::Ok);
        ok.digest = Some("sha256:00".into());
        let report = Report::new(vec![ok, result("b", Status::NotFound)]);
        let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(v["exit_code"], 3);
        assert!(v["version"].is_string());
        // The images in the order given: the failure is the second.
        let first = &v["images"][1];
        for key in [
            "image",
            "reference",
            "registry",
            "status",
            "message",
            "hint",
            "attempts",
            "elapsed_ms",
            "fatal",
            "auth",
            "pull_policy",
            "present_on_node",
        ] {
            assert!(first.get(key).is_some(), "missing {key}");
        }
        assert_eq!(first["status"], "not_found");
        assert_eq!(first["pull_policy"], "Always");
        assert!(first["present_on_node"].is_null());
        assert!(first.get("digest").is_none());
        assert_eq!(v["images"][0]["digest"], "sha256:00");
        // No empty hint on the image that is fine.
        assert!(v["images"][0].get("hint").is_none());
        // Every status counted, zeros included.
        let counts = v["counts"].as_object().unwrap();
        assert_eq!(counts.len(), Status::ALL.len());
        assert_eq!(
            (v["counts"]["ok"].clone(), v["counts"]["not_found"].clone()),
            (1.into(), 1.into())
        );
        assert_eq!(v["counts"]["denied"], 0);
    }

    #[test]
    fn a_result_has_the_status_of_its_reason() {
        for reason in Reason::ALL {
            let r = ImageResult::new("a", *reason, String::new());
            assert_eq!(r.status, reason.status(), "{reason}");
            assert_eq!(r.hint, reason.hint(), "{reason}");
        }
        let mut r = ImageResult::new("a", Reason::Found, String::new());
        r.set_verdict(Reason::NoCommand, "m".into(), "h".into());
        assert_eq!((r.status, r.reason), (Status::WontStart, Reason::NoCommand));
    }

    #[test]
    fn the_help_says_what_each_exit_code_means() {
        let help = EXIT_CODES_HELP
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for code in ExitCode::ALL {
            let line = format!("{} {}", code.code(), code.meaning());
            assert!(help.contains(&line), "{line}");
        }
    }

    #[test]
    fn summaries_are_true_for_their_case() {
        let warn = |image: &str| {
            let mut r = result(image, Status::Unauthorized);
            r.counted = Counted::No(NotCounted::AllowUnauthenticated);
            r
        };
        let cases: Vec<(&str, Vec<ImageResult>, &str)> = vec![
            ("none", vec![], "pullcheck: no images to check"),
            (
                "one ok",
                vec![result("a", Status::Ok)],
                "pullcheck: the 1 image can be pulled",
            ),
            (
                "two ok",
                vec![result("a", Status::Ok), result("b", Status::Ok)],
                "pullcheck: all 2 images can be pulled",
            ),
            (
                "one failing",
                vec![result("a", Status::NotFound)],
                "pullcheck: the 1 image cannot be pulled",
            ),
            (
                "only unverified",
                vec![warn("a"), warn("b")],
                "pullcheck: no image failed; 2 images not verified (no credentials; not counted: --allow-unauthenticated)",
            ),
            (
                "ok and unverified",
                vec![result("a", Status::Ok), warn("b")],
                "pullcheck: 1 of 2 images can be pulled; 1 image not verified (no credentials; not counted: --allow-unauthenticated)",
            ),
            (
                "failing and unverified",
                vec![
                    result("a", Status::NotFound),
                    warn("b"),
                    result("c", Status::Ok),
                ],
                "pullcheck: 1 of 3 images cannot be pulled; 1 image not verified (no credentials; not counted: --allow-unauthenticated)",
            ),
        ];
        for (name, images, want) in cases {
            assert_eq!(Report::new(images).summary(), want, "{name}");
        }
        let mut stopped = Report::new(vec![result("a", Status::Unreachable)]);
        stopped.images[0].reason = Reason::Stopped;
        stopped.stopped = Some("SIGTERM".into());
        assert_eq!(
            stopped.summary(),
            "pullcheck: stopped by SIGTERM before the check finished (1 of 1 image not checked)"
        );
    }

    #[test]
    fn each_cause_of_not_counted_has_its_own_summary_and_json_value() {
        let cases = [
            (
                NotCounted::AllowUnauthenticated,
                Status::Unauthorized,
                "allow_unauthenticated",
                "pullcheck: no image failed; 1 image not verified (no credentials; not counted: --allow-unauthenticated)",
            ),
            (
                NotCounted::OnUnreachableWarn,
                Status::Unreachable,
                "on_unreachable_warn",
                "pullcheck: no image failed; 1 image not verified (unreachable; not counted: --on-unreachable warn)",
            ),
            (
                NotCounted::CloudIdentityUnavailable,
                Status::Unauthorized,
                "cloud_identity_unavailable",
                "pullcheck: no image failed; 1 image not verified (no credentials; not counted: no cloud identity in the pod, the node pulls with its own)",
            ),
            (
                NotCounted::CredentialProviderUnavailable,
                Status::Unauthorized,
                "credential_provider_unavailable",
                "pullcheck: no image failed; 1 image not verified (no credentials; not counted: the credential provider gave nothing in the pod, the node runs it with its own identity)",
            ),
            (
                NotCounted::NodeCredentialsRefused,
                Status::Denied,
                "node_credentials_refused",
                "pullcheck: no image failed; 1 image not verified (node-side credentials refused; not counted: the node's own identity may have access)",
            ),
            (
                NotCounted::OnUnverifiableWarn,
                Status::Unverifiable,
                "on_unverifiable_warn",
                "pullcheck: no image failed; 1 image not verified (cannot be checked from this pod; not counted: --on-unverifiable warn)",
            ),
            (
                NotCounted::PodLoopback,
                Status::Unverifiable,
                "pod_loopback",
                "pullcheck: no image failed; 1 image not verified (not checked; not counted: a registry on the node's loopback, not the pod's)",
            ),
            (
                NotCounted::MayBeOnNode,
                Status::NotFound,
                "may_be_on_node",
                "pullcheck: no image failed; 1 image not verified (not found at the registry; not counted: IfNotPresent, and nothing proves the node lacks it)",
            ),
            (
                NotCounted::HeldByNode,
                Status::Unauthorized,
                "held_by_node",
                "pullcheck: no image failed; 1 image not verified (on the node, its registry did not serve it to this pod; not counted: the node holds it, and only the kubelet's records say whether this pod may use it (Kubernetes 1.35+ re-verifies credentials))",
            ),
        ];
        assert_eq!(cases.len(), NotCounted::ALL.len());
        for (why, status, json, summary) in cases {
            let mut r = result("a", status);
            r.not_counted(why, "words");
            assert!(r.message.ends_with("; not counted: words"), "{json}");
            let report = Report::new(vec![r]);
            assert_eq!(report.exit_code, ExitCode::Ok, "{json}");
            assert_eq!(report.summary(), summary, "{json}");
            let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
            assert_eq!(v["images"][0]["fatal"], false, "{json}");
            assert_eq!(v["images"][0]["not_counted"], json, "{json}");
            let term = termination_message(&report, 1024);
            let said = match why.to_prove() {
                Some(proof) => format!("(not counted: {}; {proof})", why.because()),
                None => format!("(not counted: {})", why.because()),
            };
            assert!(term.contains(&said), "{term}");
        }
        // Two causes in one run: a clause each.
        let mut a = result("a", Status::Unauthorized);
        a.not_counted(NotCounted::AllowUnauthenticated, "x");
        let mut b = result("b", Status::Unreachable);
        b.not_counted(NotCounted::OnUnreachableWarn, "y");
        // The first cause stays.
        b.not_counted(NotCounted::AllowUnauthenticated, "z");
        assert!(!b.message.contains('z'));
        let report = Report::new(vec![result("c", Status::Ok), a, b]);
        assert_eq!(
            report.summary(),
            "pullcheck: 1 of 3 images can be pulled; 1 image not verified (no credentials; not counted: --allow-unauthenticated); 1 image not verified (unreachable; not counted: --on-unreachable warn)"
        );
        // A counted failure has no `not_counted`.
        let v: serde_json::Value =
            serde_json::from_str(&Report::new(vec![result("d", Status::NotFound)]).to_json())
                .unwrap();
        assert!(v["images"][0].get("not_counted").is_none());
    }

    #[test]
    fn images_that_cannot_be_checked_from_the_pod_are_not_said_to_be_unpullable() {
        let cases: Vec<(&str, Vec<ImageResult>, &str, u8)> = vec![
            (
                "one",
                vec![result("a", Status::Unverifiable)],
                "pullcheck: the 1 image cannot be checked from this pod",
                8,
            ),
            (
                "with an ok one",
                vec![result("a", Status::Unverifiable), result("b", Status::Ok)],
                "pullcheck: 1 of 2 images cannot be checked from this pod",
                8,
            ),
            (
                "with a missing one",
                vec![
                    result("a", Status::Unverifiable),
                    result("b", Status::NotFound),
                ],
                "pullcheck: 1 of 2 images cannot be pulled; 1 more cannot be checked from this pod",
                3,
            ),
            (
                "with an unreachable one: 6 wins",
                vec![
                    result("a", Status::Unverifiable),
                    result("b", Status::Unreachable),
                ],
                "pullcheck: 1 of 2 images cannot be pulled; 1 more cannot be checked from this pod",
                6,
            ),
        ];
        for (name, images, want, code) in cases {
            let report = Report::new(images);
            assert_eq!(report.summary(), want, "{name}");
            assert_eq!(report.exit_code.code(), code, "{name}");
        }
    }

    #[test]
    fn fatal_only_on_failures() {
        let mut warning = result("w", Status::Unauthorized);
        warning.counted = Counted::No(NotCounted::AllowUnauthenticated);
        let mut ok = result("a", Status::Ok);
        ok.platform_checked = Some(false);
        let report = Report::new(vec![ok, result("b", Status::NotFound), warning]);
        let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        for image in v["images"].as_array().unwrap() {
            match image["status"].as_str().unwrap() {
                "ok" => {
                    assert!(image.get("fatal").is_none(), "{image}");
                    assert_eq!(image["platform_checked"], false, "{image}");
                }
                "not_found" => assert_eq!(image["fatal"], true, "{image}"),
                _ => assert_eq!(image["fatal"], false, "{image}"),
            }
        }
    }
}
