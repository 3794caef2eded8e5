//! The docs that are made from the code, and the places that list exit codes, kept honest:
//! `docs/reference/flags.md` is generated from the clap definitions (a test fails when the
//! committed page differs; `PULLCHECK_BLESS=1` rewrites it), `-h` stays short, and the exit-code
//! tables of the README and the reference, `check --help` and `examples/debug-pod.sh` list
//! exactly the codes of `ExitCode`.

use clap::{Arg, ArgAction, Command};
use pullcheck::ExitCode;
use std::path::{Path, PathBuf};
use std::process::Command as Process;

/// The page, relative to the repository.
const FLAGS_PAGE: &str = "docs/reference/flags.md";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every exit code, in order. The match makes a new variant a compile error here, so that the
/// places that list exit codes are looked at when one is added.
fn exit_codes() -> Vec<ExitCode> {
    let all = [
        ExitCode::Ok,
        ExitCode::Usage,
        ExitCode::NotFound,
        ExitCode::WrongPlatform,
        ExitCode::AccessRefused,
        ExitCode::Unreachable,
        ExitCode::WontStart,
        ExitCode::Unverifiable,
    ];
    for code in all {
        match code {
            ExitCode::Ok
            | ExitCode::Usage
            | ExitCode::NotFound
            | ExitCode::WrongPlatform
            | ExitCode::AccessRefused
            | ExitCode::Unreachable
            | ExitCode::WontStart
            | ExitCode::Unverifiable => {}
            // `pullcheck doctor`'s own "a check said no", which `check` never gives: listed
            // in `doctor --help` and docs/doctor.md, not in the tables of `check`'s codes.
            ExitCode::Unhealthy => {}
        }
    }
    all.to_vec()
}

/// Compares a generated page with the committed one, or writes it with `PULLCHECK_BLESS=1`.
fn bless_or_compare(relative: &str, generated: &str) {
    let path = repo().join(relative);
    if std::env::var_os("PULLCHECK_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "{relative} differs from what the code generates (first at line {}): \
             run `PULLCHECK_BLESS=1 cargo test --test it docs_flags` and commit the page\n\
             committed: {:?}\ngenerated: {:?}",
            first + 1,
            committed.lines().nth(first),
            generated.lines().nth(first)
        );
    }
}

/// One table cell: one line, with `|` escaped.
fn cell(text: &str) -> String {
    let joined = text
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    joined.replace('|', "\\|")
}

/// How a flag is written: `-o, --output <OUTPUT>`, `IMAGE...`, `-- CHECK_ARGS...`.
fn spelling(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let takes_value = matches!(arg.get_action(), ArgAction::Set | ArgAction::Append);
    if arg.is_positional() {
        let many = matches!(arg.get_action(), ArgAction::Append);
        let dots = if many { "..." } else { "" };
        return if arg.is_last_set() {
            format!("-- {value}{dots}")
        } else {
            format!("{value}{dots}")
        };
    }
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let mut text = names.join(", ");
    if takes_value {
        let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
        if optional {
            text.push_str(&format!(" [{value}]"));
        } else {
            text.push_str(&format!(" {value}"));
        }
    }
    if let Some(aliases) = arg.get_visible_aliases() {
        for alias in aliases {
            text.push_str(&format!("`, `--{alias}"));
        }
    }
    text
}

/// The page for one subcommand.
fn subcommand_page(out: &mut String, parent: &str, sub: &mut Command) {
    let name = sub.get_name().to_string();
    out.push_str(&format!("## `{parent} {name}`\n\n"));
    let about = sub
        .get_long_about()
        .or(sub.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    out.push_str(about.trim());
    out.push_str("\n\n");
    let usage = sub.render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage: ");
    out.push_str(&format!("```\n{usage}\n```\n\n"));

    let args: Vec<&Arg> = sub
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let mut headings: Vec<Option<&str>> = Vec::new();
    for a in &args {
        if !headings.contains(&a.get_help_heading()) {
            headings.push(a.get_help_heading());
        }
    }
    for heading in headings {
        let heading = heading.unwrap_or("Arguments");
        out.push_str(&format!("### {name}: {heading}\n\n"));
        out.push_str("| flag | environment variable | default | values | meaning |\n");
        out.push_str("|---|---|---|---|---|\n");
        for a in args
            .iter()
            .filter(|a| a.get_help_heading().unwrap_or("Arguments") == heading)
        {
            let env = a
                .get_env()
                .map(|e| format!("`{}`", e.to_string_lossy()))
                .unwrap_or_else(|| "—".to_string());
            let default: Vec<String> = a
                .get_default_values()
                .iter()
                .map(|v| format!("`{}`", v.to_string_lossy()))
                .collect();
            let default = if default.is_empty() {
                "—".to_string()
            } else {
                default.join(", ")
            };
            let values: Vec<_> = a
                .get_possible_values()
                .into_iter()
                .filter(|v| !v.is_hide_set())
                .collect();
            let values_cell = if values.is_empty() {
                "—".to_string()
            } else {
                values
                    .iter()
                    .map(|v| format!("`{}`", v.get_name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            // The long help, without the `[env: …]` line that `--help` adds (its own column).
            let mut meaning = a
                .get_long_help()
                .or(a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            if let Some(at) = meaning.rfind("\n\n[env: ") {
                meaning.truncate(at);
            }
            // Each value's own words, unless the flag's text already explains them.
            let explained: Vec<String> = values
                .iter()
                .filter(|v| !meaning.contains(&format!("`{}`", v.get_name())))
                .filter_map(|v| Some(format!("`{}`: {}", v.get_name(), v.get_help()?)))
                .collect();
            if !explained.is_empty() {
                meaning.push_str(&format!(" ({})", explained.join("; ")));
            }
            out.push_str(&format!(
                "| `{}` | {env} | {default} | {values_cell} | {} |\n",
                spelling(a),
                cell(&meaning)
            ));
        }
        out.push('\n');
    }
}

/// `docs/reference/flags.md`, from the command line `main` parses.
fn flags_page() -> String {
    let mut cmd = pullcheck::cli::command();
    cmd.build();
    let mut out = String::from(
        "# Flags\n\n\
         Every subcommand and flag of `pullcheck`, with the environment variable it reads, its \
         default and the values it takes. Generated from the clap definitions in `src/cli/mod.rs` \
         by `tests/it/docs_flags.rs`: do not edit by hand; after a change of the flags run \
         `PULLCHECK_BLESS=1 cargo test --test it docs_flags` and commit the page. A test fails \
         while the page differs from the code.\n\n\
         An environment variable set to the empty string counts as unset for a choice that can \
         be turned off (`--termination-log`, `--node`, inject's ConfigMaps). Exit codes, \
         statuses and reasons: [reasons.md](reasons.md).\n\n## Contents\n\n",
    );
    let names: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect();
    for name in &names {
        let sub = cmd.find_subcommand(name).unwrap();
        out.push_str(&format!("- [`pullcheck {name}`](#pullcheck-{name})\n"));
        let mut headings: Vec<&str> = Vec::new();
        for a in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            let h = a.get_help_heading().unwrap_or("Arguments");
            if !headings.contains(&h) && !matches!(a.get_id().as_str(), "help" | "version") {
                headings.push(h);
            }
        }
        for h in headings {
            let anchor = format!("{name}-{}", h.to_lowercase().replace(' ', "-"));
            out.push_str(&format!("  - [{h}](#{anchor})\n"));
        }
    }
    out.push('\n');
    for name in &names {
        let sub = cmd.find_subcommand_mut(name).unwrap();
        subcommand_page(&mut out, "pullcheck", sub);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[test]
fn the_flag_reference_is_generated_from_the_command_line() {
    let page = flags_page();
    for flag in [
        "--pod-spec",
        "--concurrency",
        "--job-failure-policy",
        "PULLCHECK_TIMEOUT",
    ] {
        assert!(page.contains(flag), "{flag} missing from the page");
    }
    assert!(!page.contains("test-resolve"), "hidden flags stay out");
    bless_or_compare(FLAGS_PAGE, &page);
}

/// `pullcheck SUBCOMMAND ARG` run as a user would, its stdout a pipe (clap's 100 columns).
fn help(subcommand: &str, arg: &str) -> String {
    let out = Process::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args([subcommand, arg])
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{subcommand} {arg}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn short_help_is_short_and_long_help_has_the_examples() {
    for subcommand in ["check", "inject"] {
        let short = help(subcommand, "-h");
        let lines = short.lines().count();
        assert!(lines < 100, "{subcommand} -h has {lines} lines:\n{short}");
        assert!(!short.contains("[env: "), "{subcommand} -h: {short}");
        let long = help(subcommand, "--help");
        assert!(long.len() > short.len() * 2, "{subcommand} --help");
        assert!(long.contains("[env: PULLCHECK_"), "{subcommand} --help");
        assert!(long.contains("Examples:"), "{subcommand} --help");
    }
    let check = help("check", "-h");
    for heading in [
        "Images:",
        "Credentials:",
        "The node:",
        "Routing:",
        "Output:",
        "Limits:",
    ] {
        assert!(
            check.lines().any(|l| l == heading),
            "{heading} in check -h:\n{check}"
        );
    }
    let long = help("check", "--help");
    for example in [
        "pullcheck check nginx:1.27",
        "--pod-spec -",
        "-o json",
        "Exit codes:",
    ] {
        assert!(long.contains(example), "{example} in check --help");
    }
}

/// The codes a list of lines names at their start (`| 3 |`, `#   3  …`), in order.
fn codes_listed<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<u8> {
    lines
        .filter_map(|l| {
            let l = l.trim_start_matches(['#', '|', ' ']);
            let digits: String = l.chars().take_while(char::is_ascii_digit).collect();
            let rest = &l[digits.len()..];
            (!digits.is_empty() && (rest.starts_with(' ') || rest.starts_with('|')))
                .then(|| digits.parse().ok())
                .flatten()
        })
        .collect()
}

fn read(relative: &str) -> String {
    let path: PathBuf = repo().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_list_of_exit_codes_lists_every_code() {
    let want: Vec<u8> = exit_codes().into_iter().map(ExitCode::code).collect();
    // The tables of the README and the reference: the rows under their `| code |` header.
    for page in ["README.md", "docs/reference/README.md"] {
        let text = read(page);
        let table = text
            .lines()
            .skip_while(|l| !l.starts_with("| code |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'));
        assert_eq!(codes_listed(table), want, "{page}'s exit-code table");
    }
    // The debug pod's usage: the lines after "The pod's exit code is pullcheck's:".
    let script = read("examples/debug-pod.sh");
    let block = script
        .lines()
        .skip_while(|l| !l.contains("exit code is pullcheck's"))
        .skip(1)
        .take_while(|l| l.starts_with("#   "));
    assert_eq!(
        codes_listed(block),
        want,
        "examples/debug-pod.sh lists the exit codes"
    );
    // `--help`'s table comes from the same text the tests of the report check.
    let help = help("check", "--help");
    let block = help
        .lines()
        .skip_while(|l| *l != "Exit codes:")
        .skip(1)
        .take_while(|l| l.starts_with("  "));
    assert_eq!(codes_listed(block), want, "check --help");
}
