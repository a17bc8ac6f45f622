//! Reports of a journal with tool calls (`tests/fixtures/journals/tool_episode.jsonl`):
//! a 3-turn agent episode with a hostile tool name and argument and a wrong
//! argument, a passing episode, a call whose arguments are not JSON, a text
//! answer, and another model's call that misses an argument. Every report
//! that shows a response as text shows each call as `→ name(args)` and each
//! tool result as `← name: content`, so no tool answer reads as empty.

use std::path::PathBuf;

use harness::{Lang, ReportContext, ReportKind, ReportOutput, SpecInfo, write_reports};
use serde_json::{Value, json};

use super::read;

/// The fixture journal.
pub(crate) fn journal() -> PathBuf {
    crate::common::root().join("tests/fixtures/journals/tool_episode.jsonl")
}

/// Every report of the fixture, in `lang`, under `dir`.
pub(crate) fn build(dir: &std::path::Path, lang: Lang) -> ReportOutput {
    let models = vec!["qwen3:8b".to_owned(), "gpt-4o-mini".to_owned()];
    let specs = vec![SpecInfo {
        title: "Магазин: отмена заказа".into(),
        ..SpecInfo::plain("shop_agent")
    }];
    let journals = [journal()];
    let ctx = ReportContext {
        run_ids: &["r1".to_owned()],
        timestamp: "2026-11-26 20:00:00",
        file_stamp: "episodes",
        formats: &[ReportKind::Junit],
        lang,
        ..ReportContext::new(dir, &models, &specs, &journals)
    };
    write_reports(&ctx).unwrap()
}

#[test]
fn markdown_shows_calls_and_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let md = read(&build(dir.path(), Lang::En).files.markdown);
    assert!(
        md.contains("→ shop.cancel_order(order_id=8)"),
        "the failing call, compact: {md}"
    );
    insta::assert_snapshot!(md);
}

#[test]
fn raw_json_shows_calls_and_keeps_the_steps() {
    let dir = tempfile::tempdir().unwrap();
    let out = build(dir.path(), Lang::En);
    let mut shown = Vec::new();
    for path in &out.files.raw {
        let items: Value = serde_json::from_str(&read(path)).unwrap();
        for item in items.as_array().unwrap() {
            let steps = item["trajectory"].as_array().map_or(0, Vec::len);
            shown.push(json!({
                "test_id": item["test_id"],
                "llm_response": item["llm_response"],
                "steps": steps,
                "state": item.get("state"),
            }));
        }
    }
    let empty = shown.iter().filter(|i| i["llm_response"] == "").count();
    assert_eq!(empty, 0, "no tool answer shows as an empty string");
    insta::assert_snapshot!(serde_json::to_string_pretty(&shown).unwrap());
}

#[test]
fn junit_failures_show_calls() {
    let dir = tempfile::tempdir().unwrap();
    let out = build(dir.path(), Lang::En);
    let xml = out
        .files
        .extra
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "xml"));
    let xml = read(xml.unwrap());
    assert!(xml.contains("→ shop.cancel_order(order_id=7)"), "{xml}");
    assert!(
        !xml.contains("<img src"),
        "the hostile tool name escaped: {xml}"
    );
    insta::assert_snapshot!(xml);
}

/// An agent spec judged only by its final state expects no answer: its
/// failing instances show no `Expected: null` line.
#[test]
fn markdown_omits_an_expected_value_that_is_null() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = read(&journal())
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).unwrap();
            r["expected"] = json!({});
            r.to_string()
        })
        .collect();
    let journal = dir.path().join("journal.jsonl");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let models = vec!["qwen3:8b".to_owned(), "gpt-4o-mini".to_owned()];
    let specs = vec![SpecInfo::plain("shop_agent")];
    let journals = [journal];
    let ctx = ReportContext::new(dir.path(), &models, &specs, &journals);
    let md = read(&write_reports(&ctx).unwrap().files.markdown);
    assert!(md.contains("→ shop.cancel_order(order_id=8)"), "{md}");
    assert!(!md.contains("Expected:"), "{md}");
}
