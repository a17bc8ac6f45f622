//! Metrics unit tests, with values computed by hand in the comments.

use serde_json::json;

use super::accumulate::percentile;
use super::*;
use crate::format::Role;
use crate::golden::transcript::ScoredAnswer;
use crate::prompt::Message;
use crate::verify::{FailureKind, RuleOutcome, Verdict};

/// A passing record of `model`/`spec`/`instance` with a response, 100 ms, 10 in / 5 out.
pub(crate) fn record(model: &str, spec: &str, instance: u64) -> Record {
    Record {
        messages: vec![Message::text(Role::User, format!("question {instance}"))],
        expected: [("answer".to_owned(), json!("42"))].into_iter().collect(),
        scored: ScoredAnswer {
            response: Some("42".into()),
            answer: Some("42".into()),
            passed: true,
            score: 1.0,
            detail: String::new(),
            tokens_in: Some(10),
            tokens_out: Some(5),
            error: None,
            ..ScoredAnswer::default()
        },
        rules: vec![rule(Verdict::pass())],
        latency_ms: 100,
        attempts: 1,
        ..Record::blank(model, spec, instance, 0)
    }
}

/// A rule outcome named `answer`.
pub(crate) fn rule(verdict: Verdict) -> RuleOutcome {
    RuleOutcome {
        name: "answer".into(),
        answer: None,
        report_only: false,
        verdict,
        judge: None,
    }
}

/// Makes `r` fail with a rule failure of `kind`.
pub(crate) fn fail(mut r: Record, kind: FailureKind, detail: &str) -> Record {
    r.scored.passed = false;
    r.scored.score = 0.0;
    r.scored.detail = detail.into();
    r.rules = vec![rule(Verdict::failed(kind, detail))];
    r.failure = Some(kind);
    r
}

/// Makes `r` a request error of `kind`.
pub(crate) fn error(mut r: Record, kind: FailureKind, message: &str) -> Record {
    r.scored.passed = false;
    r.scored.score = 0.0;
    r.scored.response = None;
    r.scored.answer = None;
    r.rules.clear();
    r.scored.tokens_in = None;
    r.scored.tokens_out = None;
    r.failure = Some(kind);
    r.scored.error = Some(message.into());
    r
}

fn cell() -> Vec<Record> {
    let ok = record("m", "s", 0);
    let mut partial = fail(
        record("m", "s", 1),
        FailureKind::WrongValue,
        "expected 42, got 41",
    );
    partial.scored.score = 0.5;
    (
        partial.latency_ms,
        partial.scored.tokens_in,
        partial.scored.tokens_out,
    ) = (300, Some(20), Some(15));
    let mut cached = record("m", "s", 2);
    (cached.cached, cached.latency_ms, cached.attempts) = (true, 0, 0);
    let mut timeout = error(
        record("m", "s", 3),
        FailureKind::Timeout,
        "timed out after 5s",
    );
    timeout.latency_ms = 5000;
    let mut none = fail(
        record("m", "s", 4),
        FailureKind::NoAnswer,
        "no number found",
    );
    (
        none.latency_ms,
        none.scored.tokens_in,
        none.scored.tokens_out,
    ) = (200, Some(30), None);
    vec![ok, partial, cached, timeout, none]
}

#[test]
fn cell_metrics_match_hand_computed_values() {
    let mut acc = Accumulator::default();
    cell().iter().for_each(|r| acc.add(r));
    let m = acc.finish();
    // Scores 1 + 0.5 + 1 + 0 + 0 over 5 records; 2 of 5 passed every rule.
    assert_eq!((m.total, m.passed, m.mean_score), (5, 2, 0.5));
    assert_eq!(
        (m.headline, m.pass_rate, m.score()),
        (Headline::PassRate, 0.4, 0.4)
    );
    // The timeout has no response; no_answer is not a valid response.
    assert_eq!((m.valid, m.errors, m.cached), (3, 1, 1));
    // 100 + 300 + 0 + 5000 + 200.
    assert_eq!(m.time_ms, 5600);
    // Timed: 100, 300, 200 (cached and the error excluded) → sorted 100, 200, 300.
    // p50: rank ceil(1.5) = 2 → 200; p95: rank ceil(2.85) = 3 → 300.
    assert_eq!(
        m.latency_ms,
        Some(Latency {
            count: 3,
            mean: 200.0,
            p50: 200,
            p95: 300
        })
    );
    // In: 10 + 20 + 10 + 30; out: 5 + 15 + 5.
    assert_eq!(
        m.tokens_in,
        Tokens {
            count: 4,
            sum: 70,
            mean: Some(17.5)
        }
    );
    assert_eq!((m.tokens_out.count, m.tokens_out.sum), (3, 25));
    // Speed: (5 + 15) tokens over (100 + 300) ms, the cached record left out.
    assert_eq!(m.tokens_per_sec, Some(50.0));
    let counts: Vec<_> = m.failures.iter().map(|(k, v)| (*k, v.count)).collect();
    assert_eq!(
        counts,
        [
            (FailureKind::NoAnswer, 1),
            (FailureKind::Timeout, 1),
            (FailureKind::WrongValue, 1)
        ]
    );
    let ex = &m.failures[&FailureKind::Timeout].example;
    assert_eq!((ex.id.as_str(), ex.response.as_deref()), ("s/3", None));
    assert_eq!(ex.error.as_deref(), Some("timed out after 5s"));
    assert_eq!(
        m.failures[&FailureKind::WrongValue].example.detail,
        "expected 42, got 41"
    );
    let failing: Vec<_> = m.failing.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(failing, ["s/1", "s/3", "s/4"]);
}

#[test]
fn empty_metrics_have_no_averages() {
    let m = Accumulator::default().finish();
    assert_eq!(
        (
            m.total,
            m.pass_rate,
            m.mean_score,
            m.latency_ms,
            m.tokens_per_sec
        ),
        (0, 0.0, 0.0, None, None)
    );
    assert_eq!(m.tokens_in.mean, None);
}

#[test]
fn examples_are_bounded_and_first_wins() {
    let mut acc = Accumulator::default();
    for i in 0..25 {
        acc.add(&fail(
            record("m", "s", i),
            FailureKind::WrongValue,
            &format!("miss {i}"),
        ));
    }
    let m = acc.finish();
    assert_eq!(m.failing.len(), FAILING_EXAMPLES);
    assert_eq!(m.failures[&FailureKind::WrongValue].count, 25);
    assert_eq!(
        m.failures[&FailureKind::WrongValue].example.detail,
        "miss 0"
    );
}

#[test]
fn nearest_rank_percentiles() {
    let v: Vec<u64> = (1..=20).collect();
    // rank ceil(0.5 * 20) = 10, ceil(0.95 * 20) = 19, p0 → rank 1, p100 → rank 20.
    assert_eq!(percentile(&v, 50.0), Some(10));
    assert_eq!(percentile(&v, 95.0), Some(19));
    assert_eq!(percentile(&v, 0.0), Some(1));
    assert_eq!(percentile(&v, 100.0), Some(20));
    assert_eq!(percentile(&[7], 95.0), Some(7));
    // Four values: p50 rank 2 (not the interpolated 2.5).
    assert_eq!(percentile(&[1, 2, 3, 4], 50.0), Some(2));
    assert_eq!(percentile(&[], 50.0), None);
}

#[test]
fn model_totals_and_category_mean() {
    let mut b = MetricsBuilder::new();
    b.add("m", &record("m", "a", 0));
    for i in 0..3 {
        b.add(
            "m",
            &fail(record("m", "b", i), FailureKind::WrongValue, "x"),
        );
    }
    b.add("run2/m", &record("m", "a", 0));
    let s = b.finish();
    // Pooled: 1 of 4; per category: (1.0 + 0.0) / 2.
    assert_eq!(s.model("m").unwrap().pass_rate, 0.25);
    assert_eq!(s.category_mean("m"), Some(0.5));
    assert_eq!(s.cell("m", "b").unwrap().total, 3);
    assert_eq!(s.cell("run2/m", "a").unwrap().total, 1);
    assert!(s.cell("run2/m", "b").is_none());
    assert_eq!(s.category_mean("nobody"), None);
}

#[test]
fn the_overall_board_ranks_only_models_that_ran_the_same_categories() {
    let mut b = MetricsBuilder::new();
    for i in 0..4 {
        for model in ["llm_a", "llm_b"] {
            b.add(model, &record(model, "logic", i));
            b.add(model, &record(model, "code", i));
        }
        b.add("ocr", &record("ocr", "lines", i));
    }
    let s = b.finish();
    let board = s.leaderboard.as_ref().unwrap();
    let ranked: Vec<&str> = board.standings.iter().map(|st| st.model.as_str()).collect();
    // The larger group is ranked; the OCR engine's mean is over another category.
    assert_eq!(ranked, ["llm_a", "llm_b"]);
    assert_eq!(s.category_mean("ocr"), Some(1.0));
}

#[test]
fn ids_expected_values_and_excerpts() {
    let mut r = record("m", "s", 3);
    assert_eq!(test_id(&r), "s/3");
    r.sample = 2;
    assert_eq!(test_id(&r), "s/3#2");
    assert_eq!(expected_output(&r), json!("42"));
    r.expected.insert("format".into(), json!(true));
    assert_eq!(expected_output(&r), json!({"answer": "42", "format": true}));
    r.expected.clear();
    assert_eq!(expected_output(&r), Value::Null);
    assert_eq!(crate::text::clip("Привет, мир", 6), "Привет…");
    assert_eq!(crate::text::clip("Привет", 6), "Привет");
    assert_eq!(crate::text::clip("", 0), "");
}

/// Exact binomial coefficient, for checking the product forms against the closed ones.
fn binomial(n: u64, k: u64) -> u128 {
    if k > n {
        return 0;
    }
    let mut value: u128 = 1;
    for i in 0..k {
        // Exact at every step: the product of i+1 consecutive integers divides by (i+1)!.
        value = value * u128::from(n - i) / u128::from(i + 1);
    }
    value
}

#[test]
fn pass_at_k_and_pass_hat_k_match_the_closed_forms() {
    use crate::metrics::{pass_at_k, pass_hat_k};
    let table: &[(u64, u64, u64)] = &[
        (1, 0, 1),
        (1, 1, 1),
        (2, 1, 1),
        (2, 1, 2),
        (4, 0, 1),
        (4, 4, 4),
        (4, 2, 4),
        (8, 0, 8),
        (8, 1, 1),
        (8, 1, 8),
        (8, 3, 1),
        (8, 3, 2),
        (8, 3, 5),
        (8, 3, 6),
        (8, 8, 1),
        (8, 8, 8),
        (10, 5, 3),
        (16, 7, 4),
        (50, 1, 10),
        (50, 25, 25),
        (64, 63, 64),
        (100, 37, 20),
    ];
    for &(n, c, k) in table {
        let closed = 1.0 - binomial(n - c, k) as f64 / binomial(n, k) as f64;
        let got = pass_at_k(n, c, k);
        assert!(
            (got - closed).abs() < 1e-12,
            "pass@{k} with n={n}, c={c}: got {got}, closed form {closed}"
        );
        let closed_hat = binomial(c, k) as f64 / binomial(n, k) as f64;
        let got_hat = pass_hat_k(n, c, k);
        assert!(
            (got_hat - closed_hat).abs() < 1e-12,
            "pass^{k} with n={n}, c={c}: got {got_hat}, closed form {closed_hat}"
        );
    }
    // Edge cases by name: nothing passes, everything passes, k = n.
    assert_eq!(pass_at_k(8, 0, 3), 0.0);
    assert_eq!(pass_at_k(8, 8, 3), 1.0);
    assert_eq!(pass_at_k(8, 1, 8), 1.0);
    assert_eq!(pass_hat_k(8, 7, 8), 0.0);
    assert!((pass_at_k(8, 3, 1) - 3.0 / 8.0).abs() < 1e-15);
}

fn sampled_record(instance: u64, sample: u32, answer: &str, passed: bool) -> Record {
    let mut r = record("m", "s", instance);
    r.sample = sample;
    r.scored.answer = Some(answer.to_owned());
    r.scored.passed = passed;
    r.scored.score = f64::from(u8::from(passed));
    r
}

#[test]
fn sampled_cells_report_pass_at_k_pass_rate_majority_and_problems() {
    // Problem 0: 1 of 4 pass (majority answer 7 is wrong); problem 1: 3 of 4 pass.
    let outcomes = [
        (0, ["7", "7", "5", "9"], [false, false, true, false]),
        (1, ["2", "2", "2", "3"], [true, true, true, false]),
    ];
    let plan = crate::metrics::SamplingPlan {
        ks: vec![1, 2, 4],
        maj: true,
    };
    let mut builder = MetricsBuilder::new()
        .sampling("s", plan)
        .group_by("s", &["kind".to_owned()]);
    for (instance, answers, passed) in outcomes {
        for sample in 0..4 {
            let mut r = sampled_record(
                instance,
                sample,
                answers[sample as usize],
                passed[sample as usize],
            );
            r.vars
                .insert("kind".into(), Value::String(format!("k{instance}")));
            builder.add("m", &r);
        }
    }
    let summary = builder.finish();
    let s = summary.cell("m", "s").unwrap().sampled.clone().unwrap();
    assert_eq!((s.problems, s.n), (2, 4));
    assert!(
        (s.rates.pass_rate - 0.5).abs() < 1e-12,
        "got {}",
        s.rates.pass_rate
    );
    assert!((s.rates.pass_at_k[&1] - 0.5).abs() < 1e-12);
    // pass@2: problem 0: 1 - C(3,2)/C(4,2) = 0.5; problem 1: 1 - 0 = 1.
    assert!(
        (s.rates.pass_at_k[&2] - 0.75).abs() < 1e-12,
        "got {}",
        s.rates.pass_at_k[&2]
    );
    assert_eq!(s.rates.pass_at_k[&4], 1.0);
    // pass^2: problem 0: 0; problem 1: C(3,2)/C(4,2) = 0.5.
    assert!(
        (s.rates.pass_hat_k[&2] - 0.25).abs() < 1e-12,
        "got {}",
        s.rates.pass_hat_k[&2]
    );
    assert_eq!(s.rates.maj, Some(0.5));
    let counts: Vec<(u64, u64)> = s
        .per_problem
        .iter()
        .map(|p| (p.n_correct, p.n_total))
        .collect();
    assert_eq!(counts, vec![(1, 4), (3, 4)]);
    let group = &summary.groups("m", "s").unwrap()["kind"]["k1"];
    assert_eq!(group.sampled.as_ref().unwrap().rates.pass_at_k[&1], 0.75);
}

/// A record of spec `ocr` in language `lang` whose rules measured `measures`.
fn measured(instance: u64, lang: &str, measures: &[(&str, f64)]) -> Record {
    let mut r = record("m", "ocr", instance);
    r.vars.insert("lang".into(), json!(lang));
    r.rules = measures
        .iter()
        .map(|(name, value)| {
            let measure = crate::verify::Measure {
                name: (*name).into(),
                value: *value,
                lower_is_better: true,
            };
            rule(Verdict::scored(true, (1.0 - value).max(0.0), String::new()).measuring(measure))
        })
        .collect();
    r
}

#[test]
fn measures_average_per_cell_and_group_over_measured_answers() {
    let records = [
        measured(0, "en", &[("CER", 0.0), ("WER", 0.0)]),
        measured(1, "ru", &[("CER", 0.5), ("WER", 1.0)]),
        measured(2, "en", &[("CER", 0.25)]),
        // A request error measures nothing: it is left out of the means.
        error(record("m", "ocr", 3), FailureKind::Timeout, "timed out"),
    ];
    let mut builder = MetricsBuilder::new().group_by("ocr", &["lang".to_owned()]);
    records.iter().for_each(|r| builder.add("m", r));
    builder.add("m", &record("m", "plain", 0));
    let summary = builder.finish();
    let mean = |c: &Metrics, name: &str| c.measures.get(name).map(|m| (m.mean, m.count));
    let cell = summary.cell("m", "ocr").unwrap();
    // CER: (0 + 0.5 + 0.25) / 3; WER: (0 + 1) / 2.
    assert_eq!(mean(cell, "CER"), Some((0.25, 3)));
    assert_eq!(mean(cell, "WER"), Some((0.5, 2)));
    assert!(cell.measures["CER"].lower_is_better);
    let groups = &summary.groups("m", "ocr").unwrap()["lang"];
    assert_eq!(mean(&groups["en"], "CER"), Some((0.125, 2)));
    assert_eq!(mean(&groups["ru"], "CER"), Some((0.5, 1)));
    assert_eq!(mean(&groups["en"], "WER"), Some((0.0, 1)));
    assert!(summary.cell("m", "plain").unwrap().measures.is_empty());
    let json = serde_json::to_value(summary.cell("m", "plain").unwrap()).unwrap();
    assert!(json.get("measures").is_none(), "no key without measures");
}
