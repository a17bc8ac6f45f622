//! The README's main command, `harness run specs/` with no model, in a fresh
//! copy of the repository: only the tracked files (what a clone has), with
//! `../shared` beside it as the specs expect. It replays every committed
//! golden transcript offline, so every category must show a number.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{harness, root, run};

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

#[test]
fn the_main_job_replays_every_category_offline_in_a_fresh_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_tracked(&root(), &repo);
    let shared = root().join("../shared").canonicalize().unwrap();
    std::os::unix::fs::symlink(shared, tmp.path().join("shared")).unwrap();

    let (code, out) = run(harness(&repo).args(["run", "specs/", "--no-progress"]));
    assert_eq!(code, 0, "{out}");
    // The summary table marks a cell without results with "—".
    let missing: Vec<&str> = out.lines().filter(|l| l.contains('—')).collect();
    assert!(
        missing.is_empty(),
        "categories without a number:\n{}\n\n{out}",
        missing.join("\n")
    );
    let specs = fs::read_dir(repo.join("specs"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    let golden = fs::read_dir(repo.join("golden")).unwrap().count();
    assert_eq!(golden, specs, "every shipped spec has a golden directory");
    for model in ["smollm2", "gemma3"] {
        for entry in fs::read_dir(repo.join("golden")).unwrap() {
            let dir = entry.unwrap().path();
            assert!(
                dir.join(format!("{model}.jsonl")).is_file(),
                "{} has no transcript of {model}",
                dir.display()
            );
        }
    }
    let reports: Vec<String> = fs::read_dir(repo.join("results/reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for ext in [".md", ".json"] {
        assert!(
            reports.iter().any(|r| r.ends_with(ext)),
            "no {ext} report among {reports:?}\n{out}"
        );
    }
}
