//! The one way pullcheck writes a line of its log, stderr, for all four subcommands:
//! `pullcheck: [COMPONENT: ][warning: |error: ]TEXT`. The whole line is escaped
//! ([`crate::escape::escape`]: a value from outside cannot start a line of its own or move
//! the cursor) and passed through the redaction net ([`crate::redact::net`]: the secrets no
//! word can be) here, once, so that a caller can forget neither; what others wrote is scrubbed
//! of every secret where it enters a message ([`crate::redact::foreign`]). `check` and `inject` write without a component (their lines are
//! the command's own words); the two servers name theirs, so that one log holding both reads
//! apart.

use std::fmt;

/// Who writes the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Component {
    /// `check` and `inject`: no component word.
    Command,
    #[cfg(feature = "webhook")]
    Webhook,
    #[cfg(feature = "watch")]
    Watch,
    /// `pullcheck watch --dry-run`.
    #[cfg(feature = "watch")]
    WatchDryRun,
}

/// How much the line matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Info,
    /// Something was not done, or was done in a way the operator should know of.
    Warning,
    /// The command stops, or a write failed.
    Error,
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Component::Command => "",
            #[cfg(feature = "webhook")]
            Component::Webhook => "webhook: ",
            #[cfg(feature = "watch")]
            Component::Watch => "watch: ",
            #[cfg(feature = "watch")]
            Component::WatchDryRun => "watch (dry run): ",
        })
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Info => "",
            Level::Warning => "warning: ",
            Level::Error => "error: ",
        })
    }
}

/// The line as it is written, without its newline.
pub(crate) fn line(component: Component, level: Level, text: &str) -> String {
    let text = crate::escape::escape(text);
    crate::redact::net(&format!("pullcheck: {component}{level}{text}")).into_owned()
}

/// Writes one line of the log.
pub(crate) fn write(component: Component, level: Level, text: &str) {
    eprintln!("{}", line(component, level, text));
}

/// An informational line.
pub(crate) fn info(component: Component, text: &str) {
    write(component, Level::Info, text);
}

/// A warning.
pub(crate) fn warning(component: Component, text: &str) {
    write(component, Level::Warning, text);
}

/// An error.
pub(crate) fn error(component: Component, text: &str) {
    write(component, Level::Error, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_with_its_component_and_level_escaped_once() {
        assert_eq!(
            line(Component::Command, Level::Warning, "ns/p\nok: forged"),
            "pullcheck: warning: ns/p\\nok: forged"
        );
        assert_eq!(
            line(Component::Command, Level::Error, "bad \u{1b}[2J"),
            "pullcheck: error: bad \\x1b[2J"
        );
        // Escaping is idempotent on what it made: a value escaped by its caller stays as it was.
        assert_eq!(
            line(Component::Command, Level::Info, "a\\nb"),
            "pullcheck: a\\nb"
        );
    }

    #[cfg(all(feature = "webhook", feature = "watch"))]
    #[test]
    fn the_servers_name_themselves() {
        assert_eq!(
            line(Component::WatchDryRun, Level::Info, "ns/p: would fail"),
            "pullcheck: watch (dry run): ns/p: would fail"
        );
        assert_eq!(
            line(Component::Webhook, Level::Error, "x"),
            "pullcheck: webhook: error: x"
        );
    }
}
