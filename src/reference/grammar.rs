//! The reference grammar of distribution's Go `reference` package, checked by hand rather than
//! by regexp: `Parse` (name, tag, digest, and the length limit), its names, domains and ports,
//! and go-digest's validation. Each rejection says which part failed and why.

use super::{Failure, REPOSITORY_MAX_LEN, ReferenceErrorKind, TAG_MAX_LEN, part};

/// The pieces of a reference accepted by Go `Parse`.
pub(super) struct GoParts<'a> {
    /// `[domain/]path`, everything before the tag and digest.
    pub(super) name: &'a str,
    pub(super) tag: Option<&'a str>,
    pub(super) digest: Option<&'a str>,
}

/// Go `Parse`: the anchored reference regexp, the length limit, then go-digest
/// validation. `s` is non-empty ASCII.
pub(super) fn parse_go(s: &str) -> Result<GoParts<'_>, Failure> {
    // Neither name nor tag can contain '@', so the first '@' starts the digest.
    let (before_digest, digest) = match s.split_once('@') {
        Some((head, digest)) => (head, Some(digest)),
        None => (s, None),
    };
    // The tag cannot contain ':' or '/', and the name has ':' only in a port
    // that a '/' follows: the tag separator is the last ':' after the last '/'.
    let (name, tag) = match before_digest.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
        _ => (before_digest, None),
    };

    let path = check_name(name)?;
    if let Some(tag) = tag {
        check_tag(tag)?;
    }
    if let Some(digest) = digest {
        check_digest_syntax(digest)?;
    }
    if path.len() > REPOSITORY_MAX_LEN {
        return Err(Failure::new(
            ReferenceErrorKind::TooLong,
            format!(
                "repository name is {} characters long, the maximum is {REPOSITORY_MAX_LEN}",
                path.len()
            ),
        ));
    }
    if let Some(digest) = digest {
        validate_digest(digest)?;
    }
    Ok(GoParts { name, tag, digest })
}

/// Matches `(?:domainAndPort/)?remoteName` and returns the path as Go captures
/// it (the optional domain group is greedy, so a valid domain is taken).
pub(super) fn check_name(name: &str) -> Result<&str, Failure> {
    use ReferenceErrorKind as K;

    if let Some((domain, path)) = name.split_once('/') {
        if is_domain(domain) && is_remote_name(path) {
            return Ok(path);
        }
    }
    if is_remote_name(name) {
        return Ok(name);
    }

    let lower = name.to_ascii_lowercase();
    if lower != name && is_name(&lower) {
        return Err(Failure::new(
            K::Uppercase,
            format!("repository name {} must be lowercase", part(name)),
        ));
    }
    Err(match name.split_once('/') {
        Some((domain, _)) if port_out_of_range(domain).is_some() => Failure::new(
            K::InvalidFormat,
            format!(
                "registry {}: port {} is out of range (at most 65535)",
                part(domain),
                part(port_out_of_range(domain).unwrap_or_default())
            ),
        ),
        Some((domain, _)) if !is_domain(domain) => Failure::new(
            K::InvalidFormat,
            format!(
                "registry {} is not a valid host name, IP address or [IPv6], with optional :port",
                part(domain)
            ),
        ),
        Some((_, path)) => path_problem(path),
        None => path_problem(name),
    })
}

pub(super) fn is_name(name: &str) -> bool {
    name.split_once('/')
        .is_some_and(|(domain, path)| is_domain(domain) && is_remote_name(path))
        || is_remote_name(name)
}

/// Explains why `path` is not a valid remote name.
pub(super) fn path_problem(path: &str) -> Failure {
    let kind = ReferenceErrorKind::InvalidFormat;
    for component in path.split('/') {
        if component.is_empty() {
            return Failure::new(
                kind,
                format!("repository path {} has an empty component", part(path)),
            );
        }
        if !is_path_component(component) {
            return Failure::new(
                kind,
                format!(
                    "path component {} must be lower-case letters and digits separated by '.', '_', '__' or '-'",
                    part(component)
                ),
            );
        }
    }
    Failure::new(kind, "invalid repository name")
}

/// `(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.…)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
pub(super) fn is_domain(domain: &str) -> bool {
    if let Some(rest) = domain.strip_prefix('[') {
        let Some((address, after)) = rest.split_once(']') else {
            return false;
        };
        let port_ok = match after.strip_prefix(':') {
            Some(port) => is_port(port),
            None => after.is_empty(),
        };
        !address.is_empty()
            && address.bytes().all(|b| b.is_ascii_hexdigit() || b == b':')
            && port_ok
    } else {
        match domain.split_once(':') {
            Some((host, port)) => is_domain_name(host) && is_port(port),
            None => is_domain_name(domain),
        }
    }
}

/// Digits that make a TCP port: at most 65535, as the runtime's URL parser requires (the
/// reference grammar alone would take any number of digits).
pub(super) fn is_port(port: &str) -> bool {
    !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok()
}

/// The port of a `host:port` or `[v6]:port` registry when it is digits but above 65535.
pub(super) fn port_out_of_range(domain: &str) -> Option<&str> {
    let port = match domain.strip_prefix('[') {
        Some(rest) => rest.split_once("]:")?.1,
        None => domain.split_once(':')?.1,
    };
    (!port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !is_port(port)).then_some(port)
}

pub(super) fn is_domain_name(host: &str) -> bool {
    host.split('.').all(|component| {
        let bytes = component.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                first.is_ascii_alphanumeric()
                    && last.is_ascii_alphanumeric()
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            }
            _ => false,
        }
    })
}

/// `pathComponent(?:/pathComponent)*`
pub(super) fn is_remote_name(path: &str) -> bool {
    path.split('/').all(is_path_component)
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
pub(super) fn is_path_component(component: &str) -> bool {
    let is_alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    // Each maximal run between two alphanumerics must be exactly one separator.
    is_alnum(first)
        && is_alnum(last)
        && component
            .split(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            .all(|separator| {
                matches!(separator, "" | "." | "_" | "__") || separator.bytes().all(|b| b == b'-')
            })
}

/// `[\w][\w.-]{0,127}`
pub(super) fn check_tag(tag: &str) -> Result<(), Failure> {
    let kind = ReferenceErrorKind::InvalidTag;
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let Some(&first) = tag.as_bytes().first() else {
        return Err(Failure::new(kind, "the tag after ':' is empty"));
    };
    if tag.len() > TAG_MAX_LEN {
        return Err(Failure::new(
            kind,
            format!(
                "tag is {} characters long, the maximum is {TAG_MAX_LEN}",
                tag.len()
            ),
        ));
    }
    if !is_word(first) {
        return Err(Failure::new(
            kind,
            format!("tag {} must not start with '.' or '-'", part(tag)),
        ));
    }
    if !tag.bytes().all(|b| is_word(b) || b == b'.' || b == b'-') {
        return Err(Failure::new(
            kind,
            format!(
                "tag {} may only contain letters, digits, '_', '.' and '-'",
                part(tag)
            ),
        ));
    }
    Ok(())
}

/// `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[[:xdigit:]]{32,}`
pub(super) fn check_digest_syntax(digest: &str) -> Result<(), Failure> {
    let kind = ReferenceErrorKind::InvalidDigest;
    let Some((algorithm, encoded)) = digest.split_once(':') else {
        return Err(Failure::new(
            kind,
            format!("digest {} must be algorithm:hex", part(digest)),
        ));
    };
    let algorithm_ok = algorithm.split(['-', '_', '+', '.']).all(|word| {
        word.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
            && word.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    if !algorithm_ok {
        return Err(Failure::new(
            kind,
            format!("digest algorithm {} is malformed", part(algorithm)),
        ));
    }
    if encoded.len() < 32 || !encoded.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(match expected_hex_len(algorithm) {
            Some(len) => Failure::new(
                kind,
                format!("{algorithm} digest must be {len} lower-case hex digits"),
            ),
            None => Failure::new(
                kind,
                format!(
                    "digest {} must be algorithm:hex with at least 32 hex digits",
                    part(digest)
                ),
            ),
        });
    }
    Ok(())
}

/// go-digest `Digest.Validate` with sha256, sha384 and sha512 registered.
pub(super) fn validate_digest(digest: &str) -> Result<(), Failure> {
    let (algorithm, encoded) = digest.split_once(':').unwrap_or((digest, ""));
    let Some(len) = expected_hex_len(algorithm) else {
        // go-digest's own algorithm grammar is lower case only.
        return Err(if algorithm.bytes().any(|b| b.is_ascii_uppercase()) {
            Failure::new(
                ReferenceErrorKind::InvalidDigest,
                format!("digest algorithm {} must be lower case", part(algorithm)),
            )
        } else {
            Failure::new(
                ReferenceErrorKind::UnsupportedDigestAlgorithm,
                format!(
                    "digest algorithm {} is not supported (use sha256, sha384 or sha512)",
                    part(algorithm)
                ),
            )
        });
    };
    let lower_hex = encoded
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if encoded.len() != len || !lower_hex {
        return Err(Failure::new(
            ReferenceErrorKind::InvalidDigest,
            format!("{algorithm} digest must be {len} lower-case hex digits"),
        ));
    }
    Ok(())
}

pub(super) fn expected_hex_len(algorithm: &str) -> Option<usize> {
    match algorithm {
        "sha256" => Some(64),
        "sha384" => Some(96),
        "sha512" => Some(128),
        _ => None,
    }
}

/// Go `anchoredIdentifierRegexp`: `^[a-f0-9]{64}$`.
pub(super) fn is_hex_identifier(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
