//! How long a verdict must stand before the watcher acts on it: a grace per verdict, not per
//! waiting reason, since the kubelet's words mean very different things under one reason
//! (`ErrImagePull` is a definitive 404 or a refused connection alike).
//!
//! The defaults, and why:
//! - **0 s** (the first look) for what the kubelet reports only after asking every host of the
//!   node: a manifest or repository the registry says is not there, a reference no parser
//!   takes, `ErrImageNeverPull`, no variant for the node's platform. Nothing but a push or an
//!   edit changes them, the kubelet tries again only 10 s later at the soonest (so a longer
//!   grace would only wait, seeing nothing new), and the watcher confirms the first with a HEAD
//!   of its own where it can.
//! - **30 s** for refused credentials: a pull secret created or rotated a moment ago reaches the
//!   kubelet on its next pull, and the kubelet pulls without a pull secret whose watch has not
//!   synced yet (a Warning `FailedToRetrieveImagePullSecret`), so a pod's first words about
//!   credentials may be the anonymous ones (`insufficient_scope`) though its secret is right.
//! - **30 s** for a missing Secret, ConfigMap or key: the kubelet tries a pod that cannot start
//!   again 10 to 15 s later (its pod worker's back-off), so a Secret made in time is seen by
//!   then; 30 s is past that retry.
//! - **10 s** for the start causes (`runAsNonRoot` against the image's user, no command, a
//!   `workingDir` that is a file, a command that is not in the image): the image decides them.
//! - **never** for transient or unknown words: they are reported once they have lasted
//!   `--report-after`, and never acted on.
//!
//! `--grace-for` takes pullcheck's reason words (`manifest_missing`) and the kubelet's waiting
//! reasons (`CreateContainerConfigError`); a reason word wins over a waiting reason, which wins
//! over `--grace`, which wins over the default.

use super::classify::{ERR_IMAGE_PULL, IMAGE_PULL_BACK_OFF, Verdict};
use crate::config::{GraceKeys, Graces};
use crate::report::Reason;
use std::time::Duration;

/// The grace of the definitive answers.
const DEFINITIVE: Duration = Duration::ZERO;
/// The grace of refused credentials.
const CREDENTIALS: Duration = Duration::from_secs(30);
/// The grace of a missing Secret, ConfigMap or key: past the kubelet's next retry.
const CONFIGURATION: Duration = Duration::from_secs(30);
/// The grace of the start causes.
const START: Duration = Duration::from_secs(10);

/// The grace of a permanent verdict seen under the waiting reason `waiting`; `None` for a
/// transient one, which is never acted on.
pub(crate) fn of(graces: &Graces, verdict: Verdict, waiting: &str) -> Option<Duration> {
    let Verdict::Permanent(reason) = verdict else {
        return None;
    };
    let own = |k: &str| graces.by_key.get(k).copied();
    // A failed pull and its back-off alternate and are one wait: a `--grace-for` of
    // either is the grace of both (the shorter, when both are given).
    let by_waiting = if waiting == ERR_IMAGE_PULL || waiting == IMAGE_PULL_BACK_OFF {
        [own(ERR_IMAGE_PULL), own(IMAGE_PULL_BACK_OFF)]
            .into_iter()
            .flatten()
            .min()
    } else {
        own(waiting)
    };
    Some(
        own(reason.about().word)
            .or(by_waiting)
            .or(graces.all)
            .unwrap_or_else(|| default_grace(reason)),
    )
}

/// The shortest wait a watcher with these graces acts or reports after: how often it needs to
/// look.
pub(crate) fn shortest(graces: &Graces) -> Duration {
    let defaults = [DEFINITIVE, CREDENTIALS, CONFIGURATION, START];
    let base = match graces.all {
        Some(d) => d,
        None => defaults.into_iter().min().unwrap_or(DEFINITIVE),
    };
    graces
        .by_key
        .values()
        .copied()
        .chain([base, graces.report_after])
        .min()
        .unwrap_or(base)
}

/// The default grace of a permanent reason (see the module's list).
pub(crate) fn default_grace(reason: Reason) -> Duration {
    match reason {
        Reason::ManifestMissing
        | Reason::TagMissing
        | Reason::DigestMissing
        | Reason::RepositoryMissing
        | Reason::InvalidReference
        | Reason::NotOnNode
        | Reason::NoMatchingPlatform => DEFINITIVE,
        Reason::CredentialsRejected
        | Reason::PullUnauthorized
        | Reason::InsufficientScope
        | Reason::Denied
        | Reason::NoCredentials => CREDENTIALS,
        Reason::SecretMissing | Reason::ConfigMapMissing | Reason::KeyMissing => CONFIGURATION,
        _ => START,
    }
}

/// What `--grace-for` takes: the watched waiting reasons, and the words of the reasons the
/// kubelet's words can give.
pub(crate) fn keys() -> GraceKeys {
    GraceKeys {
        waiting: &super::classify::WATCHED,
        words: super::classify::REASONS
            .iter()
            .map(|r| r.about().word)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn graces() -> Graces {
        Graces {
            all: None,
            by_key: BTreeMap::new(),
            report_after: Duration::from_secs(120),
        }
    }

    #[test]
    fn each_verdict_has_its_own_default() {
        let g = graces();
        let p = |r| Verdict::Permanent(r);
        for (verdict, waiting, want) in [
            (p(Reason::ManifestMissing), ERR_IMAGE_PULL, Some(0)),
            (p(Reason::ManifestMissing), IMAGE_PULL_BACK_OFF, Some(0)),
            (p(Reason::InvalidReference), "InvalidImageName", Some(0)),
            (p(Reason::NotOnNode), "ErrImageNeverPull", Some(0)),
            (p(Reason::NoMatchingPlatform), ERR_IMAGE_PULL, Some(0)),
            (p(Reason::CredentialsRejected), ERR_IMAGE_PULL, Some(30)),
            (p(Reason::PullUnauthorized), ERR_IMAGE_PULL, Some(30)),
            (
                p(Reason::SecretMissing),
                "CreateContainerConfigError",
                Some(30),
            ),
            (
                p(Reason::KeyMissing),
                "CreateContainerConfigError",
                Some(30),
            ),
            (p(Reason::CommandNotFound), "CreateContainerError", Some(10)),
            (
                Verdict::Transient(super::super::classify::Transient::Connect),
                ERR_IMAGE_PULL,
                None,
            ),
        ] {
            assert_eq!(
                of(&g, verdict, waiting),
                want.map(Duration::from_secs),
                "{verdict:?} {waiting}"
            );
        }
    }

    #[test]
    fn a_reason_word_wins_over_a_waiting_reason_which_wins_over_grace() {
        let mut g = graces();
        let missing = Verdict::Permanent(Reason::ManifestMissing);
        g.all = Some(Duration::ZERO);
        assert_eq!(of(&g, missing, ERR_IMAGE_PULL), Some(Duration::ZERO));
        g.by_key
            .insert(IMAGE_PULL_BACK_OFF.into(), Duration::from_secs(20));
        assert_eq!(
            of(&g, missing, ERR_IMAGE_PULL),
            Some(Duration::from_secs(20))
        );
        g.by_key
            .insert("manifest_missing".into(), Duration::from_secs(120));
        assert_eq!(
            of(&g, missing, ERR_IMAGE_PULL),
            Some(Duration::from_secs(120))
        );
        let denied = Verdict::Permanent(Reason::Denied);
        assert_eq!(
            of(&g, denied, ERR_IMAGE_PULL),
            Some(Duration::from_secs(20))
        );
        assert_eq!(shortest(&g), Duration::ZERO);
    }

    #[test]
    fn keys_are_waiting_reasons_or_reason_words() {
        for ok in [
            "ErrImagePull",
            "CreateContainerConfigError",
            "manifest_missing",
            "secret_missing",
            "no_matching_platform",
        ] {
            assert!(keys().contains(ok), "{ok}");
        }
        for bad in ["CrashLoopBackOff", "connect", "found", ""] {
            assert!(!keys().contains(bad), "{bad}");
        }
    }
}
