//! The forgery suite: answers that try to pass the `code` rule's tests
//! without computing their values. Each attack in
//! `tests/fixtures/forgery/attacks/` defines the functions of the target
//! specs (`max_of_two` in t03's `assert f(x) == y` style, `decode` in
//! HumanEval's `check(candidate)` style, with a prelude holding a helper the
//! tests call; `mean` and `evens` in tests that judge with built-ins such as
//! `abs` and `len`) and must score 0 through `harness check` (as an example)
//! and `harness run` (as a fake model's answer); the honest answer must pass.

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

/// Every attack, by file stem, sorted; then the honest answer last.
fn answers() -> Vec<(String, String)> {
    let mut attacks: Vec<(String, String)> = python_suite(&fixtures().join("attacks"), 15)
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    let honest = std::fs::read_to_string(fixtures().join("honest.py")).unwrap();
    attacks.push(("honest".into(), honest));
    attacks
}

fn fenced(source: &str) -> String {
    format!("```python\n{source}\n```")
}

/// `spec` with one example per answer: attacks fail with score 0, the honest one passes.
fn with_examples(spec: &str, answers: &[(String, String)]) -> String {
    let mut text = std::fs::read_to_string(fixtures().join(spec)).unwrap();
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

#[test]
fn every_attack_fails_through_check() {
    let answers = answers();
    let dir = tempfile::tempdir().unwrap();
    for spec in SPECS {
        let path = dir.path().join(spec);
        std::fs::write(&path, with_examples(spec, &answers)).unwrap();
        let (code, out) = check_examples(&path, &[]);
        assert_eq!(code, 0, "{spec}:\n{out}");
        let n = answers.len();
        assert!(out.contains(&format!("{n}/{n} examples")), "{spec}:\n{out}");
    }
}

/// `harness run` of `spec` against a model answering attack `k` to instance `k`.
fn run_attacks(spec: &str, answers: &Arc<Vec<(String, String)>>) -> Vec<serde_json::Value> {
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
    ws.copy_fixture(&format!("forgery/{spec}"));
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
    let answers = Arc::new(answers());
    let mut forged = Vec::new();
    for spec in SPECS {
        for r in run_attacks(spec, &answers) {
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
    assert!(forged.is_empty(), "forged verdicts:\n{}", forged.join("\n"));
}
