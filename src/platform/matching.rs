//! Which entry of an image index a node runs, as containerd chooses: `platforms.Only` (the
//! node's platform, then the older ones it can also run) or `OnlyStrict`, and the preference
//! order among the entries that match.

use super::{ARM64_VERSIONS, Platform};

/// How an image index is resolved for a node; the runtime decides (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchMode {
    /// containerd `platforms.Only`: the node's platform first, then the older platforms it can
    /// also run (`arm64/v8.x`→older `v8.y`, then `arm/v8`…`arm/v5`; `arm/vN`→`arm/vN-1`…`v5`;
    /// `amd64/vN`→`vN-1`…`v1`, then `386`). containerd CRI 1.7 and 2.0.
    Lenient,
    /// containerd `platforms.OnlyStrict`: equal after normalisation. containerd 2.1+ transfer
    /// service, CRI-O.
    Strict,
}

/// Whether an index entry built for `have` can run on a node `want` under `mode`. Both sides
/// are normalised first; the OS must be equal, and entries with OS or architecture `unknown`
/// (BuildKit's attestation manifests, `unknown/unknown`) never match.
pub fn matches(want: &Platform, have: &Platform, mode: MatchMode) -> bool {
    rank(&want.normalize(), &have.normalize(), mode).is_some()
}

/// The index of the entry the runtime would pick for node `want` among an index's entries'
/// platforms, or `None` when none matches: the entry earliest in containerd's preference order
/// (`Only`'s `Less`: the exact platform, then ever older compatible ones), the first one in
/// the index among equals (containerd sorts stably).
pub fn best_match(want: &Platform, candidates: &[Platform], mode: MatchMode) -> Option<usize> {
    let want = want.normalize();
    candidates
        .iter()
        .enumerate()
        .filter_map(|(i, have)| rank(&want, &have.normalize(), mode).map(|r| (r, i)))
        .min()
        .map(|(_, i)| i)
}

/// Where `have` stands in node `want`'s preference order (0 = exact, lower is preferred), or
/// `None` when it does not match: [`best_match`] one entry at a time, for indexes read as they
/// stream. Both must be normalised already ([`Platform::normalize`]; [`Platform::parse`] gives
/// normalised platforms), so that 85,000 entries cost no copies.
pub fn preference(want: &Platform, have: &Platform, mode: MatchMode) -> Option<u64> {
    rank(want, have, mode)
}

/// Position of normalised `have` in the preference order of normalised `want` (0 = exact), or
/// `None` when it does not match. Computed arithmetically rather than by building containerd's
/// `platformVector`, so that a variant such as `v99999999` costs nothing.
pub(super) fn rank(want: &Platform, have: &Platform, mode: MatchMode) -> Option<u64> {
    if have.os == "unknown" || have.architecture == "unknown" || want.os != have.os {
        return None;
    }
    let exact = want.architecture == have.architecture && want.variant == have.variant;
    if mode == MatchMode::Strict {
        return exact.then_some(0);
    }
    let want_variant = want.variant.as_deref().unwrap_or_default();
    match want.architecture.as_str() {
        "arm64" => arm64_rank(want_variant, have),
        "amd64" => {
            let n = go_atoi(want_variant).unwrap_or(0);
            if exact {
                return Some(0);
            }
            // amd64/vN..v1 (v1 is written without a variant), then 386.
            let first_386 = if n > 1 { n.unsigned_abs() } else { 1 };
            match have.architecture.as_str() {
                "386" if have.variant.is_none() => Some(first_386),
                "amd64" if n > 1 => {
                    let m = match have.variant.as_deref() {
                        None => 1,
                        Some(v) => canonical_version(v)?,
                    };
                    (m >= 1 && m < n.unsigned_abs()).then(|| n.unsigned_abs() - m)
                }
                _ => None,
            }
        }
        "arm" => {
            if exact {
                return Some(0);
            }
            arm_rank(go_atoi(want_variant).unwrap_or(0), have)
        }
        _ => exact.then_some(0),
    }
}

/// `arm/vN` then `arm/vN-1`…`arm/v5` (containerd only steps down when N > 5).
pub(super) fn arm_rank(n: i64, have: &Platform) -> Option<u64> {
    if have.architecture != "arm" || n <= 5 {
        return None;
    }
    let m = canonical_version(have.variant.as_deref()?)?;
    let n = n.unsigned_abs();
    (m >= 5 && m < n).then(|| n - m)
}

/// arm64: the variants of [`ARM64_VERSIONS`], then `arm/v8`…`arm/v5`.
pub(super) fn arm64_rank(want_variant: &str, have: &Platform) -> Option<u64> {
    let (_, runs) = ARM64_VERSIONS.iter().find(|(v, _)| *v == want_variant)?;
    let mut position = 0_u64;
    for &(major, top_minor) in *runs {
        for minor in (0..=top_minor).rev() {
            if have.architecture == "arm64" {
                let variant = if minor == 0 {
                    format!("v{major}")
                } else {
                    format!("v{major}.{minor}")
                };
                if have.variant.as_deref() == Some(variant.as_str()) {
                    return Some(position);
                }
            }
            position += 1;
        }
    }
    // Every arm64 variant runs 32-bit arm up to v8 (containerd: "there's no arm v9").
    if have.architecture == "arm" {
        if have.variant.as_deref() == Some("v8") {
            return Some(position);
        }
        return arm_rank(8, have).map(|r| position + r);
    }
    None
}

/// Go's `strconv.Atoi(strings.TrimPrefix(v, "v"))`: one optional `v`, an optional sign,
/// decimal digits (leading zeros allowed), fitting in 64 bits.
pub(super) fn go_atoi(variant: &str) -> Option<i64> {
    variant.strip_prefix('v').unwrap_or(variant).parse().ok()
}

/// `N` when `variant` is exactly `vN` as containerd's loops write it (no sign, no leading zero).
pub(super) fn canonical_version(variant: &str) -> Option<u64> {
    let n: u64 = variant.strip_prefix('v')?.parse().ok()?;
    (format!("v{n}") == variant).then_some(n)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
pub(crate) mod tests {
    use super::*;
    use MatchMode::{Lenient, Strict};

    fn p(s: &str) -> Platform {
        Platform::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    /// (name, node, index entry, matches under Only, matches under OnlyStrict).
    #[rustfmt::skip]
    pub(crate) const MATCH_CASES: &[(&str, &str, &str, bool, bool)] = &[
        // amd64 (containerd TestOnly / TestOnlyStrict "linux/amd64").
        ("amd64 exact", "linux/amd64", "linux/amd64", true, true),
        ("amd64 runs 386", "linux/amd64", "linux/386", true, false),
        ("amd64 not amd64/v2", "linux/amd64", "linux/amd64/v2", false, false),
        ("amd64 not arm/v7", "linux/amd64", "linux/arm/v7", false, false),
        ("amd64 not arm64", "linux/amd64", "linux/arm64", false, false),
        ("amd64 not windows", "linux/amd64", "windows/amd64", false, false),
        ("amd64/v1 is amd64", "linux/amd64", "linux/amd64/v1", true, true),
        ("x86_64 alias", "linux/amd64", "linux/x86_64", true, true),
        ("x86-64 alias", "linux/amd64", "Linux/X86-64", true, true),
        // amd64 variants ("linux/amd64/v2").
        ("amd64/v2 runs v2", "linux/amd64/v2", "linux/amd64/v2", true, true),
        ("amd64/v2 runs v1", "linux/amd64/v2", "linux/amd64", true, false),
        ("amd64/v2 runs explicit v1", "linux/amd64/v2", "linux/amd64/v1", true, false),
        ("amd64/v2 runs 386", "linux/amd64/v2", "linux/386", true, false),
        ("amd64/v2 not v3", "linux/amd64/v2", "linux/amd64/v3", false, false),
        ("amd64/v2 not v4", "linux/amd64/v2", "linux/amd64/v4", false, false),
        ("amd64/v3 runs v2", "linux/amd64/v3", "linux/amd64/v2", true, false),
        ("amd64/v4 runs v3", "linux/amd64/v4", "linux/amd64/v3", true, false),
        ("amd64/v3 not 386 with variant", "linux/amd64/v3", "linux/386/v1", false, false),
        // 386 ("linux/386").
        ("386 exact", "linux/386", "linux/386", true, true),
        ("386 not amd64", "linux/386", "linux/amd64", false, false),
        ("i386 alias", "linux/386", "linux/i386", true, true),
        // 32-bit arm ("linux/arm/v8" … "linux/arm/v4").
        ("arm/v8 runs arm (v7)", "linux/arm/v8", "linux/arm", true, false),
        ("arm/v8 runs v5", "linux/arm/v8", "linux/arm/v5", true, false),
        ("arm/v8 runs v6", "linux/arm/v8", "linux/arm/v6", true, false),
        ("arm/v8 runs v7", "linux/arm/v8", "linux/arm/v7", true, false),
        ("arm/v8 exact", "linux/arm/v8", "linux/arm/v8", true, true),
        ("arm/v8 not v4", "linux/arm/v8", "linux/arm/v4", false, false),
        ("arm/v8 not arm64", "linux/arm/v8", "linux/arm64", false, false),
        ("arm/v7 runs arm", "linux/arm/v7", "linux/arm", true, true),
        ("arm/v7 runs armhf", "linux/arm/v7", "linux/armhf", true, true),
        ("arm/v7 runs v6", "linux/arm/v7", "linux/arm/v6", true, false),
        ("arm/v7 runs v5", "linux/arm/v7", "linux/arm/v5", true, false),
        ("arm/v7 not v8", "linux/arm/v7", "linux/arm/v8", false, false),
        ("arm/v7 not v4", "linux/arm/v7", "linux/arm/v4", false, false),
        ("arm/v6 runs v5", "linux/arm/v6", "linux/arm/v5", true, false),
        ("arm/v6 runs armel", "linux/arm/v6", "linux/armel", true, true),
        ("arm/v6 not arm (v7)", "linux/arm/v6", "linux/arm", false, false),
        ("arm/v5 exact only", "linux/arm/v5", "linux/arm/v5", true, true),
        ("arm/v5 not v4", "linux/arm/v5", "linux/arm/v4", false, false),
        ("arm/v4 exact", "linux/arm/v4", "linux/arm/v4", true, true),
        ("arm/v4 not v5", "linux/arm/v4", "linux/arm/v5", false, false),
        ("arm/7 is v7", "linux/arm/7", "linux/arm/v7", true, true),
        // arm64 ("linux/arm64").
        ("arm64 exact", "linux/arm64", "linux/arm64", true, true),
        ("arm64 v8 explicit", "linux/arm64", "linux/arm64/v8", true, true),
        ("aarch64 alias", "linux/arm64/v8", "linux/aarch64", true, true),
        ("arm64/8 is v8", "linux/arm64", "linux/arm64/8", true, true),
        ("arm64 runs arm/v8", "linux/arm64", "linux/arm/v8", true, false),
        ("arm64 runs arm (v7)", "linux/arm64", "linux/arm", true, false),
        ("arm64 runs arm/v6", "linux/arm64", "linux/arm/v6", true, false),
        ("arm64 runs arm/v5", "linux/arm64", "linux/arm/v5", true, false),
        ("arm64 not arm/v4", "linux/arm64", "linux/arm/v4", false, false),
        ("arm64 not arm/v9", "linux/arm64", "linux/arm/v9", false, false),
        ("arm64 not arm64/v9", "linux/arm64", "linux/arm64/v9", false, false),
        ("arm64 not arm64/v8.1", "linux/arm64", "linux/arm64/v8.1", false, false),
        ("arm64 not amd64", "linux/arm64", "linux/amd64", false, false),
        ("arm64 not windows/arm", "linux/arm64", "windows/arm", false, false),
        // arm64 minor variants ("linux/arm64/v8.1", "v9", "v9.5", "v9.6").
        ("arm64/v8.1 runs v8", "linux/arm64/v8.1", "linux/arm64", true, false),
        ("arm64/v8.1 exact", "linux/arm64/v8.1", "linux/arm64/v8.1", true, true),
        ("arm64/v8.1 runs arm/v7", "linux/arm64/v8.1", "linux/arm/v7", true, false),
        ("arm64/v8.1 not v9", "linux/arm64/v8.1", "linux/arm64/v9", false, false),
        ("arm64/v9 runs v8.5", "linux/arm64/v9", "linux/arm64/v8.5", true, false),
        ("arm64/v9 not v8.6", "linux/arm64/v9", "linux/arm64/v8.6", false, false),
        ("arm64/v9 is v9.0", "linux/arm64/v9", "linux/arm64/v9.0", true, true),
        ("arm64/9 is v9", "linux/arm64/9", "linux/arm64/v9", true, true),
        ("arm64/v9 runs arm/v5", "linux/arm64/v9", "linux/arm/v5", true, false),
        ("arm64/v9 not arm/v9", "linux/arm64/v9", "linux/arm/v9", false, false),
        ("arm64/v9.6 runs v8.9", "linux/arm64/v9.6", "linux/arm64/v8.9", true, false),
        ("arm64/v9.6 runs v9.1", "linux/arm64/v9.6", "linux/arm64/v9.1", true, false),
        ("arm64/v9.6 runs v8", "linux/arm64/v9.6", "linux/arm64", true, false),
        ("arm64/v9.6 no v8.10", "linux/arm64/v9.6", "linux/arm64/v8.10", false, false),
        ("arm64/v9.5 strict", "linux/arm64/v9.5", "linux/arm64/v9.5", true, true),
        ("arm64/v9.5 runs v9.4", "linux/arm64/v9.5", "linux/arm64/v9.4", true, false),
        ("arm64/v9.5 not v9.6", "linux/arm64/v9.5", "linux/arm64/v9.6", false, false),
        ("arm64 unknown variant matches nothing", "linux/arm64/v10", "linux/arm64/v10", false, true),
        ("arm64/v8.10 matches nothing", "linux/arm64/v8.10", "linux/arm64/v8.10", false, true),
        // OS rules.
        ("windows exact", "windows/amd64", "windows/amd64", true, true),
        ("windows OS version ignored", "windows/amd64", "windows(10.0.17763)/amd64", true, true),
        ("windows node OS version ignored", "windows(10.0.17763)/amd64", "windows/amd64", true, true),
        ("windows amd64 runs 386", "windows/amd64", "windows/386", true, false),
        ("windows not linux", "windows/amd64", "linux/amd64", false, false),
        ("windows not arm", "windows/amd64", "windows/arm", false, false),
        ("OS case-insensitive", "linux/amd64", "LINUX/AMD64", true, true),
        ("macos is darwin", "darwin/arm64", "macOS/arm64", true, true),
        // Non-arm, non-x86 architectures only match exactly.
        ("s390x exact", "linux/s390x", "linux/s390x", true, true),
        ("ppc64le not ppc64", "linux/ppc64le", "linux/ppc64", false, false),
        ("riscv64 exact", "linux/riscv64", "linux/riscv64", true, true),
        ("riscv64 not with variant", "linux/riscv64", "linux/riscv64/rva23u64", false, false),
        // Attestations.
        ("attestation never", "linux/amd64", "unknown/unknown", false, false),
        ("attestation never, even for unknown node", "unknown/unknown", "unknown/unknown", false, false),
    ];

    #[test]
    fn match_table() {
        let mut failures = Vec::new();
        for &(name, want, have, lenient, strict) in MATCH_CASES {
            let (want, have) = (p(want), p(have));
            for (mode, expected) in [(Lenient, lenient), (Strict, strict)] {
                let got = matches(&want, &have, mode);
                if got != expected {
                    failures.push(format!("{name}: {mode:?} {want} ← {have}: got {got}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// containerd compare_test.go TestOnly and TestOnlyStrict verbatim: (node, matching,
    /// not matching).
    #[rustfmt::skip]
    #[test]
    fn containerd_only_lists() {
        let only: &[(&str, &[&str], &[&str])] = &[
            ("linux/amd64", &["linux/amd64", "linux/386"], &["linux/amd64/v2", "linux/arm/v7", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/amd64/v2", &["linux/amd64", "linux/amd64/v1", "linux/amd64/v2", "linux/386"], &["linux/amd64/v3", "linux/amd64/v4", "linux/arm/v7", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/386", &["linux/386"], &["linux/amd64", "linux/arm/v7", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("windows/amd64", &["windows/amd64", "windows(10.0.17763)/amd64"], &["linux/amd64", "linux/arm/v7", "linux/arm64", "windows/arm"]),
            ("linux/arm/v8", &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8"], &["linux/amd64", "linux/arm/v4", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v7", &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7"], &["linux/amd64", "linux/arm/v4", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v6", &["linux/arm/v5", "linux/arm/v6"], &["linux/amd64", "linux/arm", "linux/arm/v4", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v5", &["linux/arm/v5"], &["linux/amd64", "linux/arm", "linux/arm/v4", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v4", &["linux/arm/v4"], &["linux/amd64", "linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm64/v9.6", &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "linux/arm64/v8", "linux/arm64/v8.1", "linux/arm64/v8.2", "linux/arm64/v8.3", "linux/arm64/v8.4", "linux/arm64/v8.5", "linux/arm64/v8.6", "linux/arm64/v8.7", "linux/arm64/v8.8", "linux/arm64/v8.9", "linux/arm64/v9", "linux/arm64/v9.0", "linux/arm64/v9.1", "linux/arm64/v9.2", "linux/arm64/v9.3", "linux/arm64/v9.4", "linux/arm64/v9.5", "linux/arm64/v9.6"], &["linux/amd64", "linux/arm/v4", "windows/amd64", "windows/arm", "linux/arm64/v8.10"]),
            ("linux/arm64/v9", &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "linux/arm64/v8", "linux/arm64/v8.1", "linux/arm64/v8.2", "linux/arm64/v8.3", "linux/arm64/v8.4", "linux/arm64/v8.5", "linux/arm64/v9", "linux/arm64/v9.0"], &["linux/amd64", "linux/arm/v4", "windows/amd64", "windows/arm", "linux/arm64/v8.6"]),
            ("linux/arm64/v8.1", &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "linux/arm64/v8", "linux/arm64/v8.1"], &["linux/amd64", "linux/arm/v4", "linux/arm/v9", "linux/arm64/v9", "windows/amd64", "windows/arm"]),
            ("linux/arm64", &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "linux/arm64/v8"], &["linux/amd64", "linux/arm/v4", "linux/arm/v9", "linux/arm64/v9", "windows/amd64", "windows/arm"]),
        ];
        let strict: &[(&str, &[&str], &[&str])] = &[
            ("linux/amd64", &["linux/amd64"], &["linux/386", "linux/arm/v7", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/386", &["linux/386"], &["linux/amd64", "linux/arm/v7", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("windows/amd64", &["windows/amd64", "windows(10.0.17763)/amd64"], &["linux/amd64", "linux/arm/v7", "linux/arm64", "windows/arm"]),
            ("windows(10.0.17763)/amd64", &["windows/amd64", "windows(10.0.17763)/amd64"], &["linux/amd64", "linux/arm/v7", "linux/arm64", "windows/arm"]),
            ("linux/arm/v8", &["linux/arm/v8"], &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/amd64", "linux/arm/v4", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v7", &["linux/arm", "linux/arm/v7"], &["linux/arm/v5", "linux/arm/v6", "linux/amd64", "linux/arm/v4", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v6", &["linux/arm/v6"], &["linux/arm/v5", "linux/amd64", "linux/arm", "linux/arm/v4", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v5", &["linux/arm/v5"], &["linux/amd64", "linux/arm", "linux/arm/v4", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm/v4", &["linux/arm/v4"], &["linux/amd64", "linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/arm64", "windows/amd64", "windows/arm"]),
            ("linux/arm64/v9.5", &["linux/arm64/v9.5"], &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/amd64", "linux/arm/v4", "linux/arm64/v8", "linux/arm64/v8.1", "linux/arm64/v9", "linux/arm64/v9.1", "linux/arm64/v9.4", "windows/amd64", "windows/arm"]),
            ("linux/arm64/v9", &["linux/arm64/v9", "linux/arm64/v9.0"], &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/amd64", "linux/arm/v4", "linux/arm/v9", "linux/arm64/v8", "linux/arm64/v8.1", "windows/amd64", "windows/arm"]),
            ("linux/arm64/v8.1", &["linux/arm64/v8.1"], &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/amd64", "linux/arm/v4", "linux/arm/v9", "linux/arm64/v8", "linux/arm64/v9", "windows/amd64", "windows/arm"]),
            ("linux/arm64", &["linux/arm64", "linux/arm64/v8"], &["linux/arm", "linux/arm/v5", "linux/arm/v6", "linux/arm/v7", "linux/arm/v8", "linux/amd64", "linux/arm/v4", "linux/arm/v9", "linux/arm64/v9", "windows/amd64", "windows/arm"]),
        ];
        let mut failures = Vec::new();
        for (mode, lists) in [(Lenient, only), (Strict, strict)] {
            for &(node, yes, no) in lists {
                for (expected, entries) in [(true, yes), (false, no)] {
                    for entry in entries.iter() {
                        if matches(&p(node), &p(entry), mode) != expected {
                            failures.push(format!("{mode:?} {node} ← {entry}: expected {expected}"));
                        }
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// (name, node, index entries, pick under Only, pick under OnlyStrict).
    type PickCase<'a> = (
        &'a str,
        &'a str,
        &'a [&'a str],
        Option<usize>,
        Option<usize>,
    );

    #[rustfmt::skip]
    #[test]
    fn best_match_table() {
        let cases: &[PickCase<'_>] = &[
            ("exact preferred over 386", "linux/amd64", &["linux/386", "linux/amd64"], Some(1), Some(1)),
            ("386 fallback", "linux/amd64", &["linux/arm64", "linux/386"], Some(1), None),
            ("amd64 variant nearest first", "linux/amd64/v3", &["linux/386", "linux/amd64", "linux/amd64/v2", "linux/amd64/v4"], Some(2), None),
            ("amd64/v3 exact", "linux/amd64/v3", &["linux/amd64", "linux/amd64/v3"], Some(1), Some(1)),
            ("arm64 over arm", "linux/arm64/v8", &["linux/arm/v7", "linux/arm64"], Some(1), Some(1)),
            ("arm64 takes newest arm", "linux/arm64", &["linux/arm/v5", "linux/arm/v7", "linux/arm/v6"], Some(1), None),
            ("arm64 arm/v8 before v7", "linux/arm64", &["linux/arm/v7", "linux/arm/v8"], Some(1), None),
            ("arm64/v8.2 prefers v8.1 over v8", "linux/arm64/v8.2", &["linux/arm64", "linux/arm64/v8.1"], Some(1), None),
            ("arm64/v9 prefers v9 over v8.5", "linux/arm64/v9", &["linux/arm64/v8.5", "linux/arm64/v9.0"], Some(1), Some(1)),
            ("arm/v7 over v6", "linux/arm/v7", &["linux/arm/v6", "linux/arm"], Some(1), Some(1)),
            ("attestations skipped", "linux/amd64", &["unknown/unknown", "linux/amd64"], Some(1), Some(1)),
            ("only attestations", "linux/amd64", &["unknown/unknown"], None, None),
            ("first of equals", "linux/amd64", &["linux/amd64", "linux/amd64/v1"], Some(0), Some(0)),
            ("no candidates", "linux/amd64", &[], None, None),
            ("other OS only", "linux/amd64", &["windows/amd64"], None, None),
        ];
        for &(name, node, entries, lenient, strict) in cases {
            let entries: Vec<Platform> = entries.iter().map(|e| p(e)).collect();
            assert_eq!(best_match(&p(node), &entries, Lenient), lenient, "{name} lenient");
            assert_eq!(best_match(&p(node), &entries, Strict), strict, "{name} strict");
        }
    }

    #[test]
    fn huge_variants_cost_nothing() {
        let node = p("linux/amd64/v9999999999999999");
        assert!(matches(&node, &p("linux/amd64/v2"), Lenient));
        assert!(matches(&node, &p("linux/386"), Lenient));
        let node = p("linux/arm/v9223372036854775807");
        assert!(matches(&node, &p("linux/arm/v5"), Lenient));
        // Go's Atoi fails beyond 64 bits: exact only.
        let node = p("linux/arm/v99999999999999999999");
        assert!(!matches(&node, &p("linux/arm/v5"), Lenient));
        assert!(matches(&node, &node, Lenient));
    }

    #[test]
    fn unnormalised_struct_values_match() {
        let node = Platform {
            os: String::new(),
            architecture: "AArch64".into(),
            variant: Some(String::new()),
        };
        let entry = Platform {
            os: "Linux".into(),
            architecture: "arm".into(),
            variant: Some("7".into()),
        };
        assert!(matches(&node, &entry, Lenient));
        assert!(!matches(&node, &entry, Strict));
    }
}
