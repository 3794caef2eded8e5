//! The images the cluster's nodes hold, as their Node objects list them (`status.images`), for
//! `IfNotPresent` images: a registry's miss of one is proven only when no node holds it, and
//! only a complete list (fewer images than the kubelet's cap, none at its cap of names) can say
//! that a node does not. Read with the webhook's own service account (`list` on `nodes`: the
//! chart's ClusterRole), at most once per [`FRESH`], one read at a time; whatever goes wrong
//! (forbidden, no answer in time, too many nodes) leaves every `IfNotPresent` miss unproven.

use crate::cluster::door::Door;
use crate::node::{DEFAULT_MAX_IMAGES, NodeImages};
use crate::reference::Reference;
use kube::api::ListParams;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long one read of the nodes is used. The kubelet itself reports its images every 10 s
/// at most, so a list this old says little less than a fresh one.
const FRESH: Duration = Duration::from_secs(30);
/// The most nodes read: a larger cluster's lists are not read (its misses stay unproven).
const MAX_NODES: u32 = 1000;

/// The nodes' lists, read on demand.
pub(crate) struct Nodes {
    /// `None` outside a cluster: every `IfNotPresent` miss stays unproven.
    door: Option<Door>,
    last: tokio::sync::Mutex<Option<Read>>,
}

/// One read: when, and what (`None`: the lists could not be read).
type Read = (Instant, Option<Arc<Vec<NodeImages>>>);

impl Nodes {
    pub(crate) fn new(door: Option<Door>) -> Nodes {
        Nodes {
            door,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// Every node's list, read at most [`FRESH`] ago; `None` when they cannot be read.
    pub(crate) async fn lists(&self) -> Option<Arc<Vec<NodeImages>>> {
        let door = self.door.as_ref()?;
        let mut last = self.last.lock().await;
        if let Some((at, lists)) = last.as_ref()
            && at.elapsed() < FRESH
        {
            return lists.clone();
        }
        let lists = read(door).await.map(Arc::new);
        *last = Some((Instant::now(), lists.clone()));
        lists
    }
}

/// One read of every Node; `None` on any failure or past [`MAX_NODES`].
async fn read(door: &Door) -> Option<Vec<NodeImages>> {
    let list = door
        .nodes(&ListParams::default().limit(MAX_NODES))
        .await
        .ok()?;
    if list
        .metadata
        .continue_
        .as_deref()
        .is_some_and(|c| !c.is_empty())
    {
        return None;
    }
    list.items
        .iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let body = serde_json::to_vec(node).ok()?;
            NodeImages::read(&name, &body, Some(DEFAULT_MAX_IMAGES), None).ok()
        })
        .collect()
}

/// Whether the lists prove that no node holds `reference`: at least one node, every list
/// complete, none naming it (pure).
pub(crate) fn none_holds(lists: &[NodeImages], reference: &Reference) -> bool {
    !lists.is_empty() && lists.iter().all(|n| n.complete() && !n.has(reference))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, images: &[&str], padding: usize) -> NodeImages {
        let mut list: Vec<_> = images.iter().map(|i| json!({"names": [i]})).collect();
        for n in 0..padding {
            list.push(json!({"names": [format!("r.example/pad{n}:1")]}));
        }
        let body =
            serde_json::to_vec(&json!({"kind": "Node", "status": {"images": list}})).unwrap();
        NodeImages::read(name, &body, Some(DEFAULT_MAX_IMAGES), None).unwrap()
    }

    #[test]
    fn only_complete_lists_that_all_lack_it_prove_a_miss() {
        let app = Reference::parse("r.example/app:v1").unwrap();
        let a = node("a", &["r.example/other:1"], 0);
        let b = node("b", &["r.example/app:v1"], 0);
        let full = node("c", &[], DEFAULT_MAX_IMAGES);
        assert!(none_holds(std::slice::from_ref(&a), &app));
        assert!(!none_holds(&[a.clone(), b], &app), "a node holds it");
        assert!(!none_holds(&[a, full], &app), "a list at the kubelet's cap");
        assert!(!none_holds(&[], &app), "no node at all");
    }
}
