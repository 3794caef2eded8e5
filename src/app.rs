//! The whole program behind `main`: parse the command line, validate it, check, write the
//! report and the termination message, and return the exit code. Callable in-process by tests.

use crate::check::check_until;
use crate::cli::{CheckArgs, Cli, Command, DEFAULT_INJECT_IMAGE, InjectArgs, OutputFormat};
use crate::config::{Config, InjectConfig};
use crate::inject::inject_valid;
use crate::log::{self, Component};
use crate::report::{ExitCode, Layout, Report, render_text, termination_message};
use clap::FromArgMatches;
use std::ffi::OsString;
use std::io::Write;

/// Runs pullcheck with these arguments (the first is the program name).
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    register_secret_arguments(&args);
    let parsed = crate::cli::command()
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        // --help and --version come this way too, with exit code 0.
        Err(e) if e.exit_code() == 0 => {
            let _ = e.print();
            return ExitCode::Ok;
        }
        Err(e) => {
            // clap's own errors quote arguments (`unexpected argument '--pa:ss' found` when a
            // password starts with `--`): the secret ones are registered above.
            eprint!("{}", crate::redact::foreign(&e.to_string()));
            return ExitCode::Usage;
        }
    };
    match cli.command {
        Command::Check(args) => run_check(args),
        Command::Inject(args) => run_inject(args),
        #[cfg(feature = "webhook")]
        Command::Webhook(args) => crate::cluster::webhook::run(args),
        #[cfg(feature = "watch")]
        Command::Watch(args) => crate::cluster::watch::run(args),
        #[cfg(any(feature = "webhook", feature = "watch"))]
        Command::Doctor(args) => crate::cluster::doctor::run(args),
    }
}

fn run_inject(args: InjectArgs) -> ExitCode {
    let source = crate::config::inject_source(&args.file);
    let input = match read_manifests(&args.file) {
        Ok(text) => text,
        Err(e) => {
            log::error(Component::Command, &format!("{source}: {e}"));
            return ExitCode::Usage;
        }
    };
    let (config, valid) = match InjectConfig::checked(args) {
        Ok(checked) => checked,
        Err(errors) => {
            for e in &errors.0 {
                log::error(Component::Command, &e.to_string());
            }
            return ExitCode::Usage;
        }
    };
    match inject_valid(&input, &config.source, &valid) {
        Ok(done) => {
            // The default image's warning is said last and framed: it concerns every pod
            // written, and a warning among the others scrolls past.
            let (loud, others): (Vec<&String>, Vec<&String>) = done
                .warnings
                .iter()
                .partition(|w| config.default_image && w.contains(DEFAULT_INJECT_IMAGE));
            for w in others {
                log::warning(Component::Command, &w.to_string());
            }
            for n in &done.notes {
                log::info(Component::Command, &format!("note: {n}"));
            }
            for w in loud {
                let rule = "=".repeat(72);
                log::warning(Component::Command, &rule.to_string());
                log::warning(
                    Component::Command,
                    &format!("--image left at its default: {w}"),
                );
                log::warning(Component::Command, &rule.to_string());
            }
            let _ = std::io::stdout().lock().write_all(done.output.as_bytes());
            ExitCode::Ok
        }
        Err(e) => {
            log::error(Component::Command, &e.to_string());
            ExitCode::Usage
        }
    }
}

fn read_manifests(path: &std::path::Path) -> Result<String, crate::input::InputError> {
    crate::input::read_input(path, &mut std::io::stdin().lock())
}

fn run_check(args: CheckArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log::error(
                Component::Command,
                &format!("cannot start the async runtime: {e}"),
            );
            return ExitCode::Usage;
        }
    };
    // The handlers are installed before any work (reading a 1 MiB pull secret, matching
    // 10,000 images): a signal that comes while that work runs is kept, and the check then
    // stops at once with its report, rather than the default action killing the process
    // without a termination message.
    let signals = {
        let _entered = runtime.enter();
        Signals::install()
    };
    register_environment_secrets();
    let config = match Config::from_args(args, &mut std::io::stdin().lock()) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors.0 {
                log::error(Component::Command, &e.to_string());
            }
            log::info(
                Component::Command,
                "nothing was checked (exit 2); see `pullcheck check --help`",
            );
            return ExitCode::Usage;
        }
    };
    for w in &config.warnings {
        log::warning(Component::Command, &w.to_string());
    }
    let mut report = runtime.block_on(check_until(
        &config.images,
        &config.options,
        signals.stopped(),
    ));
    // Blocking threads may still be inside a `getaddrinfo` that never returns (a silent DNS
    // server): dropping the runtime would wait for them. Leave them; the process ends when
    // this returns.
    runtime.shutdown_background();
    report.fit_to(config.place);
    // On a terminal, the verdicts shown while the check ran give way to the report.
    config.options.events.finish();
    // The run's own warnings are about the node's images: news only when a look-up was asked.
    if config.node_lookup_asked {
        for w in &report.warnings {
            log::warning(Component::Command, &w.to_string());
        }
    }
    // One line each for the failures that do not count: the pod goes on, and its log says
    // what was not verified and why (the report and the termination message say it too).
    for r in &report.images {
        if let (false, crate::report::Counted::No(why)) = (r.is_ok(), r.counted) {
            log::warning(
                Component::Command,
                &format!(
                    "{} not counted ({}): {} {}",
                    r.image,
                    why.as_str(),
                    r.status.as_str(),
                    r.reason
                ),
            );
        }
    }
    write_outputs(&config, &report);
    report.exit_code
}

/// The flags whose value is a secret.
const SECRET_FLAGS: [&str; 1] = ["--creds"];

/// Registers the values of secret flags ([`SECRET_FLAGS`], as `--creds V` and `--creds=V`)
/// and their password part before clap reads them, so that no error of clap's shows them.
fn register_secret_arguments(args: &[OsString]) {
    let mut next_is_secret = false;
    for arg in args {
        let arg = arg.to_string_lossy();
        let value = if next_is_secret {
            next_is_secret = false;
            Some(&arg[..])
        } else if arg == "--" {
            return;
        } else if SECRET_FLAGS.contains(&&arg[..]) {
            next_is_secret = true;
            None
        } else {
            SECRET_FLAGS
                .iter()
                .find_map(|flag| arg.strip_prefix(flag)?.strip_prefix('='))
        };
        if let Some(value) = value {
            crate::redact::register(value);
            if let Some((_, password)) = value.split_once(':') {
                crate::redact::register(password);
            }
        }
    }
}

/// The environment's cloud credentials: values and the files that hold tokens.
const SECRET_VARIABLES: [&str; 3] = [
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
];
const SECRET_FILE_VARIABLES: [&str; 3] = [
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AZURE_FEDERATED_TOKEN_FILE",
];

/// Registers the cloud credentials the environment holds before anything is written. A cloud
/// provider reads them only when a registry of its cloud is checked, after other images'
/// verdicts (and `--verbose` lines) may have been written: an image name that held one (a
/// token pasted into a pod spec) would have shown it. The other secrets are registered before
/// any line: pull secrets and `--creds` as they are read, hosts.toml headers with the
/// configuration, the service-account token before the node lookup (which comes before any
/// verdict); what servers and plugins answer is new to the run, so no earlier line can hold
/// it. The files are read as the providers read them (a regular file of at most 64 KiB; one
/// that cannot be read is the provider's to report).
fn register_environment_secrets() {
    for name in SECRET_VARIABLES {
        if let Some(value) = std::env::var_os(name) {
            crate::redact::register(&value.to_string_lossy());
        }
    }
    for name in SECRET_FILE_VARIABLES {
        if let Some(path) = std::env::var_os(name).filter(|p| !p.is_empty()) {
            let _registered = crate::credentials::cloud::read_token_file(&path.to_string_lossy());
        }
    }
}

/// SIGTERM (the kubelet stopping the pod) and SIGINT, caught so that a stopped check still
/// writes its report and termination message.
struct Signals(Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>);

impl Signals {
    /// Installs the handlers; needs the runtime entered.
    fn install() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Signals(Some((term, int))),
            // Without handlers the default action (exit) stays.
            _ => Signals(None),
        }
    }

    /// Completes on the first signal, with its name.
    async fn stopped(self) -> String {
        let Some((mut term, mut int)) = self.0 else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM".to_string(),
            _ = int.recv() => "SIGINT".to_string(),
        }
    }
}

fn write_outputs(config: &Config, report: &Report) {
    let out = match config.output {
        OutputFormat::Json => {
            let mut s = report.to_json();
            s.push('\n');
            s
        }
        OutputFormat::Text => {
            use std::io::IsTerminal;
            let layout = if std::io::stdout().is_terminal() {
                Layout::Terminal
            } else {
                Layout::Lines
            };
            render_text(report, config.quiet, layout)
        }
    };
    // One write of the whole report; a closed stdout (a pipe to `head`) is not an error. The
    // fields that hold foreign text were scrubbed when they were made; the net is for the
    // secrets no word can be.
    let out = crate::redact::net(&out);
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if let Some(path) = &config.termination_log {
        let limit = config.termination_max;
        let message = termination_message(report, limit);
        // `<redacted>` can be longer than a short secret: cut again to the same limit.
        let mut message = crate::redact::net(&message).into_owned();
        if message.len() > limit {
            let mut end = limit;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
        }
        if let Err(e) = std::fs::write(path, message.as_bytes()) {
            log::warning(
                Component::Command,
                &format!(
                    "cannot write the termination message to {}: {e}",
                    path.display()
                ),
            );
        }
    }
}
