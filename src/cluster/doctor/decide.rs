//! What `pullcheck doctor` concludes from what it read, without I/O: one [`Check`] per question
//! (installed, ready, configured, elected, opted in, reached, injecting), each `ok` or `no`,
//! and for each `no` the command or change that mends it, in the names of this release.

use serde::Serialize;
use std::time::Duration;

/// The chart's Deployment as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeploymentSeen {
    pub(crate) name: String,
    pub(crate) desired: i32,
    pub(crate) ready: i32,
    /// The webhook container's `--mode` (`init` when it gives none, the flag's default).
    pub(crate) mode: String,
    /// The watch container's `--namespace-label` and `--lease-name`, when it has one.
    pub(crate) watcher: Option<WatcherSeen>,
    /// The install's image (its webhook container's, else its first container's): `--probe`
    /// asks the nodes for a tag of its repository that cannot exist.
    pub(crate) image: Option<String>,
}

/// The watch container's flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WatcherSeen {
    pub(crate) namespace_label: String,
    pub(crate) lease_name: String,
}

/// The watcher's Lease as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseSeen {
    pub(crate) holder: Option<String>,
    /// How long ago it was last renewed (`None`: never).
    pub(crate) renewed_ago: Option<Duration>,
    pub(crate) duration: Duration,
}

/// One webhook of the MutatingWebhookConfiguration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HookSeen {
    pub(crate) name: String,
    pub(crate) ca_bundle: bool,
    pub(crate) failure_policy: String,
    /// Its namespaceSelector as a label selector (`key in (v),kubernetes.io/metadata.name notin (ns)`).
    pub(crate) selector: String,
    /// What a namespace needs to be selected: `key=value` (or `key`), for `kubectl label`.
    pub(crate) opt_in_label: Option<String>,
}

/// What became of the dry-run sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SampleSeen {
    /// No namespace to try it in.
    NoNamespace,
    /// The API server refused it (the error's words).
    Refused { namespace: String, error: String },
    /// Admitted: whether anything was changed, and whether what the mode adds is there.
    Admitted {
        namespace: String,
        kind: &'static str,
        changed: bool,
        added: bool,
    },
}

/// The nodes' runtimes as read: `containerRuntimeVersion` (`containerd://2.4.2`) to the number
/// of nodes that run it, or why the Nodes could not be listed. `super::runtimes` judges them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RuntimesSeen {
    Read(std::collections::BTreeMap<String, usize>),
    Unread(String),
}

/// Everything doctor read of one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) release: String,
    pub(crate) namespace: String,
    pub(crate) deployment: Option<DeploymentSeen>,
    /// The configuration's name and its webhooks (`None`: no configuration of the release).
    pub(crate) configuration: Option<(String, Vec<HookSeen>)>,
    /// The ready endpoints of the webhook's Service.
    pub(crate) endpoints: usize,
    pub(crate) lease: Option<LeaseSeen>,
    /// The namespaces the webhook's selector matches, by name.
    pub(crate) opted_in: Vec<String>,
    /// The namespaces the watcher's label matches (watch and both modes).
    pub(crate) watched: Vec<String>,
    /// The namespace asked for with `--sample-namespace`, if it is not among `opted_in`.
    pub(crate) sample_not_opted_in: Option<String>,
    pub(crate) sample: SampleSeen,
    /// The nodes' container runtimes (read with a watcher: only its verdicts hang on their
    /// words).
    pub(crate) runtimes: Option<RuntimesSeen>,
}

/// One line of the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    /// The question, one word: `installed`, `ready`, `configured`, `elected`, `namespaces`,
    /// `sample-namespace`, `reached`, `injected`.
    pub(crate) check: &'static str,
    pub(crate) ok: bool,
    /// What was found, in words.
    pub(crate) says: String,
    /// For a `no`: what mends it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

fn ok(check: &'static str, says: String) -> Check {
    Check {
        check,
        ok: true,
        says,
        fix: None,
    }
}

fn no(check: &'static str, says: String, fix: String) -> Check {
    Check {
        check,
        ok: false,
        says,
        fix: Some(fix),
    }
}

/// Every check, in the order a person mends them.
pub(crate) fn checks(seen: &Seen) -> Vec<Check> {
    let mut out = Vec::new();
    let (ns, release) = (&seen.namespace, &seen.release);
    let install = format!(
        "install the chart: `helm install {release} charts/pullcheck -n {ns} --create-namespace`, \
         or name the installed one with --release and --namespace (`helm list -A`)"
    );
    let Some(deployment) = &seen.deployment else {
        out.push(no(
            "installed",
            format!(
                "no Deployment labelled app.kubernetes.io/instance={release} in namespace {ns}"
            ),
            install.clone(),
        ));
        if seen.configuration.is_none() {
            out.push(no(
                "configured",
                format!("no MutatingWebhookConfiguration of release {release}"),
                install,
            ));
        }
        return out;
    };
    out.push(ok(
        "installed",
        format!(
            "release {release}: Deployment {ns}/{}, mode {}",
            deployment.name, deployment.mode
        ),
    ));
    out.push(ready(deployment, ns));
    out.push(configured(seen, &install));
    if let Some(watcher) = &deployment.watcher {
        out.push(elected(seen, deployment, watcher));
    }
    out.extend(namespaces(seen));
    out.extend(sample(seen, deployment));
    out
}

fn ready(d: &DeploymentSeen, ns: &str) -> Check {
    let says = format!("{} of {} replicas ready", d.ready, d.desired);
    // Scaled to 0, the replicas still ready are terminating: the webhook is going away.
    if d.ready > 0 && d.desired > 0 {
        return ok("ready", says);
    }
    let fix = if d.desired == 0 {
        format!(
            "scale it up: `kubectl -n {ns} scale deployment/{} --replicas=2`",
            d.name
        )
    } else {
        format!(
            "see why: `kubectl -n {ns} describe pods -l app.kubernetes.io/name=pullcheck` and \
             `kubectl -n {ns} logs deployment/{} --all-containers` (an image that cannot be \
             pulled, or one built without the watch feature, is the usual cause)",
            d.name
        )
    };
    no("ready", says, fix)
}

fn configured(seen: &Seen, install: &str) -> Check {
    let Some((name, hooks)) = &seen.configuration else {
        return no(
            "configured",
            format!(
                "no MutatingWebhookConfiguration of release {}",
                seen.release
            ),
            install.to_string(),
        );
    };
    let empty: Vec<&str> = hooks
        .iter()
        .filter(|h| !h.ca_bundle)
        .map(|h| h.name.as_str())
        .collect();
    if hooks.is_empty() {
        return no(
            "configured",
            format!("MutatingWebhookConfiguration {name} has no webhooks"),
            format!(
                "reinstall it: `helm upgrade {} charts/pullcheck -n {}`",
                seen.release, seen.namespace
            ),
        );
    }
    if !empty.is_empty() {
        return no(
            "configured",
            format!(
                "MutatingWebhookConfiguration {name}: no caBundle in {} (the API server cannot \
                 trust the webhook)",
                empty.join(", ")
            ),
            format!(
                "the webhook writes it once its pods start (--self-signed), or cert-manager does \
                 (certManager.enabled): see `kubectl -n {} logs deployment/{} -c webhook`",
                seen.namespace,
                seen.deployment.as_ref().map_or("", |d| d.name.as_str())
            ),
        );
    }
    let names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
    ok(
        "configured",
        format!(
            "MutatingWebhookConfiguration {name}: {} with a caBundle",
            names.join(", ")
        ),
    )
}

fn elected(seen: &Seen, d: &DeploymentSeen, w: &WatcherSeen) -> Check {
    let logs = format!(
        "see `kubectl -n {} logs deployment/{} -c watch`",
        seen.namespace, d.name
    );
    match &seen.lease {
        None => no(
            "elected",
            format!(
                "no Lease {}/{}: no watcher has ever led",
                seen.namespace, w.lease_name
            ),
            logs,
        ),
        Some(l) => match (&l.holder, l.renewed_ago) {
            (Some(holder), Some(ago)) if ago <= l.duration * 2 => ok(
                "elected",
                format!(
                    "Lease {} held by {holder}, renewed {}s ago",
                    w.lease_name,
                    ago.as_secs()
                ),
            ),
            (holder, ago) => no(
                "elected",
                format!(
                    "Lease {} {}: no watcher acts",
                    w.lease_name,
                    match (holder, ago) {
                        (Some(h), Some(ago)) => format!(
                            "last renewed by {h} {}s ago (its term is {}s)",
                            ago.as_secs(),
                            l.duration.as_secs()
                        ),
                        _ => "held by nobody".to_string(),
                    }
                ),
                logs,
            ),
        },
    }
}

fn label_fix(label: Option<&str>, namespace: &str) -> String {
    match label {
        Some(l) => format!("opt it in: `kubectl label namespace {namespace} {l}`"),
        None => "the webhook's namespaceSelector names no label to add: see \
                 `kubectl get mutatingwebhookconfiguration -o yaml`"
            .to_string(),
    }
}

fn namespaces(seen: &Seen) -> Vec<Check> {
    let mut out = Vec::new();
    let label = seen
        .configuration
        .as_ref()
        .and_then(|(_, hooks)| hooks.iter().find_map(|h| h.opt_in_label.clone()));
    if seen.opted_in.is_empty() {
        out.push(no(
            "namespaces",
            "no namespace is opted in".to_string(),
            label_fix(label.as_deref(), "NAME"),
        ));
    } else {
        out.push(ok(
            "namespaces",
            format!("opted in: {}", seen.opted_in.join(", ")),
        ));
    }
    let watcher = seen.deployment.as_ref().and_then(|d| d.watcher.as_ref());
    if let Some(w) = watcher {
        if seen.watched != seen.opted_in {
            let says = if seen.watched.is_empty() {
                format!(
                    "no namespace is watched (--namespace-label {})",
                    w.namespace_label
                )
            } else {
                format!(
                    "watched ({}): {}",
                    w.namespace_label,
                    seen.watched.join(", ")
                )
            };
            // In `both` the two labels differ by design; a watched list is information then.
            let mode = seen.deployment.as_ref().map_or("", |d| d.mode.as_str());
            out.push(if seen.watched.is_empty() && mode != "both" {
                no(
                    "watched",
                    says,
                    format!(
                        "opt one in: `kubectl label namespace NAME {}`",
                        w.namespace_label
                    ),
                )
            } else {
                ok("watched", says)
            });
        }
    }
    if let Some(ns) = &seen.sample_not_opted_in {
        out.push(no(
            "sample-namespace",
            format!("namespace {ns} is not opted in: the webhook is not called for it"),
            label_fix(label.as_deref(), ns),
        ));
    }
    out
}

fn sample(seen: &Seen, d: &DeploymentSeen) -> Vec<Check> {
    let (namespace, kind, changed, added) = match &seen.sample {
        SampleSeen::NoNamespace => {
            return vec![no(
                "reached",
                "not tried: no opted-in namespace to create the sample in".to_string(),
                "opt a namespace in (above), or give --sample-namespace".to_string(),
            )];
        }
        SampleSeen::Refused { namespace, error } => {
            return vec![no(
                "reached",
                format!("the dry-run sample in {namespace} was refused: {error}"),
                format!(
                    "give this user `create` on pods and jobs in {namespace} (a dry run needs it), \
                     or pick another namespace with --sample-namespace"
                ),
            )];
        }
        SampleSeen::Admitted {
            namespace,
            kind,
            changed,
            added,
        } => (namespace, *kind, *changed, *added),
    };
    let mut out = Vec::new();
    let by_design = seen.sample_not_opted_in.as_deref() == Some(namespace.as_str());
    if by_design && !changed {
        // Not a fault of the webhook: `sample-namespace` above says why and how to mend it.
    } else if changed || added {
        out.push(ok(
            "reached",
            format!("the API server called the webhook for a dry-run {kind} in {namespace}"),
        ));
    } else {
        out.push(no(
            "reached",
            format!(
                "a dry-run {kind} in {namespace} came back unchanged: {}",
                unreached_cause(seen, namespace)
            ),
            unreached_fix(seen, d, namespace),
        ));
    }
    let what = if kind == "Job" {
        "its podFailurePolicy rule for the watcher's condition"
    } else {
        "the pullcheck init container"
    };
    out.push(if added {
        ok("injected", format!("a {kind} in {namespace} gets {what}"))
    } else {
        no(
            "injected",
            format!("a {kind} in {namespace} would not get {what}"),
            if by_design {
                "opt the namespace in (above)".to_string()
            } else if changed {
                format!("the webhook answered without it: see `kubectl -n {} logs deployment/{} -c webhook`", seen.namespace, d.name)
            } else {
                "mend `reached` above first".to_string()
            },
        )
    });
    out
}

/// Why an opted-in sample came back unchanged, from the rest of what was read.
fn unreached_cause(seen: &Seen, namespace: &str) -> String {
    let policy = seen
        .configuration
        .as_ref()
        .and_then(|(_, h)| h.first())
        .map_or("Ignore", |h| h.failure_policy.as_str());
    let admitted = if policy == "Ignore" {
        "and failurePolicy Ignore admitted it without a word"
    } else {
        "the webhook was not asked"
    };
    if seen.sample_not_opted_in.as_deref() == Some(namespace) {
        "the namespace is not opted in".to_string()
    } else if seen.endpoints == 0 {
        format!("the webhook's Service has no ready endpoints, {admitted}")
    } else {
        format!("the API server could not call the webhook (TLS, network or timeout), {admitted}")
    }
}

fn unreached_fix(seen: &Seen, d: &DeploymentSeen, namespace: &str) -> String {
    let ns = &seen.namespace;
    if seen.sample_not_opted_in.as_deref() == Some(namespace) {
        "opt it in (above)".to_string()
    } else if seen.endpoints == 0 {
        format!(
            "get a replica ready (`ready` above), and check that Service {ns}/{}-webhook selects \
             its pods: `kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={}-webhook`",
            d.name, d.name
        )
    } else {
        format!(
            "check that the API server reaches pods in {ns} on the webhook's port (a NetworkPolicy, \
             a firewall between the control plane and the nodes) and the API server's log for \
             \"failed calling webhook\""
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> HookSeen {
        HookSeen {
            name: "pods.pullcheck.dev".into(),
            ca_bundle: true,
            failure_policy: "Ignore".into(),
            selector: "pullcheck.dev/inject in (enabled)".into(),
            opt_in_label: Some("pullcheck.dev/inject=enabled".into()),
        }
    }

    /// A release in `mode: both`, healthy, namespace `team` opted in and injected.
    fn healthy() -> Seen {
        Seen {
            release: "pc".into(),
            namespace: "pullcheck".into(),
            deployment: Some(DeploymentSeen {
                name: "pc-pullcheck".into(),
                desired: 2,
                ready: 2,
                mode: "both".into(),
                watcher: Some(WatcherSeen {
                    namespace_label: "pullcheck.dev/watch=enabled".into(),
                    lease_name: "pc-pullcheck-watch".into(),
                }),
                image: Some("127.0.0.1:5000/pullcheck:ci-webhook".into()),
            }),
            configuration: Some(("pc-pullcheck".into(), vec![hook()])),
            endpoints: 2,
            lease: Some(LeaseSeen {
                holder: Some("pc-pullcheck-abc_x1".into()),
                renewed_ago: Some(Duration::from_secs(2)),
                duration: Duration::from_secs(15),
            }),
            opted_in: vec!["team".into()],
            watched: vec!["team".into()],
            sample_not_opted_in: None,
            sample: SampleSeen::Admitted {
                namespace: "team".into(),
                kind: "Pod",
                changed: true,
                added: true,
            },
            runtimes: None,
        }
    }

    fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
        checks
            .iter()
            .find(|c| c.check == name)
            .unwrap_or_else(|| panic!("no {name} in {checks:#?}"))
    }

    fn bad(checks: &[Check]) -> Vec<&'static str> {
        checks.iter().filter(|c| !c.ok).map(|c| c.check).collect()
    }

    #[test]
    fn a_healthy_release_is_ok_throughout() {
        let checks = checks(&healthy());
        assert_eq!(bad(&checks), Vec::<&str>::new(), "{checks:#?}");
        let names: Vec<_> = checks.iter().map(|c| c.check).collect();
        assert_eq!(
            names,
            [
                "installed",
                "ready",
                "configured",
                "elected",
                "namespaces",
                "reached",
                "injected"
            ]
        );
        assert!(checks.iter().all(|c| c.fix.is_none()));
        assert_eq!(find(&checks, "namespaces").says, "opted in: team");
    }

    #[test]
    fn no_release_says_install_it_twice_and_nothing_else() {
        let seen = Seen {
            deployment: None,
            configuration: None,
            ..healthy()
        };
        let checks = checks(&seen);
        assert_eq!(bad(&checks), ["installed", "configured"]);
        for c in &checks {
            let fix = c.fix.as_deref().unwrap_or_default();
            assert!(
                fix.contains("helm install pc charts/pullcheck -n pullcheck"),
                "{fix}"
            );
        }
    }

    #[test]
    fn no_ready_replica_says_why_and_scaled_to_zero_says_scale() {
        let mut seen = healthy();
        seen.deployment.as_mut().unwrap().ready = 0;
        let c = find(&checks(&seen), "ready").clone();
        assert!(!c.ok);
        assert!(c.fix.unwrap().contains("logs deployment/pc-pullcheck"));
        seen.deployment.as_mut().unwrap().desired = 0;
        seen.deployment.as_mut().unwrap().ready = 2;
        assert!(!find(&checks(&seen), "ready").ok, "terminating replicas");
        seen.deployment.as_mut().unwrap().ready = 0;
        let c = find(&checks(&seen), "ready").clone();
        assert_eq!(c.says, "0 of 0 replicas ready");
        assert!(
            c.fix
                .unwrap()
                .contains("scale deployment/pc-pullcheck --replicas=2")
        );
    }

    #[test]
    fn some_ready_replicas_are_enough() {
        let mut seen = healthy();
        seen.deployment.as_mut().unwrap().ready = 1;
        let c = find(&checks(&seen), "ready").clone();
        assert!(c.ok);
        assert_eq!(c.says, "1 of 2 replicas ready");
    }

    #[test]
    fn an_empty_ca_bundle_or_no_configuration_is_a_no() {
        let mut seen = healthy();
        seen.configuration.as_mut().unwrap().1[0].ca_bundle = false;
        let c = find(&checks(&seen), "configured").clone();
        assert!(
            !c.ok && c.says.contains("no caBundle in pods.pullcheck.dev"),
            "{c:?}"
        );
        assert!(c.fix.unwrap().contains("-c webhook"));
        seen.configuration = None;
        let c = find(&checks(&seen), "configured").clone();
        assert!(!c.ok && c.fix.unwrap().contains("helm install"));
    }

    #[test]
    fn a_stale_or_missing_lease_is_a_no() {
        let mut seen = healthy();
        seen.lease.as_mut().unwrap().renewed_ago = Some(Duration::from_secs(31));
        let c = find(&checks(&seen), "elected").clone();
        assert!(!c.ok && c.says.contains("31s ago"), "{c:?}");
        assert!(c.fix.unwrap().contains("-c watch"));
        seen.lease.as_mut().unwrap().holder = None;
        assert!(
            find(&checks(&seen), "elected")
                .says
                .contains("held by nobody")
        );
        seen.lease = None;
        assert!(!find(&checks(&seen), "elected").ok);
        // Mode init runs no watcher: no Lease to judge.
        seen.deployment.as_mut().unwrap().watcher = None;
        assert!(checks(&seen).iter().all(|c| c.check != "elected"));
    }

    #[test]
    fn no_namespace_opted_in_says_the_label_from_the_selector() {
        let mut seen = healthy();
        seen.opted_in.clear();
        seen.sample = SampleSeen::NoNamespace;
        let checks = checks(&seen);
        let c = find(&checks, "namespaces");
        assert_eq!(
            c.fix.as_deref(),
            Some("opt it in: `kubectl label namespace NAME pullcheck.dev/inject=enabled`")
        );
        assert!(!find(&checks, "reached").ok);
        // In both, the watcher's label is its own: its namespaces are information.
        assert!(find(&checks, "watched").ok);
    }

    #[test]
    fn in_watch_mode_no_watched_namespace_is_a_no() {
        let mut seen = healthy();
        seen.deployment.as_mut().unwrap().mode = "watch".into();
        seen.watched.clear();
        let c = find(&checks(&seen), "watched").clone();
        assert!(!c.ok);
        assert!(c.fix.unwrap().contains("pullcheck.dev/watch=enabled"));
    }

    #[test]
    fn a_sample_namespace_not_opted_in_is_its_own_no_with_the_label() {
        let mut seen = healthy();
        seen.sample_not_opted_in = Some("other".into());
        seen.sample = SampleSeen::Admitted {
            namespace: "other".into(),
            kind: "Pod",
            changed: false,
            added: false,
        };
        let checks = checks(&seen);
        assert_eq!(bad(&checks), ["sample-namespace", "injected"]);
        assert_eq!(
            find(&checks, "sample-namespace").fix.as_deref(),
            Some("opt it in: `kubectl label namespace other pullcheck.dev/inject=enabled`")
        );
    }

    #[test]
    fn an_unchanged_sample_says_why_the_webhook_was_not_reached() {
        let mut seen = healthy();
        seen.sample = SampleSeen::Admitted {
            namespace: "team".into(),
            kind: "Pod",
            changed: false,
            added: false,
        };
        seen.endpoints = 0;
        let checks1 = checks(&seen);
        let c = find(&checks1, "reached");
        assert!(c.says.contains("no ready endpoints") && c.says.contains("failurePolicy Ignore"));
        assert!(c.fix.as_deref().unwrap().contains("pc-pullcheck-webhook"));
        assert_eq!(bad(&checks1), ["reached", "injected"]);
        seen.endpoints = 2;
        let c = find(&checks(&seen), "reached").clone();
        assert!(c.says.contains("could not call the webhook"), "{c:?}");
        assert!(c.fix.unwrap().contains("failed calling webhook"));
    }

    #[test]
    fn a_refused_sample_or_one_without_the_container_is_a_no() {
        let mut seen = healthy();
        seen.sample = SampleSeen::Refused {
            namespace: "team".into(),
            error: "pods is forbidden".into(),
        };
        let c = find(&checks(&seen), "reached").clone();
        assert!(!c.ok && c.fix.unwrap().contains("`create` on pods"));
        seen.sample = SampleSeen::Admitted {
            namespace: "team".into(),
            kind: "Job",
            changed: true,
            added: false,
        };
        let checks = checks(&seen);
        assert!(find(&checks, "reached").ok);
        let c = find(&checks, "injected");
        assert!(!c.ok && c.says.contains("podFailurePolicy rule"), "{c:?}");
    }
}
