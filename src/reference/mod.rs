//! Container image references: parsing and normalisation of strings such as
//! `nginx`, `quay.io/org/app:v1` or `reg:5000/x@sha256:…` into registry,
//! repository, tag and digest, following exactly the rules the container runtime
//! applies (Go `github.com/distribution/reference`, `ParseNormalizedNamed` plus
//! `TagNameOnly`, with `go-digest` validation for sha256/sha384/sha512). A
//! reference that this module accepts is one the runtime accepts, and it resolves
//! to the same registry and repository the runtime would pull from (we also map
//! `registry-1.docker.io`, the host serving Docker Hub, to `docker.io`, so it gets
//! the `library/` prefix like `index.docker.io` does). We do not use
//! oci-spec's `Reference` because it differs from the runtime in ways that matter
//! here: it accepts `Uppercase/x` repositories the runtime rejects, and it maps
//! `registry-1.docker.io/nginx` to `nginx` without the `library/` prefix, which is
//! not the repository the runtime pulls. Everything here is plain `std` and never
//! panics, whatever the input.

mod grammar;

use grammar::{is_hex_identifier, parse_go};
use std::fmt;
use std::str::FromStr;

/// Docker Hub's canonical registry name in references.
pub(crate) const DOCKER_HUB: &str = "docker.io";
/// The host that actually serves Docker Hub's registry API.
pub(crate) const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// Docker Hub's legacy name ("the Docker Index"), normalised to [`DOCKER_HUB`].
const LEGACY_DOCKER_HUB: &str = "index.docker.io";
/// Namespace of Docker Hub's official images (`nginx` is `library/nginx`).
const OFFICIAL_REPO_PREFIX: &str = "library/";
/// Tag used when a reference has neither tag nor digest.
const DEFAULT_TAG: &str = "latest";
/// Always treated as a registry when it is the first path element.
const LOCALHOST: &str = "localhost";
/// Maximum length of the repository path (Go `RepositoryNameTotalLengthMax`;
/// since distribution/reference v0.6.0 the registry does not count).
const REPOSITORY_MAX_LEN: usize = 255;
/// Maximum length of a tag.
const TAG_MAX_LEN: usize = 128;
/// The prefix of the input shown in error messages, in characters.
const SHOWN_INPUT_CHARS: usize = 100;
/// The prefix of a reference part shown in error details, in characters.
const SHOWN_PART_CHARS: usize = 40;

/// A normalised container image reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// `host[:port]` as the runtime sees it, `docker.io` for Docker Hub (never index.docker.io / registry-1.docker.io)
    pub(crate) registry: String,
    /// repository path inside the registry, e.g. `library/nginx`
    pub(crate) repository: String,
    /// the tag; `latest` is filled in when neither tag nor digest was given
    pub(crate) tag: Option<String>,
    /// `algorithm:hex`
    pub(crate) digest: Option<String>,
}

impl Reference {
    /// Parses and normalises `input` the way the container runtime does
    /// (`nginx` becomes `docker.io/library/nginx:latest`). Nothing is trimmed.
    ///
    /// # Errors
    ///
    /// A [`ReferenceError`] when the runtime would reject `input`; its `Display`
    /// names the input and the offending part.
    pub fn parse(input: &str) -> Result<Reference, ReferenceError> {
        analyse(input).map_err(|failure| ReferenceError {
            input: input.to_owned(),
            kind: failure.kind,
        })
    }

    /// `host[:port]` to send API requests to: `registry-1.docker.io` for docker.io, else `registry`.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// What goes after `/manifests/`: the digest when there is one (a digest wins over a tag), else the tag.
    ///
    /// A hand-built value with neither gives `latest`, as the runtime would.
    pub fn manifest_ref(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or(DEFAULT_TAG)
    }
}

impl FromStr for Reference {
    type Err = ReferenceError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        Reference::parse(input)
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Why a string is not a valid image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceError {
    /// The rejected input, unmodified.
    pub(crate) input: String,
    /// What is wrong with it.
    pub(crate) kind: ReferenceErrorKind,
}

/// The class of a [`ReferenceError`].
///
/// Acceptance is exactly the runtime's; the classification is ours and more
/// specific than Go's catch-all "invalid reference format" (a bad tag is
/// [`InvalidTag`](Self::InvalidTag), not `InvalidFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ReferenceErrorKind {
    /// The input is the empty string.
    Empty,
    /// The repository path is longer than 255 characters.
    TooLong,
    /// The repository name contains upper-case letters.
    Uppercase,
    /// The registry or repository name is malformed, or the input contains a
    /// character that no reference may contain (whitespace, control, non-ASCII…).
    InvalidFormat,
    /// The tag is empty, longer than 128 characters or contains invalid characters.
    InvalidTag,
    /// The digest is not `algorithm:hex` or its hex part does not fit the algorithm.
    InvalidDigest,
    /// The digest algorithm is well formed but not sha256, sha384 or sha512.
    UnsupportedDigestAlgorithm,
    /// The input is 64 lower-case hex characters (an image ID, not a name).
    HexIdentifier,
}

impl fmt::Display for ReferenceErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "reference is empty",
            Self::TooLong => "repository name must not be more than 255 characters",
            Self::Uppercase => "repository name must be lowercase",
            Self::InvalidFormat => "invalid reference format",
            Self::InvalidTag => "invalid tag format",
            Self::InvalidDigest => "invalid digest format",
            Self::UnsupportedDigestAlgorithm => "unsupported digest algorithm",
            Self::HexIdentifier => "cannot specify 64-byte hexadecimal strings",
        })
    }
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The detail is recomputed from the input so that the public struct stays
        // `{ input, kind }`; a hand-built error falls back to the kind's text.
        let detail = match analyse(&self.input) {
            Err(failure) if failure.kind == self.kind => failure.detail,
            _ => self.kind.to_string(),
        };
        let (shown, truncated) = quoted_excerpt(&self.input, SHOWN_INPUT_CHARS);
        write!(f, "invalid reference {shown}")?;
        if truncated {
            write!(f, " ({} characters)", self.input.chars().count())?;
        }
        write!(f, ": {detail}")
    }
}

impl std::error::Error for ReferenceError {}

/// A rejection with a human-readable detail (which never embeds more than
/// [`SHOWN_PART_CHARS`] characters of the input).
struct Failure {
    kind: ReferenceErrorKind,
    detail: String,
}

impl Failure {
    fn new(kind: ReferenceErrorKind, detail: impl Into<String>) -> Self {
        Failure {
            kind,
            detail: detail.into(),
        }
    }
}

/// `ParseNormalizedNamed` followed by `TagNameOnly`.
fn analyse(input: &str) -> Result<Reference, Failure> {
    use ReferenceErrorKind as K;

    if input.is_empty() {
        return Err(Failure::new(K::Empty, "the reference is empty"));
    }
    // No character outside this set is valid anywhere in a reference, so
    // rejecting them first changes no outcome, only the message. Afterwards the
    // input is ASCII, and ASCII case folding is exactly Go's strings.ToLower.
    if let Some((position, c)) = input
        .chars()
        .enumerate()
        .find(|&(_, c)| !is_reference_char(c))
    {
        return Err(Failure::new(
            K::InvalidFormat,
            format!("contains {} at position {}", describe_char(c), position + 1),
        ));
    }
    if is_hex_identifier(input) {
        return Err(Failure::new(
            K::HexIdentifier,
            "cannot specify 64-byte hexadecimal strings (an image ID is not a name)",
        ));
    }

    let (domain, remainder) = split_docker_domain(input);

    // Go checks the remainder up to its first ':' for upper case. We stop at '@'
    // too, so that `x@SHA256:…` is reported as a digest problem; acceptance is
    // unchanged because an upper-case algorithm never validates.
    let remote = before(before(&remainder, ':'), '@');
    if remote.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(Failure::new(
            K::Uppercase,
            format!("repository name {} must be lowercase", part(remote)),
        ));
    }

    let normalized = format!("{domain}/{remainder}");
    let parts = parse_go(&normalized)?;

    // Go's name is `domain/remainder-name`. Go leaves the domain empty when the
    // first element is not a valid host but the whole name is a valid path
    // (`my_reg.io/app`); like containerd, we still pull from that first element.
    let Some(repository) = parts
        .name
        .strip_prefix(domain)
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return Err(Failure::new(K::InvalidFormat, "invalid reference format"));
    };

    let tag = match (parts.tag, parts.digest) {
        (None, None) => Some(DEFAULT_TAG.to_owned()),
        (tag, _) => tag.map(str::to_owned),
    };
    Ok(Reference {
        registry: domain.to_owned(),
        repository: repository.to_owned(),
        tag,
        digest: parts.digest.map(str::to_owned),
    })
}

/// The part of `s` before the first `sep`, or all of `s`.
fn before(s: &str, sep: char) -> &str {
    s.split_once(sep).map_or(s, |(head, _)| head)
}

/// Go `splitDockerDomain`, plus `registry-1.docker.io` → `docker.io`.
fn split_docker_domain(name: &str) -> (&str, String) {
    let Some((maybe_domain, maybe_remainder)) = name.split_once('/') else {
        return (DOCKER_HUB, format!("{OFFICIAL_REPO_PREFIX}{name}"));
    };
    let (domain, remainder) = if maybe_domain == LOCALHOST {
        (maybe_domain, maybe_remainder)
    } else if maybe_domain == LEGACY_DOCKER_HUB || maybe_domain == DOCKER_HUB_API {
        (DOCKER_HUB, maybe_remainder)
    } else if maybe_domain.contains(['.', ':'])
        || maybe_domain.bytes().any(|b| b.is_ascii_uppercase())
    {
        (maybe_domain, maybe_remainder)
    } else {
        (DOCKER_HUB, name)
    };
    if domain == DOCKER_HUB && !remainder.contains('/') {
        (domain, format!("{OFFICIAL_REPO_PREFIX}{remainder}"))
    } else {
        (domain, remainder.to_owned())
    }
}

/// Characters that occur somewhere in the reference grammar.
fn is_reference_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '@' | '[' | ']' | '+')
}

fn describe_char(c: char) -> String {
    if c == ' ' {
        return "a space".to_owned();
    }
    let what = if c.is_whitespace() {
        "whitespace"
    } else if c.is_control() {
        "the control character"
    } else if !c.is_ascii() {
        "the non-ASCII character"
    } else {
        "the character"
    };
    let escaped: String = if c == '\'' {
        "\\'".to_owned()
    } else {
        c.escape_debug().collect()
    };
    format!("{what} '{escaped}'")
}

/// A quoted, escaped excerpt of a part of the input, for error details.
fn part(s: &str) -> String {
    quoted_excerpt(s, SHOWN_PART_CHARS).0
}

/// `s` in double quotes with `{:?}`-style escapes, cut (on a char boundary, with
/// `…`) so that at most `max` characters appear between the quotes. Returns
/// whether it was cut.
fn quoted_excerpt(s: &str, max: usize) -> (String, bool) {
    let mut out = String::from("\"");
    let mut shown = 0;
    let mut truncated = false;
    for c in s.chars() {
        let escaped: String = match c {
            '\'' => "'".to_owned(),
            _ => c.escape_debug().collect(),
        };
        let width = escaped.chars().count();
        if shown + width > max {
            truncated = true;
            break;
        }
        out.push_str(&escaped);
        shown += width;
    }
    if truncated {
        out.push('…');
    }
    out.push('"');
    (out, truncated)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use ReferenceErrorKind as K;

    const HEX64: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    struct Want {
        registry: &'static str,
        repository: String,
        tag: Option<String>,
        digest: Option<String>,
        display: String,
    }

    struct Case {
        name: &'static str,
        input: String,
        want: Result<Want, ReferenceErrorKind>,
    }

    fn ok(
        name: &'static str,
        input: impl Into<String>,
        registry: &'static str,
        repository: impl Into<String>,
        tag: Option<&str>,
        digest: Option<&str>,
        display: impl Into<String>,
    ) -> Case {
        Case {
            name,
            input: input.into(),
            want: Ok(Want {
                registry,
                repository: repository.into(),
                tag: tag.map(str::to_owned),
                digest: digest.map(str::to_owned),
                display: display.into(),
            }),
        }
    }

    fn err(name: &'static str, input: impl Into<String>, kind: ReferenceErrorKind) -> Case {
        Case {
            name,
            input: input.into(),
            want: Err(kind),
        }
    }

    #[rustfmt::skip]
    fn cases() -> Vec<Case> {
        let sha = format!("sha256:{HEX64}");
        let sha384 = format!("sha384:{}", &format!("{HEX64}{HEX64}")[..96]);
        let latest = Some("latest");
        vec![
            // Docker Hub normalisation.
            ok("official image", "nginx", DOCKER_HUB, "library/nginx", latest, None, "docker.io/library/nginx:latest"),
            ok("official image with tag", "nginx:1.25", DOCKER_HUB, "library/nginx", Some("1.25"), None, "docker.io/library/nginx:1.25"),
            ok("explicit library", "library/nginx", DOCKER_HUB, "library/nginx", latest, None, "docker.io/library/nginx:latest"),
            ok("docker.io without library", "docker.io/nginx", DOCKER_HUB, "library/nginx", latest, None, "docker.io/library/nginx:latest"),
            ok("legacy index.docker.io", "index.docker.io/nginx", DOCKER_HUB, "library/nginx", latest, None, "docker.io/library/nginx:latest"),
            ok("registry-1.docker.io is Docker Hub", "registry-1.docker.io/nginx", DOCKER_HUB, "library/nginx", latest, None, "docker.io/library/nginx:latest"),
            ok("registry-1.docker.io with user", "registry-1.docker.io/user/app:v2", DOCKER_HUB, "user/app", Some("v2"), None, "docker.io/user/app:v2"),
            ok("fully qualified", "docker.io/library/nginx:latest", DOCKER_HUB, "library/nginx", latest, None, "docker.io/library/nginx:latest"),
            ok("user repository", "user/repo", DOCKER_HUB, "user/repo", latest, None, "docker.io/user/repo:latest"),
            ok("nested Docker Hub path", "library/foo/bar", DOCKER_HUB, "library/foo/bar", latest, None, "docker.io/library/foo/bar:latest"),
            ok("64 chars, not all hex", "thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev", DOCKER_HUB, "library/thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev", latest, None, "docker.io/library/thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev:latest"),
            ok("hex with a registry", format!("docker.io/{HEX64}"), DOCKER_HUB, format!("library/{HEX64}"), latest, None, format!("docker.io/library/{HEX64}:latest")),
            ok("IP without slash is a name", "192.168.0.1:80", DOCKER_HUB, "library/192.168.0.1", Some("80"), None, "docker.io/library/192.168.0.1:80"),
            ok("host:port without slash is name:tag", "localhost:5000", DOCKER_HUB, "library/localhost", Some("5000"), None, "docker.io/library/localhost:5000"),
            // Other registries.
            ok("localhost", "localhost/a", "localhost", "a", latest, None, "localhost/a:latest"),
            ok("localhost with port", "localhost:5000/a", "localhost:5000", "a", latest, None, "localhost:5000/a:latest"),
            ok("dotted registry", "a.b/c", "a.b", "c", latest, None, "a.b/c:latest"),
            ok("deep path with tag", "a.b/c/d/e:tag", "a.b", "c/d/e", Some("tag"), None, "a.b/c/d/e:tag"),
            ok("IPv4 with port", "127.0.0.1:5000/team/app:v1", "127.0.0.1:5000", "team/app", Some("v1"), None, "127.0.0.1:5000/team/app:v1"),
            ok("IPv6 with port", "[::1]:5000/a:b", "[::1]:5000", "a", Some("b"), None, "[::1]:5000/a:b"),
            ok("IPv6 without port", "[fc00::1]/docker/docker", "[fc00::1]", "docker/docker", latest, None, "[fc00::1]/docker/docker:latest"),
            ok("digest only", format!("quay.io/org/img@{sha}"), "quay.io", "org/img", None, Some(&sha), format!("quay.io/org/img@{sha}")),
            ok("Docker Hub digest", format!("x@{sha}"), DOCKER_HUB, "library/x", None, Some(&sha), format!("docker.io/library/x@{sha}")),
            ok("tag and digest", format!("x:t@{sha}"), DOCKER_HUB, "library/x", Some("t"), Some(&sha), format!("docker.io/library/x:t@{sha}")),
            ok("sha512 digest", format!("r.io/x@sha512:{HEX64}{HEX64}"), "r.io", "x", None, Some(&format!("sha512:{HEX64}{HEX64}")), format!("r.io/x@sha512:{HEX64}{HEX64}")),
            ok("sha384 digest", format!("r.io/x@{sha384}"), "r.io", "x", None, Some(&sha384), format!("r.io/x@{sha384}")),
            ok("sha256 as a name: tag is the hex", format!("sha256:{HEX64}"), DOCKER_HUB, "library/sha256", Some(HEX64), None, format!("docker.io/library/sha256:{HEX64}")),
            // Case rules.
            ok("upper-case first element is a registry (Go FIXME)", "Upper/x", "Upper", "x", latest, None, "Upper/x:latest"),
            ok("upper-case registry", "LOCALDOMAIN/library/debian", "LOCALDOMAIN", "library/debian", latest, None, "LOCALDOMAIN/library/debian:latest"),
            ok("upper-case tag", "lowercase:Uppercase", DOCKER_HUB, "library/lowercase", Some("Uppercase"), None, "docker.io/library/lowercase:Uppercase"),
            ok("upper-case registry host kept", "Docker.io/foo", "Docker.io", "foo", latest, None, "Docker.io/foo:latest"),
            err("upper-case repository", "upper/X", K::Uppercase),
            err("upper-case after docker.io", "docker.io/Upper/x", K::Uppercase),
            err("upper-case official image", "Uppercase:tag", K::Uppercase),
            err("upper-case after host:port", "test:5000/Uppercase/lowercase:tag", K::Uppercase),
            err("upper-case after localhost:port", "localhost:5000/A", K::Uppercase),
            err("upper-case Docker.io path", "Docker.io/Foo", K::Uppercase),
            err("upper-case registry that is a path", "Up_per/x", K::Uppercase),
            // Path components.
            ok("dashes", "a--b", DOCKER_HUB, "library/a--b", latest, None, "docker.io/library/a--b:latest"),
            ok("double underscore", "a__b", DOCKER_HUB, "library/a__b", latest, None, "docker.io/library/a__b:latest"),
            ok("all separators", "a.b_c__d-e---f", DOCKER_HUB, "library/a.b_c__d-e---f", latest, None, "docker.io/library/a.b_c__d-e---f:latest"),
            ok("single letters", "d/t", DOCKER_HUB, "d/t", latest, None, "docker.io/d/t:latest"),
            ok("underscore host is a path in Go, registry for us", "my_reg.io/app", "my_reg.io", "app", latest, None, "my_reg.io/app:latest"),
            err("triple underscore", "a___b", K::InvalidFormat),
            err("empty component", "a//b", K::InvalidFormat),
            err("leading dash", "-a/b", K::InvalidFormat),
            err("trailing dash", "a/b-", K::InvalidFormat),
            err("double period", "dock..er/docker", K::InvalidFormat),
            err("mixed separator", "dock_.er/docker", K::InvalidFormat),
            err("trailing slash", "docker/", K::InvalidFormat),
            err("leading slash", "/nginx", K::InvalidFormat),
            err("URL", "https://github.com/docker/docker", K::InvalidFormat),
            err("bad registry port", "a.b:x/c", K::InvalidFormat),
            err("port above 65535", "127.0.0.1:99999/a:1", K::InvalidFormat),
            err("IPv6 port above 65535", "[::1]:65536/a", K::InvalidFormat),
            ok("port 65535", "127.0.0.1:65535/a:1", "127.0.0.1:65535", "a", Some("1"), None, "127.0.0.1:65535/a:1"),
            err("registry with trailing dot", "a.b./c", K::InvalidFormat),
            err("IPv6 without slash", "[fc00::1]:5000", K::InvalidFormat),
            err("IPv6 without brackets", "fc00::1:5000/debian", K::InvalidFormat),
            err("IPv6 zone", "[fe80::1%eth0]:5000/debian", K::InvalidFormat),
            err("IPv6 mapped IPv4", "[2001:db8:3:4::192.0.2.33]:5000/debian", K::InvalidFormat),
            err("plus in name", "a+b", K::InvalidFormat),
            // Hex identifier, empty, tags.
            err("64-hex identifier", HEX64, K::HexIdentifier),
            err("empty", "", K::Empty),
            err("empty tag", "nginx:", K::InvalidTag),
            err("no name", ":tag", K::InvalidFormat),
            err("tag starts with dash", "nginx:-x", K::InvalidTag),
            err("tag starts with period", "nginx:.x", K::InvalidTag),
            err("plus in tag", "nginx:a+b", K::InvalidTag),
            ok("128-char tag", format!("nginx:{}", "t".repeat(128)), DOCKER_HUB, "library/nginx", Some(&"t".repeat(128)), None, format!("docker.io/library/nginx:{}", "t".repeat(128))),
            err("129-char tag", format!("nginx:{}", "t".repeat(129)), K::InvalidTag),
            ok("tag with underscore start", "nginx:_x.y-Z", DOCKER_HUB, "library/nginx", Some("_x.y-Z"), None, "docker.io/library/nginx:_x.y-Z"),
            err("two tags", "nginx:a:b", K::InvalidFormat),
            // Digests.
            err("short digest", "nginx@sha256:abc", K::InvalidDigest),
            err("unsupported algorithm", format!("nginx@md5:{}", &HEX64[..32]), K::UnsupportedDigestAlgorithm),
            err("upper-case hex", format!("nginx@sha256:{}", HEX64.to_uppercase()), K::InvalidDigest),
            err("sha256 too long", format!("nginx@sha256:{HEX64}00"), K::InvalidDigest),
            err("upper-case algorithm", format!("nginx@SHA256:{HEX64}"), K::InvalidDigest),
            err("digest without algorithm", format!("nginx@{HEX64}"), K::InvalidDigest),
            err("empty digest", "nginx@", K::InvalidDigest),
            err("two digests", format!("nginx@{sha}@{sha}"), K::InvalidDigest),
            err("digest before tag", format!("nginx@{sha}:t"), K::InvalidDigest),
            // Whitespace, control and non-ASCII characters.
            err("inner space", "with space", K::InvalidFormat),
            err("leading space", " nginx", K::InvalidFormat),
            err("trailing newline", "nginx\n", K::InvalidFormat),
            err("non-ASCII", "ngïnx", K::InvalidFormat),
            err("Kelvin sign", "\u{212A}/x", K::InvalidFormat),
            err("NUL", "ng\0inx", K::InvalidFormat),
            err("escape sequence", "nginx\u{1b}[31m", K::InvalidFormat),
            err("DEL", "nginx\u{7f}", K::InvalidFormat),
            // Length of the repository path (the registry does not count).
            err("300-char name", "a".repeat(300), K::TooLong),
            err("128 path components", format!("{}a:tag", "a/".repeat(128)), K::TooLong),
            ok("255-char path", format!("{}a:tag-puts-this-over-max", "a/".repeat(127)), DOCKER_HUB, format!("{}a", "a/".repeat(127)), Some("tag-puts-this-over-max"), None, format!("docker.io/{}a:tag-puts-this-over-max", "a/".repeat(127))),
            ok("255-char path behind a registry", format!("example.com/{}:tag", "a".repeat(255)), "example.com", "a".repeat(255), Some("tag"), None, format!("example.com/{}:tag", "a".repeat(255))),
            err("256-char path behind a registry", format!("example.com/{}", "a".repeat(256)), K::TooLong),
            err("too long namespace", "this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255_this_is_not_a_valid_namespace_because_its_lenth_is_greater_than_255/docker", K::TooLong),
        ]
    }

    #[test]
    fn table() {
        let mut failures = Vec::new();
        for case in cases() {
            let got = Reference::parse(&case.input);
            let problem = match (&case.want, &got) {
                (Ok(want), Ok(r)) => {
                    let display = r.to_string();
                    (r.registry != want.registry
                        || r.repository != want.repository
                        || r.tag != want.tag
                        || r.digest != want.digest
                        || display != want.display)
                        .then(|| format!("got {r:?} displayed {display:?}"))
                }
                (Err(kind), Err(e)) => (e.kind != *kind).then(|| format!("got error {e}")),
                (Ok(_), Err(e)) => Some(format!("unexpected error {e}")),
                (Err(kind), Ok(r)) => Some(format!("expected {kind:?}, got {r:?}")),
            };
            if let Some(problem) = problem {
                failures.push(format!("{} ({:?}): {problem}", case.name, case.input));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn normalisation_is_idempotent() {
        for case in cases().into_iter().filter(|c| c.want.is_ok()) {
            let first = Reference::parse(&case.input).unwrap();
            let again = Reference::parse(&first.to_string()).unwrap();
            assert_eq!(first, again, "{}", case.name);
            assert_eq!(first, case.input.parse::<Reference>().unwrap());
        }
    }

    /// distribution/reference normalize_test.go TestValidateReferenceName and
    /// TestValidateRemoteName.
    #[test]
    fn go_validity_lists() {
        let valid = [
            "docker/docker",
            "library/debian",
            "debian",
            "localhost/library/debian",
            "localhost/debian",
            "LOCALDOMAIN/library/debian",
            "LOCALDOMAIN/debian",
            "docker.io/docker/docker",
            "docker.io/library/debian",
            "docker.io/debian",
            "index.docker.io/docker/docker",
            "index.docker.io/library/debian",
            "index.docker.io/debian",
            "127.0.0.1:5000/docker/docker",
            "127.0.0.1:5000/library/debian",
            "127.0.0.1:5000/debian",
            "192.168.0.1",
            "192.168.0.1:80",
            "192.168.0.1:8/debian",
            "192.168.0.2:25000/debian",
            "thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev",
            "[fc00::1]:5000/docker",
            "[fc00::1]:5000/docker/docker",
            "[fc00:1:2:3:4:5:6:7]:5000/library/debian",
            "docker.io/1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
            "Docker/docker",
            "DOCKER/docker",
            "docker-rules/docker",
            "docker---rules/docker",
            "doc/docker",
            "d/docker",
            "jess/t",
            "dock__er/docker",
            "busybox:latest@sha256:86e0e091d0da6bde2456dbb48306f3956bbeb2eae1b5b9a43045843f69fe4aaa",
            "dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9",
            "dbcc1",
        ];
        let invalid = [
            "https://github.com/docker/docker",
            "docker/Docker",
            "-docker",
            "-docker/docker",
            "-docker.io/docker/docker",
            "docker///docker",
            "docker.io/docker/Docker",
            "docker.io/docker///docker",
            "[fc00::1]",
            "[fc00::1]:5000",
            "fc00::1:5000/debian",
            "[fe80::1%eth0]:5000/debian",
            "[2001:db8:3:4::192.0.2.33]:5000/debian",
            "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
            "docker-/docker",
            "-docker-/docker",
            "____/____",
            "_docker/_docker",
            "dock..er/docker",
            "dock_.er/docker",
            "dock-.er/docker",
            "docker/",
            "aa/asdf$$^/aa",
            "-foo",
        ];
        for input in valid {
            assert!(Reference::parse(input).is_ok(), "{input} should be valid");
        }
        for input in invalid {
            assert!(
                Reference::parse(input).is_err(),
                "{input} should be invalid"
            );
        }
    }

    #[test]
    fn go_parse_repository_info() {
        // (input, registry, repository) from TestParseRepositoryInfo.
        let cases = [
            ("localhost/fooo/bar", "localhost", "fooo/bar"),
            ("LOCALDOMAIN/fooo", "LOCALDOMAIN", "fooo"),
            ("fooo/bar", DOCKER_HUB, "fooo/bar"),
            ("index.docker.io/fooo/bar", DOCKER_HUB, "fooo/bar"),
            ("ubuntu", DOCKER_HUB, "library/ubuntu"),
            ("library/ubuntu", DOCKER_HUB, "library/ubuntu"),
            ("other/library", DOCKER_HUB, "other/library"),
            (
                "127.0.0.1:8000/private/moonbase",
                "127.0.0.1:8000",
                "private/moonbase",
            ),
            (
                "example.com:8000/privatebasee",
                "example.com:8000",
                "privatebasee",
            ),
            (
                "index.docker.io/library/ubuntu-12.04-base",
                DOCKER_HUB,
                "library/ubuntu-12.04-base",
            ),
            ("docker.io/foo", DOCKER_HUB, "library/foo"),
            ("store/foo/bar", DOCKER_HUB, "store/foo/bar"),
            ("Foo/bar", "Foo", "bar"),
            ("FOO/bar", "FOO", "bar"),
        ];
        for (input, registry, repository) in cases {
            let r = Reference::parse(input).unwrap();
            assert_eq!(
                (r.registry.as_str(), r.repository.as_str()),
                (registry, repository),
                "{input}"
            );
        }
    }

    #[test]
    fn api_host_and_manifest_ref() {
        let hub = Reference::parse("nginx").unwrap();
        assert_eq!(hub.api_host(), DOCKER_HUB_API);
        assert_eq!(hub.manifest_ref(), "latest");
        let hub = Reference::parse("registry-1.docker.io/library/nginx:1.25").unwrap();
        assert_eq!(hub.registry, DOCKER_HUB);
        assert_eq!(hub.api_host(), DOCKER_HUB_API);
        assert_eq!(hub.manifest_ref(), "1.25");

        let local = Reference::parse("localhost:5000/a:b").unwrap();
        assert_eq!(local.api_host(), "localhost:5000");
        let v6 = Reference::parse("[::1]:5000/a").unwrap();
        assert_eq!(v6.api_host(), "[::1]:5000");

        let sha = format!("sha256:{HEX64}");
        let both = Reference::parse(&format!("quay.io/org/img:v1@{sha}")).unwrap();
        assert_eq!(both.api_host(), "quay.io");
        assert_eq!(both.tag.as_deref(), Some("v1"));
        assert_eq!(both.manifest_ref(), sha);
        let digest = Reference::parse(&format!("img@{sha}")).unwrap();
        assert_eq!(digest.tag, None);
        assert_eq!(digest.manifest_ref(), sha);

        let bare = Reference {
            registry: "r.io".into(),
            repository: "x".into(),
            tag: None,
            digest: None,
        };
        assert_eq!(bare.manifest_ref(), "latest");
        assert_eq!(bare.to_string(), "r.io/x");
    }

    #[test]
    fn error_messages() {
        let msg = |input: &str| Reference::parse(input).unwrap_err().to_string();
        assert_eq!(
            msg("Docker.io/Foo"),
            r#"invalid reference "Docker.io/Foo": repository name "Foo" must be lowercase"#
        );
        assert_eq!(
            msg("Uppercase:tag"),
            r#"invalid reference "Uppercase:tag": repository name "library/Uppercase" must be lowercase"#
        );
        assert_eq!(msg(""), r#"invalid reference "": the reference is empty"#);
        assert_eq!(
            msg(" nginx"),
            r#"invalid reference " nginx": contains a space at position 1"#
        );
        assert_eq!(
            msg("ng\u{1b}inx\n"),
            r#"invalid reference "ng\u{1b}inx\n": contains the control character '\u{1b}' at position 3"#
        );
        assert_eq!(
            msg("ngïnx"),
            r#"invalid reference "ngïnx": contains the non-ASCII character 'ï' at position 3"#
        );
        assert_eq!(
            msg("a___b"),
            r#"invalid reference "a___b": path component "a___b" must be lower-case letters and digits separated by '.', '_', '__' or '-'"#
        );
        assert_eq!(
            msg("a//b"),
            r#"invalid reference "a//b": repository path "a//b" has an empty component"#
        );
        assert_eq!(
            msg("127.0.0.1:99999/a:1"),
            r#"invalid reference "127.0.0.1:99999/a:1": registry "127.0.0.1:99999": port "99999" is out of range (at most 65535)"#
        );
        assert_eq!(
            msg("nginx:"),
            r#"invalid reference "nginx:": the tag after ':' is empty"#
        );
        assert_eq!(
            msg("nginx@sha256:abc"),
            r#"invalid reference "nginx@sha256:abc": sha256 digest must be 64 lower-case hex digits"#
        );
        assert_eq!(
            msg(&format!("nginx@md5:{}", &HEX64[..32])),
            format!(
                r#"invalid reference "nginx@md5:{}": digest algorithm "md5" is not supported (use sha256, sha384 or sha512)"#,
                &HEX64[..32]
            )
        );
        assert_eq!(
            msg("a.b:x/c"),
            r#"invalid reference "a.b:x/c": registry "a.b:x" is not a valid host name, IP address or [IPv6], with optional :port"#
        );
        assert!(msg(HEX64).contains("cannot specify 64-byte hexadecimal strings"));

        // Huge input: cut to 100 characters plus "…", the length given.
        let huge = format!("{}:tag", "a".repeat(10_000));
        let m = msg(&huge);
        assert!(
            m.starts_with(&format!(
                "invalid reference \"{}…\" (10004 characters): ",
                "a".repeat(100)
            )),
            "{m}"
        );
        assert!(
            m.ends_with("repository name is 10008 characters long, the maximum is 255"),
            "{m}"
        );
        assert!(m.chars().count() <= 300, "{m}");

        // Multi-byte characters are cut on a char boundary.
        let m = msg(&"é".repeat(500));
        assert!(
            m.starts_with(&format!(
                "invalid reference \"{}…\" (500 characters)",
                "é".repeat(100)
            )),
            "{m}"
        );

        // Control characters are escaped, and count towards the shown length.
        let m = msg(&"\u{1}".repeat(1000));
        assert!(!m.contains('\u{1}'), "{m}");
        assert!(m.chars().count() <= 300, "{m}");

        // A hand-built error still displays.
        let e = ReferenceError {
            input: "nginx".into(),
            kind: K::Empty,
        };
        assert_eq!(
            e.to_string(),
            r#"invalid reference "nginx": reference is empty"#
        );
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(boxed.to_string().contains("nginx"));
    }

    #[test]
    fn error_messages_are_short_and_clean() {
        let long_tag = format!("x:{}", "T".repeat(5000));
        let long_digest = format!("x@sha256:{}", "a".repeat(5000));
        let long_alg = format!("x@{}:{HEX64}", "md".repeat(3000));
        let long_component = format!("{}_", "a".repeat(5000));
        let long_registry = format!("{}.io:x/a", "a".repeat(5000));
        let inputs = [
            long_tag.as_str(),
            &long_digest,
            &long_alg,
            &long_component,
            &long_registry,
            &"Ü".repeat(5000),
            &"\u{202e}".repeat(400),
        ];
        for case in cases().iter().map(|c| c.input.as_str()).chain(inputs) {
            if let Err(e) = Reference::parse(case) {
                let m = e.to_string();
                assert!(m.chars().count() <= 300, "{} chars: {m}", m.chars().count());
                assert!(!m.chars().any(char::is_control), "{m:?}");
                assert!(!m.contains('\u{202e}'), "{m:?}");
                assert!(m.starts_with("invalid reference \""), "{m}");
            }
        }
    }

    /// A small deterministic fuzz: no panics, accepted references are stable
    /// under re-parsing, and error messages stay short.
    #[test]
    fn never_panics() {
        let alphabet: Vec<char> = "aZ0._-/:@[]+ ~é\u{0}f9".chars().collect();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..50_000 {
            let len = (next() % 24) as usize;
            let s: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            match Reference::parse(&s) {
                Ok(r) => assert_eq!(Reference::parse(&r.to_string()).unwrap(), r, "{s:?}"),
                Err(e) => assert!(e.to_string().chars().count() <= 300),
            }
        }
    }
}
