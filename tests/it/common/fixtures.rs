//! The fixture manifests (`tests/fixtures/manifests`) as JSON objects, and the pod specs inside
//! them: what the webhook tests compare with `inject`, through the webhook alone
//! (tests/it/webhook.rs) and through the real API server (tests/cluster/webhook.rs).

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every object of the fixture manifests, as JSON (documents serde's YAML reader cannot take,
/// such as the YAML edge cases of the corpus, are left out: they hold no pod spec the API server
/// would send).
pub fn fixture_objects() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifests");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let mut objects = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut values = Vec::new();
        if name.ends_with(".json") {
            values.extend(
                serde_json::Deserializer::from_str(&text)
                    .into_iter::<Value>()
                    .map_while(Result::ok),
            );
        } else {
            for doc in serde_yaml_ng::Deserializer::from_str(&text) {
                use serde::Deserialize;
                let Ok(yaml) = serde_yaml_ng::Value::deserialize(doc) else {
                    break;
                };
                if let Ok(value) = serde_json::to_value(yaml) {
                    values.push(value);
                }
            }
        }
        for value in values {
            match value["items"].as_array() {
                Some(items) if value["kind"] == "List" => {
                    objects.extend(items.iter().map(|i| (name.clone(), i.clone())))
                }
                _ => objects.push((name.clone(), value)),
            }
        }
    }
    objects
}

/// Every pod spec inside `value` (an object with a list of containers).
pub fn pod_specs(value: &Value, found: &mut Vec<Value>) {
    match value {
        Value::Object(m) => {
            let is_spec = m
                .get("containers")
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty() && c.iter().all(|c| c.get("name").is_some()));
            if is_spec {
                found.push(value.clone());
            }
            m.values().for_each(|v| pod_specs(v, found));
        }
        Value::Array(a) => a.iter().for_each(|v| pod_specs(v, found)),
        _ => {}
    }
}
