//! The cluster side (cargo features `webhook` and `watch`): the long-running servers that speak
//! to the API server, and `doctor`, which reads back what they made of a cluster. The init
//! container's binary leaves all of it out.
//!
//! - [`webhook`]: `pullcheck webhook`, the mutating admission webhook;
//! - `watch`: `pullcheck watch`, the stuck-pod controller;
//! - `doctor`: `pullcheck doctor`, whether the chart works on a cluster;
//! - `door`: the one client to the API server each command makes, and the reads they share;
//! - `ask`: one image asked of its registry, the one way the webhook's verdicts and the
//!   watcher's look ask it, through the process's held checker;
//! - `serve`: what the two servers share (the listener, the runtime, the accept loop, the
//!   probes and the metrics' histogram).

#[cfg(any(feature = "webhook", feature = "watch"))]
pub(crate) mod ask;
#[cfg(any(feature = "webhook", feature = "watch"))]
pub(crate) mod doctor;
pub(crate) mod door;
pub(crate) mod serve;
#[cfg(feature = "watch")]
pub(crate) mod watch;
#[cfg(feature = "webhook")]
pub mod webhook;
