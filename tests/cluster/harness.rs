//! The cluster tests' harness: the real single-node Kubernetes of `tests/cluster/cluster.sh`,
//! started once per test binary (or found running), and the few verbs the tests need on it:
//! kubectl, a namespace per test, waits that poll to a generous bound and fail with the object's
//! state at that moment, and `pullcheck inject` on a manifest.
//!
//! Nothing here skips: a cluster that cannot start fails every test with the component and the
//! last lines of its log (cluster.sh prints them), and a machine without root or Go says which.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The running cluster, as `cluster.sh up` describes it in `$PULLCHECK_CLUSTER_DIR/env`.
pub struct Cluster {
    /// The state folder (`PULLCHECK_CLUSTER_DIR`).
    pub dir: PathBuf,
    /// `KUBECONFIG` of the cluster's admin (`system:masters`).
    pub kubeconfig: PathBuf,
    /// The multi-call Kubernetes binary (`kube kubectl …`).
    pub kube: PathBuf,
    /// The plain-HTTP registry on loopback that holds `pause:3.10`, `tools:1`,
    /// `pullcheck:ci` and `pullcheck:ci-webhook`.
    pub registry: String,
    /// The Node's name.
    pub node: String,
    /// The Node's address, on the cluster's own bridge: not loopback, reached from the pods'
    /// network and the host alike.
    pub node_ip: String,
    /// containerd's socket (on a containerd node).
    pub containerd: PathBuf,
    /// containerd's hosts directory (`config_path`): a test may add a host's `hosts.toml`.
    pub hosts_dir: PathBuf,
    /// The node's container runtime and its version, as `cluster.sh` names it
    /// (`PULLCHECK_CLUSTER_RUNTIME`): `containerd-2.4.2`, `containerd-2.4.2-local-pull` (the
    /// same containerd pulling on its local path), `containerd-1.6.20`, `cri-o-1.34.0`.
    pub runtime: String,
    /// The runtime's CRI endpoint (`unix://…`), as the kubelet is given it.
    pub cri: String,
    /// crictl, on a CRI-O node.
    pub crictl: Option<PathBuf>,
    /// On a CRI-O node, the folder CRI-O sees as `/etc/containers`: `registries.conf`,
    /// `registries.conf.d/` (read again when a file there changes), `certs.d/`.
    pub node_containers: PathBuf,
}

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs one of the build scripts that cache a binary built from Go modules (`build.sh`,
/// `build-helm.sh`: seconds once cached) and gives the path of `file` in the cache folder the
/// script prints on its last line.
pub fn built_by(script: &str, file: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("tests/cluster").join(script))
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run tests/cluster/{script}: {e}"));
    assert!(
        out.status.success(),
        "tests/cluster/{script}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = stdout
        .lines()
        .last()
        .unwrap_or_else(|| panic!("{script} prints its cache folder"));
    PathBuf::from(dir.trim()).join(file)
}

/// The cluster, brought up on first use (`cluster.sh up` is idempotent: a running cluster is
/// reused as it is).
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let dir = std::env::var_os("PULLCHECK_CLUSTER_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target/cluster"));
        let script = repo().join("tests/cluster/cluster.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg("up")
            .env("PULLCHECK_CLUSTER_DIR", &dir)
            .stdin(Stdio::null())
            .output()
            .expect("run tests/cluster/cluster.sh");
        assert!(
            out.status.success(),
            "the cluster did not come up ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let env = read_env(&dir.join("env"));
        let get = |k: &str| {
            env.get(k)
                .unwrap_or_else(|| panic!("{k} missing from {}/env", dir.display()))
                .clone()
        };
        Cluster {
            dir: get("PULLCHECK_CLUSTER_DIR").into(),
            kubeconfig: get("KUBECONFIG").into(),
            kube: get("PULLCHECK_CLUSTER_KUBE").into(),
            registry: get("PULLCHECK_CLUSTER_REGISTRY"),
            node: get("PULLCHECK_CLUSTER_NODE"),
            node_ip: get("PULLCHECK_CLUSTER_NODE_IP"),
            containerd: get("PULLCHECK_CLUSTER_CONTAINERD").into(),
            hosts_dir: get("PULLCHECK_CLUSTER_HOSTS_DIR").into(),
            runtime: get("PULLCHECK_CLUSTER_RUNTIME"),
            cri: get("PULLCHECK_CLUSTER_CRI"),
            crictl: Some(get("PULLCHECK_CLUSTER_CRICTL"))
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
            node_containers: get("PULLCHECK_CLUSTER_NODE_CONTAINERS").into(),
        }
    })
}

fn read_env(path: &Path) -> HashMap<String, String> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Cluster {
    /// `kubectl ARGS…` as the admin, its output whatever the status.
    pub fn kubectl_output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(&self.kube);
        cmd.arg("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig);
        match stdin {
            None => cmd.stdin(Stdio::null()).output().expect("run kubectl"),
            Some(input) => {
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
                crate::common::output_with_stdin(&mut cmd, input.as_bytes())
            }
        }
    }

    /// `kubectl ARGS…`, which must succeed; its standard output.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args, None);
        assert!(
            out.status.success(),
            "kubectl {}: {}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What every pullcheck server of the cluster (each release's watchers and webhooks) logged
    /// about namespace `ns`: a failed test's account of what they saw and did.
    pub fn pullcheck_said(&self, ns: &str) -> String {
        let pods = self.kubectl_output(
            &[
                "get",
                "pods",
                "-A",
                "-l",
                "app.kubernetes.io/name=pullcheck",
                "-o",
                "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}",
            ],
            None,
        );
        let mut said = format!("\npullcheck's servers on {ns}:\n");
        for pod in String::from_utf8_lossy(&pods.stdout).lines() {
            let Some((pod_ns, name)) = pod.split_once('/') else {
                continue;
            };
            let log = self.kubectl_output(
                &[
                    "logs",
                    "-n",
                    pod_ns,
                    name,
                    "--all-containers",
                    "--tail=5000",
                ],
                None,
            );
            let log = String::from_utf8_lossy(&log.stdout);
            let lines: Vec<&str> = log.lines().filter(|l| l.contains(ns)).collect();
            for line in &lines[lines.len().saturating_sub(40)..] {
                said.push_str(&format!("{pod}: {line}\n"));
            }
        }
        said
    }

    /// `kubectl apply -f -` of `yaml` in namespace `ns`; must succeed.
    pub fn apply(&self, ns: &str, yaml: &str) -> String {
        let out = self.kubectl_output(&["apply", "-n", ns, "-f", "-"], Some(yaml));
        assert!(
            out.status.success(),
            "kubectl apply: {}\n{}\n--- the manifest:\n{yaml}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The object `kind/name` in `ns` as JSON, or `None` when the API server has none.
    pub fn get(&self, ns: &str, what: &str) -> Option<serde_json::Value> {
        let out = self.kubectl_output(&["get", "-n", ns, what, "-o", "json"], None);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    /// The pods of Job `job` in `ns`, as JSON items.
    pub fn job_pods(&self, ns: &str, job: &str) -> Vec<serde_json::Value> {
        let selector = format!("batch.kubernetes.io/job-name={job}");
        let out = self.kubectl(&["get", "pods", "-n", ns, "-l", &selector, "-o", "json"]);
        let list: serde_json::Value = serde_json::from_str(&out).expect("pod list JSON");
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// A namespace of the test's own, deleted (without waiting) when the guard drops.
    pub fn namespace(&'static self, name: &str) -> Namespace {
        let _ = self.kubectl_output(&["delete", "namespace", name, "--wait=true"], None);
        self.kubectl(&["create", "namespace", name]);
        // Pods cannot be created until the namespace's default service account exists.
        wait_for(
            &format!("service account default in {name}"),
            minutes(2),
            || {
                self.get(name, "serviceaccount/default")
                    .map(|_| ())
                    .ok_or_else(|| "not yet created".to_string())
            },
        );
        Namespace {
            cluster: self,
            name: name.to_string(),
        }
    }

    /// Whether the node's runtime is CRI-O (else containerd).
    pub fn is_crio(&self) -> bool {
        self.runtime.starts_with("cri-o-")
    }

    /// Makes the node's runtime trust `ca` for the TLS registry `host`: containerd's
    /// `hosts.toml` (read at every pull, no restart needed), or CRI-O's
    /// `certs.d/HOST/ca.crt` (containers-certs.d(5), read at every pull too). The CA is copied
    /// beside `hosts.toml` and named relative to it, as containerd allows, so that the folder
    /// mounted into a pod (`inject --hosts-from-node`) holds what it names.
    pub fn trust_registry(&self, host: &str, ca: &Path) {
        if self.is_crio() {
            let dir = self.node_containers.join("certs.d").join(host);
            std::fs::create_dir_all(&dir).expect("certs.d");
            std::fs::copy(ca, dir.join("ca.crt")).expect("copy the CA into certs.d");
            return;
        }
        let dir = self.hosts_dir.join(host);
        std::fs::create_dir_all(&dir).expect("hosts dir");
        std::fs::copy(ca, dir.join("ca.crt")).expect("copy the CA beside hosts.toml");
        std::fs::write(
            dir.join("hosts.toml"),
            format!(
                "server = \"https://{host}\"\n\n[host.\"https://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"ca.crt\"\n"
            ),
        )
        .expect("write hosts.toml");
    }

    /// Makes the node's runtime speak plain HTTP to `host` (a test's fault proxy):
    /// containerd's `hosts.toml`, naming it as its `[host]` and its `server`, as containerd 1.6
    /// needs; or a CRI-O drop-in, `insecure = true` (HTTPS unverified, then plain HTTP), once
    /// CRI-O has read it again.
    pub fn plain_http_registry(&self, host: &str) {
        if self.is_crio() {
            let file = format!("{}.conf", host.replace([':', '/'], "_"));
            let text = format!("[[registry]]\nlocation = \"{host}\"\ninsecure = true\n");
            self.crio_drop_in(&file, &text);
            return;
        }
        let dir = self.hosts_dir.join(host);
        std::fs::create_dir_all(&dir).expect("hosts dir");
        std::fs::write(
            dir.join("hosts.toml"),
            format!(
                "server = \"http://{host}\"\n\n[host.\"http://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
            ),
        )
        .expect("write hosts.toml");
    }

    /// A fault proxy to the cluster's registry at the node's address on the bridge (not
    /// loopback: the pods' network reaches it, and the webhook's), which containerd speaks
    /// plain HTTP to ([`Cluster::plain_http_registry`]).
    pub fn bridge_proxy(&self) -> crate::common::proxy::Proxy {
        let node_ip: std::net::IpAddr = self.node_ip.parse().expect("the node's IP");
        let addr = std::net::SocketAddr::new(node_ip, 0);
        let proxy = crate::common::proxy::Proxy::start_on(addr, &self.registry);
        self.plain_http_registry(&proxy.host());
        proxy
    }

    /// Secret `name` of type `kubernetes.io/dockerconfigjson` in `ns`: `user`'s `password` for
    /// registry `server`, as `kubectl create secret docker-registry` writes it.
    pub fn pull_secret(&self, ns: &str, name: &str, server: &str, user: &str, password: &str) {
        self.kubectl(&[
            "create",
            "secret",
            "docker-registry",
            name,
            "-n",
            ns,
            &format!("--docker-server={server}"),
            &format!("--docker-username={user}"),
            &format!("--docker-password={password}"),
        ]);
    }

    /// Writes `registries.conf.d/NAME` on a CRI-O node and waits until CRI-O has read its
    /// registries again (it watches that folder, and logs each reload).
    pub fn crio_drop_in(&self, name: &str, text: &str) {
        let log = self.dir.join("logs/crio.log");
        let reloads = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .matches("reloading registries configuration")
                .count()
        };
        let before = reloads();
        let dir = self.node_containers.join("registries.conf.d");
        std::fs::write(dir.join(name), text).expect("write a registries.conf drop-in");
        wait_for("CRI-O to read its registries again", minutes(1), || {
            if reloads() > before {
                Ok(())
            } else {
                Err(format!("{} reloads logged", reloads()))
            }
        });
    }

    /// Pulls `image` (on the cluster's plain-HTTP registry) onto the node, as the kubelet would.
    pub fn pull_on_node(&self, image: &str) {
        match &self.crictl {
            Some(_) => {
                self.crictl(&["pull", image]);
            }
            None => {
                self.ctr(&["images", "pull", "--plain-http", image]);
            }
        }
    }

    /// Puts the image of the docker archive `archive` onto the node under `name`, as a
    /// preloaded image would be: `ctr images import`, or into CRI-O's containers-storage with
    /// skopeo (the store's own configuration, so the same driver and options).
    pub fn import_on_node(&self, archive: &Path, name: &str) {
        if !self.is_crio() {
            self.ctr(&["images", "import", archive.to_str().expect("a UTF-8 path")]);
            return;
        }
        let crio = self.dir.join("crio");
        let store = format!(
            "containers-storage:[overlay@{}+{}]{name}",
            crio.join("storage").display(),
            crio.join("run/storage").display()
        );
        let out = Command::new("skopeo")
            .env("CONTAINERS_STORAGE_CONF", crio.join("storage.conf"))
            .args(["copy", "-q"])
            .arg(format!("docker-archive:{}", archive.display()))
            .arg(&store)
            .stdin(Stdio::null())
            .output()
            .expect("run skopeo");
        assert!(
            out.status.success(),
            "skopeo copy into CRI-O's storage: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `crictl ARGS…` on the cluster's CRI-O.
    pub fn crictl(&self, args: &[&str]) -> String {
        let crictl = self.crictl.as_ref().expect("crictl: the node runs CRI-O");
        let out = Command::new(crictl)
            .args(["--runtime-endpoint", &self.cri])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run crictl");
        assert!(
            out.status.success(),
            "crictl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `ctr ARGS…` on the cluster's containerd, in the kubelet's `k8s.io` namespace.
    pub fn ctr(&self, args: &[&str]) -> String {
        let out = Command::new("ctr")
            .arg("--address")
            .arg(&self.containerd)
            .args(["-n", "k8s.io"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run ctr");
        assert!(
            out.status.success(),
            "ctr {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Copies the tools image into `repo` (`name:tag`) of `registry` (a TLS registry of the
    /// integration tests' harness, written to as alice); the image's reference there.
    pub fn copy_tools_into(&self, registry: &crate::common::Registry, repo: &str) -> String {
        self.copy_into(registry, &self.tools_image(), repo)
    }

    /// [`Cluster::copy_tools_into`] for `source`, an image of the cluster's registry.
    pub fn copy_into(
        &self,
        registry: &crate::common::Registry,
        source: &str,
        repo: &str,
    ) -> String {
        use crate::common::{ALICE, ALICE_PASSWORD};
        let certs = tempfile::tempdir().expect("tempdir");
        let ca = registry.ca_pem_path().expect("a TLS registry");
        std::fs::copy(ca, certs.path().join("ca.crt")).expect("copy CA");
        let dest = format!("{}/{repo}", registry.host());
        let out = Command::new("skopeo")
            .args(["copy", "-q", "--src-tls-verify=false", "--dest-cert-dir"])
            .arg(certs.path())
            .args(["--dest-creds", &format!("{ALICE}:{ALICE_PASSWORD}")])
            .arg(format!("docker://{source}"))
            .arg(format!("docker://{dest}"))
            .output()
            .expect("run skopeo");
        assert!(
            out.status.success(),
            "skopeo copy: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dest
    }

    /// pullcheck's own image, as CI builds it from the Dockerfile, in the cluster's registry.
    pub fn pullcheck_image(&self) -> String {
        format!("{}/pullcheck:ci", self.registry)
    }

    /// The webhook's image (`pullcheck` with the `webhook` feature), in the cluster's registry.
    pub fn webhook_image(&self) -> String {
        format!("{}/pullcheck:ci-webhook", self.registry)
    }

    /// A small image that runs (busybox): `sh`, `sleep`, `true`.
    pub fn tools_image(&self) -> String {
        format!("{}/tools:1", self.registry)
    }
}

/// A namespace a test made; deleted in the background when dropped.
pub struct Namespace {
    cluster: &'static Cluster,
    /// Its name.
    pub name: String,
}

impl Drop for Namespace {
    fn drop(&mut self) {
        if std::env::var_os("PULLCHECK_CLUSTER_KEEP").is_none() {
            let _ = self
                .cluster
                .kubectl_output(&["delete", "namespace", &self.name, "--wait=false"], None);
        }
    }
}

/// `pullcheck inject ARGS… -f -` on `yaml` (the binary under test); must succeed. Returns the
/// output manifest and the warnings inject wrote.
pub fn inject(yaml: &str, args: &[&str]) -> (String, String) {
    let mut cmd = crate::common::pullcheck_cmd();
    cmd.arg("inject").args(args);
    let out = crate::common::output_with_stdin(&mut cmd, yaml.as_bytes());
    assert!(
        out.status.success(),
        "pullcheck inject {}: {}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn minutes(n: u64) -> Duration {
    Duration::from_secs(60 * n)
}

/// Polls `probe` every half second until it gives a value or `bound` has passed; then fails
/// with what `probe` last said (the object's state at that moment).
pub fn wait_for<T>(what: &str, bound: Duration, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let start = Instant::now();
    loop {
        match probe() {
            Ok(v) => return v,
            Err(state) if start.elapsed() >= bound => {
                let said: String = what
                    .split(|c: char| c.is_whitespace() || c == '/')
                    .filter(|w| w.starts_with("pc-"))
                    .map(|ns| cluster().pullcheck_said(ns))
                    .collect();
                panic!(
                    "{what}: not after {} s; the state now:\n{state}{said}",
                    bound.as_secs()
                )
            }
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

/// The condition of `type` with status `True` in an object's `status.conditions`, if any.
pub fn condition<'a>(obj: &'a serde_json::Value, kind: &str) -> Option<&'a serde_json::Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
}

/// A pretty JSON rendering of an object's `status`, for failure messages.
pub fn status_of(obj: &Option<serde_json::Value>) -> String {
    match obj {
        None => "(no such object)".to_string(),
        Some(o) => serde_json::to_string_pretty(&o["status"]).unwrap_or_default(),
    }
}

/// The seconds between two RFC 3339 timestamps of the API server (`…Z`, whole seconds).
pub fn seconds_between(from: &str, to: &str) -> i64 {
    epoch(to) - epoch(from)
}

fn epoch(ts: &str) -> i64 {
    // 2026-12-01T16:20:33Z: days from the civil date (Howard Hinnant's algorithm), then time.
    let n = |r: std::ops::Range<usize>| -> i64 { ts[r].parse().expect("timestamp field") };
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let (hh, mm, ss) = (n(11..13), n(14..16), n(17..19));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + hh * 3600 + mm * 60 + ss
}

#[test]
fn timestamps_subtract() {
    assert_eq!(
        seconds_between("2026-12-31T23:59:50Z", "2027-01-01T00:00:05Z"),
        15
    );
    assert_eq!(
        seconds_between("2024-02-28T00:00:00Z", "2024-03-01T00:00:00Z"),
        2 * 86_400
    );
}
