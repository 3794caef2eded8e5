//! The values a flag chooses among (`--on-unreachable fail|warn`, `--network host|pod`, …), as
//! clap value enums: the words `--help` lists, each with its doc comment. `config` turns each
//! into the library's own type.

use clap::ValueEnum;

/// How index entries must match the node's platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlatformMatch {
    /// containerd CRI's `platforms.Only`: the platform or an older compatible one.
    Lenient,
    /// Equal after normalisation.
    Strict,
}

/// `--cloud-credentials`: whether to ask the pod's cloud identity for a registry credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CloudCredentials {
    /// Ask the cloud for ECR, Artifact Registry / GCR and ACR images.
    Auto,
    /// Never.
    Off,
    /// As `auto`, and an image a provider serves that gets no credential at all (no pull
    /// secret, every provider unavailable) fails: for clusters where every pod has an identity.
    Required,
}

/// `--start-check`: whether to predict that containers will not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StartCheck {
    /// Predict from the pod spec, and read an image's config when a container's spec leaves
    /// the answer to the image (a manifest and a blob `GET`).
    Auto,
    /// No prediction, no extra request.
    Off,
}

/// `--platform-check`: how far to go to check that an image has a variant for the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlatformCheck {
    /// Check indexes (one manifest `GET`), except on Docker Hub, where a manifest `GET` counts
    /// as a pull against the rate limit.
    Auto,
    /// Check indexes everywhere, and single manifests too (a manifest and a config `GET`).
    Full,
    /// `HEAD` only.
    Off,
}

/// `--on-unreachable`: what an image that ends `unreachable` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnUnreachable {
    /// It fails the run (exit 6).
    Fail,
    /// It is a warning: the kubelet's own back-off waits an outage out, and the pod's network
    /// may not reach registries that its node can.
    Warn,
}

/// `--on-unverifiable`: what an image that ends `unverifiable` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnUnverifiable {
    /// It fails the run (exit 8).
    Fail,
    /// It is a warning: the node may trust a CA, speak plain HTTP or resolve a name that the
    /// pod cannot.
    Warn,
}

/// `--network`: whose loopback the run sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Network {
    /// The node's or a workstation's (a `hostNetwork` pod): registries on loopback are checked.
    Host,
    /// A pod's own network: a registry on loopback is the node's, and is not asked.
    Pod,
}

/// `--image-pull-credentials-verification`: whether the node's kubelet re-verifies a pod's
/// credentials before it starts an image it holds (KEP-2535). The kubelet configuration's own
/// policy names are accepted as they are written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PullCredentialsVerification {
    /// From the node's kubelet version: v1.35 and later verify (the gate's default), earlier
    /// ones do not; a version that cannot be read is taken to verify.
    Auto,
    /// The kubelet starts an image it holds for any pod: the KubeletEnsureSecretPulledImages
    /// gate off, or imagePullCredentialsVerificationPolicy NeverVerify.
    #[value(alias = "NeverVerify")]
    NeverVerify,
    /// The gate on (1.35+ by default) with NeverVerifyPreloadedImages (the default),
    /// NeverVerifyAllowlistedImages or AlwaysVerify.
    #[value(aliases = ["NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages", "AlwaysVerify"])]
    Verify,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// One line per image, problems first, for people.
    Text,
    /// The JSON report, for programs.
    Json,
}
