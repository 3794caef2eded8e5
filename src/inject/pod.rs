//! The edit of one pod spec ([`Spot`]): what is checked, the pull secrets, the volumes and
//! mounts, and the init container put first.

use super::container::{
    env_value, from_json, init_container, is_our_volume, is_our_volume_name, pod_containers,
    service_account_volume, volume_name, with_route_args,
};
use super::resources::{self, Chosen, MEMORY_FLOOR, format_quantity};
use super::{
    CA_VOLUME, CONTAINER_NAME, InjectOptions, SECRETS_DIR, SERVICE_ACCOUNT_MOUNT,
    SERVICE_ACCOUNT_VOLUME,
};
use crate::container_start::{self, ContainerFacts};
use crate::manifests::splice::{Edit, Splicer, Y};
use crate::manifests::tree::{NodeId, Tree};
use crate::manifests::{Manifests, PodSpec, Spot};
use crate::pull_policy::{self, PullPolicy};
use crate::route::inject::Additions;
use std::collections::{HashMap, HashSet};

pub(super) struct Run<'a> {
    pub(super) options: &'a InjectOptions,
    /// The kind of a Pod's controller, at admission ([`super::inject_owned`]).
    pub(super) owner: Option<&'a str>,
    pub(super) source: &'a str,
    pub(super) manifests: &'a Manifests,
    pub(super) tree: &'a Tree,
    pub(super) splicer: Splicer<'a>,
    pub(super) ca_files: &'a [String],
    pub(super) route: &'a Additions,
    pub(super) warnings: Vec<String>,
    pub(super) edits: Vec<Edit>,
    /// Volume holders already edited (shared by a workflow's templates, a Spark app's driver
    /// and executor), with the volume names chosen there.
    pub(super) volumes_done: HashMap<NodeId, Vec<(String, String)>>,
    /// The spots of each volume holder, indexed once: looking them up by scanning every spot
    /// for each pod spec made 100,000 documents quadratic (60 s).
    pub(super) spots_by_volumes: HashMap<NodeId, Vec<usize>>,
    /// Job specs already given a failure policy.
    pub(super) jobs_done: HashSet<NodeId>,
    /// What was written and why, for stderr.
    pub(super) notes: Vec<String>,
    pub(super) pod_specs: usize,
}

/// A volumes' holder's `volumes` as found: its items, the indices of ours, and the names of
/// the user's.
struct Existing {
    items: Vec<NodeId>,
    ours: Vec<usize>,
    user: HashSet<String>,
}

/// What a pod spec's init container checks: images, in order, without duplicates; those with
/// whitespace or a comma as arguments; and the containers' facts for the start check, from the
/// same containers.
struct Checked {
    images: Vec<(String, PullPolicy)>,
    extra_args: Vec<String>,
    facts: Vec<ContainerFacts>,
}

impl Checked {
    fn of(spec: &PodSpec) -> Checked {
        let mut images: Vec<(String, PullPolicy)> = Vec::new();
        let mut extra_args: Vec<String> = Vec::new();
        let mut facts: Vec<ContainerFacts> = Vec::new();
        for c in &spec.containers {
            if c.image_pull_policy.as_deref() == Some("Never") {
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
        }
    }
}

/// The workload kinds whose pods may only restart `Always`.
pub(super) const ALWAYS_ONLY_KINDS: [&str; 5] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ReplicationController",
];

impl Run<'_> {
    pub(super) fn warn(&mut self, message: String) {
        self.warnings.push(format!("{}: {message}", self.source));
    }

    /// Edits one pod spec: if it can take the init container, what it checks, the secrets it
    /// mounts, the volumes, and the container put first (with the Job's failure policy).
    pub(super) fn spot(&mut self, spot: &Spot) {
        let t = self.tree;
        let spec = &self.manifests.pod_specs[spot.spec];
        let at = spec.origin.to_string();
        if !self.editable(spot, &at) {
            return;
        }
        // --job-failure-policy sets restartPolicy: Never where a Job's pod template has none.
        let policy_set_here = self.options.job_failure_policy
            && spot.job.is_some()
            && spot
                .pod
                .is_some_and(|p| t.str_at(p, "restartPolicy").is_none());
        if !policy_set_here {
            self.restart_policy_warning(spot, &at);
        }
        let containers = pod_containers(t, spot.holder, &spot.container_nodes);
        let resources = match resources::choose(&containers, &self.options.limit_ranges) {
            Chosen::Set(resources) => resources,
            Chosen::TooLittleMemory(limit) => {
                self.warn(format!(
                    "{at}: the pod's containers and the namespace's LimitRange allow the init \
                     container a memory limit of {}, under the {} it needs; left unchanged (more \
                     would raise what the pod counts against its quota)",
                    format_quantity("memory", limit),
                    format_quantity("memory", MEMORY_FLOOR)
                ));
                return;
            }
        };
        let checked = Checked::of(spec);
        let env = self.env(spot, checked.images, &checked.facts, &at);
        let secrets = self.secrets(spot, &at);
        let Some(volume_names) = self.volumes(spot, &secrets, &at) else {
            return;
        };
        let mounts = self.mounts(spot, &volume_names);
        let check_args = with_route_args(&self.options.check_args, &self.route.args);
        let container = init_container(
            &self.options.image,
            &check_args,
            &env,
            &checked.extra_args,
            &mounts,
            &resources,
        );
        if let Some(main) = spot.main_mounts
            && let Err(why) = self.main_mounts(main, &mounts)
        {
            self.warn(format!(
                "{at}: cannot add the volume mounts the operator needs ({why}); left unchanged"
            ));
            return;
        }
        if let Err(why) = self.init_containers(spot, &container) {
            self.warn(format!(
                "{at}: cannot edit initContainers ({why}); left unchanged"
            ));
            return;
        }
        if self.options.job_failure_policy
            && let (Some(job), Some(pod)) = (spot.job, spot.pod)
            && self.jobs_done.insert(job)
        {
            self.failure_policy(job, pod, &at);
        }
        self.pod_specs += 1;
    }

    /// Whether the pod spec can take the init container; when not, a warning says why
    /// (except for Windows pods, of which the reader's note already speaks).
    fn editable(&mut self, spot: &Spot, at: &str) -> bool {
        let t = self.tree;
        let spec = &self.manifests.pod_specs[spot.spec];
        if let Some(key) = spot.not_lists.first() {
            self.warn(format!("{at}: {key} is not a list; left unchanged"));
            return false;
        }
        if spec.windows {
            // The reader's note says why (and that check --pod-spec leaves it out too).
            return false;
        }
        if spot.name_taken {
            self.warn(format!(
                "{at}: a container is already named {CONTAINER_NAME}; left unchanged \
                 (container names are unique across initContainers and containers)"
            ));
            return false;
        }
        if spec.containers.is_empty() && spec.parameter_images > 0 {
            // The template has a container: its image is known only when the workflow runs.
            self.warn(format!(
                "{at}: its image is an Argo workflow parameter, known only at run time; left \
                 unchanged (there is no image to check before the workflow fills it in)"
            ));
            return false;
        }
        if spec.containers.is_empty() {
            // Nothing to check, and the API server refuses a pod without containers. (Found by
            // fuzzing: two keys inserted into an empty JSON object `{}` lacked their comma.)
            self.warn(format!(
                "{at}: no containers and no image volumes; left unchanged (nothing to check)"
            ));
            return false;
        }
        // A list that comes through a `<<` merge key cannot be edited where it is written.
        let merged = |node: NodeId, key: &str| {
            t.has_merge(node) && t.own_entry(node, key).is_none() && t.get(node, key).is_some()
        };
        for (node, what) in [
            (spot.holder, "the pod spec"),
            (spot.volumes, "the volumes' holder"),
        ] {
            if t.is_aliased(node) || merged(node, "initContainers") || merged(node, "volumes") {
                self.warn(format!(
                    "{at}: {what} is shared through a YAML anchor or merge key; left unchanged \
                     (an edit would change every copy)"
                ));
                return false;
            }
        }
        true
    }

    /// The pull secrets to mount: the pod's, then `--secret`; a pod's entry that is not a
    /// Secret name is warned about and left out.
    fn secrets(&mut self, spot: &Spot, at: &str) -> Vec<String> {
        let mut secrets = spot.secrets.clone();
        for name in &self.options.secrets {
            if !name.is_empty() && !secrets.iter().any(|s| s == name) {
                secrets.push(name.clone());
            }
        }
        for name in &spot.bad_secrets {
            self.warn(format!(
                "{at}: imagePullSecrets name {name:?} is not a Secret name; not mounted"
            ));
        }
        secrets
    }

    /// The init container's mounts: each secret's volume (`volume_names`: secret, volume),
    /// the CA files, the route's, the provider tokens' and the service-account token's.
    fn mounts(&self, spot: &Spot, volume_names: &[(String, String)]) -> Vec<Y> {
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
    fn looks_up_node(&self, spot: &Spot) -> bool {
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
        &mut self,
        spot: &Spot,
        images: Vec<(String, PullPolicy)>,
        facts: &[ContainerFacts],
        at: &str,
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
                self.warn(format!(
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

    /// The init container, first in `initContainers`.
    pub(super) fn init_containers(
        &mut self,
        spot: &Spot,
        container: &Y,
    ) -> Result<(), &'static str> {
        let t = self.tree;
        let Some((key, list)) = t.own_entry(spot.holder, "initContainers") else {
            let value = Y::Seq(vec![container.clone()]);
            let e = self
                .splicer
                .insert_key(spot.holder, spot.before, "initContainers", &value)?;
            self.edits.push(e);
            return Ok(());
        };
        if t.is_null(list) {
            let e = self
                .splicer
                .set_null(key, list, &Y::Seq(vec![container.clone()]))?;
            self.edits.push(e);
            return Ok(());
        }
        if t.is_aliased(list) || t.resolve(list) != list {
            return Err("the list is shared through a YAML anchor");
        }
        let ours = t
            .items(list)
            .iter()
            .position(|&c| t.str_at(c, "name") == Some(CONTAINER_NAME));
        match ours {
            Some(0) if t.to_json(t.items(list)[0]) == Some(container.to_json()) => {}
            Some(0) => self
                .edits
                .push(self.splicer.replace_item(list, 0, container)?),
            Some(i) => {
                let remove = self.splicer.remove_item(list, i)?;
                let add = self
                    .splicer
                    .prepend(list, std::slice::from_ref(container))?;
                self.edits.push(add);
                self.edits.push(remove);
            }
            None => self.edits.push(
                self.splicer
                    .prepend(list, std::slice::from_ref(container))?,
            ),
        }
        Ok(())
    }

    /// The Spark operator copies into a pod only the application's volumes that the driver or
    /// executor container mounts: that container mounts ours too (read-only, where the init
    /// container does), and no longer mounts ours of an earlier run that are gone.
    pub(super) fn main_mounts(&mut self, main: NodeId, mounts: &[Y]) -> Result<(), &'static str> {
        let t = self.tree;
        let wanted: Vec<(String, &Y)> = mounts
            .iter()
            .filter_map(|m| match m {
                Y::Map(entries) => entries.iter().find_map(|(k, v)| match (k.as_str(), v) {
                    ("name", Y::Str(n)) => Some((n.clone(), m)),
                    _ => None,
                }),
                _ => None,
            })
            .collect();
        let ours = is_our_volume_name;
        let Some((key, list)) = t.own_entry(main, "volumeMounts") else {
            if !wanted.is_empty() {
                let value = Y::Seq(wanted.iter().map(|(_, y)| (*y).clone()).collect());
                let e = self.splicer.insert_key(main, &[], "volumeMounts", &value)?;
                self.edits.push(e);
            }
            return Ok(());
        };
        if t.is_null(list) {
            if !wanted.is_empty() {
                let value = Y::Seq(wanted.iter().map(|(_, y)| (*y).clone()).collect());
                self.edits.push(self.splicer.set_null(key, list, &value)?);
            }
            return Ok(());
        }
        if t.is_aliased(list) || t.resolve(list) != list {
            return Err("the list is shared through a YAML anchor");
        }
        let items = t.items(list).to_vec();
        let present: Vec<(usize, String)> = items
            .iter()
            .enumerate()
            .filter_map(|(i, &m)| t.str_at(m, "name").map(|n| (i, n.to_string())))
            .collect();
        let missing: Vec<Y> = wanted
            .iter()
            .filter(|(n, _)| !present.iter().any(|(_, p)| p == n))
            .map(|(_, y)| (*y).clone())
            .collect();
        if !missing.is_empty() {
            self.edits.push(self.splicer.prepend(list, &missing)?);
        }
        for (i, name) in present {
            if ours(&name) && !wanted.iter().any(|(n, _)| *n == name) {
                self.edits.push(self.splicer.remove_item(list, i)?);
            }
        }
        Ok(())
    }

    /// Makes the volumes' holder have exactly the volumes this run wants (once per holder);
    /// returns (secret, volume name) pairs, `None` (with a warning) when it cannot be edited.
    pub(super) fn volumes(
        &mut self,
        spot: &Spot,
        secrets: &[String],
        at: &str,
    ) -> Option<Vec<(String, String)>> {
        if let Some(done) = self.volumes_done.get(&spot.volumes) {
            return Some(done.clone());
        }
        let t = self.tree;
        let existing = self.existing_volumes(spot);
        let mut taken = existing.user.clone();
        let (wanted, names) = self.wanted_volumes(spot, secrets, &mut taken);
        // A volume of the pod's own with the name of one added here would make the pod
        // invalid (volume names are unique): leave the pod alone and say so.
        if let Some(clash) = wanted.iter().find_map(|v| {
            let name = v.to_json().get("name")?.as_str()?.to_string();
            existing.user.contains(&name).then_some(name)
        }) {
            self.warn(format!(
                "{at}: the pod already has a volume named {clash:?} of its own; left unchanged"
            ));
            return None;
        }
        self.volumes_done.insert(spot.volumes, names.clone());
        let entry = t.own_entry(spot.volumes, "volumes");
        match self.volume_edits(spot, entry, &existing, wanted) {
            Ok(edits) => {
                self.edits.extend(edits);
                Some(names)
            }
            Err(why) => {
                self.warn(format!("{at}: cannot edit volumes ({why}); left unchanged"));
                None
            }
        }
    }

    /// The volumes' holder's `volumes`: which items are ours (from an earlier inject), and the
    /// names of the user's. Volumes any container but ours mounts are the user's, whatever
    /// their name.
    fn existing_volumes(&self, spot: &Spot) -> Existing {
        let t = self.tree;
        let mut mounted_by_others = HashSet::new();
        let sharing = self
            .spots_by_volumes
            .get(&spot.volumes)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for spot2 in sharing.iter().map(|&i| &self.manifests.spots[i]) {
            for &c in &spot2.container_nodes {
                for key in ["volumeMounts", "volumeDevices"] {
                    if let Some(list) = t.get(c, key) {
                        for &m in t.items(list) {
                            if let Some(n) = t.str_at(m, "name") {
                                mounted_by_others.insert(n.to_string());
                            }
                        }
                    }
                }
            }
        }
        let entry = t.own_entry(spot.volumes, "volumes");
        let items: Vec<NodeId> = entry.map(|(_, v)| t.items(v).to_vec()).unwrap_or_default();
        let is_ours = |v: NodeId| {
            let name = t.str_at(v, "name").unwrap_or("");
            !mounted_by_others.contains(name)
                && ["secret", "configMap", "projected", "hostPath"]
                    .iter()
                    .any(|source| t.get(v, source).is_some() && is_our_volume(name, source))
        };
        let ours: Vec<usize> = (0..items.len()).filter(|&i| is_ours(items[i])).collect();
        let ours_set: HashSet<usize> = ours.iter().copied().collect();
        let user: HashSet<String> = items
            .iter()
            .enumerate()
            .filter(|(i, _)| !ours_set.contains(i))
            .filter_map(|(_, &v)| t.str_at(v, "name").map(str::to_string))
            .collect();
        Existing { items, ours, user }
    }

    /// The volumes the init container mounts, in order: each secret's (named clear of
    /// `taken`), the CA ConfigMap, the route's, the provider tokens', the service-account
    /// token's; with the (secret, volume) names.
    fn wanted_volumes(
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

    /// The edits that make `volumes` hold `wanted` first and none of ours besides: a new key,
    /// a filled `null`, ours replaced in place when they lead the list, else prepended anew.
    fn volume_edits(
        &self,
        spot: &Spot,
        entry: Option<(NodeId, NodeId)>,
        existing: &Existing,
        wanted: Vec<Y>,
    ) -> Result<Vec<Edit>, &'static str> {
        let t = self.tree;
        let (items, ours) = (&existing.items, &existing.ours);
        let mut edits = Vec::new();
        let Some((key, list)) = entry else {
            if !wanted.is_empty() {
                let before: &[&str] = if spot.pod.is_some() {
                    &["containers"]
                } else {
                    &[]
                };
                edits.push(self.splicer.insert_key(
                    spot.volumes,
                    before,
                    "volumes",
                    &Y::Seq(wanted),
                )?);
            }
            return Ok(edits);
        };
        if t.is_null(list) {
            if !wanted.is_empty() {
                edits.push(self.splicer.set_null(key, list, &Y::Seq(wanted))?);
            }
            return Ok(edits);
        }
        if t.is_aliased(list) || t.resolve(list) != list {
            return Err("the list is shared through a YAML anchor");
        }
        let current: Vec<serde_json::Value> =
            ours.iter().filter_map(|&i| t.to_json(items[i])).collect();
        let want_json: Vec<serde_json::Value> = wanted.iter().map(Y::to_json).collect();
        let leading = ours.iter().enumerate().all(|(n, &i)| n == i);
        if current == want_json && leading {
            return Ok(edits);
        }
        if leading {
            for (n, &i) in ours.iter().enumerate() {
                match wanted.get(n) {
                    Some(y) => edits.push(self.splicer.replace_item(list, i, y)?),
                    None => edits.push(self.splicer.remove_item(list, i)?),
                }
            }
            if wanted.len() > ours.len() {
                edits.insert(0, self.splicer.prepend(list, &wanted[ours.len()..])?);
            }
        } else {
            if !wanted.is_empty() {
                edits.push(self.splicer.prepend(list, &wanted)?);
            }
            for &i in ours {
                edits.push(self.splicer.remove_item(list, i)?);
            }
        }
        Ok(edits)
    }
}
