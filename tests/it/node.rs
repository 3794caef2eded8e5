//! `IfNotPresent` images and the node's own image list: pullcheck reads the Node object from an
//! API server stand-in (TLS, bearer token, the API's shapes) and asks the real registry only
//! about what the node's list does not settle. The node's kubelet version decides what holding
//! an image settles: before v1.35 (the recorded kind node is v1.31.0) everything; from v1.35,
//! whose kubelet re-verifies a pod's credentials before it uses its copy, only the registry's
//! `ok` to the pod's own credentials does.

use crate::check::Run;
use crate::common::apiserver::{ApiServer, Mode, kind_node, pad_images};
use crate::common::{
    ALICE, ALICE_PASSWORD, Pullcheck, block_on, plain_registry, pullcheck, signal, token_registry,
};
use pullcheck::node::NodeOptions;
use pullcheck::pull_policy::{self, PullPolicy};
use pullcheck::registry::ClientOptions;
use pullcheck::{Options, Status};
use std::time::Duration;

const NODE: &str = "ci-control-plane";
/// A digest no registry here holds.
const DIGEST: &str = "sha256:9d0e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f";

/// Runs `pullcheck check -o json ARGS` in the pod's place: in-cluster environment pointing at
/// `api` (or at nothing), no credentials from the machine, and a proxy on a closed loopback
/// port for everything but 127.0.0.1, so that a request for a Docker Hub image fails here
/// instead of leaving the machine.
fn run(api: Option<&ApiServer>, args: &[&str]) -> Run {
    let endpoint = api.map(|a| (a.host(), a.port(), a.service_account_dir().to_path_buf()));
    run_against(endpoint, args)
}

/// [`run`] with `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT` and the service-account
/// directory given (or none of them).
fn run_against(endpoint: Option<(String, String, std::path::PathBuf)>, args: &[&str]) -> Run {
    run_with_vars(endpoint, args, &[])
}

/// [`run_against`] with more environment variables (set after the others).
fn run_with_vars(
    endpoint: Option<(String, String, std::path::PathBuf)>,
    args: &[&str],
    vars: &[(String, String)],
) -> Run {
    let cmd = in_the_pod(pullcheck().check(&["--termination-log", "", "-o", "json"]))
        .args(args)
        .env("PULLCHECK_TIMEOUT", "20s");
    let cmd = match endpoint {
        Some((host, port, dir)) => cmd
            .env("KUBERNETES_SERVICE_HOST", host)
            .env("KUBERNETES_SERVICE_PORT", port)
            .env("PULLCHECK_SERVICE_ACCOUNT_DIR", dir),
        None => cmd
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT"),
    };
    cmd.envs(vars.iter().map(|(k, v)| (k, v))).run()
}

/// The pod's place, for a run: no node name from the machine, and a proxy on a closed
/// loopback port for everything but loopback.
fn in_the_pod(cmd: Pullcheck) -> Pullcheck {
    cmd.env_remove("PULLCHECK_NODE_NAME")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost,::1")
}

/// A stand-in serving the kind node with `loaded` images.
fn api_with(loaded: &[&[&str]]) -> ApiServer {
    let api = ApiServer::start(Mode::Serve);
    api.add_node(&kind_node(NODE, loaded));
    api
}

/// The stand-in was asked exactly once, for the node, with the token.
fn assert_one_node_request(api: &ApiServer) {
    let requests = api.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].path, format!("/api/v1/nodes/{NODE}"));
    assert!(requests[0].bearer_ok, "{requests:#?}");
}

#[test]
fn preloaded_image_needs_no_registry_at_all() {
    // What `kind load docker-image app:v1.0` leaves on the node; nothing serves docker.io here.
    let api = api_with(&[&["docker.io/library/app:v1.0"]]);
    let run = run(
        Some(&api),
        &["--if-not-present", "app:v1.0", "--node", NODE],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let app = run.image("app:v1.0");
    assert_eq!(app["status"], "ok");
    assert_eq!(app["reason"], "present_on_node");
    assert_eq!(app["pull_policy"], "IfNotPresent");
    assert_eq!(app["present_on_node"], true);
    assert_eq!(app["attempts"], 0);
    assert!(
        app.get("fatal").is_none(),
        "fatal is for failures only: {app}"
    );
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert_one_node_request(&api);
    for out in [&run.stdout, &run.stderr] {
        assert!(!out.contains(api.token()), "the token leaked: {out}");
    }
}

#[test]
fn an_ipv6_api_server_address_is_put_in_brackets() {
    // An IPv6 cluster sets KUBERNETES_SERVICE_HOST to a bare address, e.g. `fd00:10:96::1`.
    let api = ApiServer::start_on("[::1]:0", Mode::Serve);
    api.add_node(&kind_node(NODE, &[&["docker.io/library/app:v1.0"]]));
    assert_eq!(api.host(), "::1");
    let run = run(
        Some(&api),
        &["--if-not-present", "app:v1.0", "--node", NODE],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.image("app:v1.0")["reason"], "present_on_node");
    assert_one_node_request(&api);
}

#[test]
fn preloaded_image_is_not_asked_of_its_registry() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node-pre/pulled", "v1");
    let loaded = format!("{host}/node-pre/loaded:v1");
    let by_digest = format!("{host}/node-pre/pinned@{DIGEST}");
    let api = api_with(&[&[&loaded], &[&by_digest]]);
    let pulled = format!("{host}/node-pre/pulled:v1");
    // The tag beside the digest does not matter: the runtime resolves the digest.
    let pinned = format!("{host}/node-pre/pinned:v9@{DIGEST}");
    let list = format!("{loaded} {pulled},{pinned}");
    let run = run(
        Some(&api),
        &[
            "--plain-http",
            &host,
            "--if-not-present",
            &list,
            "--node",
            NODE,
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for image in [&loaded, &pinned] {
        let r = run.image(image);
        assert_eq!(r["reason"], "present_on_node", "{r:#}");
        assert_eq!(r["present_on_node"], true);
    }
    let p = run.image(&pulled);
    assert_eq!(p["status"], "ok");
    assert_eq!(p["present_on_node"], false, "{p:#}");
    // The image not on the node was asked; the two on it were not.
    assert!(!reg.requests_for("node-pre/pulled").is_empty());
    assert_eq!(reg.requests_for("node-pre/loaded"), []);
    assert_eq!(reg.requests_for("node-pre/pinned"), []);
    assert_one_node_request(&api);
}

/// A stand-in serving the kind node with `loaded` images, its kubelet at `version`
/// (`status.nodeInfo.kubeletVersion`).
fn api_of_kubelet(version: &str, loaded: &[&[&str]]) -> ApiServer {
    let api = ApiServer::start(Mode::Serve);
    let mut node = kind_node(NODE, loaded);
    node["status"]["nodeInfo"]["kubeletVersion"] = version.into();
    api.add_node(&node);
    api
}

/// How many manifest requests `repo` has had at `reg` so far.
fn manifest_requests(reg: &crate::common::Registry, repo: &str) -> usize {
    reg.requests_for(repo)
        .iter()
        .filter(|r| r.path.contains("/manifests/"))
        .count()
}

#[test]
fn on_a_kubelet_of_1_35_or_later_an_image_the_node_holds_is_asked_of_its_registry() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node-reverify/pushed", "v1");
    let pushed = format!("{host}/node-reverify/pushed:v1");
    // Held by the node, gone from the registry (a tag deleted since, or an image loaded onto
    // the node).
    let gone = format!("{host}/node-reverify/gone:v1");
    let list = format!("{pushed},{gone}");
    let args = [
        "--plain-http",
        &host,
        "--if-not-present",
        &list,
        "--node",
        NODE,
    ];
    let held: &[&[&str]] = &[&[&pushed], &[&gone]];
    let asked = |version: &str, vars: &[(String, String)]| {
        let api = api_of_kubelet(version, held);
        let before = (
            manifest_requests(reg, "node-reverify/pushed"),
            manifest_requests(reg, "node-reverify/gone"),
        );
        let endpoint = Some((
            api.host(),
            api.port(),
            api.service_account_dir().to_path_buf(),
        ));
        let run = run_with_vars(endpoint, &args, vars);
        // A usage error asks nothing.
        if run.code != 2 {
            assert_one_node_request(&api);
        }
        let after = (
            manifest_requests(reg, "node-reverify/pushed"),
            manifest_requests(reg, "node-reverify/gone"),
        );
        let asked = (after.0 > before.0, after.1 > before.1);
        (run, asked)
    };

    // Kubelets before v1.35 (the gate off by default): held is proof, nothing is asked.
    for version in ["v1.34.4", "v1.31.0"] {
        let (run, asked) = asked(version, &[]);
        assert_eq!(run.code, 0, "{version}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(asked, (false, false), "{version}");
        for image in [&pushed, &gone] {
            let r = run.image(image);
            assert_eq!(r["reason"], "present_on_node", "{version}: {r:#}");
            assert_eq!(r["attempts"], 0, "{version}: {r:#}");
        }
        assert!(run.stderr.is_empty(), "{version}: {}", run.stderr);
    }

    // v1.35 and later, a distribution's suffix, or a version that cannot be read: asked.
    for version in ["v1.35.0", "v1.37.2", "v1.35.0-gke.123", "garbage"] {
        let (run, asked) = asked(version, &[]);
        assert_eq!(run.code, 0, "{version}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(asked, (true, true), "{version}");
        let ok = run.image(&pushed);
        assert_eq!(
            (ok["status"].as_str(), ok["reason"].as_str()),
            (Some("ok"), Some("found")),
            "{version}: {ok:#}"
        );
        assert_eq!(ok["present_on_node"], true, "{version}");
        assert!(
            ok["message"].as_str().unwrap().contains(&format!(
                "node {NODE} holds it, and its kubelet ({version}) re-verifies a pod's credentials before it uses its copy (Kubernetes 1.35+): the registry serves it to this pod's credentials"
            )),
            "{version}: {ok:#}"
        );
        let missing = run.image(&gone);
        assert_eq!(missing["status"], "not_found", "{version}: {missing:#}");
        assert_eq!(missing["fatal"], false, "{version}: {missing:#}");
        assert_eq!(
            missing["not_counted"], "held_by_node",
            "{version}: {missing:#}"
        );
        assert_eq!(missing["present_on_node"], true, "{version}");
        let message = missing["message"].as_str().unwrap();
        for words in [
            format!(
                "node {NODE} holds it and imagePullPolicy is IfNotPresent, but its kubelet ({version}) re-verifies credentials before a pod uses an image it holds (Kubernetes 1.35+, KubeletEnsureSecretPulledImages)"
            ),
            "which of these holds is in the kubelet's records only, which a pod cannot read"
                .to_string(),
        ] {
            assert!(message.contains(&words), "{version}: {message}");
        }
        assert_eq!(
            run.stderr.trim_end(),
            format!(
                "pullcheck: warning: {gone} not counted (held_by_node): not_found repository_missing"
            ),
            "{version}"
        );
    }

    // The flag, for clusters whose kubelets say otherwise: never-verify on v1.37.2 is the old
    // answer, verify on v1.34.4 (the gate turned on) asks.
    let var = |v: &str| {
        vec![(
            "PULLCHECK_IMAGE_PULL_CREDENTIALS_VERIFICATION".to_string(),
            v.to_string(),
        )]
    };
    for (version, value, want) in [
        ("v1.37.2", "never-verify", false),
        ("v1.37.2", "NeverVerify", false),
        ("v1.34.4", "verify", true),
        ("v1.34.4", "NeverVerifyPreloadedImages", true),
    ] {
        let (run, asked) = asked(version, &var(value));
        assert_eq!(
            run.code, 0,
            "{version} {value}: {}\n{}",
            run.stdout, run.stderr
        );
        assert_eq!(asked, (want, want), "{version} {value}");
        let reason = if want { "found" } else { "present_on_node" };
        assert_eq!(run.image(&pushed)["reason"], reason, "{version} {value}");
    }
    let (run, _) = asked("v1.37.2", &var("sometimes"));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--image-pull-credentials-verification"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_held_image_refused_to_the_pod_is_named_in_the_summary_and_termination_message() {
    let reg = plain_registry();
    let host = reg.host();
    let image = format!("{host}/node-reverify/summary:v1");
    let api = api_of_kubelet("v1.37.2", &[&[&image]]);
    let args = [
        "--plain-http",
        &host,
        "--if-not-present",
        &image,
        "--node",
        NODE,
    ];
    let (text, term) = run_text(&api, &args);
    assert_eq!(text.code, 0, "{}\n{}", text.stdout, text.stderr);
    let summary = "pullcheck: no image failed; 1 image not verified (on the node, its registry did not serve it to this pod; not counted: the node holds it, and only the kubelet's records say whether this pod may use it (Kubernetes 1.35+ re-verifies credentials))";
    assert_eq!(text.stdout.lines().last(), Some(summary), "{}", text.stdout);
    assert_eq!(term.lines().next(), Some(summary), "{term}");
    assert!(
        term.contains(
            "(not counted: the node holds it, and only the kubelet's records say whether this pod \
             may use it (Kubernetes 1.35+ re-verifies credentials); to prove it: the kubelet's own \
             pull, which the stuck-pod controller, pullcheck watch, reads)"
        ),
        "{term}"
    );
}

#[test]
fn on_a_kubelet_that_re_verifies_the_pods_own_credentials_decide_a_held_private_image() {
    let reg = token_registry();
    let host = reg.host();
    let repo = "private/node-reverify";
    reg.push_oci_manifest(repo, "v1");
    let image = format!("{host}/{repo}:v1");
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let config =
        crate::check::docker_config(dir.path(), "config.json", &host, ALICE, ALICE_PASSWORD);
    let config = config.to_str().unwrap();
    let base = [
        "--ca-file",
        ca.as_str(),
        "--if-not-present",
        &image,
        "--node",
        NODE,
    ];
    let new = api_of_kubelet("v1.37.2", &[&[&image]]);

    // A pod without the pull secret: the registry refuses it; the kubelet may still start
    // the node's copy (preloaded, or pulled anonymously), or pull and be refused: not counted.
    let run = run(Some(&new), &base);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "unauthorized", "{r:#}");
    assert_eq!(r["not_counted"], "held_by_node", "{r:#}");
    assert_eq!(r["fatal"], false);
    assert_eq!(r["present_on_node"], true);
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("is in the kubelet's records only"),
        "{r:#}"
    );

    // A pod with it: the registry serves it to the pod's credentials, which is the kubelet's
    // pull too.
    let run = self::run(
        Some(&new),
        &[&base[..], &["--docker-config", config]].concat(),
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(
        (r["status"].as_str(), r["reason"].as_str()),
        (Some("ok"), Some("found")),
        "{r:#}"
    );
    assert_ne!(r["auth"], "anonymous", "{r:#}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("the registry serves it to this pod's credentials"),
        "{r:#}"
    );
    assert!(run.stderr.is_empty(), "{}", run.stderr);

    // The same pod without the secret on a v1.34 kubelet: the node's copy is used for any pod,
    // and the registry is not asked (no token is even asked for).
    let before = reg.token_server().unwrap().requests_for(repo).len();
    let old = api_of_kubelet("v1.34.4", &[&[&image]]);
    let run = self::run(Some(&old), &base);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["reason"], "present_on_node");
    assert_eq!(reg.token_server().unwrap().requests_for(repo).len(), before);
}

#[test]
fn image_neither_on_the_node_nor_at_the_registry_fails() {
    let reg = plain_registry();
    let host = reg.host();
    let api = api_with(&[&["docker.io/library/other:1"]]);
    let image = format!("{host}/node-missing/app:v1");
    let run = run(
        Some(&api),
        &[
            "--plain-http",
            &host,
            "--if-not-present",
            &image,
            "--node",
            NODE,
        ],
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "not_found");
    assert_eq!(r["fatal"], true);
    assert_eq!(r["pull_policy"], "IfNotPresent");
    assert_eq!(r["present_on_node"], false);
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("does not hold it either"), "{message}");
    assert!(!reg.requests_for("node-missing/app").is_empty());

    // The same on a kubelet that re-verifies credentials: a miss the complete list proves
    // counts on every version.
    let api = api_of_kubelet("v1.37.2", &[&["docker.io/library/other:1"]]);
    let run = self::run(
        Some(&api),
        &[
            "--plain-http",
            &host,
            "--if-not-present",
            &image,
            "--node",
            NODE,
        ],
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["present_on_node"], false);
}

#[test]
fn truncated_node_list_makes_a_missing_image_a_warning() {
    let reg = plain_registry();
    let host = reg.host();
    let mut node = kind_node(NODE, &[]);
    pad_images(&mut node, 50);
    let api = ApiServer::start(Mode::Serve);
    api.add_node(&node);
    let image = format!("{host}/node-truncated/app:v1");
    let run = run(
        Some(&api),
        &[
            "--plain-http",
            &host,
            "--if-not-present",
            &image,
            "--node",
            NODE,
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "not_found");
    assert_eq!(r["reason"], "repository_missing");
    assert_eq!(r["fatal"], false);
    assert!(r["present_on_node"].is_null(), "{r:#}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("lists only its 50 largest images"),
        "{message}"
    );
    // The registry was asked: the list proves nothing.
    assert!(!reg.requests_for("node-truncated/app").is_empty());

    // With the kubelet's cap raised, the same list of 50 is complete: a failure.
    let run = self::run(
        Some(&api),
        &[
            "--plain-http",
            &host,
            "--if-not-present",
            &image,
            "--node",
            NODE,
            "--node-status-max-images",
            "-1",
        ],
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["present_on_node"], false);
}

#[test]
fn an_image_listed_with_five_names_makes_a_missing_image_a_warning() {
    // The kubelet lists at most 5 names of each image (MaxNamesPerImageInNodeStatus): an
    // image listed with 5 may be the one asked about under a sixth name.
    let reg = plain_registry();
    let host = reg.host();
    let image = format!("{host}/node-five-names/app:v1");
    let five: Vec<String> = (1..=5)
        .map(|i| format!("{host}/node-five-names/other:{i}"))
        .collect();
    let five: Vec<&str> = five.iter().map(String::as_str).collect();
    let args = [
        "--plain-http",
        &host,
        "--if-not-present",
        &image,
        "--node",
        NODE,
    ];
    let api = api_with(&[&five]);
    let run = self::run(Some(&api), &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "not_found", "{r:#}");
    assert_eq!(r["fatal"], false, "{r:#}");
    assert_eq!(r["not_counted"], "may_be_on_node", "{r:#}");
    assert!(r["present_on_node"].is_null(), "{r:#}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("lists at most 5 names of each image (the kubelet's limit)"),
        "{message}"
    );
    // With 4 names the list is complete: not on the node, not at the registry, a failure.
    let api = api_with(&[&five[..4]]);
    let run = self::run(Some(&api), &args);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["present_on_node"], false);
}

/// [`run`] with the text report and the termination message (its first line is the summary).
fn run_text(api: &ApiServer, args: &[&str]) -> (Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let term = dir.path().join("termination-log");
    let run = in_the_pod(pullcheck().check(&["--termination-log"]).arg(&term))
        .args(args)
        .env("PULLCHECK_TIMEOUT", "20s")
        .env_remove("PULLCHECK_OUTPUT")
        .env("KUBERNETES_SERVICE_HOST", api.host())
        .env("KUBERNETES_SERVICE_PORT", api.port())
        .env("PULLCHECK_SERVICE_ACCOUNT_DIR", api.service_account_dir())
        .run();
    (run, std::fs::read_to_string(&term).unwrap_or_default())
}

#[test]
fn a_truncated_node_list_is_named_as_the_cause_in_the_summary_json_and_termination_message() {
    let reg = plain_registry();
    let host = reg.host();
    let mut node = kind_node(NODE, &[]);
    pad_images(&mut node, 50);
    let api = ApiServer::start(Mode::Serve);
    api.add_node(&node);
    let image = format!("{host}/node-truncated/summary:v1");
    let args = [
        "--plain-http",
        &host,
        "--if-not-present",
        &image,
        "--node",
        NODE,
    ];
    let json = run(Some(&api), &args);
    assert_eq!(json.code, 0, "{}\n{}", json.stdout, json.stderr);
    let r = json.image(&image);
    assert_eq!(r["fatal"], false);
    assert_eq!(r["not_counted"], "may_be_on_node", "{r:#}");
    let (text, term) = run_text(&api, &args);
    assert_eq!(text.code, 0, "{}\n{}", text.stdout, text.stderr);
    let summary = "pullcheck: no image failed; 1 image not verified (not found at the registry; not counted: IfNotPresent, and nothing proves the node lacks it)";
    assert_eq!(text.stdout.lines().last(), Some(summary), "{}", text.stdout);
    assert_eq!(term.lines().next(), Some(summary), "{term}");
    assert!(
        term.contains(
            "(not counted: IfNotPresent, and nothing proves the node lacks it; to prove it: get \
             on nodes (examples/node-images-rbac.yaml), or the stuck-pod controller, pullcheck \
             watch)"
        ),
        "{term}"
    );
}

#[test]
fn always_image_on_the_node_is_still_checked_at_the_registry() {
    let reg = plain_registry();
    let host = reg.host();
    let image = format!("{host}/node-always/app:v1");
    let companion = format!("{host}/node-always/cache:v1");
    let api = api_with(&[&[&image], &[&companion]]);
    // Given without --if-not-present: Always, as the kubelet would pull it, node or not.
    let run = run(
        Some(&api),
        &[
            "--plain-http",
            &host,
            &image,
            "--if-not-present",
            &companion,
            "--node",
            NODE,
        ],
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "not_found");
    assert_eq!(r["fatal"], true);
    assert_eq!(r["pull_policy"], "Always");
    assert_eq!(r["present_on_node"], true);
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("imagePullPolicy Always makes the kubelet pull it"),
        "{message}"
    );
    assert!(!reg.requests_for("node-always/app").is_empty());
    assert_eq!(run.image(&companion)["reason"], "present_on_node");
    assert_one_node_request(&api);

    // With no IfNotPresent image the node is not even asked.
    let alone = ApiServer::start(Mode::Serve);
    let run = self::run(
        Some(&alone),
        &["--plain-http", &host, &image, "--node", NODE],
    );
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(run.image(&image)["present_on_node"].is_null());
    assert_eq!(alone.requests(), []);
}

#[test]
fn policies_default_as_the_api_server_does_latest_no_tag_and_digest() {
    let reg = plain_registry();
    let host = reg.host();
    let latest = format!("{host}/node-default/latest:latest");
    let no_tag = format!("{host}/node-default/notag");
    let digest = format!("{host}/node-default/digest@{DIGEST}");
    let tagged = format!("{host}/node-default/tagged:v1");
    let latest_digest = format!("{host}/node-default/pinned:latest@{DIGEST}");
    // The node holds every one of them; the registry none.
    let api = api_with(&[
        &[&latest],
        &[&format!("{host}/node-default/notag:latest")],
        &[&digest],
        &[&tagged],
        &[&format!("{host}/node-default/pinned@{DIGEST}")],
    ]);
    // As a pod spec gives them: no imagePullPolicy written.
    let images = [&latest, &no_tag, &digest, &tagged, &latest_digest];
    let to_check = pull_policy::to_check(
        images
            .iter()
            .map(|i| (i.to_string(), PullPolicy::resolve(i, None))),
    );
    assert_eq!(to_check.if_not_present, [digest.clone(), tagged.clone()]);
    let options = Options {
        timeout: Duration::from_secs(20),
        client: ClientOptions {
            plain_http: vec![host.clone()],
            ..Default::default()
        },
        if_not_present: to_check.if_not_present,
        node: NodeOptions {
            name: Some(NODE.to_string()),
            service_account_dir: api.service_account_dir().to_path_buf(),
            api_host: Some(api.host()),
            api_port: Some(api.port()),
            ..NodeOptions::default()
        },
        ..Default::default()
    };
    let report = block_on(pullcheck::check(&to_check.images, &options));
    let by_image = |image: &str| {
        report
            .images
            .iter()
            .find(|r| r.image == image)
            .unwrap_or_else(|| panic!("no result for {image}: {report:#?}"))
    };
    for (image, policy, status) in [
        (&latest, PullPolicy::Always, Status::NotFound),
        (&no_tag, PullPolicy::Always, Status::NotFound),
        (&latest_digest, PullPolicy::Always, Status::NotFound),
        (&digest, PullPolicy::IfNotPresent, Status::Ok),
        (&tagged, PullPolicy::IfNotPresent, Status::Ok),
    ] {
        let r = by_image(image);
        assert_eq!(
            (r.pull_policy, r.status),
            (policy, status),
            "{image}: {r:#?}"
        );
        assert_eq!(r.present_on_node, Some(true), "{image}");
    }
    assert_eq!(report.exit_code.code(), 3);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(reg.requests_for("node-default/digest"), []);
    assert_eq!(reg.requests_for("node-default/tagged"), []);
    assert!(!reg.requests_for("node-default/notag").is_empty());
}

#[test]
fn an_api_server_that_never_answers_costs_a_share_of_the_deadline_only() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node-hang/app", "v1");
    let image = format!("{host}/node-hang/app:v1");
    let api = ApiServer::start(Mode::Hang);
    api.add_node(&kind_node(NODE, &[&[&image]]));
    let started = std::time::Instant::now();
    let run = run(
        Some(&api),
        &[
            "--plain-http",
            &host,
            "--if-not-present",
            &image,
            "--node",
            NODE,
            "--timeout",
            "4s",
        ],
    );
    let wall = started.elapsed();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(wall < Duration::from_secs(5), "{wall:?}");
    assert_eq!(run.image(&image)["reason"], "found");
    assert!(
        run.stderr
            .contains("the API server did not answer within 2.0s"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn sigterm_while_the_node_is_looked_up_stops_at_once() {
    let reg = plain_registry();
    let host = reg.host();
    let image = format!("{host}/node-sigterm/app:v1");
    let api = ApiServer::start(Mode::Hang);
    let mut child = pullcheck()
        .arg("check")
        .args([
            "--secrets-dir",
            "/nonexistent",
            "--termination-log",
            "",
            "-o",
            "json",
        ])
        .args(["--timeout", "60s", "--plain-http", &host, "--node", NODE])
        .args(["--if-not-present", &image])
        .env("KUBERNETES_SERVICE_HOST", api.host())
        .env("KUBERNETES_SERVICE_PORT", api.port())
        .env("PULLCHECK_SERVICE_ACCOUNT_DIR", api.service_account_dir())
        .spawn();
    // The lookup is under way (its cap is 15 s of the 60 s) when the signal comes.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while api.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the node was never asked"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = std::time::Instant::now();
    signal::terminate(&child);
    // Did not stop within 5 s: a failure (and the process is killed).
    let status = signal::exit_within(&mut child, Duration::from_secs(5));
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "stopped after {:?}",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(6));
    let out = child.wait_with_output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["stopped"], "SIGTERM");
    assert_eq!(json["images"][0]["reason"], "stopped", "{json:#}");
    assert_eq!(reg.requests_for("node-sigterm/app"), []);
}

/// A way the lookup fails: its name, a run, and what stderr must say.
type Case<'a> = (&'static str, Box<dyn Fn() -> Run + 'a>, &'static str);

#[test]
fn without_the_node_list_the_registry_decides_and_stderr_says_why_once() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node-fallback/app", "v1");
    let present = format!("{host}/node-fallback/app:v1");
    let missing = format!("{host}/node-fallback/gone:v1");
    let list = format!("{present},{missing}");
    let args = [
        "--plain-http",
        &host,
        "--if-not-present",
        &list,
        "--node",
        NODE,
    ];

    let serving = api_with(&[&[&present], &[&missing]]);
    let unauthorized = ApiServer::start(Mode::Unauthorized);
    let forbidden = ApiServer::start(Mode::Forbidden);
    let too_large = ApiServer::start(Mode::Serve);
    let mut huge = kind_node(NODE, &[&[&missing]]);
    huge["metadata"]["annotations"]["padding"] = "x".repeat(5 << 20).into();
    too_large.add_node(&huge);
    // A port that was just free: nothing answers there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port().to_string()
    };
    let no_token = api_with(&[&[&missing]]);
    std::fs::remove_file(no_token.service_account_dir().join("token")).unwrap();
    let wrong_node = api_with(&[&[&missing]]);

    let cases: Vec<Case<'_>> = vec![
        (
            "401",
            Box::new(|| run(Some(&unauthorized), &args)),
            "refused the service-account token (401",
        ),
        (
            "403",
            Box::new(|| run(Some(&forbidden), &args)),
            "may not get node ci-control-plane (403 Forbidden)",
        ),
        (
            "unreachable",
            Box::new(|| {
                let dir = serving.service_account_dir().to_path_buf();
                run_against(Some(("127.0.0.1".into(), closed.clone(), dir)), &args)
            }),
            "cannot reach the API server at https://127.0.0.1:",
        ),
        (
            "not in a cluster",
            Box::new(|| run(None, &args)),
            "not running in a cluster",
        ),
        (
            "no token",
            Box::new(|| run(Some(&no_token), &args)),
            "no service-account token at",
        ),
        (
            "no --node",
            Box::new(|| run(Some(&serving), &args[..4])),
            "no node name (give --node NAME or PULLCHECK_NODE_NAME",
        ),
        (
            "another node",
            Box::new(|| run(Some(&wrong_node), &[&args[..5], &["other-node"]].concat())),
            "node other-node does not exist (404)",
        ),
        (
            "Node object too large",
            Box::new(|| run(Some(&too_large), &args)),
            "the Node object is larger than 4 MiB",
        ),
    ];
    for (name, run, why) in cases {
        let run = run();
        // The registry is asked, as without a node; its miss of the IfNotPresent image is
        // proof only with no node named (a run about the registry alone): where a node was
        // named and its list could not be read, the node may hold the image, so the miss is a
        // warning (`may_be_on_node`).
        let counted = name == "no --node";
        let want = if counted { 3 } else { 0 };
        assert_eq!(run.code, want, "{name}: {}\n{}", run.stdout, run.stderr);
        let ok = run.image(&present);
        assert_eq!(ok["status"], "ok", "{name}");
        assert_eq!(ok["reason"], "found", "{name}: {ok:#}");
        assert!(ok["present_on_node"].is_null(), "{name}");
        let gone = run.image(&missing);
        assert_eq!(
            (gone["status"].as_str(), gone["fatal"].as_bool()),
            (Some("not_found"), Some(counted)),
            "{name}"
        );
        if !counted {
            assert_eq!(gone["not_counted"], "may_be_on_node", "{name}: {gone:#}");
            assert!(
                gone["message"]
                    .as_str()
                    .unwrap()
                    .contains("examples/node-images-rbac.yaml"),
                "{name}: {gone:#}"
            );
        }
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("pullcheck: warning: node images not looked up: "))
            .collect();
        assert_eq!(lines.len(), 1, "{name}: {}", run.stderr);
        assert!(
            lines[0].contains(why)
                && lines[0].ends_with("; every image is checked at its registry"),
            "{name}: {}",
            lines[0]
        );
        let others = run.stderr.lines().count() - 1;
        assert_eq!(others, usize::from(!counted), "{name}: {}", run.stderr);
        if !counted {
            assert!(
                run.stderr.contains(&format!(
                    "pullcheck: warning: {missing} not counted (may_be_on_node): not_found"
                )),
                "{name}: {}",
                run.stderr
            );
        }
    }
    for api in [&unauthorized, &forbidden] {
        let requests = api.requests();
        assert_eq!(requests.len(), 1, "{requests:#?}");
        assert!(requests[0].bearer_ok);
    }
    assert_eq!(no_token.requests(), []);
}

#[test]
fn the_rbac_example_grants_get_on_nodes_and_validates() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/node-images-rbac.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let docs: Vec<serde_yaml_ng::Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["kind"], "ClusterRole");
    let rules = docs[0]["rules"].as_sequence().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["resources"][0], "nodes");
    assert_eq!(rules[0]["verbs"].as_sequence().unwrap().len(), 1);
    assert_eq!(rules[0]["verbs"][0], "get");
    assert_eq!(docs[1]["kind"], "ClusterRoleBinding");
    assert_eq!(docs[1]["roleRef"]["name"], docs[0]["metadata"]["name"]);
    assert_eq!(docs[1]["subjects"][0]["kind"], "ServiceAccount");

    let command =
        std::env::var("KUBERNETES_VALIDATE").unwrap_or_else(|_| "kubernetes-validate".to_string());
    let out = std::process::Command::new(&command)
        .args(["--strict", "-k", "1.31.0"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command} ({e}): install kubernetes-validate (PyPI) or set KUBERNETES_VALIDATE"));
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert_eq!(report.matches("passed for resource").count(), 2, "{report}");
}

/// Wall time and peak memory of one run with the node lookup, printed (not asserted beyond
/// generous bounds): `PULLCHECK_MEASURE_BIN=target/release/pullcheck cargo test --test it
/// node::measure -- --ignored --nocapture`. Needs `/usr/bin/time`.
#[test]
#[ignore = "a measurement, run by hand"]
fn measure_node_lookup_time_and_memory() {
    let bin = std::env::var("PULLCHECK_MEASURE_BIN")
        .unwrap_or_else(|_| crate::common::PULLCHECK_BIN.to_string());
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node-measure/app", "v1");
    let pulled = format!("{host}/node-measure/app:v1");
    let loaded = "docker.io/library/app:v1.0";
    let api = ApiServer::start(Mode::Serve);
    let mut full = kind_node("full", &[&[loaded]]);
    pad_images(&mut full, 50);
    full["metadata"]["name"] = "full".into();
    api.add_node(&full);
    // The largest Node accepted: 50 images and annotations up to just under 4 MiB.
    let mut large = full.clone();
    large["metadata"]["name"] = "large".into();
    let size = serde_json::to_vec(&large).unwrap().len();
    large["metadata"]["annotations"]["padding"] = "x".repeat((4 << 20) - size - 100).into();
    api.add_node(&large);
    let mut huge = full.clone();
    huge["metadata"]["name"] = "huge".into();
    huge["metadata"]["annotations"]["padding"] = "x".repeat(16 << 20).into();
    api.add_node(&huge);
    for (label, node, images) in [
        (
            "no node, 1 image at the registry",
            None,
            vec![pulled.as_str()],
        ),
        ("50-image node, 1 preloaded", Some("full"), vec![loaded]),
        (
            "50-image node, 1 preloaded + 1 at the registry",
            Some("full"),
            vec![loaded, pulled.as_str()],
        ),
        ("4 MiB node, 1 preloaded", Some("large"), vec![loaded]),
        (
            "16 MiB node (refused), 1 at the registry",
            Some("huge"),
            vec![pulled.as_str()],
        ),
    ] {
        let mut runs = Vec::new();
        for _ in 0..5 {
            let mut cmd = std::process::Command::new("/usr/bin/time");
            cmd.args([
                "-f",
                "%e %M",
                bin.as_str(),
                "check",
                "-q",
                "--termination-log",
                "",
            ])
            .args(["--secrets-dir", "/nonexistent", "--plain-http", &host])
            .env("KUBERNETES_SERVICE_HOST", api.host())
            .env("KUBERNETES_SERVICE_PORT", api.port())
            .env("PULLCHECK_SERVICE_ACCOUNT_DIR", api.service_account_dir())
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .env("NO_PROXY", "127.0.0.1");
            if let Some(node) = node {
                cmd.args(["--node", node, "--if-not-present", &images.join(",")]);
            } else {
                cmd.args(&images);
            }
            let started = std::time::Instant::now();
            let out = cmd.output().unwrap();
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().last().unwrap_or_default().to_string();
            let kib: f64 = last.split_once(' ').unwrap().1.parse().unwrap();
            assert!(kib < 24.0 * 1024.0, "{label}: {kib} KiB");
            runs.push((ms, kib / 1024.0));
        }
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (ms, _) = runs[runs.len() / 2];
        let peak = runs.iter().map(|r| r.1).fold(0.0, f64::max);
        println!("{label}: median {ms:.0} ms wall, peak RSS {peak:.1} MiB (5 runs)");
    }
}

/// The kind/CI pod of the tests below, for the registry at `host`.
fn ci_pod(host: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  restartPolicy: Never\n  \
         hostNetwork: true\n  initContainers:\n  - {{name: tool, image: 'tool:2', imagePullPolicy: IfNotPresent}}\n  \
         containers:\n  - {{name: app, image: 'app:v1.0'}}\n  \
         - {{name: side, image: '{host}/node/pod-always:v1', imagePullPolicy: Always}}\n  \
         - {{name: local, image: 'local:1', imagePullPolicy: Never}}\n"
    )
}

#[test]
fn inject_node_images_gives_the_init_container_what_check_pod_spec_reads() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node/pod-always", "v1");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pod.yaml");
    std::fs::write(&file, ci_pod(&host)).unwrap();
    let file = file.to_str().unwrap();
    let api = api_with(&[
        &["docker.io/library/app:v1.0"],
        &["docker.io/library/tool:2"],
    ]);
    let from_spec = run(
        Some(&api),
        &["--pod-spec", file, "--node", NODE, "--plain-http", &host],
    );
    assert_eq!(from_spec.code, 0, "{}", from_spec.stderr);

    let out = pullcheck()
        .args([
            "inject",
            "--node-images",
            "-f",
            file,
            "--image",
            "r.example/pullcheck:1",
        ])
        .args(["--", "--plain-http", &host])
        .env_remove("PULLCHECK_INJECT_NODE_IMAGES")
        .run();
    assert!(out.code == 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_yaml_ng::from_str(&out.stdout).unwrap();
    let init = &doc["spec"]["initContainers"][0];
    // The kubelet fills in the downward API: the node the pod was scheduled to.
    let vars: Vec<(String, String)> = init["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            match e["value"].as_str() {
                Some(v) => (name, v.to_string()),
                None => {
                    assert_eq!(e["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
                    (name, NODE.to_string())
                }
            }
        })
        .collect();
    let names: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "PULLCHECK_IMAGES",
            "PULLCHECK_ON_UNREACHABLE",
            "PULLCHECK_NETWORK",
            "PULLCHECK_IMAGES_IF_NOT_PRESENT",
            "PULLCHECK_CONTAINERS",
            "PULLCHECK_NODE_NAME"
        ]
    );
    let args: Vec<&str> = init["args"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|a| a.as_str().unwrap())
        .collect();
    let api2 = api_with(&[
        &["docker.io/library/app:v1.0"],
        &["docker.io/library/tool:2"],
    ]);
    let endpoint = Some((
        api2.host(),
        api2.port(),
        api2.service_account_dir().to_path_buf(),
    ));
    let from_env = run_with_vars(endpoint, &args, &vars);
    assert_eq!(from_env.code, from_spec.code, "{}", from_env.stderr);
    assert!(from_env.stderr.is_empty(), "{}", from_env.stderr);
    let verdicts = |r: &Run| {
        let mut v: Vec<String> = r.json()["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                format!(
                    "{} {} {} {} {}",
                    i["image"], i["status"], i["reason"], i["pull_policy"], i["present_on_node"]
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(verdicts(&from_env), verdicts(&from_spec));
    assert_one_node_request(&api2);
}

#[test]
fn check_pod_spec_looks_up_if_not_present_images_on_the_node() {
    // A kind/CI pod: a loaded image without a policy (IfNotPresent by default), one that says
    // IfNotPresent, one the registry holds and must be asked about (Always), one Never.
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node/pod-always", "v1");
    let api = api_with(&[
        &["docker.io/library/app:v1.0"],
        &["docker.io/library/tool:2"],
    ]);
    let pod = ci_pod(&host);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pod.yaml");
    std::fs::write(&file, pod).unwrap();
    let run = run(
        Some(&api),
        &[
            "--pod-spec",
            file.to_str().unwrap(),
            "--node",
            NODE,
            "--plain-http",
            &host,
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for image in ["app:v1.0", "tool:2"] {
        let r = run.image(image);
        assert_eq!(r["reason"], "present_on_node", "{r}");
        assert_eq!(r["pull_policy"], "IfNotPresent");
    }
    let always = run.image(&format!("{host}/node/pod-always:v1"));
    assert_eq!(always["status"], "ok");
    assert_eq!(always["pull_policy"], "Always");
    assert!(!run.stdout.contains("local:1"), "{}", run.stdout);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert_one_node_request(&api);
}

#[test]
fn inject_passes_the_credential_verification_flag_to_the_init_container() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("node/pod-always", "v1");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pod.yaml");
    std::fs::write(&file, ci_pod(&host)).unwrap();
    let file = file.to_str().unwrap();
    let inject = |value: &str| {
        pullcheck()
            .args(["inject", "-f", file, "--image", "r.example/pullcheck:1"])
            .args(["--", "--plain-http", &host])
            .args(["--image-pull-credentials-verification", value])
            .env_remove("PULLCHECK_INJECT_NO_NODE_IMAGES")
            .run()
    };
    // Checked by `check`'s own parser when inject runs, not in every pod.
    let refused = inject("sometimes");
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("the arguments after -- are for `pullcheck check`"),
        "{}",
        refused.stderr
    );
    let out = inject("never-verify");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_yaml_ng::from_str(&out.stdout).unwrap();
    let init = &doc["spec"]["initContainers"][0];
    let args: Vec<&str> = init["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.windows(2)
            .any(|w| w == ["--image-pull-credentials-verification", "never-verify"]),
        "{args:?}"
    );
    let vars: Vec<(String, String)> = init["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            (name, e["value"].as_str().unwrap_or(NODE).to_string())
        })
        .collect();
    // The init container's run on a v1.37.2 node holding the pod's IfNotPresent images: the
    // cluster's kubelets never verify (the flag), so holding them is proof, as before v1.35.
    let api = api_of_kubelet(
        "v1.37.2",
        &[
            &["docker.io/library/app:v1.0"],
            &["docker.io/library/tool:2"],
        ],
    );
    let endpoint = Some((
        api.host(),
        api.port(),
        api.service_account_dir().to_path_buf(),
    ));
    let run = run_with_vars(endpoint, &args[1..], &vars);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for image in ["app:v1.0", "tool:2"] {
        assert_eq!(run.image(image)["reason"], "present_on_node", "{image}");
    }
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}
