//! Self-test of the integration-test harness in `common/`: a real `docker-registry`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{
    ALICE, ALICE_PASSWORD, Registry, RegistryOptions, Request, media, plain_registry,
    tls_basic_registry,
};

/// Whether process `pid` is gone (or a zombie, i.e. already dead).
fn process_gone(pid: u32) -> bool {
    crate::common::registry::process_exited(pid)
}

fn wait_gone(pid: u32, dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !process_gone(pid) || dir.exists() {
        assert!(
            Instant::now() < deadline,
            "docker-registry pid {pid} still running or {} still there",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn plain_registry_serves_all_four_fixture_types() {
    let reg = plain_registry();
    assert!(reg.host().starts_with("127.0.0.1:"), "{}", reg.host());
    assert!(reg.ca_pem_path().is_none());
    assert!(reg.dir().is_dir());

    let repo = "selftest/plain-fixtures";
    let pushed = [
        (
            "oci",
            reg.push_oci_manifest(repo, "oci"),
            media::OCI_MANIFEST,
        ),
        (
            "docker",
            reg.push_docker_schema2(repo, "docker"),
            media::DOCKER_MANIFEST,
        ),
        (
            "index",
            reg.push_oci_index(
                repo,
                "index",
                &["linux/amd64", "linux/arm64/v8", "unknown/unknown"],
            ),
            media::OCI_INDEX,
        ),
        (
            "list",
            reg.push_docker_manifest_list(repo, "list", &["linux/amd64", "linux/arm/v7"]),
            media::DOCKER_MANIFEST_LIST,
        ),
    ];
    for (tag, digest, media_type) in &pushed {
        assert!(
            digest.starts_with("sha256:") && digest.len() == 71,
            "{digest}"
        );
        let head = reg.head_manifest(repo, tag, media::ACCEPT_ALL, None);
        assert_eq!(head.status, 200, "HEAD {repo}:{tag}: {head:?}");
        assert_eq!(head.digest.as_deref(), Some(digest.as_str()), "{tag}");
        assert_eq!(head.content_type.as_deref(), Some(*media_type), "{tag}");
        // By digest too.
        let head = reg.head_manifest(repo, digest, media::ACCEPT_ALL, None);
        assert_eq!(head.status, 200, "HEAD {repo}@{digest}: {head:?}");
    }
    let digests: std::collections::HashSet<_> = pushed.iter().map(|p| &p.1).collect();
    assert_eq!(digests.len(), 4, "fixtures must differ: {pushed:?}");

    let missing = reg.head_manifest(repo, "no-such-tag", media::ACCEPT_ALL, None);
    assert_eq!(missing.status, 404, "{missing:?}");

    let requests = reg.requests_for(repo);
    let head = |path: &str, status| Request {
        method: "HEAD".into(),
        path: path.into(),
        status,
    };
    assert!(
        requests.contains(&head("/v2/selftest/plain-fixtures/manifests/oci", 200)),
        "{requests:#?}"
    );
    assert!(
        requests.contains(&head(
            "/v2/selftest/plain-fixtures/manifests/no-such-tag",
            404
        )),
        "{requests:#?}"
    );
    // The pushes are there as well.
    assert!(requests.iter().any(|r| r.method == "PUT"
        && r.path == "/v2/selftest/plain-fixtures/manifests/index"
        && r.status == 201));
    assert!(requests.iter().any(|r| r.method == "POST"
        && r.path == "/v2/selftest/plain-fixtures/blobs/uploads/"
        && r.status == 202));
    // requests() sees the same (it is a superset).
    let all = reg.requests();
    assert!(requests.iter().all(|r| all.contains(r)));
}

#[test]
fn fixtures_are_deterministic_and_children_are_pushed_by_digest() {
    let reg = plain_registry();
    let a = reg.push_oci_manifest("selftest/determinism-a", "v1");
    let b = reg.push_oci_manifest("selftest/determinism-b", "v2");
    assert_eq!(a, b, "same fixture, same digest");

    let repo = "selftest/index-children";
    let index = reg.push_oci_index_detailed(
        repo,
        "multi",
        &["linux/amd64", "unknown/unknown", "linux/arm64/v8"],
    );
    assert_eq!(index.children.len(), 3);
    assert_eq!(
        index.children[0].1, a,
        "linux/amd64 child is the plain OCI fixture"
    );
    for (platform, digest) in &index.children {
        let head = reg.head_manifest(repo, digest, media::ACCEPT_ALL, None);
        assert_eq!(head.status, 200, "{platform}: {head:?}");
        assert_eq!(head.content_type.as_deref(), Some(media::OCI_MANIFEST));
        let path = format!("/v2/{repo}/manifests/{digest}");
        assert!(
            reg.requests_for(repo)
                .iter()
                .any(|r| r.method == "PUT" && r.path == path && r.status == 201),
            "{platform} child not pushed by digest"
        );
    }

    // The index itself: platforms and the attestation entry.
    let client = reg.http_client();
    let url = format!("{}/v2/{repo}/manifests/multi", reg.base_url());
    let body = crate::common::block_on(async {
        client
            .get(&url)
            .header("Accept", media::OCI_INDEX)
            .send()
            .await
            .expect("GET index")
            .bytes()
            .await
            .expect("index body")
    });
    let body: serde_json::Value = serde_json::from_slice(&body).expect("index JSON");
    let entries = body["manifests"].as_array().expect("manifests");
    assert_eq!(entries[0]["platform"]["architecture"], "amd64");
    assert_eq!(entries[0]["platform"]["os"], "linux");
    assert_eq!(entries[1]["platform"]["architecture"], "unknown");
    assert_eq!(
        entries[1]["annotations"]["vnd.docker.reference.type"],
        "attestation-manifest"
    );
    assert_eq!(
        entries[1]["annotations"]["vnd.docker.reference.digest"],
        a.as_str()
    );
    assert_eq!(entries[2]["platform"]["variant"], "v8");
}

#[test]
fn layer_blob_is_a_real_gzipped_tar() {
    let reg = plain_registry();
    let repo = "selftest/layer";
    reg.push_docker_schema2(repo, "v1");
    let client = reg.http_client();
    let base = reg.base_url();
    let layer = crate::common::block_on(async {
        let manifest = client
            .get(format!("{base}/v2/{repo}/manifests/v1"))
            .header("Accept", media::DOCKER_MANIFEST)
            .send()
            .await
            .expect("GET manifest")
            .bytes()
            .await
            .expect("manifest body");
        let manifest: serde_json::Value = serde_json::from_slice(&manifest).expect("manifest JSON");
        let digest = manifest["layers"][0]["digest"]
            .as_str()
            .expect("layer digest");
        client
            .get(format!("{base}/v2/{repo}/blobs/{digest}"))
            .send()
            .await
            .expect("GET blob")
            .bytes()
            .await
            .expect("blob bytes")
    });
    let path = reg.dir().join("selftest-layer.tar.gz");
    std::fs::write(&path, &layer).expect("write layer");
    let out = Command::new("tar")
        .arg("-xzOf")
        .arg(&path)
        .output()
        .expect("run tar");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "pullcheck test layer for linux/amd64\n"
    );
}

#[test]
fn requests_are_visible_right_after_the_response() {
    let reg = plain_registry();
    let repo = "selftest/promptness";
    reg.push_oci_manifest(repo, "v1");
    for i in 0..10 {
        let tag = format!("missing-{i}?probe={i}");
        assert_eq!(
            reg.head_manifest(repo, &tag, media::ACCEPT_ALL, None)
                .status,
            404
        );
        let seen = reg.requests_for(repo);
        let expected = Request {
            method: "HEAD".into(),
            path: format!("/v2/{repo}/manifests/{tag}"),
            status: 404,
        };
        assert!(seen.contains(&expected), "iteration {i}: {seen:#?}");
    }
    let seen =
        reg.wait_for_requests(|rs| rs.iter().filter(|r| r.path.contains("probe=")).count() >= 10);
    assert!(seen.len() >= 10);
}

#[test]
fn tls_basic_registry_requires_the_right_password() {
    let reg = tls_basic_registry();
    let ca = reg.ca_pem_path().expect("TLS registry has a CA");
    assert!(
        std::fs::read_to_string(ca)
            .expect("read CA")
            .contains("BEGIN CERTIFICATE")
    );
    assert_eq!(reg.basic_auth(), Some((ALICE, ALICE_PASSWORD)));

    let repo = "selftest/tls-basic";
    let digest = reg.push_oci_manifest(repo, "v1");

    let anonymous = reg.head_manifest(repo, "v1", media::ACCEPT_ALL, None);
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    assert_eq!(
        anonymous.www_authenticate.as_deref(),
        Some("Basic realm=\"pullcheck-test\"")
    );
    let right = reg.head_manifest(repo, "v1", media::ACCEPT_ALL, Some((ALICE, ALICE_PASSWORD)));
    assert_eq!(right.status, 200, "{right:?}");
    assert_eq!(right.digest.as_deref(), Some(digest.as_str()));
    let wrong = reg.head_manifest(repo, "v1", media::ACCEPT_ALL, Some((ALICE, "wrong")));
    assert_eq!(wrong.status, 401, "{wrong:?}");
    let bad_user = reg.head_manifest(
        repo,
        "v1",
        media::ACCEPT_ALL,
        Some(("mallory", ALICE_PASSWORD)),
    );
    assert_eq!(bad_user.status, 401, "{bad_user:?}");

    let statuses: Vec<u16> = reg
        .requests_for(repo)
        .iter()
        .filter(|r| r.method == "HEAD")
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [401, 200, 401, 401]);

    // h2 is negotiated over TLS.
    let client = reg.http_client();
    let url = format!("{}/v2/", reg.base_url());
    let version = crate::common::block_on(async {
        client
            .get(&url)
            .basic_auth(ALICE, Some(ALICE_PASSWORD))
            .send()
            .await
            .expect("GET /v2/")
            .version()
    });
    assert_eq!(version, reqwest::Version::HTTP_2);
}

#[test]
fn tls_registry_rejects_plain_http_and_untrusted_clients() {
    let reg = tls_basic_registry();
    let plain_url = format!("http://{}/v2/", reg.host());
    let https_url = format!("{}/v2/", reg.base_url());
    let (plain, untrusted) = crate::common::block_on(async {
        let plain = crate::common::http_client(None)
            .get(&plain_url)
            .send()
            .await;
        let untrusted = crate::common::http_client(None)
            .get(&https_url)
            .send()
            .await;
        (plain, untrusted)
    });
    // Go's TLS server answers a plain-HTTP request with "400 Bad Request: Client sent an HTTP
    // request to an HTTPS server." (it is not in the access log).
    let resp = plain.expect("Go answers plain HTTP on a TLS port with a 400");
    assert_eq!(resp.status().as_u16(), 400, "{resp:?}");
    let err = untrusted.expect_err("a client without the test CA must fail the handshake");
    assert!(err.is_connect(), "{err:?}");
}

#[test]
fn private_registries_start_fast_and_stop_cleanly() {
    for opts in [
        RegistryOptions::plain(),
        RegistryOptions::tls_basic("bob", "hunter2"),
    ] {
        let started = Instant::now();
        let reg = Registry::start(opts.clone());
        let elapsed = started.elapsed();
        eprintln!("Registry::start({opts:?}) took {elapsed:?}");
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        let pid = reg.pid();
        let dir = reg.dir().to_path_buf();
        assert!(pid != 0 && !process_gone(pid));
        assert!(reg.requests().iter().any(|r| r.path == "/v2/"));
        drop(reg);
        wait_gone(pid, &dir);
    }
}

#[tokio::test]
async fn harness_is_usable_from_async_tests() {
    let reg = plain_registry();
    let digest = reg.push_oci_manifest("selftest/async", "v1");
    let head = reg.head_manifest("selftest/async", "v1", media::ACCEPT_ALL, None);
    assert_eq!(head.digest, Some(digest));
}

#[test]
fn access_log_lines_parse() {
    let line = r#"127.0.0.1 - - [30/Nov/2026:01:16:06 +0000] "HEAD /v2/foo/bar/manifests/v1?x=1 HTTP/1.1" 404 92 "" "curl/7.88.1""#;
    assert_eq!(
        crate::common::registry::parse_access_line(line),
        Some(Request {
            method: "HEAD".into(),
            path: "/v2/foo/bar/manifests/v1?x=1".into(),
            status: 404,
        })
    );
    let h2 =
        r#"127.0.0.1 - - [30/Nov/2026:01:16:06 +0000] "GET /v2/ HTTP/2.0" 401 87 "" "reqwest""#;
    assert_eq!(
        crate::common::registry::parse_access_line(h2).map(|r| (r.path, r.status)),
        Some(("/v2/".to_string(), 401))
    );
    assert_eq!(
        crate::common::registry::parse_access_line(
            r#"time="x" level=info msg="listening on 127.0.0.1:1""#
        ),
        None
    );
}

/// Helper for the next test: runs only when invoked by it (as a separate process).
#[test]
#[ignore = "helper process of shared_registries_do_not_outlive_the_test_process"]
fn leak_probe_child() {
    if std::env::var_os("PULLCHECK_LEAK_PROBE").is_none() {
        return;
    }
    for reg in [plain_registry(), tls_basic_registry()] {
        println!("LEAK_PROBE {} {}", reg.pid(), reg.dir().display());
    }
}

#[test]
fn shared_registries_do_not_outlive_the_test_process() {
    let exe = std::env::current_exe().expect("current test binary");
    let out = Command::new(exe)
        .args([
            "harness::leak_probe_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PULLCHECK_LEAK_PROBE", "1")
        .output()
        .expect("run the probe process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let probes: Vec<(u32, &Path)> = stdout
        .lines()
        .filter_map(|l| Some(&l[l.find("LEAK_PROBE ")? + "LEAK_PROBE ".len()..]))
        .map(|l| {
            let (pid, dir) = l.split_once(' ').expect("pid dir");
            (pid.parse().expect("pid"), Path::new(dir))
        })
        .collect();
    assert_eq!(probes.len(), 2, "{stdout}");
    for (pid, dir) in probes {
        assert!(pid != 0);
        wait_gone(pid, dir);
    }
}

/// What distribution 2.8.2 answers depending on `Accept` (pinned here so that tests of pullcheck
/// can rely on it — and notice if the registry version changes).
#[test]
fn distribution_2_8_accept_quirks() {
    let reg = plain_registry();
    let repo = "selftest/accept-quirks";
    let oci = reg.push_oci_manifest(repo, "oci");
    let docker = reg.push_docker_schema2(repo, "docker");
    let index = reg.push_oci_index(repo, "index", &["linux/amd64", "linux/arm64/v8"]);
    let list =
        reg.push_docker_manifest_list_detailed(repo, "list", &["linux/arm64/v8", "linux/amd64"]);
    let head = |tag: &str, accept: &str| reg.head_manifest(repo, tag, accept, None);

    // OCI manifests and indexes are only served to clients that accept their exact type:
    // 404 MANIFEST_UNKNOWN otherwise, even for `*/*` or no Accept at all.
    for accept in [
        "",
        "*/*",
        media::DOCKER_MANIFEST,
        media::DOCKER_MANIFEST_LIST,
        media::OCI_INDEX,
    ] {
        assert_eq!(head("oci", accept).status, 404, "oci, Accept {accept:?}");
    }
    assert_eq!(head("oci", media::OCI_MANIFEST).digest, Some(oci));
    for accept in [
        "",
        "*/*",
        media::OCI_MANIFEST,
        media::DOCKER_MANIFEST,
        media::DOCKER_MANIFEST_LIST,
    ] {
        assert_eq!(
            head("index", accept).status,
            404,
            "index, Accept {accept:?}"
        );
    }
    assert_eq!(head("index", media::OCI_INDEX).digest, Some(index));

    // A Docker schema 2 manifest asked for without its type is converted on the fly to a signed
    // schema 1 manifest: 200, but another digest and media type.
    let converted = head("docker", "");
    assert_eq!(converted.status, 200);
    assert_eq!(
        converted.content_type.as_deref(),
        Some("application/vnd.docker.distribution.manifest.v1+prettyjws")
    );
    assert_ne!(converted.digest.as_deref(), Some(docker.as_str()));
    assert_eq!(head("docker", media::DOCKER_MANIFEST).digest, Some(docker));

    // A Docker manifest list asked for with schema 2 but not list: the linux/amd64 child.
    let amd64 = &list.children[1].1;
    let child = head("list", media::DOCKER_MANIFEST);
    assert_eq!(child.digest.as_ref(), Some(amd64));
    assert_eq!(child.content_type.as_deref(), Some(media::DOCKER_MANIFEST));
    assert_eq!(
        head("list", media::DOCKER_MANIFEST_LIST).digest,
        Some(list.digest)
    );
}
