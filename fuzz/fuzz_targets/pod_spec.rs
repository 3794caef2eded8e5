//! Pod specs (YAML or JSON) never panic, hang or blow the stack.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = pullcheck::podspec::images_from_manifests(s, "fuzz");
});
