//! The `code` rule through the real binary: hostile answers judged without
//! disturbing the harness, other languages without recompiling, the
//! `--unsandboxed` escape hatch, many sandboxes at once, and `harness run`
//! verifying model-written code from a (fake) model.

use std::path::PathBuf;
use std::sync::Arc;

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::Workspace;
use crate::common::{check_examples, root};
use serde_json::{Map, Value, json};

/// A correct solution for every t03 task family at once.
const UNIVERSAL: &str = concat!(
    "```python\n",
    include_str!("fixtures/code/t03_universal.py"),
    "```"
);

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/code").join(name)
}

#[test]
fn hostile_answers_are_judged_and_check_finishes() {
    let (code, out) = check_examples(&fixture("hostile_examples.toml"), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("8/8 examples"), "{out}");
}

/// A sandbox slow to start a program (a loaded machine: each start waits
/// longer than the program's whole wall-clock limit) leaves the verdicts
/// the program's: its time starts with it, not with the setup.
#[test]
fn a_slow_setup_does_not_eat_the_programs_time() {
    let golden = tempfile::tempdir().unwrap();
    let (code, out) = crate::common::run(
        crate::common::harness(&root())
            .env("HARNESS_TEST_SLOW_START_MS", "1500")
            .arg("check")
            .arg(fixture("slow_setup.toml"))
            .arg("--bless")
            .arg("--golden")
            .arg(golden.path()),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2/2 examples"), "{out}");
}

/// The documented shell runner (docs/sandbox.md, "Another language").
fn shell_spec() -> PathBuf {
    root().join("docs/examples/specs/another_language.toml")
}

#[test]
fn another_language_brings_its_runner_without_recompiling() {
    let (code, out) = check_examples(&shell_spec(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2/2 examples"), "{out}");
}

#[test]
fn unsandboxed_runs_warn_every_time() {
    for _ in 0..2 {
        let (code, out) = check_examples(&shell_spec(), &["--unsandboxed"]);
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("WITHOUT isolation"),
            "every unsandboxed run must warn:\n{out}"
        );
    }
    let (_, out) = check_examples(&shell_spec(), &[]);
    assert!(!out.contains("WITHOUT isolation"), "{out}");
}

#[test]
fn many_sandboxes_at_once_share_nothing() {
    let spec = Arc::new(harness::Spec::load(&fixture("hostile_examples.toml")).unwrap());
    // Each run leaves a file and a process behind, then looks for its siblings'.
    let solution = "```python
import os, subprocess
def add(a, b):
    open('mine-%d' % a, 'w').write('x')
    subprocess.Popen(['/bin/sleep', '30'])
    files = sorted(f for f in os.listdir('.') if f.startswith('mine-'))
    procs = [p for p in os.listdir('/proc') if p.isdigit()]
    assert files == ['mine-%d' % a], files
    assert len(procs) <= 4, procs
    return a + b
```";
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let spec = spec.clone();
            std::thread::spawn(move || {
                let mut vars = Map::new();
                vars.insert(
                    "tests".into(),
                    json!([format!("assert add({i}, 1) == {}", i + 1)]),
                );
                spec.verify(solution, &vars)
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        let verdict = t.join().unwrap();
        assert!(verdict.passed, "run {i}: {}", verdict.failure_details());
    }
}

/// A workspace with t03 and a fake model answering with `reply(prompt)`.
fn t03_against(reply: fn(&str) -> String, runs: u32) -> (i32, String, Vec<Value>) {
    let fake = FakeServer::start(move |r| Reply::Text(reply(&r.prompt)));
    let ws = Workspace::with_fake("t03_code_gen.toml", &fake, "concurrency = 4");
    let runs = runs.to_string();
    let (code, out) = ws.run(&["specs/t03_code_gen.toml", "-m", "fake", "--runs", &runs]);
    let journal = ws.last_journal();
    (code, out, journal)
}

#[test]
fn run_verifies_model_code_in_the_sandbox() {
    let (code, out, records) = t03_against(|_| UNIVERSAL.to_owned(), 10);
    assert_eq!(code, 0, "{out}");
    assert_eq!(records.len(), 10, "{out}");
    for r in &records {
        assert_eq!(r["passed"], true, "{r:#}");
        assert_eq!(r["score"].as_f64(), Some(1.0), "{r:#}");
    }
}

#[test]
fn run_survives_hanging_and_crashing_answers() {
    // Loops forever on some tasks, crashes on others, right on the rest.
    fn reply(prompt: &str) -> String {
        if prompt.contains("sum_of") {
            "```python\ndef sum_of_list(numbers):\n    while True: pass\ndef sum_of_digits(n):\n    while True: pass\n```".into()
        } else if prompt.contains("count_") {
            "```python\nimport os\nos.kill(os.getpid(), 11)\n```".into()
        } else {
            UNIVERSAL.into()
        }
    }
    let (code, out, records) = t03_against(reply, 10);
    assert_eq!(code, 0, "{out}");
    assert_eq!(records.len(), 10, "{out}");
    let mut seen = std::collections::BTreeSet::new();
    for r in &records {
        let prompt = r["messages"][1]["content"].as_str().unwrap();
        let failure = r["failure"].as_str().unwrap_or("");
        if prompt.contains("sum_of") {
            assert_eq!(failure, "timeout", "{r:#}");
        } else if prompt.contains("count_") {
            assert_eq!(failure, "runtime_error", "{r:#}");
            assert!(r["detail"].as_str().unwrap().contains("SIGSEGV"), "{r:#}");
        } else {
            assert_eq!(r["passed"], true, "{r:#}");
        }
        seen.insert(failure.to_owned());
    }
    assert!(seen.len() >= 2, "the seed should mix families: {seen:?}");
}
