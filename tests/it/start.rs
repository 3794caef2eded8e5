//! The start check against the real registry: images pushed with configs whose `User`,
//! `Entrypoint` and `Cmd` vary, containers described through `PULLCHECK_CONTAINERS`, and the
//! requests the registry saw, counted.

use crate::check::Run;
use crate::common::proxy::{Canned, Fault, Proxy, Rule};
use crate::common::{
    ALICE, ALICE_PASSWORD, Registry, RunSettings, plain_registry, pullcheck, token_registry,
};
use pullcheck::container_start::{ContainerFacts, ContainerKind, SecurityFacts};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn sc(non_root: Option<bool>, user: Option<i64>) -> SecurityFacts {
    SecurityFacts {
        run_as_non_root: non_root,
        run_as_user: user,
    }
}

const NONE: SecurityFacts = SecurityFacts {
    run_as_non_root: None,
    run_as_user: None,
};

/// A container as the pod spec reader describes it: effective values from the pod's and the
/// container's security contexts.
fn container(
    name: &str,
    image: &str,
    kind: ContainerKind,
    (command, args): (bool, bool),
    pod: SecurityFacts,
    own: SecurityFacts,
) -> ContainerFacts {
    ContainerFacts::from_spec(name, image, Some(kind), command, args, &pod, &own)
}

/// An app container with neither command nor args and `runAsNonRoot: true` on the pod.
fn non_root(name: &str, image: &str, command: bool) -> ContainerFacts {
    container(
        name,
        image,
        ContainerKind::App,
        (command, false),
        sc(Some(true), None),
        NONE,
    )
}

/// `pullcheck check -o json` against the plain registry with these containers in
/// `PULLCHECK_CONTAINERS` (their images are checked too), and no other `PULLCHECK_*` setting.
fn run(containers: &[ContainerFacts], extra: &[&str]) -> Run {
    let host = plain_registry().host();
    run_env(&["--plain-http", &host], containers, extra)
}

fn run_env(base: &[&str], containers: &[ContainerFacts], extra: &[&str]) -> Run {
    run_raw(base, &ContainerFacts::to_env(containers), extra)
}

fn run_raw(base: &[&str], env: &str, extra: &[&str]) -> Run {
    run_with_env(base, env, extra, &[])
}

fn run_with_env(base: &[&str], env: &str, extra: &[&str], vars: &[(&str, &str)]) -> Run {
    pullcheck()
        .without_env_prefix("PULLCHECK_")
        .arg("check")
        .args(["-o", "json", "--termination-log", ""])
        .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
        .args(base)
        .args(extra)
        .env("PULLCHECK_CONTAINERS", env)
        .envs(vars.iter().copied())
        .env_remove("DOCKER_CONFIG")
        .run()
}

/// The start prediction of a container, by name, in an image's result.
fn start_of(image: &Value, name: &str) -> (String, String) {
    let c = image["containers"]
        .as_array()
        .unwrap_or_else(|| panic!("no containers: {image:#}"))
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}: {image:#}"));
    (
        c["start"].as_str().unwrap().to_string(),
        c["reason"].as_str().unwrap().to_string(),
    )
}

/// `(manifest GETs, blob GETs)` the registry served for `repo`.
fn gets(reg: &Registry, repo: &str) -> (usize, usize) {
    let requests = reg.requests_for(repo);
    let count = |part: &str| {
        requests
            .iter()
            .filter(|r| r.method == "GET" && r.path.contains(part))
            .count()
    };
    (count("/manifests/"), count("/blobs/"))
}

#[test]
fn runas_non_root_against_each_image_user_as_the_kubelet_decides() {
    let reg = plain_registry();
    let host = reg.host();
    // (config User, Docker schema 2 rather than OCI, start, reason)
    let cases: &[(&str, bool, &str, &str)] = &[
        ("", false, "wont_start", "runs_as_root"),
        ("0", false, "wont_start", "runs_as_root"),
        ("0:0", true, "wont_start", "runs_as_root"),
        ("root", false, "wont_start", "non_numeric_user"),
        ("nginx", true, "wont_start", "non_numeric_user"),
        ("1000", false, "ok", "image_config"),
        ("1000:1000", true, "ok", "image_config"),
    ];
    let mut containers = Vec::new();
    for (i, (user, docker, _, _)) in cases.iter().enumerate() {
        let repo = format!("start/user-{i}");
        reg.push_image_with_config(
            &repo,
            "v1",
            "linux/amd64",
            *docker,
            &RunSettings::user(user),
        );
        containers.push(non_root(
            &format!("c{i}"),
            &format!("{host}/{repo}:v1"),
            false,
        ));
    }
    let r = run(&containers, &[]);
    assert_eq!(r.code, 7, "{}\n{}", r.stdout, r.stderr);
    for (i, (user, _, start, reason)) in cases.iter().enumerate() {
        let image = r.image(&format!("{host}/start/user-{i}:v1"));
        let want_status = if *start == "ok" { "ok" } else { "wont_start" };
        assert_eq!(image["status"], want_status, "User {user:?}: {image:#}");
        assert_eq!(
            start_of(&image, &format!("c{i}")),
            (start.to_string(), reason.to_string()),
            "User {user:?}"
        );
        if *start == "wont_start" {
            assert_eq!(image["reason"], *reason);
            let message = image["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("container \"c{i}\"")),
                "{message}"
            );
            assert!(image["hint"].as_str().unwrap().contains("runAsUser: 1000"));
        }
        // A single manifest: one manifest GET and one blob GET, nothing more.
        assert_eq!(
            gets(reg, &format!("start/user-{i}")),
            (1, 1),
            "User {user:?}"
        );
    }
    let nginx = r.image(&format!("{host}/start/user-4:v1"));
    assert!(
        nginx["message"]
            .as_str()
            .unwrap()
            .contains("image has non-numeric user (nginx), cannot verify user is non-root"),
        "{nginx:#}"
    );
}

#[test]
fn behind_an_index_the_node_platform_entry_is_read() {
    let reg = plain_registry();
    let host = reg.host();
    let platforms = ["linux/amd64", "linux/arm64/v8"];
    reg.push_oci_index_with_config(
        "start/index-root",
        "v1",
        &platforms,
        &RunSettings::user("root"),
    );
    reg.push_oci_index_with_config(
        "start/index-uid",
        "v1",
        &platforms,
        &RunSettings::user("1000"),
    );
    let root = format!("{host}/start/index-root:v1");
    let uid = format!("{host}/start/index-uid:v1");
    let containers = [non_root("a", &root, true), non_root("b", &uid, true)];

    // The platform check read the index already: one more manifest GET (the entry), one blob.
    let r = run(&containers, &["--platform", "linux/arm64"]);
    assert_eq!(r.code, 7, "{}", r.stdout);
    let res = r.image(&root);
    assert_eq!(res["status"], "wont_start");
    assert_eq!(res["reason"], "non_numeric_user");
    assert!(res.get("platform_digest").is_some());
    assert_eq!(start_of(&r.image(&uid), "b").0, "ok");
    assert_eq!(gets(reg, "start/index-root"), (2, 1));
    assert_eq!(gets(reg, "start/index-uid"), (2, 1));

    // Without the platform check the start check reads the index itself: the same count.
    let r = run(
        &containers,
        &["--platform", "linux/amd64", "--platform-check", "off"],
    );
    assert_eq!(r.code, 7, "{}", r.stdout);
    assert_eq!(r.image(&root)["reason"], "non_numeric_user");
    assert_eq!(gets(reg, "start/index-root"), (4, 2));
}

#[test]
fn no_command_unless_the_spec_or_the_image_gives_one() {
    let reg = plain_registry();
    let host = reg.host();
    let settings = |entrypoint: Option<&[&str]>, cmd: Option<&[&str]>| RunSettings {
        user: None,
        entrypoint: entrypoint.map(|e| e.iter().map(|s| s.to_string()).collect()),
        cmd: cmd.map(|c| c.iter().map(|s| s.to_string()).collect()),
    };
    // (repo, Entrypoint, Cmd, the bare container's start)
    type List<'a> = Option<&'a [&'a str]>;
    let cases: &[(&str, List, List, &str)] = &[
        ("start/cmd-none", None, None, "wont_start"),
        (
            "start/cmd-empty-entrypoint",
            Some(&[""]),
            None,
            "wont_start",
        ),
        ("start/cmd-entrypoint", Some(&["/entry"]), None, "ok"),
        ("start/cmd-cmd", None, Some(&["/cmd"]), "ok"),
        ("start/cmd-both", Some(&["/entry"]), Some(&["x"]), "ok"),
    ];
    let mut containers = Vec::new();
    for (repo, entrypoint, cmd, _) in cases {
        reg.push_image_with_config(
            repo,
            "v1",
            "linux/amd64",
            false,
            &settings(*entrypoint, *cmd),
        );
        let image = format!("{host}/{repo}:v1");
        let bare = container(repo, &image, ContainerKind::App, (false, false), NONE, NONE);
        containers.push(bare);
    }
    let none = format!("{host}/start/cmd-none:v1");
    let app = ContainerKind::App;
    containers.push(container(
        "command-only",
        &none,
        app,
        (true, false),
        NONE,
        NONE,
    ));
    containers.push(container(
        "args-only",
        &none,
        app,
        (false, true),
        NONE,
        NONE,
    ));
    let r = run(&containers, &[]);
    assert_eq!(r.code, 7, "{}", r.stdout);
    for (repo, _, _, want) in cases {
        let image = r.image(&format!("{host}/{repo}:v1"));
        assert_eq!(start_of(&image, repo).0, *want, "{repo}: {image:#}");
    }
    let image = r.image(&none);
    assert_eq!(image["status"], "wont_start");
    assert_eq!(image["reason"], "no_command");
    assert_eq!(
        start_of(&image, "command-only"),
        ("ok".into(), "spec".into())
    );
    assert_eq!(start_of(&image, "args-only"), ("ok".into(), "spec".into()));
    let message = image["message"].as_str().unwrap();
    assert!(message.contains("no command specified"), "{message}");
    assert!(image["hint"].as_str().unwrap().contains("Add a command"));
    // Three containers, one image: one config read.
    assert_eq!(gets(reg, "start/cmd-none"), (1, 1));
}

#[test]
fn pod_and_container_security_contexts_over_init_sidecar_and_app_containers() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_image_with_config(
        "start/ctx-root",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user(""),
    );
    let image = format!("{host}/start/ctx-root:v1");
    let cmd = (true, false);
    let containers = [
        // runAsNonRoot from the pod, no runAsUser anywhere: the image's root user decides.
        container(
            "init-pod-nonroot",
            &image,
            ContainerKind::Init,
            cmd,
            sc(Some(true), None),
            NONE,
        ),
        // The container turns runAsNonRoot off: nothing to read.
        container(
            "sidecar-allows-root",
            &image,
            ContainerKind::Sidecar,
            cmd,
            sc(Some(true), None),
            sc(Some(false), None),
        ),
        // runAsUser 1000 from the pod: fine without the image.
        container(
            "app-pod-uid",
            &image,
            ContainerKind::App,
            cmd,
            sc(Some(true), Some(1000)),
            NONE,
        ),
        // The container's runAsUser 0 over the pod's 1000: refused without the image.
        container(
            "app-uid-zero",
            &image,
            ContainerKind::App,
            cmd,
            sc(Some(true), Some(1000)),
            sc(None, Some(0)),
        ),
        // runAsNonRoot on the container, runAsUser on the pod.
        container(
            "app-mixed",
            &image,
            ContainerKind::App,
            cmd,
            sc(None, Some(1001)),
            sc(Some(true), None),
        ),
    ];
    let r = run(&containers, &[]);
    assert_eq!(r.code, 7, "{}", r.stdout);
    let res = r.image(&image);
    assert_eq!(res["status"], "wont_start");
    // The first container that will not start gives the image's reason.
    assert_eq!(res["reason"], "runs_as_root");
    let want = [
        ("init-pod-nonroot", "wont_start", "runs_as_root"),
        ("sidecar-allows-root", "ok", "spec"),
        ("app-pod-uid", "ok", "spec"),
        ("app-uid-zero", "wont_start", "run_as_user_zero"),
        ("app-mixed", "ok", "spec"),
    ];
    for (name, start, reason) in want {
        assert_eq!(
            start_of(&res, name),
            (start.into(), reason.into()),
            "{name}"
        );
    }
    let message = res["message"].as_str().unwrap();
    for name in ["init-pod-nonroot", "app-uid-zero"] {
        assert!(message.contains(name), "{message}");
    }
    assert!(
        message.contains("runAsUser breaks non-root policy"),
        "{message}"
    );
    // One image, five containers: one config read.
    assert_eq!(gets(reg, "start/ctx-root"), (1, 1));
}

#[test]
fn no_config_is_read_when_no_spec_can_fail_and_none_with_start_check_off() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_image_with_config(
        "start/safe",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user(""),
    );
    reg.push_image_with_config(
        "start/uid0",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user(""),
    );
    reg.push_image_with_config(
        "start/off",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::default(),
    );
    let safe = format!("{host}/start/safe:v1");
    let uid0 = format!("{host}/start/uid0:v1");
    let off = format!("{host}/start/off:v1");
    let app = ContainerKind::App;
    let containers = [
        container("command", &safe, app, (true, false), NONE, NONE),
        container(
            "args-and-uid",
            &safe,
            app,
            (false, true),
            sc(Some(true), Some(1000)),
            NONE,
        ),
        container(
            "root-allowed",
            &safe,
            app,
            (true, false),
            sc(Some(false), None),
            NONE,
        ),
        container(
            "uid-zero",
            &uid0,
            app,
            (false, false),
            sc(Some(true), Some(0)),
            NONE,
        ),
    ];
    let r = run(&containers, &[]);
    assert_eq!(r.code, 7, "{}", r.stdout);
    assert_eq!(r.image(&safe)["status"], "ok");
    assert_eq!(r.image(&uid0)["reason"], "run_as_user_zero");
    // Only the HEAD: the specs settled every container.
    assert_eq!(gets(reg, "start/safe"), (0, 0));
    assert_eq!(gets(reg, "start/uid0"), (0, 0));
    assert!(
        reg.requests_for("start/safe")
            .iter()
            .any(|r| r.method == "HEAD")
    );

    let containers = [
        non_root("would-fail", &off, false),
        container(
            "uid-zero",
            &off,
            app,
            (true, false),
            sc(Some(true), Some(0)),
            NONE,
        ),
    ];
    let r = run(&containers, &["--start-check", "off"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let res = r.image(&off);
    assert_eq!(res["status"], "ok");
    for name in ["would-fail", "uid-zero"] {
        assert_eq!(
            start_of(&res, name),
            ("unknown".into(), "start_check_off".into())
        );
    }
    assert_eq!(gets(reg, "start/off"), (0, 0));
    // The same through the environment; `auto` (the default) predicts.
    let host = reg.host();
    let json = ContainerFacts::to_env(&containers);
    let base = ["--plain-http", host.as_str()];
    let r = run_with_env(&base, &json, &[], &[("PULLCHECK_START_CHECK", "off")]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(gets(reg, "start/off"), (0, 0));
    let r = run_with_env(&base, &json, &[], &[("PULLCHECK_START_CHECK", "auto")]);
    assert_eq!(r.code, 7, "{}", r.stdout);
    assert_eq!(gets(reg, "start/off"), (1, 1));
}

#[test]
fn a_pull_failure_comes_first_and_run_as_user_zero_is_still_reported() {
    let host = plain_registry().host();
    let missing = format!("{host}/start/missing:v1");
    let app = ContainerKind::App;
    let containers = [
        container(
            "uid-zero",
            &missing,
            app,
            (true, false),
            sc(Some(true), Some(0)),
            NONE,
        ),
        non_root("needs-config", &missing, false),
    ];
    let r = run(&containers, &[]);
    assert_eq!(r.code, 3, "{}", r.stdout);
    let res = r.image(&missing);
    assert_eq!(res["status"], "not_found");
    assert_eq!(
        start_of(&res, "uid-zero"),
        ("wont_start".into(), "run_as_user_zero".into())
    );
    assert_eq!(
        start_of(&res, "needs-config"),
        ("unknown".into(), "not_pulled".into())
    );
}

#[test]
fn a_windows_config_is_unknown() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_image_with_config(
        "start/windows",
        "v1",
        "windows/amd64",
        false,
        &RunSettings::user("ContainerUser"),
    );
    let image = format!("{host}/start/windows:v1");
    let r = run(
        &[non_root("win", &image, false)],
        &["--platform", "linux/amd64"],
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        start_of(&r.image(&image), "win"),
        ("unknown".into(), "not_linux".into())
    );
}

#[test]
fn the_config_is_read_with_the_probe_s_token() {
    let reg = token_registry();
    let host = reg.host();
    let repo = "private/start-token";
    reg.push_image_with_config(
        repo,
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user("nginx"),
    );
    let dir = tempfile::tempdir().unwrap();
    let config =
        crate::check::docker_config(dir.path(), "config.json", &host, ALICE, ALICE_PASSWORD);
    let ca = reg.ca_pem_path().unwrap().to_str().unwrap().to_string();
    let image = format!("{host}/{repo}:v1");
    let before = reg.token_server().unwrap().requests_for(repo).len();
    let r = run_env(
        &["--ca-file", &ca, "--docker-config", path(&config)],
        &[non_root("app", &image, true)],
        &[],
    );
    assert_eq!(r.code, 7, "{}\n{}", r.stdout, r.stderr);
    let res = r.image(&image);
    assert_eq!(res["reason"], "non_numeric_user");
    assert_ne!(res["auth"], "anonymous");
    assert_eq!(gets(reg, repo), (1, 1));
    // The HEAD's token served the manifest and the blob GETs.
    let after = reg.token_server().unwrap().requests_for(repo).len();
    assert_eq!(after - before, 1);
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn malformed_containers_are_a_usage_error() {
    let host = plain_registry().host();
    let base = ["--plain-http", host.as_str()];
    let too_big = format!("[{}]", " ".repeat(100 * 1024));
    let cases: &[(&str, &str, &str)] = &[
        ("not JSON", "{oops", "not a valid JSON list"),
        (
            "no name",
            r#"[{"image":"x","command":true,"args":false}]"#,
            "name",
        ),
        ("too large", &too_big, "KiB"),
    ];
    for (name, env, want) in cases {
        let r = run_raw(&base, env, &[]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{name}: {}", r.stdout);
        assert!(
            r.stderr.contains("PULLCHECK_CONTAINERS"),
            "{name}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(want), "{name}: {}", r.stderr);
    }
}

#[test]
fn plain_image_lists_have_no_containers() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_image_with_config(
        "start/plain",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::default(),
    );
    let image = format!("{host}/start/plain:v1");
    let r = run_raw(&["--plain-http", &host], "[]", &[&image]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.image(&image).get("containers").is_none());
    assert_eq!(gets(reg, "start/plain"), (0, 0));
}

#[test]
fn config_reads_are_bounded_in_time_and_size_and_never_fail_the_image() {
    let reg = plain_registry();
    reg.push_image_with_config(
        "start/faults",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user(""),
    );
    // (fault on the blob GET, what the message says)
    let cases: Vec<(&str, Fault, &str)> = vec![
        (
            "stalled",
            Fault::Stall,
            "the deadline passed waiting for GET",
        ),
        (
            "larger than 1 MiB",
            Fault::respond(Canned::new(200).body(vec![b' '; 2 * 1024 * 1024])),
            "larger than 1024 KiB",
        ),
        ("missing", Fault::status(404), "answered 404"),
        (
            "not a config",
            Fault::respond(Canned::new(200).body(&b"{\"config\": 7}"[..])),
            "not an image config",
        ),
    ];
    for (name, fault, want) in cases {
        let proxy = Proxy::start(&reg.host());
        proxy.rule(Rule::contains("/blobs/", fault));
        let image = format!("{}/start/faults:v1", proxy.host());
        let host = proxy.host();
        let started = Instant::now();
        let r = run_env(
            &["--plain-http", &host, "--timeout", "3s"],
            &[non_root("app", &image, true)],
            &[],
        );
        let took = started.elapsed();
        assert_eq!(r.code, 0, "{name}: {}", r.stdout);
        assert!(took < Duration::from_secs(4), "{name}: took {took:?}");
        let res = r.image(&image);
        assert_eq!(res["status"], "ok", "{name}");
        assert_eq!(
            start_of(&res, "app"),
            ("unknown".into(), "config_not_read".into()),
            "{name}"
        );
        let message = res["containers"][0]["message"].as_str().unwrap();
        assert!(message.contains(want), "{name}: {message}");
        assert_eq!(proxy.requests_matching("/blobs/").len(), 1, "{name}");
    }
}

#[test]
fn text_report_and_termination_message_name_the_container_and_the_fix() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_image_with_config(
        "start/text",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::default(),
    );
    let image = format!("{host}/start/text:v1");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let out = pullcheck()
        .without_env_prefix("PULLCHECK_")
        .args(["check", "--plain-http", &host])
        .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
        .arg("--termination-log")
        .arg(&log)
        .env(
            "PULLCHECK_CONTAINERS",
            ContainerFacts::to_env(&[non_root("trainer", &image, false)]),
        )
        .env_remove("DOCKER_CONFIG")
        .run();
    assert_eq!(out.code, 7);
    let text = out.stdout;
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("wont_start "), "{text}");
    assert!(first.contains("container \"trainer\""), "{text}");
    assert!(first.contains("Hint: Set runAsUser: 1000"), "{text}");
    assert_eq!(
        text.lines().last().unwrap(),
        "pullcheck: the 1 image can be pulled, but a container using it will not start"
    );
    let message = std::fs::read_to_string(&log).unwrap();
    assert!(
        message.starts_with("pullcheck: the 1 image can be pulled, but"),
        "{message}"
    );
    assert!(
        message.contains(&format!("\n{image}: runs_as_root (container \"trainer\")")),
        "{message}"
    );
    assert!(message.contains("\"trainer\""), "{message}");
}

/// What `auto` costs over `off`: wall time and requests for 10 images whose containers all need
/// the config (run with `cargo test --test it start::measure -- --ignored --nocapture`).
#[test]
#[ignore = "a measurement, not a test"]
fn measure_start_check_cost() {
    let reg = plain_registry();
    let host = reg.host();
    let mut containers = Vec::new();
    for i in 0..10 {
        let repo = format!("start/measure-{i}");
        reg.push_image_with_config(
            &repo,
            "v1",
            "linux/amd64",
            false,
            &RunSettings::user("1000"),
        );
        containers.push(non_root(
            &format!("c{i}"),
            &format!("{host}/{repo}:v1"),
            false,
        ));
    }
    let json = ContainerFacts::to_env(&containers);
    let base = ["--plain-http", host.as_str()];
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (mut auto, mut off) = (Vec::new(), Vec::new());
    let requests = |reg: &Registry| {
        reg.requests()
            .iter()
            .filter(|r| r.path.contains("/start/measure-"))
            .count()
    };
    for _ in 0..15 {
        for (mode, times) in [("auto", &mut auto), ("off", &mut off)] {
            let started = Instant::now();
            let r = run_with_env(&base, &json, &[], &[("PULLCHECK_START_CHECK", mode)]);
            times.push(started.elapsed());
            assert_eq!(r.code, 0, "{}", r.stdout);
        }
    }
    let before = requests(reg);
    let r = run_with_env(&base, &json, &[], &[("PULLCHECK_START_CHECK", "auto")]);
    let with_auto = requests(reg) - before;
    for image in r.json()["images"].as_array().unwrap() {
        assert_eq!(
            image["containers"][0]["reason"], "image_config",
            "{image:#}"
        );
    }
    let before = requests(reg);
    run_with_env(&base, &json, &[], &[("PULLCHECK_START_CHECK", "off")]);
    let with_off = requests(reg) - before;
    println!(
        "10 images, 15 runs each: auto median {:?} ({with_auto} requests), off median {:?} ({with_off} requests)",
        median(auto),
        median(off)
    );
}

/// `pullcheck ARGS` (a subcommand and its arguments) with no `PULLCHECK_*` setting from the
/// environment but `vars`.
fn pullcheck_with(args: &[&str], vars: &[(String, String)]) -> Run {
    pullcheck()
        .without_env_prefix("PULLCHECK_")
        .args(args)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .env_remove("DOCKER_CONFIG")
        .run()
}

/// Each image's verdict and its containers' predictions, by image.
fn verdicts(r: &Run) -> std::collections::BTreeMap<String, (Value, Value, Value)> {
    r.json()["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["image"].as_str().unwrap().to_string(),
                (
                    i["status"].clone(),
                    i["reason"].clone(),
                    i["containers"].clone(),
                ),
            )
        })
        .collect()
}

/// A pod whose init container sets `runAsUser: 0`, whose app runs an image without a user
/// under the pod's `runAsNonRoot: true`, and one with neither a command nor a `Cmd`.
fn wire_pod(host: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  restartPolicy: Never\n  \
         securityContext: {{runAsNonRoot: true}}\n  initContainers:\n  \
         - {{name: setup, image: '{host}/start/wire-user:v1', imagePullPolicy: Always, securityContext: {{runAsUser: 0}}}}\n  \
         containers:\n  - {{name: app, image: '{host}/start/wire-root:v1', imagePullPolicy: Always}}\n  \
         - {{name: bare, image: '{host}/start/wire-bare:v1', imagePullPolicy: Always}}\n  \
         - {{name: fine, image: '{host}/start/wire-user:v1', imagePullPolicy: Always, args: [x]}}\n  \
         - {{name: local, image: '{host}/start/wire-absent:v1', imagePullPolicy: Never}}\n  volumes:\n  \
         - {{name: model, image: {{reference: '{host}/start/wire-root:v1', pullPolicy: Always}}}}\n"
    )
}

fn push_wire_images(reg: &Registry) {
    reg.push_image_with_config(
        "start/wire-root",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user(""),
    );
    reg.push_image_with_config(
        "start/wire-user",
        "v1",
        "linux/amd64",
        false,
        &RunSettings::user("1000"),
    );
    let bare = RunSettings {
        user: Some("1000".into()),
        ..RunSettings::default()
    };
    reg.push_image_with_config("start/wire-bare", "v1", "linux/amd64", false, &bare);
}

#[test]
fn check_pod_spec_predicts_containers_that_will_not_start() {
    let reg = plain_registry();
    let host = reg.host();
    push_wire_images(reg);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pod.yaml");
    std::fs::write(&file, wire_pod(&host)).unwrap();
    let r = pullcheck_with(
        &[
            "check",
            "-o",
            "json",
            "--termination-log",
            "",
            "--secrets-dir",
            "/nonexistent/pullcheck-secrets",
            "--plain-http",
            &host,
            "--pod-spec",
            path(&file),
        ],
        &[],
    );
    assert_eq!(r.code, 7, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    let root = r.image(&format!("{host}/start/wire-root:v1"));
    assert_eq!(root["status"], "wont_start");
    assert_eq!(root["reason"], "runs_as_root");
    // The image volume runs nothing: one container uses the image.
    assert_eq!(root["containers"].as_array().unwrap().len(), 1, "{root:#}");
    assert_eq!(
        start_of(&root, "app"),
        ("wont_start".into(), "runs_as_root".into())
    );
    let user = r.image(&format!("{host}/start/wire-user:v1"));
    assert_eq!(
        start_of(&user, "setup"),
        ("wont_start".into(), "run_as_user_zero".into())
    );
    assert_eq!(start_of(&user, "fine").0, "ok");
    let bare = r.image(&format!("{host}/start/wire-bare:v1"));
    assert_eq!(
        start_of(&bare, "bare"),
        ("wont_start".into(), "no_command".into())
    );
    // The Never container's image is neither checked nor asked for.
    assert!(!r.stdout.contains("wire-absent"), "{}", r.stdout);
    assert!(reg.requests_for("start/wire-absent").is_empty());
}

#[test]
fn the_injected_init_container_predicts_what_check_pod_spec_predicts() {
    let reg = plain_registry();
    let host = reg.host();
    push_wire_images(reg);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pod.yaml");
    // hostNetwork: the registry is on loopback, which only a pod of the node's network shares
    // (inject then writes PULLCHECK_NETWORK=host, and the init container asks it).
    let pod = wire_pod(&host).replacen(
        "spec:\n  restartPolicy: Never\n",
        "spec:\n  restartPolicy: Never\n  hostNetwork: true\n",
        1,
    );
    std::fs::write(&file, pod).unwrap();
    let common = [
        "-o",
        "json",
        "--termination-log",
        "",
        "--secrets-dir",
        "/nonexistent/pullcheck-secrets",
    ];
    let mut args = vec!["check"];
    args.extend(common);
    args.extend(["--plain-http", &host, "--pod-spec", path(&file)]);
    let from_spec = pullcheck_with(&args, &[]);
    assert_eq!(from_spec.code, 7, "{}", from_spec.stderr);

    let injected = pullcheck_with(
        &[
            "inject",
            "-f",
            path(&file),
            "--image",
            "registry.example.com/pullcheck:1",
            "--",
            "--plain-http",
            &host,
        ],
        &[],
    );
    assert_eq!(injected.code, 0, "{}", injected.stderr);
    let doc: Value = serde_yaml_ng::from_str(&injected.stdout).unwrap();
    let init = &doc["spec"]["initContainers"][0];
    assert_eq!(init["name"], "pullcheck");
    // The init container's own arguments and environment, run here in its place.
    let mut args: Vec<String> = init["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(args[0], "check");
    args.splice(1..1, common.iter().map(|a| a.to_string()));
    let vars: Vec<(String, String)> = init["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        vars.iter().any(|(k, _)| k == "PULLCHECK_CONTAINERS"),
        "{vars:?}"
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let from_env = pullcheck_with(&args, &vars);
    assert_eq!(from_env.code, from_spec.code, "{}", from_env.stderr);
    assert_eq!(verdicts(&from_env), verdicts(&from_spec));
}

#[test]
fn run_as_user_zero_is_exit_7_even_when_the_pull_verdict_is_not_counted() {
    // runAsNonRoot with runAsUser: 0 needs no image: the kubelet refuses the container
    // whatever the pull does, so a pull verdict that does not count must not hide it.
    let zero = |image: &str| {
        container(
            "root",
            image,
            ContainerKind::App,
            (true, false),
            sc(Some(true), Some(0)),
            NONE,
        )
    };
    // --allow-unauthenticated: the pull is not verified.
    let tls = crate::common::tls_basic_registry();
    let ca = tls.ca_pem_path().unwrap().to_str().unwrap().to_string();
    let image = format!("{}/private/zero:v1", tls.host());
    let host = tls.host();
    let run = run_env(
        &["--ca-file", &ca, "--allow-unauthenticated", &host],
        &[zero(&image)],
        &[],
    );
    assert_eq!(run.code, 7, "{}{}", run.stdout, run.stderr);
    let r = run.image(&image);
    assert_eq!(r["status"], "wont_start", "{r:#}");
    assert_eq!(r["reason"], "run_as_user_zero", "{r:#}");
    assert_eq!(r["fatal"], true, "{r:#}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("its pull was not verified (unauthorized no_credentials, not counted: --allow-unauthenticated)"),
        "{message}"
    );
    // --on-unreachable warn: the registry cannot be reached.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let image = format!("{dead}/team/zero:v1");
    let run = run_env(
        &[
            "--plain-http",
            &dead,
            "--on-unreachable",
            "warn",
            "--timeout",
            "2s",
        ],
        &[zero(&image)],
        &[],
    );
    assert_eq!(run.code, 7, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["reason"], "run_as_user_zero");
    // A container the spec alone does not refuse leaves the warning as it was.
    let run = run_env(
        &[
            "--plain-http",
            &dead,
            "--on-unreachable",
            "warn",
            "--timeout",
            "2s",
        ],
        &[non_root("ok", &image, true)],
        &[],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.image(&image)["not_counted"], "on_unreachable_warn");
}
