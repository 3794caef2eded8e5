//! What `pullcheck inject` adds to a pod so that the init container sees the node's registry
//! configuration: volumes, read-only mounts and `check` arguments, as plain JSON values for the
//! manifest editor to splice in.
//!
//! ConfigMaps are mounted as `optional` volumes, so that a missing ConfigMap never holds the
//! pod (pullcheck then reads an empty directory and asks the registries directly, as before).
//! A node's own folder is a `DirectoryOrCreate` hostPath for the same reason; on a CRI-O node
//! (`--registries-from-node`) its `registries.conf`, `registries.conf.d/` and `certs.d/` may
//! each be absent, which containers/image reads as no configuration, and so does the check.

use serde_json::{Value, json};

/// Where the hosts directory is mounted in the init container.
pub(crate) const HOSTS_MOUNT: &str = "/etc/pullcheck/hosts.d";
/// Where the node's own hosts directory is mounted.
pub(crate) const NODE_HOSTS_MOUNT: &str = "/etc/pullcheck/node-hosts.d";
/// Where registries.conf (and its drop-ins) is mounted.
pub(crate) const REGISTRIES_MOUNT: &str = "/etc/pullcheck/registries";
/// containerd's usual `config_path`.
pub(crate) const DEFAULT_NODE_HOSTS: &str = "/etc/containerd/certs.d";
/// Where the node's own containers folder (CRI-O's `/etc/containers`) is mounted.
pub(crate) const NODE_CONTAINERS_MOUNT: &str = "/etc/pullcheck/node-containers";
/// The folder containers/image reads on a node: registries.conf, registries.conf.d, certs.d.
pub(crate) const DEFAULT_NODE_CONTAINERS: &str = "/etc/containers";

/// The route choices of `inject`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteMounts {
    /// `--hosts-configmap NAME`: a ConfigMap in the flat layout (`docker.io.toml`,
    /// `registry.corp_5000.toml`).
    pub(crate) hosts_configmap: Option<String>,
    /// `--registries-configmap NAME`: a ConfigMap with the key `registries.conf` (and drop-ins).
    pub(crate) registries_configmap: Option<String>,
    /// `--hosts-from-node [PATH]`: the node's own hosts directory, by `hostPath`.
    pub(crate) hosts_from_node: Option<String>,
    /// `--registries-from-node [PATH]`: the node's own containers folder (registries.conf,
    /// its drop-ins, certs.d), by `hostPath`.
    pub(crate) registries_from_node: Option<String>,
}

/// What to add to the pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Additions {
    /// Pod volumes.
    pub(crate) volumes: Vec<Value>,
    /// The init container's `volumeMounts`.
    pub(crate) mounts: Vec<Value>,
    /// Arguments for `pullcheck check`.
    pub(crate) args: Vec<String>,
    /// Notes for stderr.
    pub(crate) warnings: Vec<String>,
}

impl Additions {
    /// A pod volume `name` of `source` (its `configMap` or `hostPath` member), mounted
    /// read-only at `mount_path` in the init container.
    fn mount(&mut self, name: &str, source: (&str, Value), mount_path: &str) {
        let (kind, value) = source;
        let mut volume = json!({ "name": name });
        volume[kind] = value;
        self.volumes.push(volume);
        self.mounts.push(json!({
            "name": name,
            "mountPath": mount_path,
            "readOnly": true,
        }));
    }

    /// A ConfigMap mounted read-only; `optional`, so that a missing one never holds the pod.
    fn mount_config_map(&mut self, name: &str, config_map: &str, mount_path: &str) {
        let source = json!({"name": config_map, "optional": true});
        self.mount(name, ("configMap", source), mount_path);
    }

    /// A node's folder (`path`, or `default` when empty) mounted read-only: a
    /// `DirectoryOrCreate` hostPath, so that a node without it still starts the pod. The path
    /// used, for the warning every hostPath gets.
    fn mount_from_node<'a>(
        &mut self,
        name: &str,
        path: &'a str,
        default: &'a str,
        mount_path: &str,
    ) -> &'a str {
        let path = if path.is_empty() { default } else { path };
        let source = json!({"path": path, "type": "DirectoryOrCreate"});
        self.mount(name, ("hostPath", source), mount_path);
        path
    }
}

/// The volumes, mounts and arguments for `choices`.
pub(crate) fn additions(choices: &RouteMounts) -> Additions {
    let mut out = Additions::default();
    if let Some(name) = &choices.hosts_configmap {
        out.mount_config_map("pullcheck-hosts", name, HOSTS_MOUNT);
        out.args
            .extend(["--hosts-dir".to_string(), HOSTS_MOUNT.to_string()]);
    }
    if let Some(path) = &choices.hosts_from_node {
        let path = out.mount_from_node(
            "pullcheck-node-hosts",
            path,
            DEFAULT_NODE_HOSTS,
            NODE_HOSTS_MOUNT,
        );
        // After a ConfigMap's directory: the first directory with an entry wins.
        if out.args.is_empty() {
            out.args
                .extend(["--hosts-dir".to_string(), NODE_HOSTS_MOUNT.to_string()]);
        } else if let Some(last) = out.args.last_mut() {
            last.push(':');
            last.push_str(NODE_HOSTS_MOUNT);
        }
        out.warnings.push(format!(
            "--hosts-from-node mounts {path} with a hostPath volume, which the `baseline` and `restricted` Pod Security levels refuse; use --hosts-configmap in such namespaces"
        ));
    }
    if let Some(name) = &choices.registries_configmap {
        out.mount_config_map("pullcheck-registries", name, REGISTRIES_MOUNT);
        out.args.extend([
            "--registries-conf".to_string(),
            REGISTRIES_MOUNT.to_string(),
        ]);
    }
    if let Some(path) = &choices.registries_from_node {
        let path = out.mount_from_node(
            "pullcheck-node-registries",
            path,
            DEFAULT_NODE_CONTAINERS,
            NODE_CONTAINERS_MOUNT,
        );
        // The file and the drop-in folder named apart, so that the folder's other files
        // (storage.conf, policy.json) are never read as drop-ins, and either may be absent.
        out.args.extend([
            "--registries-conf".to_string(),
            format!("{NODE_CONTAINERS_MOUNT}/registries.conf"),
            "--registries-conf-dir".to_string(),
            format!("{NODE_CONTAINERS_MOUNT}/registries.conf.d"),
            "--certs-dir".to_string(),
            format!("{NODE_CONTAINERS_MOUNT}/certs.d"),
        ]);
        out.warnings.push(format!(
            "--registries-from-node mounts {path} with a hostPath volume, which the `baseline` and `restricted` Pod Security levels refuse; use --registries-configmap in such namespaces"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_chosen_adds_nothing() {
        assert_eq!(additions(&RouteMounts::default()), Additions::default());
    }

    #[test]
    fn configmaps_are_optional_and_read_only() {
        let a = additions(&RouteMounts {
            hosts_configmap: Some("node-hosts".into()),
            registries_configmap: Some("node-registries".into()),
            ..Default::default()
        });
        assert_eq!(a.volumes[0]["configMap"]["optional"], true);
        assert_eq!(a.volumes[1]["configMap"]["name"], "node-registries");
        assert!(a.mounts.iter().all(|m| m["readOnly"] == true));
        assert_eq!(
            a.args,
            [
                "--hosts-dir",
                HOSTS_MOUNT,
                "--registries-conf",
                REGISTRIES_MOUNT
            ]
        );
        assert!(a.warnings.is_empty());
    }

    #[test]
    fn node_directory_by_host_path_warns() {
        let a = additions(&RouteMounts {
            hosts_from_node: Some(String::new()),
            ..Default::default()
        });
        assert_eq!(a.volumes[0]["hostPath"]["path"], DEFAULT_NODE_HOSTS);
        assert_eq!(a.args, ["--hosts-dir", NODE_HOSTS_MOUNT]);
        assert!(a.warnings[0].contains("baseline"));
        let both = additions(&RouteMounts {
            hosts_configmap: Some("h".into()),
            hosts_from_node: Some("/etc/x".into()),
            ..Default::default()
        });
        assert_eq!(
            both.args,
            ["--hosts-dir", &format!("{HOSTS_MOUNT}:{NODE_HOSTS_MOUNT}")]
        );
    }

    #[test]
    fn node_containers_folder_by_host_path_warns() {
        let a = additions(&RouteMounts {
            registries_from_node: Some(String::new()),
            ..Default::default()
        });
        assert_eq!(a.volumes.len(), 1);
        assert_eq!(a.volumes[0]["name"], "pullcheck-node-registries");
        assert_eq!(a.volumes[0]["hostPath"]["path"], DEFAULT_NODE_CONTAINERS);
        assert_eq!(a.volumes[0]["hostPath"]["type"], "DirectoryOrCreate");
        assert_eq!(a.mounts[0]["mountPath"], NODE_CONTAINERS_MOUNT);
        assert_eq!(a.mounts[0]["readOnly"], true);
        assert_eq!(
            a.args,
            [
                "--registries-conf",
                "/etc/pullcheck/node-containers/registries.conf",
                "--registries-conf-dir",
                "/etc/pullcheck/node-containers/registries.conf.d",
                "--certs-dir",
                "/etc/pullcheck/node-containers/certs.d",
            ]
        );
        assert_eq!(a.warnings.len(), 1);
        assert!(
            a.warnings[0].contains("/etc/containers") && a.warnings[0].contains("baseline"),
            "{:?}",
            a.warnings
        );
        let other = additions(&RouteMounts {
            registries_from_node: Some("/etc/crio/containers".into()),
            ..Default::default()
        });
        assert_eq!(other.volumes[0]["hostPath"]["path"], "/etc/crio/containers");
    }
}
