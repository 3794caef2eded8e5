//! The container image, run as it will run: the binary from the image's own root filesystem
//! (built by `scripts/build-image.sh` from the Dockerfile with buildah), chrooted there as uid
//! 65532 with nothing else in the root, checking an image on the TLS registry.
//!
//! Skipped when `target/image-rootfs` is missing, unless `PULLCHECK_REQUIRE_IMAGE` is set (CI).

use crate::check::docker_config;
use crate::common::{ALICE, ALICE_PASSWORD, tls_basic_registry};
use std::path::{Path, PathBuf};
use std::process::Command;

fn image_rootfs() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/image-rootfs");
    if root.join("pullcheck").is_file() {
        return Some(root);
    }
    assert!(
        std::env::var_os("PULLCHECK_REQUIRE_IMAGE").is_none(),
        "PULLCHECK_REQUIRE_IMAGE is set but {} has no pullcheck: run scripts/build-image.sh",
        root.display()
    );
    eprintln!("skipped: no image root filesystem; run scripts/build-image.sh");
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
    let Some(rootfs) = image_rootfs() else { return };
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
            "--docker-config",
            "/config.json",
            &image,
        ],
    );
    assert_eq!(code, 8, "{stdout}{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["images"][0]["reason"], "tls", "{json:#}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
