//! Specs that would stall: every `stall_*.toml` of the malformed corpus makes
//! both `harness check` and `harness run` end with exit code 2 and the error
//! at its `# expect:` location in under 5 s. The run names a model on a
//! loopback port where nothing listens: it must fail before asking it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the issue asks: a stalling spec ends in under this.
const LIMIT: Duration = Duration::from_secs(5);

fn stalling_specs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/malformed");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("stall_"))
        })
        .collect();
    files.sort();
    files
}

/// The `LINE:COL` of the fixture's first `# expect:` directive.
fn expected_location(spec: &Path) -> String {
    let text = std::fs::read_to_string(spec).unwrap();
    let first = text.lines().next().unwrap();
    let rest = first.strip_prefix("# expect: ").expect("a directive first");
    let location = rest.split(' ').next().unwrap();
    format!("{}:{location}", spec.display())
}

/// Runs the binary with `args` in a fresh directory, killing it after 20 s;
/// returns (exit code, output, elapsed).
fn harness(args: &[&str]) -> (Option<i32>, String, Duration) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .current_dir(tmp.path())
        .env("NO_COLOR", "1")
        .env("CI", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(tmp.path().join("err.txt")).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(tmp.path().join("err.txt")).unwrap_or_default();
    let text = format!("{stdout}{stderr}");
    (status, text, elapsed)
}

#[test]
fn stalling_specs_fail_fast_in_check_and_run_with_a_located_error() {
    let specs = stalling_specs();
    assert!(specs.len() >= 6, "the corpus lost its stalling specs");
    let mut problems = Vec::new();
    for spec in &specs {
        let path = spec.to_str().unwrap();
        let location = expected_location(spec);
        let check = harness(&["check", path, "--golden", "golden"]);
        let run = harness(&[
            "run",
            path,
            "-m",
            "openai:never-asked@http://127.0.0.1:9/v1",
            "--no-progress",
        ]);
        for (what, (code, output, elapsed)) in [("check", check), ("run", run)] {
            if code != Some(2) || elapsed >= LIMIT || !output.contains(&location) {
                problems.push(format!(
                    "{what} {path}: exit {code:?} after {elapsed:?}, expected 2 within {LIMIT:?} at {location}:\n{output}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
