//! Golden transcript lines for runs the harness does not compare itself: a
//! shard leaves the golden comparison to `harness merge`, so the live golden
//! check (`e2e_llama`, `e2e_tools`), which asks one shard, compares each
//! record with its line here; `shards` proves the comparison on a replay.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

/// The fields of a record that its golden transcript line keeps
/// (`ScoredAnswer`, flattened in both).
const TRANSCRIPT_FIELDS: [&str; 14] = [
    "response",
    "answer",
    "passed",
    "score",
    "detail",
    "tokens_in",
    "tokens_out",
    "reasoning",
    "tokens_reasoning",
    "error",
    "trajectory",
    "state",
    "logprobs",
    "choice",
];

/// A journal record as its golden transcript line: id, instance, sample,
/// model, the scored fields, and each judged rule's judgements by rule name.
fn transcript_line(record: &Value) -> Value {
    let mut line = json!({
        "id": record["instance_id"],
        "instance": record["instance"],
        "sample": record["sample"],
        "model": record["model"],
    });
    for field in TRANSCRIPT_FIELDS {
        if let Some(value) = record.get(field) {
            line[field] = value.clone();
        }
    }
    let judged: serde_json::Map<String, Value> = record["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|rule| {
            let j = rule.get("judge")?;
            let kept = json!({
                "judge": j["judge"], "rubric": j["rubric"], "responses": j["responses"],
            });
            Some((rule["name"].as_str()?.to_owned(), kept))
        })
        .collect();
    if !judged.is_empty() {
        line["judge"] = Value::Object(judged);
    }
    line
}

/// Each record against its line in `golden/<spec>/<model>.jsonl`: one
/// message per record that has no line or differs from it (both shown), so
/// a run the harness does not compare itself (a shard) is still checked.
pub fn departures(records: &[Value], golden: &Path) -> Vec<String> {
    let mut lines: std::collections::BTreeMap<(String, String), Vec<Value>> = Default::default();
    let mut departures = Vec::new();
    for record in records {
        let (spec, model) = (
            record["spec"].as_str().unwrap(),
            record["model"].as_str().unwrap(),
        );
        let recorded = lines
            .entry((spec.to_owned(), model.to_owned()))
            .or_insert_with(|| journal_lines(&golden.join(spec).join(format!("{model}.jsonl"))));
        let key = |l: &Value| (l["instance"].clone(), l["sample"].clone());
        let live = transcript_line(record);
        match recorded.iter().find(|l| key(l) == key(&live)) {
            Some(line) if *line == live => {}
            Some(line) => departures.push(format!("{spec} {model}: golden {line}\n  live {live}")),
            None => departures.push(format!("{spec} {model}: no golden line for {live}")),
        }
    }
    departures
}

/// Asserts that no record departs from its line under `golden` (see
/// [`departures`]); `what` names the records in the failure (`live episodes`).
pub fn assert_as_golden(records: &[Value], golden: &Path, what: &str) {
    let departures = departures(records, golden);
    assert!(
        departures.is_empty(),
        "{what} differ from the golden transcripts:\n{}",
        departures.join("\n")
    );
}

/// A JSON Lines file's values (none when the file is missing).
pub fn journal_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
