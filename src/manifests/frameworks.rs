//! The job frameworks whose pods are not pod templates: Argo's workflow templates (a
//! `container` or `script` each) and Spark's driver and executor, read through the
//! [`Reader`]'s own reading of containers and pull secrets.

use super::reader::{Owner, Reader, Spot, SpotShape, join};
use super::tree::NodeId;
use super::{ContainerList, ManifestError, PULLCHECK};

/// An Argo workflow spec: each template that runs a container or script.
pub(super) fn argo(
    reader: &mut Reader<'_>,
    owner: &Owner,
    wf: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree;
    let Some(templates) = t.get(wf, "templates") else {
        return Ok(());
    };
    let pod_security = t.get(wf, "securityContext");
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
        let mut containers = Vec::new();
        let mut nodes = Vec::new();
        let mut name_taken = false;
        let mut not_lists = Vec::new();
        for key in ["initContainers", "sidecars"] {
            if let Some(v) = t.get(tpl, key)
                && !t.is_seq(v)
                && !t.is_null(v)
            {
                not_lists.push(key);
            }
        }
        if let Some(v) = t.get(wf, "volumes")
            && !t.is_seq(v)
            && !t.is_null(v)
        {
            not_lists.push("volumes");
        }
        if let Some(inits) = t.get(tpl, "initContainers") {
            for (j, &c) in t.items(inits).iter().enumerate() {
                let c = t.resolve(c);
                if t.str_at(c, "name") == Some(PULLCHECK) {
                    continue;
                }
                nodes.push(c);
                if let Some(pc) = reader.container(
                    &origin,
                    c,
                    &format!("#{}", j + 1),
                    ContainerList::Init,
                    pod_security,
                    None,
                )? {
                    containers.push(pc);
                }
            }
        }
        if let Some(main) = t.get(tpl, main_key) {
            nodes.push(main);
            let pc = reader.container(
                &origin,
                main,
                "main",
                ContainerList::App,
                pod_security,
                None,
            )?;
            containers.extend(pc);
        }
        if let Some(sidecars) = t.get(tpl, "sidecars") {
            for (j, &c) in t.items(sidecars).iter().enumerate() {
                let c = t.resolve(c);
                name_taken |= t.str_at(c, "name") == Some(PULLCHECK);
                nodes.push(c);
                if let Some(pc) = reader.container(
                    &origin,
                    c,
                    &format!("#{}", j + 1),
                    ContainerList::App,
                    pod_security,
                    None,
                )? {
                    containers.push(pc);
                }
            }
        }
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
        reader.push(
            origin,
            containers,
            Spot {
                secrets: secrets.clone(),
                bad_secrets: bad_secrets.clone(),
                container_nodes: nodes,
                name_taken,
                not_lists,
                ..shape.spot()
            },
        );
    }
    Ok(())
}

/// A Spark application spec: the driver and the executor.
pub(super) fn spark(
    reader: &mut Reader<'_>,
    owner: &Owner,
    app: NodeId,
    path: &str,
) -> Result<(), ManifestError> {
    let t = reader.tree;
    let (secrets, bad_secrets) = reader.pull_secrets(t.get(app, "imagePullSecrets"));
    let app_image = t.str_at(app, "image").map(str::to_string);
    let app_policy = t.str_at(app, "imagePullPolicy").map(str::to_string);
    for role in ["driver", "executor"] {
        let Some(r) = t.get(app, role) else { continue };
        if !t.is_map(r) {
            continue;
        }
        let origin = reader.origin(owner, &join(path, role));
        let mut containers = Vec::new();
        let mut nodes = Vec::new();
        let mut name_taken = false;
        let mut not_lists = Vec::new();
        for key in ["initContainers", "sidecars"] {
            if let Some(v) = t.get(r, key)
                && !t.is_seq(v)
                && !t.is_null(v)
            {
                not_lists.push(key);
            }
        }
        if let Some(inits) = t.get(r, "initContainers") {
            for (j, &c) in t.items(inits).iter().enumerate() {
                let c = t.resolve(c);
                if t.str_at(c, "name") == Some(PULLCHECK) {
                    continue;
                }
                nodes.push(c);
                if let Some(pc) = reader.container(
                    &origin,
                    c,
                    &format!("#{}", j + 1),
                    ContainerList::Init,
                    None,
                    None,
                )? {
                    containers.push(pc);
                }
            }
        }
        // The driver or executor container itself: its image, else the application's.
        // (The driver map's `name`, if any, is not the container's.)
        if let Some(mut pc) = reader.container(
            &origin,
            r,
            &format!("spark-kubernetes-{role}"),
            ContainerList::App,
            None,
            app_image.as_deref(),
        )? {
            pc.name = format!("spark-kubernetes-{role}");
            if pc.image_pull_policy.is_none() {
                pc.image_pull_policy.clone_from(&app_policy);
            }
            containers.push(pc);
        }
        if let Some(sidecars) = t.get(r, "sidecars") {
            for (j, &c) in t.items(sidecars).iter().enumerate() {
                let c = t.resolve(c);
                name_taken |= t.str_at(c, "name") == Some(PULLCHECK);
                nodes.push(c);
                if let Some(pc) = reader.container(
                    &origin,
                    c,
                    &format!("#{}", j + 1),
                    ContainerList::App,
                    None,
                    None,
                )? {
                    containers.push(pc);
                }
            }
        }
        let shape = SpotShape {
            holder: r,
            before: &[],
            volumes: app,
            pod: None,
            job: None,
            operator_policy: None,
            default_policy: Some("Never"),
        };
        reader.push(
            origin,
            containers,
            Spot {
                secrets: secrets.clone(),
                bad_secrets: bad_secrets.clone(),
                container_nodes: nodes,
                name_taken,
                not_lists,
                main_mounts: Some(r),
                ..shape.spot()
            },
        );
    }
    Ok(())
}
