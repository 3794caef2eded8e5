//! `pullcheck watch` (the `watch` cargo feature): the stuck-pod controller.
//!
//! - [`classify`]: the kubelet's words for a waiting container, permanent or transient.

pub(crate) mod classify;
