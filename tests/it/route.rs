//! The node's registry configuration, against the real runtimes: the same hosts directory given
//! to `ctr images pull --hosts-dir` (Debian's containerd, started here with its own root, state
//! and socket, the CRI plugin off), the same registries.conf given to `skopeo` and `buildah`
//! (containers/image), and real registries on loopback as mirrors and upstreams. Each case
//! compares pullcheck's verdict with the runtime's; the count is printed as
//! "runtime agreement: N of M".

use crate::check::{Run, check, docker_config};
use crate::common::{
    ALICE, ALICE_PASSWORD, Registry, RegistryOptions, plain_registry, tls_basic_registry,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A containerd daemon of our own: root, state and socket in a temp dir, CRI off; driven with
/// `ctr`, the oracle for what the runtime pulls.
pub(crate) struct Containerd {
    child: Child,
    dir: tempfile::TempDir,
}

impl Containerd {
    /// Starts one for `test`; `None` when containerd is not installed (after
    /// [`crate::common::cannot_run`]: a failure in CI).
    pub(crate) fn start(test: &str) -> Option<Containerd> {
        if Command::new("containerd")
            .arg("--version")
            .output()
            .is_err()
        {
            crate::common::cannot_run(
                test,
                "containerd is not installed (Debian packages containerd and its ctr)",
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let config = format!(
            r#"version = 2
root = "{d}/root"
state = "{d}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.opt"]
[grpc]
  address = "{d}/containerd.sock"
[ttrpc]
  address = "{d}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
"#
        );
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        let log = std::fs::File::create(dir.path().join("containerd.log")).unwrap();
        let child = Command::new("containerd")
            .arg("--config")
            .arg(dir.path().join("config.toml"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .ok()?;
        let c = Containerd { child, dir };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if c.ctr(&["version"]).status.success() {
                return Some(c);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "containerd did not start:\n{}",
            std::fs::read_to_string(c.dir.path().join("containerd.log")).unwrap_or_default()
        );
    }

    fn ctr(&self, args: &[&str]) -> std::process::Output {
        Command::new("ctr")
            .arg("--address")
            .arg(self.dir.path().join("containerd.sock"))
            .args(["--namespace", "pullcheck-test"])
            .args(args)
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `ctr images pull --hosts-dir DIR REF`: whether containerd could pull it, and its words.
    pub(crate) fn pull(&self, hosts_dir: &Path, reference: &str) -> (bool, String) {
        let dir = hosts_dir.display().to_string();
        let out = self.ctr(&[
            "images",
            "pull",
            "--snapshotter",
            "native",
            "--hosts-dir",
            &dir,
            reference,
        ]);
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.success(), text)
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// containers/image without the machine's own configuration: HOME in a temp dir.
fn containers_cmd(program: &str, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("HOME", home)
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("CONTAINERS_REGISTRIES_CONF")
        .stdin(Stdio::null());
    cmd
}

/// `skopeo --registries-conf FILE inspect --raw docker://REF`.
fn skopeo(conf: &Path, home: &Path, reference: &str, extra: &[&str]) -> (bool, String) {
    let out = containers_cmd("skopeo", home)
        .arg("--registries-conf")
        .arg(conf)
        .args(["inspect", "--raw"])
        .args(extra)
        .arg(format!("docker://{reference}"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `buildah pull` with its own storage: short names resolve as in CRI-O and Podman.
fn buildah_pull(conf: &Path, home: &Path, name: &str) -> (bool, String) {
    let root = home.join("storage");
    let out = containers_cmd("buildah", home)
        .arg("--registries-conf")
        .arg(conf)
        .args(["--storage-driver", "vfs", "--root"])
        .arg(&root)
        .arg("--runroot")
        .arg(home.join("run"))
        .args(["pull", "--quiet", name])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A loopback port with nothing listening: an upstream that cannot be reached.
fn dead_host() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("127.0.0.1:{port}")
}

fn write(path: &Path, text: &str) -> PathBuf {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// One comparison: pullcheck's verdict against the runtime's.
struct Tally {
    agree: usize,
    total: usize,
    lines: Vec<String>,
}

impl Tally {
    fn compare(&mut self, case: &str, runtime: &str, ours: &Run, theirs: (bool, String)) {
        let ours_ok = ours.code == 0;
        self.total += 1;
        let same = ours_ok == theirs.0;
        if same {
            self.agree += 1;
        }
        self.lines.push(format!(
            "{} {case}: pullcheck exit {} / {runtime} {}{}",
            if same { "agree   " } else { "DISAGREE" },
            ours.code,
            if theirs.0 { "pulled" } else { "failed" },
            if same {
                String::new()
            } else {
                format!(
                    "\n  pullcheck: {}{}\n  {runtime}: {}",
                    ours.stdout, ours.stderr, theirs.1
                )
            }
        ));
    }
}

fn only(run: &Run) -> Value {
    run.json()["images"][0].clone()
}

#[test]
fn routes_agree_with_containerd_and_containers_image() {
    let Some(containerd) = Containerd::start("routes_agree_with_containerd_and_containers_image")
    else {
        return;
    };
    let upstream = plain_registry();
    let mirror = Registry::start(RegistryOptions::plain());
    let dead = dead_host();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut tally = Tally {
        agree: 0,
        total: 0,
        lines: Vec::new(),
    };
    let u = upstream.host();
    let m = mirror.host();

    // 1. containerd: a mirror has the image, the upstream cannot be reached.
    mirror.push_oci_manifest("route/one", "v1");
    let hosts = tmp.path().join("hosts1");
    write(
        &hosts.join(&dead).join("hosts.toml"),
        &format!(
            "server = \"http://{dead}\"\n[host.\"http://{m}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    );
    let image = format!("{dead}/route/one:v1");
    let hosts_arg = hosts.display().to_string();
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "10s",
        "--hosts-dir",
        &hosts_arg,
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("http://{m}/v2"));
    assert_eq!(only(&run)["mirror_of"], dead);
    tally.compare(
        "mirror has it, upstream unreachable",
        "containerd",
        &run,
        containerd.pull(&hosts, &image),
    );

    // 2. containerd: the mirror lacks it, the upstream has it.
    upstream.push_oci_manifest("route/two", "v1");
    let hosts = tmp.path().join("hosts2");
    write(
        &hosts.join(&u).join("hosts.toml"),
        &format!(
            "server = \"http://{u}\"\n[host.\"http://{m}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    );
    let image = format!("{u}/route/two:v1");
    let hosts_arg = hosts.display().to_string();
    let run = check(&["-o", "json", "--hosts-dir", &hosts_arg, &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("http://{u}/v2"));
    assert!(only(&run).get("mirror_of").is_none(), "{}", run.stdout);
    assert!(
        !mirror.requests_for("route/two").is_empty(),
        "the mirror was asked first"
    );
    tally.compare(
        "mirror lacks it, upstream has it",
        "containerd",
        &run,
        containerd.pull(&hosts, &image),
    );

    // 3. containerd: nowhere has it.
    let image = format!("{u}/route/none:v1");
    let run = check(&["-o", "json", "--hosts-dir", &hosts_arg, &image]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let message = only(&run)["message"].as_str().unwrap().to_string();
    assert!(message.contains(&m) && message.contains(&u), "{message}");
    tally.compare(
        "nobody has it",
        "containerd",
        &run,
        containerd.pull(&hosts, &image),
    );

    // 4 and 5. containerd: override_path takes the URL's path as the API root.
    mirror.push_oci_manifest("route/override", "v1");
    for (name, url, want) in [
        ("override_path with /v2", format!("http://{m}/v2"), 0),
        ("override_path without /v2", format!("http://{m}"), 6),
    ] {
        let hosts = tmp.path().join(format!("hosts-{}", want));
        write(
            &hosts.join(&dead).join("hosts.toml"),
            &format!(
                "server = \"http://{dead}\"\n[host.\"{url}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n"
            ),
        );
        let image = format!("{dead}/route/override:v1");
        let hosts_arg = hosts.display().to_string();
        let run = check(&[
            "-o",
            "json",
            "--timeout",
            "5s",
            "--hosts-dir",
            &hosts_arg,
            &image,
        ]);
        assert_eq!(run.code, want, "{name}: {}{}", run.stdout, run.stderr);
        tally.compare(name, "containerd", &run, containerd.pull(&hosts, &image));
    }

    // 6. containerd: a digest goes to a pull-only mirror, a tag does not.
    let digest = mirror.push_oci_manifest("route/pullonly", "v1");
    let hosts = tmp.path().join("hosts-pull-only");
    write(
        &hosts.join(&dead).join("hosts.toml"),
        &format!(
            "server = \"http://{dead}\"\n[host.\"http://{m}\"]\n  capabilities = [\"pull\"]\n"
        ),
    );
    let hosts_arg = hosts.display().to_string();
    for (name, image, want) in [
        (
            "pull-only mirror, by digest",
            format!("{dead}/route/pullonly@{digest}"),
            0,
        ),
        (
            "pull-only mirror, by tag",
            format!("{dead}/route/pullonly:v1"),
            6,
        ),
    ] {
        let run = check(&[
            "-o",
            "json",
            "--timeout",
            "5s",
            "--hosts-dir",
            &hosts_arg,
            &image,
        ]);
        assert_eq!(run.code, want, "{name}: {}{}", run.stdout, run.stderr);
        tally.compare(name, "containerd", &run, containerd.pull(&hosts, &image));
    }

    // 8. containerd: `_default` serves a host without a directory of its own; its server left
    // unset is the registry itself.
    let hosts = tmp.path().join("hosts-default");
    write(
        &hosts.join("_default").join("hosts.toml"),
        &format!("[host.\"http://{m}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"),
    );
    let image = format!("{dead}/route/one:v1");
    let hosts_arg = hosts.display().to_string();
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "10s",
        "--hosts-dir",
        &hosts_arg,
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["mirror_of"], dead);
    tally.compare(
        "_default mirror for any host",
        "containerd",
        &run,
        containerd.pull(&hosts, &image),
    );

    // registries.conf: the same questions to containers/image (skopeo, buildah).
    let insecure = |host: &str| format!("[[registry]]\nlocation = \"{host}\"\ninsecure = true\n");

    // 9. a mirror has it, the location cannot be reached.
    let conf = write(
        &tmp.path().join("r1.conf"),
        &format!(
            "[[registry]]\nlocation = \"{dead}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{m}\"\ninsecure = true\n"
        ),
    );
    let conf_arg = conf.display().to_string();
    let image = format!("{dead}/route/one:v1");
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "10s",
        "--registries-conf",
        &conf_arg,
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["mirror_of"], dead);
    tally.compare(
        "mirror has it, location unreachable",
        "skopeo",
        &run,
        skopeo(&conf, &home, &image, &[]),
    );

    // 10. a remapped prefix.
    upstream.push_oci_manifest("route/new/app", "v1");
    let conf = write(
        &tmp.path().join("r2.conf"),
        &format!(
            "[[registry]]\nprefix = \"{dead}/route/old\"\nlocation = \"{u}/route/new\"\ninsecure = true\n"
        ),
    );
    let conf_arg = conf.display().to_string();
    let image = format!("{dead}/route/old/app:v1");
    let run = check(&["-o", "json", "--registries-conf", &conf_arg, &image]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("http://{u}/v2"));
    tally.compare(
        "remapped prefix",
        "skopeo",
        &run,
        skopeo(&conf, &home, &image, &[]),
    );

    // 11. a blocked prefix: refused without a request.
    upstream.push_oci_manifest("route/blocked", "v1");
    let conf = write(
        &tmp.path().join("r3.conf"),
        &format!(
            "{}[[registry]]\nprefix = \"{u}/route/blocked\"\nlocation = \"{u}/route/blocked\"\ninsecure = true\nblocked = true\n",
            insecure(&u)
        ),
    );
    let conf_arg = conf.display().to_string();
    let image = format!("{u}/route/blocked:v1");
    let before = upstream.requests_for("route/blocked").len();
    let run = check(&["-o", "json", "--registries-conf", &conf_arg, &image]);
    assert_eq!(run.code, 5, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["status"], "denied");
    assert_eq!(only(&run)["reason"], "blocked");
    assert_eq!(upstream.requests_for("route/blocked").len(), before);
    tally.compare(
        "blocked prefix",
        "skopeo",
        &run,
        skopeo(&conf, &home, &image, &[]),
    );

    // 12, 13. pull-from-mirror = digest-only: a tag skips the mirror, a digest uses it.
    let digest = mirror.push_oci_manifest("route/digestonly", "v1");
    let conf = write(
        &tmp.path().join("r4.conf"),
        &format!(
            "[[registry]]\nlocation = \"{dead}\"\ninsecure = true\n[[registry.mirror]]\nlocation = \"{m}\"\ninsecure = true\npull-from-mirror = \"digest-only\"\n"
        ),
    );
    let conf_arg = conf.display().to_string();
    for (name, image, want) in [
        (
            "digest-only mirror, by tag",
            format!("{dead}/route/digestonly:v1"),
            6,
        ),
        (
            "digest-only mirror, by digest",
            format!("{dead}/route/digestonly@{digest}"),
            0,
        ),
    ] {
        let run = check(&[
            "-o",
            "json",
            "--timeout",
            "5s",
            "--registries-conf",
            &conf_arg,
            &image,
        ]);
        assert_eq!(run.code, want, "{name}: {}{}", run.stdout, run.stderr);
        tally.compare(name, "skopeo", &run, skopeo(&conf, &home, &image, &[]));
    }

    // 14. short names: each unqualified-search registry in order, the first that has it.
    upstream.push_oci_manifest("routeshort", "v1");
    let conf = write(
        &tmp.path().join("r5.conf"),
        &format!(
            "unqualified-search-registries = [\"{m}\", \"{u}\"]\n{}{}",
            insecure(&m),
            insecure(&u)
        ),
    );
    let conf_arg = conf.display().to_string();
    let run = check(&[
        "-o",
        "json",
        "--registries-conf",
        &conf_arg,
        "routeshort:v1",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("http://{u}/v2"));
    assert!(!mirror.requests_for("routeshort").is_empty());
    tally.compare(
        "short name via unqualified-search-registries",
        "buildah",
        &run,
        buildah_pull(&conf, &home, "routeshort:v1"),
    );

    // 15. a pod credential never reaches a mirror on another host: the mirror (with Basic
    // auth, and the image) is asked anonymously, refuses, and the upstream answers.
    let secure_up = tls_basic_registry();
    let secure_mirror = Registry::start(RegistryOptions::tls_basic(ALICE, ALICE_PASSWORD));
    secure_up.push_oci_manifest("route/pinned", "v1");
    secure_mirror.push_oci_manifest("route/pinned", "v1");
    let su = secure_up.host();
    let sm = secure_mirror.host();
    let conf = write(
        &tmp.path().join("r6.conf"),
        &format!("[[registry]]\nlocation = \"{su}\"\n[[registry.mirror]]\nlocation = \"{sm}\"\n"),
    );
    let certs = tmp.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::copy(secure_up.ca_pem_path().unwrap(), certs.join("up.crt")).unwrap();
    std::fs::copy(
        secure_mirror.ca_pem_path().unwrap(),
        certs.join("mirror.crt"),
    )
    .unwrap();
    let docker = docker_config(tmp.path(), "pod.json", &su, ALICE, ALICE_PASSWORD);
    let conf_arg = conf.display().to_string();
    let image = format!("{su}/route/pinned:v1");
    let alice_seen = || authorized_manifest_requests(&secure_mirror, "route/pinned");
    let pushed_as_alice = alice_seen();
    let run = check(&[
        "-o",
        "json",
        "--registries-conf",
        &conf_arg,
        "--ca-file",
        &secure_up.ca_pem_path().unwrap().display().to_string(),
        "--ca-file",
        &secure_mirror.ca_pem_path().unwrap().display().to_string(),
        "--docker-config",
        &docker.display().to_string(),
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("https://{su}/v2"));
    let asked: Vec<_> = secure_mirror
        .requests_for("route/pinned")
        .into_iter()
        .filter(|r| r.method == "HEAD" || r.method == "GET")
        .collect();
    assert!(!asked.is_empty(), "the mirror was asked first");
    assert!(
        asked.iter().all(|r| r.status == 401),
        "the mirror must only ever see anonymous requests: {asked:?}"
    );
    assert_eq!(alice_seen(), pushed_as_alice, "{}", secure_mirror.logs());
    let cert_dir = certs.display().to_string();
    let creds = format!("{ALICE}:{ALICE_PASSWORD}");
    tally.compare(
        "pod credential pinned to its registry",
        "skopeo",
        &run,
        skopeo(
            &conf,
            &home,
            &image,
            &["--cert-dir", &cert_dir, "--creds", &creds],
        ),
    );
    // containers/image pins it too.
    assert_eq!(alice_seen(), pushed_as_alice, "{}", secure_mirror.logs());

    println!("{}", tally.lines.join("\n"));
    println!("runtime agreement: {} of {}", tally.agree, tally.total);
    assert_eq!(tally.agree, tally.total, "{}", tally.lines.join("\n"));
}

#[test]
fn conflicting_registries_conf_is_a_configuration_error_naming_file_and_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = write(
        &tmp.path().join("registries.conf"),
        "[[registry]]\nprefix = \"a.corp/x\"\nlocation = \"mirror.corp\"\n[[registry]]\nprefix = \"a.corp/y\"\nlocation = \"mirror.corp\"\ninsecure = true\n",
    );
    let run = check(&[
        "--registries-conf",
        &conf.display().to_string(),
        "a.corp/x/app:1",
    ]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("registries.conf"), "{}", run.stderr);
    assert!(run.stderr.contains("mirror.corp"), "{}", run.stderr);
    assert!(run.stderr.contains("insecure"), "{}", run.stderr);
}

#[test]
fn on_unreachable_warn_is_named_as_the_cause_in_the_summary_not_allow_unauthenticated() {
    let image = format!("{}/route/warn-summary:v1", dead_host());
    let host = image.split('/').next().unwrap().to_string();
    let args = [
        "--timeout",
        "2s",
        "--plain-http",
        &host,
        "--on-unreachable",
        "warn",
        &image,
    ];
    let text = check(&args);
    assert_eq!(text.code, 0, "{}{}", text.stdout, text.stderr);
    assert_eq!(
        text.stdout.lines().last(),
        Some(
            "pullcheck: no image failed; 1 image not verified (unreachable; not counted: --on-unreachable warn)"
        ),
        "{}",
        text.stdout
    );
    assert!(
        !text.stdout.contains("--allow-unauthenticated"),
        "{}",
        text.stdout
    );
    let mut json_args = vec!["-o", "json"];
    json_args.extend(args);
    let json = check(&json_args);
    assert_eq!(only(&json)["not_counted"], "on_unreachable_warn");
}

#[test]
fn on_unreachable_warn_reports_but_does_not_fail() {
    let image = format!("{}/route/warn:v1", dead_host());
    let host = image.split('/').next().unwrap().to_string();
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "3s",
        "--plain-http",
        &host,
        "--on-unreachable",
        "warn",
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["status"], "unreachable");
    assert_eq!(only(&run)["fatal"], false);
    let fail = check(&[
        "-o",
        "json",
        "--timeout",
        "3s",
        "--plain-http",
        &host,
        &image,
    ]);
    assert_eq!(fail.code, 6, "{}{}", fail.stdout, fail.stderr);
}

#[test]
fn flat_configmap_layout_with_a_port() {
    let upstream = plain_registry();
    upstream.push_oci_manifest("route/flat", "v1");
    let dead = dead_host();
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join(format!("{}.toml", dead.replace(':', "_"))),
        &format!(
            "server = \"http://{dead}\"\n[host.\"http://{}\"]\n",
            upstream.host()
        ),
    );
    let image = format!("{dead}/route/flat:v1");
    let run = check(&[
        "-o",
        "json",
        "--hosts-dir",
        &tmp.path().display().to_string(),
        &image,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["mirror_of"], dead);
}

/// Manifest requests to `repo` that `reg` (Basic auth: alice alone has a password) authorized,
/// from anything but the harness's own pushes: the registry logs no user name, but an
/// "authorized request" can only be alice's.
fn authorized_manifest_requests(reg: &Registry, repo: &str) -> usize {
    let uri = format!("http.request.uri=/v2/{repo}/manifests/");
    reg.logs()
        .lines()
        .filter(|l| l.contains("msg=\"authorized request\"") && l.contains(&uri))
        .filter(|l| !l.contains("useragent=pullcheck-test-harness"))
        .count()
}

/// containerd's CRI plugin offers the pod's credential to every host of a hosts.toml, mirrors
/// included (the kubelet's keyring gives it no server address): tests/cluster/mirror.rs sees it
/// on the real kubelet in the mirror's token log. pullcheck does the same, and trusts each
/// host's own CA. (containers/image resets it for a mirror: case 15 of
/// `routes_agree_with_containerd_and_containers_image`.)
#[test]
fn hosts_dir_offers_the_pods_credentials_to_every_host_and_trusts_each_hosts_own_ca() {
    let secure_up = tls_basic_registry();
    let secure_mirror = Registry::start(RegistryOptions::tls_basic(ALICE, ALICE_PASSWORD));
    secure_up.push_oci_manifest("route/hostspin", "v1");
    secure_mirror.push_oci_manifest("route/hostspin", "v1");
    let alice_seen = || authorized_manifest_requests(&secure_mirror, "route/hostspin");
    let pushed_as_alice = alice_seen();
    let (su, sm) = (secure_up.host(), secure_mirror.host());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("certs.d").join(&su);
    std::fs::create_dir_all(&dir).unwrap();
    // Relative `ca` paths are relative to the hosts.toml's directory, as in containerd.
    std::fs::copy(secure_up.ca_pem_path().unwrap(), dir.join("up.pem")).unwrap();
    std::fs::copy(secure_mirror.ca_pem_path().unwrap(), dir.join("mirror.pem")).unwrap();
    write(
        &dir.join("hosts.toml"),
        &format!(
            "server = \"https://{su}\"\nca = \"up.pem\"\n[host.\"https://{sm}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = [\"mirror.pem\"]\n"
        ),
    );
    let docker = docker_config(tmp.path(), "pod.json", &su, ALICE, ALICE_PASSWORD);
    let hosts_arg = tmp.path().join("certs.d").display().to_string();
    let docker_arg = docker.display().to_string();
    let check_image = |image: &str, extra: &[&str]| {
        let mut args = vec![
            "-o",
            "json",
            "--hosts-dir",
            &hosts_arg,
            "--docker-config",
            &docker_arg,
        ];
        args.extend_from_slice(extra);
        args.push(image);
        check(&args)
    };

    // The mirror, asked first with the upstream's credential, has the image.
    let run = check_image(&format!("{su}/route/hostspin:v1"), &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("https://{sm}/v2"));
    assert_eq!(only(&run)["mirror_of"], su);
    let asked: Vec<_> = secure_mirror
        .requests_for("route/hostspin")
        .into_iter()
        .filter(|r| r.method == "HEAD" || r.method == "GET")
        .collect();
    assert!(asked.iter().any(|r| r.status == 200), "{asked:?}");
    assert!(alice_seen() > pushed_as_alice, "{}", secure_mirror.logs());

    // Neither host has the tag, each asked with the credential: not found, not a refusal.
    let run = check_image(&format!("{su}/route/hostspin:missing"), &[]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["status"], "not_found");

    // With the upstream gone, the mirror still serves the pull with its credential.
    let dead = dead_host();
    let dir = tmp.path().join("certs.d").join(&dead);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(secure_mirror.ca_pem_path().unwrap(), dir.join("mirror.pem")).unwrap();
    write(
        &dir.join("hosts.toml"),
        &format!("server = \"https://{dead}\"\n[host.\"https://{sm}\"]\n  ca = \"mirror.pem\"\n"),
    );
    let docker = docker_config(tmp.path(), "pod2.json", &dead, ALICE, ALICE_PASSWORD);
    let docker_arg = docker.display().to_string();
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "3s",
        "--hosts-dir",
        &hosts_arg,
        "--docker-config",
        &docker_arg,
        &format!("{dead}/route/hostspin:v1"),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("https://{sm}/v2"));
}

/// The cost of one mirror hop: `bench/mirror-hop.sh` runs this with the release binary and
/// prints the ratios. Ignored in the normal run (it is a measurement, not a check).
#[test]
#[ignore = "a measurement: run by bench/mirror-hop.sh"]
fn mirror_hop_cost() {
    let upstream = Registry::start(RegistryOptions::plain());
    let mirror = Registry::start(RegistryOptions::plain());
    let (u, m) = (upstream.host(), mirror.host());
    const IMAGES: usize = 20;
    for i in 0..IMAGES {
        upstream.push_oci_manifest(&format!("hop/app{i}"), "v1");
        mirror.push_oci_manifest(&format!("hop/app{i}"), "v1");
    }
    upstream.push_oci_manifest("hop/onlyup", "v1");
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join(&u).join("hosts.toml"),
        &format!(
            "server = \"http://{u}\"\n[host.\"http://{m}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ),
    );
    let hosts = tmp.path().display().to_string();
    let runs: usize = std::env::var("PULLCHECK_HOP_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let median = |args: &[&str]| {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let run = check(args);
                assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
                t.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let one = format!("{u}/hop/app0:v1");
    let many: Vec<String> = (0..IMAGES).map(|i| format!("{u}/hop/app{i}:v1")).collect();
    let many_list = many.join(",");
    let only_up = format!("{u}/hop/onlyup:v1");
    let cases: [(&str, Vec<&str>, Vec<&str>); 3] = [
        (
            "1 image, the mirror has it",
            vec!["--plain-http", &u, &one],
            vec!["--hosts-dir", &hosts, &one],
        ),
        (
            "20 images, the mirror has them",
            vec!["--plain-http", &u, "--images", &many_list],
            vec!["--hosts-dir", &hosts, "--images", &many_list],
        ),
        (
            "1 image, the mirror lacks it (404, then the upstream)",
            vec!["--plain-http", &u, &only_up],
            vec!["--hosts-dir", &hosts, &only_up],
        ),
    ];
    println!("median of {runs} runs of the pullcheck binary, loopback registries");
    for (name, direct, via) in cases {
        let d = median(&direct);
        let v = median(&via);
        println!(
            "{name}: direct {:.1} ms, through the mirror {:.1} ms, ratio {:.2}",
            d.as_secs_f64() * 1000.0,
            v.as_secs_f64() * 1000.0,
            v.as_secs_f64() / d.as_secs_f64()
        );
    }
}

#[test]
fn a_short_names_search_registry_never_gets_docker_hub_credentials() {
    let search = Registry::start(RegistryOptions::tls_basic(ALICE, ALICE_PASSWORD));
    search.push_oci_manifest("routesearch", "v1");
    let alice_seen = || search.logs().matches("auth.user.name=alice").count();
    let pushed_as_alice = alice_seen();
    let tmp = tempfile::tempdir().unwrap();
    let conf = write(
        &tmp.path().join("registries.conf"),
        &format!("unqualified-search-registries = [\"{}\"]\n", search.host()),
    );
    // The pod's credential is for Docker Hub, where the short name would go without the
    // configuration: the search registry is another host.
    let docker = docker_config(
        tmp.path(),
        "pod.json",
        "https://index.docker.io/v1/",
        ALICE,
        ALICE_PASSWORD,
    );
    let run = check(&[
        "-o",
        "json",
        "--registries-conf",
        &conf.display().to_string(),
        "--ca-file",
        &search.ca_pem_path().unwrap().display().to_string(),
        "--docker-config",
        &docker.display().to_string(),
        "routesearch:v1",
    ]);
    assert_eq!(run.code, 5, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["status"], "unauthorized");
    assert_eq!(alice_seen(), pushed_as_alice, "{}", search.logs());
}

#[test]
fn loopback_registries_are_spoken_to_in_plain_http_as_containerd_does() {
    let Some(containerd) =
        Containerd::start("loopback_registries_are_spoken_to_in_plain_http_as_containerd_does")
    else {
        return;
    };
    let plain = plain_registry();
    plain.push_oci_manifest("route/loopback", "v1");
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("no-hosts");
    std::fs::create_dir_all(&empty).unwrap();
    let host = plain.host();
    let port = host.rsplit(':').next().unwrap();
    for image in [
        format!("{host}/route/loopback:v1"),
        format!("localhost:{port}/route/loopback:v1"),
    ] {
        // containerd, with no configuration for the host: plain HTTP.
        let (pulled, words) = containerd.pull(&empty, &image);
        assert!(pulled, "containerd: {image}: {words}");
        // pullcheck without --plain-http: the same.
        let run = check(&["-o", "json", "--timeout", "10s", &image]);
        assert_eq!(run.code, 0, "{image}: {}{}", run.stdout, run.stderr);
        assert_eq!(only(&run)["status"], "ok");
        assert_eq!(only(&run)["plain_http"], true, "{}", run.stdout);
        // And with the node's (empty) hosts directory.
        let dir = empty.display().to_string();
        let run = check(&["-o", "json", "--hosts-dir", &dir, &image]);
        assert_eq!(run.code, 0, "{image}: {}{}", run.stdout, run.stderr);
    }
    // A TLS registry on loopback is still asked over HTTPS, its certificate checked.
    let tls = crate::common::tls_basic_registry();
    let image = format!("{}/private/loopback-tls:v1", tls.host());
    let run = check(&[
        "-o",
        "json",
        "--timeout",
        "10s",
        "--on-unverifiable",
        "fail",
        &image,
    ]);
    assert_eq!(run.code, 8, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["reason"], "tls");
    assert!(only(&run).get("plain_http").is_none(), "{}", run.stdout);
}

/// A node's `/etc/containers`, laid out as CRI-O reads it: `registries.conf`, its drop-ins in
/// `registries.conf.d/`, per-host certificates in `certs.d/`, and the files that are none of
/// these (`storage.conf`, `containers.conf`, `policy.json`, and a `*.conf` beside
/// `registries.conf` that would block the registry if it were read). containers/image reads
/// the same layout from `$HOME/.config/containers` (the per-user registries.conf, its
/// `registries.conf.d` and `certs.d`, and nothing of the machine's `/etc/containers`), so
/// skopeo with HOME in a temp dir is the oracle.
struct NodeFolder {
    home: PathBuf,
    dir: PathBuf,
}

impl NodeFolder {
    /// A fresh folder under `root/name` with `registries` as its registries.conf.
    fn new(root: &Path, name: &str, registries: &str) -> NodeFolder {
        let home = root.join(name);
        let dir = home.join(".config/containers");
        write(&dir.join("registries.conf"), registries);
        write(&dir.join("storage.conf"), "[storage]\ndriver = \"vfs\"\n");
        write(&dir.join("containers.conf"), "[engine]\n");
        write(
            &dir.join("policy.json"),
            "{\"default\": [{\"type\": \"insecureAcceptAnything\"}]}\n",
        );
        NodeFolder { home, dir }
    }

    /// A drop-in, `registries.conf.d/NAME`.
    fn dropin(&self, name: &str, text: &str) -> &NodeFolder {
        write(&self.dir.join("registries.conf.d").join(name), text);
        self
    }

    /// A file of `certs.d/HOST/`.
    fn cert(&self, host: &str, name: &str, from: &Path) -> &NodeFolder {
        let dir = self.dir.join("certs.d").join(host);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(from, dir.join(name)).unwrap();
        self
    }

    /// A `*.conf` beside registries.conf (not in registries.conf.d): never a drop-in.
    fn sibling(&self, name: &str, text: &str) -> &NodeFolder {
        write(&self.dir.join(name), text);
        self
    }

    /// pullcheck with what `inject --registries-from-node` passes; when the folder has
    /// `registries.conf.d/`, also with the folder itself, which must give the same verdict.
    fn check(&self, image: &str) -> Run {
        let d = |p: &str| self.dir.join(p).display().to_string();
        let (conf, dropins, certs) = (d("registries.conf"), d("registries.conf.d"), d("certs.d"));
        // A certificate this pod lacks is a warning by default (exit 0): the verdict is
        // compared, so it fails here.
        let common = [
            "-o",
            "json",
            "--timeout",
            "10s",
            "--on-unverifiable",
            "fail",
        ];
        let mut args = common.to_vec();
        args.extend([
            "--registries-conf",
            &conf,
            "--registries-conf-dir",
            &dropins,
            "--certs-dir",
            &certs,
            image,
        ]);
        let run = check(&args);
        if self.dir.join("registries.conf.d").is_dir() {
            let folder = self.dir.display().to_string();
            let mut args = common.to_vec();
            args.extend(["--registries-conf", &folder, "--certs-dir", &certs, image]);
            let again = check(&args);
            assert_eq!(
                again.code, run.code,
                "the folder and the two flags disagree on {image}: {}{}",
                again.stdout, again.stderr
            );
        }
        run
    }

    /// `skopeo inspect --raw docker://IMAGE` with this folder as its per-user configuration.
    fn skopeo(&self, image: &str) -> (bool, String) {
        let out = containers_cmd("skopeo", &self.home)
            .args(["inspect", "--raw"])
            .arg(format!("docker://{image}"))
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[test]
fn a_nodes_containers_folder_agrees_with_containers_image() {
    if Command::new("skopeo").arg("--version").output().is_err() {
        crate::common::cannot_run(
            "a_nodes_containers_folder_agrees_with_containers_image",
            "skopeo is not installed (Debian package skopeo)",
        );
        return;
    }
    let plain = plain_registry();
    let tls = Registry::start(RegistryOptions {
        tls: true,
        basic_auth: None,
    });
    let mutual = Registry::start_mutual_tls();
    let dead = dead_host();
    let (p, t, mt) = (plain.host(), tls.host(), mutual.host());
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let mut tally = Tally {
        agree: 0,
        total: 0,
        lines: Vec::new(),
    };
    let insecure = |host: &str| format!("[[registry]]\nlocation = \"{host}\"\ninsecure = true\n");
    let ca = tls.ca_pem_path().unwrap();
    let mutual_ca = mutual.ca_pem_path().unwrap();

    // 1, 2. A mirror in a drop-in under registries.conf.d; a `*.conf` beside registries.conf
    // that would block the registry, and storage.conf, are not drop-ins.
    plain.push_oci_manifest("node/dropin", "v1");
    let image = format!("{dead}/node/dropin:v1");
    let mirrored = format!(
        "{}[[registry.mirror]]\nlocation = \"{p}\"\ninsecure = true\n",
        insecure(&dead)
    );
    let node = NodeFolder::new(root, "dropin", &insecure(&dead));
    node.dropin("50-mirror.conf", &mirrored).sibling(
        "99-block.conf",
        &format!("[[registry]]\nlocation = \"{dead}\"\nblocked = true\n"),
    );
    let run = node.check(&image);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("http://{p}/v2"));
    tally.compare(
        "mirror in a drop-in, siblings ignored",
        "skopeo",
        &run,
        node.skopeo(&image),
    );
    let node = NodeFolder::new(root, "no-dropin", &insecure(&dead));
    node.sibling("50-mirror.conf", &mirrored);
    let run = node.check(&image);
    assert_ne!(run.code, 0, "{}{}", run.stdout, run.stderr);
    tally.compare(
        "mirror beside registries.conf, not a drop-in",
        "skopeo",
        &run,
        node.skopeo(&image),
    );

    // 3, 4. A TLS registry whose CA is only in certs.d/<host:port>.
    tls.push_oci_manifest("node/tls", "v1");
    let image = format!("{t}/node/tls:v1");
    let node = NodeFolder::new(root, "tls-ca", "");
    node.cert(&t, "ca.crt", ca);
    let run = node.check(&image);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    tally.compare("CA only in certs.d", "skopeo", &run, node.skopeo(&image));
    let node = NodeFolder::new(root, "tls-other-host", "");
    node.cert(&dead, "ca.crt", ca).cert(&t, "ca.pem", ca);
    let run = node.check(&image);
    assert_eq!(run.code, 8, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["reason"], "tls");
    tally.compare(
        "CA for another host, or not named *.crt",
        "skopeo",
        &run,
        node.skopeo(&image),
    );

    // 5. The CA of a mirror, found by the mirror's host.
    let image = format!("{dead}/node/tls:v1");
    let node = NodeFolder::new(root, "tls-mirror", "");
    node.dropin(
        "10-mirror.conf",
        &format!(
            "{}[[registry.mirror]]\nlocation = \"{t}\"\n",
            insecure(&dead)
        ),
    )
    .cert(&t, "ca.crt", ca);
    let run = node.check(&image);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("https://{t}/v2"));
    tally.compare(
        "mirror's CA in certs.d",
        "skopeo",
        &run,
        node.skopeo(&image),
    );

    // 6, 7. A plain-HTTP registry marked insecure, and not; no registries.conf.d and no
    // certs.d.
    plain.push_oci_manifest("node/plain", "v1");
    let image = format!("{p}/node/plain:v1");
    let node = NodeFolder::new(root, "insecure", &insecure(&p));
    let run = node.check(&image);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["endpoint"], format!("http://{p}/v2"));
    tally.compare(
        "plain HTTP, insecure = true",
        "skopeo",
        &run,
        node.skopeo(&image),
    );
    // containerd asks a loopback registry in plain HTTP without being told; containers/image
    // does not, and neither does pullcheck with its configuration.
    let node = NodeFolder::new(root, "not-insecure", "");
    let run = node.check(&image);
    assert_eq!(run.code, 8, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["reason"], "plain_http", "{}", run.stdout);
    tally.compare(
        "plain HTTP, not insecure",
        "skopeo",
        &run,
        node.skopeo(&image),
    );

    // 8, 9, 10. A registry that asks for a client certificate: `X.cert` with `X.key`; without
    // them, or with the certificate alone, the handshake or the folder fails.
    mutual.push_oci_manifest("node/mutual", "v1");
    let image = format!("{mt}/node/mutual:v1");
    let node = NodeFolder::new(root, "client", "");
    node.cert(&mt, "ca.crt", mutual_ca)
        .cert(&mt, "client.cert", mutual.client_cert_path().unwrap())
        .cert(&mt, "client.key", mutual.client_key_path().unwrap());
    let run = node.check(&image);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    tally.compare(
        "client certificate in certs.d",
        "skopeo",
        &run,
        node.skopeo(&image),
    );
    let node = NodeFolder::new(root, "no-client", "");
    node.cert(&mt, "ca.crt", mutual_ca);
    let run = node.check(&image);
    assert_ne!(run.code, 0, "{}{}", run.stdout, run.stderr);
    tally.compare("no client certificate", "skopeo", &run, node.skopeo(&image));
    let node = NodeFolder::new(root, "client-without-key", "");
    node.cert(&mt, "ca.crt", mutual_ca).cert(
        &mt,
        "client.cert",
        mutual.client_cert_path().unwrap(),
    );
    let run = node.check(&image);
    assert_ne!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(only(&run)["reason"], "node_configuration", "{}", run.stdout);
    assert!(
        only(&run)["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing key client.key")),
        "{}",
        run.stdout
    );
    tally.compare(
        "client certificate without its key",
        "skopeo",
        &run,
        node.skopeo(&image),
    );

    println!("{}", tally.lines.join("\n"));
    println!("runtime agreement: {} of {}", tally.agree, tally.total);
    assert_eq!(tally.agree, tally.total, "{}", tally.lines.join("\n"));
}
