//! A webhook's `namespaceSelector` read back, without I/O: as the label selector string the
//! API's list takes (so that doctor lists exactly the namespaces the API server would call the
//! webhook for), and as the one `KEY=VALUE` a person adds to opt a namespace in.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// The selector as `key=value,key in (a,b),!key,...`; empty (every namespace) for an empty one.
pub(crate) fn to_string(selector: &LabelSelector) -> String {
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in selector.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            // DoesNotExist, the one other operator the API accepts.
            _ => format!("!{}", e.key),
        });
    }
    parts.join(",")
}

/// The label that opts a namespace in: the first `matchLabels` entry or `In` / `Exists`
/// expression that is not about the namespace's name (the chart excludes its own namespace by
/// `kubernetes.io/metadata.name`).
pub(crate) fn opt_in_label(selector: &LabelSelector) -> Option<String> {
    if let Some((k, v)) = selector.match_labels.iter().flatten().next() {
        return Some(format!("{k}={v}"));
    }
    selector
        .match_expressions
        .iter()
        .flatten()
        .filter(|e| e.key != "kubernetes.io/metadata.name")
        .find_map(|e| match e.operator.as_str() {
            "In" => e
                .values
                .as_ref()
                .and_then(|v| v.first())
                .map(|v| format!("{}={v}", e.key)),
            "Exists" => Some(format!("{}=enabled", e.key)),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    /// The chart's own selector: its label, and never its own namespace.
    fn chart(first: LabelSelectorRequirement) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(vec![
                first,
                expr("kubernetes.io/metadata.name", "NotIn", &["pullcheck"]),
            ]),
            ..LabelSelector::default()
        }
    }

    #[test]
    fn the_charts_selector_reads_as_the_api_lists_it() {
        let s = chart(expr("pullcheck.dev/watch", "In", &["enabled"]));
        assert_eq!(
            to_string(&s),
            "pullcheck.dev/watch in (enabled),kubernetes.io/metadata.name notin (pullcheck)"
        );
        assert_eq!(
            opt_in_label(&s).as_deref(),
            Some("pullcheck.dev/watch=enabled")
        );
    }

    #[test]
    fn a_key_alone_opts_in_with_any_value() {
        let s = chart(expr("team", "Exists", &[]));
        assert_eq!(
            to_string(&s),
            "team,kubernetes.io/metadata.name notin (pullcheck)"
        );
        assert_eq!(opt_in_label(&s).as_deref(), Some("team=enabled"));
    }

    #[test]
    fn match_labels_and_does_not_exist() {
        let s = LabelSelector {
            match_labels: Some([("a".to_string(), "b".to_string())].into()),
            match_expressions: Some(vec![expr("c", "DoesNotExist", &[])]),
        };
        assert_eq!(to_string(&s), "a=b,!c");
        assert_eq!(opt_in_label(&s).as_deref(), Some("a=b"));
        assert_eq!(to_string(&LabelSelector::default()), "");
        assert_eq!(opt_in_label(&LabelSelector::default()), None);
    }
}
