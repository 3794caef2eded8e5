//! The corpus of real-world manifests (`tests/fixtures/manifests/`, one file per framework kind
//! and style, written from each project's API reference): for every file, `inject` exits 0;
//! every object (custom resources' pod specs wrapped in a Pod) that validated before still
//! validates with `kubernetes-validate --strict`; the output, read as kubectl reads YAML (YAML
//! 1.1, here PyYAML), is the input plus the init container and its volumes, nothing else;
//! injecting twice is injecting once; and `check --pod-spec` finds exactly the images `inject`
//! listed.

use crate::common::{Run, output_with_stdin, pullcheck};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const IMAGE: &str = "registry.example.com/pullcheck:0.1.0";
/// The Kubernetes version of the schemas (image volumes are in from 1.31).
const KUBERNETES_VERSION: &str = "1.31.0";

/// Loads YAML (PyYAML: YAML 1.1, as kubectl's go-yaml) or JSON files into JSON, and validates
/// objects with kubernetes-validate's library.
const HELPER: &str = r#"
import json, sys
mode = sys.argv[1]
data = json.load(sys.stdin)
out = []
if mode == "load":
    import yaml
    for path in data:
        text = open(path, encoding="utf-8").read().lstrip("\ufeff")
        if text.lstrip().startswith(("{", "[")):
            dec, i, docs = json.JSONDecoder(), 0, []
            while True:
                while i < len(text) and text[i].isspace():
                    i += 1
                if i >= len(text):
                    break
                value, i = dec.raw_decode(text, i)
                docs.append(value)
        else:
            docs = list(yaml.safe_load_all(text))
        out.append(docs)
    print(json.dumps(out, default=str))
else:
    import kubernetes_validate
    for obj in data:
        try:
            kubernetes_validate.validate(obj, mode.split(":", 1)[1], strict=True)
            out.append(None)
        except Exception as e:
            out.append(str(e)[:500])
    print(json.dumps(out))
"#;

fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin");
    if venv.join("kubernetes-validate").exists() {
        return venv.join("python");
    }
    PathBuf::from("python3")
}

fn helper(mode: &str, input: &Value) -> Value {
    let mut cmd = Command::new(python());
    cmd.args(["-c", HELPER, mode]);
    let out = output_with_stdin(&mut cmd, input.to_string().as_bytes());
    assert!(
        out.status.success(),
        "the Python helper failed (it needs PyYAML and kubernetes-validate==1.37.0: \
         `python3 -m venv target/venv && target/venv/bin/pip install kubernetes-validate==1.37.0`):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn inject(args: &[&str], input: &str) -> Run {
    pullcheck().inject().args(args).stdin(input).run_utf8()
}

/// The value at a reader path (`spec.templates[2]`, `items[0].spec`, `[1].spec`).
fn at<'a>(mut v: &'a Value, path: &str) -> Option<&'a Value> {
    if path == "." {
        return Some(v);
    }
    for part in path.split('.') {
        let (key, rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            v = v.get(key)?;
        }
        for index in rest.split('[').filter(|s| !s.is_empty()) {
            v = v.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(v)
}

/// The path without its last segment.
fn parent(path: &str) -> &str {
    path.rfind('.').map_or("", |i| &path[..i])
}

const BUILT_IN: [&str; 3] = ["v1", "apps/v1", "batch/v1"];

/// What kubernetes-validate checks in one input: built-in objects whole (Lists expanded), and
/// for custom resources, each pod spec the reader finds wrapped in a Pod (Argo templates and
/// Spark drivers and executors: their init containers and the volumes they may mount).
fn objects(text: &str, docs: &[Value]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    fn built_in(doc: &Value, label: String, out: &mut Vec<(String, Value)>) {
        let kind = doc["kind"].as_str().unwrap_or("");
        if kind.ends_with("List") {
            for (i, item) in doc["items"].as_array().into_iter().flatten().enumerate() {
                built_in(item, format!("{label} item {i}"), out);
            }
        } else if BUILT_IN.contains(&doc["apiVersion"].as_str().unwrap_or("")) {
            out.push((label, doc.clone()));
        }
    }
    for (i, doc) in docs.iter().enumerate() {
        if !doc.is_null() {
            built_in(doc, format!("document {}", i + 1), &mut out);
        }
    }
    let found = pullcheck::manifests::read(text, "corpus").unwrap();
    for spec in &found.pod_specs {
        let o = &spec.origin;
        if BUILT_IN.contains(&o.api_version.as_str()) {
            continue;
        }
        let doc = &docs[o.document - 1];
        let node = at(doc, &o.path).unwrap_or_else(|| panic!("{o}: path not in the document"));
        let label = o.to_string();
        let pod_spec = if o.api_version.starts_with("argoproj.io/")
            || o.api_version.starts_with("sparkoperator.k8s.io/")
        {
            let holder = at(doc, parent(&o.path)).unwrap();
            let mut spec = json!({"containers": [{"name": "main", "image": "main"}]});
            if let Some(inits) = node.get("initContainers") {
                spec["initContainers"] = inits.clone();
            }
            if let Some(volumes) = holder.get("volumes") {
                spec["volumes"] = volumes.clone();
            }
            spec
        } else {
            node.clone()
        };
        out.push((
            label,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "wrapped"}, "spec": pod_spec}),
        ));
    }
    out
}

/// The images of every injected init container: `PULLCHECK_IMAGES` and the images passed as
/// arguments after `check` (with no other check arguments in this run; a `--` before images
/// that start with '-' ends the options, and is no image).
fn injected_images(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            if map.get("name").and_then(Value::as_str) == Some("pullcheck")
                && let Some(env) = map.get("env").and_then(Value::as_array)
            {
                for e in env {
                    if e["name"] == "PULLCHECK_IMAGES" {
                        out.extend(
                            e["value"]
                                .as_str()
                                .unwrap()
                                .split_whitespace()
                                .map(String::from),
                        );
                    }
                    // Written by default for a pod with IfNotPresent images.
                    if e["name"] == "PULLCHECK_IMAGES_IF_NOT_PRESENT" {
                        out.extend(
                            e["value"]
                                .as_str()
                                .unwrap()
                                .split(',')
                                .filter(|i| !i.is_empty())
                                .map(String::from),
                        );
                    }
                }
                let args = map["args"].as_array().unwrap();
                out.extend(
                    args.iter()
                        .skip(1)
                        .map(|a| a.as_str().unwrap().to_string())
                        .filter(|a| a != "--"),
                );
                return;
            }
            for value in map.values() {
                injected_images(value, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| injected_images(i, out)),
        _ => {}
    }
}

/// The images `pullcheck check --pod-spec FILE` would check, from the same configuration code.
fn check_images(path: &Path) -> BTreeSet<String> {
    use clap::Parser;
    let cli = pullcheck::cli::Cli::try_parse_from([
        "pullcheck",
        "check",
        "--pod-spec",
        path.to_str().unwrap(),
    ])
    .unwrap();
    let pullcheck::cli::Command::Check(args) = cli.command else {
        unreachable!()
    };
    let config = pullcheck::config::Config::from_args(args, &mut std::io::empty())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    config.images.into_iter().collect()
}

#[test]
fn corpus_is_large_and_covers_every_framework() {
    let files = corpus();
    assert!(files.len() >= 40, "{} files", files.len());
    let all: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    for kind in [
        "kind: Workflow",
        "kind: WorkflowTemplate",
        "kind: ClusterWorkflowTemplate",
        "kind: CronWorkflow",
        "kind: SparkApplication",
        "kind: ScheduledSparkApplication",
        "kind: RayCluster",
        "kind: RayJob",
        "kind: RayService",
        "kind: PyTorchJob",
        "kind: TFJob",
        "kind: MPIJob",
        "kind: XGBoostJob",
        "kind: PaddleJob",
        "kind: JAXJob",
        "kind: TrainingRuntime",
        "kind: ClusterTrainingRuntime",
        "kind: TrainJob",
        "kind: JobSet",
        "batch.volcano.sh",
        "kueue.x-k8s.io/queue-name",
        "kind: PodTemplate",
        "kind: TaskRun",
        "kind: PipelineRun",
        "kind: Policy",
        "mutations.gatekeeper.sh",
        "serving.knative.dev",
        "\"kind\": \"List\"",
        "kind: List",
        "restartPolicy: Always",
        "defaultMode: 0440",
        "&labels",
        "<<: *limits",
        "kubernetes.io/os: windows",
        "<CHANGE ME>",
        "\"-e REPLACE ME\"",
        "image:\n      reference:",
    ] {
        assert!(all.contains(kind), "no fixture has {kind:?}");
    }
}

#[test]
fn every_corpus_file_is_injected_without_changing_anything_else() {
    let files = corpus();
    let dir = tempfile::tempdir().unwrap();
    let runs: [&[&str]; 2] = [
        &["--image", IMAGE, "--secret", "extra-cred"],
        &[
            "--image",
            IMAGE,
            "--job-failure-policy",
            "--ca-configmap",
            "corp-ca",
            "--node-images",
            "--hosts-configmap",
            "node-hosts",
            "--",
            "--ca-file",
            "/etc/pullcheck/ca/corp.crt",
        ],
    ];
    // (fixture, run, input text, output text, output path, every pod spec injected)
    let mut cases = Vec::new();
    let mut paths = Vec::new();
    for file in &files {
        let input = std::fs::read_to_string(file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for (r, args) in runs.iter().enumerate() {
            let out = inject(args, &input);
            assert_eq!(out.code, 0, "{name} {args:?}: {}", out.stderr);
            let twice = inject(args, &out.stdout);
            assert_eq!(twice.code, 0, "{name}: {}", twice.stderr);
            assert_eq!(
                twice.stdout, out.stdout,
                "{name} {args:?}: the second run changed it"
            );
            let path = dir.path().join(format!("{r}-{name}"));
            std::fs::write(&path, &out.stdout).unwrap();
            paths.push(path.clone());
            cases.push((name.clone(), r, input.clone(), out.stdout, path));
        }
    }
    // Every file read as kubectl reads it: inputs first, then outputs.
    let mut load: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    load.extend(paths.iter().map(|p| p.display().to_string()));
    let loaded = helper("load", &json!(load));
    let loaded = loaded.as_array().unwrap();
    let (inputs, outputs) = loaded.split_at(files.len());

    let mut to_validate = Vec::new();
    let mut pairs = Vec::new();
    for (i, (name, r, input, output, path)) in cases.iter().enumerate() {
        let before = inputs[i / runs.len()].as_array().unwrap();
        let after = outputs[i].as_array().unwrap();
        assert_eq!(before.len(), after.len(), "{name}: documents");
        if *r == 0 {
            // Nothing else changed, as kubectl reads it (octal, 1_000, yes, anchors, merges).
            for (d, (b, a)) in before.iter().zip(after).enumerate() {
                assert_eq!(
                    crate::common::strip_pullcheck(a),
                    crate::common::strip_pullcheck(b),
                    "{name}: document {} changed beyond the init container",
                    d + 1
                );
            }
            // check --pod-spec finds exactly the images inject listed: for every fixture,
            // Windows pods and placeholders included (one manifest, one answer).
            let mut listed = BTreeSet::new();
            for doc in after {
                injected_images(doc, &mut listed);
            }
            assert_eq!(
                check_images(path),
                listed,
                "{name}: check and inject disagree"
            );
        } else {
            for doc in after {
                assert_job_failure_policy(name, doc);
                assert_ca_mounted(name, doc);
            }
        }
        let objects_before = objects(input, before);
        let objects_after = objects(output, after);
        assert_eq!(objects_before.len(), objects_after.len(), "{name}: objects");
        let start = to_validate.len();
        for (_, o) in objects_before.iter().chain(&objects_after) {
            to_validate.push(o.clone());
        }
        pairs.push((name.clone(), *r, start, objects_before, objects_after));
    }
    let verdicts = helper(
        &format!("validate:{KUBERNETES_VERSION}"),
        &json!(to_validate),
    );
    let verdicts = verdicts.as_array().unwrap();
    let mut validated = 0;
    for (name, r, start, before, after) in &pairs {
        let n = before.len();
        for (j, (label, _)) in after.iter().enumerate() {
            let was = &verdicts[start + j];
            let is = &verdicts[start + n + j];
            if was.is_null() {
                validated += 1;
                assert!(
                    is.is_null(),
                    "{name} (run {r}): {label} validated before inject, not after: {is}\n{:#}",
                    after[j].1
                );
            }
        }
    }
    assert!(validated > 100, "only {validated} objects validated");
}

/// With `--job-failure-policy`, every batch/v1 Job and CronJob job template has the rules and
/// `restartPolicy: Never`.
fn assert_job_failure_policy(name: &str, doc: &Value) {
    let job_spec = match (doc["apiVersion"].as_str(), doc["kind"].as_str()) {
        (Some("batch/v1"), Some("Job")) => &doc["spec"],
        (Some("batch/v1"), Some("CronJob")) => &doc["spec"]["jobTemplate"]["spec"],
        (_, Some(kind)) if kind.ends_with("List") => {
            for item in doc["items"].as_array().into_iter().flatten() {
                assert_job_failure_policy(name, item);
            }
            return;
        }
        _ => return,
    };
    let restart = job_spec["template"]["spec"]["restartPolicy"].as_str();
    if restart.is_some_and(|p| p != "Never") {
        assert!(
            job_spec
                .get("podFailurePolicy")
                .is_none_or(|p| { !p.to_string().contains("pullcheck") })
        );
        return;
    }
    assert_eq!(restart, Some("Never"), "{name}");
    let rules = job_spec["podFailurePolicy"]["rules"].as_array().unwrap();
    let ours: Vec<&Value> = rules
        .iter()
        .filter(|r| r["onExitCodes"]["containerName"] == "pullcheck")
        .collect();
    // The proven codes alone: the init container only warns on 6 and 8 (what inject writes
    // by default), so no rule is needed for them.
    assert_eq!(ours.len(), 1, "{name}: {rules:?}");
    assert_eq!(ours[0]["action"], "FailJob");
    assert_eq!(ours[0]["onExitCodes"]["values"], json!([3, 4, 5, 7]));
}

/// With `--ca-configmap corp-ca -- --ca-file /etc/pullcheck/ca/corp.crt`, every injected init
/// container mounts that file from the ConfigMap, whose volume is next to it; with
/// `--node-images --hosts-configmap node-hosts`, it has the node's name and mounts the hosts
/// directory.
fn assert_ca_mounted(name: &str, v: &Value) {
    match v {
        Value::Object(map) => {
            if map.get("name").and_then(Value::as_str) == Some("pullcheck")
                && map.contains_key("env")
            {
                let mounts = map["volumeMounts"].as_array().unwrap();
                assert!(
                    mounts.iter().any(|m| m["name"] == "pullcheck-ca"
                        && m["mountPath"] == "/etc/pullcheck/ca/corp.crt"
                        && m["subPath"] == "corp.crt"),
                    "{name}: {mounts:?}"
                );
                assert!(
                    mounts.iter().any(|m| m["name"] == "pullcheck-hosts"),
                    "{name}: {mounts:?}"
                );
                // The node is looked up for a pod with an IfNotPresent image, and only then
                // (JobSet's `<CHANGE ME>` placeholder alone is an invalid reference whatever
                // the node holds).
                let env = map["env"].as_array().unwrap();
                assert_eq!(
                    env.iter().any(|e| e["name"] == "PULLCHECK_NODE_NAME"
                        && e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"),
                    env.iter()
                        .any(|e| e["name"] == "PULLCHECK_IMAGES_IF_NOT_PRESENT"),
                    "{name}: {env:?}"
                );
                let args = map["args"].as_array().unwrap();
                assert!(args.iter().any(|a| a == "--hosts-dir"), "{name}: {args:?}");
                assert_eq!(
                    args[..3],
                    json!(["check", "--ca-file", "/etc/pullcheck/ca/corp.crt"])
                        .as_array()
                        .unwrap()[..],
                    "{name}"
                );
                return;
            }
            if let Some(volumes) = map.get("volumes").and_then(Value::as_array)
                && let Some(ca) = volumes.iter().find(|v| v["name"] == "pullcheck-ca")
            {
                assert_eq!(ca["configMap"]["name"], "corp-ca", "{name}");
            }
            map.values().for_each(|v| assert_ca_mounted(name, v));
        }
        Value::Array(items) => items.iter().for_each(|v| assert_ca_mounted(name, v)),
        _ => {}
    }
}

#[test]
fn the_kyverno_example_is_a_policy_and_is_left_as_it_is() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kyverno-clusterpolicy.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let out = inject(&["--image", IMAGE], &text);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, text);
    assert!(
        out.stderr.contains("skipped: a policy object"),
        "{}",
        out.stderr
    );
}

#[test]
fn check_arguments_are_checked_at_inject_time() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: a:1}]\n";
    let out = inject(&["--image", IMAGE, "--", "--timout", "30s"], pod);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("'--timout'") && out.stderr.contains("--timeout"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
    let out = inject(&["--image", IMAGE, "--ca-configmap", "ca"], pod);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--ca-file"), "{}", out.stderr);
}

#[test]
fn a_native_sidecars_placeholder_is_one_invalid_image_for_check_and_inject_alike() {
    // JobSet's in-place restart example: a native sidecar whose image is `<CHANGE ME>`. The
    // kubelet refuses that reference (InvalidImageName) and never starts the sidecar, so the
    // pod is stuck without pullcheck too: both faces check it and count it. The sidecar with
    // imagePullPolicy Never is left out by both, and inject says so.
    let reg = crate::common::plain_registry();
    let host = reg.host();
    reg.push_oci_manifest("sidecar/worker", "v1");
    let worker = format!("{host}/sidecar/worker:v1");
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: in-place}}\nspec:\n  template:\n    \
         spec:\n      restartPolicy: Never\n      initContainers:\n      \
         - {{name: agent, image: <CHANGE ME>, restartPolicy: Always}}\n      \
         - {{name: cache, image: 'local/cache:dev', restartPolicy: Always, imagePullPolicy: Never}}\n      \
         containers:\n      - {{name: worker, image: '{worker}', imagePullPolicy: Always}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, &job).unwrap();
    let expected = BTreeSet::from([
        ("<CHANGE ME>".to_string(), "invalid_reference".to_string()),
        (worker.clone(), "ok".to_string()),
    ]);

    // check --pod-spec.
    assert_eq!(
        check_images(&path),
        BTreeSet::from(["<CHANGE ME>".to_string(), worker.clone()])
    );
    let checked = pullcheck()
        .check(&["-o", "json", "--plain-http", &host, "--pod-spec"])
        .arg(&path)
        .run();
    assert_eq!(checked.code, 3, "{}{}", checked.stdout, checked.stderr);
    assert_eq!(
        checked.statuses().into_iter().collect::<BTreeSet<_>>(),
        expected
    );

    // inject: the placeholder is one argument, the worker in PULLCHECK_IMAGES, and the
    // sidecar left out is named.
    let out = inject(&["--image", IMAGE], &job);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "pullcheck: note: stdin: document 1: Job/in-place spec.template.spec: not checked: \
             sidecar cache \"local/cache:dev\": imagePullPolicy Never, so the kubelet never \
             pulls it and the node must already hold it (check --pod-spec leaves it out too)"
        ),
        "{}",
        out.stderr
    );
    let injected: Value = serde_yaml_ng::from_str(&out.stdout).unwrap();
    let init = &injected["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(init["name"], "pullcheck");
    assert_eq!(init["args"], json!(["check", "<CHANGE ME>"]));
    // The init container's own command line and environment, run as the kubelet would; the
    // test's flags first (a hostNetwork pod's, so that the registry on loopback is asked).
    let mut cmd = pullcheck()
        .check(&["-o", "json", "--termination-log", ""])
        .args(["--plain-http", &host, "--network", "host"])
        .args(
            init["args"].as_array().unwrap()[1..]
                .iter()
                .map(|a| a.as_str().unwrap()),
        )
        .without_env_prefix("PULLCHECK_");
    for e in init["env"].as_array().unwrap() {
        if let Some(v) = e["value"].as_str() {
            cmd = cmd.env(e["name"].as_str().unwrap(), v);
        }
    }
    let ran = cmd.run();
    assert_eq!(ran.code, 3, "{}{}", ran.stdout, ran.stderr);
    assert_eq!(
        ran.statuses().into_iter().collect::<BTreeSet<_>>(),
        expected
    );
}

#[test]
fn placeholder_image_stays_one_image() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/manifests/jobset-placeholder.yaml");
    let out = inject(&["--image", IMAGE, "-f", path.to_str().unwrap()], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("args: [check, \"<CHANGE ME>\"]"),
        "{}",
        out.stdout
    );
    assert_eq!(
        check_images(&path),
        BTreeSet::from(["<CHANGE ME>".to_string()])
    );
}
