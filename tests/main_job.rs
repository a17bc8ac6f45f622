//! The README's main command, `harness run specs/` with no model, in a fresh
//! copy of the repository: only the tracked files (what a clone has), with
//! nothing beside it. It replays every committed
//! golden transcript offline, so every category must show a number for each
//! model that has transcripts of it, with an interval that is never zero
//! wide, on lines that fit 80 columns.

use std::collections::BTreeMap;
use std::fs;

use crate::common::{fresh_copy, harness, run};

/// The category tables' cells without a number (`—`), counted per model.
/// The tables follow the leaderboard, one after another: each starts at a
/// header line beginning with `category` (a category a row, a model a
/// column: the longer dimension goes down) or `model` (a model a row), under
/// it a rule of dashes, then its rows until a blank line; cells are
/// separated by two or more spaces (titles have single spaces).
fn empty_cells(out: &str, models: usize) -> BTreeMap<String, usize> {
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let table_start = |l: &&str| l.starts_with("category ") || l.starts_with("model ");
    let lines: Vec<&str> = out.lines().collect();
    let mut at = lines.iter().position(table_start).expect("a summary table");
    let mut missing = BTreeMap::new();
    while lines.get(at).is_some_and(table_start) {
        let header = cells(lines[at]);
        let by_category = header[0] == "category";
        let rows: Vec<&str> = lines[at + 2..]
            .iter()
            .take_while(|l| !l.trim().is_empty())
            .copied()
            .collect();
        if !by_category {
            assert_eq!(rows.len(), models, "one row per model:\n{out}");
        }
        for row in &rows {
            let row = cells(row);
            assert_eq!(row.len(), header.len(), "a cell per column: {row:?}");
            for (j, cell) in row.iter().enumerate().skip(1) {
                if cell == "-" || cell == "—" {
                    let model = if by_category { &header[j] } else { &row[0] };
                    *missing.entry(model.clone()).or_default() += 1;
                }
            }
        }
        at += rows.len() + 3;
    }
    missing
}

/// The models each golden directory holds transcripts of: the two LLMs
/// everywhere, Tesseract (with both language packs, and English alone) for
/// the OCR spec, and SmolLM2 on llama-cpp-python's server (the one that
/// echoes prompt log-probabilities) for the log-likelihood spec.
fn recorded(spec: &str) -> &'static [&'static str] {
    match spec {
        "ocr_lines" => &["tesseract", "tesseract_eng"],
        "ru_choice_loglikelihood" => &["smollm2py"],
        _ => &["smollm2", "gemma3"],
    }
}

#[test]
fn the_main_job_replays_every_category_offline_in_a_fresh_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());

    let (code, out) =
        run(harness(&repo)
            .env("COLUMNS", "80")
            .args(["run", "specs/", "--no-progress"]));
    assert_eq!(code, 0, "{out}");
    // Every model shows a number in every category it has transcripts of,
    // and only there.
    let dirs: Vec<String> = fs::read_dir(repo.join("golden"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let models = [
        "smollm2",
        "gemma3",
        "tesseract",
        "tesseract_eng",
        "smollm2py",
    ];
    let missing = empty_cells(&out, models.len());
    for model in models {
        let without = dirs
            .iter()
            .filter(|d| !recorded(d).contains(&model))
            .count();
        assert_eq!(
            missing.get(model).copied().unwrap_or(0),
            without,
            "{model}: categories without a number\n\n{out}"
        );
    }
    // Both multiple-choice specs show accuracy, acc_norm and calibration.
    for column in ["acc_norm", "ECE ↓", "Brier ↓", "missing labels"] {
        assert!(out.contains(column), "no {column} in the summary:\n{out}");
    }
    // The LLMs rank together; Tesseract ran other categories and stands apart.
    assert!(out.contains("   —  tesseract "), "{out}");
    assert!(out.contains("A rank of — marks a model"), "{out}");
    // Every cell has at least one instance: none may read as certainty.
    assert!(!out.contains("±0.0 "), "a zero-width interval:\n{out}");
    assert!(out.lines().all(|l| !l.ends_with("±0.0")), "{out}");
    let wide: Vec<&str> = out.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(wide.is_empty(), "lines past 80 columns: {wide:#?}");
    // Both models score 0% on AIME's golden subset: neither is named best.
    assert!(out.contains("best: none"), "{out}");
    assert!(
        !out.contains("best: gemma3") && !out.contains("best: smollm2"),
        "{out}"
    );
    let specs = fs::read_dir(repo.join("specs"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    let golden = fs::read_dir(repo.join("golden")).unwrap().count();
    assert_eq!(golden, specs, "every shipped spec has a golden directory");
    for dir in &dirs {
        for model in recorded(dir) {
            assert!(
                repo.join("golden")
                    .join(dir)
                    .join(format!("{model}.jsonl"))
                    .is_file(),
                "golden/{dir} has no transcript of {model}"
            );
        }
    }
    let reports: Vec<String> = fs::read_dir(repo.join("results/reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The Markdown report, and the RRR CSV of each model (both RRR specs ask for it).
    for (prefix, ext) in [
        ("report_", ".md"),
        ("rrr_smollm2_", ".csv"),
        ("rrr_gemma3_", ".csv"),
    ] {
        assert!(
            reports
                .iter()
                .any(|r| r.starts_with(prefix) && r.ends_with(ext)),
            "no {prefix}*{ext} report among {reports:?}\n{out}"
        );
    }
}
