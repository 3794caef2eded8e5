//! Faults a registry can produce, and how pullcheck behaves under them: it never hangs past its
//! deadline and never panics.

use crate::check::check;
use crate::common::pullcheck_cmd;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A server that accepts connections and never answers.
fn black_hole() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    addr
}

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
    let mut child = pullcheck_cmd()
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
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(sent.elapsed() < Duration::from_secs(5), "did not stop");
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(1), "stopped after {took:?}");
    assert_eq!(status.code(), Some(6));
    let msg = std::fs::read_to_string(&log).unwrap();
    assert!(msg.starts_with("pullcheck: stopped by SIGTERM"), "{msg}");
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stopped"), "{stdout}");
}
