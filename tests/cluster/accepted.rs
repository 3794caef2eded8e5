//! The API server accepts what inject writes: every fixture of `tests/fixtures/manifests/` and
//! every `examples/*.yaml`, put through `pullcheck inject`, is accepted by `kubectl apply
//! --dry-run=server`, every object of it. Custom resources, which the API server
//! cannot check without their CRDs, stay with `kubernetes-validate` (tests/it/manifests.rs).
//! The Job example is also applied for real and runs.

use crate::harness::{Cluster, Namespace, cluster, repo};
use crate::jobs::wait_job;
use std::collections::BTreeSet;

/// `kubectl apply --dry-run=server` of `manifest` in `ns`: the objects accepted, and the kinds
/// refused because the cluster does not serve them (custom resources). Any other refusal fails.
/// Objects that name no namespace go to `default` (nothing is created: a dry run); a namespace
/// a manifest names is made for the test, into `made`.
fn dry_run(
    c: &'static Cluster,
    made: &mut Vec<Namespace>,
    what: &str,
    manifest: &str,
) -> Result<(Vec<String>, BTreeSet<String>), String> {
    // `create`, since `apply` refuses `generateName`; `apply` where an object exists already
    // (the node-images test applies the RBAC example for real).
    let mut verb = "create";
    loop {
        let out = c.kubectl_output(
            &[verb, "--dry-run=server", "-f", "-", "-o", "name"],
            Some(manifest),
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if verb == "create" && stderr.contains("(AlreadyExists)") {
            verb = "apply";
            continue;
        }
        if let Some(missing) = stderr
            .split("namespaces \"")
            .nth(1)
            .and_then(|s| s.split('"').next())
        {
            if stderr.contains("not found") && made.iter().all(|n| n.name != missing) {
                made.push(c.namespace(missing));
                continue;
            }
        }
        if stderr.contains("error parsing STDIN") {
            return Err(stderr);
        }
        let accepted = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        let mut custom = BTreeSet::new();
        for line in stderr.lines().filter(|l| {
            !l.trim().is_empty()
                && l.trim() != "ensure CRDs are installed first"
                && !l.starts_with("Warning:")
        }) {
            let unserved =
                line.contains("no matches for kind") || line.contains("resource mapping not found");
            assert!(
                unserved,
                "{what}: the API server refused it:\n{stderr}\n--- the manifest:\n{manifest}"
            );
            custom.insert(
                line.split("kind \"")
                    .nth(1)
                    .and_then(|s| s.split('"').next())
                    .unwrap_or(line)
                    .to_string(),
            );
        }
        return Ok((accepted, custom));
    }
}

#[test]
fn the_api_server_accepts_every_fixture_and_example_inject_writes() {
    let c = cluster();
    let mut made = Vec::new();
    let mut files: Vec<_> = ["tests/fixtures/manifests", "examples"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "json"))
        .collect();
    files.sort();
    let image = c.pullcheck_image();
    let (mut objects, mut custom_files, mut unreadable) = (0, Vec::new(), Vec::new());
    for path in &files {
        let name = path.strip_prefix(repo()).unwrap().display().to_string();
        let input = std::fs::read_to_string(path).unwrap();
        let out = {
            let mut cmd = crate::common::pullcheck_cmd();
            cmd.args(["inject", "--image", &image, "--job-failure-policy"]);
            crate::common::output_with_stdin(&mut cmd, input.as_bytes())
        };
        if !out.status.success() {
            // Refused by inject with exit 2 and a reason (an unrendered Helm template, say):
            // nothing reaches the API server. tests/it/manifests.rs pins those cases.
            assert_eq!(
                out.status.code(),
                Some(2),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        }
        let output = String::from_utf8_lossy(&out.stdout).into_owned();
        // The input itself need not be accepted: a Job whose podFailurePolicy names the
        // container inject adds is refused until it is there (examples/cronjob.yaml says so).
        let (after, custom_after) =
            match dry_run(c, &mut made, &format!("{name} after inject"), &output) {
                Ok(result) => result,
                Err(parse_error) => {
                    // kubectl cannot read it: then neither could it read the input.
                    let input_error = dry_run(c, &mut made, &format!("{name} as written"), &input)
                    .expect_err(&format!(
                        "{name}: kubectl reads the input but not inject's output:\n{parse_error}"
                    ));
                    unreadable.push(format!("{name} ({})", input_error.trim()));
                    continue;
                }
            };
        objects += after.len();
        if !custom_after.is_empty() {
            custom_files.push(name);
        }
    }
    assert!(objects > 40, "only {objects} built-in objects checked");
    println!(
        "dry-run=server: {objects} built-in objects from {} files accepted after inject; custom resources left to kubernetes-validate in {}",
        files.len(),
        custom_files.join(", ")
    );
    println!(
        "kubectl cannot read, before inject as after: {}",
        unreadable.join("; ")
    );
}

#[test]
fn the_job_example_runs_for_real() {
    let c = cluster();
    let ns = c.namespace("pc-example-job");
    // The example as written, with its two images pointed at this cluster's registry, the
    // trainer given a command the tools image has, and the pod on the host's network.
    let example = std::fs::read_to_string(repo().join("examples/job.yaml")).unwrap();
    let tools = c.tools_image();
    let manifest = example
        .replace("registry.example.com/pullcheck:0.1.0", &c.pullcheck_image())
        .replace(
            r#"args: ["check"]"#,
            &format!(r#"args: ["check", "--plain-http", "{}"]"#, c.registry),
        )
        .replace("registry.example.com/team/trainer:v3", &tools)
        .replace(
            r#"args: ["--epochs", "10"]"#,
            r#"command: ["sh", "-c", "echo trained"]"#,
        )
        // pullcheck reaches the registry on the host's loopback, as the kubelet does.
        .replacen(
            "      restartPolicy: Never\n",
            "      restartPolicy: Never\n      hostNetwork: true\n",
            1,
        );
    assert_ne!(manifest, example);
    c.apply(&ns.name, &manifest);
    wait_job(&ns.name, "train", "Complete");
}
