//! The node's platform (index and config checks) and "did you mean" suggestions, against the
//! real registry.

use crate::check::check;
use crate::common::plain_registry;

fn run(args: &[&str]) -> crate::check::Run {
    let host = plain_registry().host();
    let mut all = vec!["-o", "json", "--plain-http", host.as_str()];
    all.extend_from_slice(args);
    check(&all)
}

#[test]
fn an_index_is_matched_against_the_node_platform() {
    let reg = plain_registry();
    let host = reg.host();
    let index =
        reg.push_oci_index_detailed("platform/multi", "v1", &["linux/amd64", "linux/arm64/v8"]);
    let image = format!("{host}/platform/multi:v1");
    let child = |p: &str| {
        index
            .children
            .iter()
            .find(|(plat, _)| plat == p)
            .map(|(_, d)| d.clone())
            .unwrap()
    };

    let r = run(&["--platform", "linux/arm64", &image]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.json()["platform"], "linux/arm64/v8");
    let res = r.image(&image);
    assert_eq!(res["digest"], index.digest.as_str());
    assert_eq!(res["platform_digest"], child("linux/arm64/v8").as_str());

    let r = run(&["--platform", "linux/amd64", &image]);
    assert_eq!(
        r.image(&image)["platform_digest"],
        child("linux/amd64").as_str()
    );

    let r = run(&["--platform", "linux/s390x", &image]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    let res = r.image(&image);
    assert_eq!(res["status"], "wrong_platform");
    assert_eq!(res["reason"], "no_matching_platform");
    assert_eq!(
        res["available_platforms"],
        serde_json::json!(["linux/amd64", "linux/arm64/v8"])
    );
    let message = res["message"].as_str().unwrap();
    assert!(
        message.contains("no linux/s390x variant; available: linux/amd64, linux/arm64/v8"),
        "{message}"
    );

    let r = run(&["--platform", "any", &image]);
    assert_eq!(r.code, 0);
    assert_eq!(r.json()["platform"], "any");
    assert!(r.image(&image).get("platform_digest").is_none());
}

#[test]
fn arm64_only_index_fails_an_amd64_node_with_exit_4() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_index("platform/arm-only", "v1", &["linux/arm64/v8"]);
    let image = format!("{host}/platform/arm-only:v1");
    let r = run(&["--platform", "linux/amd64", &image]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    assert_eq!(
        r.image(&image)["available_platforms"],
        serde_json::json!(["linux/arm64/v8"])
    );
}

#[test]
fn docker_manifest_lists_and_attestations() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_docker_manifest_list("platform/list", "v1", &["linux/amd64", "linux/ppc64le"]);
    reg.push_oci_index(
        "platform/attested",
        "v1",
        &["linux/arm64/v8", "unknown/unknown"],
    );
    let list = format!("{host}/platform/list:v1");
    let attested = format!("{host}/platform/attested:v1");
    let r = run(&["--platform", "linux/ppc64le", &list]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let r = run(&["--platform", "linux/arm64", &list]);
    assert_eq!(r.code, 4);
    // The attestation entry never counts, nor is it offered as available.
    let r = run(&["--platform", "linux/amd64", &attested]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    assert_eq!(
        r.image(&attested)["available_platforms"],
        serde_json::json!(["linux/arm64/v8"])
    );
}

#[test]
fn lenient_matching_like_containerd_cri_and_strict_on_request() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_index("platform/armv7", "v1", &["linux/arm/v7"]);
    reg.push_oci_index("platform/i386", "v1", &["linux/386"]);
    let armv7 = format!("{host}/platform/armv7:v1");
    let i386 = format!("{host}/platform/i386:v1");
    let cases: &[(&str, &str, &str, i32)] = &[
        ("arm64 node runs arm/v7", &armv7, "lenient", 0),
        ("strict arm64 node does not", &armv7, "strict", 4),
    ];
    for (name, image, mode, want) in cases {
        let r = run(&["--platform", "linux/arm64", "--platform-match", mode, image]);
        assert_eq!(r.code, *want, "{name}: {}", r.stdout);
    }
    let r = run(&["--platform", "linux/amd64", &i386]);
    assert_eq!(r.code, 0, "amd64 node runs 386: {}", r.stdout);
    let r = run(&[
        "--platform",
        "linux/amd64",
        "--platform-match",
        "strict",
        &i386,
    ]);
    assert_eq!(r.code, 4);
}

#[test]
fn single_manifests_are_checked_only_with_platform_check_full() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("platform/single", "v1");
    let image = format!("{host}/platform/single:v1");
    // auto: a single manifest is not fetched.
    let r = run(&["--platform", "linux/arm64", &image]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let r = run(&[
        "--platform",
        "linux/arm64",
        "--platform-check",
        "full",
        &image,
    ]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    assert_eq!(
        r.image(&image)["available_platforms"],
        serde_json::json!(["linux/amd64"])
    );
    let r = run(&[
        "--platform",
        "linux/amd64",
        "--platform-check",
        "full",
        &image,
    ]);
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn requests_for_an_index_head_then_one_get_and_none_when_off() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_index("platform/count", "v1", &["linux/amd64"]);
    let image = format!("{host}/platform/count:v1");
    let before = reg.requests_for("platform/count").len();
    let r = run(&["--platform", "linux/amd64", &image]);
    assert_eq!(r.code, 0);
    let after = reg.wait_for_requests(|all| {
        all.iter()
            .filter(|q| q.path.starts_with("/v2/platform/count/"))
            .count()
            >= before + 2
    });
    let ours: Vec<_> = after
        .iter()
        .filter(|q| q.path.starts_with("/v2/platform/count/"))
        .skip(before)
        .map(|q| q.method.as_str())
        .collect();
    assert_eq!(ours, ["HEAD", "GET"]);

    let before = reg.requests_for("platform/count").len();
    let r = run(&["--platform-check", "off", &image]);
    assert_eq!(r.code, 0);
    let after = reg.wait_for_requests(|all| {
        all.iter()
            .filter(|q| q.path.starts_with("/v2/platform/count/"))
            .count()
            > before
    });
    let ours: Vec<_> = after
        .iter()
        .filter(|q| q.path.starts_with("/v2/platform/count/"))
        .skip(before)
        .map(|q| q.method.as_str())
        .collect();
    assert_eq!(ours, ["HEAD"]);
}

#[test]
fn bad_platform_flags_are_usage_errors() {
    for bad in [
        &["--platform", "linux/&arm"][..],
        &["--platform-match", "loose"],
        &["--platform-check", "sometimes"],
    ] {
        let mut args = bad.to_vec();
        args.push("nginx");
        let r = check(&args);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stderr);
    }
}

#[test]
fn close_tags_are_suggested_for_a_missing_tag() {
    let reg = plain_registry();
    let host = reg.host();
    for tag in ["v1", "v1.0", "v1.1", "v2", "latest"] {
        reg.push_oci_manifest("suggest/app", tag);
    }
    let image = format!("{host}/suggest/app:v3");
    let r = run(&[&image]);
    assert_eq!(r.code, 3);
    let res = r.image(&image);
    assert_eq!(res["reason"], "tag_missing");
    let suggestions = res["suggestions"].as_array().unwrap();
    assert_eq!(suggestions[0], "v2", "{res:#}");
    assert!(suggestions.len() <= 3);
    assert!(
        res["message"].as_str().unwrap().contains("did you mean v2"),
        "{res:#}"
    );

    // Nothing close: no suggestions, same verdict.
    let image = format!("{host}/suggest/app:zzzzzz");
    let res = run(&[&image]).image(&image);
    assert_eq!(res["reason"], "tag_missing");
    assert!(res.get("suggestions").is_none());
    // But a few tags it has, newest versions first, in the message and the JSON.
    assert_eq!(
        res["existing_tags"],
        serde_json::json!(["v2", "v1.1", "v1.0", "v1", "latest"]),
        "{res:#}"
    );
    assert!(
        res["message"].as_str().unwrap().ends_with(
            "; no tag is close; tags the repository has include v2, v1.1, v1.0, v1, latest"
        ),
        "{res:#}"
    );
    // A missing digest lists none (tags do not help there).
    let digest = format!("{host}/suggest/app@sha256:{}", "0".repeat(64));
    let res = run(&[&digest]).image(&digest);
    assert_eq!(res["reason"], "digest_missing", "{res:#}");
    assert!(res.get("existing_tags").is_none(), "{res:#}");
}

#[test]
fn suggestions_read_past_the_first_page_of_tags() {
    let reg = plain_registry();
    let host = reg.host();
    // More tags than one page (100); the close one sorts last.
    for i in 0..130 {
        reg.push_oci_manifest("suggest/paged", &format!("build-{i:03}"));
    }
    reg.push_oci_manifest("suggest/paged", "zeta-release");
    let image = format!("{host}/suggest/paged:zeta-relase");
    let res = run(&[&image]).image(&image);
    assert_eq!(res["reason"], "tag_missing");
    assert_eq!(res["suggestions"][0], "zeta-release", "{res:#}");
}

#[test]
fn a_missing_repository_suggests_a_close_one_from_the_catalog() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("suggest-team/application", "v1");
    let image = format!("{host}/suggest-team/aplication:v1");
    let res = run(&[&image]).image(&image);
    assert_eq!(res["reason"], "repository_missing");
    assert_eq!(res["suggestions"][0], "suggest-team/application", "{res:#}");
}

#[test]
fn index_entries_are_read_as_containerd_reads_them() {
    // containerd 1.6 (ctr images pull, this machine's platform linux/amd64) is the oracle:
    // an entry without platform is kept (its config decides), os.features are ignored, and an
    // index of only attestations or only Windows entries has no match.
    if std::env::consts::ARCH != "x86_64" {
        crate::common::cannot_run(
            "index_entries_are_read_as_containerd_reads_them",
            "the containerd oracle pulls for linux/amd64, and this machine is not x86_64",
        );
        return;
    }
    let reg = plain_registry();
    let host = reg.host();
    let strip_platform = |entries: &mut [serde_json::Value]| {
        if let Some(e) = entries.get_mut(1) {
            e.as_object_mut().unwrap().remove("platform");
        }
    };
    let add_features = |entries: &mut [serde_json::Value]| {
        for e in entries.iter_mut() {
            e["platform"]["os.features"] = serde_json::json!(["win32k"]);
        }
    };
    reg.push_oci_index_edited(
        "platform/no-platform",
        "v1",
        &["linux/arm64/v8", "linux/amd64"],
        &strip_platform,
    );
    reg.push_oci_index_edited(
        "platform/os-features",
        "v1",
        &["linux/amd64"],
        &add_features,
    );
    reg.push_oci_index("platform/attestations", "v1", &["unknown/unknown"]);
    reg.push_oci_index_edited("platform/windows", "v1", &["windows/amd64"], &add_features);
    let cases = [
        ("platform/no-platform", true),
        ("platform/os-features", true),
        ("platform/attestations", false),
        ("platform/windows", false),
    ];
    let containerd =
        crate::route::Containerd::start("index_entries_are_read_as_containerd_reads_them");
    let empty = tempfile::tempdir().unwrap();
    for (repo, pulls) in cases {
        let image = format!("{host}/{repo}:v1");
        let r = run(&["--platform", "linux/amd64", &image]);
        let res = r.image(&image);
        if pulls {
            assert_eq!(r.code, 0, "{repo}: {res:#}");
            assert_eq!(res["status"], "ok", "{repo}: {res:#}");
        } else {
            assert_eq!(r.code, 4, "{repo}: {res:#}");
            assert_eq!(res["status"], "wrong_platform", "{repo}: {res:#}");
        }
        if let Some(c) = &containerd {
            let (pulled, words) = c.pull(empty.path(), &image);
            assert_eq!(pulled, pulls, "containerd on {repo}: {words}");
        }
    }
    // The entry without platform is the one the runtime would read: not checked here.
    let image = format!("{host}/platform/no-platform:v1");
    let res = run(&["--platform", "linux/amd64", &image]).image(&image);
    assert_eq!(res["platform_checked"], false, "{res:#}");
    let image = format!("{host}/platform/attestations:v1");
    let res = run(&["--platform", "linux/amd64", &image]).image(&image);
    assert!(
        res["message"]
            .as_str()
            .unwrap()
            .contains("available: none (the index lists no manifest a node can run"),
        "{res:#}"
    );
}

#[test]
fn an_artifact_read_for_the_platform_or_start_check_is_not_an_image() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_helm_chart("platform/chart", "0.1.0");
    let image = format!("{host}/platform/chart:0.1.0");
    // A HEAD alone cannot tell: ok, as documented (no GET only for this).
    let r = run(&[&image]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    // Where the manifest is read anyway (--platform-check full), it is not an image.
    let r = run(&["--platform-check", "full", &image]);
    assert_eq!(r.code, 3, "{}", r.stdout);
    let res = r.image(&image);
    assert_eq!(res["status"], "not_found", "{res:#}");
    assert_eq!(res["reason"], "not_an_image", "{res:#}");
    assert!(
        res["message"]
            .as_str()
            .unwrap()
            .contains("config media type application/vnd.cncf.helm.config.v1+json"),
        "{res:#}"
    );
    // And where the start check reads it.
    let containers = format!(
        r#"[{{"name":"c","image":"{image}","command":false,"args":false,"runAsNonRoot":true}}]"#
    );
    let out = crate::common::pullcheck()
        .args(["check", "-o", "json", "--termination-log", ""])
        .args(["--secrets-dir", "/nonexistent/pullcheck-secrets"])
        .args(["--plain-http", &host])
        .env("PULLCHECK_CONTAINERS", containers)
        .env_remove("DOCKER_CONFIG")
        .run();
    let stdout = out.stdout;
    assert_eq!(out.code, 3, "{stdout}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["images"][0]["reason"], "not_an_image", "{json:#}");
}
