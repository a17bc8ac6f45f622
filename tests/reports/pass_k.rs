//! pass@k and pass^k of repeated agent trials (`tests/fixtures/journals/
//! agent_trials.jsonl`: 2 models × 6 tasks × 4 trials, grouped by
//! `domain`), in every report format: each value equal to the closed form
//! of its passes per task to 1e-12, each with a bootstrap interval around
//! it, per cell and per group.

use harness::{Lang, ReportContext, ReportKind, ReportOutput, Spec, SpecInfo, write_reports};
use serde_json::Value;

use super::{extra, read};

/// The trials' reports under `dir`.
fn build(dir: &std::path::Path) -> ReportOutput {
    let models = vec!["agent-a".to_owned(), "agent-b".to_owned()];
    let root = crate::common::root();
    let spec = Spec::load(&root.join("tests/fixtures/specs/retail_trials.toml")).unwrap();
    let specs = vec![SpecInfo::of(&spec)];
    let journals = [root.join("tests/fixtures/journals/agent_trials.jsonl")];
    let ctx = ReportContext {
        run_ids: &["r1".to_owned()],
        timestamp: "2026-11-28 04:00:00",
        file_stamp: super::STAMP,
        formats: &[ReportKind::Json, ReportKind::Csv, ReportKind::Junit],
        lang: Lang::En,
        ..ReportContext::new(dir, &models, &specs, &journals)
    };
    write_reports(&ctx).unwrap()
}

/// C(n, k) as a float, by the multiplicative formula.
fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).map(|i| (n - i) as f64 / (i + 1) as f64).product()
}

/// Passes per task of each model, as the fixture was written.
fn passes(model: &str) -> Vec<u64> {
    let base: [u64; 6] = [4, 3, 2, 1, 0, 3];
    let shift = u64::from(model == "agent-b");
    (base.iter().enumerate())
        .map(|(i, &c)| {
            if i % 2 == 1 {
                c.saturating_sub(shift)
            } else {
                c
            }
        })
        .collect()
}

/// The closed forms over `tasks`' passes of 4 trials: (pass@k, pass^k).
fn closed(tasks: &[u64], k: u64) -> (f64, f64) {
    let n = tasks.len() as f64;
    let at = tasks.iter().map(|&c| 1.0 - choose(4 - c, k) / choose(4, k));
    let hat = tasks.iter().map(|&c| choose(c, k) / choose(4, k));
    (at.sum::<f64>() / n, hat.sum::<f64>() / n)
}

/// Asserts `rates`' pass@k and pass^k at every k against the closed forms,
/// each inside its interval.
fn assert_rates(rates: &Value, tasks: &[u64], what: &str) {
    for k in [1u64, 2, 4] {
        let (at, hat) = closed(tasks, k);
        for (name, want) in [("pass_at_k", at), ("pass_hat_k", hat)] {
            let key = k.to_string();
            let got = rates[name][&key]
                .as_f64()
                .unwrap_or_else(|| panic!("{what} {name}: {rates}"));
            assert!(
                (got - want).abs() < 1e-12,
                "{what} {name}[{k}]: {got} vs {want}"
            );
            let interval = &rates[format!("{name}_interval")][&key];
            let (low, high) = (
                interval["low"].as_f64().unwrap(),
                interval["high"].as_f64().unwrap(),
            );
            assert!(
                low <= got + 1e-12 && got <= high + 1e-12,
                "{what} {name}[{k}]: {got} not in [{low}, {high}]"
            );
        }
    }
}

#[test]
fn pass_hat_k_equals_the_closed_form_per_cell_and_group_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = build(dir.path());
    let json: Value = serde_json::from_str(&extra(&out, "json")).unwrap();
    let comparison = &json["comparisons"][0];
    for line in comparison["models"].as_array().unwrap() {
        let model = line["model"].as_str().unwrap();
        let tasks = passes(model);
        assert_rates(line, &tasks, model);
        // The first three tasks are `returns`, the rest `orders`.
        assert_rates(&line["groups"]["domain"]["returns"], &tasks[..3], model);
        assert_rates(&line["groups"]["domain"]["orders"], &tasks[3..], model);
    }
    // agent-a: one task of six passes all four trials.
    let md = read(&out.files.markdown);
    assert!(md.contains("pass^4") && md.contains("16.7% ±"), "{md}");
    assert!(md.contains("pass rate / pass@4 / pass^4"), "{md}");
    let csv = extra(&out, "csv");
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with(",k,pass@k,pass@k_low,pass@k_high,pass^k,pass^k_low,pass^k_high"),
        "{header}"
    );
    let a = csv
        .lines()
        .find(|l| l.starts_with("agent-a,retail_trials,"))
        .unwrap();
    let (_, hat) = closed(&passes("agent-a"), 4);
    assert!(
        a.contains(&format!(",4,{:.4},", closed(&passes("agent-a"), 4).0)),
        "{a}"
    );
    assert!(a.contains(&format!(",{hat:.4},")), "{a}");
    let xml = extra(&out, "xml");
    assert!(
        xml.contains(r#"<property name="pass^k" value="0.1667"/>"#),
        "{xml}"
    );
    assert!(out.terminal.contains("pass^4"), "{}", out.terminal);
}
