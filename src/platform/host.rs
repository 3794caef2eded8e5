//! The platform of the machine pullcheck runs on, as Go (and so containerd) names it: `GOARCH`
//! for Rust's architecture, and the ARM variant from the kernel (`/proc/cpuinfo`, `uname`).

use super::DEFAULT_ARM_VARIANT;

/// Go's `GOARCH` for Rust's `std::env::consts::ARCH`.
pub(super) fn go_arch(rust_arch: &str, little_endian: bool) -> &str {
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
pub(super) fn host_arm_variant() -> String {
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
pub(super) fn arm_variant_from_cpuinfo(cpuinfo: &str) -> Option<String> {
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
pub(super) fn variant_from_machine(machine: &str) -> Option<String> {
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
pub(super) fn canonical_arm_variant(raw: &str) -> &'static str {
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
}
