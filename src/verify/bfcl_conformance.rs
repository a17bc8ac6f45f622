//! The `tool_call` and `no_tool_call` verdicts of the shipped BFCL specs
//! against BFCL's own AST checker, on every answer of
//! `datasets/bfcl/reference.jsonl` and `probes.jsonl`: each answer is fed to
//! the rules built from its category's spec, `[[verify]]` as written.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{FailureKind, Judged, Reply, RuleSet};
use crate::format::locate::SourceMap;
use crate::format::{SpecFile, Tool, ToolCall};
use crate::prompt::Message;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The spec of a BFCL category.
fn spec_of(category: &str) -> &'static str {
    match category {
        "simple_python" => "bfcl_simple",
        "multiple" => "bfcl_multiple",
        "parallel" => "bfcl_parallel",
        "parallel_multiple" => "bfcl_parallel_multiple",
        "irrelevance" => "bfcl_irrelevance",
        other => panic!("no spec for category {other}"),
    }
}

fn rules(spec: &str) -> RuleSet {
    let path = Path::new(ROOT).join(format!("specs/{spec}.toml"));
    let text = std::fs::read_to_string(&path).expect("the spec reads");
    let map = SourceMap::parse(&path, &text).expect("the spec parses");
    let def: SpecFile = toml::from_str(&text).expect("the spec is a spec");
    RuleSet::build(&def.verify, &map, path.parent().expect("a dir"), None)
        .unwrap_or_else(|e| panic!("{spec}: {e:?}"))
}

fn lines(file: &str) -> Vec<Map<String, Value>> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("datasets/bfcl").join(file))
        .expect("the file reads");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object"))
        .collect()
}

/// An answer in BFCL's decoded form, `[{name: {arg: value}}]`, as calls.
pub(crate) fn answer_calls(answer: &Value) -> Vec<ToolCall> {
    let items = answer.as_array().map_or(&[][..], Vec::as_slice);
    items
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|m| m.iter())
        .map(|(name, arguments)| ToolCall {
            id: String::new(),
            name: name.clone(),
            arguments: arguments.clone(),
            invalid: None,
        })
        .collect()
}

fn tools(row: &Map<String, Value>) -> Vec<Tool> {
    serde_json::from_value(row["function"].clone()).expect("BFCL's functions are tools")
}

/// The failure kind that stands for BFCL's error type (of the first
/// sub-error, when no output call matched an expected one in parallel).
fn bfcl_kind(answer: &Map<String, Value>, row: &Map<String, Value>) -> Option<FailureKind> {
    let mut error = answer["error_type"].as_str()?;
    if error.ends_with(":cannot_find_match") {
        error = answer["sub_errors"][0]["error_type"].as_str()?;
    }
    let count = answer["answer"].as_array().map_or(0, Vec::len);
    Some(match error.split(':').next_back()? {
        "wrong_func_name" => FailureKind::WrongTool,
        "missing_required" | "missing_optional" => FailureKind::MissingArgument,
        "unexpected_param" => FailureKind::UnexpectedArgument,
        "wrong_count" if count == 0 => FailureKind::MissingCall,
        "wrong_count" => {
            let expected = row
                .get("ground_truth")
                .and_then(Value::as_array)
                .map_or(1, Vec::len);
            if count < expected {
                FailureKind::MissingCall
            } else {
                FailureKind::UnexpectedCall
            }
        }
        "decoder_success" => FailureKind::UnexpectedCall,
        _ if error.starts_with("type_error") => FailureKind::WrongArgumentType,
        _ => FailureKind::WrongArgument,
    })
}

/// `(agree, total)` over `answers`, each verified with its row's tools and ground truth.
fn agreement(
    answers: &[Map<String, Value>],
    rows: &HashMap<String, Map<String, Value>>,
) -> (usize, usize, Vec<String>) {
    let mut specs: HashMap<&str, RuleSet> = HashMap::new();
    let mut disagree = Vec::new();
    for answer in answers {
        let category = answer["category"].as_str().expect("a category");
        let id = answer["id"].as_str().expect("an id");
        let row = rows.get(id).unwrap_or(answer);
        let rules = specs
            .entry(spec_of(category))
            .or_insert_with(|| rules(spec_of(category)));
        let calls = answer_calls(&answer["answer"]);
        let trajectory = if calls.is_empty() {
            Vec::new()
        } else {
            vec![Message::assistant("", calls)]
        };
        let tools = tools(row);
        let reply = Reply {
            text: "",
            reasoning: "",
            trajectory: &trajectory,
            state: None,
            tools: &tools,
            replay: None,
        };
        let verdict = rules.verify_judged(&reply, row, &Judged::new());
        let kind = verdict.rules.iter().find_map(|r| r.verdict.failure);
        if Some(verdict.passed) != answer["valid"].as_bool() || kind != bfcl_kind(answer, row) {
            disagree.push(format!(
                "{id} {}: BFCL {} ({}), harness {} ({kind:?}: {})",
                answer
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("probe"),
                answer["valid"],
                answer["error_type"],
                verdict.passed,
                verdict.failure_details()
            ));
        }
    }
    (answers.len() - disagree.len(), answers.len(), disagree)
}

#[test]
fn every_reference_answer_and_probe_gets_bfcls_verdict() {
    let mut rows = HashMap::new();
    for file in [
        "simple_python",
        "multiple",
        "parallel",
        "parallel_multiple",
        "irrelevance",
    ] {
        for row in lines(&format!("{file}.jsonl")) {
            rows.insert(row["id"].as_str().expect("an id").to_owned(), row);
        }
    }
    let reference = lines("reference.jsonl");
    let (agree, total, disagree) = agreement(&reference, &rows);
    eprintln!("reference.jsonl: {agree} / {total} verdicts and failure kinds agree with BFCL");
    assert_eq!(total, 2272);
    let probes = lines("probes.jsonl");
    let (agree_p, total_p, disagree_p) = agreement(&probes, &HashMap::new());
    eprintln!("probes.jsonl: {agree_p} / {total_p} verdicts and failure kinds agree with BFCL");
    assert_eq!(total_p, 28);
    let all: Vec<String> = disagree.into_iter().chain(disagree_p).collect();
    assert!(
        all.is_empty(),
        "{} disagreements:\n{}",
        all.len(),
        all.join("\n")
    );
}
