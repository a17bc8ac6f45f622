//! Helpers shared by the integration tests: run the real binary.

#![allow(dead_code)]

pub mod browser;
pub mod documents;
pub mod fake_server;
pub mod managed;
pub mod parquet_file;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `harness` command with a clean, colorless, non-CI environment.
pub fn harness(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.current_dir(cwd)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    for var in harness::golden::CI_VARIABLES
        .iter()
        .chain(&["CLICOLOR_FORCE"])
    {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs a command and returns (exit code, stdout + stderr).
pub fn run(cmd: &mut Command) -> (i32, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("the harness binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    assert!(!text.contains("panicked"), "the binary panicked:\n{text}");
    (status.code().unwrap_or(-1), text)
}
