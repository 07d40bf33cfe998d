//! The `websearchd` binary: everything is in the library; this maps its outcome to an exit code.

fn main() -> std::process::ExitCode {
    websearchd::cli::main(std::env::args_os().skip(1).collect())
}
