//! Mirrors and the pod's credentials on the real kubelet with containerd: the kubelet's keyring
//! hands the runtime a credential without a server address, and containerd's CRI then offers it
//! to every host of a `hosts.toml`, mirrors included. Seen here in the mirror's own token log: a
//! private mirror that needs the pod's credential serves the pull; and pullcheck, given the same
//! hosts directory and credential, says `ok` from the same mirror.

use crate::common::{ALICE, ALICE_PASSWORD, plain_registry, token_registry};
use crate::harness::{cluster, condition, minutes, wait_for};
use crate::jobs::{job_with, pulled_always, wait_job};

#[test]
fn containerd_offers_the_pods_credential_to_a_mirror() {
    let c = cluster();
    // The upstream: a plain registry of the test's own, which lacks the image. The mirror: the
    // TLS registry with token auth, where only alice may pull `private/…`.
    let upstream = plain_registry().host();
    let mirror = token_registry();
    let mirror_host = mirror.host();
    let ca = mirror.ca_pem_path().expect("CA").to_path_buf();
    let repo = "private/mirrored-tools";
    c.copy_tools_into(mirror, &format!("{repo}:1"));

    // containerd's hosts directory for the upstream: the mirror first, then the upstream itself.
    let dir = c.hosts_dir.join(&upstream);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hosts.toml"),
        format!(
            "server = \"http://{upstream}\"\n\n[host.\"https://{mirror_host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"{}\"\n\n[host.\"http://{upstream}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
            ca.display()
        ),
    )
    .unwrap();

    let ns = c.namespace("pc-mirror");
    // The pod's secret names the upstream only.
    c.pull_secret(&ns.name, "upstream-cred", &upstream, ALICE, ALICE_PASSWORD);
    let image = format!("{upstream}/{repo}:1");
    let job = pulled_always(job_with(
        "mirrored",
        &image,
        0,
        "      imagePullSecrets: [{name: upstream-cred}]\n",
    ));
    c.apply(&ns.name, &job);
    let done = wait_job(&ns.name, "mirrored", "Complete");
    assert!(condition(&done, "Complete").is_some());

    // The mirror's token server was asked with alice's credential, for the repository.
    let asked = wait_for("the mirror's token log", minutes(1), || {
        let requests = mirror
            .token_server()
            .expect("token server")
            .requests_for(repo);
        let with_alice: Vec<_> = requests
            .iter()
            .filter(|r| r.user.as_deref() == Some(ALICE) && r.status == 200)
            .cloned()
            .collect();
        if with_alice.is_empty() {
            Err(format!("{requests:#?}"))
        } else {
            Ok(with_alice)
        }
    });
    println!(
        "the mirror was offered the upstream's credential: {} token request(s) as {ALICE}",
        asked.len()
    );

    // pullcheck on the same hosts directory with the same credential, as the init container
    // would have them.
    let config = tempfile::tempdir().unwrap();
    let auth = base64_auth(&format!("{ALICE}:{ALICE_PASSWORD}"));
    std::fs::write(
        config.path().join("config.json"),
        format!(r#"{{"auths":{{"{upstream}":{{"auth":"{auth}"}}}}}}"#),
    )
    .unwrap();
    let out = crate::common::pullcheck_cmd()
        .args([
            "check",
            "-o",
            "json",
            "--plain-http",
            &upstream,
            "--hosts-dir",
        ])
        .arg(&c.hosts_dir)
        .arg("--docker-config")
        .arg(config.path().join("config.json"))
        .arg(&image)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &json["images"][0];
    assert_eq!(
        out.status.code(),
        Some(0),
        "pullcheck and the kubelet disagree: {result}"
    );
    assert_eq!(
        result["endpoint"],
        format!("https://{mirror_host}/v2"),
        "{result}"
    );
}

fn base64_auth(raw: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(raw)
}
