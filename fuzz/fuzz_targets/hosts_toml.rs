//! containerd's hosts.toml never panics, and what parses stays within the caps (hosts, header
//! values and their sizes).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::route::hosts::{MAX_HOSTS, parse_hosts};
use pullcheck::route::{MAX_HEADER_BYTES, MAX_HEADERS};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // `ca` and `client` paths point under a directory that does not exist: nothing is read.
    let base = Path::new("/nonexistent/pullcheck-fuzz");
    if let Ok(hosts) = parse_hosts(text, base, &base.join("hosts.toml")) {
        // The hosts, then the server.
        assert!(hosts.len() <= MAX_HOSTS + 1);
        for h in &hosts {
            assert!(h.headers.len() <= MAX_HEADERS);
            for (name, value) in h.headers.iter() {
                assert!(name.len() <= MAX_HEADER_BYTES && value.len() <= MAX_HEADER_BYTES);
            }
        }
    }
});
