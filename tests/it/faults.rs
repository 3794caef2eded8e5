//! Faults a registry can produce, and how pullcheck behaves under them: it never hangs past its
//! deadline and never panics.

use crate::check::{Run, check, docker_config};
use crate::common::proxy::{Canned, Fault, Proxy, Rule, Seen, TlsEndpoint};
use crate::common::{black_hole, cannot_run, plain_registry, pullcheck, signal};
use serde_json::Value;
use std::net::TcpListener;
use std::time::{Duration, Instant};

#[test]
fn a_black_hole_ends_at_the_deadline_and_other_images_still_get_verdicts() {
    let hole = black_hole();
    let started = Instant::now();
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "2s",
        "--plain-http",
        &hole,
        &format!("{hole}/team/app:v1"),
        "Bad/Reference:x",
    ]);
    let took = started.elapsed();
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert!(
        took < Duration::from_secs(3),
        "took {took:?}, past --timeout + 1s"
    );
    let r = run.image(&format!("{hole}/team/app:v1"));
    assert_eq!(r["status"], "unreachable");
    assert_eq!(r["reason"], "timeout");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains(&hole) && message.contains("timed out"),
        "{message}"
    );
    assert_eq!(run.image("Bad/Reference:x")["status"], "invalid_reference");
}

#[test]
fn sigterm_stops_within_a_second_with_a_termination_message() {
    let hole = black_hole();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let mut child = pullcheck()
        .arg("check")
        .args([
            "--secrets-dir",
            "/nonexistent",
            "--timeout",
            "60s",
            "--plain-http",
            &hole,
        ])
        .arg("--termination-log")
        .arg(&log)
        .arg(format!("{hole}/team/app:v1"))
        .spawn();
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    signal::terminate(&child);
    // Did not stop within 5 s: a failure (and the process is killed).
    let status = signal::exit_within(&mut child, Duration::from_secs(5));
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(1), "stopped after {took:?}");
    assert_eq!(status.code(), Some(6));
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.starts_with("pullcheck: stopped by SIGTERM"), "{msg}");
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stopped"), "{stdout}");
}

// ---------------------------------------------------------------------------------------------
// Through the fault proxy (`common::proxy`), in front of the real plain-HTTP registry.
// ---------------------------------------------------------------------------------------------

/// Runs `pullcheck check -o json ARGS` and times it; never a panic, whatever happened.
fn timed(args: &[&str]) -> (Run, Duration) {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    let started = Instant::now();
    let run = check(&all);
    let took = started.elapsed();
    assert!(
        !run.stderr.contains("panicked"),
        "pullcheck panicked:\n{}",
        run.stderr
    );
    (run, took)
}

/// The plain registry with `repo:v1` pushed, and a proxy in front of it.
fn proxied(repo: &str) -> (Proxy, String) {
    let reg = plain_registry();
    reg.push_oci_manifest(repo, "v1");
    let proxy = Proxy::start(&reg.host());
    let image = format!("{}/{repo}:v1", proxy.host());
    (proxy, image)
}

fn heads(proxy: &Proxy) -> Vec<Seen> {
    proxy
        .requests()
        .into_iter()
        .filter(|s| s.method == "HEAD")
        .collect()
}

/// The version checks (`GET /v2/`) a proxy saw: pullcheck sends the manifest `HEAD` first, as
/// containerd does, and a version check only after a 404 that nothing explained.
fn pings(proxy: &Proxy) -> usize {
    proxy.requests().iter().filter(|s| s.path == "/v2/").count()
}

/// A stand-in registry's challenge to the first `n` manifest `HEAD`s. With no version check
/// before it, the first `HEAD` of a run comes without credentials and learns from this answer
/// how to authenticate (the stand-in cannot tell who asks, so it challenges by count).
fn challenge_first_heads(proxy: &Proxy, challenge: Fault, n: usize) {
    proxy.rule(
        Rule::contains("/manifests/", challenge)
            .method("HEAD")
            .times(n),
    );
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

#[test]
fn a_stall_mid_response_ends_at_the_deadline_and_other_images_still_get_verdicts() {
    let reg = plain_registry();
    reg.push_oci_manifest("faults/stall-ok", "v1");
    let proxy = Proxy::start(&reg.host());
    proxy.rule(Rule::contains("/faults/stall/manifests/", Fault::Stall));
    let p = proxy.host();
    let stalled = format!("{p}/faults/stall:v1");
    let fine = format!("{p}/faults/stall-ok:v1");
    let direct = format!("{}/faults/stall-ok:v1", reg.host());
    let (run, took) = timed(&[
        "--timeout",
        "2s",
        "--plain-http",
        &p,
        "--plain-http",
        &reg.host(),
        &stalled,
        &fine,
        &direct,
    ]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let r = run.image(&stalled);
    assert_eq!(r["status"], "unreachable", "{r:#}");
    assert_eq!(r["reason"], "timeout", "{r:#}");
    let message = text(&r["message"]);
    assert!(
        message.contains(&p) && message.contains("timed out"),
        "{message}"
    );
    assert!(
        message.contains("HEAD"),
        "says what it waited for: {message}"
    );
    assert_eq!(run.image(&fine)["status"], "ok");
    assert_eq!(run.image(&direct)["status"], "ok");
    assert!(
        heads(&proxy).iter().any(|s| s.fault == "stall"),
        "{:#?}",
        proxy.requests()
    );
}

#[test]
fn a_slow_answer_inside_the_attempt_is_ok_and_one_past_it_is_tried_again() {
    // --timeout 8s gives each attempt 2s.
    let (proxy, image) = proxied("faults/slow");
    proxy.rule(
        Rule::contains("/manifests/", Fault::Delay(Duration::from_millis(2500)))
            .method("HEAD")
            .times(1),
    );
    let (run, took) = timed(&["--timeout", "8s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["attempts"], 2, "{r:#}");
    assert!(took < Duration::from_secs(5), "took {took:?}");

    let (proxy, image) = proxied("faults/slow-but-fine");
    proxy.rule(
        Rule::contains("/manifests/", Fault::Delay(Duration::from_millis(1000))).method("HEAD"),
    );
    let (run, _) = timed(&["--timeout", "8s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["attempts"], 1);
}

#[test]
fn server_errors_twice_then_ok_takes_three_attempts() {
    let (proxy, image) = proxied("faults/flaky");
    proxy.rule(
        Rule::contains("/manifests/", Fault::status(503))
            .method("HEAD")
            .times(2),
    );
    let (run, took) = timed(&["--timeout", "10s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "ok", "{r:#}");
    assert_eq!(r["attempts"], 3, "{r:#}");
    assert!(r["digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(heads(&proxy).len(), 3, "{:#?}", proxy.requests());
    assert_eq!(
        pings(&proxy),
        0,
        "no version check, first or on a retry: {:#?}",
        proxy.requests()
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn a_failing_version_check_costs_nothing_as_it_is_never_sent() {
    // The runtime never sends `GET /v2/`: a registry whose version check fails still pulls,
    // in one attempt and one HEAD.
    let (proxy, image) = proxied("faults/flaky-ping");
    proxy.rule(Rule::exact("/v2/", Fault::status(502)).times(2));
    let (run, _) = timed(&["--timeout", "10s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["attempts"], 1, "{r:#}");
    assert_eq!(pings(&proxy), 0, "{:#?}", proxy.requests());
    assert_eq!(heads(&proxy).len(), 1);
}

#[test]
fn rate_limited_429_waits_for_retry_after_then_ok() {
    let (proxy, image) = proxied("faults/rate-limited");
    proxy.rule(
        Rule::contains("/manifests/", Fault::rate_limited("1"))
            .method("HEAD")
            .times(1),
    );
    let (run, took) = timed(&["--timeout", "10s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "ok", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
    assert!(r["elapsed_ms"].as_u64().unwrap() >= 1000, "{r:#}");
    let heads = heads(&proxy);
    assert_eq!(heads.len(), 2, "{heads:#?}");
    let gap = heads[1].at - heads[0].at;
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

#[test]
fn a_retry_after_past_the_deadline_gives_up_at_once() {
    let (proxy, image) = proxied("faults/rate-limited-long");
    proxy.rule(Rule::contains("/manifests/", Fault::rate_limited("3600")).method("HEAD"));
    let (run, took) = timed(&["--timeout", "4s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["reason"], "rate_limited", "{r:#}");
    assert_eq!(r["attempts"], 1, "{r:#}");
    let message = text(&r["message"]);
    assert!(
        message.contains(&proxy.host()) && message.contains("429"),
        "{message}"
    );
    assert!(message.contains("gave up"), "{message}");
    assert!(
        took < Duration::from_secs(2),
        "waiting cannot help, so it does not wait: took {took:?}"
    );
}

#[test]
fn a_registry_that_always_answers_429_is_asked_twice_then_left_to_the_kubelet() {
    // The init container's way (`--on-unreachable warn`) with a long deadline: the first 429
    // is retried once, after its Retry-After, and the second ends the check, long before the
    // deadline, with the pod left to the kubelet's own pull.
    let (proxy, image) = proxied("faults/rate-limited-always");
    proxy.rule(Rule::contains("/manifests/", Fault::rate_limited("1")).method("HEAD"));
    let (run, took) = timed(&[
        "--timeout",
        "60s",
        "--on-unreachable",
        "warn",
        "--plain-http",
        &proxy.host(),
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "unreachable", "{r:#}");
    assert_eq!(r["reason"], "rate_limited", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
    assert_eq!(r["fatal"], false, "{r:#}");
    assert_eq!(r["not_counted"], "on_unreachable_warn", "{r:#}");
    let message = text(&r["message"]);
    assert!(
        message.contains(&format!(
            "; not retried: {} answered 429 2 times in this run",
            proxy.host()
        )) && !message.contains("gave up"),
        "{message}"
    );
    let requests = proxy.requests();
    eprintln!(
        "a registry that always answers 429: {} requests in {took:?} (--timeout 60s): {message}",
        requests.len()
    );
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert!(requests.iter().all(|s| s.method == "HEAD"), "{requests:#?}");
    let gap = requests[1].at - requests[0].at;
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn rate_limits_are_counted_per_registry_across_its_images() {
    // Two images of one rate-limiting registry: the first 429 of the run is retried, the
    // second (whichever image it came for) ends that image, and the retry's 429 the other:
    // three requests for the two. Another registry's 429s are its own.
    let (limited, image) = proxied("faults/rate-limited-a");
    let other = format!("{}/faults/rate-limited-b:v1", limited.host());
    let (elsewhere, third) = proxied("faults/rate-limited-c");
    for proxy in [&limited, &elsewhere] {
        proxy.rule(Rule::contains("/manifests/", Fault::rate_limited("1")).method("HEAD"));
    }
    let (run, took) = timed(&[
        "--timeout",
        "60s",
        "--plain-http",
        &limited.host(),
        "--plain-http",
        &elsewhere.host(),
        &image,
        &other,
        &third,
    ]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let mut attempts = Vec::new();
    for name in [&image, &other] {
        let r = run.image(name);
        assert_eq!(r["reason"], "rate_limited", "{r:#}");
        let (_, path) = name.split_once('/').unwrap();
        let repository = path.trim_end_matches(":v1");
        let sent = limited
            .requests_matching(&format!("/{repository}/manifests/"))
            .len();
        assert_eq!(r["attempts"].as_u64(), Some(sent as u64), "{r:#}");
        assert!(
            text(&r["message"])
                .contains(&format!("; not retried: {} answered 429", limited.host())),
            "{r:#}"
        );
        attempts.push(sent);
    }
    attempts.sort_unstable();
    assert_eq!(attempts, [1, 2], "{:#?}", limited.requests());
    assert_eq!(limited.requests().len(), 3, "{:#?}", limited.requests());
    let r = run.image(&third);
    assert_eq!(r["reason"], "rate_limited", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
    assert_eq!(elsewhere.requests().len(), 2, "{:#?}", elsewhere.requests());
}

#[test]
fn a_token_server_that_answers_429_is_asked_twice() {
    // The registry challenges, its token server rate-limits: the same rule as for the
    // registry's own 429.
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    let realm = format!("{}/token", proxy.url());
    proxy.rule(Rule::prefix("/token", Fault::rate_limited("1")));
    proxy.rule(Rule::contains("/manifests/", Fault::bearer_challenge(&realm)).method("HEAD"));
    let image = format!("{}/faults/token-limited:v1", proxy.host());
    let (run, took) = timed(&["--timeout", "60s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let r = run.image(&image);
    assert_eq!(r["reason"], "rate_limited", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
    let message = text(&r["message"]);
    assert!(message.contains("429 2 times"), "{message}");
    let tokens = proxy
        .requests()
        .into_iter()
        .filter(|s| s.path.starts_with("/token?"))
        .count();
    assert_eq!(tokens, 2, "{:#?}", proxy.requests());
}

#[test]
fn retry_after_zero_or_in_the_past_does_not_hammer_the_registry() {
    // Back-off alone makes ~4-5 attempts in 2s; honouring "retry now" literally makes hundreds.
    // A 429 is retried once at most: two HEADs.
    let cases = [
        (
            "429, Retry-After: 0",
            Fault::rate_limited("0"),
            "rate_limited",
            2,
        ),
        (
            "429, Retry-After in 1970",
            Fault::rate_limited("Thu, 01 Jan 1970 00:00:00 GMT"),
            "rate_limited",
            2,
        ),
        (
            "503, Retry-After: 0",
            Fault::respond(Canned::new(503).header("Retry-After", "0")),
            "server_error",
            12,
        ),
    ];
    let mut problems = Vec::new();
    for (name, fault, reason, most) in cases {
        let (proxy, image) = proxied("faults/retry-after-zero");
        proxy.rule(Rule::contains("/manifests/", fault).method("HEAD"));
        let (run, took) = timed(&["--timeout", "2s", "--plain-http", &proxy.host(), &image]);
        assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
        assert!(took < Duration::from_secs(3), "took {took:?}");
        let r = run.image(&image);
        let sent = heads(&proxy).len();
        // The registry answered at once every time: that is the verdict, not a time-out.
        if sent > most || r["reason"] != reason {
            problems.push(format!(
                "{name}: {sent} HEADs in {took:?}, reason {}, attempts {}: {}",
                r["reason"], r["attempts"], r["message"]
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn server_errors_until_the_deadline_are_bounded_in_count_and_time() {
    let (proxy, image) = proxied("faults/always-503");
    proxy.rule(Rule::contains("/manifests/", Fault::status(503)).method("HEAD"));
    let (run, took) = timed(&["--timeout", "3s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(4), "took {took:?}");
    let r = run.image(&image);
    assert_eq!(r["reason"], "server_error", "{r:#}");
    let attempts = r["attempts"].as_u64().unwrap();
    assert!((2..=10).contains(&attempts), "{r:#}");
    assert_eq!(heads(&proxy).len() as u64, attempts);
    let message = text(&r["message"]);
    assert!(
        message.contains("503") && message.contains(&format!("gave up after {attempts} attempts")),
        "{message}"
    );
}

#[test]
fn a_connection_reset_mid_response_is_retried() {
    let (proxy, image) = proxied("faults/reset-once");
    proxy.rule(
        Rule::contains("/manifests/", Fault::Reset)
            .method("HEAD")
            .times(1),
    );
    let (run, _) = timed(&["--timeout", "10s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "ok", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
}

#[test]
fn resets_until_the_deadline_end_unreachable_and_name_the_reset() {
    let (proxy, image) = proxied("faults/reset-always");
    proxy.rule(Rule::contains("/manifests/", Fault::Reset).method("HEAD"));
    let (run, took) = timed(&["--timeout", "2s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let r = run.image(&image);
    assert_eq!(r["status"], "unreachable", "{r:#}");
    assert!(r["attempts"].as_u64().unwrap() >= 2, "retried: {r:#}");
    let message = text(&r["message"]);
    assert!(message.contains(&proxy.host()), "{message}");
    assert!(message.contains("gave up"), "{message}");
    eprintln!("reset: reason {} / {message}", r["reason"]);
}

#[test]
fn a_head_closed_after_its_headers_is_still_an_answer() {
    // The HEAD's body is never read: its status is the answer. (The version check, which once
    // came first, would have been cut the same way: it is not sent.)
    let (proxy, image) = proxied("faults/ping-headers-only");
    proxy.rule(Rule::exact("/v2/", Fault::CloseAfterHeaders));
    proxy.rule(Rule::contains("/manifests/", Fault::CloseAfterHeaders).method("HEAD"));
    let (run, _) = timed(&["--timeout", "5s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["attempts"], 1);
    assert_eq!(pings(&proxy), 0, "{:#?}", proxy.requests());
}

#[test]
fn a_cut_or_garbage_tags_list_after_a_404_is_not_a_guess() {
    let reg = plain_registry();
    let proxy = Proxy::start(&reg.host());
    let p = proxy.host();
    let cut = format!("{p}/faults/gone-cut:v1");
    let garbage = format!("{p}/faults/gone-garbage:v1");
    let headers_only = format!("{p}/faults/gone-headers-only:v1");
    let control = format!("{p}/faults/gone-control:v1");
    proxy.rule(Rule::contains(
        "/faults/gone-cut/tags/list",
        Fault::Truncate,
    ));
    proxy.rule(Rule::contains(
        "/faults/gone-garbage/tags/list",
        Fault::Body(b"\x00\xff<html>gateway</html>".to_vec()),
    ));
    proxy.rule(Rule::contains(
        "/faults/gone-headers-only/tags/list",
        Fault::CloseAfterHeaders,
    ));
    let (run, _) = timed(&[
        "--timeout",
        "5s",
        "--plain-http",
        &p,
        &cut,
        &garbage,
        &headers_only,
        &control,
    ]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&control)["reason"], "repository_missing");
    for image in [&cut, &garbage, &headers_only] {
        let r = run.image(image);
        assert_eq!(r["status"], "not_found", "{r:#}");
        // The HEAD said 404; what tags/list said was lost, so "which one" is not claimed.
        assert_eq!(r["reason"], "manifest_missing", "{r:#}");
        assert_eq!(r["attempts"], 1, "{r:#}");
    }
}

/// A proxy whose first manifest `HEAD` is challenged for Bearer tokens from its own `/token`
/// (anonymous, plain HTTP allowed), in front of the plain registry.
fn bearer_proxied(repo: &str) -> (Proxy, String) {
    let (proxy, image) = proxied(repo);
    let realm = format!("{}/token", proxy.url());
    challenge_first_heads(&proxy, Fault::bearer_challenge(&realm), 1);
    (proxy, image)
}

fn token_requests(proxy: &Proxy) -> usize {
    proxy
        .requests()
        .iter()
        .filter(|s| s.path.starts_with("/token"))
        .count()
}

#[test]
fn a_token_answer_cut_short_or_garbage_is_retried() {
    for (name, first) in [
        (
            "cut",
            Fault::respond(
                Canned::new(200)
                    .header("Content-Type", "application/json")
                    .body(r#"{"token":"faults-token","expires_in":300}"#)
                    .cut_body_at(10),
            ),
        ),
        (
            "garbage",
            Fault::respond(Canned::new(200).body("<html>proxy error</html>")),
        ),
        ("reset", Fault::Reset),
    ] {
        let (proxy, image) = bearer_proxied("faults/token-flaky");
        proxy.rule(Rule::prefix("/token", first).times(1));
        proxy.rule(Rule::prefix("/token", Fault::token()));
        let (run, _) = timed(&["--timeout", "10s", "--plain-http", &proxy.host(), &image]);
        assert_eq!(run.code, 0, "{name}: {}{}", run.stdout, run.stderr);
        let r = run.image(&image);
        assert_eq!(r["attempts"], 2, "{name}: {r:#}");
        assert_eq!(token_requests(&proxy), 2, "{name}");
        // The challenged anonymous HEAD, then one HEAD, with the token.
        let h = heads(&proxy);
        assert_eq!(h.len(), 2, "{name}: {h:#?}");
        assert_eq!(h[0].authorization, None, "{name}: {h:#?}");
        assert_eq!(h[0].fault, "respond 401", "{name}: {h:#?}");
        assert_eq!(
            h[1].authorization.as_deref(),
            Some("Bearer faults-token"),
            "{name}"
        );
        assert_eq!(pings(&proxy), 0, "{name}");
    }
}

#[test]
fn a_token_server_that_only_answers_garbage_ends_unreachable() {
    let (proxy, image) = bearer_proxied("faults/token-garbage");
    // 8 MiB of garbage: read no further than a token answer can be.
    proxy.rule(Rule::prefix(
        "/token",
        Fault::respond(Canned::new(200).body(vec![b'x'; 8 << 20])),
    ));
    let (run, took) = timed(&["--timeout", "2s", "--plain-http", &proxy.host(), &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let r = run.image(&image);
    assert_eq!(r["reason"], "bad_token_answer", "{r:#}");
    let message = text(&r["message"]);
    assert!(
        message.contains(&format!("{}/token", proxy.url())),
        "{message}"
    );
    // The challenged anonymous HEAD only: no HEAD without a token after the challenge.
    let h = heads(&proxy);
    assert_eq!(h.len(), 1, "no HEAD without a token: {h:#?}");
    assert_eq!(
        (h[0].authorization.as_deref(), h[0].fault.as_str()),
        (None, "respond 401"),
        "{h:#?}"
    );
}

/// A docker config granting alice on `host`.
fn alice_for(dir: &std::path::Path, host: &str) -> String {
    docker_config(dir, "config.json", host, "alice", "pw")
        .to_str()
        .unwrap()
        .to_string()
}

fn redirect_keeps_credentials_home(other_ip: &str) {
    let digest = format!("sha256:{}", "7".repeat(64));
    let other = Proxy::standalone(other_ip, Fault::manifest(&digest));
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    challenge_first_heads(&proxy, Fault::basic_challenge(), 1);
    proxy.rule(Rule::contains(
        "/manifests/",
        Fault::redirect(&format!("{}/v2/faults/moved/manifests/v1", other.url())),
    ));
    let p = proxy.host();
    let dir = tempfile::tempdir().unwrap();
    let config = alice_for(dir.path(), &p);
    let image = format!("{p}/faults/moved:v1");
    let (run, _) = timed(&[
        "--timeout",
        "5s",
        "--plain-http",
        &p,
        "--docker-config",
        &config,
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["digest"], digest.as_str(), "{r:#}");
    // The challenged anonymous HEAD, then the one with the credential, redirected.
    let ours = heads(&proxy);
    assert_eq!(ours.len(), 2, "{ours:#?}");
    assert_eq!(ours[0].authorization, None, "{ours:#?}");
    assert!(
        ours[1]
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic ")),
        "the registry asked for Basic auth and got it: {ours:#?}"
    );
    assert_eq!(pings(&proxy), 0, "{:#?}", proxy.requests());
    let theirs = other.requests();
    assert_eq!(theirs.len(), 1, "{theirs:#?}");
    assert_eq!(
        theirs[0].authorization,
        None,
        "credentials followed the redirect to {}",
        other.host()
    );
}

#[test]
fn a_redirect_to_another_host_does_not_carry_the_credentials() {
    redirect_keeps_credentials_home("127.0.0.2");
}

#[test]
fn a_redirect_to_another_port_does_not_carry_the_credentials() {
    redirect_keeps_credentials_home("127.0.0.1");
}

#[test]
fn a_redirect_loop_is_cut_short() {
    let proxy = Proxy::standalone("127.0.0.1", Fault::status(404));
    let p = proxy.host();
    proxy.rule(Rule::exact("/v2/", Fault::status(200)));
    proxy.rule(Rule::contains(
        "/manifests/",
        Fault::redirect(&format!("http://{p}/v2/faults/loop/manifests/v1")),
    ));
    let image = format!("{p}/faults/loop:v1");
    let (run, took) = timed(&["--timeout", "2s", "--plain-http", &p, &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let r = run.image(&image);
    let message = text(&r["message"]);
    assert!(message.contains("redirect"), "{message}");
    let attempts = r["attempts"].as_u64().unwrap();
    let sent = heads(&proxy).len() as u64;
    // The original request and at most 5 redirects per attempt.
    assert!(sent <= 6 * attempts, "{sent} HEADs in {attempts} attempts");
    // The registry was reached and answered, every time the same: the verdict must not say
    // otherwise, and waiting will not change it.
    assert!(
        r["reason"] != "connect" && !message.contains("cannot reach"),
        "{sent} HEADs: {r:#}"
    );
    assert_eq!(r["attempts"], 1, "{sent} HEADs: {r:#}");
}

#[test]
fn a_token_realm_on_another_plain_http_host_gets_no_credentials() {
    let other = Proxy::standalone("127.0.0.2", Fault::token());
    let reg = plain_registry();
    reg.push_oci_manifest("faults/insecure-realm", "v1");
    let proxy = Proxy::start(&reg.host());
    challenge_first_heads(
        &proxy,
        Fault::bearer_challenge(&format!("{}/token", other.url())),
        1,
    );
    let p = proxy.host();
    let dir = tempfile::tempdir().unwrap();
    let config = alice_for(dir.path(), &p);
    let image = format!("{p}/faults/insecure-realm:v1");
    let (run, _) = timed(&[
        "--timeout",
        "5s",
        "--plain-http",
        &p,
        "--docker-config",
        &config,
        &image,
    ]);
    assert_eq!(run.code, 5, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "unauthorized", "{r:#}");
    assert_eq!(r["reason"], "insecure_realm", "{r:#}");
    assert_eq!(r["attempts"], 1, "{r:#}");
    assert!(
        text(&r["message"]).contains(&other.url()),
        "names the realm: {r:#}"
    );
    assert!(
        other.requests().iter().all(|s| s.authorization.is_none()),
        "{:#?}",
        other.requests()
    );
    assert!(other.requests().is_empty(), "{:#?}", other.requests());
    // The registry saw the challenged anonymous HEAD alone: no credential went anywhere.
    let h = heads(&proxy);
    assert_eq!(h.len(), 1, "{h:#?}");
    assert_eq!(h[0].authorization, None, "{h:#?}");
}

// ---------------------------------------------------------------------------------------------
// Names that do not resolve, ports that refuse, certificates that do not verify.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_name_that_does_not_resolve_is_unreachable_and_says_so() {
    let image = "registry.invalid/x:y";
    // Permanent for this pod (the node may resolve it through its own DNS): exit 8 when asked
    // to count it (by default a warning, exit 0).
    let (run, took) = timed(&["--timeout", "2s", "--on-unverifiable", "fail", image]);
    assert_eq!(run.code, 8, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let r = run.image(image);
    assert_eq!(r["status"], "unverifiable", "{r:#}");
    // The resolver says the name does not exist: asked twice, then not retried.
    assert_eq!(r["reason"], "no_such_host", "{r:#}");
    assert_eq!(r["attempts"], 2, "{r:#}");
    let message = text(&r["message"]);
    assert!(message.contains("registry.invalid"), "{message}");
    assert!(message.to_lowercase().contains("dns"), "{message}");
    eprintln!("dns: {} attempts: {message}", r["attempts"]);
}

#[test]
fn a_refused_connection_is_retried_until_the_deadline() {
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let image = format!("{closed}/faults/refused:v1");
    let (run, took) = timed(&["--timeout", "2s", "--plain-http", &closed, &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let r = run.image(&image);
    assert_eq!(r["reason"], "connect", "{r:#}");
    assert!(r["attempts"].as_u64().unwrap() >= 2, "{r:#}");
    let message = text(&r["message"]);
    assert!(
        message.contains(&closed) && message.contains("refused"),
        "{message}"
    );
    assert!(message.contains("gave up"), "{message}");
}

#[test]
fn a_certificate_for_another_name_is_a_tls_error_tried_once() {
    let endpoint = TlsEndpoint::start(&["wrong.example"]);
    let ca = endpoint.ca_pem_path().to_str().unwrap().to_string();
    let image = format!("{}/faults/tls-name:v1", endpoint.host());
    let (run, took) = timed(&[
        "--timeout",
        "5s",
        "--on-unverifiable",
        "fail",
        "--ca-file",
        &ca,
        &image,
    ]);
    assert_eq!(run.code, 8, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["reason"], "tls", "{r:#}");
    assert_eq!(r["attempts"], 1, "{r:#}");
    let message = text(&r["message"]);
    assert!(message.contains(&endpoint.host()), "{message}");
    assert!(
        message.contains("NotValidForName") || message.to_lowercase().contains("not valid for"),
        "names the real reason: {message}"
    );
    eprintln!("tls name: {message}");
    assert_eq!(endpoint.connections(), 1, "not retried");
    assert_eq!(endpoint.handshakes(), 0);
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn an_untrusted_ca_is_a_tls_error_tried_once() {
    let endpoint = TlsEndpoint::start(&["127.0.0.1", "localhost"]);
    let image = format!("{}/faults/tls-ca:v1", endpoint.host());
    let (run, took) = timed(&["--timeout", "5s", "--on-unverifiable", "fail", &image]);
    assert_eq!(run.code, 8, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "unverifiable", "{r:#}");
    assert_eq!(r["reason"], "tls", "{r:#}");
    assert_eq!(r["attempts"], 1, "{r:#}");
    let message = text(&r["message"]);
    assert!(
        message.contains("UnknownIssuer") || message.to_lowercase().contains("unknown issuer"),
        "names the real reason: {message}"
    );
    eprintln!("tls ca: {message}");
    assert!(text(&r["hint"]).contains("--ca-file"), "{r:#}");
    assert_eq!(endpoint.connections(), 1, "not retried");
    assert!(took < Duration::from_secs(2), "took {took:?}");

    // With its CA trusted the same endpoint answers: the failure was the CA alone.
    let ca = endpoint.ca_pem_path().to_str().unwrap().to_string();
    let (run, _) = timed(&["--timeout", "5s", "--ca-file", &ca, &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn a_registry_on_ipv6_loopback_works_through_the_proxy() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        cannot_run(
            "a_registry_on_ipv6_loopback_works_through_the_proxy",
            "no IPv6 loopback (::1) here",
        );
        return;
    }
    let reg = plain_registry();
    reg.push_oci_manifest("faults/ipv6", "v1");
    let digest = format!("sha256:{}", "6".repeat(64));
    let listener = Proxy::standalone("::1", Fault::manifest(&digest));
    listener.rule(Rule::exact("/v2/", Fault::status(200)));
    let host = listener.host();
    assert!(host.starts_with("[::1]:"), "{host}");
    let image = format!("{host}/faults/ipv6:v1");
    let (run, _) = timed(&["--timeout", "5s", "--plain-http", &host, &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["digest"], digest.as_str());
}

#[test]
fn the_fault_proxy_records_requests_and_stops_when_dropped() {
    let proxy = Proxy::standalone("127.0.0.1", Fault::BlackHole);
    let addr = proxy.host();
    let mut held = std::net::TcpStream::connect(&addr).unwrap();
    std::io::Write::write_all(
        &mut held,
        b"GET /v2/ HTTP/1.1\r\nHost: x\r\nAuthorization: Basic eA==\r\n\r\n",
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while proxy.requests().is_empty() {
        assert!(Instant::now() < deadline, "request not recorded");
        std::thread::sleep(Duration::from_millis(5));
    }
    let seen = &proxy.requests()[0];
    assert_eq!((seen.method.as_str(), seen.path.as_str()), ("GET", "/v2/"));
    assert_eq!(seen.authorization.as_deref(), Some("Basic eA=="));
    assert_eq!(seen.fault, "blackhole");
    let started = Instant::now();
    drop(proxy);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // The held connection was closed, and the port no longer accepts.
    held.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(std::io::Read::read(&mut held, &mut buf).unwrap_or(0), 0);
    assert!(std::net::TcpStream::connect(&addr).is_err());
}

#[test]
fn a_404_to_one_credential_moves_on_to_the_next_as_the_kubelet_does() {
    // The kubelet tries the next matching credential after any failed pull: a registry that
    // answers 404 to a user who may not see a private repository must not end the search.
    let digest = format!("sha256:{}", "8".repeat(64));
    let proxy = Proxy::standalone("127.0.0.1", Fault::manifest(&digest));
    challenge_first_heads(&proxy, Fault::basic_challenge(), 1);
    proxy.rule(
        Rule::contains("/manifests/", Fault::status(404))
            .method("HEAD")
            .times(1),
    );
    let p = proxy.host();
    let dir = tempfile::tempdir().unwrap();
    let b64 = |s: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s);
    // Two keys match; the kubelet's order tries the more specific `HOST/faults` first.
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"auths": {{"{p}/faults": {{"auth": "{}"}}, "{p}": {{"auth": "{}"}}}}}}"#,
            b64("wrong-user:pw"),
            b64("right-user:pw")
        ),
    )
    .unwrap();
    let image = format!("{p}/faults/private:v1");
    let (run, _) = timed(&[
        "--timeout",
        "5s",
        "--plain-http",
        &p,
        "--docker-config",
        config.to_str().unwrap(),
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "ok", "{r:#}");
    assert!(
        text(&r["auth"]).contains(&format!("key {p}")) && !text(&r["auth"]).contains("/faults"),
        "the second credential found it: {r:#}"
    );
    let heads: Vec<Seen> = proxy
        .requests()
        .into_iter()
        .filter(|s| s.method == "HEAD")
        .collect();
    // The challenged anonymous HEAD, then one per credential.
    assert_eq!(heads.len(), 3, "{heads:#?}");
    assert_eq!(heads[0].authorization, None, "{heads:#?}");
    assert!(heads[1].authorization.is_some(), "{heads:#?}");
    assert_ne!(heads[1].authorization, heads[2].authorization);
}

#[test]
fn a_manifest_requests_own_challenge_is_answered_when_the_version_check_was_open() {
    // `/v2/` answers 200, the repository is protected: the runtime (which never pings)
    // answers the manifest request's 401 with the pull secret, and pulls.
    let digest = format!("sha256:{}", "9".repeat(64));
    let proxy = Proxy::standalone("127.0.0.1", Fault::manifest(&digest));
    proxy.rule(Rule::exact("/v2/", Fault::status(200)));
    proxy.rule(
        Rule::contains("/manifests/", Fault::basic_challenge())
            .method("HEAD")
            .times(1),
    );
    let p = proxy.host();
    let dir = tempfile::tempdir().unwrap();
    let config = alice_for(dir.path(), &p);
    let image = format!("{p}/faults/protected:v1");
    let (run, _) = timed(&[
        "--timeout",
        "5s",
        "--plain-http",
        &p,
        "--docker-config",
        &config,
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "ok", "{r:#}");
    assert!(text(&r["auth"]).contains("config.json"), "{r:#}");
    let heads: Vec<Seen> = proxy
        .requests()
        .into_iter()
        .filter(|s| s.method == "HEAD")
        .collect();
    assert_eq!(heads.len(), 2, "{heads:#?}");
    assert!(heads[0].authorization.is_none(), "asked anonymously first");
    assert!(
        heads[1]
            .authorization
            .as_deref()
            .is_some_and(|a| a.starts_with("Basic ")),
        "{heads:#?}"
    );
    assert_eq!(pings(&proxy), 0, "{:#?}", proxy.requests());
    // Without a credential it stays no_credentials, after one HEAD (Basic without a credential
    // would only ask the same again).
    let image = format!("{p}/faults/protected-anon:v1");
    proxy.rule(
        Rule::contains("/protected-anon/", Fault::basic_challenge())
            .method("HEAD")
            .times(1),
    );
    let (run, _) = timed(&["--timeout", "5s", "--plain-http", &p, &image]);
    assert_eq!(run.code, 5, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["reason"], "no_credentials");
}

#[test]
fn a_version_check_answering_404_does_not_decide() {
    // `/v2/` answers 404, the manifest request works: ok, as the runtime pulls it.
    let digest = format!("sha256:{}", "a".repeat(64));
    let proxy = Proxy::standalone("127.0.0.1", Fault::manifest(&digest));
    proxy.rule(Rule::exact("/v2/", Fault::status(404)));
    let p = proxy.host();
    let image = format!("{p}/faults/no-version-check:v1");
    let (run, _) = timed(&["--timeout", "5s", "--plain-http", &p, &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["status"], "ok");
    assert_eq!(pings(&proxy), 0, "not sent when the manifest answers");
    // A host that answers 404 to everything is still not a registry (exit 6), not a
    // missing image: the version check, sent after the unexplained 404, says so.
    let web = Proxy::standalone("127.0.0.1", Fault::status(404));
    let w = web.host();
    let image = format!("{w}/faults/web-server:v1");
    let (run, _) = timed(&["--timeout", "5s", "--plain-http", &w, &image]);
    assert_eq!(run.code, 6, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["reason"], "not_a_registry");
    assert_eq!(pings(&web), 1, "{:#?}", web.requests());
}
