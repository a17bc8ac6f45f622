//! `harness synth` against the real SmolLM2 servers, taking its turn on them
//! with the rest of `e2e_llama`.

use std::fs;

use super::{Live, live};
use crate::common::{harness, run};

/// `harness synth` on three documents the test makes (TXT, PDF, DOCX): the
/// answers of a 135M model are poor, but the pipeline's invariants must hold:
/// every final line has a question, an answer, a rating at or above the
/// threshold and its source; generation went out with the QA JSON schema;
/// a second run asks nothing (everything is in the journal).
#[test]
fn synth_turns_three_documents_into_rated_pairs_with_the_real_server() {
    let Some(Live { dir, _servers, .. }) = live(false) else {
        return;
    };
    let docs = dir.path().join("docs");
    fs::create_dir_all(&docs).unwrap();
    fs::write(
        docs.join("photosynthesis.txt"),
        "Photosynthesis is the process by which green plants use sunlight to make food from carbon dioxide and water. It takes place in the chloroplasts and releases oxygen.",
    )
    .unwrap();
    fs::write(
        docs.join("moon.pdf"),
        crate::common::documents::minimal_pdf("The Moon orbits the Earth every 27 days."),
    )
    .unwrap();
    fs::write(
        docs.join("volga.docx"),
        crate::common::documents::minimal_docx(&[
            "Волга — самая длинная река в Европе.",
            "Она впадает в Каспийское море.",
        ]),
    )
    .unwrap();
    let synth = || {
        run(harness(dir.path()).args([
            "synth",
            "docs",
            "-m",
            "smollm2",
            "--out",
            "data/qa.jsonl",
            "--num-pairs",
            "2",
            "--threshold",
            "2",
            "--no-progress",
            "--metadata",
        ]))
    };
    let (code, out) = synth();
    assert_eq!(code, 0, "{out}");
    let text = fs::read_to_string(dir.path().join("data/qa.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!rows.is_empty(), "no pair survived:\n{out}");
    let sources = [
        "docs/photosynthesis.txt",
        "docs/moon.pdf",
        "docs/volga.docx",
    ];
    for r in &rows {
        assert!(!r["question"].as_str().unwrap().is_empty(), "{r}");
        assert!(r["answer"].is_string(), "{r}");
        let rating = r["rating"].as_f64().unwrap();
        assert!((2.0..=10.0).contains(&rating), "{r}");
        assert!(sources.contains(&r["source"].as_str().unwrap()), "{r}");
        assert_eq!(r["metadata"]["model"], "smollm2");
    }
    let report: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(dir.path().join("data/qa.synth/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["documents"], 3, "{report}");
    assert_eq!(report["kept"], rows.len() as u64);
    // Every generated pair is accounted for: kept, or dropped with a count.
    let dropped = ["unrated", "below_threshold", "duplicates"]
        .iter()
        .map(|k| report[k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(
        report["generated"].as_u64().unwrap(),
        dropped + rows.len() as u64
    );

    let (code, again) = synth();
    assert_eq!(code, 0, "{again}");
    assert!(
        again.contains("generate 0 (0 cached, 3 from the journal)"),
        "{again}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("data/qa.jsonl")).unwrap(),
        text
    );
}
