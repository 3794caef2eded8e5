//! Platforms (`os/arch/variant`) of the node and of image-index entries, and which index entry
//! the container runtime would pull for the node, following `github.com/containerd/platforms`
//! (v1.0.0-rc.x: `Parse`, `Normalize`, `Only`, `OnlyStrict`, `cpuinfo_linux.go`).
//!
//! Which matcher applies depends on the runtime: containerd's CRI plugin in 1.7 and 2.0 resolves
//! an index with `platforms.Only` (lenient: an `arm64` node also takes `arm/v8`…`arm/v5`, an
//! `amd64` node also takes `386`, older variants of the same architecture are accepted, the
//! exact platform preferred), while containerd 2.1+ pulling through the transfer service and
//! CRI-O match strictly (`platforms.OnlyStrict`: equal after normalisation). See [`MatchMode`].
//!
//! Everything here works on normalised platforms ([`Platform::normalize`]); OS versions and OS
//! features (`windows(10.0.17763+win32k)`) are accepted by [`Platform::parse`] but not kept,
//! since a Linux node ignores them. Nothing panics, whatever the input.

use std::fmt;
use std::sync::OnceLock;

/// The OS of the node: pullcheck checks pulls for Kubernetes Linux nodes, so [`Platform::host`],
/// an architecture-only specifier and an empty OS all mean Linux.
const NODE_OS: &str = "linux";
/// The prefix of a specifier shown in error messages, in characters.
const SHOWN_CHARS: usize = 64;
/// The variant of 32-bit ARM when it cannot be read from the CPU (containerd's `Normalize`
/// turns the empty variant it then uses into `v7`).
const DEFAULT_ARM_VARIANT: &str = "v7";

/// Operating systems Go knows (containerd `database.go` `isKnownOS`).
const KNOWN_OS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "js",
    "linux",
    "nacl",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "windows",
    "zos",
];

/// Architectures Go knows (containerd `database.go` `isKnownArch`).
const KNOWN_ARCH: &[&str] = &[
    "386",
    "amd64",
    "amd64p32",
    "arm",
    "armbe",
    "arm64",
    "arm64be",
    "ppc64",
    "ppc64le",
    "loong64",
    "mips",
    "mipsle",
    "mips64",
    "mips64le",
    "mips64p32",
    "mips64p32le",
    "ppc",
    "riscv",
    "riscv64",
    "s390",
    "s390x",
    "sparc",
    "sparc64",
    "wasm",
];

/// The arm64 variants an arm64 node accepts under [`MatchMode::Lenient`], as `(major, highest
/// minor)` runs tried from the highest minor down to `.0` (containerd `compare.go`
/// `arm64variantToVersion`): v9.x is a superset of v8.(x+5), capped at v8.9. A variant missing
/// here (`v8.10`, `v9.8`, `v10`) matches nothing at all under `Only`, not even itself.
const ARM64_VERSIONS: &[(&str, &[(u8, u8)])] = &[
    ("v8", &[(8, 0)]),
    ("v8.1", &[(8, 1)]),
    ("v8.2", &[(8, 2)]),
    ("v8.3", &[(8, 3)]),
    ("v8.4", &[(8, 4)]),
    ("v8.5", &[(8, 5)]),
    ("v8.6", &[(8, 6)]),
    ("v8.7", &[(8, 7)]),
    ("v8.8", &[(8, 8)]),
    ("v8.9", &[(8, 9)]),
    ("v9", &[(9, 0), (8, 5)]),
    ("v9.1", &[(9, 1), (8, 6)]),
    ("v9.2", &[(9, 2), (8, 7)]),
    ("v9.3", &[(9, 3), (8, 8)]),
    ("v9.4", &[(9, 4), (8, 9)]),
    ("v9.5", &[(9, 5), (8, 9)]),
    ("v9.6", &[(9, 6), (8, 9)]),
    ("v9.7", &[(9, 7), (8, 9)]),
];

/// An OCI platform: what a node runs, or what an image-index entry was built for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Platform {
    /// `linux`, `windows`, … (lower case once normalised)
    pub os: String,
    /// Go's architecture names: `amd64`, `arm64`, `arm`, `386`, `ppc64le`, `s390x`, …
    pub architecture: String,
    /// CPU variant: `v7` for arm, `v8` for arm64, `v2`…`v4` for amd64 (none for amd64 v1)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl Platform {
    /// Parses a platform specifier the way containerd's `platforms.Parse` does and normalises
    /// it: `linux/arm64/v8`, `linux/amd64`, `linux` (the architecture is the host's, see
    /// [`Platform::host`]), `arm64` (an architecture alone means Linux), with aliases such as
    /// `x86_64`, `aarch64`, `armhf`, `armel`, `macOS`. An OS may carry containerd's options,
    /// `windows(10.0.17763+win32k)`; they are checked and dropped.
    ///
    /// # Errors
    ///
    /// A message naming the offending part: empty input or component, a character outside
    /// `[A-Za-z0-9_.-]`, a wildcard, more than three components, or a single word that is
    /// neither a known OS nor a known architecture.
    pub fn parse(s: &str) -> Result<Platform, String> {
        let shown = shorten(s);
        let fail = |why: String| Err(format!("invalid platform {shown:?}: {why}"));
        if s.is_empty() {
            return fail("empty; expected os[/arch[/variant]], e.g. \"linux/amd64\"".into());
        }
        if s.contains('*') {
            return fail("wildcards are not supported".into());
        }
        let parts: Vec<&str> = s.splitn(4, '/').collect();
        if parts.len() > 3 {
            return fail("too many '/'-separated components; expected os/arch[/variant]".into());
        }
        let os_part = parts.first().copied().unwrap_or_default();
        let os = match os_name(os_part) {
            Ok(os) => normalize_os(os),
            Err(why) => return fail(why),
        };
        for (what, part) in ["architecture", "variant"].iter().zip(parts.iter().skip(1)) {
            if let Err(why) = check_component(what, part) {
                return fail(why);
            }
        }
        match parts.as_slice() {
            [_] => {
                if KNOWN_OS.contains(&os.as_str()) {
                    let host = Platform::host();
                    return Ok(Platform { os, ..host });
                }
                // Not an OS: an architecture of the node's OS (containerd: runtime.GOOS).
                let (architecture, variant) = normalize_arch(os_part, "");
                if KNOWN_ARCH.contains(&architecture.as_str()) {
                    return Ok(Platform {
                        os: NODE_OS.to_owned(),
                        architecture,
                        variant,
                    });
                }
                fail(format!(
                    "{:?} is neither a known operating system nor a known architecture",
                    shorten(os_part)
                ))
            }
            [_, arch] => {
                let (architecture, variant) = normalize_arch(arch, "");
                Ok(Platform {
                    os,
                    architecture,
                    variant,
                })
            }
            [_, arch, variant] => {
                let (architecture, variant) = normalize_arch(arch, variant);
                Ok(Platform {
                    os,
                    architecture,
                    variant,
                })
            }
            _ => fail("expected os/arch[/variant]".into()),
        }
    }

    /// The platform this process runs on, which is the node's when pullcheck runs natively:
    /// always `linux` (see the module doc), and the architecture of the running binary in Go's
    /// names (`x86_64`→`amd64`, `aarch64`→`arm64/v8`, `x86`→`386`, `powerpc64`→`ppc64le` or
    /// `ppc64`, `loongarch64`→`loong64`, `mips64`→`mips64le` or `mips64`, …). 32-bit ARM reads
    /// its variant from `/proc/cpuinfo` as containerd does (`CPU architecture`, with the
    /// Raspberry Pi ARMv6 quirk), then `/proc/sys/kernel/arch` (the `uname -m` containerd falls
    /// back to), and is `v7` when neither can be read. Computed once.
    pub fn host() -> Platform {
        static HOST: OnceLock<Platform> = OnceLock::new();
        HOST.get_or_init(|| {
            let arch = go_arch(std::env::consts::ARCH, cfg!(target_endian = "little"));
            let variant = match arch {
                "arm64" => Some("v8".to_owned()),
                "arm" => Some(host_arm_variant()),
                _ => None,
            };
            Platform {
                os: NODE_OS.to_owned(),
                architecture: arch.to_owned(),
                variant,
            }
            .normalize()
        })
        .clone()
    }

    /// The canonical form (containerd `Normalize`): OS lower case, `macos`→`darwin`, empty →
    /// `linux`; architecture and variant lower case, `x86_64`/`x86-64`→`amd64` (`v1` dropped),
    /// `i386`→`386` (variant dropped), `aarch64`→`arm64` with `8`/`v8.0`/none → `v8` and
    /// `9`/`9.0`/`v9.0` → `v9`, `armhf`→`arm/v7`, `armel`→`arm/v6`, `arm` with no variant or `7`
    /// → `v7`, `arm/5`, `/6`, `/8` → `v5`, `v6`, `v8`. Other names are only lower-cased; an empty
    /// variant is none. Idempotent.
    ///
    /// containerd writes arm64 v8 as no variant; we show `v8` (what the node reports), which
    /// matches the same entries.
    pub fn normalize(&self) -> Platform {
        let (architecture, variant) = normalize_arch(
            &self.architecture,
            self.variant.as_deref().unwrap_or_default(),
        );
        Platform {
            os: normalize_os(&self.os),
            architecture,
            variant,
        }
    }
}

impl fmt::Display for Platform {
    /// `os/arch/variant` with empty parts left out (containerd `Format`), `unknown` without OS.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.os.is_empty() {
            return f.write_str("unknown");
        }
        f.write_str(&self.os)?;
        for part in [Some(self.architecture.as_str()), self.variant.as_deref()]
            .into_iter()
            .flatten()
            .filter(|p| !p.is_empty())
        {
            write!(f, "/{part}")?;
        }
        Ok(())
    }
}

/// The variants a known architecture has (after normalisation), or `None` for an architecture
/// without a list of its own (any variant is taken as given). `amd64` v1 is written without a
/// variant; `386` has none.
pub fn known_variants(architecture: &str) -> Option<Vec<&'static str>> {
    match architecture {
        "amd64" => Some(vec!["v1", "v2", "v3", "v4"]),
        "arm64" => Some(ARM64_VERSIONS.iter().map(|(v, _)| *v).collect()),
        "arm" => Some(vec!["v5", "v6", "v7", "v8"]),
        _ => None,
    }
}

impl Platform {
    /// The variant, when the architecture has a list of known variants and the variant is not
    /// one of them (`linux/amd64/v9`): no runtime reports it, so no index entry will match.
    pub fn unknown_variant(&self) -> Option<&str> {
        let variant = self.variant.as_deref()?;
        let known = known_variants(&self.architecture)?;
        (!known.contains(&variant)).then_some(variant)
    }
}

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
fn rank(want: &Platform, have: &Platform, mode: MatchMode) -> Option<u64> {
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
fn arm_rank(n: i64, have: &Platform) -> Option<u64> {
    if have.architecture != "arm" || n <= 5 {
        return None;
    }
    let m = canonical_version(have.variant.as_deref()?)?;
    let n = n.unsigned_abs();
    (m >= 5 && m < n).then(|| n - m)
}

/// arm64: the variants of [`ARM64_VERSIONS`], then `arm/v8`…`arm/v5`.
fn arm64_rank(want_variant: &str, have: &Platform) -> Option<u64> {
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
fn go_atoi(variant: &str) -> Option<i64> {
    variant.strip_prefix('v').unwrap_or(variant).parse().ok()
}

/// `N` when `variant` is exactly `vN` as containerd's loops write it (no sign, no leading zero).
fn canonical_version(variant: &str) -> Option<u64> {
    let n: u64 = variant.strip_prefix('v')?.parse().ok()?;
    (format!("v{n}") == variant).then_some(n)
}

/// containerd `normalizeOS`, with an empty OS meaning the node's (Linux).
fn normalize_os(os: &str) -> String {
    if os.is_empty() {
        return NODE_OS.to_owned();
    }
    let os = os.to_lowercase();
    if os == "macos" {
        "darwin".to_owned()
    } else {
        os
    }
}

/// containerd `normalizeArch`, with arm64 v8 written `v8` rather than left empty.
fn normalize_arch(arch: &str, variant: &str) -> (String, Option<String>) {
    let arch = arch.to_lowercase();
    let variant = variant.to_lowercase();
    let (arch, variant): (&str, &str) = match arch.as_str() {
        "i386" => ("386", ""),
        "x86_64" | "x86-64" | "amd64" => ("amd64", if variant == "v1" { "" } else { &variant }),
        "aarch64" | "arm64" => (
            "arm64",
            match variant.as_str() {
                "" | "8" | "v8" | "v8.0" => "v8",
                "9" | "9.0" | "v9.0" => "v9",
                other => other,
            },
        ),
        "armhf" => ("arm", "v7"),
        "armel" => ("arm", "v6"),
        "arm" => (
            "arm",
            match variant.as_str() {
                "" | "7" => "v7",
                "5" => "v5",
                "6" => "v6",
                "8" => "v8",
                other => other,
            },
        ),
        other => (other, &variant),
    };
    let variant = (!variant.is_empty()).then(|| variant.to_owned());
    (arch.to_owned(), variant)
}

/// The OS name of a specifier's first component, `name[(version[+feature]*)]` (containerd
/// `osRe`); the options are validated and dropped.
fn os_name(part: &str) -> Result<&str, String> {
    let (name, options) = match part.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(options) => (name, Some(options)),
            None => {
                return Err(format!(
                    "OS {:?} opens '(' without closing it at the end",
                    shorten(part)
                ));
            }
        },
        None => (part, None),
    };
    if name.is_empty() {
        return Err("the OS (before the first '/') is empty".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "OS {:?} contains {c:?}; only letters, digits, '_' and '-' are allowed",
            shorten(name)
        ));
    }
    if let Some(options) = options {
        let option_char = |c: char| c.is_ascii_alphanumeric() || "_.%-".contains(c);
        let mut pieces = options.split('+');
        let version = pieces.next().unwrap_or_default();
        if let Some(c) = version.chars().find(|c| !option_char(*c)) {
            return Err(format!("OS version {:?} contains {c:?}", shorten(version)));
        }
        for feature in pieces {
            if feature.is_empty() {
                return Err(format!("empty OS feature in {:?}", shorten(options)));
            }
            if let Some(c) = feature.chars().find(|c| !option_char(*c)) {
                return Err(format!("OS feature {:?} contains {c:?}", shorten(feature)));
            }
        }
    }
    Ok(name)
}

/// containerd `specifierRe` for the architecture and variant components.
fn check_component(what: &str, part: &str) -> Result<(), String> {
    if part.is_empty() {
        return Err(format!("the {what} component is empty"));
    }
    match part
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_.-".contains(*c)))
    {
        Some(c) => Err(format!(
            "{what} {:?} contains {c:?}; only letters, digits, '_', '.' and '-' are allowed",
            shorten(part)
        )),
        None => Ok(()),
    }
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_owned(),
    }
}

/// Go's `GOARCH` for Rust's `std::env::consts::ARCH`.
fn go_arch(rust_arch: &str, little_endian: bool) -> &str {
    match (rust_arch, little_endian) {
        ("x86_64", _) => "amd64",
        ("x86", _) => "386",
        ("aarch64", true) => "arm64",
        ("aarch64", false) => "arm64be",
        ("arm", true) => "arm",
        ("arm", false) => "armbe",
        ("powerpc64", true) => "ppc64le",
        ("powerpc64", false) => "ppc64",
        ("powerpc", _) => "ppc",
        ("mips", true) => "mipsle",
        ("mips", false) => "mips",
        ("mips64", true) => "mips64le",
        ("mips64", false) => "mips64",
        ("loongarch64", _) => "loong64",
        ("wasm32", _) => "wasm",
        (other, _) => other,
    }
}

/// The 32-bit ARM variant of this machine as containerd's `getCPUVariant` finds it.
fn host_arm_variant() -> String {
    let from_cpuinfo = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| arm_variant_from_cpuinfo(&text));
    let raw = from_cpuinfo.or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/arch")
            .ok()
            .and_then(|machine| variant_from_machine(machine.trim()))
    });
    match raw {
        Some(raw) => canonical_arm_variant(&raw).to_owned(),
        None => DEFAULT_ARM_VARIANT.to_owned(),
    }
}

/// The raw `CPU architecture` value of the first processor in `/proc/cpuinfo` text (key
/// compared case-insensitively, value up to the next ':'), turned into `6` on the Raspberry Pi
/// ARMv6 boards whose kernel reports 7 (`model name: ARMv6-compatible …`).
fn arm_variant_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    let field = |key: &str| {
        cpuinfo.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let value = fields.next()?;
            name.trim()
                .eq_ignore_ascii_case(key)
                .then(|| value.trim().to_owned())
        })
    };
    let variant = field("CPU architecture")?;
    if variant == "7"
        && field("model name")
            .is_some_and(|m| m.to_ascii_lowercase().starts_with("armv6-compatible"))
    {
        return Some("6".to_owned());
    }
    Some(variant)
}

/// containerd `getCPUVariantFromArch`: the raw variant in a `uname -m` machine name
/// (`armv7l` → `7`, `aarch64` → `8`, another `armvN…` → `unknown`), `None` when it is not ARM.
fn variant_from_machine(machine: &str) -> Option<String> {
    let machine = machine.to_ascii_lowercase();
    if machine == "aarch64" {
        return Some("8".to_owned());
    }
    let digit = machine.strip_prefix("armv")?.chars().next()?;
    Some(match digit {
        '3'..='8' => digit.to_string(),
        _ => "unknown".to_owned(),
    })
}

/// containerd's final mapping of a raw CPU architecture value to a variant.
fn canonical_arm_variant(raw: &str) -> &'static str {
    match raw.to_ascii_lowercase().as_str() {
        "8" | "aarch64" => "v8",
        "7" | "7m" | "?(12)" | "?(13)" | "?(14)" | "?(15)" | "?(16)" | "?(17)" => "v7",
        "6" | "6tej" => "v6",
        "5" | "5t" | "5te" | "5tej" => "v5",
        "4" | "4t" => "v4",
        "3" => "v3",
        _ => "unknown",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use MatchMode::{Lenient, Strict};

    fn p(s: &str) -> Platform {
        Platform::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    /// (name, node, index entry, matches under Only, matches under OnlyStrict).
    #[rustfmt::skip]
    const MATCH_CASES: &[(&str, &str, &str, bool, bool)] = &[
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

    /// (name, input, Ok(display) or Err(part of the message)); containerd platforms_test.go
    /// TestParseSelector and TestParseSelectorInvalid, plus ours.
    #[rustfmt::skip]
    #[test]
    fn parse_table() {
        let host = Platform::host();
        let host_linux = host.to_string();
        let host_darwin = format!("darwin{}", &host_linux["linux".len()..]);
        let host_windows = format!("windows{}", &host_linux["linux".len()..]);
        let cases: Vec<(&str, &str, Result<&str, &str>)> = vec![
            ("os/arch", "linux/amd64", Ok("linux/amd64")),
            ("arm64 gains v8", "linux/arm64", Ok("linux/arm64/v8")),
            ("arm64/v8", "linux/arm64/v8", Ok("linux/arm64/v8")),
            ("arm64/v8.0", "linux/arm64/v8.0", Ok("linux/arm64/v8")),
            ("arm64/9.0", "linux/arm64/9.0", Ok("linux/arm64/v9")),
            ("arm64/v8.2 kept", "linux/arm64/v8.2", Ok("linux/arm64/v8.2")),
            ("arm gains v7", "linux/arm", Ok("linux/arm/v7")),
            ("arm/v6", "linux/arm/v6", Ok("linux/arm/v6")),
            ("arm/v7", "linux/arm/v7", Ok("linux/arm/v7")),
            ("arm/6", "linux/arm/6", Ok("linux/arm/v6")),
            ("arm/4 not prefixed (containerd)", "linux/arm/4", Ok("linux/arm/4")),
            ("amd64/v1 dropped", "linux/amd64/v1", Ok("linux/amd64")),
            ("amd64/V3 lower-cased", "linux/amd64/V3", Ok("linux/amd64/v3")),
            ("i386 drops variant", "linux/i386/foo", Ok("linux/386")),
            ("i686 is not an alias in containerd", "linux/i686", Ok("linux/i686")),
            ("arch only", "arm", Ok("linux/arm/v7")),
            ("armel", "armel", Ok("linux/arm/v6")),
            ("armhf", "armhf", Ok("linux/arm/v7")),
            ("armhf ignores variant", "linux/armhf/v6", Ok("linux/arm/v7")),
            ("Aarch64", "Aarch64", Ok("linux/arm64/v8")),
            ("x86_64", "x86_64", Ok("linux/amd64")),
            ("Linux/x86_64", "Linux/x86_64", Ok("linux/amd64")),
            ("i386", "i386", Ok("linux/386")),
            ("s390x", "s390x", Ok("linux/s390x")),
            ("linux/s390x", "linux/s390x", Ok("linux/s390x")),
            ("os only is host", "linux", Ok(&host_linux)),
            ("macOS", "macOS", Ok(&host_darwin)),
            ("windows", "windows", Ok(&host_windows)),
            ("windows()", "windows()", Ok(&host_windows)),
            ("windows version", "windows(10.0.17763)", Ok(&host_windows)),
            ("windows version and feature", "windows(10.0.17763+win32k)/amd64", Ok("windows/amd64")),
            ("linux features", "linux(+gpu+simd)/arm64", Ok("linux/arm64/v8")),
            ("escaped version", "windows(10.0.17763%2Bbuild.42)/amd64", Ok("windows/amd64")),
            ("unknown os with arch", "plan10/amd64", Ok("plan10/amd64")),
            ("attestation", "unknown/unknown", Ok("unknown/unknown")),
            ("empty", "", Err("empty")),
            ("leading slash", "/linux/arm", Err("OS (before the first '/') is empty")),
            ("trailing slash", "linux/arm/", Err("variant component is empty")),
            ("empty arch", "linux//v7", Err("architecture component is empty")),
            ("space", "linux /arm", Err("OS \"linux \" contains ' '")),
            ("bad character", "linux/&arm", Err("architecture \"&arm\" contains '&'")),
            ("too many components", "linux/arm/foo/bar", Err("too many")),
            ("wildcard", "linux/*", Err("wildcards")),
            ("unknown word", "foo", Err("neither a known operating system nor a known architecture")),
            ("unclosed options", "windows(10.0/amd64", Err("without closing")),
            ("empty feature", "linux(+)/amd64", Err("empty OS feature")),
            ("bad version char", "windows(10 0)/amd64", Err("OS version \"10 0\" contains ' '")),
            ("non-ASCII", "linüx/amd64", Err("contains 'ü'")),
        ];
        let mut failures = Vec::new();
        for (name, input, want) in cases {
            let got = Platform::parse(input);
            let ok = match (&got, want) {
                (Ok(p), Ok(display)) => p.to_string() == display && p.normalize() == *p,
                (Err(e), Err(part)) => e.contains(part) && e.contains("invalid platform"),
                _ => false,
            };
            if !ok {
                failures.push(format!("{name} ({input:?}): got {got:?}, want {want:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn display_round_trips() {
        for &(_, want, have, _, _) in MATCH_CASES {
            for platform in [p(want), p(have)] {
                assert_eq!(p(&platform.to_string()), platform);
            }
        }
        let empty = Platform {
            os: String::new(),
            architecture: "amd64".into(),
            variant: None,
        };
        assert_eq!(empty.to_string(), "unknown");
    }

    #[test]
    fn long_input_is_shortened_in_errors() {
        let err = Platform::parse(&format!("linux/{}", "&".repeat(1000))).unwrap_err();
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn serializes_like_oci() {
        let json = serde_json::to_string(&p("linux/arm/v7")).unwrap();
        assert_eq!(
            json,
            r#"{"os":"linux","architecture":"arm","variant":"v7"}"#
        );
        let json = serde_json::to_string(&p("linux/amd64")).unwrap();
        assert_eq!(json, r#"{"os":"linux","architecture":"amd64"}"#);
    }

    #[test]
    fn host_is_linux_and_normalised() {
        let host = Platform::host();
        assert_eq!(host.os, "linux");
        assert_eq!(host.normalize(), host);
        assert!(!host.architecture.is_empty());
        assert_eq!(Platform::parse("linux").unwrap(), host);
        assert!(matches(&host, &host, Lenient));
    }

    #[rustfmt::skip]
    #[test]
    fn go_arch_table() {
        let cases = [
            ("x86_64", true, "amd64"), ("x86", true, "386"), ("aarch64", true, "arm64"),
            ("aarch64", false, "arm64be"), ("arm", true, "arm"), ("powerpc64", true, "ppc64le"),
            ("powerpc64", false, "ppc64"), ("s390x", false, "s390x"), ("riscv64", true, "riscv64"),
            ("loongarch64", true, "loong64"), ("mips64", true, "mips64le"), ("mips64", false, "mips64"),
            ("mips", true, "mipsle"), ("powerpc", false, "ppc"), ("wasm32", true, "wasm"),
            ("sparc64", false, "sparc64"),
        ];
        for (rust, little, go) in cases {
            assert_eq!(go_arch(rust, little), go, "{rust} little-endian={little}");
        }
    }

    /// containerd cpuinfo_linux_test.go TestGetCPUVariantFromArch.
    #[test]
    fn variant_from_machine_table() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("aarch64", "aarch64", Some("8")),
            ("Armv8 with capital", "Armv8", Some("8")),
            ("armv7", "armv7", Some("7")),
            ("armv7l", "armv7l", Some("7")),
            ("armv6", "armv6", Some("6")),
            ("armv5", "armv5", Some("5")),
            ("armv4", "armv4", Some("4")),
            ("armv3", "armv3", Some("3")),
            ("unknown armv9", "armv9", Some("unknown")),
            ("not armv", "armxxxx", None),
            ("too short", "armv", None),
            ("empty", "", None),
        ];
        for &(name, machine, want) in cases {
            assert_eq!(variant_from_machine(machine).as_deref(), want, "{name}");
        }
    }

    #[test]
    fn cpuinfo_table() {
        let pi_zero = "processor\t: 0\nmodel name\t: ARMv6-compatible processor rev 7 (v6l)\n\
                       BogoMIPS\t: 697.95\nCPU architecture: 7\nCPU variant\t: 0x0\n";
        let pi4_32 = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 3 (v7l)\n\
                      CPU architecture: 7\n\nprocessor\t: 1\nCPU architecture: 8\n";
        let arm64 = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\
                     CPU architecture: 8\n";
        let old = "Processor\t: ARM926EJ-S rev 5 (v5l)\ncpu architecture: 5TEJ\n";
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R)\n";
        let cases: &[(&str, &str, Option<&str>, &str)] = &[
            ("Raspberry Pi ARMv6 quirk", pi_zero, Some("6"), "v6"),
            ("first processor wins", pi4_32, Some("7"), "v7"),
            ("arm64 kernel", arm64, Some("8"), "v8"),
            ("case-insensitive key, 5TEJ", old, Some("5TEJ"), "v5"),
            ("no field", x86, None, "unknown"),
            ("empty", "", None, "unknown"),
        ];
        for &(name, text, raw, variant) in cases {
            let got = arm_variant_from_cpuinfo(text);
            assert_eq!(got.as_deref(), raw, "{name}");
            assert_eq!(canonical_arm_variant(raw.unwrap_or("?")), variant, "{name}");
        }
        for (raw, variant) in [
            ("?(12)", "v7"),
            ("7M", "v7"),
            ("6TEJ", "v6"),
            ("4T", "v4"),
            ("3", "v3"),
            ("AArch64", "v8"),
            ("9", "unknown"),
        ] {
            assert_eq!(canonical_arm_variant(raw), variant, "{raw}");
        }
    }

    #[test]
    fn normalize_is_idempotent_and_struct_based() {
        let cases: &[(&str, &str, Option<&str>, &str)] = &[
            ("empty OS is linux", "", Some(""), "linux"),
            ("macos", "MacOS", None, "darwin"),
            ("arm64 no variant", "linux", None, "linux"),
        ];
        for &(name, os, variant, want_os) in cases {
            let platform = Platform {
                os: os.into(),
                architecture: "arm64".into(),
                variant: variant.map(str::to_owned),
            };
            let n = platform.normalize();
            assert_eq!(n.os, want_os, "{name}");
            assert_eq!(n.variant.as_deref(), Some("v8"), "{name}");
            assert_eq!(n.normalize(), n, "{name}");
        }
    }
}
