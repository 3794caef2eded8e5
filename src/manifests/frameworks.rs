//! The job frameworks whose pods are not pod templates: Argo's workflow templates (a
//! `container` or `script` each) and Spark's driver and executor, read through the
//! [`Reader`]'s own reading of containers and pull secrets into the [`Found`].

use super::found::{Found, Spot, SpotShape};
use super::reader::{InPod, Owner, Reader, join};
use super::tree::{NodeId, Tree};
use super::{ContainerList, ManifestError, PULLCHECK, PodContainer};

/// An Argo workflow spec: each template that runs a container or script.
pub(super) fn argo(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    wf: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    let Some(templates) = t.get(wf, "templates") else {
        return Ok(());
    };
    let security = t.get(wf, "securityContext");
    let (secrets, bad_secrets) = reader.pull_secrets(t.get(wf, "imagePullSecrets"));
    for (i, &tpl) in t.items(templates).iter().enumerate() {
        let tpl = t.resolve(tpl);
        let main_key = if t.get(tpl, "container").is_some() {
            "container"
        } else if t.get(tpl, "script").is_some() {
            "script"
        } else {
            continue;
        };
        let origin = reader.origin(owner, &join(path, &format!("templates[{i}]")));
        let pod = InPod {
            origin: &origin,
            security,
        };
        let mut not_lists = not_lists(t, tpl);
        if let Some(v) = t.get(wf, "volumes")
            && !t.is_seq(v)
            && !t.is_null(v)
        {
            not_lists.push("volumes");
        }
        let mut read = Containers::default();
        read.list(reader, found, pod, tpl, ContainerList::Init)?;
        if let Some(main) = t.get(tpl, main_key) {
            read.nodes.push(main);
            let pc = reader.container(found, pod, main, "main", ContainerList::App, None)?;
            read.containers.extend(pc);
        }
        read.list(reader, found, pod, tpl, ContainerList::App)?;
        let shape = SpotShape {
            holder: tpl,
            before: &["container", "script"],
            volumes: wf,
            pod: None,
            job: None,
            operator_policy: None,
            // Argo runs each step's pod with restartPolicy Never unless a retryStrategy
            // says otherwise.
            default_policy: Some("Never"),
        };
        found.push(
            origin,
            read.containers,
            Spot {
                secrets: secrets.clone(),
                bad_secrets: bad_secrets.clone(),
                container_nodes: read.nodes,
                name_taken: read.name_taken,
                not_lists,
                ..shape.spot()
            },
        );
    }
    Ok(())
}

/// A Spark application spec: the driver and the executor.
pub(super) fn spark(
    reader: &Reader<'_>,
    found: &mut Found<'_>,
    owner: &Owner,
    app: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree();
    let (secrets, bad_secrets) = reader.pull_secrets(t.get(app, "imagePullSecrets"));
    let app_image = t.str_at(app, "image").map(str::to_string);
    let app_policy = t.str_at(app, "imagePullPolicy").map(str::to_string);
    for role in ["driver", "executor"] {
        let Some(r) = t.get(app, role) else { continue };
        if !t.is_map(r) {
            continue;
        }
        let origin = reader.origin(owner, &join(path, role));
        let pod = InPod {
            origin: &origin,
            security: None,
        };
        let not_lists = not_lists(t, r);
        let mut read = Containers::default();
        read.list(reader, found, pod, r, ContainerList::Init)?;
        // The driver or executor container itself: its image, else the application's.
        // (The driver map's `name`, if any, is not the container's.)
        let name = format!("spark-kubernetes-{role}");
        let main = reader.container(
            found,
            pod,
            r,
            &name,
            ContainerList::App,
            app_image.as_deref(),
        )?;
        if let Some(mut pc) = main {
            pc.name = name;
            if pc.image_pull_policy.is_none() {
                pc.image_pull_policy.clone_from(&app_policy);
            }
            read.containers.push(pc);
        }
        read.list(reader, found, pod, r, ContainerList::App)?;
        let shape = SpotShape {
            holder: r,
            before: &[],
            volumes: app,
            pod: None,
            job: None,
            operator_policy: None,
            default_policy: Some("Never"),
        };
        found.push(
            origin,
            read.containers,
            Spot {
                secrets: secrets.clone(),
                bad_secrets: bad_secrets.clone(),
                container_nodes: read.nodes,
                name_taken: read.name_taken,
                not_lists,
                main_mounts: Some(r),
                ..shape.spot()
            },
        );
    }
    Ok(())
}

/// Which of a framework pod's lists (`initContainers`, `sidecars`) are not lists.
fn not_lists(t: &Tree, holder: NodeId) -> Vec<&'static str> {
    ["initContainers", "sidecars"]
        .into_iter()
        .filter(|&key| {
            t.get(holder, key)
                .is_some_and(|v| !t.is_seq(v) && !t.is_null(v))
        })
        .collect()
}

/// The containers of one framework pod read so far, with their nodes.
#[derive(Default)]
struct Containers {
    containers: Vec<PodContainer>,
    nodes: Vec<NodeId>,
    /// A sidecar is named `pullcheck`.
    name_taken: bool,
}

impl Containers {
    /// Reads `holder`'s `initContainers` (`list` [`ContainerList::Init`]: pullcheck's own left
    /// out) or `sidecars` (app containers: one named `pullcheck` is read, and takes the name).
    fn list(
        &mut self,
        reader: &Reader<'_>,
        found: &mut Found<'_>,
        pod: InPod<'_>,
        holder: NodeId,
        list: ContainerList,
    ) -> Result<(), ManifestError> {
        let t = reader.tree();
        let init = list == ContainerList::Init;
        let key = if init { "initContainers" } else { "sidecars" };
        let Some(items) = t.get(holder, key) else {
            return Ok(());
        };
        for (j, &c) in t.items(items).iter().enumerate() {
            let c = t.resolve(c);
            let ours = t.str_at(c, "name") == Some(PULLCHECK);
            if init && ours {
                continue;
            }
            self.name_taken |= ours;
            self.nodes.push(c);
            let default_name = format!("#{}", j + 1);
            if let Some(pc) = reader.container(found, pod, c, &default_name, list, None)? {
                self.containers.push(pc);
            }
        }
        Ok(())
    }
}
