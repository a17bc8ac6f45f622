//! The forgery suite: answers that try to pass the `code` rule's tests
//! without computing their values. Each attack in
//! `tests/fixtures/forgery/attacks/` defines the functions of the target
//! specs (`max_of_two` in t03's `assert f(x) == y` style, `decode` in
//! HumanEval's `check(candidate)` style, with a prelude holding a helper the
//! tests call; `mean` and `evens` in tests that judge with built-ins such as
//! `abs` and `len`) and must score 0 through `harness check` (as an example)
//! and `harness run` (as a fake model's answer); the honest answer must pass.
//!
//! The attacks in `tests/fixtures/forgery/guarded/` replace what a test
//! judges with (a built-in, a module), as they could in plain Python: they
//! score 0 under `guard = true`, and pass without it, as in plain Python.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{check_examples, python_suite, root};

const SPECS: [&str; 3] = [
    "assert_style.toml",
    "check_style.toml",
    "builtin_style.toml",
];

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/forgery")
}

/// The attacks of `dir`, by file stem, sorted.
fn attacks(dir: &str, at_least: usize) -> Vec<(String, String)> {
    python_suite(&fixtures().join(dir), at_least)
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Every attack, the guarded ones too when `guard`; then the honest answer last.
fn answers(guard: bool) -> Vec<(String, String)> {
    let mut answers = attacks("attacks", 12);
    if guard {
        answers.extend(attacks("guarded", 3));
    }
    let honest = std::fs::read_to_string(fixtures().join("honest.py")).unwrap();
    answers.push(("honest".into(), honest));
    answers
}

/// The target spec's text, with `guard = true` on its code rule when `guard`.
fn spec_text(spec: &str, guard: bool) -> String {
    let text = std::fs::read_to_string(fixtures().join(spec)).unwrap();
    if !guard {
        return text;
    }
    let guarded = text.replace("rule = \"code\"\n", "rule = \"code\"\nguard = true\n");
    assert_ne!(guarded, text, "{spec} has a code rule");
    guarded
}

fn fenced(source: &str) -> String {
    format!("```python\n{source}\n```")
}

/// `spec` with one example per answer: the honest one passes, and the
/// others fail with score 0.
fn with_examples(spec: &str, guard: bool, answers: &[(String, String)]) -> String {
    let mut text = spec_text(spec, guard);
    for (name, source) in answers {
        let honest = name == "honest";
        text += &format!(
            "\n[[example]]\nname = {}\ninstance = 0\nresponse = {}\npasses = {honest}\nscore = {}\n",
            toml::Value::String(name.clone()),
            toml::Value::String(fenced(source)),
            if honest { "1.0" } else { "0.0" },
        );
    }
    text
}

/// `harness check` of every target spec with `answers` as its examples.
fn check_all(guard: bool, answers: &[(String, String)]) {
    let dir = tempfile::tempdir().unwrap();
    for spec in SPECS {
        let path = dir.path().join(spec);
        std::fs::write(&path, with_examples(spec, guard, answers)).unwrap();
        let (code, out) = check_examples(&path, &[]);
        assert_eq!(code, 0, "{spec} (guard = {guard}):\n{out}");
        let n = answers.len();
        assert!(out.contains(&format!("{n}/{n} examples")), "{spec}:\n{out}");
    }
}

#[test]
fn every_attack_fails_through_check() {
    check_all(false, &answers(false));
}

#[test]
fn every_attack_fails_through_check_guarded() {
    check_all(true, &answers(true));
}

/// The built-in-style spec's tests, as Python source.
fn builtin_style_tests() -> Vec<String> {
    let text = std::fs::read_to_string(fixtures().join("builtin_style.toml")).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("\"assert "))
        .map(|l| format!("assert {}", l.trim_end_matches(',').trim_end_matches('"')))
        .collect()
}

/// How many of `tests` bare `python3` passes when they follow `program`
/// in one module, one after the other, as the checker runs them.
fn plain_python_passes(program: &str, tests: &[String]) -> usize {
    let python = harness::python_interpreter().expect("a python3");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("case.py");
    let mut source = format!("{program}\n__passed = 0\n");
    for test in tests {
        let test = serde_json::to_string(test).unwrap();
        source += &format!(
            "try:\n    exec(compile({test}, 'test', 'exec'), globals())\n    __passed += 1\n\
             except Exception:\n    pass\n"
        );
    }
    source += "print(__passed)\n";
    std::fs::write(&file, source).unwrap();
    let out = std::process::Command::new(&python.path)
        .arg(&file)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("python3 said {text:?}"))
}

/// Without the guard, a program may replace what the built-in-style tests
/// judge with, as in plain Python: each guarded attack passes exactly the
/// tests bare `python3` passes (some, not none), as the docs say.
#[test]
fn guarded_attacks_pass_without_the_guard_as_in_plain_python() {
    let tests = builtin_style_tests();
    assert_eq!(tests.len(), 4, "{tests:?}");
    let dir = tempfile::tempdir().unwrap();
    let spec = "builtin_style.toml";
    let mut text = spec_text(spec, false);
    for (name, source) in attacks("guarded", 3) {
        let passed = plain_python_passes(&source, &tests);
        assert!(passed > 0, "{name} passes no test even in plain Python");
        text += &format!(
            "\n[[example]]\nname = {}\ninstance = 0\nresponse = {}\npasses = {}\nscore = {}\n",
            toml::Value::String(name),
            toml::Value::String(fenced(&source)),
            passed == tests.len(),
            passed as f64 / tests.len() as f64,
        );
    }
    let path = dir.path().join(spec);
    std::fs::write(&path, text).unwrap();
    let (code, out) = check_examples(&path, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("3/3 examples"), "{out}");
}

/// `harness run` of `spec` against a model answering attack `k` to instance `k`.
fn run_attacks(
    spec: &str,
    guard: bool,
    answers: &Arc<Vec<(String, String)>>,
) -> Vec<serde_json::Value> {
    let replies = answers.clone();
    let fake = FakeServer::start(move |request| {
        let k: usize = request
            .prompt
            .strip_prefix("Attack ")
            .and_then(|rest| rest.split(':').next()?.parse().ok())
            .expect("the prompt names its attack");
        Reply::Text(fenced(&replies[k].1))
    });
    let ws = Workspace::new();
    ws.write(&format!("specs/{spec}"), &spec_text(spec, guard));
    let config = model_toml(
        "forger",
        "openai",
        "forger",
        &fake.openai_base(),
        "concurrency = 4",
    );
    ws.write("harness.toml", &config);
    let runs = answers.len().to_string();
    let spec_path = Path::new("specs").join(spec);
    let (code, out) = ws.run(&[spec_path.to_str().unwrap(), "-m", "forger", "--runs", &runs]);
    assert_eq!(code, 0, "{out}");
    let records = ws.last_journal();
    assert_eq!(records.len(), answers.len(), "{out}");
    records
}

#[test]
fn every_attack_fails_through_run() {
    for guard in [false, true] {
        run_all(guard);
    }
}

fn run_all(guard: bool) {
    let answers = Arc::new(answers(guard));
    let mut forged = Vec::new();
    for spec in SPECS {
        for r in run_attacks(spec, guard, &answers) {
            let k = r["instance"].as_u64().unwrap() as usize;
            let (name, _) = &answers[k];
            let (passed, score) = (r["passed"] == true, r["score"].as_f64().unwrap());
            let detail = r["detail"].as_str().unwrap_or("");
            if name == "honest" {
                assert!(
                    passed && score == 1.0,
                    "{spec}: the honest answer: {detail}"
                );
            } else if passed || score > 0.0 {
                forged.push(format!("{spec} {name}: score {score}: {detail}"));
            }
        }
    }
    assert!(
        forged.is_empty(),
        "forged verdicts (guard = {guard}):\n{}",
        forged.join("\n")
    );
}
