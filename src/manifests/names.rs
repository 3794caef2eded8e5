//! Kubernetes' rules for object names (RFC 1123 labels and subdomains), for the names that
//! manifests carry and that `inject` makes: Secrets, volumes.

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
}
