//! The `harness` command line; all work happens in the library.

fn main() -> std::process::ExitCode {
    // Die quietly on a closed pipe (`harness show ... | head`), as Unix tools do,
    // instead of panicking inside print!.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    harness::main()
}
