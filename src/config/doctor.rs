//! `pullcheck doctor`'s flags become one validated [`DoctorConfig`], every problem at once (exit
//! 2), before the cluster is asked anything: names that Kubernetes would refuse are said here,
//! not as an API error later.

use super::ConfigErrors;
use crate::cli::OutputFormat;
use crate::cli::doctor::DoctorArgs;
use crate::manifests::names::is_dns_label;
use std::path::PathBuf;
use std::time::Duration;

/// A validated `pullcheck doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DoctorConfig {
    /// `--kubeconfig`: `None` for kubectl's own order.
    pub(crate) kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub(crate) context: Option<String>,
    /// `--namespace`: the release's.
    pub(crate) namespace: String,
    /// `--release`.
    pub(crate) release: String,
    /// `--sample-namespace`.
    pub(crate) sample_namespace: Option<String>,
    /// `-o json`.
    pub(crate) json: bool,
    /// `--probe`: the namespace to prove the install in, and `--probe-timeout`.
    pub(crate) probe: Option<(String, Duration)>,
}

impl DoctorConfig {
    /// Judges the flags; every problem is reported at once.
    pub(crate) fn from_args(args: DoctorArgs) -> Result<DoctorConfig, ConfigErrors> {
        let mut errors = Vec::new();
        let mut name = |flag: &str, value: &str| {
            if !is_dns_label(value) {
                errors.push(format!(
                    "{flag} {value:?}: expected a Kubernetes name (lower-case letters, digits \
                     and `-`, at most 63)"
                ));
            }
        };
        name("--namespace", &args.namespace);
        // Helm's release names are DNS labels too (at most 53, which the API does not check).
        name("--release", &args.release);
        if let Some(sample) = &args.sample_namespace {
            name("--sample-namespace", sample);
        }
        if let Some(probe) = &args.probe {
            name("--probe", probe);
        }
        let timeout = super::judged(
            "--probe-timeout",
            &args.probe_timeout,
            Duration::from_secs(60),
            &mut errors,
        );
        if args.context.as_deref() == Some("") {
            errors.push("--context: empty; leave it out for the kubeconfig's current one".into());
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        Ok(DoctorConfig {
            kubeconfig: args.kubeconfig.filter(|p| !p.as_os_str().is_empty()),
            context: args.context,
            namespace: args.namespace,
            release: args.release,
            sample_namespace: args.sample_namespace,
            json: args.output == OutputFormat::Json,
            probe: args.probe.map(|ns| (ns, timeout)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(namespace: &str, release: &str, sample: Option<&str>) -> DoctorArgs {
        DoctorArgs {
            kubeconfig: None,
            context: None,
            namespace: namespace.into(),
            release: release.into(),
            sample_namespace: sample.map(Into::into),
            probe: None,
            probe_timeout: crate::cli::Checked {
                given: "60s".into(),
                value: Ok(Duration::from_secs(60)),
            },
            output: OutputFormat::Text,
        }
    }

    #[test]
    fn good_names_pass() {
        let c = DoctorConfig::from_args(args("pullcheck", "pc", Some("team-a"))).unwrap();
        assert_eq!(c.release, "pc");
        assert_eq!(c.sample_namespace.as_deref(), Some("team-a"));
        assert!(!c.json);
    }

    #[test]
    fn every_bad_name_is_said_at_once() {
        let e = DoctorConfig::from_args(args("Bad_NS", "a.b", Some(""))).unwrap_err();
        assert_eq!(e.0.len(), 3, "{e}");
        assert!(e.0[0].starts_with("--namespace \"Bad_NS\""), "{e}");
        assert!(e.0[1].starts_with("--release"), "{e}");
        assert!(e.0[2].starts_with("--sample-namespace"), "{e}");
    }
}
