//! `WWW-Authenticate` headers and token answers from a hostile server never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pullcheck::registry::auth::{AuthScheme, bearer_error, parse_token_answer, parse_www_authenticate};

fuzz_target!(|data: &[u8]| {
    let _ = parse_token_answer(data);
    let Ok(s) = std::str::from_utf8(data) else { return };
    let challenges = parse_www_authenticate(s);
    let _ = AuthScheme::from_challenges(&challenges);
    let _ = bearer_error(s);
});
