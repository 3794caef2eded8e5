//! `pullcheck watch` (the `watch` cargo feature): the stuck-pod controller.
//!
//! - [`classify`]: the kubelet's words for a waiting container, permanent or transient;
//! - [`decide`]: what to do with one pod, from the pod, the time and what was seen (no I/O).

pub(crate) mod classify;
pub(crate) mod decide;
