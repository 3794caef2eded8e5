//! Kubernetes' rules for object names (RFC 1123 labels and subdomains) and qualified names,
//! for the names that manifests carry and that pullcheck makes: Secrets, volumes, the
//! watcher's condition type.

/// An RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub(crate) fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// An RFC 1123 subdomain (a Secret's name): labels joined by dots, at most 253 characters.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// A qualified name, as the API server takes a condition type or a label key: an optional DNS
/// subdomain and `/`, then 1 to 63 letters, digits, `-`, `_` or `.`, starting and ending with a
/// letter or digit. The webhook and the watcher check `--condition-type` with it at start, so
/// that the rule added can never have a Job refused and both agree on what is valid.
#[cfg(any(feature = "webhook", feature = "watch"))]
pub(crate) fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, s),
    };
    let alnum = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    prefix.is_none_or(|p| !p.is_empty() && is_dns_subdomain(p))
        && !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && alnum(name.bytes().next())
        && alnum(name.bytes().last())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_dns_subdomains() {
        assert!(is_dns_subdomain("regcred"));
        assert!(is_dns_subdomain("reg.example-1.com"));
        for bad in ["", "Reg", "reg_cred", "-a", "a-", "a..b", ".a", "a/b"] {
            assert!(!is_dns_subdomain(bad), "{bad:?}");
        }
        assert!(!is_dns_subdomain(&"a.".repeat(127)));
    }

    #[test]
    #[cfg(any(feature = "webhook", feature = "watch"))]
    fn condition_types_are_qualified_names() {
        for good in ["ConfigIssue", "example.com/Stuck", "a", "A-b_c.9"] {
            assert!(is_qualified_name(good), "{good}");
        }
        for bad in [
            "",
            "Config Issue",
            "-a",
            "a-",
            "/a",
            "Example.com/a",
            "a/b/c",
            "a=b",
            &"a".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad:?}");
        }
        let label = "d".repeat(63);
        let longest = format!(
            "{label}.{label}.{label}.{}/{}",
            "d".repeat(61),
            "n".repeat(63)
        );
        assert!(is_qualified_name(&longest));
    }
}
