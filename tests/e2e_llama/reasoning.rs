//! Reasoning live from both CI models: llama-server started by the harness
//! (managed `llamacpp` models) with a chat template that opens a `<think>`
//! block (`scripts/*-chat-template-think.jinja`) and `--reasoning-format
//! deepseek` returns each thought in `reasoning_content`, and 48 tokens are
//! too few to finish it. The committed golden transcripts
//! (`tests/fixtures/reasoning/golden`) are reproduced field by field, the
//! reasoning included, and every answer fails as `unfinished_reasoning`.

use std::path::Path;

use crate::common::managed::{NoOrphans, llama_paths};
use crate::common::workspace::Workspace;
use crate::common::{golden_lines, harness, locks, root, run};

/// `scripts/llama-server.sh paths`' value of `key`.
fn script_path(key: &str) -> String {
    let output = std::process::Command::new(root().join("scripts/llama-server.sh"))
        .arg("paths")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let prefix = format!("{key}=");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {key} in: {text}"))
        .to_owned()
}

/// The workspace: the spec and the two thinking models on `bin`.
fn workspace(bin: &Path, smol: &Path, gemma: &str) -> Workspace {
    let ws = Workspace::new();
    let fixtures = root().join("tests/fixtures/reasoning");
    let spec = std::fs::read_to_string(fixtures.join("thinking.toml")).unwrap();
    ws.write("specs/thinking.toml", &spec);
    let config = std::fs::read_to_string(fixtures.join("harness.toml.in"))
        .unwrap()
        .replace("__BIN__", &bin.display().to_string())
        .replace("__SMOL__", &smol.display().to_string())
        .replace("__GEMMA__", gemma)
        .replace("__SCRIPTS__", &root().join("scripts").display().to_string());
    ws.write("harness.toml", &config);
    ws
}

#[test]
fn both_ci_models_reason_live_and_reproduce_their_golden_reasoning() {
    let Some((bin, smol)) = llama_paths() else {
        return;
    };
    let _servers = locks::real_llama();
    let ws = workspace(&bin, &smol, &script_path("GEMMA3_MODEL"));
    let _guard = NoOrphans(ws.path().join("results"));
    let started = std::time::Instant::now();
    let (code, out) = run(harness(ws.path()).args([
        "run",
        "specs/thinking.toml",
        "-m",
        "smollm2-think",
        "-m",
        "gemma3-think",
        "--no-progress",
        "--no-cache",
    ]));
    eprintln!(
        "live reasoning check: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(code, 0, "{out}");
    let records = ws.last_journal();
    assert_eq!(records.len(), 8, "{out}");
    let golden = root().join("tests/fixtures/reasoning/golden");
    golden_lines::assert_as_golden(&records, &golden, "live answers");
    for r in &records {
        let thought = r["reasoning"]["text"].as_str().unwrap_or_default();
        assert!(!thought.trim().is_empty(), "no reasoning: {r}");
        assert_eq!(r["failure"], "unfinished_reasoning", "{r}");
        assert_eq!(r["response"], "", "the answer holds no reasoning: {r}");
        assert!(r["tokens_out"].as_u64().unwrap() > 0, "{r}");
    }
}
