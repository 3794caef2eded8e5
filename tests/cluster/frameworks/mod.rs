//! The frameworks' own controllers on the real cluster, each built from its Go module by
//! `tests/cluster/build-<framework>.sh` and installed from the manifests its module ships, with
//! pullcheck in front of them in both modes: the chart's default `mode: watch` (the watcher fails
//! a stuck pod by the kubelet's own hand) and `mode: init` (the init container fails it). What
//! each module proves is in its own doc; this one holds what they share:
//!
//! - [`Mode`]: a namespace of the test's own for each way of running (watched, injected, or
//!   without pullcheck: the control), and the registry address its workloads name;
//! - [`image_from`]: a one-layer image of a folder, pushed to the cluster's registry (a
//!   framework's static binaries, laid out as its own Dockerfile or `ko` lays them out);
//! - [`kustomized`]: a framework's manifests, rendered by kubectl's kustomize with a
//!   kustomization of ours (namespace, images, the flags our images need);
//! - [`Controller`]: a framework's Deployments, started and leading, and their state for failure
//!   messages.
//!
//! The workloads' images are pulled `Always`: the other tests leave the tools image on the node
//! under the kubelet's 5 names, after which no `IfNotPresent` image can be proven absent from the
//! node's list (the init container would then rightly not count a miss).
//!
//! The docs' frameworks table (docs/job-frameworks.md) is the figures these tests print (`grep
//! '^framework:'` in their output).

pub mod argo;
pub mod jobset;
pub mod kuberay;
pub mod kueue;
pub mod tekton;

use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::common::proxy::Proxy;
use crate::harness::{Namespace, cluster, minutes, repo, wait_for};
use crate::webhook::{Installed, install, opted_in};

/// The kubelet's words for a pod past its `activeDeadlineSeconds` (`pod.status.message`): what
/// a framework reads of a pod the watcher failed.
pub const DEADLINE: &str = "Pod was active on the node longer than the specified deadline";

/// distroless's PATH, which the frameworks' upstream images have and ours, made from scratch,
/// must set.
pub const DISTROLESS_PATH: &str =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How pullcheck runs in a test's namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The chart's default, `mode: watch`: nothing added to pods, the watcher fails a stuck one.
    Watch,
    /// `mode: init`: the webhook adds the init container, which fails a pod whose image is
    /// proven missing.
    Init,
    /// No pullcheck at all: the control.
    Without,
}

impl Mode {
    /// A namespace of the test's own run this way, ready (its pods are seen to pass through
    /// the release, or not at all). In `Init` its service accounts may read Nodes: the init
    /// container proves an `IfNotPresent` image absent from the node through the Node's image
    /// list (examples/node-images-rbac.yaml; the frameworks' pods run under service accounts of
    /// their own choosing, so the binding names the namespace's group).
    pub fn namespace(self, name: &str) -> Namespace {
        match self {
            Mode::Watch => crate::watch_mode::watched(name),
            Mode::Without => cluster().namespace(name),
            Mode::Init => {
                let ns = opted_in(name, init_release());
                node_images_for(name);
                ns
            }
        }
    }

    /// The registry the workloads of this mode name: in `Init` the cluster's registry on the
    /// node's bridge address, which the init container reaches from the pod's network (the
    /// node's loopback is not the pod's); else the cluster's registry itself.
    pub fn registry(self) -> String {
        match self {
            Mode::Init => bridge_registry().host(),
            Mode::Watch | Mode::Without => cluster().registry.clone(),
        }
    }

    /// Its name in the figures' lines.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Watch => "watch",
            Mode::Init => "init",
            Mode::Without => "without",
        }
    }
}

/// The proxy to the cluster's registry on the node's bridge address, for `Init` workloads.
fn bridge_registry() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(|| cluster().bridge_proxy())
}

/// The release the frameworks' `Init` namespaces share: `mode: init`, its own label, its init
/// container speaking plain HTTP to the cluster's registry at both its addresses.
fn init_release() -> &'static Installed {
    static RELEASE: OnceLock<Installed> = OnceLock::new();
    RELEASE.get_or_init(|| {
        let c = cluster();
        let plain = json!([
            "--plain-http",
            c.registry,
            "--plain-http",
            bridge_registry().host()
        ])
        .to_string();
        let plain = format!("inject.checkArgs={plain}");
        // The ClusterRole the node-images example grants (its first document; the binding
        // that follows names an example's service account).
        let example = std::fs::read_to_string(repo().join("examples/node-images-rbac.yaml"))
            .expect("read examples/node-images-rbac.yaml");
        let role = example
            .split("\n---\n")
            .next()
            .filter(|d| {
                d.contains("kind: ClusterRole\n") && d.contains("name: pullcheck-node-images")
            })
            .expect("the example's ClusterRole first");
        c.apply("default", role);
        install(
            "pc-frameworks-init",
            "frameworks-tests",
            &["--set", "mode=init", "--set-json", &plain],
        )
    })
}

/// Lets every service account of namespace `ns` get Nodes (examples/node-images-rbac.yaml's
/// ClusterRole, applied with the release), by a ClusterRoleBinding owned by the Namespace: the
/// garbage collector removes it with the namespace.
fn node_images_for(ns: &str) {
    let c = cluster();
    let uid = c
        .get("", &format!("namespace/{ns}"))
        .and_then(|n| n["metadata"]["uid"].as_str().map(String::from))
        .expect("the namespace's uid");
    c.apply(
        "",
        &format!(
            r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {ns}-node-images
  ownerReferences:
  - {{apiVersion: v1, kind: Namespace, name: {ns}, uid: {uid}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pullcheck-node-images}}
subjects:
- {{kind: Group, apiGroup: rbac.authorization.k8s.io, name: "system:serviceaccounts:{ns}"}}
"#
        ),
    );
}

/// A one-layer image of folder `dir` (buildah, vfs storage), configured with `config` (buildah
/// config's flags), pushed over plain HTTP to `dest`.
pub fn image_from(dir: &Path, dest: &str, config: &[&str]) {
    let buildah = |args: &[&str]| -> String {
        let out = Command::new("buildah")
            .args(["--storage-driver", "vfs"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run buildah");
        assert!(
            out.status.success(),
            "buildah {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let local = format!(
        "localhost/{}",
        dest.split_once('/').map_or(dest, |(_, path)| path)
    );
    let ctr = buildah(&["from", "--quiet", "scratch"]);
    buildah(&[
        "copy",
        "--quiet",
        &ctr,
        dir.to_str().expect("UTF-8 path"),
        "/",
    ]);
    let mut args = vec!["config"];
    args.extend_from_slice(config);
    args.push(&ctr);
    buildah(&args);
    buildah(&["commit", "--quiet", "--rm", &ctr, &local]);
    buildah(&[
        "push",
        "--quiet",
        "--tls-verify=false",
        &local,
        &format!("docker://{dest}"),
    ]);
}

/// The root of a one-layer image: `/tmp` (1777, as distroless has it), and each `(file, path)`
/// of `files` copied to `path` in the image (`fs::copy` keeps the mode: the binaries are 0755).
pub fn image_root(files: &[(&Path, &str)]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("tempdir");
    let tmp = root.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).expect("chmod tmp");
    for (file, path) in files {
        let to = root.path().join(path);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::copy(file, &to).unwrap_or_else(|e| panic!("copy {}: {e}", file.display()));
    }
    root
}

/// The image of a framework whose one command is `/manager` (kubebuilder's layout: JobSet,
/// KubeRay, Kueue), run as user 65532: one layer from `manager` of build script's cache folder
/// `cache` (`<framework>-<version>-<key>`, checked against `version`), with `config` (buildah
/// config's flags) besides, pushed as `<registry>/<framework>/<name>:<version>-<key>`.
pub fn manager_image(
    cache: &Path,
    framework: &str,
    version: &str,
    name: &str,
    config: &[&str],
) -> String {
    let root = image_root(&[(&cache.join("manager"), "manager")]);
    let tag = tag_of(cache, framework);
    assert!(
        tag.starts_with(version),
        "{tag}: built for {framework} {version}"
    );
    let image = format!("{}/{framework}/{name}:{tag}", cluster().registry);
    let mut all = vec!["--entrypoint", "[\"/manager\"]", "--user", "65532:65532"];
    all.extend_from_slice(config);
    image_from(root.path(), &image, &all);
    image
}

/// A framework's Deployments in its namespace, as its manifests make them.
pub struct Controller {
    /// Its namespace.
    pub namespace: &'static str,
    /// `deployment/NAME` of each; the first is the one whose log a failure message shows.
    pub deployments: &'static [&'static str],
}

impl Controller {
    /// Its pods and the last lines of its first Deployment's log, for failure messages.
    pub fn state(&self) -> String {
        let c = cluster();
        let pods = c.kubectl_output(&["get", "pods", "-n", self.namespace, "-o", "wide"], None);
        let log = c.kubectl_output(
            &[
                "logs",
                "-n",
                self.namespace,
                self.deployments[0],
                "--tail=30",
            ],
            None,
        );
        format!(
            "{}\n{}{}",
            String::from_utf8_lossy(&pods.stdout),
            String::from_utf8_lossy(&log.stdout),
            String::from_utf8_lossy(&log.stderr)
        )
    }

    /// Waits for each Deployment's rollout, then for each of `leases` (`lease/NAME`) to name a
    /// holder: a controller acts only once it leads. The holders.
    pub fn started(&self, leases: &[&str]) -> Vec<String> {
        let c = cluster();
        for deployment in self.deployments {
            let rollout = c.kubectl_output(
                &[
                    "rollout",
                    "status",
                    deployment,
                    "-n",
                    self.namespace,
                    "--timeout=300s",
                ],
                None,
            );
            assert!(
                rollout.status.success(),
                "{deployment} did not start: {}\n{}",
                String::from_utf8_lossy(&rollout.stderr),
                self.state()
            );
        }
        leases
            .iter()
            .map(|lease| {
                wait_for(&format!("{lease} held"), minutes(2), || {
                    c.get(self.namespace, lease)
                        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
                        .filter(|h| !h.is_empty())
                        .ok_or_else(|| self.state())
                })
            })
            .collect()
    }
}

/// The tag of the images built from build script's cache folder `cache`
/// (`<framework>-<version>-<key>`): `<version>-<key>`, so that a rebuilt binary is a new tag and
/// the node's `IfNotPresent` never runs an old one.
pub fn tag_of(cache: &Path, framework: &str) -> String {
    let folder = cache
        .file_name()
        .and_then(|n| n.to_str())
        .expect("the cache folder's name");
    folder
        .strip_prefix(&format!("{framework}-"))
        .unwrap_or(folder)
        .to_string()
}

/// The manifests of `cache` (its `manifests/` folder) rendered by kubectl's kustomize with
/// `kustomization` (whose resources name paths under `manifests/`): kustomize refuses resources
/// outside its root, and absolute ones, so both go into a folder of their own.
pub fn kustomized(cache: &Path, kustomization: &str) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(cache.join("manifests"))
        .arg(tmp.path().join("manifests"))
        .status()
        .expect("run cp");
    assert!(copied.success(), "copy {}/manifests", cache.display());
    std::fs::write(tmp.path().join("kustomization.yaml"), kustomization)
        .expect("write kustomization.yaml");
    cluster().kubectl(&["kustomize", tmp.path().to_str().expect("UTF-8 path")])
}

/// The line the docs' table is made from: `framework: <name> mode=<mode> case=<case> <what>`.
pub fn figure(framework: &str, mode: Mode, case: &str, what: &str) {
    println!(
        "framework: {framework} mode={} case={case} {what}",
        mode.name()
    );
}
