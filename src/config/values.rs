//! The command line's choices as the library's types (clap derives stay in `cli`), and the
//! lists a flag or file holds. The values of single flags are parsed in `cli::values`.

use crate::cli;
use crate::credentials::cloud;

// The command line's choices, as the library's types: clap derives stay in `cli`.

impl From<cli::CloudCredentials> for cloud::Mode {
    fn from(c: cli::CloudCredentials) -> cloud::Mode {
        match c {
            cli::CloudCredentials::Auto => cloud::Mode::Auto,
            cli::CloudCredentials::Off => cloud::Mode::Off,
            cli::CloudCredentials::Required => cloud::Mode::Required,
        }
    }
}

impl From<cli::StartCheck> for crate::container_start::StartCheck {
    fn from(c: cli::StartCheck) -> crate::container_start::StartCheck {
        match c {
            cli::StartCheck::Auto => crate::container_start::StartCheck::Auto,
            cli::StartCheck::Off => crate::container_start::StartCheck::Off,
        }
    }
}

impl From<cli::PlatformCheck> for crate::registry::PlatformCheck {
    fn from(c: cli::PlatformCheck) -> crate::registry::PlatformCheck {
        match c {
            cli::PlatformCheck::Auto => crate::registry::PlatformCheck::Auto,
            cli::PlatformCheck::Full => crate::registry::PlatformCheck::Full,
            cli::PlatformCheck::Off => crate::registry::PlatformCheck::Off,
        }
    }
}

impl From<cli::OnUnreachable> for crate::check::OnUnreachable {
    fn from(c: cli::OnUnreachable) -> crate::check::OnUnreachable {
        match c {
            cli::OnUnreachable::Fail => crate::check::OnUnreachable::Fail,
            cli::OnUnreachable::Warn => crate::check::OnUnreachable::Warn,
        }
    }
}

/// Splits `PULLCHECK_IMAGES`: whitespace or commas, empty items dropped.
pub(super) fn split_list(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|i| !i.is_empty())
        .map(str::to_string)
}

/// One image per line; `#` starts a comment (a reference never holds `#`).
pub(super) fn images_file_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
}

impl From<cli::OnUnverifiable> for crate::check::OnUnverifiable {
    fn from(c: cli::OnUnverifiable) -> crate::check::OnUnverifiable {
        match c {
            cli::OnUnverifiable::Fail => crate::check::OnUnverifiable::Fail,
            cli::OnUnverifiable::Warn => crate::check::OnUnverifiable::Warn,
        }
    }
}

impl From<cli::PullCredentialsVerification> for crate::proof::CredentialVerification {
    fn from(c: cli::PullCredentialsVerification) -> crate::proof::CredentialVerification {
        match c {
            cli::PullCredentialsVerification::Auto => crate::proof::CredentialVerification::Auto,
            cli::PullCredentialsVerification::NeverVerify => {
                crate::proof::CredentialVerification::NeverVerify
            }
            cli::PullCredentialsVerification::Verify => {
                crate::proof::CredentialVerification::Verify
            }
        }
    }
}

impl From<cli::Network> for crate::check::Network {
    fn from(c: cli::Network) -> crate::check::Network {
        match c {
            cli::Network::Host => crate::check::Network::Host,
            cli::Network::Pod => crate::check::Network::Pod,
        }
    }
}

/// `--listen`: `HOST:PORT`, or `:PORT` for every IPv4 address; `example` is the port the error
/// shows (the command's default).
#[cfg(any(feature = "webhook", feature = "watch"))]
pub(crate) fn listen_address(
    value: &str,
    example: u16,
) -> Result<std::net::SocketAddr, ListenAddressError> {
    let full = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_string(),
    };
    full.parse().map_err(|_| ListenAddressError {
        value: value.to_string(),
        example,
    })
}

/// A `--listen` value that is neither `HOST:PORT` nor `:PORT`; `example` is the port shown.
#[cfg(any(feature = "webhook", feature = "watch"))]
#[derive(Debug, thiserror::Error)]
#[error("--listen {value}: not HOST:PORT or :PORT (e.g. :{example}, 127.0.0.1:{example})")]
pub(crate) struct ListenAddressError {
    value: String,
    example: u16,
}

#[cfg(all(test, any(feature = "webhook", feature = "watch")))]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            listen_address(":8443", 8443).unwrap().to_string(),
            "0.0.0.0:8443"
        );
        assert_eq!(
            listen_address("[::1]:9", 8443).unwrap().to_string(),
            "[::1]:9"
        );
        assert!(listen_address("localhost", 8443).is_err());
        let e = listen_address("8081", 8081).unwrap_err().to_string();
        assert!(e.contains("e.g. :8081, 127.0.0.1:8081"), "{e}");
    }
}
