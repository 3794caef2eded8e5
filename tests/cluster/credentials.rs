//! Pull secrets on the real kubelet: the TLS registry with distribution's token auth, a real
//! `kubernetes.io/dockerconfigjson` Secret in `imagePullSecrets` (mounted into pullcheck by
//! inject), and the kubelet's own pull of the same image as the oracle.

use crate::common::{ALICE, ALICE_PASSWORD, token_registry};
use crate::harness::{cluster, condition, minutes, wait_for};
use crate::jobs::{injected, job_with, pulled_always, wait_job};

#[test]
fn pull_secret_on_the_token_registry_agrees_with_the_kubelet() {
    let c = cluster();
    let registry = token_registry();
    let host = registry.host();
    let ca = registry.ca_pem_path().expect("CA").to_path_buf();
    let image = c.copy_tools_into(registry, "private/creds-tools:1");
    c.trust_registry(&host, &ca);

    let ns = c.namespace("pc-creds");
    for (name, password) in [("regcred", ALICE_PASSWORD), ("badcred", "not-the-password")] {
        c.pull_secret(&ns.name, name, &host, ALICE, password);
    }
    c.kubectl(&[
        "create",
        "configmap",
        "registry-ca",
        "-n",
        &ns.name,
        &format!("--from-file=ca.crt={}", ca.display()),
    ]);

    let inject_ca = |yaml: &str| {
        injected(
            yaml,
            &["--ca-configmap", "registry-ca"],
            &["--ca-file", "/etc/pullcheck/ca/ca.crt"],
        )
    };
    // `Always`: the kubelet asks the registry with the secret every time. With `IfNotPresent` it
    // starts an image it already holds whatever the secret says (the kubelet re-checks
    // credentials for cached images only with the KubeletEnsureSecretPulledImages gate, off by
    // default in 1.34), which is what `inject --node-images` is for.
    let job = |name: &str, secret: &str| {
        pulled_always(job_with(
            name,
            &image,
            0,
            &format!("      imagePullSecrets: [{{name: {secret}}}]\n"),
        ))
    };
    c.apply(&ns.name, &inject_ca(&job("good", "regcred")));
    c.apply(&ns.name, &inject_ca(&job("bad", "badcred")));
    c.apply(&ns.name, &job("good-without", "regcred"));
    c.apply(&ns.name, &job("bad-without", "badcred"));

    // The right password: pullcheck says ok, and the kubelet pulls and runs the same image.
    wait_job(&ns.name, "good", "Complete");
    let init = &c.job_pods(&ns.name, "good")[0]["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["exitCode"], 0, "{init}");
    wait_job(&ns.name, "good-without", "Complete");

    // The wrong password: exit 5 fails the Job; the kubelet's own pull is refused too.
    let bad = wait_job(&ns.name, "bad", "Failed");
    assert_eq!(
        condition(&bad, "Failed").unwrap()["reason"],
        "PodFailurePolicy"
    );
    let init = &c.job_pods(&ns.name, "bad")[0]["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["exitCode"], 5, "{init}");
    let message = init["state"]["terminated"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(!message.contains("not-the-password"), "{message}");
    let waiting = wait_for("bad-without waiting on its pull", minutes(3), || {
        let pods = c.job_pods(&ns.name, "bad-without");
        let state = pods
            .first()
            .map(|p| p["status"]["containerStatuses"][0]["state"].clone());
        match state {
            Some(s)
                if s["waiting"]["reason"] == "ErrImagePull"
                    || s["waiting"]["reason"] == "ImagePullBackOff" =>
            {
                Ok(s["waiting"].clone())
            }
            other => Err(format!("{other:?}")),
        }
    });
    println!("kubelet with the wrong password: {waiting}");
}
