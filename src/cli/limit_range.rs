//! The flag of `pullcheck inject` that says what the namespace's LimitRanges demand of the
//! init container's resources (a file of its own: `cli/mod.rs` is at its size limit).

use clap::Args;
use std::path::PathBuf;

/// The heading `-h` shows it under.
const RESOURCES: &str = "Resources";

/// `inject`'s LimitRange flag.
#[derive(Debug, Args)]
pub(crate) struct LimitRangeArgs {
    /// The namespace's LimitRanges, as `kubectl get limitrange -n NS -o yaml` writes them.
    ///
    /// The init container's requests and limits then pass their min, max,
    /// maxLimitRequestRatio and defaults, with pullcheck's own small values where they allow
    /// (an empty List: the namespace has none). Without it, the LimitRanges are unknown and
    /// the init container takes the requests and limits of one of the pod's own containers,
    /// which the namespace admits. Either way it never raises what the pod counts against a
    /// ResourceQuota. The webhook reads each namespace's LimitRanges itself.
    #[arg(
        long,
        value_name = "FILE",
        env = "PULLCHECK_INJECT_LIMIT_RANGE_FILE",
        help_heading = RESOURCES,
        // An empty value (the variable set to nothing) turns the choice off.
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::OsStringValueParser::new(),
            PathBuf::from
        )
    )]
    pub(crate) limit_range_file: Option<PathBuf>,
}
