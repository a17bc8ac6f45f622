//! Measures beside the pass rate: a program answers three transcripts whose
//! CER are 0, 0.5 and 0.25 and WER 0, 1 and 0.5 (`tests/fixtures/measures/`),
//! and the terminal, JSON and CSV reports show the means per cell and per
//! `lang`: CER 0.250 and WER 0.500 overall, 0.125 and 0.250 in English, 0.500
//! and 1.000 in Russian. `harness report` on the run, and `harness merge` of
//! two shards of it, recompute them from the journal. The HTML report's
//! heatmap tooltip and measures table show them too.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::browser::Browser;
use crate::common::workspace::Workspace;
use crate::common::{harness, root, run};

/// A workspace with the fixture spec and `echo`, a program answering each instance's `answer`.
fn workspace() -> Workspace {
    workspace_with("measures/ocr_means.toml")
}

/// A workspace with the fixture spec `fixture` and `echo`.
fn workspace_with(fixture: &str) -> Workspace {
    let ws = Workspace::new();
    ws.copy_fixture(fixture);
    std::fs::copy(
        root().join("tests/fixtures/exec/model.py"),
        ws.path().join("model.py"),
    )
    .unwrap();
    ws.write(
        "harness.toml",
        "[models.echo]\nprovider = \"exec\"\ncommand = [\"python3\", \"model.py\", \"text\", \"{{ answer }}\"]\n",
    );
    ws
}

/// The path of the newest report of kind `ext` under `results/reports`.
fn report_path(ws: &Workspace, ext: &str) -> PathBuf {
    let mut names: Vec<_> = std::fs::read_dir(ws.path().join("results/reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    names.sort();
    names.pop().expect("a report")
}

/// The newest report of kind `ext` under `results/reports`.
fn report(ws: &Workspace, ext: &str) -> String {
    std::fs::read_to_string(report_path(ws, ext)).unwrap()
}

/// The measures table of the terminal summary: its lines, split into words.
fn table(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .skip_while(|l| !l.starts_with("OCR means: mean measures"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// Checks the terminal table and the JSON and CSV reports of the run.
fn check(out: &str, json: &str, csv: &str) {
    let rows = table(out);
    let want = [
        vec!["model", "group", "pass", "rate", "CER", "↓", "WER", "↓"],
        vec!["echo", "66.7%", "0.250", "0.500"],
        vec!["echo", "lang=en", "100.0%", "0.125", "0.250"],
        vec!["echo", "lang=ru", "0.0%", "0.500", "1.000"],
    ];
    let rows: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(String::as_str)
                .filter(|w| !w.starts_with('-'))
                .collect()
        })
        .filter(|r: &Vec<&str>| !r.is_empty())
        .collect();
    assert_eq!(rows, want, "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    let json: Value = serde_json::from_str(json).unwrap();
    let cell = &json["models"][0]["specs"][0];
    let mean = |m: &Value, name: &str| m["measures"][name]["mean"].as_f64();
    assert_eq!(mean(&cell["metrics"], "CER"), Some(0.25), "{cell:#}");
    assert_eq!(mean(&cell["metrics"], "WER"), Some(0.5), "{cell:#}");
    assert_eq!(cell["metrics"]["measures"]["CER"]["count"], 3);
    let en = &cell["groups"]["lang"]["en"];
    assert_eq!(
        (mean(en, "CER"), mean(en, "WER")),
        (Some(0.125), Some(0.25))
    );
    let ru = &cell["groups"]["lang"]["ru"];
    assert_eq!((mean(ru, "CER"), mean(ru, "WER")), (Some(0.5), Some(1.0)));
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].ends_with(",mean CER,mean WER"), "{csv}");
    let ends = [",0.2500,0.5000", ",0.1250,0.2500", ",0.5000,1.0000"];
    for (line, end) in lines[1..].iter().zip(ends) {
        assert!(line.ends_with(end), "{line} ends with {end}");
    }
}

#[test]
fn reports_show_mean_cer_and_wer_per_cell_and_group() {
    let ws = workspace();
    let run_args = [
        "specs/", "-m", "echo", "--format", "json", "--format", "csv",
    ];
    let out = ws.run_ok(&run_args);
    check(&out, &report(&ws, "json"), &report(&ws, "csv"));
    let journal = ws.last_journal();
    let second = journal.iter().find(|r| r["instance"] == 1).unwrap();
    let measure = &second["rules"][0]["measure"];
    assert_eq!(
        (measure["name"].as_str(), measure["value"].as_f64()),
        (Some("CER"), Some(0.5))
    );
    let md = report(&ws, "md");
    let squeezed: Vec<String> = md
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let row = "| **echo** | lang=ru | 0.0% | 0.500 | 1.000 |";
    assert!(squeezed.iter().any(|l| l == row), "{md}");

    html(&ws);

    // `harness report` on the finished run computes the same means from its journal.
    let run_dir = ws.run_dirs().pop().unwrap();
    let id = run_dir.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::remove_dir_all(ws.path().join("results/reports")).unwrap();
    let mut cmd = harness(ws.path());
    cmd.args([
        "report",
        "--results",
        "results",
        "--format",
        "json",
        "--format",
        "csv",
        &id,
    ]);
    let (code, out) = run(&mut cmd);
    assert_eq!(code, 0, "{out}");
    check(&out, &report(&ws, "json"), &report(&ws, "csv"));
}

#[test]
fn two_shards_merge_into_the_same_means() {
    let ws = workspace();
    for shard in ["0/2", "1/2"] {
        ws.run_ok(&["specs/", "-m", "echo", "--run-id", "job", "--shard", shard]);
    }
    std::fs::remove_dir_all(ws.path().join("results/reports")).unwrap();
    let mut merge = harness(ws.path());
    merge.args(["merge", "--results", "results", "--golden", "golden"]);
    merge.args(["--format", "json", "--format", "csv"]);
    merge.args([
        "results/runs/job-shard-0-of-2",
        "results/runs/job-shard-1-of-2",
    ]);
    let (code, out) = run(&mut merge);
    assert_eq!(code, 0, "{out}");
    check(&out, &report(&ws, "json"), &report(&ws, "csv"));
}

/// The HTML report: the heatmap cell's tooltip names the means, and the
/// categories view has the measures table (skipped without Chromium).
fn html(ws: &Workspace) {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    b.viewport(1280, 900);
    b.open(&report_path(ws, "html"));
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");
    let tip = b.eval("document.querySelector('table.heat td.cell').title");
    let tip = tip.as_str().unwrap_or_default();
    assert!(tip.ends_with(", CER 0.250, WER 0.500"), "{tip}");
    b.eval("document.querySelector('#tabs [data-view=categories]').click()");
    let rows = b.eval(
        "[...document.querySelectorAll('#view-categories tr')].map(r => r.textContent)\
         .filter(t => t.includes('lang=ru'))",
    );
    assert_eq!(rows, serde_json::json!(["echolang=ru0.0%0.5001.000"]));
}

#[test]
fn specs_without_measures_add_no_columns() {
    let ws = workspace_with("exec/sums.toml");
    let out = ws.run_ok(&[
        "specs/", "-m", "echo", "--format", "json", "--format", "csv",
    ]);
    assert!(!out.contains("mean measures"), "{out}");
    assert!(!report(&ws, "json").contains("\"measures\""));
    assert!(!report(&ws, "csv").contains("mean CER"));
    assert!(!report(&ws, "md").contains("## Measures"));
}
