//! The OCR spec live: `specs/ocr_lines.toml` read by Tesseract through
//! `exec:` (the repository's `harness.toml` names `tesseract` and
//! `tesseract_eng`), in a fresh copy of the repository, must reproduce the
//! committed golden transcripts, and a rerun asks nothing. Without
//! `tesseract` on PATH (a plain `cargo test` on a laptop) it says so and
//! returns; under `HARNESS_E2E=1` (scripts/test.sh, which installs it on
//! Debian) it fails instead. The same spec also runs against a vision
//! endpoint of each wire form (a fake that reads the line off the image it
//! was sent).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::Value;

use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::{fresh_copy, harness, root, run};

fn tesseract() -> bool {
    let found = std::process::Command::new("tesseract")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found || std::env::var("HARNESS_E2E").is_err(),
        "HARNESS_E2E is set but `tesseract` is not on PATH (Debian: tesseract-ocr, -eng, -rus)"
    );
    if !found {
        eprintln!("skipping: `tesseract` is not on PATH (Debian: tesseract-ocr, -eng, -rus)");
    }
    found
}

const ARGS: [&str; 7] = [
    "run",
    "specs/ocr_lines.toml",
    "-m",
    "exec:tesseract",
    "-m",
    "exec:tesseract_eng",
    "--no-progress",
];

#[test]
fn tesseract_reproduces_the_golden_transcripts_and_reruns_from_cache() {
    if !tesseract() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());
    // CI makes golden differences fail the run.
    let (code, out) = run(harness(&repo).args(ARGS).env("CI", "true"));
    assert_eq!(
        code, 0,
        "live transcripts differ from the golden ones:\n{out}"
    );
    assert!(
        out.contains("96 records written (0 from cache, 96 attempts)"),
        "{out}"
    );
    assert!(!out.contains("golden transcript"), "{out}");
    // Russian read with the English pack alone fails; with both, most pass.
    let by_lang = out
        .split("by lang")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-language table:\n{out}"));
    let row = |model: &str| {
        by_lang
            .lines()
            .find(|l| l.split_whitespace().next() == Some(model))
            .unwrap_or_else(|| panic!("no {model} row:\n{out}"))
            .to_owned()
    };
    assert!(row("tesseract_eng").contains("0.0%"), "{out}");
    assert!(row("tesseract").starts_with("tesseract "), "{out}");
    // CER and WER per language, beside the pass rate.
    let measures = out
        .split("mean measures per answer")
        .nth(1)
        .unwrap_or_else(|| panic!("no CER/WER table:\n{out}"));
    assert!(measures.contains("CER ↓  WER ↓"), "{out}");
    for lang in ["lang=en", "lang=ru"] {
        for model in ["tesseract", "tesseract_eng"] {
            assert!(
                measures
                    .lines()
                    .any(|l| l.split_whitespace().take(2).eq([model, lang])),
                "no {model} {lang} row:\n{out}"
            );
        }
    }
    let (code, out) = run(harness(&repo).args(ARGS).env("CI", "true"));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("96 records written (96 from cache, 0 attempts)"),
        "{out}"
    );
}

/// The lines of `datasets/ocr_lines`, by the base64 of their image.
fn lines_by_image() -> BTreeMap<String, String> {
    let dir = root().join("datasets/ocr_lines");
    let text = std::fs::read_to_string(dir.join("lines.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|row| {
            let image = std::fs::read(dir.join(row["image"].as_str().unwrap())).unwrap();
            let encoded = base64::engine::general_purpose::STANDARD.encode(image);
            (encoded, row["text"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// A vision model that reads each line off the image it was sent, in
/// either wire form: an OpenAI `image_url` part with a `data:` URL, or
/// Ollama's `images`. A request without a known image gets "no image".
fn vision_fake() -> FakeServer {
    let lines = Arc::new(lines_by_image());
    FakeServer::start(move |r: &Request| {
        let user = &r.body["messages"][1];
        let sent = match &user["content"] {
            Value::Array(parts) => parts
                .iter()
                .find_map(|p| p["image_url"]["url"].as_str())
                .and_then(|u| u.strip_prefix("data:image/png;base64,"))
                .map(str::to_owned),
            _ => user["images"][0].as_str().map(str::to_owned),
        };
        let line = sent.and_then(|s| lines.get(&s).cloned());
        Reply::Text(line.unwrap_or_else(|| "no image".into()))
    })
}

/// The shipped spec against a vision endpoint of each wire form: every one
/// of the 48 images arrives, and each answer, read off it, passes.
#[test]
fn the_ocr_spec_reaches_a_vision_endpoint_in_both_wire_forms() {
    for (provider, base) in [("openai", true), ("ollama", false)] {
        let fake = vision_fake();
        let tmp = tempfile::tempdir().unwrap();
        let repo = fresh_copy(tmp.path());
        let url = if base {
            fake.openai_base()
        } else {
            fake.ollama_base()
        };
        let model = format!("{provider}:vision@{url}");
        let args = ["run", "specs/ocr_lines.toml", "-m", &model, "--no-progress"];
        let (code, out) = run(harness(&repo).args(args));
        assert_eq!(code, 0, "{out}");
        let requests = fake.requests();
        assert_eq!(requests.len(), 48, "{provider}: {out}");
        let parts = &requests[0].body["messages"][1];
        if base {
            assert_eq!(parts["content"][1]["type"], "image_url", "{parts:#}");
        } else {
            assert_eq!(
                parts["images"].as_array().map(Vec::len),
                Some(1),
                "{parts:#}"
            );
        }
        let journal: Vec<Value> = last_journal(&repo);
        assert_eq!(journal.len(), 48);
        assert!(
            journal.iter().all(|r| r["passed"] == true),
            "{provider}: {out}"
        );
    }
}

/// The records of the newest run under `repo/results`.
fn last_journal(repo: &std::path::Path) -> Vec<Value> {
    let runs = repo.join("results/runs");
    let mut dirs: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let text = std::fs::read_to_string(dirs.last().unwrap().join("journal.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
