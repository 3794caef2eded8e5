//! Signals to a running pullcheck, as the kubelet sends them (SIGTERM when a pod is deleted,
//! SIGINT from a terminal), and bounded waits for its exit: a test that fails never hangs.

use std::process::{Child, ExitStatus, Output};
use std::time::{Duration, Instant};

pub use rustix::process::Signal;

/// Sends `signal` to `child`; fails the test when it cannot be sent.
pub fn send(child: &Child, signal: Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), signal)
        .unwrap_or_else(|e| panic!("send {signal:?} to pullcheck ({}): {e}", child.id()));
}

/// SIGTERM, as the kubelet sends it.
pub fn terminate(child: &Child) {
    send(child, Signal::TERM);
}

/// SIGINT, as a terminal's Ctrl-C sends it.
pub fn interrupt(child: &Child) {
    send(child, Signal::INT);
}

/// Waits for `child` to exit; fails the test past `limit` (the child is killed first, so that
/// nothing is left behind).
pub fn exit_within(child: &mut Child, limit: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for pullcheck") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pullcheck did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child`, killing it past `limit` (so that a failing test does not hang), and
/// returns what it printed.
pub fn output_within(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}
