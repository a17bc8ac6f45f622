//! Every tracked `.rs` file is one `cargo fmt` formats, and is formatted.
//!
//! `cargo fmt` starts from each target's root and follows `mod` lines, so a
//! module declared inside a macro call is never formatted: it drifts
//! unnoticed while `cargo fmt --check` stays quiet. Here rustfmt itself says
//! which files it reached (`-v` prints one `Formatting` line per file), and
//! the tracked files it did not reach, or would change, fail the test.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::root;

/// The tracked `.rs` files, relative to the repository.
fn tracked(repo: &Path) -> BTreeSet<String> {
    let out = Command::new("git")
        .args(["ls-files", "-z", "--", "*.rs"])
        .current_dir(repo)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git ls-files failed");
    out.stdout
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8(s.to_vec()).expect("UTF-8 path"))
        // A file deleted in the work tree but not yet in git is no one's to format.
        .filter(|rel| repo.join(rel).exists())
        .collect()
}

/// What `cargo fmt --check` does in `repo`: the files rustfmt reached
/// (relative to `repo`) and the ones it would change.
fn cargo_fmt_check(repo: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["fmt", "--", "--check", "-v", "-l"])
        .current_dir(repo)
        .output()
        .expect("cargo fmt runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let relative = |path: &str| -> String {
        Path::new(path.trim())
            .strip_prefix(repo)
            .unwrap_or(Path::new(path.trim()))
            .to_string_lossy()
            .into_owned()
    };
    let mut reached = BTreeSet::new();
    let mut changed = BTreeSet::new();
    for line in stdout.lines() {
        if let Some(path) = line.strip_prefix("Formatting ") {
            reached.insert(relative(path));
        } else if line.ends_with(".rs") {
            changed.insert(relative(line));
        }
    }
    assert!(
        out.status.success() || !changed.is_empty(),
        "cargo fmt failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (reached, changed)
}

/// The problems of a tree whose tracked files are `tracked`, given what
/// rustfmt `reached` and would have `changed`: one line each.
fn problems(
    tracked: &BTreeSet<String>,
    reached: &BTreeSet<String>,
    changed: &BTreeSet<String>,
) -> Vec<String> {
    let unreached = tracked
        .difference(reached)
        .map(|f| format!("{f}: `cargo fmt` never reaches it (declare it with a plain `mod` line)"));
    let unformatted = changed
        .iter()
        .map(|f| format!("{f}: not formatted (run `cargo fmt`)"));
    unreached.chain(unformatted).collect()
}

#[test]
fn every_tracked_rust_file_is_reached_by_cargo_fmt_and_formatted() {
    let repo = root();
    let (reached, changed) = cargo_fmt_check(&repo);
    assert!(
        reached.contains("src/lib.rs"),
        "rustfmt -v printed no `Formatting` lines: {reached:?}"
    );
    let problems = problems(&tracked(&repo), &reached, &changed);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check catches both failures, on a scratch crate: a module declared
/// through a macro, and a file rustfmt would change.
#[test]
fn a_module_behind_a_macro_and_a_misformatted_file_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let write = |rel: &str, text: &str| {
        let path = repo.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "Cargo.toml",
        "[package]\nname = \"scratch\"\nversion = \"0.0.0\"\nedition = \"2024\"\n",
    );
    write(
        "src/lib.rs",
        "mod plain;\nmacro_rules! hidden {\n    () => {\n        mod hidden;\n    };\n}\nhidden!();\n",
    );
    write("src/plain.rs", "pub fn f( )->u8{1}\n");
    write("src/hidden.rs", "pub fn g() -> u8 {\n    2\n}\n");
    let (reached, changed) = cargo_fmt_check(repo);
    let tracked: BTreeSet<String> = ["src/lib.rs", "src/plain.rs", "src/hidden.rs"]
        .into_iter()
        .map(String::from)
        .collect();
    let problems = problems(&tracked, &reached, &changed);
    assert_eq!(
        problems,
        [
            "src/hidden.rs: `cargo fmt` never reaches it (declare it with a plain `mod` line)",
            "src/plain.rs: not formatted (run `cargo fmt`)",
        ],
        "reached {reached:?}, changed {changed:?}"
    );
}
