//! What the reading of one input (or one document) has found so far: the pod specs, the
//! [`Spot`] where `inject` edits each one, the notes for the user, and the bookkeeping of the
//! walk (the generic search's budget, the Argo parameter images of the pod spec being read).
//! The kind readers fill it only through [`Found`]'s methods, so that what may change it is
//! all in this file; what they read from is the [`Reader`](super::reader::Reader).

use super::tree::{NodeId, Tree};
use super::{Format, Manifests, Origin, PodContainer, PodSpec};

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

/// What a spot's pod spec is, besides what is found in it.
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
    /// A real pod spec's shape: the init container and the volumes go into the pod spec
    /// itself, before its `containers`; no Job, no policy from an operator or a framework.
    pub(super) fn pod(spec: NodeId) -> SpotShape {
        SpotShape {
            holder: spec,
            before: &["containers"],
            volumes: spec,
            pod: Some(spec),
            job: None,
            operator_policy: None,
            default_policy: None,
        }
    }

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

/// What the kind readers have found: filled through its methods only.
pub(super) struct Found<'a> {
    /// The input's name, that each note starts with.
    source: &'a str,
    pod_specs: Vec<PodSpec>,
    /// One per pod spec, same order.
    spots: Vec<Spot>,
    notes: Vec<String>,
    /// Nodes the generic search may still visit (aliases can make a walk revisit nodes).
    budget: usize,
    /// Argo parameter images seen since the last pod spec was recorded.
    parameter_images: usize,
}

impl<'a> Found<'a> {
    /// Nothing found yet, after the `notes` already said of the input; the generic search may
    /// visit `budget` nodes.
    pub(super) fn new(source: &'a str, notes: Vec<String>, budget: usize) -> Found<'a> {
        Found {
            source,
            pod_specs: Vec::new(),
            spots: Vec::new(),
            notes,
            budget,
            parameter_images: 0,
        }
    }

    /// A note for the user, naming the input.
    pub(super) fn note(&mut self, message: String) {
        self.notes.push(format!("{}: {message}", self.source));
    }

    /// A container whose image is an Argo parameter, counted for the next pod spec recorded.
    pub(super) fn parameter_image(&mut self) {
        self.parameter_images += 1;
    }

    /// Records a pod spec and where `inject` edits it.
    pub(super) fn push(&mut self, origin: Origin, containers: Vec<PodContainer>, mut spot: Spot) {
        spot.spec = self.pod_specs.len();
        let windows = spot.windows;
        self.spots.push(spot);
        let parameter_images = std::mem::take(&mut self.parameter_images);
        self.pod_specs.push(PodSpec {
            origin,
            containers,
            parameter_images,
            windows,
        });
    }

    /// Takes one step of the generic search's budget; `false` when it is used up.
    pub(super) fn step(&mut self) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }

    /// The steps of the generic search's budget left.
    pub(super) fn budget(&self) -> usize {
        self.budget
    }

    /// The pod specs recorded so far.
    pub(super) fn pod_specs(&self) -> &[PodSpec] {
        &self.pod_specs
    }

    /// Everything found, as the reader's answer: in `format`, read into `tree`.
    pub(super) fn manifests(self, format: Format, tree: Tree) -> Manifests {
        Manifests {
            format,
            pod_specs: self.pod_specs,
            notes: self.notes,
            tree,
            spots: self.spots,
        }
    }
}
