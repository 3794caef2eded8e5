//! The integration tests: one binary, so the real registries it starts are shared by all tests.
//!
//! - `common`: the harness (a real distribution registry on 127.0.0.1, TLS from a generated CA,
//!   htpasswd auth, fixtures pushed through the registry API, the access log read back), the
//!   one command builder (`common::pullcheck`), the one HTTPS stand-in, the signal helper.
//! - `image`: the release image's binary, run as it will run, and scanned for test hooks.
//! - `harness`: the harness's own self-test.
//! - `check`: `pullcheck check` end to end.
//! - `auth`: credentials as the kubelet uses them, against a real token-auth registry.
//! - `start`: predicting containers that will not start, from image configs pushed by the tests.
//! - `node`: `IfNotPresent` images and the node's own image list, from an API server stand-in.
//! - `route`: the node's registry configuration, compared with containerd and containers/image.
//! - `inject`, `manifests`: `pullcheck inject` and the corpus of job frameworks' manifests.
//! - `layout`: the shape of src/: no import cycle, no file or function too long to read.
//! - `hostile`: hostile registries and huge inputs: no crash, no overrun, bounded memory,
//!   nothing leaked.
//! - `docs_reasons`, `json_schema`: the generated reasons page and the JSON Schema, against the
//!   code and against real output.
//! - `docs_flags`: the generated flag reference, `-h` kept short, and every list of exit codes.
//! - `output`: what a person sees besides the report (warnings that are news, and only then).
//! - `cloud`, `plugin`: the node's credentials (built-in cloud providers against stand-ins of
//!   the cloud endpoints; the kubelet's exec plugins), against real registries.
//! - `faults`: faults a registry can produce (through a fault proxy): no hang past the
//!   deadline, no panic, and the requests each case costs.
//! - `bad_input`: flags, environment, files and references wrong in every way: usage errors.
//! - `platform`: the node's platform and "did you mean", against the real registry.
//! - `operator`: what the person waiting on a check sees while it runs and after.
//! - `webhook`: `pullcheck webhook` (the `webhook` feature) over TLS: its patches against
//!   `inject`'s output, who is left alone, bounds, health, metrics, certificate reload, and
//!   `--mode watch` (the Job rule alone).
//! - `watch`: `pullcheck watch` (the `watch` feature) without a cluster: flags, environment,
//!   usage errors, health and metrics.
//!
//! Run them with `scripts/test.sh` (or `cargo test --features test-hooks`): the tests that
//! reach cloud names through the `test-hooks` feature fail without it, saying so. A test that
//! cannot run here (no root, containerd, IPv6, ...) fails with `CI=true` and otherwise prints
//! `*** NOT RUN, NOT PASSED: …` (`common::cannot_run`).

#![allow(clippy::unwrap_used)]

mod auth;
mod bad_input;
mod check;
mod cloud;
mod common;
mod docs_flags;
mod docs_reasons;
mod faults;
mod harness;
mod hostile;
mod image;
mod inject;
mod json_schema;
mod layout;
mod manifests;
mod node;
mod operator;
mod output;
mod platform;
mod plugin;
mod route;
mod start;
mod watch;
mod webhook;
