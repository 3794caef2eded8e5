//! The edit of one pod spec ([`Spot`]), written by a [`Writer`]: whether it can take the init
//! container, the volumes and mounts, the init container put first, and a Job's failure
//! policy (written by [`super::rule`]). What they hold is decided in [`super::wants`] and
//! [`super::job`].

use super::container::{
    init_container, is_our_volume, is_our_volume_name, pod_containers, with_route_args,
};
use super::job;
use super::resources::{self, Chosen, MEMORY_FLOOR, format_quantity};
use super::rule;
use super::wants::{Checked, Wants};
use super::{CONTAINER_NAME, Tally};
use crate::manifests::Spot;
use crate::manifests::splice::{Writer, Y};
use crate::manifests::tree::NodeId;
use std::collections::{HashMap, HashSet};

pub(super) struct Run<'a, W: Writer> {
    /// What decides the init container: the options, the document's tree and pod specs.
    pub(super) wants: Wants<'a>,
    /// The kind of a Pod's controller, at admission ([`super::plan`]).
    pub(super) owner: Option<&'a str>,
    pub(super) source: &'a str,
    /// How the edits are written (text or object).
    pub(super) writer: &'a W,
    pub(super) warnings: Vec<String>,
    pub(super) edits: Vec<W::Edit>,
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
    /// The pod specs written, and what they need.
    pub(super) tally: Tally,
}

/// How many containers a note names before it counts the rest.
const NAMED: usize = 8;

/// The note of the containers a pod spec's init container leaves out (`imagePullPolicy:
/// Never`), so that no image is left out without a word; `None` when there are none.
pub(super) fn never_note(never: &[String]) -> Option<String> {
    if never.is_empty() {
        return None;
    }
    let mut named = never[..never.len().min(NAMED)].join(", ");
    if never.len() > NAMED {
        named.push_str(&format!(" and {} more", never.len() - NAMED));
    }
    let them = if never.len() == 1 { "it" } else { "them" };
    Some(format!(
        "not checked: {named}: imagePullPolicy Never, so the kubelet never pulls {them} and the \
         node must already hold {them} (check --pod-spec leaves {them} out too)"
    ))
}

/// A volumes' holder's `volumes` as found: its items, the indices of ours, and the names of
/// the user's.
struct Existing {
    items: Vec<NodeId>,
    ours: Vec<usize>,
    user: HashSet<String>,
}

impl<'a, W: Writer> Run<'a, W> {
    pub(super) fn warn(&mut self, message: String) {
        self.warnings.push(format!("{}: {message}", self.source));
    }

    /// Edits one pod spec: if it can take the init container, what it checks, the secrets it
    /// mounts, the volumes, and the container put first (with the Job's failure policy).
    pub(super) fn spot(&mut self, spot: &Spot) {
        let t = self.wants.tree;
        let spec = &self.wants.manifests.pod_specs[spot.spec];
        let at = spec.origin.to_string();
        if !self.editable(spot, &at) {
            return;
        }
        // --job-failure-policy sets restartPolicy: Never where a Job's pod template has none.
        let policy_set_here = self.wants.options.job_failure_policy
            && spot.job.is_some()
            && spot
                .pod
                .is_some_and(|p| t.str_at(p, "restartPolicy").is_none());
        if !policy_set_here {
            let said = job::restart_policy_warning(
                self.wants.tree,
                self.wants.manifests,
                self.owner,
                spot,
                &at,
            );
            if let Some(message) = said {
                self.warn(message);
            }
        }
        let containers = pod_containers(t, spot.holder, &spot.container_nodes);
        let resources = match resources::choose(&containers, &self.wants.options.limit_ranges) {
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
        let mut said = Vec::new();
        let env = self
            .wants
            .env(spot, checked.images, &checked.facts, &at, &mut said);
        let secrets = self.wants.secrets(spot, &at, &mut said);
        for message in said {
            self.warn(message);
        }
        let Some(volume_names) = self.volumes(spot, &secrets, &at) else {
            return;
        };
        let mounts = self.wants.mounts(spot, &volume_names);
        let check_args = with_route_args(&self.wants.options.check_args, &self.wants.route.args);
        let container = init_container(
            &self.wants.options.image,
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
        if self.wants.options.job_failure_policy
            && let (Some(job), Some(pod)) = (spot.job, spot.pod)
            && self.jobs_done.insert(job)
        {
            self.failure_policy(job, pod, &at);
        }
        if let Some(note) = never_note(&checked.never) {
            self.notes.push(format!("{}: {at}: {note}", self.source));
        }
        if self.wants.looks_up_node(spot) {
            self.tally.node_lookups += 1;
        }
        self.tally.pod_specs += 1;
    }

    /// Whether the pod spec can take the init container; when not, a warning says why
    /// (except for Windows pods, of which the reader's note already speaks).
    fn editable(&mut self, spot: &Spot, at: &str) -> bool {
        let t = self.wants.tree;
        let spec = &self.wants.manifests.pod_specs[spot.spec];
        if let Some(key) = spot.not_lists.first() {
            self.warn(format!("{at}: {key} is not a list; left unchanged"));
            return false;
        }
        if spec.windows {
            // The reader's note says why (and that check --pod-spec leaves it out too).
            return false;
        }
        if let Some(why) =
            job::remade_when_failed(self.wants.tree, self.wants.manifests, self.owner, spot, at)
        {
            self.warn(why);
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

    /// The init container, first in `initContainers`.
    pub(super) fn init_containers(
        &mut self,
        spot: &Spot,
        container: &Y,
    ) -> Result<(), &'static str> {
        let t = self.wants.tree;
        let Some((key, list)) = t.own_entry(spot.holder, "initContainers") else {
            let value = Y::Seq(vec![container.clone()]);
            let e = self
                .writer
                .insert_key(spot.holder, spot.before, "initContainers", &value)?;
            self.edits.push(e);
            return Ok(());
        };
        if t.is_null(list) {
            let e = self
                .writer
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
                .push(self.writer.replace_item(list, 0, container)?),
            Some(i) => {
                let remove = self.writer.remove_item(list, i)?;
                let add = self.writer.prepend(list, std::slice::from_ref(container))?;
                self.edits.push(add);
                self.edits.push(remove);
            }
            None => self
                .edits
                .push(self.writer.prepend(list, std::slice::from_ref(container))?),
        }
        Ok(())
    }

    /// The Spark operator copies into a pod only the application's volumes that the driver or
    /// executor container mounts: that container mounts ours too (read-only, where the init
    /// container does), and no longer mounts ours of an earlier run that are gone.
    pub(super) fn main_mounts(&mut self, main: NodeId, mounts: &[Y]) -> Result<(), &'static str> {
        let t = self.wants.tree;
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
                let e = self.writer.insert_key(main, &[], "volumeMounts", &value)?;
                self.edits.push(e);
            }
            return Ok(());
        };
        if t.is_null(list) {
            if !wanted.is_empty() {
                let value = Y::Seq(wanted.iter().map(|(_, y)| (*y).clone()).collect());
                self.edits.push(self.writer.set_null(key, list, &value)?);
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
            self.edits.push(self.writer.prepend(list, &missing)?);
        }
        for (i, name) in present {
            if ours(&name) && !wanted.iter().any(|(n, _)| *n == name) {
                self.edits.push(self.writer.remove_item(list, i)?);
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
        let t = self.wants.tree;
        let existing = self.existing_volumes(spot);
        let mut taken = existing.user.clone();
        let (wanted, names) = self.wants.wanted_volumes(spot, secrets, &mut taken);
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
        let t = self.wants.tree;
        let mut mounted_by_others = HashSet::new();
        let sharing = self
            .spots_by_volumes
            .get(&spot.volumes)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for spot2 in sharing.iter().map(|&i| &self.wants.manifests.spots[i]) {
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

    /// The edits that make `volumes` hold `wanted` first and none of ours besides: a new key,
    /// a filled `null`, ours replaced in place when they lead the list, else prepended anew.
    fn volume_edits(
        &self,
        spot: &Spot,
        entry: Option<(NodeId, NodeId)>,
        existing: &Existing,
        wanted: Vec<Y>,
    ) -> Result<Vec<W::Edit>, &'static str> {
        let t = self.wants.tree;
        let (items, ours) = (&existing.items, &existing.ours);
        let mut edits = Vec::new();
        let Some((key, list)) = entry else {
            if !wanted.is_empty() {
                let before: &[&str] = if spot.pod.is_some() {
                    &["containers"]
                } else {
                    &[]
                };
                edits.push(self.writer.insert_key(
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
                edits.push(self.writer.set_null(key, list, &Y::Seq(wanted))?);
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
                    Some(y) => edits.push(self.writer.replace_item(list, i, y)?),
                    None => edits.push(self.writer.remove_item(list, i)?),
                }
            }
            if wanted.len() > ours.len() {
                edits.insert(0, self.writer.prepend(list, &wanted[ours.len()..])?);
            }
        } else {
            if !wanted.is_empty() {
                edits.push(self.writer.prepend(list, &wanted)?);
            }
            for &i in ours {
                edits.push(self.writer.remove_item(list, i)?);
            }
        }
        Ok(edits)
    }

    /// `podFailurePolicy` for a `batch/v1` Job, and `restartPolicy: Never` when unset.
    pub(super) fn failure_policy(&mut self, job: NodeId, pod: NodeId, at: &str) {
        let t = self.wants.tree;
        let restart = t.str_at(pod, "restartPolicy");
        if restart.is_some_and(|p| p != "Never") {
            self.warn(format!(
                "{at}: no podFailurePolicy added: it needs restartPolicy Never, and the pod \
                 template says {}",
                restart.unwrap_or_default()
            ));
            return;
        }
        let (rules, why) = job::rules(self.wants.options, t, job);
        let result = (|| -> Result<(Vec<W::Edit>, Option<NodeId>), &'static str> {
            let mut edits = Vec::new();
            let mut replaced = None;
            match t.own_entry(job, "podFailurePolicy") {
                None => {
                    let added = rule::add_policy(self.writer, t, job, rules)?;
                    edits = added.edits;
                    replaced = added.replaced;
                }
                Some((_, policy)) => {
                    let existing = t
                        .get(policy, "rules")
                        .ok_or("podFailurePolicy has no rules")?;
                    let ours = t.items(existing).iter().any(|&r| {
                        t.get(r, "onExitCodes")
                            .and_then(|o| t.str_at(o, "containerName"))
                            == Some(CONTAINER_NAME)
                    });
                    if ours {
                        return Ok((edits, None));
                    }
                    if t.resolve(existing) != existing || t.items(existing).is_empty() {
                        return Err("its rules are not a plain list");
                    }
                    edits.push(self.writer.prepend(existing, &rules)?);
                }
            }
            if restart.is_none() {
                edits.push(self.writer.insert_key(
                    pod,
                    &["containers"],
                    "restartPolicy",
                    &Y::s("Never"),
                )?);
            }
            Ok((edits, replaced))
        })();
        match result {
            Ok((edits, _)) if edits.is_empty() => self.notes.push(format!(
                "{}: {at}: podFailurePolicy kept: it has rules for container {CONTAINER_NAME} already",
                self.source
            )),
            Ok((edits, replaced)) => {
                // A Job read from a file that sets it gets the same change as one at admission
                // (defaulted), and a note says so.
                if let Some(was) = replaced {
                    self.notes.push(format!(
                        "{}: podReplacementPolicy {} -> Failed: the podFailurePolicy added needs it",
                        self.source,
                        t.scalar(was).unwrap_or("(not a string)")
                    ));
                }
                self.edits.extend(edits);
                self.notes.push(format!(
                    "{}: {at}: podFailurePolicy rules for container {CONTAINER_NAME}: FailJob on 3, 4, 5, 7 (proven); {why}",
                    self.source
                ));
            }
            Err(why) => self.warn(format!("{at}: no podFailurePolicy added ({why})")),
        }
    }
}
