//! Which container runtimes the nodes run, against the runtimes whose words the stuck-pod
//! controller was tested with: the kubelet passes on its runtime's own words for a failed pull,
//! each runtime words a cause its own way, and words the watcher does not know are only
//! reported (`StuckUnrecognized`). So a runtime never tested is named, for the operator to
//! watch those Events.

use super::decide::{Check, RuntimesSeen};
#[cfg(test)]
use std::collections::BTreeMap;

/// The runtimes whose words were recorded from the real kubelet on the test cluster (one table
/// each under `tests/fixtures/kubelet-recorded/`, which a test below keeps in step with this
/// list), as the Node's `containerRuntimeVersion` names them.
pub(crate) const TESTED: &[(&str, &str)] = &[
    ("containerd", "1.6.20"),
    ("containerd", "2.4.2"),
    ("cri-o", "1.34.0"),
];

/// Whether words of this runtime were recorded: the same runtime at the same major and minor
/// version as a tested one (a patch release keeps its messages; a minor one may not).
fn tested(runtime: &str) -> Option<&'static str> {
    let (name, version) = runtime.split_once("://")?;
    let minor = |v: &str| {
        let mut parts = v.trim_start_matches('v').split('.');
        (
            parts.next().map(str::to_owned),
            parts.next().map(str::to_owned),
        )
    };
    TESTED
        .iter()
        .find(|(n, v)| *n == name && minor(v) == minor(version) && minor(v).1.is_some())
        .map(|(_, v)| *v)
}

/// The `runtimes` check: always `ok` (a runtime never tested is no fault of the install), and
/// its words name every runtime, how many nodes run it, and whether it was tested.
pub(crate) fn check(seen: &RuntimesSeen) -> Check {
    let says = match seen {
        RuntimesSeen::Unread(why) => format!(
            "the nodes' runtimes were not read ({why}): give doctor `list` on nodes to see them"
        ),
        RuntimesSeen::Read(by_runtime) if by_runtime.is_empty() => "no nodes".to_string(),
        RuntimesSeen::Read(by_runtime) => {
            let each = by_runtime.iter().map(|(runtime, nodes)| {
                let plural = if *nodes == 1 { "" } else { "s" };
                let status = match tested(runtime) {
                    Some(v) => format!("tested: its words were recorded from {v}"),
                    None => "never tested: the watcher may not recognise its words; \
                             watch for StuckUnrecognized Events and \
                             pullcheck_watch_unrecognized_total"
                        .to_string(),
                };
                format!("{runtime} on {nodes} node{plural} ({status})")
            });
            each.collect::<Vec<_>>().join("; ")
        }
    };
    Check {
        check: "runtimes",
        ok: true,
        says,
        fix: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tested_runtimes_are_the_recorded_tables() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kubelet-recorded"
        );
        let mut recorded: Vec<(String, String)> = std::fs::read_dir(dir)
            .expect(dir)
            .filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                let stem = name.strip_suffix(".tsv")?.to_string();
                // `containerd-2.4.2` or `containerd-2.4.2-local-pull`: the runtime, then the
                // version from the first dash before a digit, then a variant.
                let at = stem
                    .char_indices()
                    .find(|(i, c)| {
                        *c == '-' && stem[i + 1..].starts_with(|d: char| d.is_ascii_digit())
                    })
                    .map(|(i, _)| i)?;
                let (name, rest) = (&stem[..at], &stem[at + 1..]);
                let version = rest.split('-').next().unwrap_or(rest);
                Some((name.to_string(), version.to_string()))
            })
            .collect();
        recorded.sort();
        recorded.dedup();
        let mut listed: Vec<(String, String)> = TESTED
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        listed.sort();
        assert_eq!(listed, recorded);
    }

    #[test]
    fn each_runtime_is_named_with_whether_it_was_tested() {
        let seen = RuntimesSeen::Read(BTreeMap::from([
            ("containerd://2.4.7".to_string(), 3),
            ("containerd://1.7.27".to_string(), 1),
            ("cri-o://1.34.0".to_string(), 2),
            ("cri-o://1.33.4".to_string(), 1),
        ]));
        let c = check(&seen);
        assert!(c.ok);
        assert_eq!(c.check, "runtimes");
        assert!(
            c.says.contains(
                "containerd://2.4.7 on 3 nodes (tested: its words were recorded from 2.4.2)"
            ),
            "{}",
            c.says
        );
        assert!(
            c.says
                .contains("containerd://1.7.27 on 1 node (never tested"),
            "{}",
            c.says
        );
        assert!(
            c.says.contains(
                "cri-o://1.34.0 on 2 nodes (tested: its words were recorded from 1.34.0)"
            ),
            "{}",
            c.says
        );
        assert!(
            c.says.contains("cri-o://1.33.4 on 1 node (never tested"),
            "{}",
            c.says
        );
        assert!(
            check(&RuntimesSeen::Unread("forbidden".into()))
                .says
                .contains("not read (forbidden)")
        );
        assert_eq!(tested("containerd://2.5.0"), None);
        assert_eq!(tested("garbage"), None);
        assert_eq!(tested("containerd://"), None);
    }
}
