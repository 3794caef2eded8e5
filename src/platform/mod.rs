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

mod host;
mod matching;

use host::{go_arch, host_arm_variant};
pub use matching::{MatchMode, best_match, matches, preference};

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
    pub(crate) os: String,
    /// Go's architecture names: `amd64`, `arm64`, `arm`, `386`, `ppc64le`, `s390x`, …
    pub(crate) architecture: String,
    /// CPU variant: `v7` for arm, `v8` for arm64, `v2`…`v4` for amd64 (none for amd64 v1)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) variant: Option<String>,
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
    /// A [`PlatformError`] naming the offending part: empty input or component, a character outside
    /// `[A-Za-z0-9_.-]`, a wildcard, more than three components, or a single word that is
    /// neither a known OS nor a known architecture.
    pub fn parse(s: &str) -> Result<Platform, PlatformError> {
        let fail = |why: Invalid| {
            Err(PlatformError {
                shown: shorten(s),
                why,
            })
        };
        if s.is_empty() {
            return fail(Invalid::Empty);
        }
        if s.contains('*') {
            return fail(Invalid::Wildcard);
        }
        let parts: Vec<&str> = s.splitn(4, '/').collect();
        if parts.len() > 3 {
            return fail(Invalid::TooManyComponents);
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
                fail(Invalid::Unknown(shorten(os_part)))
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
            _ => fail(Invalid::Shape),
        }
    }

    /// The platform this process runs on, which is the node's when pullcheck runs natively:
    /// always `linux` (see the module doc), and the architecture of the running binary in Go's
    /// names (`x86_64`→`amd64`, `aarch64`→`arm64/v8`, `x86`→`386`, `powerpc64`→`ppc64le` or
    /// `ppc64`, `loongarch64`→`loong64`, `mips64`→`mips64le` or `mips64`, …). 32-bit ARM reads
    /// its variant from `/proc/cpuinfo` as containerd does (`CPU architecture`, with the
    /// Raspberry Pi ARMv6 quirk), then `/proc/sys/kernel/arch` (the `uname -m` containerd falls
    /// back to), and is `v7` when neither can be read. Computed once.
    pub(crate) fn host() -> Platform {
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
    pub(crate) fn normalize(&self) -> Platform {
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
pub(crate) fn known_variants(architecture: &str) -> Option<Vec<&'static str>> {
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
    pub(crate) fn unknown_variant(&self) -> Option<&str> {
        let variant = self.variant.as_deref()?;
        let known = known_variants(&self.architecture)?;
        (!known.contains(&variant)).then_some(variant)
    }
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
fn os_name(part: &str) -> Result<&str, Invalid> {
    let (name, options) = match part.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(options) => (name, Some(options)),
            None => return Err(Invalid::UnclosedOptions(shorten(part))),
        },
        None => (part, None),
    };
    if name.is_empty() {
        return Err(Invalid::EmptyOs);
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(Invalid::OsChar(shorten(name), c));
    }
    if let Some(options) = options {
        let option_char = |c: char| c.is_ascii_alphanumeric() || "_.%-".contains(c);
        let mut pieces = options.split('+');
        let version = pieces.next().unwrap_or_default();
        if let Some(c) = version.chars().find(|c| !option_char(*c)) {
            return Err(Invalid::VersionChar(shorten(version), c));
        }
        for feature in pieces {
            if feature.is_empty() {
                return Err(Invalid::EmptyFeature(shorten(options)));
            }
            if let Some(c) = feature.chars().find(|c| !option_char(*c)) {
                return Err(Invalid::FeatureChar(shorten(feature), c));
            }
        }
    }
    Ok(name)
}

/// containerd `specifierRe` for the architecture and variant components.
fn check_component(what: &'static str, part: &str) -> Result<(), Invalid> {
    if part.is_empty() {
        return Err(Invalid::EmptyComponent(what));
    }
    match part
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_.-".contains(*c)))
    {
        Some(c) => Err(Invalid::ComponentChar(what, shorten(part), c)),
        None => Ok(()),
    }
}

/// A platform specifier that [`Platform::parse`] refuses: the specifier (cut short) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid platform {shown:?}: {why}")]
pub struct PlatformError {
    shown: String,
    why: Invalid,
}

/// The part of a platform specifier that is wrong (the parts shown are cut short).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Invalid {
    #[error("empty; expected os[/arch[/variant]], e.g. \"linux/amd64\"")]
    Empty,
    #[error("wildcards are not supported")]
    Wildcard,
    #[error("too many '/'-separated components; expected os/arch[/variant]")]
    TooManyComponents,
    #[error("{0:?} is neither a known operating system nor a known architecture")]
    Unknown(String),
    #[error("expected os/arch[/variant]")]
    Shape,
    #[error("OS {0:?} opens '(' without closing it at the end")]
    UnclosedOptions(String),
    #[error("the OS (before the first '/') is empty")]
    EmptyOs,
    #[error("OS {0:?} contains {1:?}; only letters, digits, '_' and '-' are allowed")]
    OsChar(String, char),
    #[error("OS version {0:?} contains {1:?}")]
    VersionChar(String, char),
    #[error("empty OS feature in {0:?}")]
    EmptyFeature(String),
    #[error("OS feature {0:?} contains {1:?}")]
    FeatureChar(String, char),
    /// The architecture or variant component, empty.
    #[error("the {0} component is empty")]
    EmptyComponent(&'static str),
    /// The architecture or variant component, with a character containerd refuses.
    #[error("{0} {1:?} contains {2:?}; only letters, digits, '_', '.' and '-' are allowed")]
    ComponentChar(&'static str, String, char),
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::matching::tests::MATCH_CASES;
    use super::*;
    use MatchMode::Lenient;

    fn p(s: &str) -> Platform {
        Platform::parse(s).unwrap_or_else(|e| panic!("{e}"))
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
                (Err(e), Err(part)) => {
                    let e = e.to_string();
                    e.contains(part) && e.contains("invalid platform")
                }
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
        let err = Platform::parse(&format!("linux/{}", "&".repeat(1000)))
            .unwrap_err()
            .to_string();
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
