//! The container images, run as they will run: the binaries from the images' own root
//! filesystems (built by `scripts/build-image.sh` from the Dockerfile with buildah), chrooted
//! there as uid 65532 with nothing else in the root: the init container's checks an image on the
//! TLS registry, the cluster image's answers both commands the chart's pods run.
//!
//! Not run when `target/image-rootfs` (or `target/image-webhook-rootfs`) is missing (said
//! loudly); a failure when `PULLCHECK_REQUIRE_IMAGE` is set or in CI. The images' binaries are
//! also scanned for the test hooks' names (src/test_hooks.rs): the release builds must leave them
//! out. And every cluster image build the docs show asks for both of the chart's features.

use crate::check::docker_config;
use crate::common::{ALICE, ALICE_PASSWORD, PULLCHECK_BIN, cannot_run, tls_basic_registry};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The init container's image (`scripts/build-image.sh`, its default).
const INIT: (&str, &str) = ("target/image-rootfs", "scripts/build-image.sh");
/// The cluster image, the chart's (`scripts/build-image.sh --cluster`).
const CLUSTER: (&str, &str) = (
    "target/image-webhook-rootfs",
    "scripts/build-image.sh --cluster",
);

fn image_rootfs(test: &str) -> Option<PathBuf> {
    rootfs_of(INIT, test)
}

/// The root filesystem `(DIR, BUILD)` names, when the build command has made it.
fn rootfs_of((dir, build): (&str, &str), test: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    if root.join("pullcheck").is_file() {
        return Some(root);
    }
    assert!(
        std::env::var_os("PULLCHECK_REQUIRE_IMAGE").is_none(),
        "PULLCHECK_REQUIRE_IMAGE is set but {} has no pullcheck: run {build}",
        root.display()
    );
    cannot_run(
        test,
        &format!(
            "no image root filesystem at {}: run {build}",
            root.display()
        ),
    );
    None
}

/// Runs `/pullcheck ARGS` chrooted into a copy of the image's root (plus the files given), as
/// uid 65532.
fn run_in_image(rootfs: &Path, files: &[(&str, &Path)], args: &[&str]) -> (i32, String, String) {
    let root = tempfile::tempdir().unwrap();
    std::fs::copy(rootfs.join("pullcheck"), root.path().join("pullcheck")).unwrap();
    for (name, from) in files {
        std::fs::copy(from, root.path().join(name)).unwrap();
    }
    let out = Command::new("/usr/sbin/chroot")
        .arg("--userspec=65532:65532")
        .arg(root.path())
        .arg("/pullcheck")
        .args(args)
        .env_clear()
        .output()
        .unwrap();
    let listing: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        listing.len(),
        1 + files.len(),
        "wrote into the root: {listing:?}"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_image_binary_checks_over_tls_as_uid_65532_and_fails_cleanly_without_the_ca() {
    let Some(rootfs) = image_rootfs(
        "the_image_binary_checks_over_tls_as_uid_65532_and_fails_cleanly_without_the_ca",
    ) else {
        return;
    };
    let reg = tls_basic_registry();
    let host = reg.host();
    reg.push_oci_manifest("image/app", "v1");
    let dir = tempfile::tempdir().unwrap();
    let config = docker_config(dir.path(), "config.json", &host, ALICE, ALICE_PASSWORD);
    let ca = reg.ca_pem_path().unwrap();
    let image = format!("{host}/image/app:v1");

    let (code, stdout, stderr) = run_in_image(
        &rootfs,
        &[("ca.pem", ca), ("config.json", &config)],
        &[
            "check",
            "--ca-file",
            "/ca.pem",
            "--docker-config",
            "/config.json",
            &image,
        ],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("ok "), "{stdout}");

    let (code, stdout, stderr) = run_in_image(
        &rootfs,
        &[("config.json", &config)],
        &[
            "check",
            "-o",
            "json",
            "--on-unverifiable",
            "fail",
            "--docker-config",
            "/config.json",
            &image,
        ],
    );
    // A CA this pod lacks is unverifiable: counted (exit 8) only when asked, since the node may
    // trust it.
    assert_eq!(code, 8, "{stdout}{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["images"][0]["reason"], "tls", "{json:#}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The names of the test hooks (src/test_hooks.rs), as a release binary would hold them if one
/// leaked in: the variables, and the flag the first of them once was.
const HOOK_NAMES: [&str; 3] = [
    "PULLCHECK_TEST_RESOLVE",
    "PULLCHECK_TEST_ACR_EXCHANGE",
    "test-resolve",
];

/// Whether `needle` occurs in `haystack` (what `strings FILE | grep NAME` would find).
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn the_image_binary_holds_no_test_hook() {
    let Some(rootfs) = image_rootfs("the_image_binary_holds_no_test_hook") else {
        return;
    };
    assert_no_hook(&rootfs);
    // And the same scan does find them in the build the tests run (with the `test-hooks`
    // feature), so the check above is not blind to them.
    if cfg!(feature = "test-hooks") {
        let tested = std::fs::read(PULLCHECK_BIN).unwrap();
        for name in &HOOK_NAMES[..2] {
            assert!(holds(&tested, name), "the test build lacks {name:?}");
        }
    }
}

/// Fails when the binary of the image at `rootfs` holds a test hook's name.
fn assert_no_hook(rootfs: &Path) {
    let release = std::fs::read(rootfs.join("pullcheck")).unwrap();
    // The scan reads plain strings: the binary's own variables are there to be found.
    assert!(
        holds(&release, "PULLCHECK_CA_FILE"),
        "the scan finds nothing, not even PULLCHECK_CA_FILE"
    );
    for name in HOOK_NAMES {
        assert!(
            !holds(&release, name),
            "{}'s binary holds {name:?}",
            rootfs.display()
        );
    }
}

/// The chart's pods run two containers of the cluster image, `pullcheck webhook` and `pullcheck
/// watch`: a binary built without one of the features answers `unrecognized subcommand`, and the
/// pods never get ready.
#[test]
fn the_cluster_image_runs_both_of_the_charts_commands_and_holds_no_test_hook() {
    let test = "the_cluster_image_runs_both_of_the_charts_commands_and_holds_no_test_hook";
    let Some(rootfs) = rootfs_of(CLUSTER, test) else {
        return;
    };
    for command in ["webhook", "watch"] {
        let (code, stdout, stderr) = run_in_image(&rootfs, &[], &[command, "--help"]);
        assert_eq!(code, 0, "`pullcheck {command} --help`: {stdout}{stderr}");
        assert!(stdout.contains("Usage: pullcheck"), "{command}: {stdout}");
    }
    assert_no_hook(&rootfs);
}

/// The files that show how to build pullcheck's images.
const BUILD_DOCS: [&str; 4] = [
    "README.md",
    "docs/webhook.md",
    "docs/container-image.md",
    "Dockerfile",
];

/// Every image build the docs show makes an image the chart can run: a Dockerfile build with
/// cargo features names both of the chart's (`FEATURES=webhook,watch`), and `build-image.sh` is
/// asked only for what it builds. The test above runs what the script builds.
#[test]
fn every_documented_cluster_image_build_asks_for_both_features() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in BUILD_DOCS {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for (at, _) in text.match_indices("FEATURES=") {
            let value: String = text[at + "FEATURES=".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ',' | '-' | '"'))
                .collect();
            // The Dockerfile's own default (`ARG FEATURES=""`): the init container's image.
            if value == "\"\"" && doc == "Dockerfile" {
                continue;
            }
            assert_eq!(
                value, "webhook,watch",
                "{doc}: a cluster image build with FEATURES={value}: the chart runs both `pullcheck webhook` and `pullcheck watch`"
            );
        }
        for (at, _) in text.match_indices("build-image.sh ") {
            let arg: String = text[at + "build-image.sh ".len()..]
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '`')
                .collect();
            assert!(
                !arg.starts_with('-') || ["--init", "--cluster", "--all"].contains(&arg.as_str()),
                "{doc}: `build-image.sh {arg}`: the script takes --init, --cluster or --all"
            );
        }
    }
}
