//! The HTML report in a real browser (headless Chromium over the DevTools
//! protocol): reports from real runs (the shipped replay with its judged specs,
//! a sampled spec and a pool of two endpoints against fake servers) and from
//! a journal of hostile answers, opened from `file://`. Each test asserts no
//! console errors and no network request, the numbers the page shows against
//! the other reports, the filters, the drill-down, and that model output
//! renders as text; the page in the report's language and a heatmap of 16
//! categories at 1280×800 (`language`); an agent episode drawn step by step,
//! its filters into calls (`episode`); a `--sweep`'s curves (`sweep`).
//! Screenshots at 1280 and 390 px land in `target/browser/`.

mod choices;
mod episode;
mod language;
mod replay;
mod sweep;

use std::path::{Path, PathBuf};

use crate::common::browser::{Browser, artifacts};
use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::root;
use crate::common::workspace::fake_workspace;
use serde_json::{Value, json};

/// The only report of `kind` (`html`, `json`) under `results/reports`.
pub(crate) fn report(results: &Path, ext: &str) -> PathBuf {
    let dir = results.join("reports");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("report_")
        })
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no .{ext} report in {}", dir.display()))
}

/// `42.0% ±3.1`, as every report prints an accuracy with its interval.
fn with_interval(score: f64, interval: &Value) -> String {
    let pct = format!("{:.1}%", score * 100.0);
    match (interval["low"].as_f64(), interval["high"].as_f64()) {
        (Some(lo), Some(hi)) => format!("{pct} ±{:.1}", (hi - lo) * 50.0),
        _ => pct,
    }
}

/// Opens `page` at `width`, checks it drew cleanly, and saves a screenshot.
fn open(b: &mut Browser, page: &Path, width: u32, shot: &str) {
    b.viewport(width, 900);
    b.open(page);
    assert_clean(b);
    b.screenshot(&artifacts().join(format!("{shot}_{width}.png")));
}

/// No console error, no exception, and no request but the page itself.
fn assert_clean(b: &Browser) {
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");
    let page_only = b
        .requests()
        .iter()
        .all(|u| u.starts_with("file://") && u.ends_with(".html") || u.starts_with("data:"));
    assert!(page_only, "network requests: {:?}", b.requests());
}

fn text(b: &mut Browser, selector: &str) -> String {
    let v = b.eval(&format!(
        "(document.querySelector({}) || {{}}).textContent || ''",
        json!(selector)
    ));
    v.as_str().unwrap_or_default().to_owned()
}

fn set_filter(b: &mut Browser, name: &str, value: &str) {
    b.eval(&format!(
        "(() => {{ const el = document.querySelector('#view-instances [name={name}]'); \
         el.value = {}; el.dispatchEvent(new Event(el.tagName === 'INPUT' ? 'input' : 'change')); }})()",
        json!(value)
    ));
}

/// The instance list's count line once it reads `expected` records.
fn wait_count(b: &mut Browser, expected: usize, total: usize) {
    b.wait_for(&format!(
        "document.querySelector('#view-instances .count').textContent === '{expected} of {total} records'"
    ));
}

/// Hostile answers: markup, an event handler and raw terminal escapes.
const HOSTILE: &str = "</script><script>window.__pwned = 1</script>\
    <img src=x onerror=\"window.__pwned = 2\"> \u{1b}[31mred\u{1b}[0m <b>bold</b>";

/// The two-model journal fixture with every answer made [`HOSTILE`], written
/// as `run_dir/journal.jsonl`.
fn hostile_journal(run_dir: &Path) -> PathBuf {
    std::fs::create_dir_all(run_dir).unwrap();
    let fixture = root().join("tests/fixtures/journals/two_models.jsonl");
    let mut lines = Vec::new();
    for line in std::fs::read_to_string(fixture).unwrap().lines() {
        let Ok(mut r) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        r["response"] = json!(HOSTILE);
        r["detail"] = json!(HOSTILE);
        r["answer"] = json!("<script>window.__pwned = 3</script>");
        r["reasoning"] = json!({"text": HOSTILE.replace("__pwned = ", "__pwned = 5")});
        lines.push(r.to_string());
    }
    let journal = run_dir.join("journal.jsonl");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    journal
}

#[test]
fn hostile_answers_render_as_text() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let journal = hostile_journal(&dir.path().join("results/runs/r1"));
    let ctx_models = vec!["qwen3:8b".to_owned()];
    let specs = vec![harness::SpecInfo {
        title: "<img src=x onerror=\"window.__pwned = 4\">".into(),
        ..harness::SpecInfo::plain("t01_simple_logic")
    }];
    let journals = [journal];
    let results = dir.path().join("results");
    let ctx = harness::ReportContext {
        run_ids: &["r1".to_owned()],
        timestamp: "2026-11-21 22:30:00",
        file_stamp: "hostile",
        ..harness::ReportContext::new(&results, &ctx_models, &specs, &journals)
    };
    let out = harness::write_reports(&ctx).unwrap();
    open(&mut b, &out.files.html, 1280, "hostile_overview");
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    b.wait_for("document.querySelectorAll('#view-instances .vrow').length > 0");
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    b.screenshot(&artifacts().join("hostile_drill_1280.png"));
    let response = text(&mut b, "#drill-body pre.response");
    assert!(
        response.contains("<script>window.__pwned = 1</script>"),
        "{response}"
    );
    assert!(response.contains("<img src=x onerror="), "{response}");
    // The reasoning shows folded, as text.
    assert_eq!(
        b.eval("document.querySelector('#drill-body details.reasoning').open"),
        json!(false)
    );
    let reasoning = text(&mut b, "#drill-body details.reasoning pre");
    assert!(
        reasoning.contains("<img src=x onerror=\"window.__pwned = 52\">"),
        "{reasoning}"
    );
    assert!(
        response.contains("␛[31mred␛[0m"),
        "escapes shown, not obeyed: {response}"
    );
    let injected = b.eval(
        "[window.__pwned === undefined, document.querySelectorAll('main img, #drill img, main script, #drill script, b').length]",
    );
    assert_eq!(
        injected,
        json!([true, 0]),
        "no markup from the data became elements"
    );
    b.eval("document.querySelector('#tabs [data-view=categories]').click()");
    assert_eq!(b.eval("window.__pwned === undefined"), json!(true));
    assert_clean(&b);
}

#[test]
fn sampled_spec_report_shows_pass_at_k_beside_pass_hat_k_and_flaky_instances() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let fake = FakeServer::start(crate::sampling::seeded);
    let ws = fake_workspace(&fake, "sampled.toml", crate::sampling::SPEC);
    let (code, out) = ws.run(&["specs/sampled.toml", "-m", "fake"]);
    assert_eq!(code, 0, "{out}");
    let html = report(&ws.path().join("results"), "html");
    open(&mut b, &html, 1280, "sampled_overview");
    b.eval("document.querySelector('#tabs [data-view=categories]').click()");
    let heads =
        b.eval("[...document.querySelectorAll('#view-categories th')].map(t => t.textContent)");
    for head in ["pass@2", "pass^2", "pass@4", "pass^4"] {
        assert!(heads.as_array().unwrap().contains(&json!(head)), "{heads}");
    }
    // pass@2 = 1, pass^2 = C(3,2)/C(4,2) = 50%: three of four samples pass.
    let row = b.eval(
        "[...document.querySelectorAll('#view-categories h4 + .scroll tbody tr td')].map(t => t.textContent)",
    );
    let cells: Vec<String> = row
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    // Each with half its bootstrap interval (every problem alike: no spread).
    assert!(
        (cells.windows(3)).any(|w| w == ["100.0% ±0.0", "100.0% ±0.0", "50.0% ±0.0"]),
        "{cells:?}"
    );
    b.screenshot(&artifacts().join("sampled_categories_1280.png"));
    b.eval("document.querySelector('#tabs [data-view=flaky]').click()");
    b.wait_for("document.querySelectorAll('#view-flaky table.flaky tbody tr').length === 3");
    let first = text(&mut b, "#view-flaky table.flaky tbody tr td");
    assert_eq!(first, "sampled/0");
    b.eval("document.querySelector('#view-flaky table.flaky tbody tr').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let samples = b.eval("document.querySelectorAll('#drill-body .samples button').length");
    assert_eq!(
        samples,
        json!(4),
        "every sample of the instance is one click away"
    );
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    set_filter(&mut b, "status", "flaky");
    wait_count(&mut b, 12, 12);
    set_filter(&mut b, "status", "fail");
    wait_count(&mut b, 3, 12);
    open(&mut b, &html, 390, "sampled_overview");
    assert_clean(&b);
}

/// Answers every sum right.
fn sums(request: &Request) -> Reply {
    let value = crate::common::fake_server::expression(&request.prompt)
        .and_then(|e| crate::common::fake_server::eval(&e))
        .unwrap_or(0);
    Reply::Text(format!("the answer is {value}"))
}

#[test]
fn a_pool_run_shows_each_endpoints_requests_beside_the_json_report() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let (one, two) = (FakeServer::start(sums), FakeServer::start(sums));
    let ws = crate::common::workspace::Workspace::new();
    ws.write("specs/sums.toml", crate::compare_runs::SPEC);
    let pool = format!(
        "openai:fake-model@{},{}",
        one.openai_base(),
        two.openai_base()
    );
    ws.run_ok(&["specs/sums.toml", "-m", &pool, "--format", "json"]);
    let results = ws.path().join("results");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report(&results, "json")).unwrap()).unwrap();
    let endpoints = json["models"][0]["endpoints"].as_object().unwrap().clone();
    assert_eq!(endpoints.len(), 2, "{endpoints:?}");
    open(&mut b, &report(&results, "html"), 1280, "pool_overview");
    let rows = b.eval(
        "[...document.querySelectorAll('table.pools tbody tr')].map(r => [...r.cells].map(c => c.textContent))",
    );
    let rows: Vec<Vec<String>> = serde_json::from_value(rows).unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, (url, stats)) in rows.iter().zip(&endpoints) {
        assert_eq!(row[0], "fake-model", "{row:?}");
        assert_eq!(&row[1], url, "endpoints in the JSON report's order");
        assert_eq!(row[2], stats["requests"].to_string(), "{row:?}");
        assert_eq!(row[3], "0", "{row:?}");
        assert_eq!(row[5], stats["latency_ms"]["p50"].to_string(), "{row:?}");
    }
    let served: u64 = endpoints
        .values()
        .map(|e| e["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(
        served, 30,
        "every instance answered by one endpoint or the other"
    );
    assert!(one.count() > 0 && two.count() > 0, "both endpoints served");
}
