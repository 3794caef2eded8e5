//! What the init container of one pod spec is to hold, decided from the pod spec and the
//! options alone, before any edit is written: the images it checks, the pull secrets it
//! mounts, its environment, its mounts and the volumes those need. [`super::pod`] writes
//! them into the pod spec.

use super::container::{env_value, from_json, service_account_volume, volume_name};
use super::{CA_VOLUME, InjectOptions, SECRETS_DIR, SERVICE_ACCOUNT_MOUNT, SERVICE_ACCOUNT_VOLUME};
use crate::container_start::{self, ContainerFacts};
use crate::manifests::splice::Y;
use crate::manifests::tree::Tree;
use crate::manifests::{Manifests, PodSpec, Spot};
use crate::pull_policy::{self, PullPolicy};
use crate::route::inject::Additions;
use std::collections::HashSet;

/// What a pod spec's init container checks: images, in order, without duplicates; those with
/// whitespace or a comma as arguments; and the containers' facts for the start check, from the
/// same containers. Every image the reader found is in one of the first two, whatever list it
/// is in (a native sidecar's placeholder too, as `check --pod-spec` checks it), but those of
/// `never`.
pub(super) struct Checked {
    pub(super) images: Vec<(String, PullPolicy)>,
    pub(super) extra_args: Vec<String>,
    pub(super) facts: Vec<ContainerFacts>,
    /// The containers left out, `imagePullPolicy: Never` (`check --pod-spec` leaves them out
    /// too): each as `list name "image"`, for the note that names them.
    pub(super) never: Vec<String>,
}

impl Checked {
    pub(super) fn of(spec: &PodSpec) -> Checked {
        let mut images: Vec<(String, PullPolicy)> = Vec::new();
        let mut extra_args: Vec<String> = Vec::new();
        let mut facts: Vec<ContainerFacts> = Vec::new();
        let mut never: Vec<String> = Vec::new();
        for c in &spec.containers {
            if c.image_pull_policy.as_deref() == Some("Never") {
                // The image as the reader read it, quoted and bounded: a note is one line.
                let image = crate::escape::cut(&format!("{:?}", c.image), 160);
                never.push(format!("{} {} {image}", c.list.as_str(), c.name));
                continue;
            }
            // The reader trimmed it and left out what cannot be checked.
            let image = c.image.as_str();
            if let Some(f) = c.start_facts() {
                facts.push(f);
            }
            // PULLCHECK_IMAGES is split at whitespace and commas: an image holding either
            // would become other images there, so it is an argument, never dropped (the check
            // then says it is an invalid reference, as the kubelet would).
            if image.contains(|c: char| c.is_whitespace() || c == ',') {
                if !extra_args.iter().any(|i| i == &c.image) {
                    extra_args.push(c.image.clone());
                }
            } else {
                let policy = PullPolicy::resolve(image, c.image_pull_policy.as_deref());
                images.push((image.to_string(), policy));
            }
        }
        Checked {
            images,
            extra_args,
            facts,
            never,
        }
    }
}

/// What decides the init container: the options, and the document's tree and pod specs.
#[derive(Clone, Copy)]
pub(super) struct Wants<'a> {
    pub(super) options: &'a InjectOptions,
    pub(super) tree: &'a Tree,
    pub(super) manifests: &'a Manifests,
    /// The `--ca-file` paths of the check arguments.
    pub(super) ca_files: &'a [String],
    /// What the route choices add.
    pub(super) route: &'a Additions,
}

impl Wants<'_> {
    /// The pull secrets to mount: the pod's, then `--secret`; a pod's entry that is not a
    /// Secret name is warned about and left out.
    pub(super) fn secrets(&self, spot: &Spot, at: &str, warnings: &mut Vec<String>) -> Vec<String> {
        let mut secrets = spot.secrets.clone();
        for name in &self.options.secrets {
            if !name.is_empty() && !secrets.iter().any(|s| s == name) {
                secrets.push(name.clone());
            }
        }
        for name in &spot.bad_secrets {
            warnings.push(format!(
                "{at}: imagePullSecrets name {name:?} is not a Secret name; not mounted"
            ));
        }
        secrets
    }

    /// The init container's mounts: each secret's volume (`volume_names`: secret, volume),
    /// the CA files, the route's, the provider tokens' and the service-account token's.
    pub(super) fn mounts(&self, spot: &Spot, volume_names: &[(String, String)]) -> Vec<Y> {
        let mut mounts: Vec<Y> = volume_names
            .iter()
            .map(|(secret, volume)| {
                Y::map([
                    ("name", Y::s(volume)),
                    ("mountPath", Y::s(&format!("{SECRETS_DIR}/{secret}"))),
                    ("readOnly", Y::Bool(true)),
                ])
            })
            .collect();
        if self.options.ca_configmap.is_some() {
            for path in self.ca_files {
                let file = path.rsplit('/').next().unwrap_or(path);
                mounts.push(Y::map([
                    ("name", Y::s(CA_VOLUME)),
                    ("mountPath", Y::s(path)),
                    ("subPath", Y::s(file)),
                    ("readOnly", Y::Bool(true)),
                ]));
            }
        }
        mounts.extend(self.route.mounts.iter().map(from_json));
        if let Some(tokens) = &self.options.provider_tokens {
            mounts.push(from_json(&tokens.mount));
        }
        if self.needs_token(spot) {
            mounts.push(Y::map([
                ("name", Y::s(SERVICE_ACCOUNT_VOLUME)),
                ("mountPath", Y::s(SERVICE_ACCOUNT_MOUNT)),
                ("readOnly", Y::Bool(true)),
            ]));
        }
        mounts
    }

    /// Whether the init container looks the node up: with `--node-images` (the default), for
    /// a pod with an `IfNotPresent` image (a pod of `Always` images needs nothing of the node).
    pub(super) fn looks_up_node(&self, spot: &Spot) -> bool {
        self.options.node_images
            && Checked::of(&self.manifests.pod_specs[spot.spec])
                .images
                .iter()
                .any(|(_, p)| *p == PullPolicy::IfNotPresent)
    }

    /// Whose network the init container is in (`PULLCHECK_NETWORK`): the node's with
    /// `hostNetwork: true`, else the pod's own, whose loopback is not the node's.
    fn network(&self, spot: &Spot) -> &'static str {
        let t = self.tree;
        let host = t.get(spot.holder, "hostNetwork").and_then(|v| t.as_bool(v)) == Some(true);
        if host { "host" } else { "pod" }
    }

    /// Whether the init container gets its own service-account token: when it looks the node
    /// up, where the pod turns the automatic one off.
    pub(super) fn needs_token(&self, spot: &Spot) -> bool {
        let t = self.tree;
        self.looks_up_node(spot)
            && [spot.pod, Some(spot.volumes)]
                .into_iter()
                .flatten()
                .any(|n| {
                    t.get(n, "automountServiceAccountToken")
                        .and_then(|v| t.as_bool(v))
                        == Some(false)
                })
    }

    /// The init container's environment: the images (split by pull policy when it looks the
    /// node up), what counts (`PULLCHECK_ON_UNREACHABLE=warn`: the kubelet's back-off waits an
    /// outage out; the arguments after `--` still win, as flags over variables), whose
    /// network it is in, the containers' facts for the start check, and when it looks the
    /// node up the node's name and where the token is.
    pub(super) fn env(
        &self,
        spot: &Spot,
        images: Vec<(String, PullPolicy)>,
        facts: &[ContainerFacts],
        at: &str,
        warnings: &mut Vec<String>,
    ) -> Vec<Y> {
        let mut env = Vec::new();
        let node = self.looks_up_node(spot);
        if node {
            let to_check = pull_policy::to_check(images);
            let always: Vec<&str> = to_check
                .images
                .iter()
                .filter(|i| !to_check.if_not_present.contains(i))
                .map(String::as_str)
                .collect();
            env.push(env_value("PULLCHECK_IMAGES", &always.join(" ")));
            self.counting_env(spot, &mut env);
            if !to_check.if_not_present.is_empty() {
                env.push(env_value(
                    "PULLCHECK_IMAGES_IF_NOT_PRESENT",
                    &to_check.if_not_present.join(","),
                ));
            }
        } else {
            let mut plain: Vec<String> = Vec::new();
            for (image, _) in images {
                if !plain.contains(&image) {
                    plain.push(image);
                }
            }
            env.push(env_value("PULLCHECK_IMAGES", &plain.join(" ")));
            self.counting_env(spot, &mut env);
        }
        if !facts.is_empty() {
            let json = ContainerFacts::to_env(facts);
            if json.len() > container_start::MAX_CONTAINERS_JSON {
                warnings.push(format!(
                    "{at}: the containers' facts take {} bytes, more than the {} KiB \
                     PULLCHECK_CONTAINERS may hold; left out, so the init container does not \
                     predict whether the containers start",
                    json.len(),
                    container_start::MAX_CONTAINERS_JSON / 1024
                ));
            } else {
                env.push(env_value("PULLCHECK_CONTAINERS", &json));
            }
        }
        if node {
            env.push(Y::map([
                ("name", Y::s("PULLCHECK_NODE_NAME")),
                (
                    "valueFrom",
                    Y::map([(
                        "fieldRef",
                        Y::Flow(Box::new(Y::map([("fieldPath", Y::s("spec.nodeName"))]))),
                    )]),
                ),
            ]));
            if self.needs_token(spot) {
                env.push(env_value(
                    "PULLCHECK_SERVICE_ACCOUNT_DIR",
                    SERVICE_ACCOUNT_MOUNT,
                ));
            }
        }
        if let Some(tokens) = &self.options.provider_tokens {
            env.push(from_json(&tokens.env));
        }
        env
    }

    /// What decides what counts in the pod, after `PULLCHECK_IMAGES`: an unreachable registry
    /// is a warning (the kubelet's own back-off waits the outage out, as without pullcheck),
    /// and the pod's network is named, so that a registry on the node's loopback is not asked
    /// from the pod's.
    fn counting_env(&self, spot: &Spot, env: &mut Vec<Y>) {
        env.push(env_value("PULLCHECK_ON_UNREACHABLE", "warn"));
        env.push(env_value("PULLCHECK_NETWORK", self.network(spot)));
    }

    /// The volumes the init container mounts, in order: each secret's (named clear of
    /// `taken`), the CA ConfigMap, the route's, the provider tokens', the service-account
    /// token's; with the (secret, volume) names.
    pub(super) fn wanted_volumes(
        &self,
        spot: &Spot,
        secrets: &[String],
        taken: &mut HashSet<String>,
    ) -> (Vec<Y>, Vec<(String, String)>) {
        let mut names = Vec::new();
        let mut wanted = Vec::new();
        for secret in secrets {
            let volume = volume_name(secret, taken);
            taken.insert(volume.clone());
            wanted.push(Y::map([
                ("name", Y::s(&volume)),
                (
                    "secret",
                    Y::Flow(Box::new(Y::map([
                        ("secretName", Y::s(secret)),
                        ("optional", Y::Bool(true)),
                    ]))),
                ),
            ]));
            names.push((secret.clone(), volume));
        }
        if let Some(cm) = &self.options.ca_configmap {
            wanted.push(Y::map([
                ("name", Y::s(CA_VOLUME)),
                ("configMap", Y::Flow(Box::new(Y::map([("name", Y::s(cm))])))),
            ]));
        }
        for volume in &self.route.volumes {
            wanted.push(from_json(volume));
        }
        if let Some(tokens) = &self.options.provider_tokens {
            wanted.push(from_json(&tokens.volume));
        }
        if self.needs_token(spot) {
            wanted.push(service_account_volume());
        }
        (wanted, names)
    }
}
