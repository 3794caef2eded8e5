//! The init container's requests and limits, decided from the pod's own containers and the
//! namespace's LimitRanges (no I/O), so that a pod the namespace admits without pullcheck is
//! admitted with it.
//!
//! # The rule
//!
//! Kubernetes counts a pod's requests and limits, per resource, as the larger of the sum of its
//! app containers (plus its sidecars) and its largest init container (plus the sidecars started
//! before it): `PodRequests` / `PodLimits` in
//! `staging/src/k8s.io/component-helpers/resource/helpers.go`, which the ResourceQuota evaluator
//! (`pkg/quota/v1/evaluator/core/pods.go`) and the scheduler use. The LimitRanger
//! (`plugin/pkg/admission/limitranger/admission.go`, `PodLimitFunc`) applies a `Container`
//! item's `min`, `max` and `maxLimitRequestRatio` to every container and init container, after
//! giving the ones that set nothing its `default` and `defaultRequest`; its `Pod` items take
//! max(sum of the app containers, each init container), where the sum of a resource that one
//! app container lacks is absent. The init container comes first, before any sidecar, so it
//! adds nothing to a pod whose value it does not exceed in either count: its ceiling is
//! max(the app containers' sum, when each of them has the resource; the largest other init
//! container), which is at most what both counts give without it.
//!
//! Per resource, pullcheck's container then gets:
//!
//! - nothing, when no other container asks for the resource (a limit alone would become a
//!   request of the same size, `SetDefaults_Pod`), or, with the LimitRanges unknown, when one
//!   of them has nothing (so no LimitRange item and no ResourceQuota needs it there);
//! - with the LimitRanges known, for CPU and memory: its own small values (requests 10m/16Mi,
//!   limits 200m/32Mi; requests equal to the limits in a Guaranteed pod), lowered to the
//!   ceiling and the LimitRange's `max`, raised to its `min`, and the request raised (or the
//!   limit lowered) to meet `maxLimitRequestRatio`; other resources a LimitRange names, and
//!   CPU and memory when those values are not admissible, as below;
//! - otherwise the request and limit of one of the pod's own containers, which the namespace
//!   admits (each container passes the same `Container` items), within the ceiling: the pod
//!   reserves that much anyway, and an init container runs before the app containers start.
//!
//! A memory limit under [`MEMORY_FLOOR`] (the pod's own containers, or the LimitRange's `max`,
//! allow no more) is not written: the check would be killed for memory and fail a pod that
//! runs without it, so that pod is left unchanged, with a warning.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A quantity in thousandths of its unit (millicores, millibytes), as the LimitRanger compares
/// them (`requestLimitEnforcedValues`).
pub(crate) type Milli = i128;

/// 2^20 bytes, in millibytes.
const MI: Milli = 1024 * 1024 * 1000;
/// pullcheck's own CPU request and limit (millicores), and memory request and limit: requests
/// so small that they never change where a pod fits; limits because a namespace whose
/// ResourceQuota counts limits wants one on every container. A check was measured at 5 MiB
/// peak RSS for 40 images; the CPU limit only slows TLS handshakes a little.
const PREFERRED: [(&str, Milli, Milli); 2] = [("cpu", 10, 200), ("memory", 16 * MI, 32 * MI)];
/// The least memory limit the check is given: below it the kernel would kill it for memory.
pub(crate) const MEMORY_FLOOR: Milli = 16 * MI;

/// A container's `resources`: requests and limits by resource name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    /// `requests`.
    pub requests: BTreeMap<String, Milli>,
    /// `limits`.
    pub limits: BTreeMap<String, Milli>,
}

/// Where a container of the pod runs, which decides how it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// In `containers`.
    App,
    /// In `initContainers`, run to completion before the next.
    Init,
    /// In `initContainers` with `restartPolicy: Always`: runs beside the app containers.
    Sidecar,
}

/// One of the pod's own containers (never pullcheck's).
#[derive(Debug, Clone)]
pub(crate) struct Container {
    pub role: Role,
    pub resources: Requirements,
}

/// One `type: Container` item of a LimitRange, with the API server's defaults filled in
/// (`SetDefaults_LimitRangeItem`: `default` from `max`, `defaultRequest` from `default`, then
/// from `min`). `Pod` items need nothing here: the container never raises the pod's values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitRangeItem {
    pub min: BTreeMap<String, Milli>,
    pub max: BTreeMap<String, Milli>,
    pub default: BTreeMap<String, Milli>,
    pub default_request: BTreeMap<String, Milli>,
    pub max_limit_request_ratio: BTreeMap<String, Milli>,
}

/// What is known of the namespace's LimitRanges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LimitRanges {
    /// Not known (`inject` without `--limit-range-file`, or the webhook could not read them):
    /// only values the pod's own containers have are certain to be admitted.
    #[default]
    Unknown,
    /// These `Container` items, from all the namespace's LimitRanges (none: no LimitRange).
    Known(Vec<LimitRangeItem>),
}

/// What to write as the init container's `resources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chosen {
    /// These (empty: no `resources` at all, the only admissible choice for that pod).
    Set(Requirements),
    /// The memory limit the pod allows is under [`MEMORY_FLOOR`]: leave the pod unchanged.
    TooLittleMemory(Milli),
}

/// A Kubernetes quantity (`100m`, `1.5`, `64Mi`, `1e3`, `2G`) in thousandths, rounded up as
/// `MilliValue` does; `None` for what the API server would refuse (negative ones included).
pub(crate) fn parse_quantity(text: &str) -> Option<Milli> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let number = number.strip_prefix('+').unwrap_or(number);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        || whole.len() + fraction.len() > 30
    {
        return None;
    }
    // The value is digits * 10^exp10 * 2^exp2 units.
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let mut exp10: i32 = -(fraction.len() as i32);
    let mut exp2: u32 = 0;
    match suffix {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => exp2 = 10,
        "Mi" => exp2 = 20,
        "Gi" => exp2 = 30,
        "Ti" => exp2 = 40,
        "Pi" => exp2 = 50,
        "Ei" => exp2 = 60,
        other => {
            let exponent = other.strip_prefix(['e', 'E'])?;
            exp10 += exponent.parse::<i32>().ok().filter(|e| e.abs() <= 30)?;
        }
    }
    // In thousandths.
    exp10 += 3;
    let scaled = digits.checked_mul(1i128.checked_shl(exp2)?)?;
    let milli = if exp10 >= 0 {
        scaled.checked_mul(10i128.checked_pow(exp10.unsigned_abs())?)?
    } else {
        let divisor = 10i128.checked_pow(exp10.unsigned_abs())?;
        (scaled + divisor - 1) / divisor
    };
    // At most what an i64 holds (9.2 million terabytes, in thousandths): sums of many such and
    // the ratio's products of two stay far inside an i128.
    (milli <= Milli::from(i64::MAX)).then_some(milli)
}

/// A quantity as written back: CPU in cores or millicores (`200m`, `1`), other resources with
/// the largest binary suffix that is exact (`32Mi`), else a decimal one (`2G`), else plain.
pub(crate) fn format_quantity(name: &str, milli: Milli) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let units = milli / 1000;
    if name == "cpu" || units == 0 {
        return units.to_string();
    }
    // The shortest of the exact binary and decimal forms (`32Mi`, `2G`), binary on a tie.
    let binary = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ]
    .into_iter()
    .find(|(_, shift)| units % (1i128 << shift) == 0)
    .map(|(suffix, shift)| format!("{}{suffix}", units >> shift));
    let decimal = [
        ("E", 18),
        ("P", 15),
        ("T", 12),
        ("G", 9),
        ("M", 6),
        ("k", 3),
    ]
    .into_iter()
    .find(|(_, power)| units % 10i128.pow(*power) == 0)
    .map(|(suffix, power)| format!("{}{suffix}", units / 10i128.pow(power)));
    match (binary, decimal) {
        (Some(b), Some(d)) if d.len() < b.len() => d,
        (Some(one), _) | (None, Some(one)) => one,
        (None, None) => units.to_string(),
    }
}

/// The quantities of one `ResourceList` (a JSON object); what does not parse is left out
/// (the API server refuses it, with or without pullcheck).
fn resource_list(v: &Value) -> BTreeMap<String, Milli> {
    let Some(map) = v.as_object() else {
        return BTreeMap::new();
    };
    map.iter()
        .filter_map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Some((k.clone(), parse_quantity(&text)?))
        })
        .collect()
}

impl Requirements {
    /// A container's `resources` object.
    pub(crate) fn from_json(v: &Value) -> Requirements {
        Requirements {
            requests: resource_list(&v["requests"]),
            limits: resource_list(&v["limits"]),
        }
    }

    /// As `inject` writes them: requests then limits, each resource by name.
    pub(crate) fn written(&self) -> Vec<(&'static str, Vec<(String, String)>)> {
        let list = |m: &BTreeMap<String, Milli>| {
            m.iter()
                .map(|(k, v)| (k.clone(), format_quantity(k, *v)))
                .collect::<Vec<_>>()
        };
        [
            ("requests", list(&self.requests)),
            ("limits", list(&self.limits)),
        ]
        .into_iter()
        .filter(|(_, l)| !l.is_empty())
        .collect()
    }

    /// As admission sees them: requests from the limits where unset (`SetDefaults_Pod`), then
    /// the LimitRanges' defaults where still unset (`mergeContainerResources`).
    fn admitted(&self, items: &[LimitRangeItem]) -> Requirements {
        let mut r = self.clone();
        for (k, v) in &self.limits {
            r.requests.entry(k.clone()).or_insert(*v);
        }
        for item in items {
            for (k, v) in &item.default {
                r.limits.entry(k.clone()).or_insert(*v);
            }
            for (k, v) in &item.default_request {
                r.requests.entry(k.clone()).or_insert(*v);
            }
        }
        r
    }
}

impl LimitRangeItem {
    /// One `spec.limits` entry; `None` for other types than `Container`.
    fn from_json(v: &Value) -> Option<LimitRangeItem> {
        if v["type"].as_str() != Some("Container") {
            return None;
        }
        let mut item = LimitRangeItem {
            min: resource_list(&v["min"]),
            max: resource_list(&v["max"]),
            default: resource_list(&v["default"]),
            default_request: resource_list(&v["defaultRequest"]),
            max_limit_request_ratio: resource_list(&v["maxLimitRequestRatio"]),
        };
        // SetDefaults_LimitRangeItem, so that a LimitRange written by hand reads as the API
        // server stores it.
        for (k, v) in &item.max {
            item.default.entry(k.clone()).or_insert(*v);
        }
        for (k, v) in item.default.clone().into_iter().chain(item.min.clone()) {
            item.default_request.entry(k).or_insert(v);
        }
        Some(item)
    }

    fn names(&self) -> impl Iterator<Item = &String> {
        [
            &self.min,
            &self.max,
            &self.default,
            &self.default_request,
            &self.max_limit_request_ratio,
        ]
        .into_iter()
        .flat_map(BTreeMap::keys)
    }

    /// Whether a request and limit of `name` pass this item (`minConstraint`, `maxConstraint`,
    /// `limitRequestRatioConstraint`).
    fn admits(&self, name: &str, request: Option<Milli>, limit: Option<Milli>) -> bool {
        if let Some(&min) = self.min.get(name)
            && (request.is_none_or(|r| r < min) || limit.is_some_and(|l| l < min))
        {
            return false;
        }
        if let Some(&max) = self.max.get(name)
            && (limit.is_none_or(|l| l > max) || request.is_some_and(|r| r > max))
        {
            return false;
        }
        if let Some(&ratio) = self.max_limit_request_ratio.get(name) {
            match (request, limit) {
                (Some(r), Some(l)) if r > 0 && l > 0 => l * 1000 <= ratio * r,
                _ => false,
            }
        } else {
            true
        }
    }
}

impl LimitRanges {
    /// The `Container` items of LimitRange objects, and of Lists of them (`kubectl get
    /// limitrange -o yaml`).
    pub(crate) fn from_objects(objects: &[Value]) -> Result<LimitRanges, LimitRangesError> {
        fn walk(v: &Value, out: &mut Vec<LimitRangeItem>) -> Result<(), LimitRangesError> {
            match v["kind"].as_str() {
                Some("LimitRange") => {
                    let limits = v["spec"]["limits"].as_array().map(Vec::as_slice);
                    out.extend(
                        limits
                            .unwrap_or_default()
                            .iter()
                            .filter_map(LimitRangeItem::from_json),
                    );
                    Ok(())
                }
                Some("List" | "LimitRangeList") => {
                    for item in v["items"].as_array().map(Vec::as_slice).unwrap_or_default() {
                        walk(item, out)?;
                    }
                    Ok(())
                }
                None if v.is_null() => Ok(()),
                other => Err(LimitRangesError::Kind(other.map(str::to_string))),
            }
        }
        let mut items = Vec::new();
        for v in objects {
            walk(v, &mut items)?;
        }
        Ok(LimitRanges::Known(items))
    }

    /// LimitRanges as YAML or JSON, one or more documents.
    pub(crate) fn parse(text: &str) -> Result<LimitRanges, LimitRangesError> {
        use serde::Deserialize;
        let mut objects = Vec::new();
        for (i, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let v = Value::deserialize(document).map_err(|source| LimitRangesError::Yaml {
                document: i + 1,
                source,
            })?;
            objects.push(v);
        }
        LimitRanges::from_objects(&objects)
    }
}

/// Why LimitRanges could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LimitRangesError {
    /// An object of another kind (`None`: without one).
    #[error(
        "a LimitRange or a List of them, not {}",
        .0.as_deref().unwrap_or("an object without kind")
    )]
    Kind(Option<String>),
    /// A document (counted from 1) that is not YAML.
    #[error("document {document}: not valid YAML: {source}")]
    Yaml {
        document: usize,
        #[source]
        source: serde_yaml_ng::Error,
    },
}

/// The init container's resources for a pod of `containers` (pullcheck's own left out) in a
/// namespace of `ranges`: see the [module](self) for the rule.
pub(crate) fn choose(containers: &[Container], ranges: &LimitRanges) -> Chosen {
    let (known, items): (bool, &[LimitRangeItem]) = match ranges {
        LimitRanges::Known(items) => (true, items),
        LimitRanges::Unknown => (false, &[]),
    };
    let seen: Vec<(Role, Requirements)> = containers
        .iter()
        .map(|c| (c.role, c.resources.admitted(items)))
        .collect();
    let mut names: BTreeSet<String> = PREFERRED.iter().map(|p| p.0.to_string()).collect();
    for (_, r) in &seen {
        names.extend(r.requests.keys().chain(r.limits.keys()).cloned());
    }
    names.extend(items.iter().flat_map(LimitRangeItem::names).cloned());
    // QoS counts every container: Guaranteed when each has CPU and memory limits equal to
    // its requests. One container with less would make the whole pod Burstable.
    let guaranteed = !seen.is_empty()
        && seen.iter().all(|(_, r)| {
            ["cpu", "memory"]
                .iter()
                .all(|k| r.limits.contains_key(*k) && r.requests.get(*k) == r.limits.get(*k))
        });
    let mut out = Requirements::default();
    for name in &names {
        let (request, limit) = one(name, &seen, items, known, guaranteed);
        if let Some(r) = request {
            out.requests.insert(name.clone(), r);
        }
        if let Some(l) = limit {
            out.limits.insert(name.clone(), l);
        }
    }
    match out.limits.get("memory") {
        Some(&limit) if limit < MEMORY_FLOOR => Chosen::TooLittleMemory(limit),
        _ => Chosen::Set(out),
    }
}

/// The most the init container may have of one value without raising the pod's: max(the app
/// containers' sum when each has it, the largest other init container or sidecar).
fn ceiling(seen: &[(Role, Requirements)], value: impl Fn(&Requirements) -> Option<Milli>) -> Milli {
    let apps: Vec<Option<Milli>> = seen
        .iter()
        .filter(|(role, _)| *role == Role::App)
        .map(|(_, r)| value(r))
        .collect();
    let sum = if apps.iter().all(Option::is_some) {
        apps.iter().flatten().sum()
    } else {
        0
    };
    let init = seen
        .iter()
        .filter(|(role, _)| *role != Role::App)
        .filter_map(|(_, r)| value(r))
        .max()
        .unwrap_or(0);
    sum.max(init)
}

/// The request and limit of one resource.
fn one(
    name: &str,
    seen: &[(Role, Requirements)],
    items: &[LimitRangeItem],
    known: bool,
    guaranteed: bool,
) -> (Option<Milli>, Option<Milli>) {
    let top_request = ceiling(seen, |r| r.requests.get(name).copied());
    let top_limit = ceiling(seen, |r| r.limits.get(name).copied());
    if top_request <= 0 {
        return (None, None);
    }
    let within = |request: Option<Milli>, limit: Option<Milli>| {
        request.is_some_and(|r| r <= top_request)
            && limit.is_none_or(|l| l <= top_limit && request.is_some_and(|r| r <= l))
            && items.iter().all(|i| i.admits(name, request, limit))
    };
    if known {
        if let Some(&(_, request, limit)) = PREFERRED.iter().find(|p| p.0 == name) {
            let (r, l) = preferred(
                name,
                request,
                limit,
                top_request,
                top_limit,
                items,
                guaranteed,
            );
            if within(r, l) {
                return (r, l);
            }
        } else if !items.iter().any(|i| i.names().any(|n| n == name)) {
            // No LimitRange names it, and a ResourceQuota asks containers for CPU and memory
            // only (the pod evaluator's `Constraints`).
            return (None, None);
        }
    } else if seen
        .iter()
        .any(|(_, r)| !r.requests.contains_key(name) && !r.limits.contains_key(name))
    {
        // A container admitted without it: no LimitRange item and no ResourceQuota needs it.
        return (None, None);
    }
    // One of the pod's own containers' values, the largest within the ceiling.
    seen.iter()
        .filter_map(|(_, r)| {
            let request = r.requests.get(name).copied();
            let limit = r.limits.get(name).copied().filter(|_| top_limit > 0);
            within(request, limit).then_some((request, limit))
        })
        .max()
        .unwrap_or((None, None))
}

/// `a / b` rounded up, for positive values.
fn ceil_div(a: Milli, b: Milli) -> Milli {
    (a + b - 1) / b
}

/// pullcheck's own values for CPU or memory, fitted to the ceilings and the LimitRange items.
fn preferred(
    name: &str,
    request: Milli,
    limit: Milli,
    top_request: Milli,
    top_limit: Milli,
    items: &[LimitRangeItem],
    guaranteed: bool,
) -> (Option<Milli>, Option<Milli>) {
    let min = items
        .iter()
        .filter_map(|i| i.min.get(name))
        .max()
        .copied()
        .unwrap_or(0);
    let max = items.iter().filter_map(|i| i.max.get(name)).min().copied();
    let ratio = items
        .iter()
        .filter_map(|i| i.max_limit_request_ratio.get(name))
        .min()
        .copied();
    let mut limit =
        (top_limit > 0).then(|| limit.min(top_limit).min(max.unwrap_or(top_limit)).max(min));
    let cap = top_request
        .min(max.unwrap_or(top_request))
        .min(limit.unwrap_or(top_request));
    let wanted = if guaranteed {
        limit.unwrap_or(request)
    } else {
        request
    };
    let mut request = wanted.min(cap).max(min);
    if guaranteed {
        limit = limit.map(|l| l.min(request));
    }
    if let (Some(ratio), Some(l)) = (ratio, limit)
        && l * 1000 > ratio * request
    {
        request = ceil_div(l * 1000, ratio);
        // Whole bytes: a quantity in thousandths of a byte is valid, but reads oddly.
        if name != "cpu" {
            request = ceil_div(request, 1000) * 1000;
        }
        request = request.min(cap);
        if l * 1000 > ratio * request {
            limit = Some(ratio * request / 1000);
        }
    }
    (Some(request), limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[(&str, &str)]) -> BTreeMap<String, Milli> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), parse_quantity(v).unwrap()))
            .collect()
    }

    fn req(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Requirements {
        Requirements {
            requests: list(requests),
            limits: list(limits),
        }
    }

    fn app(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            role: Role::App,
            resources: req(requests, limits),
        }
    }

    fn written(chosen: &Chosen) -> String {
        match chosen {
            Chosen::Set(r) => r
                .written()
                .iter()
                .map(|(k, l)| {
                    let l: Vec<String> = l.iter().map(|(n, v)| format!("{n}={v}")).collect();
                    format!("{k}: {}", l.join(" "))
                })
                .collect::<Vec<_>>()
                .join("; "),
            Chosen::TooLittleMemory(m) => {
                format!("too little memory: {}", format_quantity("memory", *m))
            }
        }
    }

    #[test]
    fn quantities_read_and_write_as_kubernetes_does() {
        for (text, milli) in [
            ("10m", 10),
            ("1", 1000),
            ("1.5", 1500),
            ("0.1", 100),
            ("16Mi", 16 * MI),
            ("1Gi", 1024 * MI),
            ("2G", 2_000_000_000_000),
            ("1e3", 1_000_000),
            ("1n", 1),
            ("+2", 2000),
            (" 3 ", 3000),
        ] {
            assert_eq!(parse_quantity(text), Some(milli), "{text}");
        }
        for bad in [
            "",
            "-1",
            "1x",
            "m",
            "1.2.3",
            "1Qi",
            ".",
            "1e99",
            "9Ei",
            &"9".repeat(30),
        ] {
            assert_eq!(parse_quantity(bad), None, "{bad}");
        }
        for (name, text, written) in [
            ("cpu", "10m", "10m"),
            ("cpu", "1000m", "1"),
            ("cpu", "0.2", "200m"),
            ("memory", "32Mi", "32Mi"),
            ("memory", "33554432", "32Mi"),
            ("memory", "2G", "2G"),
            ("memory", "100", "100"),
            ("ephemeral-storage", "1Gi", "1Gi"),
        ] {
            assert_eq!(
                format_quantity(name, parse_quantity(text).unwrap()),
                written,
                "{text}"
            );
        }
    }

    #[test]
    fn limit_range_items_get_the_api_server_s_defaults() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: LimitRange\n  spec:\n    limits:\n    \
                    - type: Container\n      min: {cpu: 50m}\n      max: {cpu: 150m, memory: 1Gi}\n      default: {memory: 512Mi}\n    \
                    - type: Pod\n      max: {cpu: 1}\n---\nkind: LimitRange\nspec:\n  limits: [{type: Container, maxLimitRequestRatio: {cpu: 2}}]\n";
        let LimitRanges::Known(items) = LimitRanges::parse(text).unwrap() else {
            panic!("unknown");
        };
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[0].default,
            list(&[("cpu", "150m"), ("memory", "512Mi")])
        );
        assert_eq!(
            items[0].default_request,
            list(&[("cpu", "150m"), ("memory", "512Mi")])
        );
        assert_eq!(items[1].max_limit_request_ratio, list(&[("cpu", "2")]));
        assert_eq!(LimitRanges::parse("").unwrap(), LimitRanges::Known(vec![]));
        assert_eq!(
            LimitRanges::parse("{\"kind\": \"List\", \"items\": []}").unwrap(),
            LimitRanges::Known(vec![])
        );
        assert!(
            LimitRanges::parse("kind: Pod\n")
                .unwrap_err()
                .to_string()
                .contains("not Pod")
        );
        assert!(LimitRanges::parse("a: [\n").is_err());
    }

    /// The rule, case by case: the pod's containers, the namespace's LimitRanges, what the
    /// init container gets.
    #[test]
    fn what_the_init_container_gets() {
        let none = LimitRanges::Known(vec![]);
        let item = |text: &str| {
            let LimitRanges::Known(items) = LimitRanges::parse(&format!(
                "kind: LimitRange\nspec:\n  limits:\n  - {{type: Container, {text}}}\n"
            ))
            .unwrap() else {
                panic!("unknown")
            };
            LimitRanges::Known(items)
        };
        // The cluster tests' LimitRange: min above 10m/16Mi, max below 200m, a ratio.
        let strict = item(
            "min: {cpu: 50m, memory: 32Mi}, max: {cpu: 150m, memory: 256Mi}, \
             maxLimitRequestRatio: {cpu: 2}",
        );
        let burstable = || {
            vec![app(
                &[("cpu", "500m"), ("memory", "256Mi")],
                &[("cpu", "1"), ("memory", "1Gi")],
            )]
        };
        // A pod the strict namespace admits.
        let fits = || {
            vec![app(
                &[("cpu", "100m"), ("memory", "64Mi")],
                &[("cpu", "150m"), ("memory", "128Mi")],
            )]
        };
        let cases: Vec<(&str, Vec<Container>, LimitRanges, &str)> = vec![
            (
                "no LimitRange, a Burstable pod: pullcheck's own values",
                burstable(),
                none.clone(),
                "requests: cpu=10m memory=16Mi; limits: cpu=200m memory=32Mi",
            ),
            (
                "no LimitRange, a Guaranteed pod: requests equal to the limits",
                vec![app(&[], &[("cpu", "1"), ("memory", "1Gi")])],
                none.clone(),
                "requests: cpu=200m memory=32Mi; limits: cpu=200m memory=32Mi",
            ),
            (
                "a BestEffort pod: nothing (any request would raise the pod's, and its QoS)",
                vec![app(&[], &[])],
                none.clone(),
                "",
            ),
            (
                "LimitRanges unknown, BestEffort: nothing",
                vec![app(&[], &[])],
                LimitRanges::Unknown,
                "",
            ),
            (
                "LimitRanges unknown: the values of one of the pod's containers",
                vec![
                    app(
                        &[("cpu", "100m"), ("memory", "64Mi")],
                        &[("cpu", "200m"), ("memory", "128Mi")],
                    ),
                    app(
                        &[("cpu", "300m"), ("memory", "64Mi")],
                        &[("cpu", "600m"), ("memory", "64Mi")],
                    ),
                ],
                LimitRanges::Unknown,
                "requests: cpu=300m memory=64Mi; limits: cpu=600m memory=128Mi",
            ),
            (
                "LimitRanges unknown, one container without CPU: no CPU",
                vec![
                    app(&[("cpu", "100m"), ("memory", "64Mi")], &[]),
                    app(&[("memory", "64Mi")], &[]),
                ],
                LimitRanges::Unknown,
                "requests: memory=64Mi",
            ),
            (
                "requests only: no limit (one would raise the pod's from none)",
                vec![app(&[("cpu", "1"), ("memory", "1Gi")], &[])],
                none.clone(),
                "requests: cpu=10m memory=16Mi",
            ),
            (
                "small app containers: lowered to them",
                vec![app(
                    &[("cpu", "5m"), ("memory", "20Mi")],
                    &[("cpu", "100m"), ("memory", "24Mi")],
                )],
                none.clone(),
                "requests: cpu=5m memory=16Mi; limits: cpu=100m memory=24Mi",
            ),
            (
                "the sum of the app containers is the ceiling",
                vec![
                    app(
                        &[("cpu", "2m"), ("memory", "8Mi")],
                        &[("cpu", "60m"), ("memory", "16Mi")],
                    ),
                    app(
                        &[("cpu", "3m"), ("memory", "8Mi")],
                        &[("cpu", "60m"), ("memory", "16Mi")],
                    ),
                ],
                none.clone(),
                "requests: cpu=5m memory=16Mi; limits: cpu=120m memory=32Mi",
            ),
            (
                "a larger init container raises the ceiling",
                vec![
                    app(
                        &[("cpu", "1m"), ("memory", "1Mi")],
                        &[("cpu", "1m"), ("memory", "1Mi")],
                    ),
                    Container {
                        role: Role::Init,
                        resources: req(
                            &[("cpu", "1"), ("memory", "1Gi")],
                            &[("cpu", "2"), ("memory", "2Gi")],
                        ),
                    },
                ],
                none.clone(),
                "requests: cpu=10m memory=16Mi; limits: cpu=200m memory=32Mi",
            ),
            (
                "a LimitRange's min, max and ratio",
                fits(),
                strict.clone(),
                "requests: cpu=75m memory=32Mi; limits: cpu=150m memory=32Mi",
            ),
            (
                "a LimitRange's defaults reach the app containers that set nothing",
                vec![app(&[], &[])],
                item(
                    "default: {cpu: 300m, memory: 64Mi}, defaultRequest: {cpu: 100m, memory: 32Mi}",
                ),
                "requests: cpu=10m memory=16Mi; limits: cpu=200m memory=32Mi",
            ),
            (
                "a min of another resource: copied from the app container that got its default",
                vec![app(&[("cpu", "100m")], &[])],
                item("min: {ephemeral-storage: 1Gi}"),
                "requests: cpu=10m ephemeral-storage=1Gi",
            ),
            (
                "a resource no LimitRange names: left to the app containers",
                vec![app(
                    &[("cpu", "100m"), ("nvidia.com/gpu", "1")],
                    &[("nvidia.com/gpu", "1")],
                )],
                none.clone(),
                "requests: cpu=10m",
            ),
            (
                "a ratio the small values break: the request raised",
                burstable(),
                item("maxLimitRequestRatio: {cpu: 4, memory: 1.5}"),
                "requests: cpu=50m memory=22369622; limits: cpu=200m memory=32Mi",
            ),
            (
                "a Guaranteed pod in a strict namespace stays Guaranteed",
                vec![app(&[], &[("cpu", "100m"), ("memory", "64Mi")])],
                strict.clone(),
                "requests: cpu=100m memory=32Mi; limits: cpu=100m memory=32Mi",
            ),
            (
                "a pod whose memory is under the floor: not injected",
                vec![app(&[("memory", "4Mi")], &[("memory", "8Mi")])],
                none.clone(),
                "too little memory: 8Mi",
            ),
            (
                "a LimitRange whose max is under the floor: not injected",
                burstable(),
                item("max: {memory: 12Mi}"),
                "too little memory: 12Mi",
            ),
        ];
        for (name, containers, ranges, want) in cases {
            let chosen = choose(&containers, &ranges);
            assert_eq!(written(&chosen), want, "{name}");
            // What is written never raises the pod's values, and passes the items.
            if let (Chosen::Set(r), LimitRanges::Known(items)) = (&chosen, &ranges) {
                let seen: Vec<(Role, Requirements)> = containers
                    .iter()
                    .map(|c| (c.role, c.resources.admitted(items)))
                    .collect();
                for (k, v) in &r.requests {
                    assert!(
                        *v <= ceiling(&seen, |x| x.requests.get(k).copied()),
                        "{name}: {k}"
                    );
                }
                for (k, v) in &r.limits {
                    assert!(
                        *v <= ceiling(&seen, |x| x.limits.get(k).copied()),
                        "{name}: {k}"
                    );
                }
                for k in r.requests.keys().chain(r.limits.keys()) {
                    let (rq, lm) = (r.requests.get(k).copied(), r.limits.get(k).copied());
                    assert!(items.iter().all(|i| i.admits(k, rq, lm)), "{name}: {k}");
                }
            }
        }
    }
}
