//! Files that survive a kill: the harness is SIGKILLed while it rewrites each
//! file it owns — a run's `plan.json` (on `--resume`), the Markdown report and
//! a raw JSON report, golden instances under `--bless`, a `.new` review file,
//! and a golden transcript under `run --bless` — at the worst moment, with the
//! new content written and not yet renamed into place (the
//! `HARNESS_TEST_STALL_WRITE` hook). Each file must then be the old one (or
//! absent when it is new), never torn, and the next command must complete
//! and leave the new one. Runs replay the committed transcripts: no server.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A workspace with t06 and its golden files (the replay model answers from them).
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::common::root();
    std::fs::create_dir_all(dir.path().join("specs")).unwrap();
    std::fs::copy(
        root.join("specs/t06_mathematics.toml"),
        dir.path().join("specs/t06_mathematics.toml"),
    )
    .unwrap();
    let golden = dir.path().join("golden/t06_mathematics");
    std::fs::create_dir_all(&golden).unwrap();
    for f in ["instances.jsonl", "smollm2.jsonl", "gemma3.jsonl"] {
        std::fs::copy(root.join("golden/t06_mathematics").join(f), golden.join(f)).unwrap();
    }
    dir
}

fn harness(ws: &Path, args: &[&str]) -> Command {
    let mut cmd = crate::common::harness(ws);
    cmd.args(args);
    cmd
}

fn finish(cmd: &mut Command) -> (i32, String) {
    crate::common::run(cmd)
}

/// Starts `cmd` with the stall hook on files named like `target`, waits until
/// it stalls before the rename, and SIGKILLs it.
fn kill_while_writing(mut cmd: Command, ws: &Path, target: &str) {
    let err = ws.join("stall.err");
    let mut child: Child = cmd
        .env("HARNESS_TEST_STALL_WRITE", target)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        if text.contains("stalling before the rename") {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("finished ({status}) without writing a `{target}` file:\n{text}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never wrote `{target}`:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Files under `dir` whose name contains `part`, leaving out hidden temporary files.
fn files_named(dir: &Path, part: &str) -> Vec<PathBuf> {
    let mut out = crate::common::files_under(dir);
    out.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name.contains(part) && !name.starts_with('.')
    });
    out
}

fn run_dir(ws: &Path) -> PathBuf {
    let runs = ws.join("results/runs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.pop().unwrap()
}

const RUN: &[&str] = &["run", "specs", "--no-progress", "--format", "json"];

#[test]
fn a_kill_while_the_plan_is_rewritten_leaves_a_resumable_run() {
    let ws = workspace();
    let (code, out) = finish(&mut harness(ws.path(), RUN));
    assert_eq!(code, 0, "{out}");
    let dir = run_dir(ws.path());
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let plan = std::fs::read(dir.join("plan.json")).unwrap();
    let resume = ["run", "--resume", &id, "--no-progress"];
    kill_while_writing(harness(ws.path(), &resume), ws.path(), "plan.json");
    assert_eq!(
        std::fs::read(dir.join("plan.json")).unwrap(),
        plan,
        "the old plan, whole"
    );
    let (code, out) = finish(&mut harness(ws.path(), &resume));
    assert_eq!(code, 0, "the run resumes after the kill:\n{out}");
    let _: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("plan.json")).unwrap()).unwrap();
}

#[test]
fn a_kill_while_reports_are_written_leaves_no_torn_report() {
    for target in ["report_", "smollm2_"] {
        let ws = workspace();
        kill_while_writing(harness(ws.path(), RUN), ws.path(), target);
        let reports = ws.path().join("results");
        assert_eq!(
            files_named(&reports, target),
            Vec::<PathBuf>::new(),
            "no half report"
        );
        let id = run_dir(ws.path())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let (code, out) = finish(&mut harness(
            ws.path(),
            &["run", "--resume", &id, "--no-progress", "--format", "json"],
        ));
        assert_eq!(code, 0, "{out}");
        for file in files_named(&reports, target) {
            let text = std::fs::read_to_string(&file).unwrap();
            if file.extension().is_some_and(|e| e == "json") {
                let _: serde_json::Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            } else {
                assert!(text.contains("t06_mathematics"), "{}", file.display());
            }
        }
    }
}

#[test]
fn a_kill_while_golden_files_are_written_leaves_the_old_ones() {
    let ws = workspace();
    let spec = ws.path().join("specs/t06_mathematics.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text.replacen("runs = 10", "runs = 12", 1)).unwrap();
    let instances = ws.path().join("golden/t06_mathematics/instances.jsonl");
    let old = std::fs::read(&instances).unwrap();

    // A `.new` file for review: absent after the kill, whole after a rerun.
    let check = ["check", "specs"];
    kill_while_writing(harness(ws.path(), &check), ws.path(), "instances.jsonl.new");
    assert!(files_named(ws.path(), ".new").is_empty());
    let (code, out) = finish(&mut harness(ws.path(), &check));
    assert_eq!(code, 1, "{out}");
    let pending = std::fs::read_to_string(instances.with_extension("jsonl.new")).unwrap();
    assert_eq!(pending.lines().count(), 12);

    // `--bless`: the old golden file survives the kill; the rerun writes the new one.
    let bless = ["check", "specs", "--bless"];
    kill_while_writing(harness(ws.path(), &bless), ws.path(), "instances.jsonl");
    assert_eq!(std::fs::read(&instances).unwrap(), old);
    let (code, out) = finish(&mut harness(ws.path(), &bless));
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(&instances).unwrap(), pending);

    // A golden transcript under `run --bless`.
    let transcript = ws.path().join("golden/t06_mathematics/smollm2.jsonl");
    let old = std::fs::read(&transcript).unwrap();
    let run = ["run", "specs", "--no-progress", "--bless", "--allow-errors"];
    kill_while_writing(harness(ws.path(), &run), ws.path(), "smollm2.jsonl");
    assert_eq!(
        std::fs::read(&transcript).unwrap(),
        old,
        "the old transcript, whole"
    );
    let (code, out) = finish(&mut harness(ws.path(), &run));
    assert_eq!(code, 0, "{out}");
    let lines = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        lines
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );
}
