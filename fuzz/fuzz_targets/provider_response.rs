//! A credential-provider plugin's stdout (`CredentialProviderResponse`) never panics, and no
//! more `auth` entries are kept than the answer could hold.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::credentials::plugin::read_response_for;
use pullcheck::reference::Reference;

fuzz_target!(|data: &[u8]| {
    let images: Vec<Reference> = ["reg.corp:5000/team/app:1", "quay.io/org/tool:2"]
        .iter()
        .filter_map(|i| Reference::parse(i).ok())
        .collect();
    if let Ok((key_type, kept)) = read_response_for(data, &images) {
        assert!(["Image", "Registry", "Global"].contains(&key_type));
        // Each entry kept is at least `"":{}` in the text.
        assert!(kept <= data.len() / 5 + 1);
    }
});
