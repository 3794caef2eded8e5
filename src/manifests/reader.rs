//! What the kind readers read from: the [`Reader`] (the text, its name, its tree), and the
//! reading of a pod spec (containers, image volumes, pull secrets) that every kind shares, into
//! a [`Found`]. Which kind keeps its pod specs where is in `kinds`; the job frameworks that are
//! not pod templates are in `frameworks`.

use super::found::{Found, Spot, SpotShape};
use super::{
    ContainerList, ManifestError, Origin, PULLCHECK, PodContainer, names, template_line, tree,
};
use tree::{NodeId, Tree};

/// What the pod specs are read from; read-only, shared by every kind reader.
pub(super) struct Reader<'a> {
    /// The input as text (empty: an object that was never text), for the template check.
    text: &'a str,
    /// The input's name, for errors.
    source: &'a str,
    tree: &'a Tree,
}

/// The pod a container is read in: where it is, and its `securityContext` (whose values a
/// container's own override).
#[derive(Clone, Copy)]
pub(super) struct InPod<'o> {
    pub(super) origin: &'o Origin,
    pub(super) security: Option<NodeId>,
}

/// The object being read, for origins.
#[derive(Clone)]
pub(super) struct Owner {
    pub(super) document: usize,
    pub(super) kind: String,
    pub(super) api_version: String,
    pub(super) name: String,
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

impl<'a> Reader<'a> {
    /// A reader of `tree`, parsed from `text` (empty: an object that was never text); `source`
    /// names the input in errors.
    pub(super) fn new(text: &'a str, source: &'a str, tree: &'a Tree) -> Reader<'a> {
        Reader { text, source, tree }
    }

    /// The tree the pod specs are read from.
    pub(super) fn tree(&self) -> &'a Tree {
        self.tree
    }

    /// A real pod spec (`containers`, `initContainers`, `volumes`, `imagePullSecrets`) at
    /// `shape.holder`, recorded in `found` with the spot `shape` says.
    pub(super) fn pod_spec(
        &self,
        found: &mut Found<'_>,
        owner: &Owner,
        path: &str,
        shape: SpotShape,
    ) -> Result<(), ManifestError> {
        let t = self.tree;
        let spec = shape.holder;
        if !t.is_map(spec) {
            return Ok(());
        }
        let origin = self.origin(owner, path);
        let pod = InPod {
            origin: &origin,
            security: t.get(spec, "securityContext"),
        };
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
                let default_name = format!("#{}", i + 1);
                if let Some(pc) = self.container(found, pod, c, &default_name, list, None)? {
                    containers.push(pc);
                }
            }
        }
        self.image_volumes(found, &origin, spec, &mut containers);
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
            found.note(format!(
                "{origin}: a Windows pod; left out: pullcheck's image runs on Linux and checks for Linux nodes, so inject leaves it unchanged and check --pod-spec does not check its images"
            ));
        }
        found.push(
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

    /// Where the pod spec at `path` of `owner` is (`.`: the object is the pod spec).
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
    fn image_volumes(
        &self,
        found: &mut Found<'_>,
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
                _ => found.note(format!(
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

    /// One container of `pod`; `None` (with a note) when it has no image to check.
    /// `image_default` is Spark's `spec.image` for the driver and executor.
    pub(super) fn container(
        &self,
        found: &mut Found<'_>,
        pod: InPod<'_>,
        c: NodeId,
        default_name: &str,
        list: ContainerList,
        image_default: Option<&str>,
    ) -> Result<Option<PodContainer>, ManifestError> {
        let t = self.tree;
        let name = t
            .str_at(c, "name")
            .filter(|n| !n.is_empty())
            .map_or_else(|| default_name.to_string(), clip);
        let Some(image) = self.image(found, pod.origin, c, &name, list, image_default)? else {
            return Ok(None);
        };
        let security = t.get(c, "securityContext");
        let effective_bool = |key: &str| {
            security
                .and_then(|s| t.get(s, key))
                .and_then(|v| t.as_bool(v))
                .or_else(|| {
                    pod.security
                        .and_then(|s| t.get(s, key))
                        .and_then(|v| t.as_bool(v))
                })
        };
        let effective_int = |key: &str| {
            security
                .and_then(|s| t.get(s, key))
                .and_then(|v| t.as_i64(v))
                .or_else(|| {
                    pod.security
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

    /// The image of the container `c` (named `name`), trimmed, else `image_default`; `None`
    /// (with a note) when there is none to check: not a string, empty, an Argo parameter.
    fn image(
        &self,
        found: &mut Found<'_>,
        origin: &Origin,
        c: NodeId,
        name: &str,
        list: ContainerList,
        image_default: Option<&str>,
    ) -> Result<Option<String>, ManifestError> {
        let t = self.tree;
        let template_error = || ManifestError::TemplateImage {
            input: self.source.to_string(),
            at: Box::new(origin.clone()),
            list: list.as_str(),
            container: name.to_string(),
        };
        let image = match t.get(c, "image") {
            Some(n) => match t.scalar(n) {
                Some(s) => Some(s.to_string()),
                None if t.is_null(n) => None,
                None => {
                    // `image: {{ .Values.image }}` unquoted reads as a mapping.
                    if template_line(self.text).is_some() {
                        return Err(template_error());
                    }
                    found.note(format!(
                        "{origin} {} {name}: the image is not a string; not checked",
                        list.as_str()
                    ));
                    return Ok(None);
                }
            },
            None => None,
        };
        let Some(image) = image.or_else(|| image_default.map(str::to_string)) else {
            found.note(format!(
                "{origin} {} {name}: no image; not checked",
                list.as_str()
            ));
            return Ok(None);
        };
        if image.trim().is_empty() {
            found.note(format!(
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
                found.parameter_image();
                found.note(format!(
                    "{origin} {} {name}: the image is an Argo parameter, known only at run time; not checked",
                    list.as_str()
                ));
                return Ok(None);
            }
            return Err(template_error());
        }
        Ok(Some(image))
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
