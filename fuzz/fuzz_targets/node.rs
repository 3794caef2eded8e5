//! Node objects from the API server never panic, hang or blow the stack; what is kept is only
//! what was asked about, and never more images than the answer lists.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::node::{NodeImages, Wanted};
use pullcheck::reference::Reference;

fuzz_target!(|data: &[u8]| {
    let asked: Vec<Reference> = ["app:v1.0", "docker.io/library/tool@sha256:1111111111111111111111111111111111111111111111111111111111111111"]
        .iter()
        .filter_map(|i| Reference::parse(i).ok())
        .collect();
    let wanted = Wanted::of(&asked);
    let kept = NodeImages::read("n", data, Some(50), Some(&wanted));
    let all = NodeImages::read("n", data, Some(50), None);
    // The same answer is a Node or not whatever is kept of it.
    assert_eq!(kept.is_ok(), all.is_ok());
    if let (Ok(kept), Ok(all)) = (kept, all) {
        assert_eq!(kept.listed, all.listed);
        for r in &asked {
            // Keeping less never loses an asked image.
            assert_eq!(kept.has(r), all.has(r));
        }
    }
});
