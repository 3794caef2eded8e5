//! What `pullcheck doctor` reads of the cluster, at the edge: the release's Deployment, webhook
//! configuration, Service endpoints and Lease, the namespaces their selectors match, and the
//! dry-run sample. Everything becomes plain data ([`Seen`]) for `decide`; only the API server's
//! own refusals and failures are errors.

use super::decide::{
    DeploymentSeen, HookSeen, LeaseSeen, RuntimesSeen, SampleSeen, Seen, WatcherSeen,
};
use crate::cluster::door::Door;
use crate::config::DoctorConfig;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Container, Namespace, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// Why nothing could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The kubeconfig, its context, or the in-cluster account.
    #[error("cannot read the kubeconfig: {0}")]
    Config(String),
    /// The API server did not answer, or refused a read.
    #[error("the API server refused or failed a read ({what}): {error}")]
    Api { what: String, error: String },
}

/// The door of `--kubeconfig` and `--context`, in kubectl's order when neither is given.
pub(crate) async fn door(config: &DoctorConfig) -> Result<Door, ReadError> {
    Door::of_kubeconfig(config.kubeconfig.as_deref(), config.context.as_deref())
        .await
        .map_err(ReadError::Config)
}

fn api_error(what: &str) -> impl Fn(kube::Error) -> ReadError + '_ {
    move |e| ReadError::Api {
        what: what.to_string(),
        error: e.to_string(),
    }
}

/// Reads everything [`Seen`] holds of the release.
pub(crate) async fn read(door: &Door, config: &DoctorConfig) -> Result<Seen, ReadError> {
    let client = &door.client();
    let ns = &config.namespace;
    let instance = format!(
        "app.kubernetes.io/name=pullcheck,app.kubernetes.io/instance={}",
        config.release
    );
    let by_label = ListParams::default().labels(&instance);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let deployment = deployments
        .list(&by_label)
        .await
        .map_err(api_error("list deployments"))?
        .items
        .into_iter()
        .next()
        .map(|d| deployment_seen(&d));
    let configurations: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let configuration = configurations
        .list(&by_label)
        .await
        .map_err(api_error("list mutatingwebhookconfigurations"))?
        .items
        .into_iter()
        .next()
        .map(|c| configuration_seen(&c));
    let mut seen = Seen {
        release: config.release.clone(),
        namespace: ns.clone(),
        deployment,
        configuration,
        endpoints: 0,
        lease: None,
        opted_in: Vec::new(),
        watched: Vec::new(),
        sample_not_opted_in: None,
        sample: SampleSeen::NoNamespace,
        runtimes: None,
    };
    let Some(d) = seen.deployment.clone() else {
        return Ok(seen);
    };
    seen.endpoints = endpoints(client, ns, &format!("{}-webhook", d.name)).await?;
    if let Some(w) = &d.watcher {
        let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
        let lease = leases
            .get_opt(&w.lease_name)
            .await
            .map_err(api_error("get lease"))?;
        seen.lease = lease.map(|l| lease_seen(&l));
        seen.watched = namespaces(client, &w.namespace_label).await?;
        seen.runtimes = Some(runtimes(door).await);
    }
    let hook = seen.configuration.as_ref().and_then(|(_, h)| h.first());
    if let Some(hook) = hook {
        seen.opted_in = namespaces(client, &hook.selector).await?;
    }
    let sample_ns = match &config.sample_namespace {
        Some(s) => {
            if !seen.opted_in.contains(s) {
                seen.sample_not_opted_in = Some(s.clone());
            }
            Some(s.clone())
        }
        None => seen.opted_in.first().cloned(),
    };
    if let Some(sample_ns) = sample_ns {
        seen.sample = sample(client, &sample_ns, &d.mode).await;
    }
    Ok(seen)
}

fn arg_of(container: &Container, flag: &str) -> Option<String> {
    let prefix = format!("--{flag}=");
    let args = container.args.iter().flatten();
    args.clone()
        .find_map(|a| a.strip_prefix(&prefix).map(str::to_string))
        .or_else(|| {
            // `--flag VALUE`, as someone may write in webhook.extraArgs.
            let mut it = args.skip_while(|a| **a != format!("--{flag}"));
            it.next().and(it.next()).cloned()
        })
}

fn deployment_seen(d: &Deployment) -> DeploymentSeen {
    let spec = d.spec.as_ref();
    let containers = spec
        .and_then(|s| s.template.spec.as_ref())
        .map(|p| p.containers.as_slice())
        .unwrap_or_default();
    let named = |n: &str| containers.iter().find(|c| c.name == n);
    DeploymentSeen {
        name: d.metadata.name.clone().unwrap_or_default(),
        desired: spec.and_then(|s| s.replicas).unwrap_or(1),
        ready: d
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0),
        mode: named("webhook")
            .and_then(|c| arg_of(c, "mode"))
            .unwrap_or_else(|| "init".to_string()),
        image: named("webhook")
            .or(containers.first())
            .and_then(|c| c.image.clone()),
        watcher: named("watch").map(|c| WatcherSeen {
            namespace_label: arg_of(c, "namespace-label")
                .unwrap_or_else(|| "pullcheck.dev/watch=enabled".to_string()),
            lease_name: arg_of(c, "lease-name").unwrap_or_else(|| "pullcheck-watch".to_string()),
        }),
    }
}

fn configuration_seen(c: &MutatingWebhookConfiguration) -> (String, Vec<HookSeen>) {
    let hooks = c.webhooks.iter().flatten().map(|h| {
        let selector = h.namespace_selector.clone().unwrap_or_default();
        HookSeen {
            name: h.name.clone(),
            ca_bundle: h
                .client_config
                .ca_bundle
                .as_ref()
                .is_some_and(|b| !b.0.is_empty()),
            failure_policy: h.failure_policy.clone().unwrap_or_else(|| "Fail".into()),
            selector: super::selector::to_string(&selector),
            opt_in_label: super::selector::opt_in_label(&selector),
        }
    });
    (c.metadata.name.clone().unwrap_or_default(), hooks.collect())
}

fn lease_seen(l: &Lease) -> LeaseSeen {
    let spec = l.spec.as_ref();
    let now = k8s_openapi::jiff::Timestamp::now();
    LeaseSeen {
        holder: spec
            .and_then(|s| s.holder_identity.clone())
            .filter(|h| !h.is_empty()),
        renewed_ago: spec
            .and_then(|s| s.renew_time.as_ref())
            .and_then(|t| Duration::try_from(now.duration_since(t.0)).ok()),
        duration: Duration::from_secs(
            spec.and_then(|s| s.lease_duration_seconds)
                .and_then(|s| u64::try_from(s).ok())
                .unwrap_or(15),
        ),
    }
}

async fn namespaces(client: &Client, selector: &str) -> Result<Vec<String>, ReadError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut names: Vec<String> = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(api_error("list namespaces"))?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}

/// The nodes' container runtimes, by `containerRuntimeVersion`. A refusal is said in the
/// check's words rather than failing doctor: a user may read the release but not the nodes.
async fn runtimes(door: &Door) -> RuntimesSeen {
    let mut by_runtime = BTreeMap::new();
    // In pages: a Node carries its image list, and a large cluster's all at once would be held
    // in memory together for the one string of each that is wanted.
    let mut params = ListParams::default().limit(100);
    loop {
        let nodes = match door.nodes(&params).await {
            Ok(nodes) => nodes,
            Err(e) => return RuntimesSeen::Unread(e.to_string()),
        };
        for node in nodes.items {
            let runtime = node
                .status
                .and_then(|s| s.node_info)
                .map(|i| i.container_runtime_version)
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "unknown".to_string());
            *by_runtime.entry(runtime).or_insert(0) += 1;
        }
        match nodes.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return RuntimesSeen::Read(by_runtime),
        }
    }
}

async fn endpoints(client: &Client, ns: &str, service: &str) -> Result<usize, ReadError> {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), ns);
    let label = format!("kubernetes.io/service-name={service}");
    let slices = api
        .list(&ListParams::default().labels(&label))
        .await
        .map_err(api_error("list endpointslices"))?;
    let ready = slices
        .items
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
        .count();
    Ok(ready)
}

/// The dry-run sample: a Job in watch mode (the only kind it changes), a Pod otherwise.
async fn sample(client: &Client, ns: &str, mode: &str) -> SampleSeen {
    let params = PostParams {
        dry_run: true,
        field_manager: Some("pullcheck-doctor".into()),
    };
    let refused = |e: kube::Error| SampleSeen::Refused {
        namespace: ns.to_string(),
        error: e.to_string(),
    };
    let (kind, result) = if mode == "watch" {
        let api: Api<Job> = Api::namespaced(client.clone(), ns);
        let sent = super::sample::job();
        let got = api.create(&params, &sent).await;
        ("Job", got.map(|j| super::sample::job_outcome(&sent, &j)))
    } else {
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let sent = super::sample::pod();
        let got = api.create(&params, &sent).await;
        ("Pod", got.map(|p| super::sample::pod_outcome(&sent, &p)))
    };
    match result {
        Ok((changed, added)) => SampleSeen::Admitted {
            namespace: ns.to_string(),
            kind,
            changed,
            added,
        },
        Err(e) => refused(e),
    }
}
