//! The `pullcheck` binary: everything is in the library; this maps its exit code to the process.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(pullcheck::app::run(std::env::args_os()).code())
}
