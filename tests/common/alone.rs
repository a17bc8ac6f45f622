//! One test in a process of its own: for a test that sets or measures
//! what is process-wide (its environment, its peak memory), which other
//! tests running beside it in this binary would disturb or see.
//!
//! The test begins with `if !in_own_process(..) { return; }`: in the suite's
//! process that starts this binary again, filtered to exactly that test, and
//! returns once the child passed; in the child the test goes on, with the
//! process to itself.

use std::process::{Command, Stdio};

/// Set in the child to the name of the test it runs.
const ALONE: &str = "HARNESS_TEST_ALONE";

/// The libtest name of `function` in the module `module_path` (`module_path!()`).
pub fn test_name(module_path: &str, function: &str) -> String {
    let module = module_path.split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{function}")
}

/// Whether this is the process started for `test` alone; if not, first runs
/// `test` in a new process of this binary with `env` added to its
/// environment and asserts that it ran there and passed.
pub fn in_own_process(test: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var(ALONE).is_ok_and(|t| t == test) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([test, "--exact", "--include-ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(ALONE, test)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("the test binary runs again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(
        out.status.success(),
        "{test} failed in its own process:\n{text}"
    );
    // A name that matches nothing runs nothing and still succeeds.
    assert!(
        text.contains("test result: ok. 1 passed"),
        "{test} did not run in its own process:\n{text}"
    );
    false
}
