//! A release, as `.github/workflows/release.yml` publishes it, made by `scripts/release.sh`
//! against the cluster's own registry (plain HTTP on loopback), then pulled by the cluster: a Pod
//! of the released image, the released chart installed from the OCI registry with its own
//! defaults (the released images) and its pods ready, and each image index carrying its SBOM and
//! provenance as OCI referrers.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

use crate::chart::{Release, helm};
use crate::harness::{cluster, minutes, repo, wait_for};

/// The registry path the release goes to, in the cluster's registry.
fn release_registry() -> String {
    format!("{}/release", cluster().registry)
}

/// The version released: the crate's, as a pre-release (the script refuses a version whose
/// MAJOR.MINOR.PATCH is not the crate's).
fn version() -> String {
    format!("{}-ci.1", env!("CARGO_PKG_VERSION"))
}

/// `curl` of the cluster registry's `path` with `accept`, which must succeed: the body.
fn registry_get(path: &str, accept: &str) -> Vec<u8> {
    let url = format!("http://{}/v2/{path}", cluster().registry);
    let out = Command::new("curl")
        .args(["-fsS", "-H", &format!("Accept: {accept}"), &url])
        .output()
        .expect("run curl");
    assert!(
        out.status.success(),
        "GET {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON")
}

const INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The referrers of `digest` in `repository` (the referrers API, else the tag fallback the
/// distribution registry gets: `sha256-<hex>`), by artifact type: the one blob each holds.
fn referrers(repository: &str, digest: &str) -> Vec<(String, Value)> {
    let tag = digest.replace(':', "-");
    let index = json_of(&registry_get(
        &format!("{repository}/manifests/{tag}"),
        INDEX,
    ));
    let mut found = Vec::new();
    for entry in index["manifests"].as_array().expect("referrers") {
        let manifest = json_of(&registry_get(
            &format!(
                "{repository}/manifests/{}",
                entry["digest"].as_str().unwrap()
            ),
            MANIFEST,
        ));
        assert_eq!(manifest["subject"]["digest"], digest, "{manifest:#}");
        let blob = manifest["layers"][0]["digest"].as_str().unwrap();
        let body = json_of(&registry_get(&format!("{repository}/blobs/{blob}"), "*/*"));
        found.push((manifest["artifactType"].as_str().unwrap().to_string(), body));
    }
    found
}

#[test]
fn the_release_script_publishes_what_the_cluster_pulls_with_sbom_and_provenance() {
    let out = tempfile::tempdir().unwrap();
    let registry = release_registry();
    let version = version();
    let status = Command::new(repo().join("scripts/release.sh"))
        .args([&registry, &version])
        .env("PULLCHECK_RELEASE_PLAIN_HTTP", "1")
        .env("PULLCHECK_RELEASE_DIR", out.path())
        .env(
            "PULLCHECK_HELM",
            crate::harness::built_by("build-helm.sh", "helm"),
        )
        .status()
        .expect("run scripts/release.sh");
    assert!(status.success(), "scripts/release.sh: {status}");
    let release: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("release.json")).unwrap())
            .unwrap();
    let commit = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(repo())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();

    for name in ["pullcheck", "pullcheck-cluster"] {
        let repository = format!("release/{name}");
        let index = json_of(&registry_get(
            &format!("{repository}/manifests/{version}"),
            INDEX,
        ));
        assert_eq!(index["mediaType"], INDEX, "{index:#}");
        let mut platforms: Vec<String> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{}/{}",
                    m["platform"]["os"].as_str().unwrap(),
                    m["platform"]["architecture"].as_str().unwrap()
                )
            })
            .collect();
        platforms.sort();
        assert_eq!(platforms, ["linux/amd64", "linux/arm64"], "{name}");
        let digest = release["images"][format!("{registry}/{name}:{version}")]
            .as_str()
            .unwrap()
            .to_string();
        let attached = referrers(&repository, &digest);
        let sbom = attached
            .iter()
            .find(|(kind, _)| kind == "application/spdx+json")
            .map(|(_, body)| body)
            .unwrap_or_else(|| panic!("{name}: no SBOM attached: {attached:?}"));
        assert_eq!(sbom["spdxVersion"], "SPDX-2.3");
        let packages: Vec<&str> = sbom["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(packages.contains(&"pullcheck"), "{packages:?}");
        // The init container's image holds no Kubernetes client; the cluster image does.
        assert_eq!(
            packages.contains(&"kube-client"),
            name != "pullcheck",
            "{name}: {packages:?}"
        );
        let provenance = attached
            .iter()
            .find(|(kind, _)| kind == "application/vnd.in-toto+json")
            .map(|(_, body)| body)
            .unwrap_or_else(|| panic!("{name}: no provenance attached: {attached:?}"));
        assert_eq!(
            provenance["predicateType"],
            "https://slsa.dev/provenance/v1"
        );
        let build = &provenance["predicate"]["buildDefinition"];
        assert_eq!(
            build["externalParameters"]["source"]["digest"]["gitCommit"],
            commit.trim()
        );
        assert_eq!(
            build["externalParameters"]["command"],
            format!("scripts/release.sh {registry} {version}")
        );
        let hex = digest.trim_start_matches("sha256:");
        assert!(
            provenance["subject"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["digest"]["sha256"] == hex),
            "{name}'s index is not a subject: {provenance:#}"
        );
    }
    released_binaries_are_summed(out.path());
    a_pod_runs_the_released_image(&registry, &version);
    the_released_chart_installs_from_the_registry(&registry, &version);
}

/// Every binary the GitHub release attaches, with its sum.
fn released_binaries_are_summed(out: &Path) {
    let sums = std::fs::read_to_string(out.join("SHA256SUMS")).unwrap();
    for arch in ["amd64", "arm64"] {
        for name in ["pullcheck", "pullcheck-cluster"] {
            let file = format!("{name}-linux-{arch}");
            assert!(out.join(&file).is_file(), "{file} missing");
            assert!(sums.contains(&format!("  {file}\n")), "{file}: {sums}");
        }
    }
}

fn a_pod_runs_the_released_image(registry: &str, version: &str) {
    let c = cluster();
    let ns = c.namespace("release-pod");
    let image = format!("{registry}/pullcheck:{version}");
    c.apply(
        &ns.name,
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: released}}\nspec:\n  restartPolicy: Never\n  \
             containers:\n  - {{name: pullcheck, image: \"{image}\", args: [\"--version\"]}}\n"
        ),
    );
    wait_for("the released image's pod Succeeded", minutes(2), || {
        let pod = c.get(&ns.name, "pod/released");
        match pod.as_ref().map(|p| p["status"]["phase"].clone()) {
            Some(phase) if phase == "Succeeded" => Ok(()),
            _ => Err(format!("{pod:#?}")),
        }
    });
    let logs = c.kubectl(&["logs", "-n", &ns.name, "released"]);
    assert!(
        logs.contains(env!("CARGO_PKG_VERSION")),
        "the released binary's version: {logs}"
    );
}

fn the_released_chart_installs_from_the_registry(registry: &str, version: &str) {
    let c = cluster();
    let ns = c.namespace("release-chart");
    let name = "release-chart";
    let kubeconfig = c.kubeconfig.display().to_string();
    let _release = Release {
        name: name.to_string(),
        namespace: ns.name.clone(),
        kubeconfig: c.kubeconfig.clone(),
    };
    // The chart's own defaults but for the labels: they select no namespace of the other tests.
    let out = helm(&[
        "install",
        name,
        &format!("oci://{registry}/charts/pullcheck"),
        "--version",
        version,
        "--plain-http",
        "-n",
        &ns.name,
        "--kubeconfig",
        &kubeconfig,
        "--set",
        "namespaceLabel.value=release-only,watch.namespaceLabel=pullcheck.dev/watch=release-only",
    ]);
    assert!(out.contains("STATUS: deployed"), "{out}");
    let fullname = format!("{name}-pullcheck");
    let deployment = c
        .get(&ns.name, &format!("deployment/{fullname}"))
        .expect("the Deployment");
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    for container in containers {
        assert_eq!(
            container["image"],
            format!("{registry}/pullcheck-cluster:{version}"),
            "the packaged chart's default image: {container:#}"
        );
    }
    // Both containers of the released cluster image get ready: it runs `webhook` and `watch`.
    wait_for(
        "the released chart's Deployment available",
        minutes(3),
        || {
            let d = c
                .get(&ns.name, &format!("deployment/{fullname}"))
                .unwrap_or_default();
            let ready = d["status"]["readyReplicas"].as_u64().unwrap_or(0);
            let wanted = d["spec"]["replicas"].as_u64().unwrap_or(1);
            if ready == wanted {
                Ok(())
            } else {
                Err(format!("{:#}", d["status"]))
            }
        },
    );
}
