//! The Helm chart `charts/pullcheck/` with a real `helm` v3.22.0, built from its Go module by
//! `tests/cluster/build-helm.sh`: `helm lint`; what `helm template` renders with the default
//! values (`mode: watch`), in each mode, with cert-manager's, and with every `inject` option set
//! (each option of
//! `pullcheck inject --help` must have its value); the plain manifests of `deploy/`, which must
//! be what the chart renders (`PULLCHECK_BLESS=1` writes them); the real API server's
//! `kubectl apply --dry-run=server` of the render; and `helm install` on the test cluster.
//!
//! lint, template and `deploy/` need only the `helm` binary, not the cluster or root.

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::harness::{cluster, minutes, repo, wait_for};

/// The release name and namespace `deploy/` is rendered with.
const RELEASE: &str = "pullcheck";

/// `helm`, from `tests/cluster/build-helm.sh` (cached: a second).
fn helm_bin() -> &'static Path {
    static HELM: OnceLock<PathBuf> = OnceLock::new();
    HELM.get_or_init(|| crate::harness::built_by("build-helm.sh", "helm"))
}

/// Helm's own state (repositories, cache, plugins) in a folder of the test binary's, so that no
/// user's configuration takes part.
fn helm_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().expect("tempdir"))
        .path()
}

pub fn helm_cmd(args: &[&str]) -> Command {
    let home = helm_home();
    let mut cmd = Command::new(helm_bin());
    cmd.args(args)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null());
    cmd
}

/// `helm ARGS…`, which must succeed; its standard output.
pub fn helm(args: &[&str]) -> String {
    let out = helm_cmd(args).output().expect("run helm");
    assert!(
        out.status.success(),
        "helm {}: {}\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn chart() -> String {
    repo().join("charts/pullcheck").display().to_string()
}

/// `helm template RELEASE charts/pullcheck -n NAMESPACE ARGS…`.
fn template(namespace: &str, args: &[&str]) -> String {
    let chart = chart();
    let mut all = vec!["template", RELEASE, &chart, "--namespace", namespace];
    all.extend_from_slice(args);
    helm(&all)
}

/// The documents of a rendered manifest, as JSON values (empty documents dropped).
fn documents(yaml: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).expect("helm renders YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn kinds(docs: &[Value]) -> BTreeSet<String> {
    docs.iter()
        .map(|d| d["kind"].as_str().expect("kind").to_string())
        .collect()
}

fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} in the render: {found:#?}");
    found[0]
}

/// The document of `kind` named `name`.
fn named<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name} in the render"))
}

/// The one rule that lets the webhook read the namespaces' LimitRanges (so that the init
/// container's resources pass them; `watch` keeps them in its memory), bound to its account,
/// whatever the other values.
fn limit_ranges_rule(docs: &[Value]) {
    let role = named(docs, "ClusterRole", "pullcheck-limitranges");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["limitranges"], "verbs": ["get", "list", "watch"]}])
    );
    let binding = named(docs, "ClusterRoleBinding", "pullcheck-limitranges");
    assert_eq!(binding["roleRef"]["name"], "pullcheck-limitranges");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "pullcheck", "namespace": "pullcheck"}])
    );
}

fn webhook_container(docs: &[Value]) -> &Value {
    let deployment = one(docs, "Deployment");
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "one container: {containers:#?}");
    &containers[0]
}

fn args(container: &Value) -> Vec<String> {
    container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

#[test]
fn helm_is_the_release_it_is_built_from() {
    let out = helm(&["version", "--template", "{{ .Version }}"]);
    assert_eq!(out.trim(), "v3.22.0");
}

#[test]
fn chart_lints_clean() {
    let chart = chart();
    for values in [
        &[][..],
        &["--set", "certManager.enabled=true"][..],
        &["--set", "mode=init"][..],
        &["--set", "mode=both"][..],
        &["--set", "serviceMonitor.enabled=true"][..],
    ] {
        let mut all = vec!["lint", "--strict", &chart];
        all.extend_from_slice(values);
        let out = helm(&all);
        assert!(
            out.contains("1 chart(s) linted, 0 chart(s) failed"),
            "helm lint {values:?}:\n{out}"
        );
    }
}

#[test]
fn chart_renders_the_webhook_with_its_own_certificate() {
    // The webhook alone (mode init); the watcher's part is chart_renders_the_watcher.
    let docs = documents(&template("pullcheck", &["--set", "mode=init"]));
    assert_eq!(
        kinds(&docs),
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "MutatingWebhookConfiguration",
            "PodDisruptionBudget",
            "Service",
            "ServiceAccount",
        ]
        .into_iter()
        .map(String::from)
        .collect()
    );

    let deployment = one(&docs, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "pullcheck");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["pullcheck.dev/inject"],
        "false"
    );
    assert_eq!(
        pod["securityContext"],
        json!({"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
               "seccompProfile": {"type": "RuntimeDefault"}})
    );
    let c = webhook_container(&docs);
    assert_eq!(c["image"], "ghcr.io/pullcheck/pullcheck-cluster:0.1.0");
    assert_eq!(c["command"], json!(["/pullcheck", "webhook"]));
    assert_eq!(
        args(c),
        [
            "--listen=:8443",
            "--self-signed",
            "--service=pullcheck-webhook",
            "--webhook-configuration=pullcheck",
            "--mode=init",
            "--image=ghcr.io/pullcheck/pullcheck-cluster:0.1.0",
            "--job-failure-policy",
        ]
    );
    assert_eq!(
        c["env"],
        json!([{"name": "PULLCHECK_WEBHOOK_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}])
    );
    assert_eq!(
        c["ports"],
        json!([{"name": "https", "containerPort": 8443, "protocol": "TCP"}])
    );
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        assert_eq!(
            c[probe]["httpGet"],
            json!({"path": path, "port": "https", "scheme": "HTTPS"}),
            "{probe}"
        );
    }
    assert_eq!(
        c["securityContext"],
        json!({"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
               "runAsNonRoot": true, "runAsUser": 65532, "capabilities": {"drop": ["ALL"]}})
    );
    assert!(c["resources"]["requests"]["cpu"].is_string(), "{c:#}");
    assert!(c["resources"]["requests"]["memory"].is_string(), "{c:#}");
    assert!(c.get("volumeMounts").is_none(), "{c:#}");

    let service = one(&docs, "Service");
    assert_eq!(service["metadata"]["name"], "pullcheck-webhook");
    assert_eq!(
        service["spec"]["ports"],
        json!([{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}])
    );
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    let pdb = one(&docs, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert_eq!(pdb["spec"]["selector"], deployment["spec"]["selector"]);

    // Least privilege: get and patch on the one configuration, bound to the webhook's account.
    let role = named(&docs, "ClusterRole", "pullcheck");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": ["admissionregistration.k8s.io"],
                "resources": ["mutatingwebhookconfigurations"],
                "resourceNames": ["pullcheck"],
                "verbs": ["get", "patch"]}])
    );
    let binding = named(&docs, "ClusterRoleBinding", "pullcheck");
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pullcheck"})
    );
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "pullcheck", "namespace": "pullcheck"}])
    );
    limit_ranges_rule(&docs);
    assert!(
        docs.iter()
            .all(|d| d["kind"] != "Role" && d["kind"] != "RoleBinding")
    );
}

/// `webhook.audit=true` passes `--audit`, in each mode; the default passes nothing, so that a
/// release enforces unless asked otherwise; a value that is no boolean fails on the schema.
#[test]
fn chart_passes_audit_only_when_asked() {
    for mode in ["init", "watch", "both"] {
        let set = format!("mode={mode}");
        let docs = documents(&template("pullcheck", &["--set", &set]));
        let container = webhook_container_of(&docs);
        assert!(!args(container).iter().any(|a| a == "--audit"), "{mode}");
        let audited = format!("{set},webhook.audit=true");
        let docs = documents(&template("pullcheck", &["--set", &audited]));
        let container = webhook_container_of(&docs);
        assert!(
            args(container).iter().any(|a| a == "--audit"),
            "{mode}: {:?}",
            args(container)
        );
    }
    let refused = template_refused(&["--set", "webhook.audit=yes please"]);
    assert!(refused.contains(SCHEMA_REFUSED), "{refused}");
}

/// `admission.*` becomes the webhook's verdict flags, UPDATE of Jobs in its configuration and
/// `list` on nodes, only when verdicts (or deny) are on; a duration pullcheck cannot read is
/// refused by the schema.
#[test]
fn chart_renders_admission_verdicts_only_when_asked() {
    for mode in ["init", "watch", "both"] {
        let set = format!("mode={mode}");
        let docs = documents(&template("pullcheck", &["--set", &set]));
        assert!(
            !args(webhook_container_of(&docs))
                .iter()
                .any(|a| a.starts_with("--verdict") || a == "--deny-missing"),
            "{mode}"
        );
        assert!(
            !docs
                .iter()
                .any(|d| d["metadata"]["name"] == "pullcheck-nodes"),
            "{mode}"
        );
        let on = format!(
            "{set},admission.deny=true,admission.budget=750ms,admission.registryConcurrency=2"
        );
        let docs = documents(&template(
            "pullcheck",
            &[
                "--set",
                &on,
                "--set-json",
                "admission.plainHttp=[\"registry.example:5000\"]",
            ],
        ));
        let a = args(webhook_container_of(&docs));
        for want in [
            "--verdicts",
            "--deny-missing",
            "--verdict-budget=750ms",
            "--verdict-ttl=10m",
            "--verdict-miss-ttl=30s",
            "--verdict-registry-concurrency=2",
            "--verdict-plain-http=registry.example:5000",
        ] {
            assert!(a.iter().any(|x| x == want), "{mode}: {want} in {a:?}");
        }
        let config = one(&docs, "MutatingWebhookConfiguration");
        let jobs = config["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .find(|w| w["name"] == "jobs.pullcheck.dev")
            .expect("the Jobs' webhook");
        assert_eq!(
            jobs["rules"][0]["operations"],
            json!(["CREATE", "UPDATE"]),
            "{mode}"
        );
        assert_eq!(
            named(&docs, "ClusterRole", "pullcheck-nodes")["rules"],
            json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])
        );
    }
    // The pods' own pull secrets: get on Secrets and ServiceAccounts where listed, and the flag.
    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "admission.verdicts=true,admission.readPullSecrets.enabled=true",
            "--set-json",
            "admission.readPullSecrets.namespaces=[\"team-a\"]",
        ],
    ));
    assert!(
        args(webhook_container_of(&docs))
            .iter()
            .any(|a| a == "--read-pull-secrets")
    );
    let role = docs
        .iter()
        .find(|d| {
            d["kind"] == "Role" && d["metadata"]["name"] == "pullcheck-admission-pull-secrets"
        })
        .expect("the Role in team-a");
    assert_eq!(role["metadata"]["namespace"], "team-a");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["secrets", "serviceaccounts"], "verbs": ["get"]}])
    );
    // Without the verdicts, no flag and no right.
    let docs = documents(&template(
        "pullcheck",
        &["--set", "admission.readPullSecrets.enabled=true"],
    ));
    assert!(
        !docs
            .iter()
            .any(|d| d["metadata"]["name"] == "pullcheck-admission-pull-secrets")
    );
    for set in ["admission.budget=soon", "admission.registryConcurrency=0"] {
        let refused = template_refused(&["--set", set]);
        assert!(refused.contains(SCHEMA_REFUSED), "{set}: {refused}");
    }
}

/// The webhook's container of a render in any mode (the watcher's beside it in watch and both).
fn webhook_container_of(docs: &[Value]) -> &Value {
    let deployment = one(docs, "Deployment");
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["command"] == json!(["/pullcheck", "webhook"]))
        .expect("the webhook's container")
}

/// The pods webhook's condition: the API server sends a pod only when it has no init container
/// of pullcheck's (a Job's pods, and the reinvocation, cost no call).
const WITHOUT_PULLCHECK: &str = "!has(object.spec.initContainers) || \
     !object.spec.initContainers.exists(c, c.name == 'pullcheck')";

/// One webhook of the configuration: `resource` of `group`, CREATE only, never blocking, no
/// caBundle (the webhook writes it), in the namespaces `selected` selects but the release's;
/// pods only when they lack pullcheck's container.
fn webhook_entry(resource: &str, group: &str, selected: Value) -> Value {
    let mut entry = json!({
        "name": format!("{resource}.pullcheck.dev"),
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "pullcheck-webhook", "namespace": "pullcheck",
                                     "path": "/mutate", "port": 443}},
        "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "resources": [resource],
                   "operations": ["CREATE"], "scope": "Namespaced"}],
        "failurePolicy": "Ignore",
        "timeoutSeconds": 2,
        "sideEffects": "None",
        "reinvocationPolicy": "IfNeeded",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchExpressions": [
            selected,
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["pullcheck"]},
        ]},
    });
    if resource == "pods" {
        entry["matchConditions"] =
            json!([{"name": "without-pullcheck", "expression": WITHOUT_PULLCHECK}]);
    }
    entry
}

#[test]
fn chart_renders_the_webhook_configuration() {
    let config_of = |values: &[&str]| {
        let docs = documents(&template("pullcheck", values));
        one(&docs, "MutatingWebhookConfiguration").clone()
    };
    // mode watch (the default): no pod is sent, Jobs and CronJobs are, from the namespaces of
    // the watcher's own label, so that one label opts a namespace in.
    let config = config_of(&[]);
    assert_eq!(config["metadata"]["name"], "pullcheck");
    assert!(
        config["metadata"].get("annotations").is_none(),
        "{config:#}"
    );
    let watched = json!({"key": "pullcheck.dev/watch", "operator": "In", "values": ["enabled"]});
    assert_eq!(
        config["webhooks"],
        json!([
            webhook_entry("jobs", "batch", watched.clone()),
            webhook_entry("cronjobs", "batch", watched),
        ])
    );
    // The watcher's label given as a bare key: any value.
    let config = config_of(&["--set", "watch.namespaceLabel=example.com/stuck-pods"]);
    assert_eq!(
        config["webhooks"][0]["namespaceSelector"]["matchExpressions"][0],
        json!({"key": "example.com/stuck-pods", "operator": "Exists"})
    );
    // init and both: today's injection, Pods and Jobs, from namespaceLabel.
    let injected = json!({"key": "pullcheck.dev/inject", "operator": "In", "values": ["enabled"]});
    for mode in ["mode=init", "mode=both"] {
        assert_eq!(
            config_of(&["--set", mode])["webhooks"],
            json!([
                webhook_entry("pods", "", injected.clone()),
                webhook_entry("jobs", "batch", injected.clone()),
            ]),
            "{mode}"
        );
    }
    // With the verdicts too: a pod that has the container checks its images as it starts.
    let config = config_of(&["--set", "mode=both", "--set", "admission.verdicts=true"]);
    assert_eq!(
        config["webhooks"][0]["matchConditions"],
        json!([{"name": "without-pullcheck", "expression": WITHOUT_PULLCHECK}])
    );
}

/// `helm template RELEASE charts/pullcheck ARGS…`, which must fail; its standard error.
fn template_refused(args: &[&str]) -> String {
    let chart = chart();
    let mut all = vec!["template", RELEASE, &chart];
    all.extend_from_slice(args);
    let out = helm_cmd(&all).output().expect("run helm");
    assert!(
        !out.status.success(),
        "helm {}: rendered\n{}",
        all.join(" "),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The start of what helm says when the values break `values.schema.json` (Helm checks the
/// schema before it renders, on install, upgrade, template and lint alike).
const SCHEMA_REFUSED: &str = "values don't meet the specifications of the schema(s)";

/// A bad mode, and `watch.enabled` (which `mode` replaced), fail the render with a message
/// that says what to set. The schema refuses a bad mode first, naming the three; the chart's
/// own check stands behind it for a render that skips the schema. `watch.enabled` the schema
/// lets through, so that the chart's message, which says which mode to set, is the one shown.
#[test]
fn chart_refuses_a_bad_mode_and_the_old_watch_enabled() {
    for (args, want) in [
        (
            &["--set", "mode=sidecar"][..],
            "at '/mode': value must be one of 'watch', 'init', 'both'",
        ),
        (
            &["--set", "mode=sidecar", "--skip-schema-validation"][..],
            "mode must be watch, init or both, not sidecar",
        ),
        (
            &["--set", "watch.enabled=false"][..],
            "watch.enabled is replaced by mode: mode=init",
        ),
        (
            &["--set", "watch.enabled=true"][..],
            "watch.enabled is replaced by mode",
        ),
    ] {
        let stderr = template_refused(args);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

/// `values.schema.json`: a key the chart does not read, at any level it owns, a value of the
/// wrong type and a mode that is none of the three fail the render with the schema's message,
/// which names the key; the objects passed through as Kubernetes YAML take any key.
#[test]
fn chart_schema_refuses_mistyped_keys_wrong_types_and_a_bad_mode() {
    for (set, want) in [
        (
            "replica=2",
            "at '': additional properties 'replica' not allowed",
        ),
        (
            "watch.namespacelabel=pullcheck.dev/watch=enabled",
            "at '/watch': additional properties 'namespacelabel' not allowed",
        ),
        (
            "inject.credentialProviderConfig.configmap=providers",
            "at '/inject/credentialProviderConfig': additional properties 'configmap' not allowed",
        ),
        (
            "serviceMonitor.enable=true",
            "at '/serviceMonitor': additional properties 'enable' not allowed",
        ),
        ("replicas=two", "at '/replicas': got string, want integer"),
        (
            "hostNetwork=yes",
            "at '/hostNetwork': got string, want boolean",
        ),
        (
            "webhook.timeoutSeconds=60",
            "at '/webhook/timeoutSeconds': maximum",
        ),
        ("image.tag=2", "at '/image/tag': got number, want string"),
        (
            "mode=wach",
            "at '/mode': value must be one of 'watch', 'init', 'both'",
        ),
    ] {
        let stderr = template_refused(&["--set", set]);
        assert!(
            stderr.contains(SCHEMA_REFUSED) && stderr.contains(want),
            "{set}: {stderr}"
        );
    }

    // Kubernetes YAML, passed through: open. And a parent chart's globals.
    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "global.imageRegistry=registry.example.com,resources.limits.cpu=1",
            "--set-json",
            r#"affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["infra"]}]}]}}}"#,
            "--set-json",
            r#"tolerations=[{"key":"infra","operator":"Exists","effect":"NoSchedule"}]"#,
            "--set-json",
            r#"podSecurityContext={"runAsNonRoot":true,"fsGroup":65532}"#,
        ],
    ));
    let pod = &one(&docs, "Deployment")["spec"]["template"]["spec"];
    assert_eq!(pod["tolerations"][0]["key"], "infra");
    assert_eq!(
        pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchExpressions"][0]["key"],
        "pool"
    );
    assert_eq!(pod["securityContext"]["fsGroup"], 65532);
    assert_eq!(pod["containers"][0]["resources"]["limits"]["cpu"], 1);
}

/// The watcher (`pullcheck watch`, in mode watch, the default, and both): a second container
/// of the webhook's pods, its flags from the values, and RBAC for what it reads and writes and
/// nothing else; in mode watch the webhook beside it is given only the mode and the watcher's
/// condition type.
#[test]
fn chart_renders_the_watcher() {
    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "watch.grace=30s,watch.graceFor={CreateContainerConfigError=10s},watch.dryRun=true",
        ],
    ));
    let deployment = one(&docs, "Deployment");
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["webhook", "watch"]);
    assert_eq!(
        args(&containers[0]),
        [
            "--listen=:8443",
            "--self-signed",
            "--service=pullcheck-webhook",
            "--webhook-configuration=pullcheck",
            "--mode=watch",
            "--condition-type=ConfigIssue",
        ],
        "no inject flag in mode watch"
    );
    let watch = &containers[1];
    assert_eq!(watch["command"], json!(["/pullcheck", "watch"]));
    assert_eq!(
        args(watch),
        [
            "--listen=:8081",
            "--namespace-label=pullcheck.dev/watch=enabled",
            "--grace=30s",
            "--grace-for=CreateContainerConfigError=10s",
            "--condition-type=ConfigIssue",
            "--dry-run",
            "--lease-name=pullcheck-watch",
            "--lease-duration=15s",
        ]
    );
    assert!(
        watch["readinessProbe"].is_null(),
        "the webhook's Service keeps a replica whatever the watcher's state"
    );
    assert_eq!(watch["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(watch["securityContext"]["readOnlyRootFilesystem"], true);
    let env: BTreeSet<&str> = watch["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(
        env,
        BTreeSet::from(["PULLCHECK_WATCH_NAMESPACE", "PULLCHECK_WATCH_IDENTITY"])
    );

    let named = |kind: &str, name: &str| -> Value {
        docs.iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name}"))
            .clone()
    };
    let cluster_role = named("ClusterRole", "pullcheck-watch");
    assert_eq!(
        cluster_role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
        ])
    );
    let role = named("Role", "pullcheck-watch");
    assert_eq!(role["metadata"]["namespace"], "pullcheck");
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}])
    );
    named("ClusterRoleBinding", "pullcheck-watch");
    named("RoleBinding", "pullcheck-watch");
    // Nothing in any rule of the chart reaches Secrets.
    for doc in docs
        .iter()
        .filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role")
    {
        assert!(!doc["rules"].to_string().contains("secrets"), "{doc:#}");
    }

    // mode both: the same watcher beside today's injection.
    let both = documents(&template("pullcheck", &["--set", "mode=both"]));
    let containers = &one(&both, "Deployment")["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers[1]["args"],
        json!(args(
            &documents(&template("pullcheck", &[]))
                .iter()
                .find(|d| d["kind"] == "Deployment")
                .expect("Deployment")["spec"]["template"]["spec"]["containers"][1]
        ))
    );
    assert!(
        args(&containers[0]).contains(&"--mode=both".to_string())
            && args(&containers[0]).contains(&"--job-failure-policy".to_string()),
        "{containers:#}"
    );
    assert!(both.iter().any(|d| d["kind"] == "Role"));

    // mode init: the webhook alone.
    let off = documents(&template("pullcheck", &["--set", "mode=init"]));
    assert!(!off.iter().any(|d| d["kind"] == "Role"));
    assert_eq!(
        one(&off, "Deployment")["spec"]["template"]["spec"]["containers"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn chart_renders_the_pull_secret_look_only_when_asked() {
    let kinds = |docs: &[Value]| -> Vec<(String, String)> {
        docs.iter()
            .filter(|d| {
                d["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with("-watch-pull-secrets"))
            })
            .map(|d| {
                (
                    d["kind"].as_str().unwrap_or_default().to_string(),
                    d["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect()
    };
    let watch_args = |docs: &[Value]| {
        let deployment = one(docs, "Deployment");
        let containers = deployment["spec"]["template"]["spec"]["containers"]
            .as_array()
            .expect("containers")
            .clone();
        args(&containers[1])
    };
    // Off by default: no Secret is readable, and the look is anonymous.
    let docs = documents(&template("pullcheck", &[]));
    assert!(kinds(&docs).is_empty());
    assert!(
        !watch_args(&docs)
            .iter()
            .any(|a| a == "--confirm-with-pull-secrets")
    );
    // In the namespaces listed: a Role and a RoleBinding in each, `get` on Secrets only.
    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "watch.readPullSecrets.enabled=true",
            "--set-json",
            "watch.readPullSecrets.namespaces=[\"team-a\",\"team-b\"]",
        ],
    ));
    let mut got = kinds(&docs);
    got.sort();
    let want: Vec<(String, String)> = [
        ("Role", "team-a"),
        ("Role", "team-b"),
        ("RoleBinding", "team-a"),
        ("RoleBinding", "team-b"),
    ]
    .iter()
    .map(|(k, n)| (k.to_string(), n.to_string()))
    .collect();
    assert_eq!(got, want);
    assert!(
        watch_args(&docs)
            .iter()
            .any(|a| a == "--confirm-with-pull-secrets")
    );
    for d in docs.iter().filter(|d| d["kind"] == "Role") {
        if d["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.ends_with("-watch-pull-secrets"))
        {
            assert_eq!(
                d["rules"],
                json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
            );
        }
    }
    // None listed: every namespace, by a ClusterRole.
    let docs = documents(&template(
        "pullcheck",
        &["--set", "watch.readPullSecrets.enabled=true"],
    ));
    let mut got = kinds(&docs);
    got.sort();
    assert_eq!(
        got,
        [
            ("ClusterRole".to_string(), String::new()),
            ("ClusterRoleBinding".to_string(), String::new())
        ]
    );
    // mode init has no watcher, and so no Secret to read.
    let docs = documents(&template(
        "pullcheck",
        &["--set", "mode=init,watch.readPullSecrets.enabled=true"],
    ));
    assert!(kinds(&docs).is_empty());
}

#[test]
fn chart_renders_cert_manager_as_the_alternative() {
    let docs = documents(&template(
        "pullcheck",
        &["--set", "certManager.enabled=true,mode=init"],
    ));
    assert_eq!(
        kinds(&docs),
        [
            "Certificate",
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "Issuer",
            "MutatingWebhookConfiguration",
            "PodDisruptionBudget",
            "Service",
            "ServiceAccount",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
        "RBAC for the LimitRanges alone: the webhook writes nothing through the API"
    );
    assert_eq!(
        docs.iter().filter(|d| d["kind"] == "ClusterRole").count(),
        1
    );
    limit_ranges_rule(&docs);
    let config = one(&docs, "MutatingWebhookConfiguration");
    assert_eq!(
        config["metadata"]["annotations"],
        json!({"cert-manager.io/inject-ca-from": "pullcheck/pullcheck-webhook-tls"})
    );
    let cert = one(&docs, "Certificate");
    assert_eq!(cert["metadata"]["name"], "pullcheck-webhook-tls");
    assert_eq!(cert["spec"]["secretName"], "pullcheck-webhook-tls");
    assert_eq!(
        cert["spec"]["dnsNames"],
        json!([
            "pullcheck-webhook.pullcheck.svc",
            "pullcheck-webhook.pullcheck.svc.cluster.local"
        ])
    );
    assert_eq!(
        cert["spec"]["issuerRef"],
        json!({"name": "pullcheck", "kind": "Issuer", "group": "cert-manager.io"})
    );
    assert_eq!(one(&docs, "Issuer")["spec"], json!({"selfSigned": {}}));

    let c = webhook_container(&docs);
    let a = args(c);
    assert!(!a.contains(&"--self-signed".to_string()), "{a:?}");
    assert!(
        a.contains(&"--tls-cert-file=/etc/pullcheck/tls/tls.crt".to_string()),
        "{a:?}"
    );
    assert!(
        a.contains(&"--tls-key-file=/etc/pullcheck/tls/tls.key".to_string()),
        "{a:?}"
    );
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "tls", "mountPath": "/etc/pullcheck/tls", "readOnly": true}])
    );
    assert_eq!(
        one(&docs, "Deployment")["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "tls", "secret": {"secretName": "pullcheck-webhook-tls"}}])
    );

    // An issuer of the operator's own replaces the chart's.
    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "certManager.enabled=true,certManager.issuerRef.name=corp,certManager.issuerRef.kind=ClusterIssuer",
        ],
    ));
    assert!(!kinds(&docs).contains("Issuer"));
    assert_eq!(
        one(&docs, "Certificate")["spec"]["issuerRef"],
        json!({"name": "corp", "kind": "ClusterIssuer", "group": "cert-manager.io"})
    );
}

/// The webhook's replicas spread across nodes by default, so that one node's drain or loss takes
/// one of them; `ScheduleAnyway`, so that a one-node cluster still runs both. A list of the
/// operator's replaces it; `[]` renders none.
#[test]
fn chart_spreads_the_webhook_across_nodes() {
    let spread = |values: &[&str]| {
        let docs = documents(&template("pullcheck", values));
        one(&docs, "Deployment")["spec"]["template"]["spec"]["topologySpreadConstraints"].clone()
    };
    let docs = documents(&template("pullcheck", &[]));
    let deployment = one(&docs, "Deployment");
    assert_eq!(
        spread(&[]),
        json!([{
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": deployment["spec"]["selector"]["matchLabels"]},
            "matchLabelKeys": ["pod-template-hash"],
        }])
    );
    for mode in ["mode=init", "mode=both"] {
        assert_eq!(spread(&["--set", mode]), spread(&[]), "{mode}");
    }
    // null is the chart's own, as when unset.
    assert_eq!(
        spread(&["--set", "topologySpreadConstraints=null"]),
        spread(&[])
    );
    let zones = json!([{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "pullcheck"}}}]);
    let set = format!("topologySpreadConstraints={zones}");
    assert_eq!(spread(&["--set-json", &set]), zones);
    assert!(
        spread(&["--set-json", "topologySpreadConstraints=[]"]).is_null(),
        "[] renders no constraint"
    );
}

/// The port of `container` named `name`, and the port its `--listen=:PORT` serves.
fn served_port(container: &Value, name: &str) -> u64 {
    let port = container["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("a port {name} in {container:#}"))["containerPort"]
        .as_u64()
        .expect("containerPort");
    assert!(
        args(container).contains(&format!("--listen=:{port}")),
        "{} serves {name} ({port}): {:?}",
        container["name"],
        args(container)
    );
    port
}

/// `serviceMonitor.enabled`: a ServiceMonitor whose endpoints are the ports the metrics are
/// really served on. The webhook serves `/metrics` on its one HTTPS port (src/cluster/webhook/server.rs,
/// through src/cluster/serve.rs), the watcher on its plain-HTTP `--listen` (src/cluster/watch/server.rs); each
/// endpoint names a port of the Service the ServiceMonitor selects, whose target is that
/// container's port.
#[test]
fn chart_renders_a_service_monitor_of_the_ports_metrics_are_served_on() {
    let docs = documents(&template("pullcheck", &[]));
    assert!(!kinds(&docs).contains("ServiceMonitor"), "off by default");

    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "serviceMonitor.enabled=true,serviceMonitor.labels.release=kube-prometheus-stack",
        ],
    ));
    let monitor = one(&docs, "ServiceMonitor");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["metadata"]["namespace"], "pullcheck");
    assert_eq!(
        monitor["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    let service = one(&docs, "Service");
    for (k, v) in monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels")
    {
        assert_eq!(
            &service["metadata"]["labels"][k], v,
            "selects the Service by {k}"
        );
    }
    assert_eq!(
        monitor["spec"]["namespaceSelector"],
        json!({"matchNames": ["pullcheck"]})
    );
    assert_eq!(
        monitor["spec"]["endpoints"],
        json!([
            {"port": "https", "scheme": "https", "path": "/metrics", "interval": "30s",
             "tlsConfig": {"insecureSkipVerify": true}},
            {"port": "watch-http", "scheme": "http", "path": "/metrics", "interval": "30s"},
        ]),
        "self-signed: the webhook's CA is in no Secret Prometheus could read"
    );
    let containers = one(&docs, "Deployment")["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .clone();
    for (endpoint, container) in [("https", "webhook"), ("watch-http", "watch")] {
        let port = service["spec"]["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .find(|p| p["name"] == endpoint)
            .unwrap_or_else(|| panic!("the Service has a port {endpoint}: {service:#}"));
        let target = port["targetPort"].as_str().expect("a named targetPort");
        let container = containers
            .iter()
            .find(|c| c["name"] == container)
            .expect("the container");
        served_port(container, target);
    }
    // The watcher's port on the Service is its own number, as the webhook's 443 is not.
    assert_eq!(
        service["spec"]["ports"][1],
        json!({"name": "watch-http", "port": 8081, "targetPort": "watch-http", "protocol": "TCP"})
    );
    // The webhook's HTTPS port is the one its probes use too, over HTTPS.
    assert_eq!(
        containers[0]["readinessProbe"]["httpGet"],
        json!({"path": "/readyz", "port": "https", "scheme": "HTTPS"})
    );

    // mode init: the webhook alone; with cert-manager, its certificate verified against the
    // CA of cert-manager's Secret, for the name the Certificate holds.
    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "serviceMonitor.enabled=true,mode=init,certManager.enabled=true,\
             serviceMonitor.interval=1m,serviceMonitor.scrapeTimeout=10s",
        ],
    ));
    let monitor = one(&docs, "ServiceMonitor");
    let cert = one(&docs, "Certificate");
    assert_eq!(
        monitor["spec"]["endpoints"],
        json!([{"port": "https", "scheme": "https", "path": "/metrics", "interval": "1m",
                "scrapeTimeout": "10s",
                "tlsConfig": {"serverName": cert["spec"]["dnsNames"][0],
                              "ca": {"secret": {"name": cert["spec"]["secretName"],
                                                "key": "ca.crt"}}}}])
    );
    assert_eq!(
        one(&docs, "Service")["spec"]["ports"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "no watcher, no port of its"
    );
    // A tlsConfig of the operator's replaces the chart's.
    let docs = documents(&template(
        "pullcheck",
        &[
            "--set",
            "serviceMonitor.enabled=true",
            "--set-json",
            r#"serviceMonitor.tlsConfig={"ca":{"configMap":{"name":"corp-ca","key":"ca.crt"}},"serverName":"pullcheck-webhook.pullcheck.svc"}"#,
        ],
    ));
    assert_eq!(
        one(&docs, "ServiceMonitor")["spec"]["endpoints"][0]["tlsConfig"],
        json!({"ca": {"configMap": {"name": "corp-ca", "key": "ca.crt"}},
               "serverName": "pullcheck-webhook.pullcheck.svc"})
    );
}

/// `templates/NOTES.txt` rendered with `values`. `helm template` leaves NOTES.txt out, and
/// `helm install --dry-run` needs a cluster: a copy of the chart with one more template, a
/// ConfigMap holding NOTES.txt (a named template like any other file), is rendered instead.
fn notes(values: &[&str]) -> String {
    static COPY: OnceLock<tempfile::TempDir> = OnceLock::new();
    let copy = COPY.get_or_init(|| {
        fn copy_dir(from: &Path, to: &Path) {
            std::fs::create_dir_all(to).unwrap();
            for entry in std::fs::read_dir(from).unwrap() {
                let entry = entry.unwrap();
                let dest = to.join(entry.file_name());
                if entry.file_type().unwrap().is_dir() {
                    copy_dir(&entry.path(), &dest);
                } else {
                    std::fs::copy(entry.path(), dest).unwrap();
                }
            }
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let chart = dir.path().join("pullcheck");
        copy_dir(&repo().join("charts/pullcheck"), &chart);
        std::fs::write(
            chart.join("templates/notes-of-the-test.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  \
             notes: {{ include \"pullcheck/templates/NOTES.txt\" . | quote }}\n",
        )
        .unwrap();
        dir
    });
    let chart = copy.path().join("pullcheck").display().to_string();
    let mut all = vec![
        "template",
        RELEASE,
        &chart,
        "--namespace",
        RELEASE,
        "--show-only",
        "templates/notes-of-the-test.yaml",
    ];
    all.extend_from_slice(values);
    let docs = documents(&helm(&all));
    docs[0]["data"]["notes"]
        .as_str()
        .expect("the notes")
        .to_string()
}

/// NOTES.txt lists every object the release holds, by kind and name, and says in words what
/// the service account may do: in modes watch and both, that it may patch any pod and
/// any pod's status, cluster-wide.
#[test]
fn chart_notes_name_what_was_installed_and_its_permissions() {
    for values in [
        &[][..],
        &["--set", "mode=init"][..],
        &[
            "--set",
            "mode=both,serviceMonitor.enabled=true,prometheusRule.enabled=true",
        ][..],
        &[
            "--set",
            "certManager.enabled=true,watch.readPullSecrets.enabled=true",
        ][..],
        &[
            "--set",
            "mode=both,watch.readPullSecrets.enabled=true",
            "--set-json",
            "watch.readPullSecrets.namespaces=[\"team-a\",\"team-b\"]",
        ][..],
        &["--set", "admission.verdicts=true"][..],
        &[
            "--set",
            "admission.deny=true,admission.readPullSecrets.enabled=true",
        ][..],
    ] {
        // Lines are wrapped for a terminal: compared as one line.
        let said = notes(values)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let docs = documents(&template(RELEASE, values));
        for doc in &docs {
            let kind = doc["kind"].as_str().expect("kind");
            let name = doc["metadata"]["name"].as_str().expect("name");
            let want = match kind {
                "ClusterRole" | "ClusterRoleBinding" => {
                    format!("ClusterRole and ClusterRoleBinding {name}")
                }
                "Role" | "RoleBinding" => format!("Role and RoleBinding {name}"),
                _ => format!("{kind} {name}"),
            };
            assert!(
                said.contains(&want),
                "{values:?}: NOTES names {want}:\n{said}"
            );
        }
        let watcher = docs
            .iter()
            .any(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "pullcheck-watch");
        for words in [
            "get, list, watch and patch pods (activeDeadlineSeconds, for the kubelet to fail a stuck pod); patch pods' status",
            "these rights are cluster-wide: the account may patch any pod and any pod's status, in any \
             namespace (it never deletes one)",
        ] {
            assert_eq!(said.contains(words), watcher, "{values:?}: {words}\n{said}");
        }
        let secrets = docs.iter().any(|d| {
            d["metadata"]["name"] == "pullcheck-watch-pull-secrets"
                || d["metadata"]["name"] == "pullcheck-admission-pull-secrets"
        });
        assert_eq!(
            said.contains("Secrets: none, in any namespace."),
            !secrets,
            "{values:?}:\n{said}"
        );
    }
    let said = notes(&["--set", "mode=both,watch.readPullSecrets.enabled=true"]);
    assert!(
        said.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("get Secrets in every namespace"),
        "{said}"
    );
}

/// Every option of `pullcheck inject --help` but its input (`--filename`) and `--help`.
fn inject_options() -> BTreeSet<String> {
    let out = crate::common::pullcheck_cmd()
        .args(["inject", "--help"])
        .stdin(Stdio::null())
        .output()
        .expect("run pullcheck inject --help");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            // Option lines are indented by two or six spaces; their descriptions by ten.
            let trimmed = l.trim_start();
            if l.len() - trimmed.len() > 6 {
                return None;
            }
            let l = trimmed;
            let l = l.strip_prefix("-f, ").unwrap_or(l);
            let name = l.strip_prefix("--")?.split([' ', ',']).next()?;
            (!name.is_empty()).then(|| format!("--{name}"))
        })
        // The webhook reads each namespace's LimitRanges from the API: one file would be wrong
        // for every namespace but one, so the chart has no value for it.
        .filter(|o| o != "--filename" && o != "--help" && o != "--limit-range-file")
        .collect()
}

#[test]
fn chart_has_a_value_for_every_inject_option() {
    let options = inject_options();
    assert!(options.len() >= 10, "inject's options: {options:?}");
    let set = [
        "inject.image=registry.example.com/pullcheck:0.1.0",
        "inject.secrets={corp-pull,other-pull}",
        "inject.caConfigMap=corp-ca",
        "inject.credentialProviderConfig.configMap=providers",
        "inject.jobFailurePolicy=true",
        "inject.ignoreUnreachableWithoutDeadline=true",
        "inject.nodeImages=false",
        "inject.hostsConfigMap=hosts",
        "inject.registriesConfigMap=registries",
        "inject.hostsFromNode=/etc/containerd/certs.d",
        "inject.registriesFromNode=/etc/containers",
        "inject.checkArgs={--timeout,30s}",
    ]
    .join(",");
    let set = format!("mode=init,{set}");
    let docs = documents(&template("pullcheck", &["--set", &set]));
    let c = webhook_container(&docs);
    let a = args(c);
    for option in &options {
        assert!(
            a.iter()
                .any(|arg| arg == option || arg.starts_with(&format!("{option}="))),
            "`pullcheck inject {option}` has no value in charts/pullcheck/values.yaml (inject.*): {a:?}"
        );
    }
    let tail: Vec<&str> = a
        .iter()
        .map(String::as_str)
        .skip_while(|a| *a != "--")
        .collect();
    assert_eq!(tail, ["--", "--timeout", "30s"]);
    for want in [
        "--image=registry.example.com/pullcheck:0.1.0",
        "--secret=corp-pull",
        "--secret=other-pull",
        "--credential-provider-config=/etc/pullcheck/credential-provider/credential-provider-config.yaml",
        "--hosts-from-node=/etc/containerd/certs.d",
    ] {
        assert!(a.contains(&want.to_string()), "{want} in {a:?}");
    }
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "credential-provider", "mountPath": "/etc/pullcheck/credential-provider",
                "readOnly": true}])
    );
}

/// `deploy/pullcheck.yaml`: the namespace `pullcheck` and the chart rendered into it.
fn plain_manifests() -> String {
    let rendered = template(RELEASE, &[]);
    format!(
        "# pullcheck's admission webhook and stuck-pod controller, for clusters without Helm:\n\
         # charts/pullcheck rendered with its default values (mode watch) into the namespace\n\
         # {RELEASE}, by\n\
         #   helm template {RELEASE} charts/pullcheck --namespace {RELEASE}\n\
         # Before `kubectl apply -f deploy/pullcheck.yaml`, set the containers' image to where you\n\
         # pushed pullcheck's webhook image. Regenerate, never edit:\n\
         # PULLCHECK_BLESS=1 cargo test --test cluster chart::deploy\n\
         apiVersion: v1\n\
         kind: Namespace\n\
         metadata:\n  name: {RELEASE}\n\
         {rendered}"
    )
}

#[test]
fn deploy_is_what_the_chart_renders() {
    let path = repo().join("deploy/pullcheck.yaml");
    let want = plain_manifests();
    if std::env::var_os("PULLCHECK_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not what charts/pullcheck renders: regenerate it with \
         PULLCHECK_BLESS=1 cargo test --test cluster chart::deploy",
        path.display()
    );
    let docs = documents(&have);
    assert_eq!(docs[0]["kind"], "Namespace");
    assert!(
        docs[1..]
            .iter()
            .all(|d| d["metadata"].get("namespace").is_none()
                || d["metadata"]["namespace"] == RELEASE)
    );
}

/// The render without the cert-manager kinds, which the test cluster has no CRDs for.
fn without_cert_manager(docs: Vec<Value>) -> String {
    docs.into_iter()
        .filter(|d| {
            !d["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .starts_with("cert-manager.io/")
        })
        .map(|d| serde_json::to_string(&d).unwrap())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

#[test]
fn api_server_accepts_what_the_chart_renders() {
    let c = cluster();
    let ns = c.namespace("chart-dry-run");
    for values in [
        &[][..],
        &["--set", "certManager.enabled=true"][..],
        &["--set", "mode=both"][..],
    ] {
        let rendered = template(&ns.name, values);
        let manifest = without_cert_manager(documents(&rendered));
        let out = c.kubectl_output(
            &["apply", "--dry-run=server", "-n", &ns.name, "-f", "-"],
            Some(&manifest),
        );
        assert!(
            out.status.success(),
            "kubectl apply --dry-run=server of helm template {values:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("mutatingwebhookconfiguration.admissionregistration.k8s.io/pullcheck")
                && said.contains("deployment.apps/pullcheck"),
            "{said}"
        );
    }
    // deploy/ is this render (deploy_is_what_the_chart_renders) with a Namespace before it; a
    // dry run cannot create the namespace its other objects need, so it is not applied here.
}

/// `helm uninstall` of a release when dropped, so a failed test leaves no webhook configuration.
pub struct Release {
    pub name: String,
    pub namespace: String,
    pub kubeconfig: PathBuf,
}

impl Drop for Release {
    fn drop(&mut self) {
        if std::env::var_os("PULLCHECK_CLUSTER_KEEP").is_none() {
            let _ = helm_cmd(&["uninstall", &self.name, "-n", &self.namespace, "--wait"])
                .env("KUBECONFIG", &self.kubeconfig)
                .output();
        }
    }
}

#[test]
fn chart_installs() {
    let c = cluster();
    let ns = c.namespace("chart-install");
    let name = "chart-install";
    let chart = chart();
    // The webhook's configuration is cluster-wide: its label selects no namespace of the other
    // tests, so the release cannot slow down or change any pod but its own.
    let image = c.webhook_image();
    let (repository, tag) = image.rsplit_once(':').unwrap();
    // The chart's default mode (watch): the webhook and the watcher both select namespaces by
    // the watcher's label.
    let set = format!(
        "image.repository={repository},image.tag={tag},namespaceLabel.value=chart-install-only,\
         watch.namespaceLabel=pullcheck.dev/watch=chart-install-only"
    );
    let kubeconfig = c.kubeconfig.display().to_string();
    let _release = Release {
        name: name.to_string(),
        namespace: ns.name.clone(),
        kubeconfig: c.kubeconfig.clone(),
    };
    let out = helm(&[
        "install",
        name,
        &chart,
        "-n",
        &ns.name,
        "--kubeconfig",
        &kubeconfig,
        "--set",
        &set,
    ]);
    assert!(out.contains("STATUS: deployed"), "{out}");
    assert!(
        out.contains("kubectl label namespace NAMESPACE pullcheck.dev/watch=chart-install-only"),
        "NOTES.txt tells how to opt a namespace in, with one label:\n{out}"
    );
    assert!(
        out.contains("these rights are cluster-wide: the account may patch any pod"),
        "NOTES.txt says what the watcher's account may do:\n{out}"
    );

    let fullname = "chart-install-pullcheck";
    wait_for("the Deployment's two pods created", minutes(2), || {
        let out = c.kubectl(&[
            "get",
            "pods",
            "-n",
            &ns.name,
            "-l",
            &format!("app.kubernetes.io/instance={name}"),
            "-o",
            "json",
        ]);
        let list: Value = serde_json::from_str(&out).unwrap();
        let pods = list["items"].as_array().cloned().unwrap_or_default();
        if pods.len() == 2 { Ok(pods) } else { Err(out) }
    });
    let role = c
        .get("", &format!("clusterrole/{fullname}"))
        .expect("the ClusterRole");
    assert_eq!(
        role["rules"][0]["resourceNames"],
        json!([fullname]),
        "{role:#}"
    );
    let binding = c
        .get("", &format!("clusterrolebinding/{fullname}"))
        .expect("the ClusterRoleBinding");
    assert_eq!(binding["subjects"][0]["namespace"], ns.name.as_str());
    assert!(
        c.get(&ns.name, &format!("serviceaccount/{fullname}"))
            .is_some()
    );
    assert!(
        c.get(&ns.name, &format!("service/{fullname}-webhook"))
            .is_some()
    );
    assert!(
        c.get(&ns.name, &format!("poddisruptionbudget/{fullname}"))
            .is_some()
    );
    let config = c
        .get("", &format!("mutatingwebhookconfiguration/{fullname}"))
        .expect("the MutatingWebhookConfiguration");
    assert_eq!(
        config["webhooks"].as_array().map(Vec::len),
        Some(2),
        "{config:#}"
    );
    // The account may patch its own configuration and nothing else.
    let sa = format!("system:serviceaccount:{}:{fullname}", ns.name);
    for (verb, what, want) in [
        (
            "patch",
            format!("mutatingwebhookconfigurations/{fullname}"),
            "yes",
        ),
        (
            "get",
            format!("mutatingwebhookconfigurations/{fullname}"),
            "yes",
        ),
        (
            "patch",
            "mutatingwebhookconfigurations/other".to_string(),
            "no",
        ),
        ("list", "mutatingwebhookconfigurations".to_string(), "no"),
        ("get", "secrets".to_string(), "no"),
        ("list", "secrets".to_string(), "no"),
        ("create", "pods".to_string(), "no"),
        // The watcher's: the condition, then the deadline; never a delete.
        ("delete", "pods".to_string(), "no"),
        ("watch", "pods".to_string(), "yes"),
        ("patch", "pods --subresource=status".to_string(), "yes"),
        ("patch", "pods".to_string(), "yes"),
        // Its own Events go through events.k8s.io (kube-runtime's Recorder); core Events it
        // only reads (the kubelet's).
        ("create", "events.events.k8s.io".to_string(), "yes"),
        ("patch", "events.events.k8s.io".to_string(), "yes"),
        ("create", "events".to_string(), "no"),
        ("list", "events".to_string(), "yes"),
        ("watch", "namespaces".to_string(), "yes"),
        ("update", "leases.coordination.k8s.io".to_string(), "no"),
    ] {
        let mut args = vec!["auth", "can-i", verb];
        args.extend(what.split(' '));
        args.extend(["--as", &sa]);
        let out = c.kubectl_output(&args, None);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want,
            "{sa} can {verb} {what}?"
        );
    }
    // Leases only in its own namespace.
    for (ns, want) in [(ns.name.as_str(), "yes"), ("default", "no")] {
        let out = c.kubectl_output(
            &[
                "auth",
                "can-i",
                "update",
                "leases.coordination.k8s.io",
                "-n",
                ns,
                "--as",
                &sa,
            ],
            None,
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want,
            "leases in {ns}"
        );
    }
}
