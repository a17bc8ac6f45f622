//! HumanEval end to end: a (fake) model answers every task with its canonical
//! solution, `harness run specs/humaneval.toml` verifies each in the sandbox,
//! and all 164 pass. The data is the repository's `datasets/humaneval/`.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::model_toml;
use crate::common::{harness, root, run};
use serde_json::Value;

fn rows() -> Vec<Value> {
    let path = root().join("datasets/humaneval/HumanEval.jsonl.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("HumanEval data"))
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn canonical_solutions_pass_164_of_164() {
    let rows = rows();
    assert_eq!(rows.len(), 164);
    // Prompt -> the answer a perfect model gives: the whole function, fenced.
    let answers: Arc<BTreeMap<String, String>> = Arc::new(
        rows.iter()
            .map(|r| {
                let prompt = r["prompt"].as_str().unwrap().to_owned();
                let code = format!("{prompt}{}", r["canonical_solution"].as_str().unwrap());
                (prompt, format!("```python\n{code}\n```"))
            })
            .collect(),
    );
    let fake = FakeServer::start(move |request| {
        let answer = answers
            .iter()
            .find(|(prompt, _)| request.prompt.contains(prompt.as_str()))
            .map(|(_, answer)| answer.clone())
            .unwrap_or_else(|| "no such task".into());
        Reply::Text(answer)
    });
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("harness.toml");
    std::fs::write(
        &config,
        model_toml(
            "canonical",
            "openai",
            "canonical",
            &fake.openai_base(),
            "concurrency = 4",
        ),
    )
    .unwrap();
    let (code, out) = run(harness(&root()).args([
        "run",
        "specs/humaneval.toml",
        "-m",
        "canonical",
        "--no-progress",
        "--no-cache",
        "--config",
        config.to_str().unwrap(),
        "--results",
        dir.path().join("results").to_str().unwrap(),
        "--golden",
        dir.path().join("golden").to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{out}");
    let runs = dir.path().join("results/runs");
    let run_dir = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let records: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 164, "{out}");
    let failed: Vec<String> = records
        .iter()
        .filter(|r| r["passed"] != true)
        .map(|r| format!("{}: {}", r["vars"]["task_id"], r["detail"]))
        .collect();
    assert!(
        failed.is_empty(),
        "canonical solutions failed:\n{}",
        failed.join("\n")
    );
}
