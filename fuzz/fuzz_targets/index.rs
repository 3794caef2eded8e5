//! Image indexes read entry by entry for the platform check: never a panic, and what the scan
//! keeps stays bounded (32 platform names, a count for the rest).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::platform::{MatchMode, Platform};
use pullcheck::registry::index::{MAX_SHOWN_PLATFORMS, scan_index};

fuzz_target!(|data: &[u8]| {
    let Ok(want) = Platform::parse("linux/arm64/v8") else { return };
    for mode in [MatchMode::Lenient, MatchMode::Strict] {
        if let Some(scan) = scan_index(data, &want, mode) {
            assert!(scan.shown.len() <= MAX_SHOWN_PLATFORMS);
            assert!(scan.shown.len() + scan.more <= scan.usable);
        }
    }
});
