//! The inject core's second writer, the webhook's: the edits made to the object itself, from
//! which its JSON patch is taken. No text is written or read on the way: the object the API
//! server sent is read into a tree ([`manifests::read_object`]), the core plans on that tree
//! ([`super::plan`], as for `pullcheck inject`), and each edit names what it changes by JSON
//! pointer (RFC 6901) into the object as sent. Rule mode ([`rule_object`], the webhook's
//! `--mode watch`) writes the Job rule alone through the same writer.

use super::job::{self, Kept};
use super::rule::add_policy;
use super::{Context, InjectError, ValidOptions, closing_warnings, plan};
use crate::manifests::splice::{Refusal, Writer, Y};
use crate::manifests::tree::{Kind, NodeId, Tree};
use crate::manifests::{self};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One edit of the object, by JSON pointer into the object as sent.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// A key added to the mapping at `map`.
    Insert {
        map: String,
        key: String,
        value: Value,
    },
    /// The value at `at` replaced (a null filled in).
    Put { at: String, value: Value },
    /// Items put at the front of the list at `list`.
    Prepend { list: String, items: Vec<Value> },
    /// Item `index` (as sent) of the list at `list` removed.
    Remove { list: String, index: usize },
    /// Item `index` (as sent) of the list at `list` replaced.
    Replace {
        list: String,
        index: usize,
        value: Value,
    },
}

impl Change {
    /// The JSON patch operation (RFC 6902) of a change to a key: `add` for a key added,
    /// `replace` for a value set. `None` for a change to a list, whose indices as sent move
    /// once another item of it is added or removed (init mode's patch is a diff instead).
    fn key_op(&self) -> Option<Value> {
        match self {
            Change::Insert { map, key, value } => {
                let mut path = map.clone();
                push_token(&mut path, key);
                Some(json!({"op": "add", "path": path, "value": value}))
            }
            Change::Put { at, value } => Some(json!({"op": "replace", "path": at, "value": value})),
            Change::Prepend { .. } | Change::Remove { .. } | Change::Replace { .. } => None,
        }
    }
}

/// Writes the core's edits as [`Change`]s, each naming its node by JSON pointer. Only where
/// each node hangs is kept (its parent, and a key or an index): the pointers are
/// spelled out for the few nodes an edit names, not for every node of every object admitted.
pub(crate) struct ObjectWriter<'a> {
    tree: &'a Tree,
    /// Each node's place in its parent (a mapping key's own node, and the root, have none).
    places: Vec<Place>,
}

/// Where a node hangs.
#[derive(Clone, Copy)]
enum Place {
    /// The root, or a mapping key's own node.
    Top,
    /// The value of the key node `key` of the mapping `parent`.
    Key { parent: NodeId, key: NodeId },
    /// Item `index` of the sequence `parent`.
    Item { parent: NodeId, index: usize },
}

impl<'a> ObjectWriter<'a> {
    /// The writer of the edits of `tree` (one document, as [`manifests::read_object`] builds).
    pub(crate) fn new(tree: &'a Tree) -> ObjectWriter<'a> {
        let mut places = vec![Place::Top; tree.nodes.len()];
        for (parent, node) in tree.nodes.iter().enumerate() {
            match &node.kind {
                Kind::Map { entries, .. } => {
                    for &(key, value) in entries {
                        places[value] = Place::Key { parent, key };
                    }
                }
                Kind::Seq { items, .. } => {
                    for (index, &item) in items.iter().enumerate() {
                        places[item] = Place::Item { parent, index };
                    }
                }
                _ => {}
            }
        }
        ObjectWriter { tree, places }
    }

    /// The JSON pointer of `node`: its places from the root down, one token each.
    fn pointer(&self, node: NodeId) -> String {
        let mut tokens = Vec::new();
        let mut at = node;
        // A tree from a JSON value has no aliases, so each node has one parent and the walk up
        // ends at the root; the bound is the node count all the same.
        while tokens.len() < self.places.len() {
            match self.places.get(at) {
                Some(Place::Key { parent, key }) => {
                    tokens.push(self.tree.scalar(*key).unwrap_or_default().to_string());
                    at = *parent;
                }
                Some(Place::Item { parent, index }) => {
                    tokens.push(index.to_string());
                    at = *parent;
                }
                Some(Place::Top) | None => break,
            }
        }
        let mut pointer = String::new();
        for token in tokens.iter().rev() {
            push_token(&mut pointer, token);
        }
        pointer
    }

    fn list(&self, seq: NodeId) -> Result<String, Refusal> {
        match self.tree.nodes[seq].kind {
            Kind::Seq { .. } => Ok(self.pointer(seq)),
            _ => Err("not a sequence"),
        }
    }
}

/// Appends one JSON pointer token to `path` (RFC 6901: `~` and `/` escaped); returns the
/// length before, to take it off again. The one spelling of a token, for the object writer's
/// pointers and the webhook's patch alike.
pub(crate) fn push_token(path: &mut String, token: &str) -> usize {
    let len = path.len();
    path.push('/');
    path.push_str(&token.replace('~', "~0").replace('/', "~1"));
    len
}

impl Writer for ObjectWriter<'_> {
    type Edit = Change;

    fn insert_key(
        &self,
        map: NodeId,
        _before: &[&str],
        key: &str,
        value: &Y,
    ) -> Result<Change, Refusal> {
        if !self.tree.is_map(map) {
            return Err("not a mapping");
        }
        Ok(Change::Insert {
            map: self.pointer(map),
            key: key.to_string(),
            value: value.to_json(),
        })
    }

    fn set_null(&self, _key: NodeId, value_node: NodeId, value: &Y) -> Result<Change, Refusal> {
        Ok(Change::Put {
            at: self.pointer(value_node),
            value: value.to_json(),
        })
    }

    fn prepend(&self, seq: NodeId, items: &[Y]) -> Result<Change, Refusal> {
        Ok(Change::Prepend {
            list: self.list(seq)?,
            items: items.iter().map(Y::to_json).collect(),
        })
    }

    fn remove_item(&self, seq: NodeId, index: usize) -> Result<Change, Refusal> {
        if index >= self.tree.items(seq).len() {
            return Err("no such item");
        }
        Ok(Change::Remove {
            list: self.list(seq)?,
            index,
        })
    }

    fn replace_item(&self, seq: NodeId, index: usize, item: &Y) -> Result<Change, Refusal> {
        if index >= self.tree.items(seq).len() {
            return Err("no such item");
        }
        Ok(Change::Replace {
            list: self.list(seq)?,
            index,
            value: item.to_json(),
        })
    }
}

/// What one list becomes: its items as sent, some replaced or removed, after the prepended.
#[derive(Default)]
struct ListChanges {
    front: Vec<Value>,
    removed: Vec<usize>,
    replaced: BTreeMap<usize, Value>,
}

/// The object with `changes` made. Every pointer is into the object as sent, so the keys are
/// set first (no list has moved yet), then each list is rebuilt once, the deepest first (a
/// list inside an item of another is done before that item may move).
fn apply(object: &Value, changes: Vec<Change>) -> Result<Value, InjectError> {
    let missing =
        |at: &str| InjectError(format!("the edit of {at:?} names no place in the object"));
    let mut after = object.clone();
    let mut lists: BTreeMap<String, ListChanges> = BTreeMap::new();
    for change in changes {
        match change {
            Change::Insert { map, key, value } => {
                let target = after
                    .pointer_mut(&map)
                    .and_then(Value::as_object_mut)
                    .ok_or_else(|| missing(&map))?;
                target.insert(key, value);
            }
            Change::Put { at, value } => {
                *after.pointer_mut(&at).ok_or_else(|| missing(&at))? = value;
            }
            Change::Prepend { list, mut items } => {
                lists.entry(list).or_default().front.append(&mut items);
            }
            Change::Remove { list, index } => lists.entry(list).or_default().removed.push(index),
            Change::Replace { list, index, value } => {
                lists.entry(list).or_default().replaced.insert(index, value);
            }
        }
    }
    let mut order: Vec<(String, ListChanges)> = lists.into_iter().collect();
    order.sort_by_key(|(at, _)| std::cmp::Reverse(at.matches('/').count()));
    for (at, mut edits) in order {
        let list = after
            .pointer_mut(&at)
            .and_then(Value::as_array_mut)
            .ok_or_else(|| missing(&at))?;
        let mut rebuilt = std::mem::take(&mut edits.front);
        for (i, item) in std::mem::take(list).into_iter().enumerate() {
            if edits.removed.contains(&i) {
                continue;
            }
            rebuilt.push(edits.replaced.remove(&i).unwrap_or(item));
        }
        *list = rebuilt;
    }
    Ok(after)
}

/// What the core made of one object at its admission.
#[derive(Debug)]
pub(crate) struct ObjectInjected {
    /// The object with the edits made (the object as sent when nothing changed).
    pub(crate) after: Value,
    /// The same warnings `pullcheck inject` gives of the object written as JSON.
    pub(crate) warnings: Vec<String>,
}

/// [`super::inject`] of one object at its admission (`pullcheck webhook`), `source` naming it
/// in warnings, whose controller is of kind `owner` (a Pod's `ownerReferences` entry with
/// `controller: true`: that decides what its restart-policy warning can advise, where a
/// manifest says it by its own kind).
///
/// # Errors
///
/// [`InjectError`] when its pod spec cannot be read (as `inject` would refuse the object as a
/// file).
pub(crate) fn inject_object(
    object: &Value,
    source: &str,
    valid: &ValidOptions,
    owner: Option<&str>,
) -> Result<ObjectInjected, InjectError> {
    let found = manifests::read_object(object, source).map_err(|e| InjectError(e.to_string()))?;
    let writer = ObjectWriter::new(&found.tree);
    let mut warnings = found.notes.clone();
    let context = Context {
        source,
        valid,
        owner,
    };
    let planned = plan(&writer, &context, &found.tree, &found);
    warnings.extend(planned.warnings);
    closing_warnings(source, found.spots.len(), valid, &mut warnings);
    Ok(ObjectInjected {
        after: apply(object, planned.edits)?,
        warnings,
    })
}

/// What rule mode made of one Job or CronJob at its admission.
#[derive(Debug, PartialEq)]
pub(crate) enum RuleWritten {
    /// The rule is added by these JSON patch operations, in the order the core wrote them;
    /// `replaced`: the `podReplacementPolicy` set to `Failed`, as it was.
    Added {
        ops: Vec<Value>,
        replaced: Option<Value>,
    },
    /// Its policy is kept as written.
    Kept(Kept),
}

/// Rule mode of the core at admission (`pullcheck webhook --mode watch`): the rule `FailJob`
/// on the pod condition `condition_type` for the Job spec at the keys `spec_at` of `object`
/// (a Job's `spec`, a CronJob's `spec.jobTemplate.spec`), and no init container. The Job rule
/// is written as init mode writes it ([`super::rule`], through [`ObjectWriter`]); its changes
/// are to keys only, so they are the JSON patch as they are.
///
/// # Errors
///
/// [`InjectError`] when there is no Job spec at `spec_at` or it cannot be edited.
pub(crate) fn rule_object(
    object: &Value,
    spec_at: &[&str],
    condition_type: &str,
) -> Result<RuleWritten, InjectError> {
    let no_spec = || InjectError(format!("no Job spec at {}", spec_at.join(".")));
    let tree = Tree::from_json(object).ok_or_else(no_spec)?;
    let mut job = tree.docs.first().ok_or_else(no_spec)?.root;
    for key in spec_at {
        job = tree.get(job, key).ok_or_else(no_spec)?;
    }
    if !tree.is_map(job) {
        return Err(no_spec());
    }
    // Decided on the object as sent (the tree holds the same values): no JSON made again.
    let spec = spec_at.iter().fold(object, |v, key| &v[*key]);
    if let Some(why) = job::kept(spec, condition_type) {
        return Ok(RuleWritten::Kept(why));
    }
    let writer = ObjectWriter::new(&tree);
    let refused = |why: &str| InjectError(format!("the Job rule cannot be written ({why})"));
    let rules = vec![job::condition_rule(condition_type)];
    let added = add_policy(&writer, &tree, job, rules).map_err(refused)?;
    let ops = added
        .edits
        .iter()
        .map(Change::key_op)
        .collect::<Option<_>>();
    Ok(RuleWritten::Added {
        ops: ops.ok_or_else(|| refused("a list would move"))?,
        replaced: added.replaced.and_then(|node| tree.to_json(node)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_are_rebuilt_deepest_first_with_indices_as_sent() {
        let object = json!({"a": [{"b": [1, 2, 3]}, {"c": null}], "m": {}});
        let changes = vec![
            Change::Remove {
                list: "/a".into(),
                index: 0,
            },
            Change::Prepend {
                list: "/a".into(),
                items: vec![json!("new")],
            },
            Change::Replace {
                list: "/a/0/b".into(),
                index: 2,
                value: json!(9),
            },
            Change::Remove {
                list: "/a/0/b".into(),
                index: 0,
            },
            Change::Put {
                at: "/a/1/c".into(),
                value: json!([]),
            },
            Change::Insert {
                map: "/m".into(),
                key: "k/~".into(),
                value: json!(true),
            },
        ];
        assert_eq!(
            apply(&object, changes).unwrap(),
            json!({"a": ["new", {"c": []}], "m": {"k/~": true}})
        );
        let bad = vec![Change::Put {
            at: "/nowhere/0".into(),
            value: json!(1),
        }];
        assert!(apply(&object, bad).is_err());
    }

    #[test]
    fn pointers_escape_their_keys() {
        let tree = Tree::from_json(&json!({"a/b": {"c~d": [0, {"e": 1}]}})).unwrap();
        let writer = ObjectWriter::new(&tree);
        let mut all: Vec<String> = (0..tree.nodes.len()).map(|n| writer.pointer(n)).collect();
        all.retain(|p| !p.is_empty());
        all.sort_unstable();
        assert_eq!(
            all,
            [
                "/a~1b",
                "/a~1b/c~0d",
                "/a~1b/c~0d/0",
                "/a~1b/c~0d/1",
                "/a~1b/c~0d/1/e"
            ]
        );
    }

    #[test]
    fn rule_mode_writes_the_job_rule_alone_as_key_operations() {
        let job = json!({"spec": {
            "podFailurePolicy": null,
            "podReplacementPolicy": 3,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}},
        }});
        let written = rule_object(&job, &["spec"], "ConfigIssue").unwrap();
        let rule = json!({"rules": [{"action": "FailJob",
            "onPodConditions": [{"type": "ConfigIssue", "status": "True"}]}]});
        assert_eq!(
            written,
            RuleWritten::Added {
                // A null policy is filled in (`replace`); a value that is not Failed replaced.
                ops: vec![
                    json!({"op": "replace", "path": "/spec/podFailurePolicy", "value": rule}),
                    json!({"op": "replace", "path": "/spec/podReplacementPolicy", "value": "Failed"}),
                ],
                replaced: Some(json!(3)),
            }
        );
        let mut own = job.clone();
        own["spec"]["podFailurePolicy"] = json!({"rules": []});
        assert_eq!(
            rule_object(&own, &["spec"], "ConfigIssue").unwrap(),
            RuleWritten::Kept(Kept::OwnPolicy)
        );
        assert!(rule_object(&job, &["spec", "jobTemplate", "spec"], "ConfigIssue").is_err());
    }
}
