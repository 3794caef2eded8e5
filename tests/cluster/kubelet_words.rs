//! The real kubelet's own words for each cause a pod can be stuck on (or fail on) before its
//! container runs, recorded from this cluster's kubelet and containerd, with the cause
//! pullcheck's reasons give each: the raw material of the stuck-pod controller's classifier.
//!
//! Each runtime words a failed pull its own way, so there is one table per runtime the cluster
//! runs (`PULLCHECK_CLUSTER_RUNTIME`, docs/kubernetes-in-tests.md):
//! `tests/fixtures/kubelet-recorded/<runtime>.tsv`, named as the cluster names its runtime
//! ([`Cluster::runtime`]: `containerd-2.4.2`, `containerd-2.4.2-local-pull`,
//! `containerd-1.6.20`), one row per case. The test fails when the kubelet's reason or
//! normalized words for a case differ from the running runtime's table, printing the new row;
//! `PULLCHECK_BLESS=1` rewrites that table. Run with
//! `cargo test --test cluster --features webhook -- --nocapture kubelet_words`.
//!
//! Every case is a bare Pod without pullcheck, `hostNetwork` (as the Jobs of `jobs.rs`), in one
//! namespace; all are created at once, then their container's states are polled: the first
//! `ErrImagePull` and the `ImagePullBackOff` after it, the first `RunContainerError` and the
//! `CrashLoopBackOff` after it, or the one state a case settles on; then the pod's `Failed`
//! Events. The varying parts of the words (registry addresses, digests, container ids, pod
//! uids, the cluster's folder) are replaced in one place, [`Normalizer`].
//!
//! What the table shows a classifier must know (v1.34 with containerd 1.6):
//! - `ImagePullBackOff`'s message carries the last pull error after `ErrImagePull: `, and the
//!   pod's `Failed` Event `Failed to pull image "…": …` the same words.
//! - An HTTP status containerd does not handle itself reads `pulling from host … failed with
//!   status code [manifests …]: <code> <phrase>`, whatever the body says (401 with Basic auth,
//!   403, 429, 503 alike): the code is all there is to classify.
//! - A missing tag and a missing repository read alike (`…: not found`), and so do no
//!   credentials and a wrong password on a registry with Basic auth (`401 Unauthorized`); with
//!   token auth they differ (`insufficient_scope` against `failed to fetch oauth token`).
//! - Under `restartPolicy: Never` (a Job with `podFailurePolicy`) a container that cannot start
//!   (`workingDir` a file, a command not in the image) does not wait: it ends `terminated`
//!   `StartError` and the pod fails by itself; only a container that restarts waits, in
//!   `RunContainerError` then `CrashLoopBackOff`.
//! - A registry that accepts the connection and never answers leaves the container waiting in
//!   `ContainerCreating` (a Normal `Pulling` Event) for as long as it holds the connection:
//!   neither containerd 1.6 nor the kubelet puts a deadline on a pull. So the table has no
//!   time-out row (a listener that accepted and never answered held a pod so for 6½ minutes,
//!   until it closed: then `read tcp …: connection reset by peer`).
//! - The kubelet pulls without a pull secret whose watch has not synced yet (a Warning
//!   `FailedToRetrieveImagePullSecret`): then a wrong password's first words are the anonymous
//!   ones. The test keeps the secrets' watch open with a pod of its own ([`hold_pull_secrets`])
//!   and fails if a case still got that Warning.
//! - `pull QPS exceeded` (the kubelet's own pull throttle) may stand in a state's message instead
//!   of the cause: a transient word, left out of the table ([`THROTTLED`]).
//!
//! What containerd 2 (v2.4.2) words otherwise (`containerd-2.4.2.tsv`, its default pull through
//! the transfer service; `containerd-2.4.2-local-pull.tsv`, its local path):
//! - Through the transfer service, `failed to resolve image: ` stands where 1.6 says
//!   `failed to resolve reference "IMAGE": `: a missing tag, digest or repository reads
//!   `failed to pull and unpack image "IMAGE": failed to resolve image: IMAGE: not found`.
//! - Through the transfer service, an index without the node's platform is no `failed to pull
//!   and unpack image` at all: `rpc error: code = NotFound desc = get image config descriptor: no
//!   match for platform in manifest sha256:…: not found` (the index was stored; reading the
//!   image's config for the node's platform fails). The local path says 1.6's words.
//! - On both paths an HTTP status reads `unexpected status from HEAD request to URL: <code>
//!   <phrase>` (403 adds the body's message after a newline), where 1.6 says `pulling from host
//!   … failed with status code`; a wrong Basic password still reads as a bare `401
//!   Unauthorized`, but no credentials on Basic auth now reads `pull access denied, repository
//!   does not exist or may require authorization: authorization failed: no basic auth
//!   credentials`; the token server's refusal names its URL (`unexpected status from GET
//!   request to https://…/token?…: 401 Unauthorized`).
//! - A loopback registry that refuses connections is tried over `https://` (1.6: `http://`).
//! - runc's start errors lose their trailing `: unknown`.
//!
//! The DNS case needs a resolver that answers on this machine: `cluster.sh` runs containerd in a
//! mount namespace of its own whose `/etc/resolv.conf` names only a stand-in on loopback that
//! answers every name NXDOMAIN. The test reads containerd's view of that file before it creates
//! any pod, and fails without creating one unless every nameserver there is that loopback
//! stand-in, so that no query can leave the machine.

use crate::common::proxy::{Canned, Fault, Proxy, Rule};
use crate::common::{ALICE, plain_registry, tls_basic_registry, token_registry};
use crate::harness::{Cluster, cluster, minutes, wait_for};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The tables' folder: one `<runtime>.tsv` each.
const FIXTURES: &str = "tests/fixtures/kubelet-recorded";
const NS: &str = "pc-words-kubelet";
const COLUMNS: [&str; 8] = [
    "case",
    "state",
    "reason",
    "message",
    "backoff_reason",
    "backoff_message",
    "failed_events",
    "cause",
];
/// The kubelet's own throttle of pulls (`registryPullQPS`, 5 a second, bursts of 10), which a
/// state may show instead of the cause when many pods pull at once: transient words, not the
/// cause, so such a state is not recorded (the next attempt shows the cause).
const THROTTLED: &str = "pull QPS exceeded";
/// The back-off states and the state each follows.
const BACKOFFS: [(&str, &str); 2] = [
    ("ErrImagePull", "ImagePullBackOff"),
    ("RunContainerError", "CrashLoopBackOff"),
];

/// One pod: what it is made of and the cause pullcheck's reasons give it.
struct Case {
    name: &'static str,
    /// A reason of docs/reference/reasons.md, or a new word where pullcheck has none yet.
    cause: &'static str,
    image: String,
    restart: &'static str,
    pull_policy: &'static str,
    /// Lines of the container after `imagePullPolicy`, indented four spaces.
    container: String,
    /// Lines of the pod spec before `containers`, indented two spaces.
    pod: String,
}

fn case(name: &'static str, cause: &'static str, image: &str) -> Case {
    Case {
        name,
        cause,
        image: image.to_string(),
        restart: "Never",
        pull_policy: "IfNotPresent",
        container: "    command: [\"true\"]\n".to_string(),
        pod: String::new(),
    }
}

impl Case {
    fn container(mut self, lines: &str) -> Case {
        self.container = lines.to_string();
        self
    }

    fn yaml(&self) -> String {
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: {restart}
  hostNetwork: true
  terminationGracePeriodSeconds: 0
{pod}  containers:
  - name: app
    image: "{image}"
    imagePullPolicy: {policy}
{container}"#,
            name = self.name,
            restart = self.restart,
            pod = self.pod,
            image = self.image,
            policy = self.pull_policy,
            container = self.container,
        )
    }
}

/// An env var from a Secret's or ConfigMap's key (`secretKeyRef`, `configMapKeyRef`).
fn env_from(kind: &str, name: &str, key: &str) -> String {
    format!(
        "    command: [\"true\"]\n    env:\n    - {{name: WORDS, valueFrom: {{{kind}: {{name: {name}, key: {key}}}}}}}\n"
    )
}

/// The registries and names the cases use, set up before any pod is made.
struct Setup {
    /// The cluster's registry behind a fault proxy (it passes the registry protocol through):
    /// 403, 429 or 503 to every request under `/v2/denied/`, `/v2/rate-limited/`,
    /// `/v2/server-error/`. Lives as long as this.
    faulty: Proxy,
    /// `127.0.0.1:PORT` where nothing listens.
    refused: String,
    token_image: String,
    basic_image: String,
    seed_image: String,
    normalizer: Normalizer,
}

fn set_up(c: &'static Cluster) -> Setup {
    // The images that run, on the node before the pods are made: the cases pull only what fails.
    for image in ["tools:1", "tools-nobody:1", "tools-nocmd:1"] {
        let image = format!("{}/{image}", c.registry);
        c.pull_on_node(&image);
    }
    let registry = token_registry();
    let token_host = registry.host();
    let token_image = private_tools(c, registry, "words-badcred");
    let basic = tls_basic_registry();
    let basic_image = private_tools(c, basic, "words-badcred-basic");
    // A Secret and a ConfigMap that exist, each with the key `present` only.
    for kind in [
        &["secret", "generic", "words-secret"][..],
        &["configmap", "words-config"],
    ] {
        let mut args = vec!["create"];
        args.extend_from_slice(kind);
        args.extend_from_slice(&["-n", NS, "--from-literal=present=1"]);
        c.kubectl(&args);
    }

    // The first part of the repository's path says what the faulty registry answers.
    let faulty = Proxy::start(&c.registry);
    let json = |code: u16, body: &str| {
        Fault::respond(
            Canned::new(code)
                .header("Content-Type", "application/json")
                .body(body.to_string()),
        )
    };
    faulty.rule(Rule::prefix(
        "/v2/denied/",
        json(
            403,
            r#"{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}"#,
        ),
    ));
    faulty.rule(Rule::prefix("/v2/rate-limited/", Fault::rate_limited("30")));
    faulty.rule(Rule::prefix(
        "/v2/server-error/",
        json(
            503,
            r#"{"errors":[{"code":"UNAVAILABLE","message":"service unavailable"}]}"#,
        ),
    ));
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").to_string()
    };
    // An index that holds only another platform than the node's.
    let other = if std::env::consts::ARCH == "aarch64" {
        "linux/amd64"
    } else {
        "linux/arm64"
    };
    let seed = plain_registry();
    seed.push_oci_index("words/other-platform", "1", &[other]);
    let seed_image = format!("{}/words/other-platform:1", seed.host());

    let token_server = registry.token_server().expect("token server").host();
    let normalizer = Normalizer {
        hosts: vec![
            (c.registry.clone(), "REGISTRY"),
            (token_host, "TOKEN_REGISTRY"),
            (basic.host(), "BASIC_REGISTRY"),
            (token_server, "TOKEN_SERVER"),
            (faulty.host(), "FAULTY_REGISTRY"),
            (refused.clone(), "NOTHING_LISTENS"),
            (seed.host(), "SEED_REGISTRY"),
        ],
        cluster_dir: c.dir.display().to_string(),
    };
    Setup {
        faulty,
        refused,
        token_image,
        basic_image,
        seed_image,
        normalizer,
    }
}

/// The pod that holds the cases' pull secrets.
const HOLDER: &str = "pull-secrets-held";

/// The kubelet reads a pod's pull secrets through a watch it opens when the pod comes to it,
/// and when that watch has not synced after a short wait it pulls without the secret (a Warning
/// `FailedToRetrieveImagePullSecret`, then the anonymous words: `insufficient_scope` where the
/// case is a wrong password). With thirty pods made at once that happened in CI. A pod that
/// names both pull secrets and runs before the cases are made keeps the kubelet's watch of them
/// open, so every case's first pull has its secret.
fn hold_pull_secrets(c: &Cluster) {
    let holder = format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {HOLDER}
spec:
  restartPolicy: Never
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  imagePullSecrets: [{{name: words-badcred}}, {{name: words-badcred-basic}}]
  containers:
  - name: app
    image: "{}"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
"#,
        c.tools_image()
    );
    c.apply(NS, &holder);
    wait_for(
        "the pod holding the pull secrets to run",
        minutes(1),
        || {
            let pod = c.get(NS, &format!("pod/{HOLDER}"));
            let phase = pod.as_ref().map(|p| p["status"]["phase"].clone());
            match phase {
                Some(Value::String(p)) if p == "Running" => Ok(()),
                other => Err(format!("phase {other:?}")),
            }
        },
    );
}

/// The pods the kubelet pulled for without a pull secret it could not read in time.
fn unread_pull_secrets(c: &Cluster) -> Vec<String> {
    events_of_reason(c, "FailedToRetrieveImagePullSecret")
        .iter()
        .filter_map(|e| e["involvedObject"]["name"].as_str())
        .filter(|name| *name != HOLDER)
        .map(str::to_string)
        .collect()
}

/// The Events of the cases' namespace with this reason.
fn events_of_reason(c: &Cluster, reason: &str) -> Vec<Value> {
    let selector = format!("reason={reason}");
    let out = c.kubectl(&[
        "get",
        "events",
        "-n",
        NS,
        "--field-selector",
        &selector,
        "-o",
        "json",
    ]);
    let list: Value = serde_json::from_str(&out).expect("event list JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The tools image in `registry` (TLS, credentials needed), trusted by containerd, and a pull
/// secret `secret` for it with a wrong password; the image's reference.
fn private_tools(c: &Cluster, registry: &crate::common::Registry, secret: &str) -> String {
    let host = registry.host();
    let ca = registry.ca_pem_path().expect("CA").to_path_buf();
    let image = c.copy_tools_into(registry, "private/words-tools:1");
    c.trust_registry(&host, &ca);
    c.pull_secret(NS, secret, &host, ALICE, "not-the-password");
    image
}

fn cases(c: &Cluster, s: &Setup) -> Vec<Case> {
    let r = &c.registry;
    let f = s.faulty.host();
    let tools = c.tools_image();
    let non_root = "    command: [\"true\"]\n    securityContext: {runAsNonRoot: true}\n";
    let workdir = "    command: [\"true\"]\n    workingDir: /bin/busybox\n";
    let no_such_command = "    command: [\"/no-such-command\"]\n";
    vec![
        case(
            "tag-missing",
            "tag_missing",
            &format!("{r}/tools:no-such-tag"),
        ),
        case(
            "digest-missing",
            "digest_missing",
            &format!("{r}/tools@sha256:{}", "0".repeat(64)),
        ),
        case(
            "repository-missing",
            "repository_missing",
            &format!("{r}/words-no-such-repository:1"),
        ),
        case("no-credentials", "no_credentials", &s.token_image),
        Case {
            pod: "  imagePullSecrets: [{name: words-badcred}]\n".to_string(),
            ..case("wrong-password", "credentials_rejected", &s.token_image)
        },
        case("no-credentials-basic", "no_credentials", &s.basic_image),
        Case {
            pod: "  imagePullSecrets: [{name: words-badcred-basic}]\n".to_string(),
            ..case(
                "wrong-password-basic",
                "credentials_rejected",
                &s.basic_image,
            )
        },
        case("denied", "denied", &format!("{f}/denied/tools:1")),
        case(
            "rate-limited",
            "rate_limited",
            &format!("{f}/rate-limited/tools:1"),
        ),
        case(
            "server-error",
            "server_error",
            &format!("{f}/server-error/tools:1"),
        ),
        case(
            "connection-refused",
            "connect",
            &format!("{}/tools:1", s.refused),
        ),
        case(
            "no-such-host",
            "no_such_host",
            "no-such-registry.test/tools:1",
        ),
        case("invalid-name", "invalid_reference", &format!("{r}/Tools:1")),
        Case {
            pull_policy: "Never",
            ..case(
                "never-pull-absent",
                "not_present_on_node",
                &format!("{r}/tools:words-not-on-node"),
            )
        },
        case("other-platform", "no_matching_platform", &s.seed_image),
        case("missing-secret", "missing_secret", &tools).container(&env_from(
            "secretKeyRef",
            "words-no-such-secret",
            "present",
        )),
        case("missing-config-map", "missing_config_map", &tools).container(&env_from(
            "configMapKeyRef",
            "words-no-such-config",
            "present",
        )),
        case("missing-secret-key", "missing_key", &tools).container(&env_from(
            "secretKeyRef",
            "words-secret",
            "absent",
        )),
        case("missing-config-map-key", "missing_key", &tools).container(&env_from(
            "configMapKeyRef",
            "words-config",
            "absent",
        )),
        Case {
            restart: "Always",
            ..case("working-dir-is-a-file", "working_dir_not_directory", &tools).container(workdir)
        },
        case(
            "working-dir-is-a-file-never",
            "working_dir_not_directory",
            &tools,
        )
        .container(workdir),
        Case {
            restart: "Always",
            ..case("command-not-found", "command_not_found", &tools).container(no_such_command)
        },
        case("command-not-found-never", "command_not_found", &tools).container(no_such_command),
        case("runs-as-root", "runs_as_root", &tools).container(non_root),
        case(
            "non-numeric-user",
            "non_numeric_user",
            &format!("{r}/tools-nobody:1"),
        )
        .container(non_root),
        case("no-command", "no_command", &format!("{r}/tools-nocmd:1")).container(""),
    ]
}

/// Replaces the parts of the kubelet's words that change from run to run.
struct Normalizer {
    /// `host:port` of each registry of the run, and the name it gets in the table.
    hosts: Vec<(String, &'static str)>,
    cluster_dir: String,
}

impl Normalizer {
    fn normalize(&self, text: &str) -> String {
        let mut out = text.replace(&self.cluster_dir, "CLUSTER_DIR");
        for (host, label) in &self.hosts {
            out = replace_host(&out, host, label);
        }
        out = replace_host_ports(&out, "127.0.0.1:", "127.0.0.1:PORT");
        out = replace_duration(&out, "back-off ");
        out = replace_log_times(&out);
        // The kubelet's event correlator folds the eleventh similar Event in ten minutes into
        // one with this prefix: how many came before the recording is timing, not words.
        out = out.replace("(combined from similar events): ", "");
        replace_hex(&out)
    }
}

/// `text` with the value of each logrus `time="…"` (runc's log line, which CRI-O passes on in
/// its words) replaced by `TIME`.
fn replace_log_times(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("time=\"") {
        let after = &rest[at + "time=\"".len()..];
        out.push_str(&rest[..at]);
        match after.find('"') {
            Some(end) => {
                out.push_str("time=\"TIME\"");
                rest = &after[end + 1..];
            }
            None => {
                out.push_str("time=\"");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` with each `host` (`IP:PORT`) not followed by another digit replaced by `label`.
fn replace_host(text: &str, host: &str, label: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(host) {
        let after = &rest[at + host.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            out.push_str(host);
        } else {
            out.push_str(label);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `text` with every `prefix` followed by digits (a port) replaced by `label`.
fn replace_host_ports(text: &str, prefix: &str, label: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..at]);
        if digits > 0 {
            out.push_str(label);
        } else {
            out.push_str(prefix);
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// `text` with the Go duration after each `prefix` (`10s`, `1m20s`: the kubelet's back-off grows
/// with each attempt) replaced by `DURATION`.
fn replace_duration(text: &str, prefix: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        let len = after.len()
            - after
                .trim_start_matches(|c: char| {
                    c.is_ascii_digit() || matches!(c, '.' | 'h' | 'm' | 's')
                })
                .len();
        out.push_str(&rest[..at + prefix.len()]);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            out.push_str("DURATION");
            rest = &after[len..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `text` with 64 lower-case hex digits after `sha256:` replaced by `DIGEST`, other runs of 64
/// (container and sandbox ids) by `ID`, and UUIDs (pod uids) by `UID`.
fn replace_hex(text: &str) -> String {
    let is_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(is_hex) {
        let (before, from) = rest.split_at(start);
        out.push_str(before);
        let boundary = !out.ends_with(|c: char| c.is_ascii_alphanumeric());
        let run = from.len()
            - from
                .trim_start_matches(|c: char| is_hex(c) || c == '-')
                .len();
        let token = &from[..run];
        let ends = !from[run..].starts_with(|c: char| c.is_ascii_alphanumeric());
        let parts: Vec<usize> = token.split('-').map(str::len).collect();
        let replacement = if !boundary || !ends {
            None
        } else if parts == [64] {
            Some(if out.ends_with("sha256:") {
                "DIGEST"
            } else {
                "ID"
            })
        } else if parts == [8, 4, 4, 4, 12] {
            Some("UID")
        } else {
            None
        };
        match replacement {
            Some(r) => out.push_str(r),
            None => out.push_str(token),
        }
        rest = &from[run..];
        if run == 0 {
            // Not reached (`find` stopped on a hex digit); keeps the loop finite regardless.
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.push_str(rest);
    out
}

/// Every state one pod's container was seen in: `(state, reason, message)` with the words it
/// first had, in the order seen.
#[derive(Default)]
struct Seen {
    states: Vec<(String, String, String)>,
    settled: bool,
}

impl Seen {
    /// Adds what `state` (a container status's `state`) shows. Settled: under `restartPolicy:
    /// Never`, once terminated; else once a state was seen and each back-off pair is whole.
    fn record(&mut self, state: &Value, never: bool) {
        for kind in ["waiting", "terminated"] {
            let Some(s) = state.get(kind).filter(|s| s.is_object()) else {
                continue;
            };
            // A container that restarts is judged by its waiting states alone.
            if kind == "terminated" && !never {
                continue;
            }
            let reason = s["reason"].as_str().unwrap_or_default().to_string();
            if kind == "waiting"
                && matches!(reason.as_str(), "ContainerCreating" | "PodInitializing")
            {
                continue;
            }
            let message = s["message"].as_str().unwrap_or_default().to_string();
            if !self
                .states
                .iter()
                .any(|(k, r, _)| k == kind && *r == reason)
                && !message.contains(THROTTLED)
            {
                self.states.push((kind.to_string(), reason, message));
            }
        }
        let has = |r: &str| self.states.iter().any(|(_, x, _)| x == r);
        let terminated = self.states.iter().any(|(k, _, _)| k == "terminated");
        let pairs_whole = BACKOFFS.iter().all(|(first, then)| has(first) == has(then));
        self.settled = (never && terminated) || (!self.states.is_empty() && pairs_whole);
    }

    fn first(&self, backoff: bool) -> Option<&(String, String, String)> {
        self.states
            .iter()
            .find(|(_, r, _)| BACKOFFS.iter().any(|(_, b)| b == r) == backoff)
    }
}

/// Polls the namespace's pods until every case's container has settled (`BACKOFFS`).
fn watch_states(c: &Cluster, cases: &[Case]) -> BTreeMap<String, Seen> {
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    wait_for("every case's container to settle", minutes(3), || {
        let list: Value =
            serde_json::from_str(&c.kubectl(&["get", "pods", "-n", NS, "-o", "json"]))
                .map_err(|e| e.to_string())?;
        for pod in list["items"].as_array().into_iter().flatten() {
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            let never = pod["spec"]["restartPolicy"] == "Never";
            let s = seen.entry(name.to_string()).or_default();
            if !s.settled {
                s.record(&pod["status"]["containerStatuses"][0]["state"], never);
            }
        }
        let waiting: Vec<String> = cases
            .iter()
            .filter(|k| !seen.get(k.name).is_some_and(|s| s.settled))
            .map(|k| format!("{}: {:?}", k.name, seen.get(k.name).map(|s| &s.states)))
            .collect();
        if waiting.is_empty() {
            Ok(())
        } else {
            Err(waiting.join("\n"))
        }
    });
    seen
}

/// The normalized messages of each pod's `Failed` Events, without the bare `Error: <reason>`
/// ones (the waiting reason again) and the throttled ones, sorted.
fn failed_events(c: &Cluster, n: &Normalizer) -> BTreeMap<String, BTreeSet<String>> {
    let mut events: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &events_of_reason(c, "Failed") {
        if e["involvedObject"]["kind"] != "Pod" {
            continue;
        }
        let message = e["message"].as_str().unwrap_or_default();
        let bare = message
            .strip_prefix("Error: ")
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphabetic()));
        if !bare && !message.contains(THROTTLED) {
            let pod = e["involvedObject"]["name"].as_str().unwrap_or_default();
            events
                .entry(pod.to_string())
                .or_default()
                .insert(n.normalize(message));
        }
    }
    events
}

type Row = [String; 8];

fn row(case: &Case, seen: &Seen, events: Option<&BTreeSet<String>>, n: &Normalizer) -> Row {
    let dash = || "-".to_string();
    let (state, reason, message) = seen
        .first(false)
        .map(|(k, r, m)| (k.clone(), r.clone(), n.normalize(m)))
        .unwrap_or_else(|| (dash(), dash(), dash()));
    let (backoff_reason, backoff_message) = seen
        .first(true)
        .map(|(_, r, m)| (r.clone(), n.normalize(m)))
        .unwrap_or_else(|| (dash(), dash()));
    let events = events
        .filter(|e| !e.is_empty())
        .map(|e| e.iter().cloned().collect::<Vec<_>>().join(" | "))
        .unwrap_or_else(dash);
    [
        case.name.to_string(),
        state,
        reason,
        message,
        backoff_reason,
        backoff_message,
        events,
        case.cause.to_string(),
    ]
}

fn escape(field: &str) -> String {
    field
        .replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
}

fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn tsv_line(row: &Row) -> String {
    let fields: Vec<String> = row.iter().map(|f| escape(f)).collect();
    format!("{}\n", fields.join("\t"))
}

/// The running runtime's table, relative to the repository.
fn fixture(c: &Cluster) -> String {
    format!("{FIXTURES}/{}.tsv", c.runtime)
}

/// The committed table at `fixture`, by case; empty when there is none yet.
fn read_fixture(fixture: &str) -> BTreeMap<String, Row> {
    let Ok(text) = std::fs::read_to_string(crate::harness::repo().join(fixture)) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("case\t") && !l.is_empty())
        .map(|l| {
            let fields: Vec<String> = l.split('\t').map(unescape).collect();
            let row: Row = fields
                .try_into()
                .unwrap_or_else(|f: Vec<String>| panic!("{fixture}: {} fields in {l}", f.len()));
            (row[0].clone(), row)
        })
        .collect()
}

/// What the words were recorded on, for the table's header: the kubelet's version and the
/// runtime's, as the Node reports them, and how the runtime pulls.
fn recorded_on(c: &Cluster) -> String {
    let info = |field: &str| {
        c.kubectl(&[
            "get",
            "node",
            &c.node,
            "-o",
            &format!("jsonpath={{.status.nodeInfo.{field}}}"),
        ])
    };
    let pull = if c.is_crio() {
        "pulling with containers/image"
    } else if c.runtime.ends_with("-local-pull") {
        "pulling on its local path (`use_local_image_pull = true`)"
    } else if c.runtime.starts_with("containerd-1.") {
        "pulling in its CRI plugin (containerd 1.x has no transfer service)"
    } else {
        "pulling through its transfer service (the default)"
    };
    format!(
        "# Runtime {}: kubelet {} on {}, {pull}.\n",
        c.runtime,
        info("kubeletVersion"),
        info("containerRuntimeVersion"),
    )
}

fn table(recorded_on: &str, rows: &[Row]) -> String {
    let mut text = String::from(
        "# The real kubelet's words for each cause, recorded from the test cluster's kubelet\n\
         # and container runtime by tests/cluster/kubelet_words.rs; do not edit: on a cluster of\n\
         # this runtime (tests/cluster/cluster.sh, PULLCHECK_CLUSTER_RUNTIME),\n\
         # `PULLCHECK_BLESS=1 cargo test --test cluster --features webhook -- kubelet_words`\n\
         # rewrites it. Tab-separated; `\\t`, `\\n`, `\\\\` escaped; `-` for nothing. `state` and\n\
         # `reason` are the container's first state that names the cause, `backoff_*` the\n\
         # back-off state after it, `failed_events` the pod's distinct `Failed` Events (bare\n\
         # `Error: <reason>` ones left out, ` | ` between), `cause` the reason pullcheck's words\n\
         # give it. Registry addresses are REGISTRY, TOKEN_REGISTRY, ...; digests, ids, pod uids\n\
         # and the cluster's folder are replaced too.\n",
    );
    text.push_str(recorded_on);
    text.push_str(&format!("{}\n", COLUMNS.join("\t")));
    for row in rows {
        text.push_str(&tsv_line(row));
    }
    text
}

/// Fails unless every nameserver in the runtime's `/etc/resolv.conf` (as its mount namespace
/// sees it) is the cluster's loopback stand-in: the DNS case must not query off the machine.
fn check_resolver_is_local(c: &Cluster) {
    let env = std::fs::read_to_string(c.dir.join("env")).expect("the cluster's env");
    let resolver = env
        .lines()
        .find_map(|l| l.strip_prefix("export PULLCHECK_CLUSTER_RESOLVER="))
        .unwrap_or_else(|| {
            panic!("the cluster has no resolver of its own (PULLCHECK_CLUSTER_RESOLVER): bring it up with this tree's tests/cluster/cluster.sh")
        });
    assert!(resolver.starts_with("127."), "resolver {resolver}");
    let (binary, config): (&[u8], _) = if c.is_crio() {
        (b"crio", c.dir.join("crio/crio.conf"))
    } else {
        (b"containerd", c.dir.join("containerd/config.toml"))
    };
    let config = config.display().to_string();
    let pid = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .find(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            args.first().is_some_and(|a| a.ends_with(binary))
                && args
                    .windows(2)
                    .any(|w| w[0] == b"--config" && w[1] == config.as_bytes())
        })
        .map(|e| e.path())
        .expect("the cluster's runtime process");
    let resolv = std::fs::read_to_string(pid.join("root/etc/resolv.conf"))
        .expect("the runtime's /etc/resolv.conf");
    let servers: Vec<&str> = resolv
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .map(str::trim)
        .collect();
    assert!(
        !servers.is_empty() && servers.iter().all(|s| *s == resolver),
        "the runtime's /etc/resolv.conf must name only the stand-in {resolver}:\n{resolv}"
    );
}

#[test]
fn kubelet_words_for_each_cause() {
    let c = cluster();
    check_resolver_is_local(c);
    let ns = c.namespace(NS);
    let setup = set_up(c);
    hold_pull_secrets(c);
    let cases = cases(c, &setup);
    let docs: Vec<String> = cases.iter().map(Case::yaml).collect();
    c.apply(&ns.name, &docs.join("---\n"));

    let started = Instant::now();
    let seen = watch_states(c, &cases);
    let n = &setup.normalizer;
    let path = fixture(c);
    let fixture = read_fixture(&path);
    let bless = std::env::var_os("PULLCHECK_BLESS").is_some_and(|v| v == "1");
    // The Events are sent after the state they explain, and not always before the poll ends:
    // read them until they match the table, or for 20 s.
    let deadline = Instant::now() + Duration::from_secs(20);
    let rows: Vec<Row> = loop {
        let events = failed_events(c, n);
        let rows: Vec<Row> = cases
            .iter()
            .map(|k| row(k, &seen[k.name], events.get(k.name), n))
            .collect();
        let same = rows.iter().all(|r| fixture.get(&r[0]) == Some(r));
        if (same && !bless) || Instant::now() >= deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    let unread = unread_pull_secrets(c);
    assert!(
        unread.is_empty(),
        "the kubelet pulled without a pull secret it had not read yet, so these words are not the case's: {unread:?}"
    );
    let text = table(&recorded_on(c), &rows);
    println!(
        "the kubelet's words, {} s after the pods were made:\n{text}",
        started.elapsed().as_secs()
    );
    if bless {
        std::fs::write(crate::harness::repo().join(&path), &text).expect("write the table");
        println!("wrote {path}");
        return;
    }
    let mut changed = String::new();
    for r in &rows {
        if fixture.get(&r[0]) != Some(r) {
            let was = fixture.get(&r[0]).map_or("(none)\n".to_string(), tsv_line);
            changed.push_str(&format!("was: {was}now: {}", tsv_line(r)));
        }
    }
    for name in fixture.keys() {
        if !rows.iter().any(|r| r[0] == *name) {
            changed.push_str(&format!("{name}: in {path}, no longer a case\n"));
        }
    }
    assert!(
        changed.is_empty(),
        "the kubelet's words on {} differ from {path} (`PULLCHECK_BLESS=1` rewrites it):\n{changed}",
        c.runtime
    );
}

#[test]
fn kubelet_words_normalize() {
    let n = Normalizer {
        hosts: vec![("127.0.0.1:5000".to_string(), "REGISTRY")],
        cluster_dir: "/x/cluster".to_string(),
    };
    let digest = "a".repeat(64);
    assert_eq!(
        n.normalize(&format!(
            "pull 127.0.0.1:5000/t@sha256:{digest} from 127.0.0.1:50001 id {digest} in /x/cluster/c, pod (0b2c4e6f-1a2b-4c3d-8e9f-001122334455)"
        )),
        "pull REGISTRY/t@sha256:DIGEST from 127.0.0.1:PORT id ID in CLUSTER_DIR/c, pod (UID)"
    );
    assert_eq!(
        n.normalize("back-off 1m20s restarting, Back-off pulling image, back-off 10s"),
        "back-off DURATION restarting, Back-off pulling image, back-off DURATION"
    );
    assert_eq!(
        n.normalize("bad1 deadbeef 127.0.0.1:"),
        "bad1 deadbeef 127.0.0.1:"
    );
    assert_eq!(
        n.normalize(
            "(combined from similar events): Error: failed: time=\"2026-12-05T19:03:35Z\" level=error msg=\"x\" time=\"open"
        ),
        "Error: failed: time=\"TIME\" level=error msg=\"x\" time=\"open"
    );
    let row: Row = std::array::from_fn(|i| format!("f{i}\twith\\tab\n"));
    let line = tsv_line(&row);
    let back: Vec<String> = line.trim_end().split('\t').map(unescape).collect();
    assert_eq!(back, row.to_vec());
}
