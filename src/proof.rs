//! Whether a failure counts: a pod is failed only on proof. The decisions are pure, each of one
//! fact (the flags, what the node's image list proves, whose loopback the run sees), and used
//! by the check itself; [`ROWS`] holds the cases a user meets, from which
//! `docs/reference/what-fails.md` ("what fails a pod, what only warns") is generated for `check`
//! run by hand ([`Flags::CHECK`]) and for what `inject` and the webhook write ([`Flags::INJECT`]).
//!
//! A verdict counts only when it is proven: the registry's own answer to the request the node
//! would make, from where the node would make it, with every credential the kubelet would use;
//! or an invalid reference, a platform absent from an index, a start-check cause. Anything else
//! the node may know better than the pod (a CA, a plain-HTTP host, its own loopback, an image
//! it holds, a network the pod does not share) is reported and left to the kubelet.
//!
//! What "the node holds it" proves depends on the kubelet ([`node_reverifies`]): before
//! Kubernetes 1.35 an `IfNotPresent` image the node holds starts for any pod without a pull;
//! from 1.35 (KEP-2535, the feature gate `KubeletEnsureSecretPulledImages`, on by default) the
//! kubelet first checks, in pull records the pod cannot read, that this pod may use the node's
//! copy, and otherwise pulls it with the pod's own credentials.

use crate::pull_policy::PullPolicy;
use crate::report::{ExitCode, NotCounted, Reason, Status};

/// What an image that ends `unreachable` means (`--on-unreachable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnUnreachable {
    /// It fails the run (exit 6): `check`'s default.
    #[default]
    Fail,
    /// It is a warning: the kubelet's own back-off waits an outage out (what `inject` and the
    /// webhook write).
    Warn,
}

/// What an image that ends `unverifiable` means (`--on-unverifiable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnUnverifiable {
    /// It fails the run (exit 8).
    Fail,
    /// It is a warning: the node may trust a CA, speak plain HTTP to a host or resolve a name
    /// that the pod cannot. The default.
    #[default]
    Warn,
}

/// Whose network the run sees (`--network`): which loopback `127.0.0.1` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// The node's, or a workstation's: a registry on loopback is checked. `check`'s default,
    /// and what `inject` writes for a `hostNetwork` pod.
    #[default]
    Host,
    /// A pod's own (not `hostNetwork`): a registry on loopback is the node's, which the pod
    /// cannot reach, so it is not asked.
    Pod,
}

/// What the node's image list proves of an `IfNotPresent` image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeProof {
    /// No node was named (no `--node`): a run about the registry alone (by hand, or
    /// `inject --no-node-images`), where a miss counts as it would for `Always`.
    NotAsked,
    /// The node lists it, and its kubelet starts it for any pod without a pull (before
    /// Kubernetes 1.35, or credentials never verified): its registry need not be asked.
    Holds,
    /// The node lists it, and its kubelet re-verifies a pod's credentials before it uses its
    /// copy (Kubernetes 1.35+): the registry is asked with the pod's credentials, and only
    /// its `ok` is proof; its refusal proves nothing, since the kubelet's records (which the
    /// pod cannot read) may still let this pod use the node's copy.
    HoldsReverified,
    /// The node's complete list does not name it.
    Lacks,
    /// Nothing is proven: the lookup was refused or failed, or the list is truncated.
    Unknown,
}

/// Whether the node's kubelet checks a pod's credentials before it starts an image it already
/// holds (`--image-pull-credentials-verification`): the feature gate
/// `KubeletEnsureSecretPulledImages` (KEP-2535) with the kubelet configuration's
/// `imagePullCredentialsVerificationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CredentialVerification {
    /// From the node's kubelet version (`status.nodeInfo.kubeletVersion`): v1.35 and later
    /// verify (the gate's default), earlier ones do not; a version that cannot be read is
    /// taken to verify, the answer that never makes a refusal look like proof.
    #[default]
    Auto,
    /// The kubelet starts an image it holds for any pod: a kubelet before v1.35 with the gate
    /// at its default (off), the gate turned off, or `imagePullCredentialsVerificationPolicy:
    /// NeverVerify`.
    NeverVerify,
    /// The kubelet verifies images pulled with credentials: the gate on (the default from
    /// v1.35, or turned on in v1.33 and v1.34) with any other policy
    /// (`NeverVerifyPreloadedImages`, the default; `NeverVerifyAllowlistedImages`;
    /// `AlwaysVerify`).
    Verify,
}

/// The first kubelet (major, minor) whose `KubeletEnsureSecretPulledImages` gate is on by
/// default (beta in v1.35; alpha and off in v1.33 and v1.34).
pub const FIRST_VERIFYING_KUBELET: (u64, u64) = (1, 35);

/// Whether a node whose kubelet reports `kubelet_version` (`v1.35.0`, `v1.35.0-gke.123`,
/// `v1.31.4+k3s1`; `None` when the Node did not say) re-verifies a pod's credentials before it
/// starts an image it holds, under `setting`.
pub fn node_reverifies(setting: CredentialVerification, kubelet_version: Option<&str>) -> bool {
    match setting {
        CredentialVerification::NeverVerify => false,
        CredentialVerification::Verify => true,
        CredentialVerification::Auto => kubelet_version
            .and_then(kubelet_minor)
            .is_none_or(|version| version >= FIRST_VERIFYING_KUBELET),
    }
}

/// The (major, minor) of a kubelet's version as Kubernetes writes it (`v1.35.0`, with
/// a distribution's suffix after the patch: `-gke.123`, `+k3s1`, `-eks-4f2a`); `None` for
/// anything else, and for `v0.0.0`, what a kubelet built without its version says (its code may
/// be of any release).
fn kubelet_minor(version: &str) -> Option<(u64, u64)> {
    let rest = version.trim().strip_prefix('v')?;
    let mut parts = rest.splitn(3, '.');
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let major = number(parts.next()?)?;
    let minor = number(parts.next()?)?;
    // The patch starts with a digit; a suffix may follow it.
    let patch = parts.next()?;
    if !patch.starts_with(|c: char| c.is_ascii_digit()) || major == 0 {
        return None;
    }
    Some((major, minor))
}

/// The flags that decide what counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    /// `--on-unreachable`.
    pub on_unreachable: OnUnreachable,
    /// `--on-unverifiable`.
    pub on_unverifiable: OnUnverifiable,
    /// `--network`.
    pub network: Network,
    /// Whether the node's image list is read for `IfNotPresent` images (`--node`).
    pub node_named: bool,
}

impl Flags {
    /// `pullcheck check` run by hand, with its defaults.
    pub const CHECK: Flags = Flags {
        on_unreachable: OnUnreachable::Fail,
        on_unverifiable: OnUnverifiable::Warn,
        network: Network::Host,
        node_named: false,
    };

    /// What `inject` and the webhook write by default, for a pod that is not `hostNetwork`.
    pub const INJECT: Flags = Flags {
        on_unreachable: OnUnreachable::Warn,
        on_unverifiable: OnUnverifiable::Warn,
        network: Network::Pod,
        node_named: true,
    };
}

/// Why a failure of `status` does not count by the flags alone; `None`: it counts unless a
/// fact of the node says otherwise.
pub fn by_flags(status: Status, flags: Flags) -> Option<NotCounted> {
    match status {
        Status::Unreachable if flags.on_unreachable == OnUnreachable::Warn => {
            Some(NotCounted::OnUnreachableWarn)
        }
        Status::Unverifiable if flags.on_unverifiable == OnUnverifiable::Warn => {
            Some(NotCounted::OnUnverifiableWarn)
        }
        _ => None,
    }
}

/// Why a registry's refusal does not count for an image of `policy`, by what the node's list
/// proves: an `IfNotPresent` image the node may hold, when a node was named and its list does
/// not prove it lacks it (`not_found`); or one it holds whose kubelet re-verifies the pod's
/// credentials, when the registry refuses the pod's pull (any refusal: the kubelet's records
/// may still let the pod use its copy). A refusal of an `Always` image always counts: the
/// kubelet pulls it whatever the node holds.
pub fn by_node(status: Status, policy: PullPolicy, proof: NodeProof) -> Option<NotCounted> {
    match (status, policy, proof) {
        (Status::NotFound, PullPolicy::IfNotPresent, NodeProof::Unknown) => {
            Some(NotCounted::MayBeOnNode)
        }
        (status, PullPolicy::IfNotPresent, NodeProof::HoldsReverified)
            if NotCounted::HeldByNode.applies_to(status) =>
        {
            Some(NotCounted::HeldByNode)
        }
        _ => None,
    }
}

/// Whether `host` (a registry's `host[:port]`) is on loopback: 127.0.0.0/8, `::1` or
/// `localhost` (and its subdomains, which resolvers answer with loopback, RFC 6761).
pub fn is_loopback_host(host: &str) -> bool {
    // `[::1]:5000`, `[::1]`, `127.0.0.1:5000`, `localhost:5000`.
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    if let Ok(ip) = name.parse::<std::net::IpAddr>() {
        return ip.is_loopback();
    }
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Whether a registry at `host` is out of the run's reach as the node's: on loopback, seen from
/// a pod's own network.
pub fn loopback_from_pod(host: &str, network: Network) -> bool {
    network == Network::Pod && is_loopback_host(host)
}

/// What the end of a case is: the pod fails with an exit code, or it is left to the kubelet
/// with a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consequence {
    /// The image can be pulled, or the node holds it.
    Ok,
    /// It counts: the run exits with this code.
    Fails(ExitCode),
    /// Reported, not counted, for this cause.
    Warns(NotCounted),
}

/// One case of the table: what the pod and its node know, and what the registry answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The case, in the user's words.
    pub case: &'static str,
    /// The verdict the check reaches from the pod.
    pub reason: Reason,
    /// The image's pull policy.
    pub policy: PullPolicy,
    /// What the node's list says, when a node is named.
    pub node: NodeProof,
    /// The registry is on loopback.
    pub loopback: bool,
}

impl Row {
    /// What the case ends as under `flags`, by the same decisions as the check.
    pub fn outcome(&self, flags: Flags) -> Consequence {
        let node = if flags.node_named {
            self.node
        } else {
            NodeProof::NotAsked
        };
        if self.policy == PullPolicy::IfNotPresent && node == NodeProof::Holds {
            return Consequence::Ok;
        }
        if self.loopback && loopback_from_pod("127.0.0.1:5001", flags.network) {
            return Consequence::Warns(NotCounted::PodLoopback);
        }
        let status = self.reason.status();
        if status == Status::Ok {
            return Consequence::Ok;
        }
        match by_flags(status, flags).or_else(|| by_node(status, self.policy, node)) {
            Some(why) => Consequence::Warns(why),
            None => Consequence::Fails(status.exit_code()),
        }
    }
}

/// The cases of `docs/reference/what-fails.md`: those of the places where a pod sees less than
/// its node, and the proven failures beside them.
pub const ROWS: &[Row] = &[
    Row {
        case: "a tag missing at the registry, `imagePullPolicy: Always`",
        reason: Reason::TagMissing,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "a tag missing at the registry, `IfNotPresent`, the node's complete list lacks it",
        reason: Reason::TagMissing,
        policy: PullPolicy::IfNotPresent,
        node: NodeProof::Lacks,
        loopback: false,
    },
    Row {
        case: "an image loaded onto the node (`kind load`, a pre-pull DaemonSet, a cached tag since deleted), `IfNotPresent`, the node readable, its kubelet before 1.35 (or `--image-pull-credentials-verification never-verify`)",
        reason: Reason::RepositoryMissing,
        policy: PullPolicy::IfNotPresent,
        node: NodeProof::Holds,
        loopback: false,
    },
    Row {
        case: "the same on Kubernetes 1.35+ (the kubelet re-verifies credentials): the registry, asked with the pod's credentials, lacks it; the kubelet starts a preloaded copy",
        reason: Reason::RepositoryMissing,
        policy: PullPolicy::IfNotPresent,
        node: NodeProof::HoldsReverified,
        loopback: false,
    },
    Row {
        case: "an image the node holds, `IfNotPresent`, Kubernetes 1.35+ (the kubelet re-verifies credentials), the registry serving it to the pod's credentials",
        reason: Reason::Found,
        policy: PullPolicy::IfNotPresent,
        node: NodeProof::HoldsReverified,
        loopback: false,
    },
    Row {
        case: "an image the node holds, `IfNotPresent`, Kubernetes 1.35+, the registry refusing the pod's credentials (or lacking it): the kubelet's records alone say whether this pod may use the node's copy",
        reason: Reason::NoCredentials,
        policy: PullPolicy::IfNotPresent,
        node: NodeProof::HoldsReverified,
        loopback: false,
    },
    Row {
        case: "a tag missing at the registry, `IfNotPresent`, the node's list unreadable (no `get` on nodes) or truncated",
        reason: Reason::TagMissing,
        policy: PullPolicy::IfNotPresent,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "an invalid reference",
        reason: Reason::InvalidReference,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "an index without the node's platform",
        reason: Reason::NoMatchingPlatform,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "a pull secret the registry rejects",
        reason: Reason::CredentialsRejected,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "`runAsNonRoot` and an image that runs as root",
        reason: Reason::RunsAsRoot,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "the registry's CA only in the node's trust store or containerd's `certs.d`",
        reason: Reason::Tls,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "a plain-HTTP registry that containerd's `hosts.toml` names, asked over TLS",
        reason: Reason::PlainHttp,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "a registry name only the node resolves",
        reason: Reason::NoSuchHost,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "a registry on the node's loopback (`127.0.0.1:5001`: kind, k3d, minikube), the pod not `hostNetwork`",
        reason: Reason::Connect,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: true,
    },
    Row {
        case: "a registry that refuses connections from the pod",
        reason: Reason::Connect,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
    Row {
        case: "a registry answering 503 longer than `--timeout`",
        reason: Reason::ServerError,
        policy: PullPolicy::Always,
        node: NodeProof::Unknown,
        loopback: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for (host, loopback) in [
            ("127.0.0.1:5001", true),
            ("127.1.2.3", true),
            ("[::1]:5000", true),
            ("[::1]", true),
            ("localhost:5000", true),
            ("LocalHost", true),
            ("registry.localhost:5000", true),
            ("10.0.0.1:5000", false),
            ("registry.example.com", false),
            ("docker.io", false),
            ("localhost.example.com", false),
            ("[2001:db8::1]:5000", false),
        ] {
            assert_eq!(is_loopback_host(host), loopback, "{host}");
        }
        assert!(loopback_from_pod("127.0.0.1:5001", Network::Pod));
        assert!(!loopback_from_pod("127.0.0.1:5001", Network::Host));
    }

    /// The kubelet's version decides, unless the flag does: v1.35 and later re-verify (the
    /// gate's default), earlier ones do not, and a version that cannot be read is taken to.
    #[test]
    fn which_kubelets_re_verify_the_credentials_of_images_they_hold() {
        use CredentialVerification::{Auto, NeverVerify, Verify};
        let cases: &[(&str, Option<&str>, bool)] = &[
            ("1.34: the gate is alpha and off", Some("v1.34.4"), false),
            ("1.31", Some("v1.31.0"), false),
            ("1.35.0: beta, on by default", Some("v1.35.0"), true),
            ("1.37.2", Some("v1.37.2"), true),
            ("GKE's suffix", Some("v1.35.0-gke.123"), true),
            ("GKE's suffix on 1.34", Some("v1.34.1-gke.1431000"), false),
            ("k3s's suffix", Some("v1.33.2+k3s1"), false),
            ("EKS's suffix", Some("v1.36.1-eks-4f2a1b3"), true),
            ("a pre-release of 1.35", Some("v1.35.0-alpha.1"), true),
            ("a major above 1", Some("v2.0.0"), true),
            ("spaces around it", Some("  v1.30.1 "), false),
            ("no version", None, true),
            ("empty", Some(""), true),
            ("garbage", Some("garbage"), true),
            ("no leading v", Some("1.30.1"), true),
            ("no patch", Some("v1.30"), true),
            ("a minor that is no number", Some("v1.x.0"), true),
            (
                "a kubelet built without a version",
                Some("v0.0.0-master+$Format:%H$"),
                true,
            ),
            ("an absurd number", Some("v1.99999999999999999999.0"), true),
        ];
        for (name, version, want) in cases {
            assert_eq!(
                node_reverifies(Auto, *version),
                *want,
                "{name}: {version:?}"
            );
            // The flag overrides the version either way.
            assert!(!node_reverifies(NeverVerify, *version), "{name}");
            assert!(node_reverifies(Verify, *version), "{name}");
        }
    }

    /// On a node whose kubelet re-verifies, an `IfNotPresent` image it holds is asked of its
    /// registry: `ok` is proof, and any refusal is left to the kubelet's records; on a node
    /// that does not, holding it is proof without a request.
    #[test]
    fn an_image_the_node_holds_is_proven_by_the_registry_where_the_kubelet_re_verifies() {
        for status in Status::ALL {
            let reverified = by_node(status, PullPolicy::IfNotPresent, NodeProof::HoldsReverified);
            let want = match status {
                Status::Ok | Status::InvalidReference | Status::WontStart => None,
                _ => Some(NotCounted::HeldByNode),
            };
            assert_eq!(reverified, want, "{status:?}");
            assert_eq!(
                by_node(status, PullPolicy::Always, NodeProof::HoldsReverified),
                None,
                "{status:?}: Always is pulled whatever the node holds"
            );
            assert_eq!(
                by_node(status, PullPolicy::IfNotPresent, NodeProof::Holds),
                None,
                "{status:?}"
            );
        }
        let row = |reason, node| Row {
            case: "",
            reason,
            policy: PullPolicy::IfNotPresent,
            node,
            loopback: false,
        };
        for flags in [Flags::INJECT, Flags::CHECK] {
            let named = flags.node_named;
            let refused = row(Reason::CredentialsRejected, NodeProof::HoldsReverified);
            let want = if named {
                Consequence::Warns(NotCounted::HeldByNode)
            } else {
                Consequence::Fails(ExitCode::AccessRefused)
            };
            assert_eq!(refused.outcome(flags), want);
            let missing = row(Reason::RepositoryMissing, NodeProof::HoldsReverified);
            let want = if named {
                Consequence::Warns(NotCounted::HeldByNode)
            } else {
                Consequence::Fails(ExitCode::NotFound)
            };
            assert_eq!(missing.outcome(flags), want);
            assert_eq!(
                row(Reason::Found, NodeProof::HoldsReverified).outcome(flags),
                Consequence::Ok
            );
            // Held on a node that does not re-verify: ok whatever the registry says.
            let held = row(Reason::CredentialsRejected, NodeProof::Holds);
            let want = if named {
                Consequence::Ok
            } else {
                Consequence::Fails(ExitCode::AccessRefused)
            };
            assert_eq!(held.outcome(flags), want);
        }
    }

    #[test]
    fn only_proof_fails_what_inject_writes() {
        // Each case of the table, under inject's defaults: the proven ones fail, the rest warn.
        let by_case = |case: &str| {
            ROWS.iter()
                .find(|r| r.case.starts_with(case))
                .unwrap()
                .outcome(Flags::INJECT)
        };
        assert_eq!(
            by_case("a tag missing at the registry, `imagePullPolicy: Always`"),
            Consequence::Fails(ExitCode::NotFound)
        );
        assert_eq!(
            by_case("a tag missing at the registry, `IfNotPresent`, the node's complete"),
            Consequence::Fails(ExitCode::NotFound)
        );
        assert_eq!(by_case("an image loaded onto the node"), Consequence::Ok);
        assert_eq!(
            by_case("the same on Kubernetes 1.35+"),
            Consequence::Warns(NotCounted::HeldByNode)
        );
        assert_eq!(
            by_case(
                "an image the node holds, `IfNotPresent`, Kubernetes 1.35+, the registry refusing"
            ),
            Consequence::Warns(NotCounted::HeldByNode)
        );
        assert_eq!(
            by_case("an image the node holds, `IfNotPresent`, Kubernetes 1.35+ (the kubelet"),
            Consequence::Ok
        );
        assert_eq!(
            by_case("a tag missing at the registry, `IfNotPresent`, the node's list unreadable"),
            Consequence::Warns(NotCounted::MayBeOnNode)
        );
        assert_eq!(
            by_case("the registry's CA"),
            Consequence::Warns(NotCounted::OnUnverifiableWarn)
        );
        assert_eq!(
            by_case("a registry on the node's loopback"),
            Consequence::Warns(NotCounted::PodLoopback)
        );
        assert_eq!(
            by_case("a registry answering 503"),
            Consequence::Warns(NotCounted::OnUnreachableWarn)
        );
        // By hand, an outage is exit 6 and a loopback registry is checked.
        let by_hand = |case: &str| {
            ROWS.iter()
                .find(|r| r.case.starts_with(case))
                .unwrap()
                .outcome(Flags::CHECK)
        };
        assert_eq!(
            by_hand("a registry answering 503"),
            Consequence::Fails(ExitCode::Unreachable)
        );
        assert_eq!(
            by_hand("a registry on the node's loopback"),
            Consequence::Fails(ExitCode::Unreachable)
        );
        // Every counted case of inject's is a code its podFailurePolicy fails the Job on.
        for row in ROWS {
            if let Consequence::Fails(code) = row.outcome(Flags::INJECT) {
                assert!(
                    crate::inject::FAIL_JOB_EXIT_CODES.contains(&i64::from(code.code())),
                    "{}",
                    row.case
                );
            }
        }
    }
}
