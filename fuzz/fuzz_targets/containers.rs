//! `PULLCHECK_CONTAINERS` never panics, and what it accepts is within its limits and
//! round-trips through the form `inject` writes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::container_start::{ContainerFacts, MAX_CONTAINERS, MAX_CONTAINERS_JSON};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(list) = ContainerFacts::parse_list(text) {
        assert!(text.len() <= MAX_CONTAINERS_JSON);
        assert!(list.len() <= MAX_CONTAINERS);
        let again = ContainerFacts::to_env(&list);
        if again.len() <= MAX_CONTAINERS_JSON {
            let back = ContainerFacts::parse_list(&again).expect("inject's own form reads back");
            assert_eq!(back.len(), list.len());
        }
    }
});
