//! The outcome of a run: one [`ImageResult`] per image, the [`Report`] that holds them, the
//! [`ExitCode`] they add up to, and the three ways a report is written out (text for people,
//! JSON for programs, the termination message for Kubernetes).
//!
//! The JSON field names and status words are a contract with job frameworks and
//! `podFailurePolicy` rules: later versions add fields but never rename these.

mod escape;
mod termination;
mod text;

pub use escape::escape;
pub use termination::{TERMINATION_MESSAGE_MAX, termination_message};
pub use text::render_text;

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
    /// DNS, connect, TLS, time-outs, 5xx or 429 that lasted until the deadline.
    Unreachable,
}

impl Status {
    /// The exit code this status calls for on its own.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Status::Ok => ExitCode::Ok,
            Status::NotFound | Status::InvalidReference => ExitCode::NotFound,
            Status::WrongPlatform => ExitCode::WrongPlatform,
            Status::Unauthorized | Status::Denied => ExitCode::AccessRefused,
            Status::Unreachable => ExitCode::Unreachable,
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
        }
    }
}

/// The process exit codes: one enum, documented in `--help` and the README.
///
/// When images fail differently the lowest of 3–6 wins, so that a Job's `podFailurePolicy`
/// can fail the Job at once on 3–5 (permanent) and treat 6 (transient) differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ExitCode {
    /// Every image can be pulled.
    Ok = 0,
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
}

impl ExitCode {
    /// The numeric code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The code a set of results adds up to: 0 when all are fine, else the lowest failing code.
    pub fn for_results<'a>(results: impl IntoIterator<Item = &'a ImageResult>) -> ExitCode {
        results
            .into_iter()
            .filter(|r| r.fatal)
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
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  every image can be pulled
  2  usage or configuration error; nothing was checked
  3  an image does not exist, or its reference is invalid (permanent)
  4  an image exists but has no variant for this node's platform
  5  access refused: no credentials, credentials rejected, or no permission
  6  a registry could not be reached, or kept failing, until the deadline (transient)
When images fail differently, the lowest code of 3-6 wins.";

/// The verdict for one image. A failed image is data, not an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageResult {
    /// The reference exactly as given.
    pub image: String,
    /// The normalised reference (`docker.io/library/nginx:latest`); empty when invalid.
    pub reference: String,
    /// `host[:port]` of the registry; empty when the reference is invalid.
    pub registry: String,
    /// The verdict.
    pub status: Status,
    /// A finer, machine-readable reason within the status, e.g. `tag_missing`,
    /// `repository_missing`, `credentials_rejected`, `timeout`.
    pub reason: &'static str,
    /// The manifest digest, when the image exists and the registry said it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// What was found, naming the image, the registry and what was tried.
    pub message: String,
    /// What to do next; empty when the image is fine.
    pub hint: String,
    /// Which credential was used: `anonymous`, or where it came from (never its content).
    pub auth: String,
    /// Whether this result counts towards the exit code.
    pub fatal: bool,
    /// Requests for the manifest, counting retries.
    pub attempts: u32,
    /// Time spent on this image.
    pub elapsed_ms: u64,
    /// The digest of the index entry that matches the node's platform, when an index was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_digest: Option<String>,
    /// The platforms the image has, when none matches the node (`wrong_platform`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub available_platforms: Vec<String>,
    /// Close tags or repositories, when the image is `not_found` (best effort).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
}

impl ImageResult {
    /// Whether the image can be pulled.
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// Sort key: failures first, in exit-code order (the one that decides the exit code first),
    /// then the rest in input order (the sort is stable).
    pub(crate) fn severity(&self) -> (u8, u8) {
        match self.status.exit_code() {
            ExitCode::Ok => (2, 0),
            code if self.fatal => (0, code.code()),
            code => (1, code.code()),
        }
    }
}

/// The result of a whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// pullcheck's version.
    pub version: &'static str,
    /// The node platform the images were checked for (`linux/amd64`), or `any`.
    pub platform: String,
    /// The exit code the results add up to.
    pub exit_code: ExitCode,
    /// One result per distinct image, problems first.
    pub images: Vec<ImageResult>,
    /// What stopped the run before it finished (`SIGTERM`), if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl Report {
    /// Builds a report: orders the results (problems first) and computes the exit code.
    pub fn new(mut images: Vec<ImageResult>) -> Report {
        images.sort_by_key(ImageResult::severity);
        Report {
            version: env!("CARGO_PKG_VERSION"),
            platform: "any".to_string(),
            exit_code: ExitCode::for_results(&images),
            images,
            stopped: None,
        }
    }

    /// The images that cannot be pulled and count towards the exit code.
    pub fn failures(&self) -> impl Iterator<Item = &ImageResult> {
        self.images.iter().filter(|r| !r.is_ok() && r.fatal)
    }

    /// The report as pretty JSON (the `-o json` contract).
    pub fn to_json(&self) -> String {
        // Serialising plain strings and numbers cannot fail; fall back to a minimal document
        // rather than panic if it ever did.
        let json = serde_json::to_string_pretty(self).unwrap_or_else(|_| {
            format!(
                "{{\"version\":\"{}\",\"exit_code\":{},\"images\":[]}}",
                self.version,
                self.exit_code.code()
            )
        });
        escape::escape_json_text(json)
    }

    /// The one-line summary that opens the termination message and ends the text report.
    pub fn summary(&self) -> String {
        let total = self.images.len();
        let failing = self.failures().count();
        let warnings = self
            .images
            .iter()
            .filter(|r| !r.is_ok() && !r.fatal)
            .count();
        if let Some(why) = &self.stopped {
            let unfinished = self.images.iter().filter(|r| r.reason == "stopped").count();
            return format!(
                "pullcheck: stopped by {why} before the check finished ({unfinished} of {total} images not checked)"
            );
        }
        let mut s = if total == 0 {
            "pullcheck: no images to check".to_string()
        } else if failing == 0 {
            let noun = if total == 1 { "image" } else { "images" };
            format!("pullcheck: all {total} {noun} can be pulled")
        } else {
            let noun = if total == 1 { "image" } else { "images" };
            format!("pullcheck: {failing} of {total} {noun} cannot be pulled")
        };
        if warnings > 0 {
            s.push_str(&format!(" ({warnings} not verified, not counted)"));
        }
        s
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn result(image: &str, status: Status) -> ImageResult {
        ImageResult {
            image: image.to_string(),
            reference: format!("docker.io/library/{image}"),
            registry: "docker.io".to_string(),
            status,
            reason: "test",
            digest: None,
            platform_digest: None,
            available_platforms: Vec::new(),
            suggestions: Vec::new(),
            message: format!("{image} is {}", status.as_str()),
            hint: if status == Status::Ok {
                String::new()
            } else {
                "do something".to_string()
            },
            auth: "anonymous".to_string(),
            fatal: true,
            attempts: 1,
            elapsed_ms: 1,
        }
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
        ];
        for (name, statuses, want) in cases {
            let results: Vec<_> = statuses.iter().map(|s| result("x", *s)).collect();
            assert_eq!(ExitCode::for_results(&results), *want, "{name}");
        }
    }

    #[test]
    fn non_fatal_results_do_not_count() {
        let mut r = result("x", Status::Unauthorized);
        r.fatal = false;
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
        let order: Vec<_> = report.images.iter().map(|r| r.image.as_str()).collect();
        assert_eq!(order, ["c", "b", "a", "d"]);
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
        let first = &v["images"][0];
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
        ] {
            assert!(first.get(key).is_some(), "missing {key}");
        }
        assert_eq!(first["status"], "not_found");
        assert!(first.get("digest").is_none());
        assert_eq!(v["images"][1]["digest"], "sha256:00");
    }
}
