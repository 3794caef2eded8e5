//! containers-registries.conf(5) never panics, stays within the caps, and a short name's
//! candidates and a reference's route are computed for whatever parses.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::reference::Reference;
use pullcheck::route::conf::{MAX_MIRRORS, MAX_REGISTRIES, RegistriesConf};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut conf = RegistriesConf::default();
    if conf.merge(text, Path::new("fuzz.conf")).is_ok() {
        assert!(conf.registries.len() <= MAX_REGISTRIES);
        for r in conf.registries.values() {
            assert!(r.mirrors.len() <= MAX_MIRRORS);
        }
        for input in ["app:1", "quay.io/org/app@sha256:1111111111111111111111111111111111111111111111111111111111111111"] {
            let _ = conf.candidates(input);
            if let Ok(reference) = Reference::parse(input) {
                let _ = conf.route(input, &reference, &[]);
            }
        }
    }
});
