//! The start check meets the kubelet: for each cause pullcheck predicts, a pod without pullcheck
//! shows what the real kubelet and containerd do with it, and `check --pod-spec` on the same pod
//! spec predicts it. The kubelet is the oracle: where the two differ, the rule is wrong.
//! Also recorded, not predicted: a `workingDir` that is a file in the image.

use crate::harness::{Cluster, cluster, minutes, status_of, wait_for};
use serde_json::Value;

/// A bare Pod on the pod network (the CNI bridge), `restartPolicy: Never`.
fn pod(name: &str, image: &str, container: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: {image}
{container}"#
    )
}

/// What the kubelet says of the pod's container once it stops trying to create it or it has
/// ended: `(state, reason, message)`, where state is `waiting` or `terminated`.
fn kubelet_verdict(c: &Cluster, ns: &str, name: &str) -> (String, String, String) {
    wait_for(&format!("pod {ns}/{name} to settle"), minutes(3), || {
        let pod = c.get(ns, &format!("pod/{name}"));
        let state = pod
            .as_ref()
            .map(|p| p["status"]["containerStatuses"][0]["state"].clone());
        let settle = |s: &Value, key: &str| {
            let r = s[key]["reason"].as_str().unwrap_or_default().to_string();
            let m = s[key]["message"].as_str().unwrap_or_default().to_string();
            (key.to_string(), r, m)
        };
        match state {
            Some(s) if !s["terminated"].is_null() => Ok(settle(&s, "terminated")),
            Some(s)
                if s["waiting"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("Create") || r.starts_with("Run")) =>
            {
                Ok(settle(&s, "waiting"))
            }
            _ => Err(status_of(&pod)),
        }
    })
}

/// pullcheck's prediction for the same pod spec: the container's `(start, reason)`, and the
/// run's exit code.
fn predicted(c: &Cluster, spec: &str) -> (String, String, i32) {
    let mut cmd = crate::common::pullcheck_cmd();
    cmd.args([
        "check",
        "-o",
        "json",
        "--plain-http",
        &c.registry,
        "--pod-spec",
        "-",
    ]);
    let out = crate::common::output_with_stdin(&mut cmd, spec.as_bytes());
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let container = &json["images"][0]["containers"][0];
    (
        container["start"].as_str().unwrap_or_default().to_string(),
        container["reason"].as_str().unwrap_or_default().to_string(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn start_check_predicts_what_the_kubelet_does() {
    let c = cluster();
    let ns = c.namespace("pc-start");
    let tools = c.tools_image();
    let nobody = format!("{}/tools-nobody:1", c.registry);
    let nocmd = format!("{}/tools-nocmd:1", c.registry);
    let non_root = "    securityContext: {runAsNonRoot: true}\n";
    // (pod, image, container lines, pullcheck's reason, the kubelet's reason, its words)
    let cases = [
        (
            "runs-as-root",
            tools.as_str(),
            format!("    command: [\"true\"]\n{non_root}"),
            "runs_as_root",
            "CreateContainerConfigError",
            "container has runAsNonRoot and image will run as root",
        ),
        (
            "non-numeric-user",
            nobody.as_str(),
            format!("    command: [\"true\"]\n{non_root}"),
            "non_numeric_user",
            "CreateContainerConfigError",
            "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root",
        ),
        (
            "run-as-user-zero",
            tools.as_str(),
            "    command: [\"true\"]\n    securityContext: {runAsNonRoot: true, runAsUser: 0}\n"
                .to_string(),
            "run_as_user_zero",
            "CreateContainerConfigError",
            "container's runAsUser breaks non-root policy",
        ),
        (
            "no-command",
            nocmd.as_str(),
            String::new(),
            "no_command",
            "CreateContainerError",
            "no command specified",
        ),
    ];
    for (name, image, container, _, _, _) in &cases {
        c.apply(&ns.name, &pod(name, image, container));
    }
    let mut table = String::new();
    for (name, image, container, reason, kubelet_reason, words) in &cases {
        let spec = pod(name, image, container);
        let (state, got_reason, message) = kubelet_verdict(c, &ns.name, name);
        table.push_str(&format!(
            "| `{reason}` | {state} `{got_reason}` | {message} |\n"
        ));
        assert_eq!(got_reason, *kubelet_reason, "{name}: {message}");
        assert!(message.contains(words), "{name}: {message}");
        let (start, predicted_reason, code) = predicted(c, &spec);
        assert_eq!(
            (start.as_str(), predicted_reason.as_str()),
            ("wont_start", *reason),
            "{name}"
        );
        assert_eq!(code, 7, "{name}");
    }

    // A workingDir that is a file in the image: recorded as the kubelet reports it.
    let workdir = pod(
        "workdir-is-a-file",
        &tools,
        "    command: [\"true\"]\n    workingDir: /bin/busybox\n",
    );
    c.apply(&ns.name, &workdir);
    let (state, reason, message) = kubelet_verdict(c, &ns.name, "workdir-is-a-file");
    // Under restartPolicy Never the kubelet does not retry it: the pod ends, Failed.
    let phase = wait_for("workdir-is-a-file to end", minutes(2), || {
        let p = c.get(&ns.name, "pod/workdir-is-a-file");
        let phase = p.as_ref().map(|p| {
            p["status"]["phase"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        });
        match phase {
            Some(phase) if phase == "Failed" || phase == "Succeeded" => Ok(phase),
            _ => Err(status_of(&p)),
        }
    });
    assert_eq!(
        (state.as_str(), reason.as_str(), phase.as_str()),
        ("terminated", "StartError", "Failed"),
        "{message}"
    );
    assert!(message.contains("not a directory"), "{message}");
    table.push_str(&format!(
        "| workingDir is a file | {state} `{reason}`, phase {phase} | {message} |\n"
    ));
    println!("the kubelet's words for each cause:\n{table}");
}
