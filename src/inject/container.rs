//! What `inject` adds to a pod spec: the init container (its arguments, environment, mounts,
//! security context and resources), the volumes it mounts, and their names.

use super::resources::{Container, Requirements, Role};
use super::{
    CA_VOLUME, CONTAINER_NAME, ROUTE_VOLUMES, RUN_AS_USER, SERVICE_ACCOUNT_VOLUME, VOLUME_PREFIX,
};
use crate::credentials::plugin::TOKEN_VOLUME;
use crate::manifests::names::is_dns_label;
use crate::manifests::splice::Y;
use crate::manifests::tree::{NodeId, Tree};
use std::collections::HashSet;

/// The init container `inject` adds: `env` its environment (`PULLCHECK_IMAGES` first, see
/// [`env_value`]), `extra_args` images passed as arguments (those with whitespace), `mounts`
/// the volume mounts, and `resources` its requests and limits ([`choose`](super::resources::choose); none:
/// no `resources` key).
pub fn init_container(
    image: &str,
    check_args: &[String],
    env: &[Y],
    extra_args: &[String],
    mounts: &[Y],
    resources: &Requirements,
) -> Y {
    let mut args = vec![Y::s("check")];
    args.extend(check_args.iter().map(|a| Y::s(a)));
    // Images are data: one that starts with '-' goes after a `--` (the user's, or one added),
    // so that `check` never reads it as an option (`--allow-unauthenticated=*,x y` would
    // otherwise turn the check off).
    let ended = check_args.iter().any(|a| a == "--");
    let (dashed, plain): (Vec<&String>, Vec<&String>) = extra_args
        .iter()
        .partition(|a| !ended && a.starts_with('-'));
    args.extend(plain.into_iter().map(|a| Y::s(a)));
    if !dashed.is_empty() {
        args.push(Y::s("--"));
        args.extend(dashed.into_iter().map(|a| Y::s(a)));
    }
    let flow = |y: Y| Y::Flow(Box::new(y));
    let mut c = vec![
        ("name".to_string(), Y::s(CONTAINER_NAME)),
        ("image".to_string(), Y::s(image)),
        ("args".to_string(), flow(Y::Seq(args))),
        ("env".to_string(), Y::Seq(env.to_vec())),
        (
            "securityContext".to_string(),
            Y::map([
                ("allowPrivilegeEscalation", Y::Bool(false)),
                (
                    "capabilities",
                    Y::map([("drop", flow(Y::Seq(vec![Y::s("ALL")])))]),
                ),
                ("readOnlyRootFilesystem", Y::Bool(true)),
                ("runAsNonRoot", Y::Bool(true)),
                ("runAsUser", Y::Int(RUN_AS_USER as i64)),
                ("seccompProfile", Y::map([("type", Y::s("RuntimeDefault"))])),
            ]),
        ),
        (
            "terminationMessagePolicy".to_string(),
            Y::s("FallbackToLogsOnError"),
        ),
    ];
    let written = resources.written();
    if !written.is_empty() {
        let lists = written
            .into_iter()
            .map(|(key, list)| {
                let list = list.into_iter().map(|(k, v)| (k, Y::s(&v))).collect();
                (key.to_string(), flow(Y::Map(list)))
            })
            .collect();
        // After `env`, where it always was.
        c.insert(4, ("resources".to_string(), Y::Map(lists)));
    }
    if !mounts.is_empty() {
        c.push(("volumeMounts".to_string(), Y::Seq(mounts.to_vec())));
    }
    Y::Map(c)
}

/// The check arguments with those of the route choices after the user's flags (before a `--`
/// that ends them).
pub(super) fn with_route_args(check_args: &[String], route_args: &[String]) -> Vec<String> {
    let end = check_args
        .iter()
        .position(|a| a == "--")
        .unwrap_or(check_args.len());
    let mut out = check_args[..end].to_vec();
    out.extend(route_args.iter().cloned());
    out.extend(check_args[end..].iter().cloned());
    out
}

/// One `env` entry with a plain value.
pub fn env_value(name: &str, value: &str) -> Y {
    Y::map([("name", Y::s(name)), ("value", Y::s(value))])
}

/// A serde JSON value (what [`crate::route::inject`] returns) as a value to splice in, `name`
/// first in each mapping as Kubernetes writes it (a JSON object's keys come sorted); `null` and
/// floats do not occur there and become strings.
pub(super) fn from_json(v: &serde_json::Value) -> Y {
    use serde_json::Value;
    match v {
        Value::String(s) => Y::s(s),
        Value::Bool(b) => Y::Bool(*b),
        Value::Number(n) => n.as_i64().map_or_else(|| Y::s(&n.to_string()), Y::Int),
        Value::Array(items) => Y::Seq(items.iter().map(from_json).collect()),
        Value::Object(entries) => {
            let mut entries: Vec<(String, Y)> = entries
                .iter()
                .map(|(k, v)| (k.clone(), from_json(v)))
                .collect();
            entries.sort_by_key(|(k, _)| k != "name");
            Y::Map(entries)
        }
        Value::Null => Y::s(""),
    }
}

/// Whether a volume named `name` whose source is `source` (`secret`, `configMap`, …) is one
/// `inject` adds.
pub(super) fn is_our_volume(name: &str, source: &str) -> bool {
    (name.starts_with(VOLUME_PREFIX) && source == "secret")
        || (name == CA_VOLUME && source == "configMap")
        || (name == SERVICE_ACCOUNT_VOLUME && source == "projected")
        || (name == TOKEN_VOLUME && source == "projected")
        || ROUTE_VOLUMES.contains(&(name, source))
}

/// Whether a volume mount name is one of the volumes `inject` adds (whatever its source).
pub(super) fn is_our_volume_name(name: &str) -> bool {
    name.starts_with(VOLUME_PREFIX)
        || name == CA_VOLUME
        || name == SERVICE_ACCOUNT_VOLUME
        || name == TOKEN_VOLUME
        || ROUTE_VOLUMES.iter().any(|(n, _)| *n == name)
}

/// The projected volume with a service-account token and the cluster's CA, as the kubelet
/// mounts for a pod that does not turn it off (the token's path `token`, the CA from the
/// `kube-root-ca.crt` ConfigMap every namespace has).
pub(super) fn service_account_volume() -> Y {
    Y::map([
        ("name", Y::s(SERVICE_ACCOUNT_VOLUME)),
        (
            "projected",
            Y::map([(
                "sources",
                Y::Seq(vec![
                    Y::map([(
                        "serviceAccountToken",
                        Y::Flow(Box::new(Y::map([("path", Y::s("token"))]))),
                    )]),
                    Y::map([(
                        "configMap",
                        Y::map([
                            ("name", Y::s("kube-root-ca.crt")),
                            (
                                "items",
                                Y::Flow(Box::new(Y::Seq(vec![Y::map([
                                    ("key", Y::s("ca.crt")),
                                    ("path", Y::s("ca.crt")),
                                ])]))),
                            ),
                        ]),
                    )]),
                ]),
            )]),
        ),
    ])
}

/// The pod's own containers (pullcheck's left out) with their `resources`, as
/// [`choose`](super::resources::choose) reads them: those of the holder's `initContainers` are init
/// containers (sidecars with `restartPolicy: Always`), the others app containers.
pub(super) fn pod_containers(t: &Tree, holder: NodeId, containers: &[NodeId]) -> Vec<Container> {
    let inits: HashSet<NodeId> = t
        .get(holder, "initContainers")
        .map(|l| t.items(l).iter().map(|&n| t.resolve(n)).collect())
        .unwrap_or_default();
    containers
        .iter()
        .map(|&c| {
            let role = if !inits.contains(&t.resolve(c)) {
                Role::App
            } else if t.str_at(c, "restartPolicy") == Some("Always") {
                Role::Sidecar
            } else {
                Role::Init
            };
            let resources = t
                .get(c, "resources")
                .and_then(|r| t.to_json(r))
                .map(|v| Requirements::from_json(&v))
                .unwrap_or_default();
            Container { role, resources }
        })
        .collect()
}

/// The name of the volume for pull secret `secret`, a DNS label (at most 63 characters) not in
/// `taken`: `pullcheck-secret-<secret>` when that is one, else a shortened, sanitised name ending
/// in a hash of the secret's name (and of the attempt, on a clash).
pub fn volume_name(secret: &str, taken: &HashSet<String>) -> String {
    let plain = format!("{VOLUME_PREFIX}{secret}");
    if is_dns_label(&plain) && !taken.contains(&plain) {
        return plain;
    }
    let sanitised: String = secret
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    // 63 = prefix + body + '-' + 10 hex digits.
    let room = 63 - VOLUME_PREFIX.len() - 1 - 10;
    let body: String = sanitised.chars().take(room).collect();
    let body = body.trim_matches('-');
    let mut attempt: u64 = 0;
    loop {
        let key = if attempt == 0 {
            secret.to_string()
        } else {
            format!("{secret}#{attempt}")
        };
        let hash = format!("{:016x}", fnv1a64(key.as_bytes()));
        let name = if body.is_empty() {
            format!("{VOLUME_PREFIX}{}", &hash[..10])
        } else {
            format!("{VOLUME_PREFIX}{body}-{}", &hash[..10])
        };
        if !taken.contains(&name) {
            return name;
        }
        attempt += 1;
    }
}

pub(super) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_names_are_dns_labels_without_clashes() {
        let none = HashSet::new();
        assert_eq!(volume_name("regcred", &none), "pullcheck-secret-regcred");
        let dotted = volume_name("reg.example.com", &none);
        assert!(
            dotted.starts_with("pullcheck-secret-reg-example-com-"),
            "{dotted}"
        );
        assert!(is_dns_label(&dotted));
        let long = volume_name(&"a".repeat(63), &none);
        assert!(long.len() <= 63 && is_dns_label(&long), "{long}");
        let exactly = "b".repeat(63 - VOLUME_PREFIX.len());
        assert_eq!(
            volume_name(&exactly, &none),
            format!("{VOLUME_PREFIX}{exactly}")
        );
        let taken: HashSet<String> = ["pullcheck-secret-regcred".to_string()].into();
        let other = volume_name("regcred", &taken);
        assert!(other.starts_with("pullcheck-secret-regcred-") && is_dns_label(&other));
        let mut both = taken.clone();
        both.insert(other.clone());
        let third = volume_name("regcred", &both);
        assert!(third != other && is_dns_label(&third));
        // Deterministic.
        assert_eq!(volume_name("reg.example.com", &none), dotted);
    }
}
