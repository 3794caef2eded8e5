//! `pullcheck inject` end to end: the real binary on the examples and on hand-made manifests.
//! Built-in kinds are validated with `kubernetes-validate --strict` (PyPI `kubernetes-validate`,
//! offline OpenAPI schemas, read with PyYAML: a YAML 1.1 reader, as kubectl's go-yaml is);
//! custom resources (PyTorchJob, JobSet, RayJob, Kyverno) are checked field by field.

use crate::common::{PULLCHECK_BIN, Run, pullcheck};
use serde_yaml_ng::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pullcheck image the examples name.
const IMAGE: &str = "registry.example.com/pullcheck:0.1.0";
/// The Kubernetes version the manifests are validated against: podFailurePolicy with
/// `onExitCodes.containerName` naming an init container is GA there.
const KUBERNETES_VERSION: &str = "1.31.0";
/// How to install the validator by hand (scripts/test.sh does it).
const KUBERNETES_VALIDATE_INSTALL: &str =
    "python3 -m venv target/venv && target/venv/bin/pip install kubernetes-validate==1.37.0";

/// Runs `pullcheck inject ARGS` with `stdin`.
fn inject(args: &[&str], stdin: &str) -> Run {
    pullcheck().inject().args(args).stdin(stdin).run_utf8()
}

/// `inject` that must succeed.
fn inject_ok(args: &[&str], stdin: &str) -> Run {
    let out = inject(args, stdin);
    assert_eq!(
        out.code, 0,
        "pullcheck inject {args:?} failed:\n{}",
        out.stderr
    );
    out
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn example(name: &str) -> String {
    std::fs::read_to_string(examples_dir().join(name)).unwrap()
}

/// The documents of YAML or JSON text (one JSON value, or YAML documents).
fn docs(text: &str) -> Vec<Value> {
    if text.trim_start().starts_with(['{', '[']) {
        let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        return stream.map(|d| d.expect("JSON output")).collect();
    }
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML output"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The value at `path`: `spec.items[2].template` style.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for part in path.split('.') {
        let (key, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            cur = cur.get(key).unwrap_or_else(|| panic!("no {key} in {path}"));
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: usize = index.trim_end_matches(']').parse().unwrap();
            cur = cur.get(i).unwrap_or_else(|| panic!("no [{i}] in {path}"));
        }
    }
    cur
}

fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not a string"))
}

fn names(list: &Value) -> Vec<String> {
    list.as_sequence()
        .map(|items| {
            items
                .iter()
                .map(|c| c["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts the pod spec at `path` has pullcheck first (and once) and returns it.
fn pullcheck_of<'a>(doc: &'a Value, path: &str) -> &'a Value {
    let spec = at(doc, path);
    let inits = names(&spec["initContainers"]);
    assert_eq!(
        inits.first().map(String::as_str),
        Some("pullcheck"),
        "{path}: init containers {inits:?}"
    );
    assert_eq!(
        inits.iter().filter(|n| *n == "pullcheck").count(),
        1,
        "{path}: {inits:?}"
    );
    &spec["initContainers"][0]
}

/// The images the init container checks, `Always` first (`PULLCHECK_IMAGES`), then
/// `IfNotPresent` (`PULLCHECK_IMAGES_IF_NOT_PRESENT`, which inject writes by default for a pod
/// that has such images), space-separated.
fn env_images(container: &Value) -> String {
    let env = container["env"].as_sequence().unwrap();
    let value = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["value"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        env.iter().any(|e| e["name"] == "PULLCHECK_IMAGES"),
        "PULLCHECK_IMAGES"
    );
    let images = value("PULLCHECK_IMAGES");
    let if_not_present = value("PULLCHECK_IMAGES_IF_NOT_PRESENT");
    images
        .split_whitespace()
        .chain(if_not_present.split(',').filter(|i| !i.is_empty()))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------------
// kubernetes-validate

/// `$KUBERNETES_VALIDATE`, else the one in `target/venv` (where the test script installs it),
/// else the one on `PATH`.
fn kubernetes_validate_command() -> String {
    if let Ok(command) = std::env::var("KUBERNETES_VALIDATE") {
        return command;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/venv/bin/kubernetes-validate");
    if venv.exists() {
        return venv.display().to_string();
    }
    "kubernetes-validate".to_string()
}

/// Validates every object of `text` (YAML or JSON, Lists expanded, since kubernetes-validate
/// has no schema for `List`) with `kubernetes-validate --strict`. Text without a List is handed
/// over as it is, so that PyYAML, a YAML 1.1 reader, reads pullcheck's own YAML.
fn kubernetes_validate(label: &str, text: &str) {
    let command = kubernetes_validate_command();
    let dir = tempfile::tempdir().unwrap();
    let documents = docs(text);
    let mut objects = Vec::new();
    for d in &documents {
        let is_list = d["kind"].as_str().is_some_and(|k| k.ends_with("List"));
        if is_list {
            objects.extend(d["items"].as_sequence().unwrap().iter().cloned());
        } else {
            objects.push(d.clone());
        }
    }
    assert!(!objects.is_empty(), "{label}: nothing to validate");
    let mut files = Vec::new();
    if objects.len() == documents.len() {
        let path = dir.path().join(format!("{label}.yaml"));
        std::fs::write(&path, text).unwrap();
        files.push(path);
    } else {
        for (i, o) in objects.iter().enumerate() {
            let path = dir.path().join(format!("{label}-{i}.json"));
            std::fs::write(&path, serde_json::to_string(o).unwrap()).unwrap();
            files.push(path);
        }
    }
    let out = Command::new(&command)
        .args(["--strict", "-k", KUBERNETES_VERSION])
        .args(&files)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {command} ({e}): the inject tests validate manifests with it; \
                 install it with `{KUBERNETES_VALIDATE_INSTALL}` (or set KUBERNETES_VALIDATE \
                 to its path)"
            )
        });
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{label}: kubernetes-validate failed:\n{report}\n--- input:\n{text}"
    );
    assert!(
        !report.contains("WARN") && !report.contains("ERROR"),
        "{label}: kubernetes-validate:\n{report}"
    );
    let passed = report.matches("passed for resource").count();
    assert_eq!(
        passed,
        objects.len(),
        "{label}: {passed} of {} objects validated:\n{report}",
        objects.len()
    );
}

// ---------------------------------------------------------------------------------------------
// Examples

#[test]
fn examples_of_built_in_kinds_and_their_injected_forms_validate() {
    for name in ["pod.yaml", "job.yaml", "cronjob.yaml"] {
        let text = example(name);
        kubernetes_validate(name, &text);
        let out = inject_ok(
            &[
                "-f",
                &examples_dir().join(name).to_string_lossy(),
                "--image",
                IMAGE,
            ],
            "",
        );
        kubernetes_validate(&format!("injected-{name}"), &out.stdout);
    }
}

#[test]
fn examples_with_the_init_container_by_hand_are_what_inject_writes() {
    // pod.yaml and job.yaml carry the init container written by hand: inject has nothing to
    // change, and writes them back byte for byte, comments included.
    for name in ["pod.yaml", "job.yaml"] {
        let text = example(name);
        let out = inject_ok(&["--image", IMAGE], &text);
        assert_eq!(out.stdout, text, "{name} is not what inject writes");
        assert!(!out.stderr.contains("restartPolicy"), "{}", out.stderr);
    }
}

#[test]
fn cronjob_example_gets_the_init_container_in_its_job_template() {
    let out = inject_ok(&["--image", IMAGE], &example("cronjob.yaml"));
    let d = &docs(&out.stdout)[0];
    let c = pullcheck_of(d, "spec.jobTemplate.spec.template.spec");
    assert_eq!(
        env_images(c),
        "registry.example.com/team/report:2024.06 registry.example.com/team/uploader:1.4"
    );
    assert_eq!(
        str_at(c, "volumeMounts[0].mountPath"),
        "/var/run/pullcheck/secrets/regcred"
    );
    // The string "yes" stays a string (kubernetes-validate above reads it with PyYAML).
    assert_eq!(
        at(
            d,
            "spec.jobTemplate.spec.template.spec.containers[1].env[0].value"
        ),
        &Value::String("yes".into())
    );
    assert!(out.stdout.contains("value: \"yes\""), "{}", out.stdout);
    // The comments before the first key are kept.
    assert!(out.stdout.starts_with("# A nightly CronJob"));
}

#[test]
fn pytorchjob_example_gets_the_init_container_in_every_replica() {
    let out = inject_ok(&["--image", IMAGE], &example("pytorchjob.yaml"));
    let d = &docs(&out.stdout)[0];
    for replica in ["Master", "Worker"] {
        let path = format!("spec.pytorchReplicaSpecs.{replica}.template.spec");
        let c = pullcheck_of(d, &path);
        assert_eq!(env_images(c), "registry.example.com/team/mnist:v1");
        assert_eq!(str_at(c, "image"), IMAGE);
        let spec = at(d, &path);
        assert_eq!(names(&spec["volumes"]), ["pullcheck-secret-regcred"]);
        assert_eq!(names(&spec["containers"]), ["pytorch"]);
    }
    // restartPolicy: Never on both replicas: no warning.
    assert!(!out.stderr.contains("restartPolicy"), "{}", out.stderr);
}

#[test]
fn jobset_example_gets_the_init_container_in_every_replicated_job() {
    let out = inject_ok(&["--image", IMAGE], &example("jobset.yaml"));
    let d = &docs(&out.stdout)[0];
    let leader = pullcheck_of(d, "spec.replicatedJobs[0].template.spec.template.spec");
    assert_eq!(env_images(leader), "registry.example.com/team/trainer:v3");
    let workers = pullcheck_of(d, "spec.replicatedJobs[1].template.spec.template.spec");
    assert_eq!(
        env_images(workers),
        "registry.example.com/team/trainer:v3 registry.example.com/infra/metrics-agent:0.9"
    );
    // The podFailurePolicy of each Job names a container that now exists.
    for i in 0..2 {
        let rule = at(
            d,
            &format!("spec.replicatedJobs[{i}].template.spec.podFailurePolicy.rules[0]"),
        );
        assert_eq!(str_at(rule, "onExitCodes.containerName"), "pullcheck");
        assert_eq!(str_at(rule, "action"), "FailJob");
    }
    assert_eq!(
        str_at(d, "spec.failurePolicy.rules[0].action"),
        "FailJobSet"
    );
    assert!(!out.stderr.contains("restartPolicy"), "{}", out.stderr);
}

#[test]
fn job_example_fails_at_once_on_proven_verdicts_only() {
    let d = &docs(&example("job.yaml"))[0];
    let rules = at(d, "spec.podFailurePolicy.rules").as_sequence().unwrap();
    let rule_for = |code: u64| {
        rules.iter().find(|r| {
            r.get("onExitCodes").is_some_and(|e| {
                e["values"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .any(|v| v.as_u64() == Some(code))
            })
        })
    };
    for code in [3, 4, 5, 7] {
        let rule = rule_for(code).unwrap_or_else(|| panic!("no rule for exit code {code}"));
        assert_eq!(rule["action"], "FailJob");
        assert_eq!(rule["onExitCodes"]["containerName"], "pullcheck");
        assert_eq!(rule["onExitCodes"]["operator"], "In");
    }
    // The init container only warns on 6 and 8 (what inject writes): no rule is needed.
    assert!(rule_for(6).is_none());
    assert!(rule_for(8).is_none());
    assert_eq!(str_at(d, "spec.template.spec.restartPolicy"), "Never");
    assert!(example("job.yaml").contains("backoffLimit counts"));
}

/// The `podFailurePolicy` rule `inject --job-failure-policy` writes for exit 6 when the check
/// arguments make 6 and 8 count, and its note.
fn rule_for_unreachable(job: &str, args: &[&str]) -> (String, String) {
    let mut all = vec!["--image", IMAGE, "--job-failure-policy"];
    all.extend(args);
    all.extend(["--", "--on-unreachable", "fail", "--on-unverifiable=fail"]);
    let out = inject_ok(&all, job);
    let d = &docs(&out.stdout)[0];
    let rules = at(d, "spec.podFailurePolicy.rules").as_sequence().unwrap();
    let six = rules
        .iter()
        .find(|r| r["onExitCodes"]["values"][0].as_u64() == Some(6))
        .expect("a rule for 6");
    assert_eq!(six["onExitCodes"]["containerName"], "pullcheck");
    assert_eq!(rules[0]["action"], "FailJob");
    let eight = rules
        .iter()
        .find(|r| r["onExitCodes"]["values"][0].as_u64() == Some(8))
        .expect("a rule for 8");
    assert_eq!(eight["action"], "Count");
    (six["action"].as_str().unwrap().to_string(), out.stderr)
}

#[test]
fn the_job_failure_policy_written_for_exit_6_always_ends() {
    let job = |extra: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n{extra}  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example.com/team/app:v1\n"
        )
    };
    // No deadline: exit 6 counts against backoffLimit (the API server's default, 6), so a
    // registry that stays unreachable fails the Job after its retries.
    let (action, stderr) = rule_for_unreachable(&job(""), &[]);
    assert_eq!(action, "Count");
    assert!(
        stderr.contains("pullcheck: note: stdin: document 1: Job/train spec.template.spec: podFailurePolicy rules for container pullcheck: FailJob on 3, 4, 5, 7 (proven); Count on 6 (unreachable, counted against backoffLimit 6, so the Job fails after its retries): the Job has no activeDeadlineSeconds"),
        "{stderr}"
    );
    let (action, stderr) = rule_for_unreachable(&job("  backoffLimit: 2\n"), &[]);
    assert_eq!(action, "Count");
    assert!(
        stderr.contains("counted against backoffLimit 2"),
        "{stderr}"
    );
    // A deadline bounds the retries: Ignore, and the note says which deadline.
    let (action, stderr) = rule_for_unreachable(&job("  activeDeadlineSeconds: 600\n"), &[]);
    assert_eq!(action, "Ignore");
    assert!(
        stderr.contains("Ignore on 6 (unreachable, not counted against backoffLimit): the Job's activeDeadlineSeconds: 600 ends the retries"),
        "{stderr}"
    );
    // A deadline of 0 is no deadline.
    let (action, _) = rule_for_unreachable(&job("  activeDeadlineSeconds: 0\n"), &[]);
    assert_eq!(action, "Count");
    // Ignore without a deadline only when asked by name, and the note says what it costs.
    let (action, stderr) =
        rule_for_unreachable(&job(""), &["--ignore-unreachable-without-deadline"]);
    assert_eq!(action, "Ignore");
    assert!(
        stderr.contains(
            "as --ignore-unreachable-without-deadline asks: the Job has no activeDeadlineSeconds"
        ),
        "{stderr}"
    );
    // The flag means nothing without --job-failure-policy: a usage error.
    let out = inject(
        &["--image", IMAGE, "--ignore-unreachable-without-deadline"],
        &job(""),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty());
    // By default only the proven codes have a rule, and the note says why.
    let out = inject_ok(&["--image", IMAGE, "--job-failure-policy"], &job(""));
    let d = &docs(&out.stdout)[0];
    let rules = at(d, "spec.podFailurePolicy.rules").as_sequence().unwrap();
    assert_eq!(rules.len(), 1, "{}", out.stdout);
    assert_eq!(rules[0]["action"], "FailJob");
    assert!(
        out.stderr.contains("FailJob on 3, 4, 5, 7 (proven); no rule on 6 or 8: the init container only warns on them"),
        "{}",
        out.stderr
    );
    // A CronJob's deadline is its job template's.
    let cron = "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\nspec:\n  schedule: \"0 1 * * *\"\n  jobTemplate:\n    spec:\n      activeDeadlineSeconds: 900\n      template:\n        spec:\n          containers:\n          - name: app\n            image: registry.example.com/team/app:v1\n";
    let out = inject_ok(
        &[
            "--image",
            IMAGE,
            "--job-failure-policy",
            "--",
            "--on-unreachable",
            "fail",
        ],
        cron,
    );
    let d = &docs(&out.stdout)[0];
    let rules = at(d, "spec.jobTemplate.spec.podFailurePolicy.rules")
        .as_sequence()
        .unwrap();
    assert_eq!(rules[1]["action"], "Ignore", "{}", out.stdout);
    assert!(
        out.stderr.contains("activeDeadlineSeconds: 900"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_argo_template_whose_image_is_a_parameter_is_said_to_be_left_unchanged_for_that_reason() {
    let wf = "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata:\n  generateName: wf-\nspec:\n  entrypoint: main\n  templates:\n  - name: main\n    inputs:\n      parameters:\n      - name: image\n    container:\n      image: \"{{inputs.parameters.image}}\"\n      command: [run]\n  - name: fixed\n    container:\n      image: registry.example.com/team/app:v1\n";
    let out = inject_ok(&["--image", IMAGE], wf);
    assert!(
        out.stderr.contains("spec.templates[0]: its image is an Argo workflow parameter, known only at run time; left unchanged"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("no containers and no image volumes"),
        "{}",
        out.stderr
    );
    // The other template still gets the init container.
    let d = &docs(&out.stdout)[0];
    let fixed = pullcheck_of(d, "spec.templates[1]");
    assert_eq!(env_images(fixed), "registry.example.com/team/app:v1");
}

#[test]
fn kyverno_policy_adds_what_inject_adds() {
    let text = example("kyverno-clusterpolicy.yaml");
    let policy = &docs(&text)[0];
    assert_eq!(str_at(policy, "apiVersion"), "kyverno.io/v1");
    assert_eq!(str_at(policy, "kind"), "ClusterPolicy");
    assert_eq!(
        policy["metadata"]["annotations"]["pod-policies.kyverno.io/autogen-controllers"],
        "none"
    );
    assert_eq!(policy["spec"]["background"], Value::Bool(false));
    let rules = at(policy, "spec.rules").as_sequence().unwrap();
    assert_eq!(
        names(at(policy, "spec.rules")),
        [
            "ensure-init-containers",
            "insert-pullcheck",
            "ensure-volumes",
            "mount-pull-secrets",
            "node-images",
            "node-registry-configuration"
        ]
    );
    for rule in rules {
        let resources = &rule["match"]["any"][0]["resources"];
        assert_eq!(names_of_strings(&resources["kinds"]), ["Pod"]);
        assert_eq!(names_of_strings(&resources["operations"]), ["CREATE"]);
        assert_eq!(
            resources["namespaceSelector"]["matchLabels"]["pullcheck.io/enabled"],
            Value::String("true".into())
        );
        // Never twice: every rule is skipped for Pods that already have a pullcheck container.
        let preconditions = rule["preconditions"]["all"].as_sequence().unwrap();
        assert!(preconditions.iter().any(|p| {
            p["key"] == "pullcheck"
                && p["value"]
                    .as_str()
                    .unwrap()
                    .contains("initContainers[].name")
        }));
    }

    // Rule 2 inserts at index 0 the container inject writes (but for the per-Pod values).
    let insert = &rules[1];
    let patch: Value =
        serde_yaml_ng::from_str(insert["mutate"]["patchesJson6902"].as_str().unwrap()).unwrap();
    assert_eq!(patch[0]["op"], "add");
    assert_eq!(patch[0]["path"], "/spec/initContainers/0");
    let from_policy = &patch[0]["value"];
    // A Burstable pod in a namespace without LimitRanges: inject's own values, the policy's.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
               containers: [{name: a, image: nginx, resources: {requests: {cpu: 500m, memory: 256Mi}, \
               limits: {cpu: 1, memory: 1Gi}}}]\n";
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("limitranges.yaml");
    std::fs::write(&none, "apiVersion: v1\nkind: List\nitems: []\n").unwrap();
    let out = inject_ok(
        &[
            "--image",
            str_at(from_policy, "image"),
            "--limit-range-file",
            &none.to_string_lossy(),
        ],
        pod,
    );
    let from_inject = pullcheck_of(&docs(&out.stdout)[0], "spec").clone();
    for field in [
        "name",
        "image",
        "args",
        "resources",
        "securityContext",
        "terminationMessagePolicy",
    ] {
        assert_eq!(from_policy[field], from_inject[field], "field {field}");
    }
    assert_eq!(from_policy["env"][0]["name"], "PULLCHECK_IMAGES");
    assert_eq!(from_policy["env"][0]["value"], "{{ pullcheckImages }}");
    let jmes = str_at(&insert["context"][0], "variable.jmesPath");
    for part in [
        "request.object.spec.initContainers[?imagePullPolicy != 'Never'].image",
        "request.object.spec.containers[?imagePullPolicy != 'Never'].image",
        "join(' ', @)",
    ] {
        assert!(jmes.contains(part), "jmesPath {jmes:?} lacks {part:?}");
    }

    // Rule 4 mounts each imagePullSecret read-only from an optional secret volume.
    let foreach = &rules[3]["mutate"]["foreach"][0];
    assert!(str_at(foreach, "list").starts_with("request.object.spec.imagePullSecrets"));
    let patch: Value =
        serde_yaml_ng::from_str(foreach["patchesJson6902"].as_str().unwrap()).unwrap();
    assert_eq!(patch[0]["path"], "/spec/initContainers/0/volumeMounts/-");
    assert_eq!(
        patch[0]["value"]["mountPath"],
        "/var/run/pullcheck/secrets/{{ element.name }}"
    );
    assert_eq!(patch[0]["value"]["readOnly"], Value::Bool(true));
    assert_eq!(patch[1]["path"], "/spec/volumes/-");
    assert_eq!(patch[1]["value"]["secret"]["optional"], Value::Bool(true));
    assert_eq!(patch[0]["value"]["name"], patch[1]["value"]["name"]);

    // Rules 5 and 6 are opt-in by a Pod annotation; unannotated Pods get rules 1 to 4 only.
    let opt_in = |rule: &Value, annotation: &str| {
        let key = format!("{{{{ request.object.metadata.annotations.\"{annotation}\" || '' }}}}");
        rule["preconditions"]["all"]
            .as_sequence()
            .unwrap()
            .iter()
            .any(|p| p["key"] == key.as_str() && p["operator"] == "Equals" && p["value"] == "true")
    };
    assert!(opt_in(&rules[4], "pullcheck.io/node-images"));
    assert!(opt_in(&rules[5], "pullcheck.io/hosts-configmap"));
    for (i, rule) in rules[..4].iter().enumerate() {
        assert!(!opt_in(rule, "pullcheck.io/node-images"), "rule {i}");
        assert!(!opt_in(rule, "pullcheck.io/hosts-configmap"), "rule {i}");
    }
    // /spec/volumes exists for rule 6 even without pull secrets.
    let any = rules[2]["preconditions"]["any"].as_sequence().unwrap();
    assert!(
        any.iter()
            .any(|p| p["key"].as_str().unwrap().contains("imagePullSecrets"))
    );
    assert!(any.iter().any(|p| {
        p["key"]
            .as_str()
            .unwrap()
            .contains("\"pullcheck.io/hosts-configmap\"")
            && p["value"] == "true"
    }));

    // A Pod with an image of each policy (as the API server defaults them), through inject.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
               initContainers: [{name: i, image: 'busybox:1', imagePullPolicy: IfNotPresent}]\n  \
               containers:\n  - {name: a, image: 'nginx:latest', imagePullPolicy: Always}\n  \
               - {name: b, image: 'app:1', imagePullPolicy: IfNotPresent}\n  \
               - {name: c, image: 'local:1', imagePullPolicy: Never}\n";
    let image = str_at(from_policy, "image");

    // Rule 5 is inject --node-images: the same env, in the same order, the images split by
    // pull policy (Never left out), the node's name from the downward API.
    let patch: Value =
        serde_yaml_ng::from_str(rules[4]["mutate"]["patchesJson6902"].as_str().unwrap()).unwrap();
    let ops: Vec<(&str, &str)> = patch
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| (p["op"].as_str().unwrap(), p["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ops,
        [
            ("replace", "/spec/initContainers/0/env/0"),
            ("add", "/spec/initContainers/0/env/-"),
            ("add", "/spec/initContainers/0/env/-"),
        ]
    );
    let out = inject_ok(&["--image", image, "--node-images"], pod);
    let from_inject = pullcheck_of(&docs(&out.stdout)[0], "spec").clone();
    // Less PULLCHECK_CONTAINERS, which the policy does not give (no start check).
    let env: Vec<Value> = from_inject["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|e| e["name"] != "PULLCHECK_CONTAINERS")
        .cloned()
        .collect();
    assert_eq!(
        names(&Value::Sequence(env.clone())),
        [
            "PULLCHECK_IMAGES",
            "PULLCHECK_ON_UNREACHABLE",
            "PULLCHECK_NETWORK",
            "PULLCHECK_IMAGES_IF_NOT_PRESENT",
            "PULLCHECK_NODE_NAME"
        ]
    );
    assert_eq!(env[0]["value"], "nginx:latest");
    assert_eq!(env[3]["value"], "busybox:1,app:1");
    assert_eq!(patch[0]["value"]["name"], env[0]["name"]);
    assert_eq!(patch[0]["value"]["value"], "{{ alwaysImages }}");
    assert_eq!(patch[1]["value"]["name"], env[3]["name"]);
    assert_eq!(patch[1]["value"]["value"], "{{ ifNotPresentImages }}");
    assert_eq!(patch[2]["value"], env[4]);
    // Rule 2 writes what inject writes for what counts: the same two variables, after the
    // images.
    let inserted = &from_policy["env"];
    assert_eq!(inserted[1], env[1]);
    assert_eq!(inserted[2]["name"], env[2]["name"]);
    assert_eq!(
        inserted[2]["value"],
        "{{ request.object.spec.hostNetwork && 'host' || 'pod' }}"
    );
    let variables: Vec<&str> = rules[4]["context"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(variables, ["alwaysImages", "ifNotPresentImages"]);
    let always = str_at(&rules[4]["context"][0], "variable.jmesPath");
    let if_not_present = str_at(&rules[4]["context"][1], "variable.jmesPath");
    for list in ["initContainers", "containers"] {
        let part = format!(
            "request.object.spec.{list}[?imagePullPolicy != 'Never' && imagePullPolicy != 'IfNotPresent'].image"
        );
        assert!(always.contains(&part), "{always:?} lacks {part:?}");
        let part = format!("request.object.spec.{list}[?imagePullPolicy == 'IfNotPresent'].image");
        assert!(
            if_not_present.contains(&part),
            "{if_not_present:?} lacks {part:?}"
        );
    }
    // The separators inject uses (pullcheck reads both either way).
    assert!(always.ends_with("join(' ', @)"), "{always:?}");
    assert!(
        if_not_present.ends_with("join(',', @)"),
        "{if_not_present:?}"
    );

    // Rule 6 is inject --hosts-configmap pullcheck-hosts: the same arguments after `check`,
    // the same mount and the same optional ConfigMap volume.
    let patch: Value =
        serde_yaml_ng::from_str(rules[5]["mutate"]["patchesJson6902"].as_str().unwrap()).unwrap();
    let patch = patch.as_sequence().unwrap();
    let out = inject_ok(
        &["--image", image, "--hosts-configmap", "pullcheck-hosts"],
        pod,
    );
    let d = &docs(&out.stdout)[0];
    let from_inject = pullcheck_of(d, "spec");
    let args: Vec<&Value> = patch
        .iter()
        .filter(|p| p["path"] == "/spec/initContainers/0/args/-")
        .map(|p| &p["value"])
        .collect();
    let inject_args = from_inject["args"].as_sequence().unwrap();
    assert_eq!(inject_args[0], "check");
    assert_eq!(args, inject_args[1..].iter().collect::<Vec<_>>());
    assert_eq!(args, ["--hosts-dir", "/etc/pullcheck/hosts.d"]);
    let mounts: Vec<&Value> = patch
        .iter()
        .filter(|p| p["path"] == "/spec/initContainers/0/volumeMounts/-")
        .map(|p| &p["value"])
        .collect();
    assert_eq!(
        mounts,
        from_inject["volumeMounts"]
            .as_sequence()
            .unwrap()
            .iter()
            .collect::<Vec<_>>()
    );
    let volumes: Vec<&Value> = patch
        .iter()
        .filter(|p| p["path"] == "/spec/volumes/-")
        .map(|p| &p["value"])
        .collect();
    assert_eq!(
        volumes,
        at(d, "spec.volumes")
            .as_sequence()
            .unwrap()
            .iter()
            .collect::<Vec<_>>()
    );
    assert_eq!(patch.len(), args.len() + mounts.len() + volumes.len());
    assert_eq!(
        volumes[0]["configMap"]["optional"],
        Value::Bool(true),
        "a missing ConfigMap must not hold the Pod"
    );

    // A policy has no pod template: inject passes it through byte for byte.
    let out = inject_ok(&["--image", IMAGE], &text);
    assert_eq!(out.stdout, text);
}

fn names_of_strings(list: &Value) -> Vec<String> {
    list.as_sequence()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// A stand-in for kubectl: `get` prints $FAKE_GET, `apply -f -` saves stdin to $FAKE_APPLIED,
/// anything else saves its arguments, one per line, to $FAKE_ARGS.
fn fake_kubectl(dir: &Path) -> PathBuf {
    let path = dir.join("kubectl");
    std::fs::write(
        &path,
        "#!/bin/sh\ncase \"$1\" in\n  get) cat \"$FAKE_GET\" ;;\n  apply) cat > \"$FAKE_APPLIED\" ;;\n  \
         *) printf '%s\\n' \"$@\" > \"$FAKE_ARGS\" ;;\nesac\n",
    )
    .unwrap();
    let status = Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    assert!(status.success());
    path
}

#[test]
fn inject_roundtrip_script_pipes_get_through_inject_into_apply() {
    let dir = tempfile::tempdir().unwrap();
    let kubectl = fake_kubectl(dir.path());
    let applied = dir.path().join("applied.yaml");
    let run = |target: &str| {
        Command::new("bash")
            .arg(examples_dir().join("inject-roundtrip.sh"))
            .args([IMAGE, target, "--", "--timeout", "30s"])
            .env("KUBECTL", &kubectl)
            .env("PULLCHECK", PULLCHECK_BIN)
            .env("PULLCHECK_SECRETS", "extra")
            .env("FAKE_GET", examples_dir().join("cronjob.yaml"))
            .env("FAKE_APPLIED", &applied)
            .output()
            .unwrap()
    };
    let out = run("cronjob/nightly-report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&applied).unwrap();
    let d = &docs(&text)[0];
    let c = pullcheck_of(d, "spec.jobTemplate.spec.template.spec");
    assert_eq!(names_of_strings(&c["args"]), ["check", "--timeout", "30s"]);
    let mounts: Vec<&str> = c["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    assert_eq!(
        mounts,
        [
            "/var/run/pullcheck/secrets/regcred",
            "/var/run/pullcheck/secrets/extra"
        ]
    );
    kubernetes_validate("roundtrip", &text);

    // A Job's template is immutable: the script says so instead of failing in kubectl apply.
    let out = run("job/train");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("immutable"));
}

#[test]
fn debug_pod_script_runs_a_throw_away_pod() {
    let dir = tempfile::tempdir().unwrap();
    let kubectl = fake_kubectl(dir.path());
    let args_file = dir.path().join("args");
    // debug-pod.sh calls `kubectl`: put the stand-in first on PATH.
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    assert!(kubectl.exists());
    let run = |secret: Option<&str>, refs: &[&str]| {
        let mut cmd = Command::new("bash");
        cmd.arg(examples_dir().join("debug-pod.sh"))
            .arg(IMAGE)
            .args(refs)
            .env("PATH", &path)
            .env("FAKE_ARGS", &args_file)
            .env_remove("PULLCHECK_SECRET");
        if let Some(s) = secret {
            cmd.env("PULLCHECK_SECRET", s);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(&args_file).unwrap()
    };
    let args = run(None, &[]);
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "run",
            "--rm",
            "-it",
            "pullcheck",
            &format!("--image={IMAGE}"),
            "--restart=Never",
            "--",
            "check",
            "nginx211"
        ]
    );
    let args = run(Some("regcred"), &["quay.io/org/app:v1", "nginx:1.27"]);
    let overrides = args
        .split("--overrides=")
        .nth(1)
        .expect("--overrides")
        .trim_end();
    let pod: serde_json::Value = serde_json::from_str(overrides).expect("overrides are JSON");
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["name"], "pullcheck");
    assert_eq!(c["image"], IMAGE);
    assert_eq!(
        c["args"],
        serde_json::json!(["check", "-o", "json", "quay.io/org/app:v1", "nginx:1.27"])
    );
    assert_eq!(
        c["volumeMounts"][0]["mountPath"],
        "/var/run/pullcheck/secrets/regcred"
    );
    assert_eq!(pod["spec"]["volumes"][0]["secret"]["secretName"], "regcred");
}

// ---------------------------------------------------------------------------------------------
// Kinds

const EVERY_KIND: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: pod}
spec:
  restartPolicy: Never
  containers: [{name: a, image: "img/pod:1"}]
---
apiVersion: v1
kind: PodTemplate
metadata: {name: podtemplate}
template:
  spec:
    restartPolicy: Never
    containers: [{name: a, image: "img/podtemplate:1"}]
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec:
      containers: [{name: a, image: "img/rc:1"}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec:
      containers: [{name: a, image: "img/rs:1"}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: deploy}
spec:
  selector: {matchLabels: {app: deploy}}
  template:
    metadata: {labels: {app: deploy}}
    spec:
      containers: [{name: a, image: "img/deploy:1"}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec:
  serviceName: sts
  selector: {matchLabels: {app: sts}}
  template:
    metadata: {labels: {app: sts}}
    spec:
      containers: [{name: a, image: "img/sts:1"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      containers: [{name: a, image: "img/ds:1"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: a, image: "img/job:1"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cronjob}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: a, image: "img/cronjob:1"}]
---
apiVersion: v1
kind: Service
metadata: {name: svc}   # untouched, comment and all
spec:
  ports: [{port: 80}]
"#;

/// Kind, path of its pod spec and image, for each document of EVERY_KIND.
const EVERY_KIND_PATHS: [(&str, &str, &str); 9] = [
    ("Pod", "spec", "img/pod:1"),
    ("PodTemplate", "template.spec", "img/podtemplate:1"),
    ("ReplicationController", "spec.template.spec", "img/rc:1"),
    ("ReplicaSet", "spec.template.spec", "img/rs:1"),
    ("Deployment", "spec.template.spec", "img/deploy:1"),
    ("StatefulSet", "spec.template.spec", "img/sts:1"),
    ("DaemonSet", "spec.template.spec", "img/ds:1"),
    ("Job", "spec.template.spec", "img/job:1"),
    (
        "CronJob",
        "spec.jobTemplate.spec.template.spec",
        "img/cronjob:1",
    ),
];

#[test]
fn every_built_in_kind_gets_the_init_container_first() {
    let out = inject_ok(&["--image", IMAGE], EVERY_KIND);
    let d = docs(&out.stdout);
    assert_eq!(d.len(), 10);
    for (i, (kind, path, image)) in EVERY_KIND_PATHS.iter().enumerate() {
        assert_eq!(str_at(&d[i], "kind"), *kind);
        let c = pullcheck_of(&d[i], path);
        assert_eq!(env_images(c), *image, "{kind}");
        assert_eq!(str_at(c, "image"), IMAGE);
        assert_eq!(names_of_strings(&c["args"]), ["check"]);
        assert_eq!(
            str_at(c, "terminationMessagePolicy"),
            "FallbackToLogsOnError"
        );
        let sc = &c["securityContext"];
        assert_eq!(sc["runAsNonRoot"], Value::Bool(true));
        assert_eq!(sc["runAsUser"].as_u64(), Some(65532));
        assert_eq!(sc["readOnlyRootFilesystem"], Value::Bool(true));
        assert_eq!(sc["allowPrivilegeEscalation"], Value::Bool(false));
        assert_eq!(names_of_strings(&sc["capabilities"]["drop"]), ["ALL"]);
        assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
        // No other container asks for resources: neither does pullcheck's (any request would
        // raise the pod's).
        assert!(c["resources"].is_null(), "{kind}: {:?}", c["resources"]);
    }
    // The Service comes out as it went in, comment included.
    assert!(out.stdout.ends_with(
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}   # untouched, comment and all\nspec:\n  ports: [{port: 80}]\n"
    ));
    kubernetes_validate("every-kind", &out.stdout);
}

#[test]
fn restart_policy_warnings_name_the_object_and_path() {
    let out = inject_ok(&["--image", IMAGE], EVERY_KIND);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("restartPolicy"))
        .collect();
    // Pod, PodTemplate and Job say Never; the five workloads default to Always; the CronJob
    // says OnFailure.
    assert_eq!(warnings.len(), 6, "{}", out.stderr);
    for w in &warnings {
        assert!(w.starts_with("pullcheck: warning: stdin: document "), "{w}");
        assert!(
            w.contains("retried with back-off instead of failing the pod"),
            "{w}"
        );
    }
    assert!(out.stderr.contains(
        "document 5: Deployment/deploy spec.template.spec: restartPolicy is not set (Always)"
    ));
    assert!(out.stderr.contains("a Deployment allows only Always"));
    assert!(out.stderr.contains(
        "document 9: CronJob/cronjob spec.jobTemplate.spec.template.spec: restartPolicy is OnFailure"
    ));
    assert!(out.stderr.contains("set restartPolicy: Never"));
    assert!(!out.stderr.contains("Pod/pod "), "{}", out.stderr);

    // A Kubeflow replica without restartPolicy defaults to OnFailure, whatever the template says.
    let pytorch = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: pt}\nspec:\n  \
        pytorchReplicaSpecs:\n    Master:\n      template:\n        spec:\n          \
        restartPolicy: Never\n          containers: [{name: pytorch, image: x}]\n";
    let out = inject_ok(&["--image", IMAGE], pytorch);
    assert!(
        out.stderr.contains(
            "PyTorchJob/pt spec.pytorchReplicaSpecs.Master.template.spec: restartPolicy is OnFailure"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn default_image_is_named_in_a_warning() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
               containers: [{name: a, image: nginx}]\n";
    let out = inject_ok(&[], pod);
    let default = format!("pullcheck:{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(
        str_at(pullcheck_of(&docs(&out.stdout)[0], "spec"), "image"),
        default
    );
    assert!(
        out.stderr.contains(&format!(
            "default image {default}, which no registry serves"
        )),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--image"));
    let out = inject_ok(&["--image", IMAGE], pod);
    assert_eq!(out.stderr, "");
}

#[test]
fn json_list_in_json_out() {
    // As `kubectl get -o json` writes it: four spaces, keys in the API's order.
    let input = r#"{
    "apiVersion": "v1",
    "kind": "List",
    "metadata": {
        "resourceVersion": ""
    },
    "items": [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "a"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "a", "image": "img/a:1"}]}}}
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "b"},
            "spec": {
                "selector": {"matchLabels": {"app": "b"}},
                "template": {
                    "metadata": {"labels": {"app": "b"}},
                    "spec": {"containers": [{"name": "b", "image": "img/b:1"}]}
                }
            }
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"on": "yes"}}
    ]
}
"#;
    let out = inject_ok(&["--image", IMAGE], input);
    assert!(
        out.stdout.starts_with(
            "{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"List\",\n    \"metadata\""
        ),
        "{}",
        out.stdout
    );
    let parsed: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON out");
    let job = &parsed["items"][0]["spec"]["template"]["spec"];
    assert_eq!(job["initContainers"][0]["name"], "pullcheck");
    let yaml: Value =
        serde_yaml_ng::from_str(&serde_json::to_string(&job["initContainers"][0]).unwrap())
            .unwrap();
    assert_eq!(env_images(&yaml), "img/a:1");
    let deploy = &parsed["items"][1]["spec"]["template"]["spec"];
    assert_eq!(deploy["initContainers"][0]["name"], "pullcheck");
    assert_eq!(parsed["items"][2]["data"]["on"], "yes");
    // Key order is the input's, with initContainers just before containers.
    let pos = |s: &str| out.stdout.find(s).unwrap();
    assert!(pos("\"apiVersion\": \"v1\"") < pos("\"kind\": \"List\""));
    assert!(pos("\"kind\": \"List\"") < pos("\"metadata\""));
    assert!(pos("\"initContainers\"") < pos("\"containers\""));
    kubernetes_validate("json-list", &out.stdout);

    // One line in, one line out.
    let compact = r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "img/a:1"}]}}}}"#;
    let out = inject_ok(&["--image", IMAGE], compact);
    assert_eq!(out.stdout.lines().count(), 1);
    kubernetes_validate("json-compact", &out.stdout);
}

#[test]
fn multi_document_yaml_and_json_stream() {
    let out = inject_ok(&["--image", IMAGE], EVERY_KIND);
    assert_eq!(out.stdout.matches("\n---\n").count(), 9);
    // Several JSON values in a row come out as several values.
    let a = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "img/a"}]}}"#;
    let b = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}"#;
    let out = inject_ok(&["--image", IMAGE], &format!("{a}\n{b}\n"));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("\"initContainers\""));
    assert_eq!(lines[1], b);
}

#[test]
fn inject_twice_is_inject_once_byte_for_byte() {
    let inputs = [
        ("every-kind", EVERY_KIND.to_string()),
        ("cronjob", example("cronjob.yaml")),
        ("pytorchjob", example("pytorchjob.yaml")),
        ("jobset", example("jobset.yaml")),
        ("crd", NESTED_CRD.to_string()),
        (
            "json",
            serde_json::to_string_pretty(&serde_json::json!({
                "apiVersion": "v1", "kind": "List", "items": [
                    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"imagePullSecrets": [{"name": "regcred"}],
                         "containers": [{"name": "a", "image": "x"}],
                         "volumes": [{"name": "data", "emptyDir": {}}]}}]}))
            .unwrap(),
        ),
    ];
    for (label, input) in inputs {
        for args in [
            vec!["--image", IMAGE],
            vec![
                "--image",
                IMAGE,
                "--secret",
                "extra",
                "--",
                "--timeout",
                "20s",
            ],
        ] {
            let once = inject_ok(&args, &input).stdout;
            assert_ne!(once, input, "{label}: nothing injected");
            let twice = inject_ok(&args, &once).stdout;
            assert_eq!(
                twice, once,
                "{label} {args:?}: the second run changed the output"
            );
        }
    }
    // A second run with other settings replaces the first run's container and volumes.
    let first = inject_ok(
        &["--image", "old/pullcheck:1", "--secret", "gone"],
        &example("pod.yaml"),
    )
    .stdout;
    let second = inject_ok(&["--image", IMAGE], &first).stdout;
    assert_eq!(docs(&second), docs(&example("pod.yaml")));
    assert!(!second.contains("gone"));
}

/// A custom resource with pod templates at several depths: a list of stages, each with a map
/// of steps, one of which wraps a whole PyTorchJob (as CodeFlare's AppWrapper does).
const NESTED_CRD: &str = r#"apiVersion: pipelines.example.com/v1
kind: Pipeline
metadata:
  name: nightly
spec:
  stages:
  - name: prepare
    steps:
      fetch:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: fetch, image: "img/fetch:1"}]
  - name: train
    components:
    - template:
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: train}
        spec:
          pytorchReplicaSpecs:
            Master:
              restartPolicy: Never
              template:
                spec:
                  initContainers: [{name: warm-cache, image: "img/cache:1"}]
                  containers: [{name: pytorch, image: "img/train:1"}]
  notATemplate:
    template: {spec: {note: "no containers here"}}
"#;

#[test]
fn custom_resources_with_nested_templates() {
    let out = inject_ok(&["--image", IMAGE], NESTED_CRD);
    let d = &docs(&out.stdout)[0];
    let fetch = pullcheck_of(d, "spec.stages[0].steps.fetch.template.spec");
    assert_eq!(env_images(fetch), "img/fetch:1");
    let train = pullcheck_of(
        d,
        "spec.stages[1].components[0].template.spec.pytorchReplicaSpecs.Master.template.spec",
    );
    assert_eq!(env_images(train), "img/cache:1 img/train:1");
    assert_eq!(
        names(at(
            d,
            "spec.stages[1].components[0].template.spec.pytorchReplicaSpecs.Master.template.spec.initContainers"
        )),
        ["pullcheck", "warm-cache"]
    );
    assert!(
        at(d, "spec.notATemplate.template.spec")
            .get("initContainers")
            .is_none()
    );

    // RayJob: the head group and every worker group.
    let rayjob = r#"apiVersion: ray.io/v1
kind: RayJob
metadata: {name: ray}
spec:
  entrypoint: python main.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers: [{name: head, image: "rayproject/ray:2.9.0"}]
    workerGroupSpecs:
    - groupName: cpu
      replicas: 2
      rayStartParams: {}
      template:
        spec:
          containers: [{name: worker, image: "rayproject/ray:2.9.0"}]
    - groupName: gpu
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          containers: [{name: worker, image: "rayproject/ray-ml:2.9.0-gpu"}]
"#;
    let out = inject_ok(&["--image", IMAGE], rayjob);
    let d = &docs(&out.stdout)[0];
    pullcheck_of(d, "spec.rayClusterSpec.headGroupSpec.template.spec");
    pullcheck_of(d, "spec.rayClusterSpec.workerGroupSpecs[0].template.spec");
    let gpu = pullcheck_of(d, "spec.rayClusterSpec.workerGroupSpecs[1].template.spec");
    assert_eq!(env_images(gpu), "rayproject/ray-ml:2.9.0-gpu");
    // Ray pods restart Always by default: three warnings.
    assert_eq!(
        out.stderr.matches("restartPolicy is not set").count(),
        3,
        "{}",
        out.stderr
    );
}

#[test]
fn images_with_pull_policy_never_are_left_out() {
    let pod = r#"apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  initContainers:
  - {name: setup, image: "local/setup:dev", imagePullPolicy: Never}
  - {name: migrate, image: "reg.example.com/migrate:1", imagePullPolicy: IfNotPresent}
  containers:
  - {name: a, image: "reg.example.com/app:1"}
  - {name: b, image: "local/sidecar:dev", imagePullPolicy: Never}
  - {name: c, image: "reg.example.com/app:1", imagePullPolicy: Always}
  - {name: d, image: "reg.example.com/migrate:1"}
"#;
    let out = inject_ok(&["--image", IMAGE], pod);
    let d = docs(&out.stdout);
    let c = pullcheck_of(&d[0], "spec");
    // app:1 is also pulled Always (container c): Always wins; migrate:1 only IfNotPresent.
    assert_eq!(
        env_images(c),
        "reg.example.com/app:1 reg.example.com/migrate:1"
    );
    kubernetes_validate("never", &out.stdout);
    // Each image left out is named, once per pod spec.
    assert!(
        out.stderr.contains(
            "pullcheck: note: stdin: document 1: Pod/p spec: not checked: initContainer setup \
             \"local/setup:dev\", container b \"local/sidecar:dev\": imagePullPolicy Never, so \
             the kubelet never pulls them and the node must already hold them (check --pod-spec \
             leaves them out too)"
        ),
        "{}",
        out.stderr
    );

    // Nothing left to check: an empty list (pullcheck then says there is nothing to check).
    let only_local = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
        containers: [{name: a, image: local/x, imagePullPolicy: Never}]\n";
    let out = inject_ok(&["--image", IMAGE], only_local);
    assert_eq!(env_images(pullcheck_of(&docs(&out.stdout)[0], "spec")), "");
}

#[test]
fn if_not_present_images_without_the_node_grant_are_said_once_per_run() {
    // Two pod specs with IfNotPresent images (one written, one defaulted: a tag other than
    // latest) and one of Always images only: one line for the run, counting the two.
    let pods = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  restartPolicy: Never\n  \
        containers: [{name: a, image: 'reg.example.com/a:latest', imagePullPolicy: IfNotPresent}]\n\
        ---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  restartPolicy: Never\n  \
        containers: [{name: b, image: 'reg.example.com/b:1'}, {name: c, image: 'reg.example.com/c:2'}]\n\
        ---\napiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec:\n  restartPolicy: Never\n  \
        containers: [{name: c, image: 'reg.example.com/c'}]\n";
    let warning = "pullcheck: warning: 2 pod specs have IfNotPresent images (set, or defaulted for \
        a tag other than latest): a registry miss of such an image is only a warning unless the \
        pod's service account may get nodes (examples/node-images-rbac.yaml), which lets the \
        init container prove the node lacks it";
    let out = inject_ok(&["--image", IMAGE], pods);
    assert_eq!(out.stderr, format!("{warning}\n"));
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/node-images-rbac.yaml")
            .is_file()
    );
    // Without the node look-up every image is checked as Always: a miss counts, nothing to say.
    let out = inject_ok(&["--image", IMAGE, "--no-node-images"], pods);
    assert_eq!(out.stderr, "");
    // Always images only.
    let latest = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
        containers: [{name: a, image: 'reg.example.com/a'}, {name: b, image: 'reg.example.com/b:1', imagePullPolicy: Always}]\n";
    let out = inject_ok(&["--image", IMAGE], latest);
    assert_eq!(out.stderr, "");
}

#[test]
fn an_existing_pullcheck_container_is_replaced() {
    let pod = r#"apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  imagePullSecrets: [{name: regcred}]
  initContainers:
  - {name: setup, image: "img/setup:1"}
  - name: pullcheck
    image: old.example.com/pullcheck:0.0.1
    args: [check, --quiet]
    env: [{name: PULLCHECK_IMAGES, value: stale}]
    volumeMounts: [{name: pullcheck-secret-old, mountPath: /var/run/pullcheck/secrets/old, readOnly: true}]
  containers:
  - name: a
    image: img/a:1
    volumeMounts: [{name: pullcheck-secret-shared, mountPath: /shared}]
  volumes:
  - {name: pullcheck-secret-old, secret: {secretName: old, optional: true}}
  - {name: pullcheck-secret-shared, secret: {secretName: shared}}
  - {name: pullcheck-secret-regcred, configMap: {name: not-a-secret}}
"#;
    let out = inject_ok(&["--image", IMAGE], pod);
    let d = &docs(&out.stdout)[0];
    let c = pullcheck_of(d, "spec");
    assert_eq!(str_at(c, "image"), IMAGE);
    assert_eq!(names_of_strings(&c["args"]), ["check"]);
    assert_eq!(env_images(c), "img/setup:1 img/a:1");
    assert_eq!(names(&d["spec"]["initContainers"]), ["pullcheck", "setup"]);
    // The old run's volume went (replaced by the new one, where it was); the app's volume and
    // the ConfigMap volume stay, and the new secret volume's name avoids the ConfigMap volume's.
    let volumes = names(&d["spec"]["volumes"]);
    assert_eq!(volumes.len(), 3, "{volumes:?}");
    assert_eq!(volumes[1], "pullcheck-secret-shared");
    assert_eq!(volumes[2], "pullcheck-secret-regcred");
    let ours = &volumes[0];
    assert!(
        ours.starts_with("pullcheck-secret-regcred-") && ours.len() <= 63,
        "{ours}"
    );
    assert_eq!(str_at(c, "volumeMounts[0].name"), ours);
    assert_eq!(
        str_at(c, "volumeMounts[0].mountPath"),
        "/var/run/pullcheck/secrets/regcred"
    );
    kubernetes_validate("replaced", &out.stdout);
}

#[test]
fn pull_secrets_get_valid_unique_volume_names() {
    let long = format!("{}.example.com", "a".repeat(60));
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  restartPolicy: Never\n  \
         imagePullSecrets: [{{name: regcred}}, {{name: reg.cred}}, {{name: reg-cred}}, {{name: {long}}}, {{name: regcred}}]\n  \
         containers: [{{name: a, image: x}}]\n"
    );
    let out = inject_ok(
        &["--image", IMAGE, "--secret", "extra", "--secret", "regcred"],
        &pod,
    );
    let d = &docs(&out.stdout)[0];
    let c = pullcheck_of(d, "spec");
    let mounts = c["volumeMounts"].as_sequence().unwrap();
    let paths: Vec<&str> = mounts
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = ["regcred", "reg.cred", "reg-cred", &long, "extra"]
        .iter()
        .map(|s| format!("/var/run/pullcheck/secrets/{s}"))
        .collect();
    assert_eq!(paths, expected);
    let volumes = d["spec"]["volumes"].as_sequence().unwrap();
    assert_eq!(volumes.len(), 5);
    let mut seen = std::collections::HashSet::new();
    for (m, v) in mounts.iter().zip(volumes) {
        let name = v["name"].as_str().unwrap();
        assert_eq!(m["name"].as_str(), Some(name));
        assert_eq!(m["readOnly"], Value::Bool(true));
        assert_eq!(v["secret"]["optional"], Value::Bool(true));
        assert!(name.len() <= 63, "{name}");
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{name}"
        );
        assert!(seen.insert(name.to_string()), "{name} twice");
    }
    kubernetes_validate("secrets", &out.stdout);

    // A --secret that is no Secret name is a usage error.
    let out = inject(&["--image", IMAGE, "--secret", "Bad_Name"], &pod);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("--secret \"Bad_Name\""),
        "{}",
        out.stderr
    );
}

#[test]
fn yaml_1_1_lookalike_strings_stay_strings() {
    // Strings that a YAML 1.1 reader (kubectl's go-yaml, PyYAML) takes for booleans, numbers or
    // dates when written bare. The validator reads inject's output with PyYAML: each must still
    // be a string there, or the EnvVar schema rejects it.
    let tricky = [
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "N",
        "~",
        "null",
        "true",
        "1_000",
        "0x1F",
        "0o17",
        "017",
        "12:30",
        "1.5",
        "1e3",
        "-1",
        ".inf",
        "2024-01-01",
        "2001-12-14t21:59:43.10-05:00",
        "",
        " lead",
        "trail ",
        "a: b",
        "a #b",
        "#c",
        "- x",
        "---",
        "*star",
        "&amp",
        "!bang",
        "%pct",
        "@at",
        "`tick",
        "'q'",
        "\"dq\"",
        "{a}",
        "[b]",
        "line\nnext",
        "tab\there",
        "ends\n\n",
        "bell\u{7}",
        "nel\u{85}x",
        "é",
        "日本",
        "10m",
        "--flag=x",
        "-c",
        "$(VAR)",
        "a,b",
    ];
    let mut env = String::new();
    for (i, value) in tricky.iter().enumerate() {
        let _ = std::fmt::Write::write_fmt(
            &mut env,
            format_args!(
                "        - {{name: V{i}, value: {}}}\n",
                serde_json::to_string(value)
                    .unwrap()
                    .replace('\u{85}', "\\u0085")
            ),
        );
    }
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  annotations: {{\"on\": \"yes\", \"y\": \"1_000\"}}\n\
         spec:\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec:\n      \
         containers:\n      - name: a\n        image: img/a:1\n        env:\n{env}"
    );
    let out = inject_ok(&["--image", IMAGE], &deployment);
    let d = &docs(&out.stdout)[0];
    for (i, value) in tricky.iter().enumerate() {
        let got = at(
            d,
            &format!("spec.template.spec.containers[0].env[{i}].value"),
        );
        assert_eq!(
            got,
            &Value::String((*value).to_string()),
            "V{i} = {value:?}\n{}",
            out.stdout
        );
    }
    assert_eq!(d["metadata"]["annotations"]["on"], "yes");
    // The document is edited, not rewritten: what was not changed is as it was written.
    assert!(
        out.stdout
            .contains("  annotations: {\"on\": \"yes\", \"y\": \"1_000\"}\n"),
        "{}",
        out.stdout
    );
    kubernetes_validate("tricky", &out.stdout);
}

#[test]
fn documents_without_a_pod_spec_pass_through_byte_for_byte() {
    let input = "# leading comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c  # why\ndata:\n  \
                 flag: yes\n  anchor: &a value\n  alias: *a\n---\napiVersion: v1\nkind: Service\n\
                 metadata: {name: s}\nspec: {ports: [{port: 80}]}";
    let out = inject_ok(&["--image", IMAGE], input);
    // Not even a newline is added at the end (it would change the value of a final `|` block).
    assert_eq!(out.stdout, input);
    assert!(out.stderr.contains("no pod spec found"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// Errors

#[test]
fn unparseable_yaml_exits_2_naming_the_document() {
    let input = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: Secret\n\
                 metadata: {name: s}\nstringData:\n  password: \"hunter2\n  user: [admin\n";
    let out = inject(&["--image", IMAGE], input);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .starts_with("pullcheck: error: stdin: document 2: not valid YAML at line "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(", column "), "{}", out.stderr);
    assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);

    // A duplicate key: the message says so without quoting the key.
    let input = "kind: Pod\nspec:\n  secretKey: 1\n  secretKey: 2\n";
    let out = inject(&["--image", IMAGE], input);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("document 1"), "{}", out.stderr);
    assert!(!out.stderr.contains("secretKey"), "{}", out.stderr);

    // From a file, the file is named.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.yaml");
    std::fs::write(&file, "a: [1,\n").unwrap();
    let out = inject(&["-f", &file.to_string_lossy(), "--image", IMAGE], "");
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains(&format!(
            "{}: document 1: not valid YAML at line 2",
            file.display()
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn unparseable_json_exits_2_naming_the_document() {
    let input =
        "{\"kind\": \"ConfigMap\"}\n{\"kind\": \"Secret\", \"data\": {\"token\": \"c2VjcmV0\",}}\n";
    let out = inject(&["--image", IMAGE], input);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .starts_with("pullcheck: error: stdin: document 2: not valid JSON at line 2, column "),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("c2VjcmV0"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// The node's images, the containers' facts and the node's registry configuration

/// The value of env var `name` of a container, `None` when it is not there.
fn env_var<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
}

const POLICIES_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
                            automountServiceAccountToken: false\n  initContainers:\n  - {name: setup, image: a:1}\n  \
                            containers:\n  - {name: latest, image: b}\n  - {name: pinned, image: 'c:1', imagePullPolicy: Always}\n  \
                            - {name: cached, image: 'd:1', imagePullPolicy: IfNotPresent}\n  \
                            - {name: local, image: 'e:1', imagePullPolicy: Never}\n  - {name: again, image: 'a:1', imagePullPolicy: Always}\n";

/// The pod spec of the one document has no volume left (an empty list where ours were).
/// `injected` (the output of `inject ARGS` on `pod`) is unchanged by `inject ARGS` again, and a
/// run without the route flags takes their volumes out, leaving what `inject` writes alone.
fn injected_again_and_without(args: &[&str], injected: &str, pod: &str) {
    assert_eq!(inject_ok(args, injected).stdout, injected);
    let without = inject_ok(&["--image", IMAGE], injected).stdout;
    assert_no_volumes_of_ours(&without);
    assert_eq!(
        pullcheck_of(&docs(&without)[0], "spec"),
        pullcheck_of(
            &docs(&inject_ok(&["--image", IMAGE], pod).stdout)[0],
            "spec"
        )
    );
}

fn assert_no_volumes_of_ours(text: &str) {
    let doc = &docs(text)[0];
    if let Some(volumes) = doc["spec"].get("volumes") {
        assert_eq!(volumes.as_sequence().map(Vec::len), Some(0), "{text}");
    }
    assert!(
        !pullcheck_of(doc, "spec")
            .as_mapping()
            .unwrap()
            .contains_key("volumeMounts")
    );
}

#[test]
fn node_images_split_images_by_policy_and_mount_a_token_where_the_pod_has_none() {
    let out = inject_ok(&["--image", IMAGE, "--node-images"], POLICIES_POD);
    let doc = &docs(&out.stdout)[0];
    let c = pullcheck_of(doc, "spec");
    // a:1 is IfNotPresent in one container and Always in another: Always. e:1 is Never.
    assert_eq!(
        env_var(c, "PULLCHECK_IMAGES").unwrap()["value"],
        "a:1 b c:1"
    );
    assert_eq!(
        env_var(c, "PULLCHECK_IMAGES_IF_NOT_PRESENT").unwrap()["value"],
        "d:1"
    );
    let node = env_var(c, "PULLCHECK_NODE_NAME").unwrap();
    assert_eq!(node["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
    assert_eq!(
        env_var(c, "PULLCHECK_SERVICE_ACCOUNT_DIR").unwrap()["value"],
        "/var/run/pullcheck/serviceaccount"
    );
    let mount = c["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "pullcheck-serviceaccount")
        .expect("the token's mount");
    assert_eq!(mount["mountPath"], "/var/run/pullcheck/serviceaccount");
    assert_eq!(mount["readOnly"], true);
    // Only the init container mounts it; the pod still turns the automatic token off.
    for app in at(doc, "spec.containers").as_sequence().unwrap() {
        assert!(app.get("volumeMounts").is_none(), "{app:?}");
    }
    assert_eq!(
        at(doc, "spec.automountServiceAccountToken"),
        &Value::Bool(false)
    );
    let volume = at(doc, "spec.volumes")
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "pullcheck-serviceaccount")
        .expect("the token's volume");
    let sources = volume["projected"]["sources"].as_sequence().unwrap();
    assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
    assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(sources[1]["configMap"]["items"][0]["key"], "ca.crt");
    assert_eq!(sources[1]["configMap"]["items"][0]["path"], "ca.crt");
    kubernetes_validate("node-images", &out.stdout);
    // Byte for byte the same when injected again, and by default (the flag is inject's default
    // now); back to every image in PULLCHECK_IMAGES with --no-node-images.
    let twice = inject_ok(&["--image", IMAGE, "--node-images"], &out.stdout);
    assert_eq!(twice.stdout, out.stdout);
    let by_default = inject_ok(&["--image", IMAGE], &out.stdout);
    assert_eq!(by_default.stdout, out.stdout);
    let without = inject_ok(&["--image", IMAGE, "--no-node-images"], &out.stdout).stdout;
    assert_no_volumes_of_ours(&without);
    let c = pullcheck_of(&docs(&without)[0], "spec").clone();
    assert_eq!(
        env_var(&c, "PULLCHECK_IMAGES").unwrap()["value"],
        "a:1 b c:1 d:1"
    );
    for gone in [
        "PULLCHECK_IMAGES_IF_NOT_PRESENT",
        "PULLCHECK_NODE_NAME",
        "PULLCHECK_SERVICE_ACCOUNT_DIR",
    ] {
        assert!(env_var(&c, gone).is_none(), "{gone}");
    }
    assert!(!without.contains("pullcheck-serviceaccount"), "{without}");

    // A pod with the automatic token keeps using it: no volume of ours, no directory.
    let with_token =
        POLICIES_POD.replace("automountServiceAccountToken: false", "hostNetwork: false");
    let out = inject_ok(&["--image", IMAGE, "--node-images"], &with_token);
    let c = pullcheck_of(&docs(&out.stdout)[0], "spec").clone();
    assert!(env_var(&c, "PULLCHECK_NODE_NAME").is_some());
    assert!(env_var(&c, "PULLCHECK_SERVICE_ACCOUNT_DIR").is_none());
    assert!(!out.stdout.contains("pullcheck-serviceaccount"));

    // A pod of Always images needs nothing of the node: no name, no token, even where the pod
    // turns the automatic token off.
    let always = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
                  automountServiceAccountToken: false\n  containers:\n  - {name: a, image: b}\n  \
                  - {name: c, image: 'c:1', imagePullPolicy: Always}\n";
    let out = inject_ok(&["--image", IMAGE], always);
    let c = pullcheck_of(&docs(&out.stdout)[0], "spec").clone();
    assert_eq!(env_var(&c, "PULLCHECK_IMAGES").unwrap()["value"], "b c:1");
    for absent in ["PULLCHECK_IMAGES_IF_NOT_PRESENT", "PULLCHECK_NODE_NAME"] {
        assert!(env_var(&c, absent).is_none(), "{absent}");
    }
    assert!(!out.stdout.contains("pullcheck-serviceaccount"));
    // What counts, for every pod: an outage only warns, and the network is named.
    assert_eq!(
        env_var(&c, "PULLCHECK_ON_UNREACHABLE").unwrap()["value"],
        "warn"
    );
    assert_eq!(env_var(&c, "PULLCHECK_NETWORK").unwrap()["value"], "pod");
    let host = always.replace(
        "restartPolicy: Never",
        "restartPolicy: Never\n  hostNetwork: true",
    );
    let out = inject_ok(&["--image", IMAGE], &host);
    let c = pullcheck_of(&docs(&out.stdout)[0], "spec").clone();
    assert_eq!(env_var(&c, "PULLCHECK_NETWORK").unwrap()["value"], "host");
}

#[test]
fn containers_facts_are_handed_to_the_init_container() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
               securityContext: {runAsNonRoot: true}\n  initContainers:\n  \
               - {name: setup, image: a:1, command: [sh], securityContext: {runAsUser: 0}}\n  \
               - {name: proxy, image: p:1, restartPolicy: Always, args: [-v]}\n  containers:\n  \
               - {name: app, image: ' b:1 ', securityContext: {runAsNonRoot: false}, command: []}\n  \
               - {name: local, image: n:1, imagePullPolicy: Never}\n  volumes:\n  \
               - {name: model, image: {reference: m:1}}\n";
    let out = inject_ok(&["--image", IMAGE], pod);
    let c = pullcheck_of(&docs(&out.stdout)[0], "spec").clone();
    let json = env_var(&c, "PULLCHECK_CONTAINERS").unwrap()["value"]
        .as_str()
        .unwrap()
        .to_string();
    use pullcheck::container_start::{ContainerFacts, ContainerKind, SecurityFacts};
    let sc = |non_root, user| SecurityFacts {
        run_as_non_root: non_root,
        run_as_user: user,
    };
    let none = SecurityFacts::default();
    // No image volume (no process), no Never container; effective values, an empty command is
    // none, the image trimmed as in PULLCHECK_IMAGES.
    let want = vec![
        ContainerFacts::from_spec(
            "setup",
            "a:1",
            Some(ContainerKind::Init),
            true,
            false,
            &sc(Some(true), None),
            &sc(None, Some(0)),
        ),
        ContainerFacts::from_spec(
            "proxy",
            "p:1",
            Some(ContainerKind::Sidecar),
            false,
            true,
            &sc(Some(true), None),
            &none,
        ),
        ContainerFacts::from_spec(
            "app",
            "b:1",
            Some(ContainerKind::App),
            false,
            false,
            &sc(Some(true), None),
            &sc(Some(false), None),
        ),
    ];
    assert_eq!(ContainerFacts::parse_list(&json).unwrap(), want);
    assert_eq!(env_images(&c), "a:1 p:1 b:1 m:1");
    // A pod whose facts do not fit the variable gets none, and a warning.
    let mut big = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  containers:\n",
    );
    for i in 0..700 {
        big.push_str(&format!("  - {{name: container-with-a-long-name-{i:04}, image: 'registry.example.com/team/image-{i}:v1'}}\n"));
    }
    let out = inject_ok(&["--image", IMAGE], &big);
    let c = pullcheck_of(&docs(&out.stdout)[0], "spec").clone();
    assert!(env_var(&c, "PULLCHECK_CONTAINERS").is_none());
    assert!(
        out.stderr.contains("PULLCHECK_CONTAINERS may hold"),
        "{}",
        out.stderr
    );
    assert_eq!(
        inject_ok(&["--image", IMAGE], &out.stdout).stdout,
        out.stdout
    );
}

#[test]
fn route_flags_mount_optional_configmaps_and_pass_their_arguments() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
               containers: [{name: a, image: 'a:1'}]\n";
    let args = [
        "--image",
        IMAGE,
        "--hosts-configmap",
        "node-hosts",
        "--",
        "--timeout",
        "20s",
    ];
    let out = inject_ok(&args, pod);
    assert!(!out.stderr.contains("hostPath"), "{}", out.stderr);
    let doc = &docs(&out.stdout)[0];
    let c = pullcheck_of(doc, "spec");
    let got: Vec<&str> = c["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        got,
        [
            "check",
            "--timeout",
            "20s",
            "--hosts-dir",
            "/etc/pullcheck/hosts.d"
        ]
    );
    let mount = &c["volumeMounts"][0];
    assert_eq!(mount["name"], "pullcheck-hosts");
    assert_eq!(mount["mountPath"], "/etc/pullcheck/hosts.d");
    assert_eq!(mount["readOnly"], true);
    let volume = &at(doc, "spec.volumes")[0];
    assert_eq!(volume["configMap"]["name"], "node-hosts");
    assert_eq!(volume["configMap"]["optional"], true);
    kubernetes_validate("hosts-configmap", &out.stdout);
    injected_again_and_without(&args, &out.stdout, pod);

    let out = inject_ok(
        &[
            "--image",
            IMAGE,
            "--registries-configmap",
            "node-registries",
        ],
        pod,
    );
    let doc = &docs(&out.stdout)[0];
    let c = pullcheck_of(doc, "spec");
    assert_eq!(c["args"][1], "--registries-conf");
    assert_eq!(c["args"][2], "/etc/pullcheck/registries");
    assert_eq!(at(doc, "spec.volumes")[0]["configMap"]["optional"], true);
    assert_eq!(c["volumeMounts"][0]["readOnly"], true);
    kubernetes_validate("registries-configmap", &out.stdout);

    // The node's own directory: hostPath, read-only, and a warning about Pod Security.
    let out = inject_ok(&["--image", IMAGE, "--hosts-from-node"], pod);
    assert!(
        out.stderr.contains("hostPath") && out.stderr.contains("baseline"),
        "{}",
        out.stderr
    );
    let doc = &docs(&out.stdout)[0];
    let volume = &at(doc, "spec.volumes")[0];
    assert_eq!(volume["hostPath"]["path"], "/etc/containerd/certs.d");
    let c = pullcheck_of(doc, "spec");
    assert_eq!(c["volumeMounts"][0]["readOnly"], true);
    assert_eq!(c["args"][1], "--hosts-dir");
    kubernetes_validate("hosts-from-node", &out.stdout);
    assert_eq!(
        inject_ok(&["--image", IMAGE, "--hosts-from-node"], &out.stdout).stdout,
        out.stdout
    );
    let out = inject_ok(
        &["--image", IMAGE, "--hosts-from-node", "/etc/k3s/certs.d"],
        pod,
    );
    assert!(
        out.stdout.contains("path: /etc/k3s/certs.d"),
        "{}",
        out.stdout
    );

    // A CRI-O node's own containers folder: hostPath, read-only, the same Pod Security
    // warning, and the file, the drop-in folder and certs.d named apart, written so, byte
    // for byte.
    let args = ["--image", IMAGE, "--registries-from-node"];
    let out = inject_ok(&args, pod);
    assert!(
        out.stderr.contains(
            "--registries-from-node mounts /etc/containers with a hostPath volume, which the \
             `baseline` and `restricted` Pod Security levels refuse; use --registries-configmap \
             in such namespaces"
        ),
        "{}",
        out.stderr
    );
    for written in [
        "spec:\n  restartPolicy: Never\n  volumes:\n  - name: pullcheck-node-registries\n    \
         hostPath:\n      path: /etc/containers\n      type: DirectoryOrCreate\n  initContainers:\n",
        "    args: [check, --registries-conf, /etc/pullcheck/node-containers/registries.conf, \
         --registries-conf-dir, /etc/pullcheck/node-containers/registries.conf.d, --certs-dir, \
         /etc/pullcheck/node-containers/certs.d]\n",
        "    volumeMounts:\n    - name: pullcheck-node-registries\n      \
         mountPath: /etc/pullcheck/node-containers\n      readOnly: true\n",
    ] {
        assert!(
            out.stdout.contains(written),
            "{written}\n--- in:\n{}",
            out.stdout
        );
    }
    kubernetes_validate("registries-from-node", &out.stdout);
    injected_again_and_without(&args, &out.stdout, pod);
    let out = inject_ok(
        &[
            "--image",
            IMAGE,
            "--registries-from-node",
            "/etc/crio/containers",
        ],
        pod,
    );
    assert!(
        out.stdout.contains("path: /etc/crio/containers\n"),
        "{}",
        out.stdout
    );
    // The environment variable names it too.
    let out = pullcheck()
        .args(["inject", "--image", IMAGE])
        .env("PULLCHECK_INJECT_REGISTRIES_FROM_NODE", "/etc/containers")
        .stdin(pod)
        .output();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        inject_ok(&["--image", IMAGE, "--registries-from-node"], pod).stdout
    );

    // Environment variables set to nothing turn the choices off.
    let out = pullcheck()
        .args(["inject", "--image", IMAGE])
        .env("PULLCHECK_INJECT_HOSTS_FROM_NODE", "")
        .env("PULLCHECK_INJECT_HOSTS_CONFIGMAP", "")
        .env("PULLCHECK_INJECT_REGISTRIES_CONFIGMAP", "")
        .env("PULLCHECK_INJECT_REGISTRIES_FROM_NODE", "")
        .stdin(pod)
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, inject_ok(&["--image", IMAGE], pod).stdout);

    // Refused at once: two runtimes, a bad name, a relative path, a flag the user also gave,
    // a check argument of the other runtime.
    for (bad, why) in [
        (
            &["--hosts-configmap", "h", "--registries-configmap", "r"][..],
            "describe different runtimes",
        ),
        (&["--hosts-configmap", "Not_A_Name"], "not a ConfigMap name"),
        (&["--hosts-from-node", "etc/containerd"], "an absolute path"),
        (
            &[
                "--registries-configmap",
                "r",
                "--",
                "--registries-conf",
                "/x",
            ],
            "cannot be used multiple times",
        ),
        (
            &["--registries-from-node", "--hosts-from-node"],
            "describe different runtimes",
        ),
        (
            &["--registries-from-node", "--hosts-configmap", "h"],
            "describe different runtimes",
        ),
        (
            &["--registries-from-node", "--registries-configmap", "r"],
            "both give registries.conf",
        ),
        (
            &["--registries-from-node", "etc/containers"],
            "an absolute path",
        ),
        (
            &["--registries-from-node", "/etc/../root"],
            "an absolute path",
        ),
        (
            &[
                "--registries-from-node",
                "--",
                "--registries-conf-dir",
                "/x",
            ],
            "cannot be used multiple times",
        ),
        (
            &["--registries-from-node", "--", "--hosts-dir", "/x"],
            "describe different runtimes",
        ),
        (
            &["--registries-configmap", "r", "--", "--hosts-dir", "/x"],
            "describe different runtimes",
        ),
    ] {
        let mut args = vec!["--image", IMAGE];
        args.extend_from_slice(bad);
        let out = inject(&args, pod);
        assert_eq!(out.code, 2, "{bad:?}: {}", out.stderr);
        assert!(out.stderr.contains(why), "{bad:?}: {}", out.stderr);
        assert!(out.stdout.is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// The kubelet's credential-provider plugins

/// A CredentialProviderConfig with one provider that asks for service-account tokens and one
/// that does not.
const PROVIDER_CONFIG: &str = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n\
                               providers:\n- name: acr-credential-provider\n  matchImages: ['*.azurecr.io']\n  \
                               defaultCacheDuration: 10m\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  \
                               tokenAttributes:\n    serviceAccountTokenAudience: api://AzureADTokenExchange\n    \
                               requireServiceAccount: true\n\
                               - name: plain\n  matchImages: ['registry.corp']\n  defaultCacheDuration: 1m\n  \
                               apiVersion: credentialprovider.kubelet.k8s.io/v1\n";

const TOKEN_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
                         containers: [{name: a, image: 'x.azurecr.io/a:1'}]\n";

/// Writes `text` as a config file in `dir`; returns its path.
fn provider_config(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn credential_provider_config_adds_a_token_volume_with_the_configured_audience() {
    let dir = tempfile::tempdir().unwrap();
    let config = provider_config(dir.path(), "providers.yaml", PROVIDER_CONFIG);
    let args = ["--image", IMAGE, "--credential-provider-config", &config];
    let out = inject_ok(&args, TOKEN_POD);
    let doc = &docs(&out.stdout)[0];
    let volumes = at(doc, "spec.volumes").as_sequence().unwrap();
    assert_eq!(volumes.len(), 1, "{}", out.stdout);
    let volume = &volumes[0];
    assert_eq!(volume["name"], "pullcheck-provider-tokens");
    let sources = volume["projected"]["sources"].as_sequence().unwrap();
    // Only the provider with tokenAttributes gets a token.
    assert_eq!(sources.len(), 1);
    let token = &sources[0]["serviceAccountToken"];
    assert_eq!(token["audience"], "api://AzureADTokenExchange");
    assert_eq!(token["path"], "acr-credential-provider/token");
    assert!(token["expirationSeconds"].as_u64().unwrap() >= 600);
    let c = pullcheck_of(doc, "spec");
    let mount = &c["volumeMounts"][0];
    assert_eq!(mount["name"], "pullcheck-provider-tokens");
    assert_eq!(
        mount["mountPath"],
        "/var/run/secrets/pullcheck/credential-providers"
    );
    assert_eq!(mount["readOnly"], true);
    assert_eq!(
        env_var(c, "PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR").unwrap()["value"],
        "/var/run/secrets/pullcheck/credential-providers"
    );
    // The config and the plugins are the user's to pass and mount: nothing else is added.
    assert_eq!(c["args"].as_sequence().unwrap().len(), 1, "{:?}", c["args"]);
    for app in at(doc, "spec.containers").as_sequence().unwrap() {
        assert!(app.get("volumeMounts").is_none(), "{app:?}");
    }
    kubernetes_validate("credential-provider-tokens", &out.stdout);

    // Injecting twice is injecting once, byte for byte, also with other volumes of ours and
    // the user's; without the flag, the volume goes again.
    assert_eq!(inject_ok(&args, &out.stdout).stdout, out.stdout);
    let busy = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
                automountServiceAccountToken: false\n  imagePullSecrets: [{name: regcred}]\n  \
                volumes: [{name: data, emptyDir: {}}]\n  \
                containers: [{name: a, image: 'x.azurecr.io/a:1', volumeMounts: [{name: data, mountPath: /d}]}]\n";
    let busy_args = [
        "--image",
        IMAGE,
        "--node-images",
        "--credential-provider-config",
        &config,
    ];
    let once = inject_ok(&busy_args, busy).stdout;
    kubernetes_validate("credential-provider-tokens-busy", &once);
    assert_eq!(inject_ok(&busy_args, &once).stdout, once);
    let names_of = |text: &str| names(at(&docs(text)[0], "spec.volumes"));
    assert!(names_of(&once).contains(&"pullcheck-provider-tokens".to_string()));
    let without = inject_ok(&["--image", IMAGE, "--node-images"], &once).stdout;
    assert!(!without.contains("pullcheck-provider-tokens"), "{without}");
    assert!(!without.contains("PULLCHECK_CREDENTIAL_PROVIDER_TOKEN_DIR"));
    assert_eq!(
        without,
        inject_ok(&["--image", IMAGE, "--node-images"], busy).stdout
    );

    // The environment variable names the file too; set to nothing it turns the choice off.
    for (value, added) in [(config.as_str(), true), ("", false)] {
        let got = pullcheck()
            .args(["inject", "--image", IMAGE])
            .env("PULLCHECK_INJECT_CREDENTIAL_PROVIDER_CONFIG", value)
            .stdin(TOKEN_POD)
            .output();
        assert!(
            got.status.success(),
            "{}",
            String::from_utf8_lossy(&got.stderr)
        );
        let text = String::from_utf8(got.stdout).unwrap();
        assert_eq!(text.contains("pullcheck-provider-tokens"), added, "{text}");
    }
}

#[test]
fn credential_provider_config_without_token_attributes_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plain = PROVIDER_CONFIG
        .split("- name: plain")
        .nth(1)
        .map(|rest| {
            format!(
                "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n\
                 providers:\n- name: plain{rest}"
            )
        })
        .unwrap();
    let config = provider_config(dir.path(), "plain.yaml", &plain);
    let out = inject_ok(
        &["--image", IMAGE, "--credential-provider-config", &config],
        TOKEN_POD,
    );
    assert_eq!(out.stdout, inject_ok(&["--image", IMAGE], TOKEN_POD).stdout);
    assert!(!out.stdout.contains("pullcheck-provider-tokens"));
}

#[test]
fn malformed_credential_provider_config_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.yaml").display().to_string();
    for (name, text) in [
        ("garbage.yaml", Some("providers: [unclosed\n")),
        (
            "wrong-kind.yaml",
            Some(&*PROVIDER_CONFIG.replace("kind: CredentialProviderConfig", "kind: Pod")),
        ),
        ("absent.yaml", None),
    ] {
        let path = match text {
            Some(text) => provider_config(dir.path(), name, text),
            None => missing.clone(),
        };
        let out = inject(
            &["--image", IMAGE, "--credential-provider-config", &path],
            TOKEN_POD,
        );
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{name}");
        assert!(
            out.stderr.contains(&path) && out.stderr.contains("--credential-provider-config"),
            "{name}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_pod_volume_named_like_the_token_volume_is_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let config = provider_config(dir.path(), "providers.yaml", PROVIDER_CONFIG);
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  \
               volumes: [{name: pullcheck-provider-tokens, emptyDir: {}}]\n  \
               containers: [{name: a, image: 'a:1', volumeMounts: [{name: pullcheck-provider-tokens, mountPath: /t}]}]\n";
    let out = inject_ok(
        &["--image", IMAGE, "--credential-provider-config", &config],
        pod,
    );
    assert_eq!(out.stdout, pod);
    assert!(
        out.stderr.contains("pullcheck-provider-tokens") && out.stderr.contains("left unchanged"),
        "{}",
        out.stderr
    );
}
