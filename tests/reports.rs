//! Reports built from the fixture journal `tests/fixtures/journals/two_models.jsonl`:
//! 2 models × 2 specs with every rule failure kind, request errors, a cached
//! record, a second sample, a duplicate key and a torn last line.

use std::fs;
use std::path::{Path, PathBuf};

use harness::Lang;
use harness::{ReportContext, ReportKind, ReportOutput, SpecInfo, write_reports};
use serde_json::Value;

use crate::common::alone::{in_own_process, test_name};
use crate::common::strings;

pub(crate) mod episodes;
/// pass@k and pass^k of repeated agent trials.
mod pass_k;

const STAMP: &str = "20261121_223000";

fn fixture() -> PathBuf {
    crate::common::root().join("tests/fixtures/journals/two_models.jsonl")
}

fn specs() -> Vec<SpecInfo> {
    [
        ("t01_simple_logic", "Простая логика"),
        ("t04_data_extraction", "Извлечение \"JSON\", поля"),
        ("t06_mathematics", "Арифметика"),
    ]
    .map(|(id, title)| SpecInfo {
        title: title.into(),
        ..SpecInfo::plain(id)
    })
    .to_vec()
}

/// Builds every format from `journals` (run ids `runs`) into a fresh directory, in English.
fn build(runs: &[&str], journals: Vec<PathBuf>, color: bool) -> (ReportOutput, tempfile::TempDir) {
    build_in(Lang::En, runs, journals, color)
}

/// [`build`] in `lang`.
fn build_in(
    lang: Lang,
    runs: &[&str],
    journals: Vec<PathBuf>,
    color: bool,
) -> (ReportOutput, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let run_ids: Vec<String> = runs.iter().map(|r| r.to_string()).collect();
    let models = vec!["qwen3:8b".to_owned(), "gpt-4o-mini".to_owned()];
    let specs = specs();
    let ctx = ReportContext {
        run_ids: &run_ids,
        timestamp: "2026-11-21 22:30:00",
        file_stamp: STAMP,
        formats: &[
            ReportKind::Json,
            ReportKind::Csv,
            ReportKind::Junit,
            ReportKind::Csv,
        ],
        color,
        lang,
        ..ReportContext::new(dir.path(), &models, &specs, &journals)
    };
    (write_reports(&ctx).unwrap(), dir)
}

fn one_run() -> (ReportOutput, tempfile::TempDir) {
    build(&["r1"], vec![fixture()], false)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn extra(out: &ReportOutput, ext: &str) -> String {
    let path = out
        .files
        .extra
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == ext))
        .unwrap();
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("report_{STAMP}.{ext}")
    );
    read(path)
}

#[test]
fn report_files_land_under_results_reports() {
    let (out, dir) = one_run();
    assert_eq!(
        out.files.markdown,
        dir.path().join(format!("reports/report_{STAMP}.md"))
    );
    let raw: Vec<_> = out
        .files
        .raw
        .iter()
        .map(|p| p.strip_prefix(dir.path()).unwrap().to_owned())
        .collect();
    assert_eq!(
        raw,
        [
            format!("raw/qwen3_8b_{STAMP}.json"),
            format!("raw/gpt-4o-mini_{STAMP}.json")
        ]
        .map(PathBuf::from)
    );
    // The repeated Csv format is written once.
    assert_eq!(out.files.extra.len(), 3);
}

/// The fixture journal's one run, its reports in `lang`.
fn one_run_in(lang: Lang) -> (ReportOutput, tempfile::TempDir) {
    build_in(lang, &["r1"], vec![fixture()], false)
}

/// The fixture run's Markdown report in `lang`, which holds each of `lines`.
fn markdown_with(lang: Lang, lines: &[&str]) -> String {
    let (out, _dir) = one_run_in(lang);
    let md = read(&out.files.markdown);
    for line in lines {
        assert!(md.contains(line), "{line}");
    }
    md
}

/// The Russian Markdown report: the «Базовый Контроль» layout, byte for byte.
#[test]
fn markdown_report() {
    let md = markdown_with(
        Lang::Ru,
        &[
            "# Отчет о Тестировании LLM\n",
            "**Дата и время:** 2026-11-21 22:30:00\n",
            "**Протестированные модели:** `qwen3:8b`, `gpt-4o-mini`\n",
            "## Сводная Таблица Результатов\n",
            "| Модель / Категория | Простая логика | Извлечение \"JSON\", поля | Арифметика | **ИТОГО** |",
            "## Детальный Анализ\n",
        ],
    );
    assert!(!md.contains("Точность"), "{md}");
    insta::assert_snapshot!(md);
}

/// The English Markdown report: the same layout in English.
#[test]
fn markdown_report_en() {
    let md = markdown_with(
        Lang::En,
        &[
            "# LLM Test Report\n",
            "## Summary of Results\n",
            "## Detailed Analysis\n",
        ],
    );
    // Model text stays as the model wrote it: only the phrases change.
    assert!(
        !md.contains("Сильные стороны") && !md.contains("Ожидалось"),
        "{md}"
    );
    insta::assert_snapshot!(md);
}

#[test]
fn csv_report_ru() {
    let (out, _dir) = one_run_in(Lang::Ru);
    insta::assert_snapshot!(extra(&out, "csv").replace("\r\n", "⏎\n"));
}

#[test]
fn terminal_table_ru() {
    let (out, _dir) = one_run_in(Lang::Ru);
    insta::assert_snapshot!(out.terminal);
}

#[test]
fn csv_report() {
    let (out, _dir) = one_run();
    let csv = extra(&out, "csv");
    assert!(!csv.replace("\r\n", "").contains('\n'), "CRLF line ends");
    insta::assert_snapshot!(csv.replace("\r\n", "⏎\n"));
}

#[test]
fn junit_report() {
    let (out, _dir) = one_run();
    insta::assert_snapshot!(extra(&out, "xml"));
}

#[test]
fn json_report() {
    let (out, _dir) = one_run();
    let text = extra(&out, "json");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["models"][0]["name"], "qwen3:8b");
    insta::assert_snapshot!(text);
}

#[test]
fn terminal_table() {
    let (out, _dir) = one_run();
    insta::assert_snapshot!(out.terminal);
}

#[test]
fn terminal_colors_do_not_shift_columns() {
    let (plain, _a) = one_run();
    let (colored, _b) = build(&["r1"], vec![fixture()], true);
    assert!(colored.terminal.contains("\u{1b}[33m"), "yellow from 50 %");
    assert!(colored.terminal.contains("\u{1b}[31m"), "red below 50 %");
    let stripped = regex::Regex::new("\u{1b}\\[[0-9;]*m")
        .unwrap()
        .replace_all(&colored.terminal, "");
    assert_eq!(stripped, plain.terminal);
}

#[test]
fn raw_json_keeps_its_documented_keys_in_order() {
    let (out, _dir) = one_run();
    let v: Value = serde_json::from_str(&read(&out.files.raw[0])).unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(
        strings(items, "test_id"),
        [
            "t01_simple_logic/0",
            "t01_simple_logic/0#1",
            "t01_simple_logic/1",
            "t01_simple_logic/2",
            "t01_simple_logic/3",
            "t04_data_extraction/0",
            "t04_data_extraction/1",
            "t04_data_extraction/2",
            "t04_data_extraction/3"
        ]
    );
    for key in [
        "test_id",
        "model_name",
        "prompt",
        "llm_response",
        "expected_output",
        "is_correct",
        "execution_time_ms",
    ] {
        assert!(items.iter().all(|i| i.get(key).is_some()), "{key}");
    }
    let first = &items[0];
    assert_eq!(first["model_name"], "qwen3:8b");
    assert_eq!(
        first["prompt"],
        "system: Отвечай одним словом.\n\nuser: Задача 0: кто выше всех?"
    );
    assert_eq!(first["expected_output"], "Вера");
    assert_eq!(
        (
            first["is_correct"].as_bool(),
            first["execution_time_ms"].as_u64()
        ),
        (Some(true), Some(1200))
    );
    // The later journal line for instance 1 wins over the earlier one.
    assert_eq!(items[2]["llm_response"], "Самый высокий — Борис.");
    assert_eq!(items[8]["error"], "request timed out after 30 s");
    let gpt: Value = serde_json::from_str(&read(&out.files.raw[1])).unwrap();
    assert_eq!(
        gpt[5]["expected_output"]["format"], "object",
        "several rules: the map"
    );
}

/// Seeded bootstraps and no clock: the same journals give every report byte for
/// byte, the HTML page and a run comparison included.
#[test]
fn the_same_journals_give_the_same_bytes() {
    for runs in [&["r1"][..], &["r1", "r2"]] {
        let journals = vec![fixture(); runs.len()];
        let (a, _a) = build(runs, journals.clone(), false);
        let (b, _b) = build(runs, journals, false);
        let files = |o: &ReportOutput| -> Vec<PathBuf> { o.files.all().cloned().collect() };
        let (fa, fb) = (files(&a), files(&b));
        assert_eq!(fa.len(), fb.len());
        for (x, y) in fa.iter().zip(&fb) {
            assert_eq!(
                fs::read(x).unwrap(),
                fs::read(y).unwrap(),
                "{}",
                x.display()
            );
        }
        assert_eq!(a.terminal, b.terminal);
    }
}

#[test]
fn a_model_in_several_runs_is_shown_per_run() {
    let (out, dir) = build(&["r1", "r2"], vec![fixture(), fixture()], false);
    let names: Vec<_> = out
        .files
        .raw
        .iter()
        .map(|p| p.strip_prefix(dir.path().join("raw")).unwrap().to_owned())
        .collect();
    let want = [
        "r1_qwen3_8b",
        "r2_qwen3_8b",
        "r1_gpt-4o-mini",
        "r2_gpt-4o-mini",
    ]
    .map(|s| PathBuf::from(format!("{s}_{STAMP}.json")));
    assert_eq!(names, want);
    for name in [
        "r1/qwen3:8b",
        "r2/qwen3:8b",
        "r1/gpt-4o-mini",
        "r2/gpt-4o-mini",
    ] {
        assert!(
            out.terminal
                .lines()
                .any(|l| l.starts_with(&format!("   1  {name} "))),
            "{name} on the leaderboard: {}",
            out.terminal
        );
    }
    let raw: Value = serde_json::from_str(&read(&out.files.raw[1])).unwrap();
    assert_eq!(raw[0]["model_name"], "r2/qwen3:8b");
}

#[test]
fn no_journals_still_make_a_report() {
    let (out, _dir) = build(&[], Vec::new(), false);
    let md = read(&out.files.markdown);
    assert!(md.contains("| **qwen3:8b**"), "{md}");
    assert!(md.contains("No records."), "{md}");
    assert_eq!(read(&out.files.raw[0]), "[]\n");
}

/// Peak resident memory of this process, in KiB (Linux).
fn peak_rss_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .unwrap_or("VmHWM: 0 kB");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// 100,000 records with 2 KB prompts: the report reads them one at a time, so
/// memory stays far below the journal's size. Slow in debug builds: run with
/// `cargo test --release --test tests reports::large_journals -- --ignored`.
/// Peak memory is the process's: the test measures it in a process of its own.
#[test]
#[ignore]
fn large_journals_stay_bounded() {
    if !in_own_process(
        &test_name(module_path!(), "large_journals_stay_bounded"),
        &[],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let lines: Vec<Value> = read(&fixture())
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut out = std::io::BufWriter::new(fs::File::create(&journal).unwrap());
    for i in 0..100_000u64 {
        let mut r = lines[(i % lines.len() as u64) as usize].clone();
        r["instance"] = i.into();
        r["instance_id"] = format!("{}/{i}", r["spec"].as_str().unwrap()).into();
        r["messages"][0]["content"] = "x".repeat(2000).into();
        serde_json::to_writer(&mut out, &r).unwrap();
        std::io::Write::write_all(&mut out, b"\n").unwrap();
    }
    drop(out);
    let size_kib = fs::metadata(&journal).unwrap().len() / 1024;
    let before = peak_rss_kib();
    let start = std::time::Instant::now();
    let (report, _out) = build(&["r1"], vec![journal], false);
    let grew = peak_rss_kib().saturating_sub(before);
    eprintln!(
        "journal {size_kib} KiB, peak RSS grew {grew} KiB, {:?}",
        start.elapsed()
    );
    assert!(
        grew < size_kib / 4,
        "grew {grew} KiB for a {size_kib} KiB journal"
    );
    assert!(report.terminal.contains("qwen3:8b"));
}

/// A journal written before failures were typed, holding every kind once
/// (`tests/fixtures/journals/every_failure.jsonl`): its Markdown report
/// and error causes are what the kind names, whatever the message says.
#[test]
fn an_old_journal_with_every_failure_kind_reports_alike() {
    let dir = tempfile::tempdir().unwrap();
    let journals = vec![crate::common::root().join("tests/fixtures/journals/every_failure.jsonl")];
    let models = vec!["m".to_owned()];
    let specs = ["rules", "requests", "episodes"]
        .map(SpecInfo::plain)
        .to_vec();
    let ctx = ReportContext {
        timestamp: "2026-11-21 22:30:00",
        file_stamp: STAMP,
        ..ReportContext::new(dir.path(), &models, &specs, &journals)
    };
    let out = write_reports(&ctx).unwrap();
    let causes: Vec<(String, u64)> = out
        .error_causes
        .iter()
        .map(|c| (c.cause.clone(), c.count))
        .collect();
    insta::assert_debug_snapshot!(causes);
    insta::assert_snapshot!(read(&out.files.markdown));
}

/// Two models over eight categories: one table, a category a row, whole at
/// 80 columns; a 200-column terminal (`COLUMNS`) takes the wide table as is.
#[test]
fn few_models_over_many_categories_read_down_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let first = read(&fixture()).lines().next().unwrap().to_owned();
    let mut lines = String::new();
    let models = vec!["qwen3:8b".to_owned(), "gpt-4o-mini".to_owned()];
    let ids: Vec<String> = (1..=8).map(|c| format!("category_{c}")).collect();
    for (m, model) in models.iter().enumerate() {
        for (c, id) in ids.iter().enumerate() {
            for i in 0..4 {
                let mut r: Value = serde_json::from_str(&first).unwrap();
                r["model"] = model.as_str().into();
                r["spec"] = id.as_str().into();
                r["instance"] = i.into();
                r["instance_id"] = format!("{id}/{i}").into();
                r["passed"] = (i < (c + m) % 5).into();
                r["score"] = if i < (c + m) % 5 { 1.0 } else { 0.0 }.into();
                r["rules"][0]["passed"] = r["passed"].clone();
                r["rules"][0]["score"] = r["score"].clone();
                lines += &format!("{r}\n");
            }
        }
    }
    let journal = dir.path().join("journal.jsonl");
    fs::write(&journal, lines).unwrap();
    let specs: Vec<SpecInfo> = ids.iter().map(|id| SpecInfo::plain(id)).collect();
    let journals = [journal];
    let terminal = |width: usize| {
        let ctx = ReportContext {
            file_stamp: &format!("w{width}"),
            width,
            ..ReportContext::new(dir.path(), &models, &specs, &journals)
        };
        write_reports(&ctx).unwrap().terminal
    };
    let narrow = terminal(80);
    assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
    insta::assert_snapshot!(narrow);
    // Models across would fit 200 columns: the longer dimension still goes
    // down; only the closing note takes the width.
    let wide = terminal(200);
    let tables = |t: &str| t.split("\n\nCells").next().unwrap().to_owned();
    assert_eq!(tables(&wide), tables(&narrow));
    assert!(wide.lines().any(|l| l.chars().count() > 80), "{wide}");
}
