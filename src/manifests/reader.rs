//! Finding pod specs in a document's tree: the [`Spot`] where `inject` edits each one, and the
//! reading of a pod spec (containers, image volumes, pull secrets) that every kind shares.
//! Which kind keeps its pod specs where is in `kinds`; the job frameworks that are not pod
//! templates are in `frameworks`.

use super::{
    ContainerList, ManifestError, Origin, PULLCHECK, PodContainer, PodSpec, names, template_line,
    tree,
};
use tree::{NodeId, Tree};

/// Where `inject` edits one pod spec.
#[derive(Debug, Clone)]
pub(crate) struct Spot {
    /// Index of the public [`PodSpec`] in `pod_specs`.
    pub(crate) spec: usize,
    /// The mapping that holds (or gets) `initContainers`.
    pub(crate) holder: NodeId,
    /// New keys go before the first of these keys found in `holder` (else before its first).
    pub(crate) before: &'static [&'static str],
    /// The mapping that holds (or gets) `volumes` (the pod spec; a workflow's or a Spark
    /// application's spec, shared by several spots).
    pub(crate) volumes: NodeId,
    /// The pod spec proper, when the spot is one (restartPolicy, os, QoS).
    pub(crate) pod: Option<NodeId>,
    /// The `batch/v1` Job spec this pod spec belongs to.
    pub(crate) job: Option<NodeId>,
    /// The pull secrets' names (pod `imagePullSecrets`, Spark's list of names).
    pub(crate) secrets: Vec<String>,
    /// `imagePullSecrets` entries that are not Secret names.
    pub(crate) bad_secrets: Vec<String>,
    /// The restartPolicy an operator sets on the pods (Kubeflow's replica restartPolicy).
    pub(crate) operator_policy: Option<String>,
    /// The restartPolicy the framework gives its pods when it is not written.
    pub(crate) default_policy: Option<&'static str>,
    /// Every container node (init, app, sidecars), pullcheck's own left out, for mounts and
    /// QoS.
    pub(crate) container_nodes: Vec<NodeId>,
    /// An app container is already named `pullcheck`.
    pub(crate) name_taken: bool,
    /// Fields that must be lists and are not.
    pub(crate) not_lists: Vec<&'static str>,
    /// The pod runs on Windows.
    pub(crate) windows: bool,
    /// A container that must mount the added volumes too: the Spark operator adds to a pod
    /// only the application's volumes that the driver or executor mounts.
    pub(crate) main_mounts: Option<NodeId>,
}

pub(super) struct Reader<'a> {
    pub(super) text: &'a str,
    pub(super) source: &'a str,
    pub(super) tree: &'a Tree,
    pub(super) out: Vec<PodSpec>,
    pub(super) spots: Vec<Spot>,
    pub(super) notes: Vec<String>,
    /// Nodes the generic search may still visit (aliases can make a walk revisit nodes).
    pub(super) budget: usize,
    /// Argo parameter images seen since the last pod spec was recorded.
    pub(super) parameter_images: usize,
}

/// The object being read, for origins.
#[derive(Clone)]
pub(super) struct Owner {
    pub(super) document: usize,
    pub(super) kind: String,
    pub(super) api_version: String,
    pub(super) name: String,
}

/// What a spot's pod spec is, besides the common fields.
pub(super) struct SpotShape {
    pub(super) holder: NodeId,
    pub(super) before: &'static [&'static str],
    pub(super) volumes: NodeId,
    pub(super) pod: Option<NodeId>,
    pub(super) job: Option<NodeId>,
    pub(super) operator_policy: Option<String>,
    pub(super) default_policy: Option<&'static str>,
}

impl SpotShape {
    /// A spot of this shape, with nothing found in it yet.
    pub(super) fn spot(self) -> Spot {
        Spot {
            spec: 0,
            holder: self.holder,
            before: self.before,
            volumes: self.volumes,
            pod: self.pod,
            job: self.job,
            secrets: Vec::new(),
            bad_secrets: Vec::new(),
            operator_policy: self.operator_policy,
            default_policy: self.default_policy,
            container_nodes: Vec::new(),
            name_taken: false,
            not_lists: Vec::new(),
            windows: false,
            main_mounts: None,
        }
    }
}

/// Keys under which a pod template is a piece of a policy or patch, never a pod of its own.
pub(super) const PATCH_KEYS: [&str; 10] = [
    "patch",
    "patches",
    "patchStrategicMerge",
    "patchesStrategicMerge",
    "patchesJson6902",
    "jsonPatch",
    "rules",
    "mutate",
    "overlay",
    "match",
];

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl Reader<'_> {
    pub(super) fn note(&mut self, message: String) {
        self.notes.push(format!("{}: {message}", self.source));
    }

    pub(super) fn pod_spec(
        &mut self,
        owner: &Owner,
        spec: NodeId,
        path: &str,
        operator_policy: Option<String>,
        job: Option<NodeId>,
        default: Option<&'static str>,
    ) -> Result<(), ManifestError> {
        let shape = SpotShape {
            holder: spec,
            before: &["containers"],
            volumes: spec,
            pod: Some(spec),
            job,
            operator_policy,
            default_policy: default,
        };
        self.pod_spec_shaped(owner, spec, path, shape)
    }

    /// A real pod spec (`containers`, `initContainers`, `volumes`, `imagePullSecrets`).
    pub(super) fn pod_spec_shaped(
        &mut self,
        owner: &Owner,
        spec: NodeId,
        path: &str,
        shape: SpotShape,
    ) -> Result<(), ManifestError> {
        let t = self.tree;
        if !t.is_map(spec) {
            return Ok(());
        }
        let origin = self.origin(owner, path);
        let pod_security = t.get(spec, "securityContext");
        let mut containers = Vec::new();
        let mut nodes = Vec::new();
        let mut name_taken = false;
        let mut not_lists = Vec::new();
        for key in [
            "initContainers",
            "volumes",
            "imagePullSecrets",
            "containers",
        ] {
            if let Some(v) = t.get(spec, key)
                && !t.is_seq(v)
                && !t.is_null(v)
            {
                not_lists.push(key);
            }
        }
        for (key, list) in [
            ("initContainers", ContainerList::Init),
            ("containers", ContainerList::App),
        ] {
            let Some(l) = t.get(spec, key) else { continue };
            for (i, &c) in t.items(l).iter().enumerate() {
                let c = t.resolve(c);
                if t.str_at(c, "name") == Some(PULLCHECK) {
                    name_taken |= list == ContainerList::App;
                    continue;
                }
                nodes.push(c);
                let list = if list == ContainerList::Init
                    && t.str_at(c, "restartPolicy") == Some("Always")
                {
                    ContainerList::Sidecar
                } else {
                    list
                };
                if let Some(pc) =
                    self.container(&origin, c, &format!("#{}", i + 1), list, pod_security, None)?
                {
                    containers.push(pc);
                }
            }
        }
        self.image_volumes(&origin, spec, &mut containers);
        let (secrets, bad_secrets) = self.pull_secrets(t.get(spec, "imagePullSecrets"));
        // `spec.os.name` is what the API server checks; a node selector for Windows nodes
        // means the same pod.
        let windows = t.get(spec, "os").and_then(|o| t.str_at(o, "name")) == Some("windows")
            || t.get(spec, "nodeSelector").is_some_and(|s| {
                ["kubernetes.io/os", "beta.kubernetes.io/os"]
                    .iter()
                    .any(|k| t.str_at(s, k) == Some("windows"))
            });
        if windows {
            self.note(format!(
                "{origin}: a Windows pod; left out: pullcheck's image runs on Linux and checks for Linux nodes, so inject leaves it unchanged and check --pod-spec does not check its images"
            ));
        }
        self.push(
            origin,
            containers,
            Spot {
                secrets,
                bad_secrets,
                container_nodes: nodes,
                name_taken,
                not_lists,
                windows,
                ..shape.spot()
            },
        );
        Ok(())
    }

    /// Records a pod spec and where `inject` edits it.
    pub(super) fn push(&mut self, origin: Origin, containers: Vec<PodContainer>, mut spot: Spot) {
        spot.spec = self.out.len();
        let windows = spot.windows;
        self.spots.push(spot);
        let parameter_images = std::mem::take(&mut self.parameter_images);
        self.out.push(PodSpec {
            origin,
            containers,
            parameter_images,
            windows,
        });
    }

    pub(super) fn origin(&self, owner: &Owner, path: &str) -> Origin {
        Origin {
            document: owner.document,
            kind: owner.kind.clone(),
            api_version: owner.api_version.clone(),
            name: owner.name.clone(),
            path: if path.is_empty() {
                ".".to_string()
            } else {
                path.to_string()
            },
        }
    }

    /// Image volumes of a pod spec's `volumes`.
    pub(super) fn image_volumes(
        &mut self,
        origin: &Origin,
        spec: NodeId,
        out: &mut Vec<PodContainer>,
    ) {
        let t = self.tree;
        let Some(volumes) = t.get(spec, "volumes") else {
            return;
        };
        for (i, &v) in t.items(volumes).iter().enumerate() {
            let v = t.resolve(v);
            let Some(image) = t.get(v, "image") else {
                continue;
            };
            let name = t
                .str_at(v, "name")
                .map_or_else(|| format!("#{}", i + 1), clip);
            match t.str_at(image, "reference") {
                Some(r) if !r.trim().is_empty() => out.push(PodContainer {
                    name,
                    list: ContainerList::ImageVolume,
                    image: r.to_string(),
                    image_pull_policy: t.str_at(image, "pullPolicy").map(str::to_string),
                    command_set: false,
                    args_set: false,
                    run_as_non_root: None,
                    run_as_user: None,
                }),
                _ => self.note(format!(
                    "{origin}: image volume {name} has no reference; not checked"
                )),
            }
        }
    }

    /// Pull secret names: a list of `{name: …}` or (Spark) of strings.
    pub(super) fn pull_secrets(&self, list: Option<NodeId>) -> (Vec<String>, Vec<String>) {
        let t = self.tree;
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        let Some(list) = list else { return (good, bad) };
        for &e in t.items(list) {
            let e = t.resolve(e);
            let name = if t.is_map(e) {
                t.str_at(e, "name")
            } else {
                t.scalar(e)
            };
            let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
                continue;
            };
            if !names::is_dns_subdomain(name) {
                bad.push(clip(name));
            } else if !good.iter().any(|g| g == name) {
                good.push(name.to_string());
            }
        }
        (good, bad)
    }

    /// One container. `image_default` is Spark's `spec.image` for the driver and executor.
    pub(super) fn container(
        &mut self,
        origin: &Origin,
        c: NodeId,
        default_name: &str,
        list: ContainerList,
        pod_security: Option<NodeId>,
        image_default: Option<&str>,
    ) -> Result<Option<PodContainer>, ManifestError> {
        let t = self.tree;
        let name = t
            .str_at(c, "name")
            .filter(|n| !n.is_empty())
            .map_or_else(|| default_name.to_string(), clip);
        let image_node = t.get(c, "image");
        let image = match image_node {
            Some(n) => match t.scalar(n) {
                Some(s) => Some(s.to_string()),
                None if t.is_null(n) => None,
                None => {
                    // `image: {{ .Values.image }}` unquoted reads as a mapping.
                    if template_line(self.text).is_some() {
                        return Err(ManifestError::TemplateImage {
                            input: self.source.to_string(),
                            at: Box::new(origin.clone()),
                            list: list.as_str(),
                            container: name,
                        });
                    }
                    self.note(format!(
                        "{origin} {} {name}: the image is not a string; not checked",
                        list.as_str()
                    ));
                    return Ok(None);
                }
            },
            None => None,
        };
        let Some(image) = image.or_else(|| image_default.map(str::to_string)) else {
            self.note(format!(
                "{origin} {} {name}: no image; not checked",
                list.as_str()
            ));
            return Ok(None);
        };
        if image.trim().is_empty() {
            self.note(format!(
                "{origin} {} {name}: an empty image; not checked",
                list.as_str()
            ));
            return Ok(None);
        }
        // One answer for both subcommands: the image as the check sees it, without the
        // whitespace around it; a placeholder with whitespace inside (JobSet's `<CHANGE ME>`)
        // stays one (invalid) image, checked as one, and so does one that starts with '-':
        // inject passes such images after a `--`, where no value is read as an option.
        let image = image.trim().to_string();
        if image.contains("{{") {
            if origin.api_version.starts_with("argoproj.io/") {
                // Argo fills `{{inputs.parameters.image}}` in at run time.
                self.parameter_images += 1;
                self.note(format!(
                    "{origin} {} {name}: the image is an Argo parameter, known only at run time; not checked",
                    list.as_str()
                ));
                return Ok(None);
            }
            return Err(ManifestError::TemplateImage {
                input: self.source.to_string(),
                at: Box::new(origin.clone()),
                list: list.as_str(),
                container: name,
            });
        }
        let security = t.get(c, "securityContext");
        let effective_bool = |key: &str| {
            security
                .and_then(|s| t.get(s, key))
                .and_then(|v| t.as_bool(v))
                .or_else(|| {
                    pod_security
                        .and_then(|s| t.get(s, key))
                        .and_then(|v| t.as_bool(v))
                })
        };
        let effective_int = |key: &str| {
            security
                .and_then(|s| t.get(s, key))
                .and_then(|v| t.as_i64(v))
                .or_else(|| {
                    pod_security
                        .and_then(|s| t.get(s, key))
                        .and_then(|v| t.as_i64(v))
                })
        };
        // The kubelet and the runtimes read an empty list as no command (`len(Command) == 0`).
        let set = |key: &str| {
            t.get(c, key)
                .is_some_and(|v| !(t.is_null(v) || (t.is_seq(v) && t.items(v).is_empty())))
        };
        Ok(Some(PodContainer {
            name,
            list,
            image,
            image_pull_policy: t.str_at(c, "imagePullPolicy").map(str::to_string),
            command_set: set("command"),
            args_set: set("args"),
            run_as_non_root: effective_bool("runAsNonRoot"),
            run_as_user: effective_int("runAsUser"),
        }))
    }
}

/// At most 64 characters of a name from the document, control characters replaced.
pub(super) fn clip(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 64 {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}
