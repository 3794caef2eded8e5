//! The JSON patch (RFC 6902) from the object the API server sent to the one `inject` wrote.
//!
//! Written here rather than taken from a crate: `inject` only adds keys, adds list items
//! (first in `initContainers`, last in `volumes`) and replaces scalars, so a walk of the two
//! values that keeps the common start and end of each list is all it needs (some 60 lines; the
//! `json-patch` crate would bring its own pointer and error types for the same result). The
//! patch names no list item that `inject` did not touch, so that it applies to the object as
//! sent, after any other webhook.

use crate::inject::push_token;
use serde_json::{Value, json};

/// The operations that turn `before` into `after`.
pub(crate) fn diff(before: &Value, after: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    walk(&mut String::new(), before, after, &mut ops);
    ops
}

fn walk(path: &mut String, before: &Value, after: &Value, ops: &mut Vec<Value>) {
    if before == after {
        return;
    }
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                let len = push_token(path, key);
                match new.get(key) {
                    Some(next) => walk(path, value, next, ops),
                    None => ops.push(json!({"op": "remove", "path": path})),
                }
                path.truncate(len);
            }
            for (key, value) in new {
                if !old.contains_key(key) {
                    let len = push_token(path, key);
                    ops.push(json!({"op": "add", "path": path, "value": value}));
                    path.truncate(len);
                }
            }
        }
        (Value::Array(old), Value::Array(new)) => list(path, old, new, ops),
        _ => ops.push(json!({"op": "replace", "path": path, "value": after})),
    }
}

/// A list: the items both have at the start and at the end are kept, those between are
/// edited in place, then the rest removed or added, at indices valid at that step.
fn list(path: &mut String, old: &[Value], new: &[Value], ops: &mut Vec<Value>) {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let room = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];
    let paired = old_mid.len().min(new_mid.len());
    for i in 0..paired {
        let len = push_token(path, &(prefix + i).to_string());
        walk(path, &old_mid[i], &new_mid[i], ops);
        path.truncate(len);
    }
    let at = prefix + paired;
    for _ in paired..old_mid.len() {
        let len = push_token(path, &at.to_string());
        ops.push(json!({"op": "remove", "path": path}));
        path.truncate(len);
    }
    for (j, value) in new_mid[paired..].iter().enumerate() {
        let len = push_token(path, &(at + j).to_string());
        ops.push(json!({"op": "add", "path": path, "value": value}));
        path.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_put_first_is_one_add_at_index_zero() {
        let before = json!({"spec": {"initContainers": [{"name": "a"}], "containers": [1]}});
        let after = json!({"spec": {"initContainers": [{"name": "pullcheck"}, {"name": "a"}],
            "containers": [1], "volumes": [{"name": "v"}]}});
        assert_eq!(
            diff(&before, &after),
            vec![
                json!({"op": "add", "path": "/spec/initContainers/0", "value": {"name": "pullcheck"}}),
                json!({"op": "add", "path": "/spec/volumes", "value": [{"name": "v"}]}),
            ]
        );
    }

    #[test]
    fn items_edited_removed_and_keys_escaped() {
        let before = json!({"a/b~": [1, 2, 3, 4], "x": 1, "gone": true});
        let after = json!({"a/b~": [1, 9, 4], "x": "1"});
        assert_eq!(
            diff(&before, &after),
            vec![
                json!({"op": "replace", "path": "/a~1b~0/1", "value": 9}),
                json!({"op": "remove", "path": "/a~1b~0/2"}),
                json!({"op": "remove", "path": "/gone"}),
                json!({"op": "replace", "path": "/x", "value": "1"}),
            ]
        );
        assert!(diff(&before, &before).is_empty());
    }
}
