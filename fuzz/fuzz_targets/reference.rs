//! Image references: parsing never panics, and what parses prints back to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::reference::Reference;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    match Reference::parse(s) {
        Ok(r) => {
            let again = Reference::parse(&r.to_string()).expect("a normalised reference parses");
            assert_eq!(again, r);
            let _ = (r.api_host(), r.manifest_ref());
        }
        Err(e) => {
            assert!(e.to_string().len() <= 400);
        }
    }
});
