//! The `harness` command line; all work happens in the library.

fn main() -> std::process::ExitCode {
    harness::cli::main()
}
