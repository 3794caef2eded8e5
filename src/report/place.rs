//! Where a run is, and the words that depend on it. The reasons table and the summary speak
//! of a pod ("cannot be checked from this pod", "mount the pod's imagePullSecrets"), which
//! is right for the init container; run by hand on a workstation no pod is involved, and the
//! same verdicts are told in a person's words ("from this machine", "log in with docker
//! login"). The choice is made once, from what the run knows ([`Place::of`]), and every
//! sentence that differs is here, whole: a hint is swapped only when it is the pod's sentence
//! exactly, never by searching words in it.

use super::{NotCounted, Reason};

/// Where the run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Place {
    /// In a pod: the init container `inject` writes, or any container of a cluster. The
    /// default, and the words of the reasons table.
    #[default]
    Pod,
    /// On a person's machine (or a CI runner): no pod, no pull secret mounted.
    Workstation,
}

/// The token-server hint for an anonymous refusal, in a pod (given by the registry's
/// classification; swapped here on a workstation).
pub(crate) const TOKEN_ANONYMOUS_HINT: &str =
    "Mount the pod's imagePullSecrets under --secrets-dir or pass --docker-config.";

impl Place {
    /// A pod when Kubernetes says so: `KUBERNETES_SERVICE_HOST` is set in every container of
    /// a pod (`in_cluster`; the same fact keeps the containers tools' `auth.json` unread), or
    /// the run is told it has a pod's network (`--network pod`, which `inject` writes). Else
    /// a workstation.
    pub fn of(in_cluster: bool, pod_network: bool) -> Place {
        if in_cluster || pod_network {
            Place::Pod
        } else {
            Place::Workstation
        }
    }

    /// Whence the run asks: "this pod", "this machine".
    pub fn here(self) -> &'static str {
        match self {
            Place::Pod => "this pod",
            Place::Workstation => "this machine",
        }
    }

    /// `hint` in this place's words: on a workstation, the sentences written for a pod are
    /// replaced whole by a person's; any other hint is kept.
    pub fn hint(self, hint: &str) -> Option<&'static str> {
        match self {
            Place::Pod => None,
            Place::Workstation => workstation_hints()
                .into_iter()
                .find(|(pod, _)| *pod == hint)
                .map(|(_, own)| own),
        }
    }

    /// What was not verified, for the summary, in this place's words.
    pub fn what(self, why: NotCounted) -> &'static str {
        match (self, why) {
            (Place::Workstation, NotCounted::OnUnverifiableWarn) => {
                "cannot be checked from this machine"
            }
            _ => why.what(),
        }
    }
}

/// The pod's sentence, and a person's, for each hint that speaks of a pod.
fn workstation_hints() -> [(&'static str, &'static str); 6] {
    [
        (
            Reason::NoCredentials.hint(),
            "Log in to the registry (docker login, podman login or skopeo login), or pass --creds USER:PASS or --docker-config; if the node pulls with its own credentials, use --allow-unauthenticated.",
        ),
        (
            TOKEN_ANONYMOUS_HINT,
            "Log in to the registry (docker login, podman login or skopeo login), or pass --creds USER:PASS or --docker-config.",
        ),
        (
            Reason::CredentialsRejected.hint(),
            "The user name or password is wrong or expired: log in again, or fix the --creds or --docker-config given.",
        ),
        (
            Reason::InsufficientScope.hint(),
            "If the image is private, log in with credentials that may pull it (docker login, --creds, --docker-config); if it is public, check the name (registries such as Docker Hub answer this way for missing repositories too).",
        ),
        (
            Reason::Tls.hint(),
            "Trust the registry's CA with --ca-file, check that its certificate names this host, or use --plain-http if it serves plain HTTP; the node may trust a CA this machine lacks (its system store, containerd's certs.d: --hosts-dir reads it).",
        ),
        (
            Reason::NoSuchHost.hint(),
            "Check the registry's host name for a typo, and this machine's DNS; the node may resolve it through its own DNS or /etc/hosts, which this machine does not see.",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a sentence speaks of the pod the check runs in (not of the pod checked: "the
    /// pod's namespace" of a `--pod-spec` is true anywhere; `podman` is no pod).
    fn speaks_of_a_pod(s: &str) -> bool {
        [
            "this pod",
            "pod's imagePullSecrets",
            "pod's pull secret",
            "pod's DNS",
        ]
        .iter()
        .any(|w| s.contains(w))
    }

    #[test]
    fn the_place_is_a_pod_when_kubernetes_or_the_flag_says_so() {
        assert_eq!(Place::of(true, false), Place::Pod);
        assert_eq!(Place::of(false, true), Place::Pod);
        assert_eq!(Place::of(false, false), Place::Workstation);
    }

    #[test]
    fn every_hint_that_speaks_of_a_pod_has_a_workstations_words() {
        for &reason in Reason::ALL {
            let hint = reason.hint();
            // A pod's loopback is only ever met with a pod's network: always a pod.
            if !speaks_of_a_pod(hint) || reason == Reason::PodLoopback {
                continue;
            }
            let own = Place::Workstation
                .hint(hint)
                .unwrap_or_else(|| panic!("{reason}: {hint}"));
            assert!(!speaks_of_a_pod(own), "{reason}: {own}");
            assert_eq!(Place::Pod.hint(hint), None, "{reason}");
        }
        let own = Place::Workstation.hint(TOKEN_ANONYMOUS_HINT).unwrap();
        assert!(!speaks_of_a_pod(own), "{own}");
        assert_eq!(Place::Workstation.hint("Check the image name."), None);
    }
}
