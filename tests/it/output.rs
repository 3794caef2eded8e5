//! What a person sees on the terminal and in a pod's log, beyond the report itself: warnings
//! that are news and only then, and the one warning that must not scroll past.

use crate::common::{output_with_stdin, plain_registry, pullcheck_cmd};

/// One run of the binary: exit code, stdout, stderr.
struct Seen {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `pullcheck ARGS` with `stdin`, no credentials or termination log from the machine, and no
/// node name from the environment.
fn run(args: &[&str], stdin: &str) -> Seen {
    let mut cmd = pullcheck_cmd();
    cmd.args(args)
        .env_remove("DOCKER_CONFIG")
        .env_remove("PULLCHECK_NODE_NAME")
        .env_remove("PULLCHECK_INJECT_IMAGE")
        .env("PULLCHECK_SECRETS_DIR", "/nonexistent/pullcheck-secrets")
        .env("PULLCHECK_TERMINATION_LOG", "");
    let out = output_with_stdin(&mut cmd, stdin.as_bytes());
    Seen {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn a_pod_specs_if_not_present_images_without_a_node_are_checked_without_a_warning() {
    let reg = plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("output/app", "v1");
    // A tag, no imagePullPolicy: the API server's default is IfNotPresent.
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - {{name: c, image: '{host}/output/app:v1'}}\n"
    );
    let seen = run(
        &[
            "check",
            "--plain-http",
            &host,
            "--pod-spec",
            "-",
            "-o",
            "json",
        ],
        &pod,
    );
    assert_eq!(seen.code, Some(0), "{}{}", seen.stdout, seen.stderr);
    let json: serde_json::Value = serde_json::from_str(&seen.stdout).unwrap();
    assert_eq!(json["images"][0]["pull_policy"], "IfNotPresent", "{json:#}");
    assert!(
        !seen.stderr.contains("node images not looked up"),
        "no node look-up was asked for: {}",
        seen.stderr
    );
    // Asked for (--if-not-present) but impossible: said once.
    let image = format!("{host}/output/app:v1");
    let seen = run(
        &["check", "--plain-http", &host, "--if-not-present", &image],
        "",
    );
    assert_eq!(seen.code, Some(0), "{}{}", seen.stdout, seen.stderr);
    assert_eq!(
        seen.stderr.matches("node images not looked up").count(),
        1,
        "{}",
        seen.stderr
    );
}

#[test]
fn inject_with_the_default_image_warns_last_and_framed() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  containers:\n  - {name: a, image: nginx:1.27}\n";
    let seen = run(&["inject"], pod);
    assert_eq!(seen.code, Some(0), "{}", seen.stderr);
    let lines: Vec<&str> = seen.stderr.lines().collect();
    assert!(lines.len() >= 3, "{}", seen.stderr);
    let [rule, warning, closing] = lines[lines.len() - 3..] else {
        unreachable!()
    };
    assert!(rule.ends_with(&"=".repeat(72)), "{}", seen.stderr);
    assert_eq!(rule, closing);
    let default = format!("pullcheck:{}", env!("CARGO_PKG_VERSION"));
    assert!(
        warning.starts_with("pullcheck: warning: --image left at its default: ")
            && warning.contains(&format!("{default}, which no registry serves")),
        "{warning}"
    );
    // Said once: not also among the other warnings.
    assert_eq!(seen.stderr.matches("which no registry serves").count(), 1);
    let seen = run(&["inject", "--image", "registry.example/pullcheck:1"], pod);
    // nginx:1.27 is IfNotPresent: the one line about the node grant, and nothing else.
    assert_eq!(
        seen.stderr,
        "pullcheck: warning: 1 pod spec has IfNotPresent images (set, or defaulted for a tag \
         other than latest): a registry miss of such an image is only a warning unless the \
         pod's service account may get nodes (examples/node-images-rbac.yaml), which lets the \
         init container prove the node lacks it\n"
    );
}
