//! Pod specs (YAML or JSON) never panic, hang or blow the stack, and every image the reader
//! returns is non-empty.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(found) = pullcheck::manifests::read(s, "fuzz") {
        for image in found.images() {
            assert!(!image.image.trim().is_empty());
        }
    }
});
