//! The `harness` command line; all work happens in the library.

// SIGPIPE keeps Rust's default (ignored): a write into a closed pipe fails
// with EPIPE, which the output module takes as "stop printing", so neither a
// reader like `head` nor a child that exits unread can end the process.
fn main() -> std::process::ExitCode {
    harness::main()
}
