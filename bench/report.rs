//! The HTML report at scale: 10,000 records (2 models × 5 specs × 1,000
//! instances, prompts and responses of a few hundred characters, a third failing),
//! written by `write_reports` and opened in headless Chromium from `file://`.
//!
//! Prints the time to write every report, the HTML file's size, the time from
//! navigation to the page being drawn, and the time to open the instance list and
//! to apply a filter and a search over all rows. Run with `cargo bench --bench
//! report` (or `bench/report.sh`); numbers are printed, not asserted.

#[allow(dead_code)]
#[path = "../tests/common/browser.rs"]
mod browser;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use harness::{ReportContext, ReportKind, SpecInfo, write_reports};
use serde_json::json;

const MODELS: [&str; 2] = ["model-a", "model-b"];
const SPECS: usize = 5;
const INSTANCES: u64 = 1_000;

/// One journal line: a record as the runner writes it.
fn record(model: usize, spec: usize, instance: u64) -> String {
    let passed = (instance * 7 + spec as u64 * 3 + model as u64) % 3 != 0;
    let answer = if passed {
        instance * 2
    } else {
        instance * 2 + 1
    };
    let prompt = format!(
        "Задача {instance} из категории {spec}: вычисли удвоенное значение числа {instance}. \
         Объясни ход решения кратко, затем дай ответ одним числом в последней строке. {}",
        "Контекст задачи. ".repeat(12)
    );
    let response = format!(
        "Рассуждение: удвоим {instance}. {} Ответ: {answer}",
        "Шаг решения с пояснением. ".repeat(8 + (instance % 5) as usize)
    );
    json!({
        "model": MODELS[model],
        "spec": format!("spec_{spec}"),
        "instance": instance,
        "sample": 0,
        "instance_id": format!("spec_{spec}/{instance}"),
        "messages": [
            {"role": "system", "content": "Ты — точный калькулятор."},
            {"role": "user", "content": prompt}
        ],
        "vars": {"n": instance, "parity": if instance % 2 == 0 { "even" } else { "odd" }},
        "expected": {"answer": instance * 2},
        "response": response,
        "answer": answer.to_string(),
        "passed": passed,
        "score": if passed { 1.0 } else { 0.0 },
        "detail": if passed { String::new() } else { format!("answer: got {answer}, expected {}", instance * 2) },
        "rules": [{"name": "answer", "answer": answer.to_string(), "passed": passed,
                   "score": if passed { 1.0 } else { 0.0 }, "detail": ""}],
        "latency_ms": 400 + (instance * 13 + model as u64 * 100) % 900,
        "tokens_in": 120,
        "tokens_out": 60 + instance % 40,
        "attempts": 1,
        "cached": false
    })
    .to_string()
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = dir.path().join("journal.jsonl");
    let mut text = String::new();
    for m in 0..MODELS.len() {
        for s in 0..SPECS {
            for i in 0..INSTANCES {
                let _ = writeln!(text, "{}", record(m, s, i));
            }
        }
    }
    std::fs::write(&journal, &text).expect("journal written");
    let records = MODELS.len() * SPECS * INSTANCES as usize;
    let specs: Vec<SpecInfo> = (0..SPECS)
        .map(|s| SpecInfo {
            group_by: vec!["parity".to_owned()],
            ..SpecInfo::plain(&format!("spec_{s}"))
        })
        .collect();
    let models: Vec<String> = MODELS.iter().map(|m| m.to_string()).collect();
    let journals = [journal];
    let ctx = ReportContext {
        run_ids: &["bench".to_owned()],
        timestamp: "2026-11-23 00:00:00",
        file_stamp: "bench",
        formats: &[ReportKind::Json, ReportKind::Csv],
        ..ReportContext::new(dir.path(), &models, &specs, &journals)
    };
    let started = Instant::now();
    let out = write_reports(&ctx).expect("reports written");
    let write_ms = started.elapsed().as_secs_f64() * 1000.0;
    let size = std::fs::metadata(&out.files.html)
        .expect("html exists")
        .len();
    println!(
        "report: {records} records ({} models × {SPECS} specs × {INSTANCES} instances)",
        MODELS.len()
    );
    println!("write_reports (md, html, json, csv, raw): {write_ms:.0} ms");
    println!(
        "html: {:.2} MiB ({} bytes, {:.0} bytes per record, {:.2}× the journal's {:.2} MiB)",
        size as f64 / 1048576.0,
        size,
        size as f64 / records as f64,
        size as f64 / text.len() as f64,
        text.len() as f64 / 1048576.0
    );
    open_in_browser(&out.files.html, records);
}

/// Opens the page several times and prints the median of each timing.
fn open_in_browser(html: &Path, records: usize) {
    let Some(mut b) = browser::Browser::launch() else {
        println!("browser: skipped (no Chromium: apt-get install chromium)");
        return;
    };
    b.viewport(1280, 900);
    let mut timings: Vec<[f64; 4]> = Vec::new();
    for _ in 0..5 {
        b.open(html);
        let drawn = b.eval("window.__ready_ms").as_f64().unwrap_or(f64::NAN);
        let list = b.eval(
            "(() => { const t = performance.now(); \
             document.querySelector('#tabs [data-view=instances]').click(); \
             return performance.now() - t; })()",
        );
        let filter = b.eval(
            "(() => { const el = document.querySelector('#view-instances [name=status]'); \
             const t = performance.now(); el.value = 'fail'; el.dispatchEvent(new Event('change')); \
             return performance.now() - t; })()",
        );
        let count = b.eval("document.querySelector('#view-instances .count').textContent");
        assert!(
            count
                .as_str()
                .is_some_and(|c| c.ends_with(&format!("of {records} records"))),
            "{count}"
        );
        // The search waits 120 ms for typing to pause: time to the new count, less that.
        let search = b.eval(
            "new Promise(r => { const el = document.querySelector('#view-instances [name=q]'); \
             const count = document.querySelector('#view-instances .count'); \
             const t = performance.now(); \
             new MutationObserver(() => r(performance.now() - t - 120)) \
               .observe(count, { childList: true, characterData: true, subtree: true }); \
             el.value = 'spec_3/99'; el.dispatchEvent(new Event('input')); })",
        );
        timings.push([
            drawn,
            list.as_f64().unwrap_or(f64::NAN),
            filter.as_f64().unwrap_or(f64::NAN),
            search.as_f64().unwrap_or(f64::NAN),
        ]);
    }
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");
    let median = |k: usize| {
        let mut v: Vec<f64> = timings.iter().map(|t| t[k]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "browser (headless Chromium, 1280 px, median of {}): page drawn {:.0} ms after navigation; \
         instance list {:.1} ms; status filter over {records} rows {:.1} ms; first search {:.1} ms",
        timings.len(),
        median(0),
        median(1),
        median(2),
        median(3)
    );
}
