//! Helpers shared by the integration tests: run the real binary, fake what
//! must fail on cue, and guard what the tests share in this one process.

pub mod alone;
pub mod browser;
pub mod documents;
pub mod fake_server;
pub mod golden_lines;
pub mod locks;
pub mod managed;
pub mod openapi;
pub mod parquet_file;
pub mod workspace;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `harness` command with a clean, colorless, non-CI environment in the C
/// locale, so reports are in English whatever the machine's locale (a test
/// that wants another sets `LANG` again, or passes `--lang`).
pub fn harness(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("LANG", "C")
        .stdin(Stdio::null());
    for var in harness::CI_VARIABLES
        .iter()
        .chain(&["CLICOLOR_FORCE", "LC_ALL", "LC_MESSAGES"])
    {
        cmd.env_remove(var);
    }
    cmd
}

/// `harness [EXTRA] check SPEC --bless` against a fresh golden directory, so
/// only the spec's own examples decide; returns (exit code, output).
pub fn check_examples(spec: &Path, extra: &[&str]) -> (i32, String) {
    let golden = tempfile::tempdir().unwrap();
    let mut cmd = harness(&root());
    cmd.args(extra)
        .arg("check")
        .arg(spec)
        .arg("--bless")
        .arg("--golden")
        .arg(golden.path());
    run(&mut cmd)
}

/// Starts a command with its output discarded, for a process a test stops
/// or waits on itself (a run killed midway, a server).
pub fn spawn_quiet(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
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

/// Runs a command, which must exit `code` and print each of `wanted`:
/// stdout + stderr.
pub fn expect(cmd: &mut Command, code: i32, wanted: &[&str]) -> String {
    let (got, out) = run(cmd);
    assert_eq!(got, code, "{out}");
    for text in wanted {
        assert!(out.contains(text), "no {text:?} in:\n{out}");
    }
    out
}

/// `var` as `scripts/test.sh` exports it for the real-server tests: `None`
/// (the test skips) when it is unset, a failure when `HARNESS_E2E` is set.
pub fn e2e_var(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Some(value),
        _ => {
            assert!(
                std::env::var("HARNESS_E2E").is_err(),
                "HARNESS_E2E is set but {var} is not: run scripts/test.sh"
            );
            eprintln!("skipping: {var} is not set (scripts/test.sh sets it)");
            None
        }
    }
}

/// The newest report in `results/reports` named `PREFIX*.EXT`, read.
pub fn report(results: &Path, prefix: &str, ext: &str) -> String {
    let dir = results.join("reports");
    let suffix = format!(".{ext}");
    let newest = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(&suffix)
        })
        .max()
        .unwrap_or_else(|| panic!("no {prefix}*{suffix} in {}", dir.display()));
    std::fs::read_to_string(newest).unwrap()
}

/// Every file under `dir` and its subfolders, sorted (none when `dir` does
/// not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The string `key` of each of `items` (JSON records, lines or messages),
/// in order.
pub fn strings<'a>(
    items: impl IntoIterator<Item = &'a serde_json::Value>,
    key: &str,
) -> Vec<&'a str> {
    let string = |item: &'a serde_json::Value| {
        item[key]
            .as_str()
            .unwrap_or_else(|| panic!("no string `{key}` in {item}"))
    };
    items.into_iter().map(string).collect()
}

/// Copies the folder tree `from` to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, target).unwrap();
        }
    }
}

/// The Python programs of a fixture suite in `dir`, sorted; files whose name
/// starts with `_` are the suite's helpers, not members. Fails when the suite
/// has fewer than `at_least`, so a lost fixture cannot pass unnoticed.
pub fn python_suite(dir: &Path, at_least: usize) -> Vec<PathBuf> {
    let mut suite: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('_'))
        .collect();
    suite.sort();
    let found = suite.len();
    assert!(found >= at_least, "{}: {found} programs", dir.display());
    suite
}

/// A fresh copy of the repository in `tmp/repo`, with nothing beside it: only
/// the files git tracks (what a clone has), so no `results/`, no `.new`
/// files, no local `harness.toml`. Returns `tmp/repo`.
pub fn fresh_copy(tmp: &Path) -> PathBuf {
    let repo = tmp.join("repo");
    copy_tracked(&root(), &repo);
    repo
}

/// Copies the files git tracks under `from` to `to`, nothing else: no
/// `results/`, no `.new` files, no local `harness.toml`.
fn copy_tracked(from: &Path, to: &Path) {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(from)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git ls-files failed");
    for rel in out.stdout.split(|&b| b == 0).filter(|s| !s.is_empty()) {
        let rel = std::str::from_utf8(rel).expect("UTF-8 path");
        let source = from.join(rel);
        // A file deleted in the work tree but not yet in git: a clone has it, we cannot.
        if !source.exists() {
            continue;
        }
        let target = to.join(rel);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(&source, &target).unwrap();
    }
}
