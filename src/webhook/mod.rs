//! `pullcheck webhook`: the mutating admission webhook that adds the init container at Pod (and
//! Job) creation, built with the cargo feature `webhook` (off by default, so that the init
//! container's binary carries no Kubernetes client).
//!
//! - [`cert`]: the webhook's own TLS certificate (`--self-signed`): a CA and a serving
//!   certificate made in memory, the CA written into the `MutatingWebhookConfiguration`'s
//!   `caBundle`, renewed before expiry without a restart.

pub mod cert;
