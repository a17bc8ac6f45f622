//! The README's main command, `harness run specs/` with no model, in a fresh
//! copy of the repository: only the tracked files (what a clone has), with
//! nothing beside it. It replays every committed
//! golden transcript offline, so every category must show a number, with an
//! interval that is never zero wide, on lines that fit 80 columns.

use std::fs;

use crate::common::{fresh_copy, harness, run};

/// The summary table's cells without a number (`-`), as `model: column`.
/// The table starts at the header line beginning with `model`, under it a
/// rule of dashes, then one row per model until a blank line; cells are
/// separated by two or more spaces (titles have single spaces).
fn empty_cells(out: &str) -> Vec<String> {
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let lines: Vec<&str> = out.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("model "))
        .expect("a summary table");
    let header = cells(lines[start]);
    let rows: Vec<&str> = lines[start + 2..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .copied()
        .collect();
    assert_eq!(rows.len(), 2, "one row per model:\n{out}");
    let mut missing = Vec::new();
    for row in rows {
        let row = cells(row);
        assert_eq!(row.len(), header.len(), "a cell per column: {row:?}");
        for (column, cell) in header.iter().zip(&row) {
            if cell == "-" || cell == "—" {
                missing.push(format!("{}: {column}", row[0]));
            }
        }
    }
    missing
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
    let missing = empty_cells(&out);
    assert!(
        missing.is_empty(),
        "categories without a number: {missing:?}\n\n{out}"
    );
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
    for model in ["smollm2", "gemma3"] {
        for entry in fs::read_dir(repo.join("golden")).unwrap() {
            let dir = entry.unwrap().path();
            assert!(
                dir.join(format!("{model}.jsonl")).is_file(),
                "{} has no transcript of {model}",
                dir.display()
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
