//! The shipped replay (`harness run specs/`, judged specs included) in the
//! browser: its numbers, filters, drill-down, narrow layout and golden view.

use std::path::Path;

use super::{assert_clean, open, report, set_filter, text, wait_count, with_interval};
use crate::common::browser::{Browser, artifacts};
use crate::common::{copy_dir, harness, root};
use serde_json::{Value, json};

#[test]
fn shipped_replay_report_shows_the_numbers_the_other_reports_print() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    // Golden transcripts are copied, so a machine whose sandbox differs writes its
    // `.new` files there and never into the repository.
    let golden = dir.path().join("golden");
    copy_dir(&root().join("golden"), &golden);
    let output = harness(&root())
        .args([
            "run",
            "specs/",
            "--no-progress",
            "--format",
            "json",
            "--results",
        ])
        .arg(&results)
        .arg("--golden")
        .arg(&golden)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let code = output.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = report(&results, "html");
    let last = out.lines().next_back().unwrap_or_default();
    assert_eq!(
        last,
        format!("html report: {}", html.display()),
        "the last line: {out}"
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report(&results, "json")).unwrap()).unwrap();

    open(&mut b, &html, 1280, "replay_overview");
    check_overview(&mut b, &json, &out);
    check_instances(&mut b, &json, &results);
    // A phone-sized screen: the same page, laid out narrow.
    open(&mut b, &html, 390, "replay_overview");
    let overflow = b.eval("document.documentElement.scrollWidth <= window.innerWidth + 1");
    assert_eq!(
        overflow,
        json!(true),
        "no sideways scrolling of the page at 390 px"
    );

    check_golden(&mut b, &golden, &results);
}

/// The leaderboard, heatmap and charts show the JSON report's and the terminal's numbers.
fn check_overview(b: &mut Browser, json: &Value, out: &str) {
    // The leaderboard: the terminal's and the JSON report's numbers, in rank order.
    let standings = json["leaderboard"]["standings"].as_array().unwrap();
    for (i, st) in standings.iter().enumerate() {
        let shown = with_interval(st["score"].as_f64().unwrap(), &st["interval"]);
        let row = format!("table.board tbody tr:nth-child({})", i + 1);
        assert_eq!(text(b, &format!("{row} td.total")), shown);
        assert_eq!(
            text(b, &format!("{row} td.name")),
            st["model"].as_str().unwrap()
        );
        assert!(out.contains(&shown), "the terminal prints {shown}: {out}");
        // The bar is drawn to the score, the error bar to the interval.
        let width = b.eval(&format!(
            "Number(document.querySelector('{row} rect.score').getAttribute('width'))"
        ));
        assert!((width.as_f64().unwrap() - st["score"].as_f64().unwrap() * 100.0).abs() < 1e-9);
        let low = b.eval(&format!(
            "Number(document.querySelector('{row} line.interval').dataset.low)"
        ));
        assert_eq!(low.as_f64(), st["interval"]["low"].as_f64());
    }
    // The heatmap: every cell's headline number (`pass_rate` or `mean_score`).
    for (m, model) in json["models"].as_array().unwrap().iter().enumerate() {
        for cell in model["specs"].as_array().unwrap() {
            let headline = cell["metrics"]["headline"].as_str().unwrap();
            let acc = cell["metrics"][headline].as_f64().unwrap();
            let shown = b.eval(&format!(
                "document.querySelector('table.heat tr[data-model=\"{}\"] td[data-spec=\"{}\"]').textContent",
                model["name"].as_str().unwrap(),
                cell["spec"].as_str().unwrap()
            ));
            assert_eq!(shown, json!(format!("{:.1}%", acc * 100.0)), "model {m}");
        }
    }
    // The scatter plot places each model at its total.
    let ys =
        b.eval("[...document.querySelectorAll('.chart g.mark')].map(g => Number(g.dataset.y))");
    assert!(!ys.as_array().unwrap().is_empty(), "a chart is drawn");
    for y in ys.as_array().unwrap() {
        let total = json["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["category_mean"].as_f64() == y.as_f64());
        assert!(total, "chart point at {y} is some model's total");
    }
}

/// The filters change the visible rows; the drill-down shows the response and
/// the judge's reasoning.
fn check_instances(b: &mut Browser, json: &Value, results: &Path) {
    // Filters change the visible rows.
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    let total = sum_totals(json, "total");
    let failed = total - sum_totals(json, "passed");
    wait_count(b, total, total);
    set_filter(b, "status", "fail");
    wait_count(b, failed, total);
    let rows = b.eval("document.querySelectorAll('#view-instances .vrow').length");
    assert!(
        rows.as_u64().unwrap() < 60,
        "rows are drawn on demand: {rows}"
    );
    let first_model = json["models"][0]["name"].as_str().unwrap().to_owned();
    let m0 = json["models"][0]["total"]["total"].as_u64().unwrap() as usize
        - json["models"][0]["total"]["passed"].as_u64().unwrap() as usize;
    set_filter(b, "model", "0");
    b.wait_for(&format!(
        "document.querySelector('#view-instances .count').textContent.startsWith('{m0} of')"
    ));
    let only = b.eval(&format!(
        "[...document.querySelectorAll('#view-instances .vrow .mdl')].every(e => e.textContent === {})",
        json!(first_model)
    ));
    assert_eq!(only, json!(true));
    set_filter(b, "model", "-1");
    set_filter(b, "status", "all");
    set_filter(b, "q", "humaneval/22");
    b.wait_for("[...document.querySelectorAll('#view-instances .vrow .id')].map(e => e.textContent).join() === 'humaneval/22,humaneval/22'");
    b.screenshot(&artifacts().join("replay_instances_1280.png"));

    // The drill-down shows the response, the judge's reasoning on a judged spec.
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let response = text(b, "#drill-body pre.response");
    let model = text(b, "#drill-body dl.kv dd");
    let recorded = raw_response(results, &model, "humaneval/22");
    assert_eq!(
        response, recorded,
        "the drill-down shows {model}'s response"
    );
    b.screenshot(&artifacts().join("replay_drill_1280.png"));
    b.eval("document.getElementById('drill-close').click()");
    set_filter(b, "q", "t05_summarization_judged/0");
    b.wait_for("document.querySelector('#view-instances .vrow .id').textContent === 't05_summarization_judged/0'");
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let reasoning = b.eval("document.querySelectorAll('#drill-body pre.reasoning').length");
    assert!(reasoning.as_u64().unwrap() > 0, "judge reasoning shown");
    assert_clean(b);
}

/// A transcript that says smollm2 passed t01/0 with another answer shows one
/// flip in the golden view, with a word diff of the two responses.
fn check_golden(b: &mut Browser, golden: &Path, results: &Path) {
    // The golden view: a transcript that says smollm2 passed t01/0 with another
    // answer shows one flip, with a word diff of the two responses.
    let transcript = golden.join("t01_simple_logic/smollm2.jsonl");
    let edited: Vec<String> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["instance"] == 0 {
                v["passed"] = json!(true);
                v["score"] = json!(1.0);
                v["response"] = json!("Ответ: Иван бегает медленнее всех.");
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&transcript, edited.join("\n") + "\n").unwrap();
    let run_id = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let output = harness(&root())
        .arg("report")
        .arg(&run_id)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let rebuilt = report(results, "html");
    open(b, &rebuilt, 1280, "replay_golden");
    b.eval("document.querySelector('#tabs [data-view=golden]').click()");
    let cell = b.eval(
        "[...document.querySelectorAll('#view-golden tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|'))\
         .filter(r => r.startsWith('smollm2|t01_simple_logic|'))",
    );
    assert_eq!(cell, json!(["smollm2|t01_simple_logic|10|1|0|1|0"]));
    b.wait_for("document.querySelectorAll('#view-golden .vrow').length === 1");
    b.eval("document.querySelector('#view-golden .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let diff = b.eval(
        "[document.querySelectorAll('#drill-body pre.diff del').length > 0, \
          document.querySelectorAll('#drill-body pre.diff ins').length > 0, \
          document.querySelector('#drill-body').textContent.includes('the verdict flipped')]",
    );
    assert_eq!(diff, json!([true, true, true]));
    b.screenshot(&artifacts().join("replay_golden_drill_1280.png"));
    assert_clean(b);
}

/// `model`'s recorded response to `id`, from the raw results.
fn raw_response(results: &Path, model: &str, id: &str) -> String {
    let dir = results.join("raw");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let records: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for r in records.as_array().unwrap() {
            if r["model_name"] == model && r["test_id"] == id {
                return r["llm_response"].as_str().unwrap().to_owned();
            }
        }
    }
    panic!("no raw record of {model} for {id}")
}

/// The sum over models of their `total[key]` in the JSON report.
fn sum_totals(json: &Value, key: &str) -> usize {
    json["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["total"][key].as_u64().unwrap_or(0) as usize)
        .sum()
}
