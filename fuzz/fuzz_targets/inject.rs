//! `inject`'s text splice never panics, and never turns readable manifests into unreadable
//! ones: when it succeeds, its output is read again without error and has as many pod specs.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::inject::{InjectOptions, inject};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let options = InjectOptions {
        image: "registry.example.com/pullcheck:1".to_string(),
        secrets: vec!["extra".to_string()],
        ..InjectOptions::default()
    };
    let Ok(done) = inject(s, "fuzz", &options) else { return };
    let before = pullcheck::manifests::read(s, "fuzz").map(|m| m.pod_specs.len());
    let after = pullcheck::manifests::read(&done.output, "fuzz").map(|m| m.pod_specs.len());
    match (before, after) {
        (Ok(b), Ok(a)) => assert_eq!(a, b, "pod specs before and after"),
        (Ok(_), Err(e)) => panic!("inject made the input unreadable: {e}"),
        _ => {}
    }
});
