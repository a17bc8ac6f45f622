//! `harness synth` against the in-process fake OpenAI server: every reader
//! on documents the test makes (TXT, HTML, a hand-written PDF, a DOCX built
//! with `zip`), the work folder layout, threshold and de-duplication, a model
//! that never answers JSON, and Ctrl-C then resume without a repeated request.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::documents::write_documents;
use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::workspace::{Workspace, interrupt_after, model_toml};
use crate::common::{harness, run, strings};
use serde_json::{Value, json};

/// The first word of the chunk text in a generation prompt.
fn chunk_word(prompt: &str) -> String {
    prompt
        .split("Текст:\n")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or("x")
        .to_owned()
}

/// Answers generation with three pairs (one a near-duplicate, one trivial) and
/// rating with 9, or 2 for trivial questions; a chunk saying MALFORMED never gets JSON.
fn model(r: &Request) -> Reply {
    let p = &r.prompt;
    if p.contains("Составь") {
        if p.contains("MALFORMED") {
            return Reply::Text("Sorry, here are some questions: what, why?".into());
        }
        let w = chunk_word(p);
        let pairs = json!({"pairs": [
            {"question": format!("What is {w}?"), "answer": format!("{w} is the topic.")},
            {"question": format!("what is {w} ?!"), "answer": "The same question again."},
            {"question": format!("Is {w} trivial?"), "answer": "Yes."},
        ]});
        Reply::Text(pairs.to_string())
    } else if p.contains("Оцени") {
        let ratings: Vec<u32> = p
            .lines()
            .filter(|l| l.contains("Вопрос:"))
            .map(|l| if l.contains("trivial") { 2 } else { 9 })
            .collect();
        Reply::Text(json!({ "ratings": ratings }).to_string())
    } else {
        Reply::Status(400, None)
    }
}

fn workspace(fake: &FakeServer, concurrency: usize) -> Workspace {
    let ws = Workspace::new();
    let settings = format!("concurrency = {concurrency}\nmax_retries = 0\ntimeout_secs = 10");
    ws.write(
        "harness.toml",
        &model_toml("fake", "openai", "fake", &fake.openai_base(), &settings),
    );
    ws
}

fn synth(ws: &Workspace, extra: &[&str]) -> std::process::Command {
    let mut cmd = harness(ws.path());
    cmd.args([
        "synth",
        "docs",
        "--model",
        "fake",
        "--out",
        "data/qa.jsonl",
        "--no-progress",
        "--no-cache",
    ])
    .args(extra);
    cmd
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Three pairs a chunk, the model and the pipeline in the output, ratings below 5 dropped.
const EVERY_FORMAT: [&str; 4] = ["--metadata", "--threshold", "5", "--num-pairs=3"];

#[test]
fn every_format_becomes_rated_filtered_deduplicated_pairs() {
    let fake = FakeServer::start(model);
    let ws = workspace(&fake, 2);
    write_documents(&ws.path().join("docs"));
    std::fs::write(ws.path().join("docs/malformed.txt"), "MALFORMED notes.").unwrap();
    let (code, out) = run(&mut synth(&ws, &EVERY_FORMAT));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("skipped docs/broken.pdf"), "{out}");

    let rows = lines(&ws.path().join("data/qa.jsonl"));
    let by_source: BTreeMap<String, &Value> = rows
        .iter()
        .map(|r| (r["source"].as_str().unwrap().to_owned(), r))
        .collect();
    // One pair per document: the near-duplicate and the trivial (rated 2 < 5) pair are gone.
    assert_eq!(
        by_source.keys().collect::<Vec<_>>(),
        [
            "docs/apples.txt",
            "docs/bananas.html",
            "docs/cherries.pdf",
            "docs/dates.docx"
        ],
        "{out}"
    );
    for (source, row) in &by_source {
        let word = row["document"].as_str().unwrap();
        let capital = word[..1].to_uppercase() + &word[1..];
        assert_eq!(row["question"], format!("What is {capital}?"), "{source}");
        assert_eq!(row["rating"], 9.0);
        assert_eq!(row["chunk"], 0);
        assert_eq!(row["metadata"]["model"], "fake");
        assert_eq!(
            row["metadata"]["pipeline_sha256"].as_str().unwrap().len(),
            64
        );
    }
    // HTML lost its script, style and navigation.
    let chunk =
        std::fs::read_to_string(ws.path().join("data/qa.synth/output/bananas_0.txt")).unwrap();
    assert_eq!(chunk, "Bananas are berries.\nThey grow in the tropics.");
    assert_work_folder_and_requests(&ws, &fake);

    // Running it again asks nothing: every request is in the journal.
    let before = fake.count();
    let (code, out) = run(&mut synth(&ws, &EVERY_FORMAT));
    assert_eq!(code, 0, "{out}");
    assert_eq!(fake.count(), before, "{out}");
    assert_eq!(lines(&ws.path().join("data/qa.jsonl")), rows);
    assert_the_template_benchmarks_the_output(&ws);
}

/// The work folder's stages and report, and what the fake was asked.
fn assert_work_folder_and_requests(ws: &Workspace, fake: &FakeServer) {
    let work = ws.path().join("data/qa.synth");
    for f in [
        "output/apples_0.txt",
        "output/cherries_0.txt",
        "output/dates_0.txt",
        "output/documents.jsonl",
        "generated/apples.json",
        "cleaned/dates.json",
        "final/qa.jsonl",
        "journal.jsonl",
    ] {
        assert!(work.join(f).is_file(), "{f} missing");
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["documents"], 5);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 1);
    assert_eq!(report["generated"], 12);
    assert_eq!(report["below_threshold"], 4);
    assert_eq!(report["duplicates"], 4);
    assert_eq!(report["kept"], 4);
    // The model that never answers JSON was asked 3 times (the pipeline's bound), then recorded.
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .as_str()
            .unwrap()
            .starts_with("malformed chunk 0: malformed answer")
    );
    let malformed_asks = fake
        .requests()
        .iter()
        .filter(|r| r.prompt.contains("MALFORMED"))
        .count();
    assert_eq!(malformed_asks, 3);
    // Generation used the pipeline's sampling and the JSON schema; rating its lower temperature.
    let bodies: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    let generation = bodies
        .iter()
        .find(|b| b.to_string().contains("Составь"))
        .unwrap();
    assert_eq!(generation["temperature"], 0.7);
    assert_eq!(generation["top_p"], 0.95);
    assert_eq!(generation["response_format"]["type"], "json_schema");
    let rating = bodies
        .iter()
        .find(|b| b.to_string().contains("Оцени"))
        .unwrap();
    assert_eq!(rating["temperature"], 0.3);
}

/// The spec template benchmarks models on synth's output as it is.
fn assert_the_template_benchmarks_the_output(ws: &Workspace) {
    ws.copy_spec("templates/synth_qa.toml");
    let check = |bless: bool| {
        let mut cmd = harness(ws.path());
        cmd.args(["check", "specs/templates/synth_qa.toml"]);
        if bless {
            cmd.arg("--bless");
        }
        run(&mut cmd)
    };
    let (code, out) = check(true);
    assert!(out.contains("4 instances, 2/2 examples"), "{out}");
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(false);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 ok"), "{out}");
}

#[test]
fn ctrl_c_then_resume_repeats_no_request() {
    let fake = FakeServer::start(|r| Reply::slow(150, model(r)));
    let ws = workspace(&fake, 1);
    let docs = ws.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..8 {
        std::fs::write(
            docs.join(format!("d{i}.txt")),
            format!("Topic{i} is described here."),
        )
        .unwrap();
    }
    let (code, text) = interrupt_after(&mut synth(&ws, &[]), &fake, 4);
    assert_eq!(code, Some(130), "{text}");
    assert!(text.contains("run the same command again"), "{text}");
    let journal = ws.path().join("data/qa.synth/journal.jsonl");
    let first = lines(&journal);
    assert!(
        !first.is_empty() && first.len() < 8,
        "{} entries",
        first.len()
    );
    let asked_first: Vec<String> = fake.requests().into_iter().map(|r| r.prompt).collect();

    let (code, out) = run(&mut synth(&ws, &[]));
    assert_eq!(code, 0, "{out}");
    let asked_second: Vec<String> = fake.requests()[asked_first.len()..]
        .iter()
        .map(|r| r.prompt.clone())
        .collect();
    // Only the request in flight at Ctrl-C (concurrency 1) may be asked again.
    let repeated: Vec<&String> = asked_second
        .iter()
        .filter(|p| asked_first.contains(p))
        .collect();
    assert!(repeated.len() <= 1, "repeated: {repeated:#?}");
    assert!(first.len() + 1 >= asked_first.len());
    let entries = lines(&journal);
    assert_eq!(
        &entries[..first.len()],
        &first[..],
        "entries before Ctrl-C unchanged"
    );
    let mut keys = strings(&entries, "key");
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), entries.len(), "no request journaled twice");
    // 8 generations and 8 rating batches.
    assert_eq!(entries.len(), 16);
    let rows = lines(&ws.path().join("data/qa.jsonl"));
    assert_eq!(rows.len(), 16, "{out}");
    assert!(rows.iter().all(|r| r["rating"].as_f64().unwrap() >= 1.0));
}
