//! Metrics unit tests, with values computed by hand in the comments.

use serde_json::json;

use super::*;
use crate::prompt::Message;
use crate::spec::model::Role;
use crate::verify::{FailureKind, RuleOutcome, Verdict};

/// A passing record of `model`/`spec`/`instance` with a response, 100 ms, 10 in / 5 out.
pub(crate) fn record(model: &str, spec: &str, instance: u64) -> Record {
    Record {
        model: model.into(),
        spec: spec.into(),
        instance,
        sample: 0,
        instance_id: format!("{spec}/{instance}"),
        messages: vec![Message {
            role: Role::User,
            content: format!("question {instance}"),
        }],
        vars: Default::default(),
        expected: [("answer".to_owned(), json!("42"))].into_iter().collect(),
        response: Some("42".into()),
        answer: Some("42".into()),
        passed: true,
        score: 1.0,
        detail: String::new(),
        rules: vec![rule(Verdict::pass())],
        failure: None,
        latency_ms: 100,
        tokens_in: Some(10),
        tokens_out: Some(5),
        attempts: 1,
        error: None,
        cached: false,
        retries: Vec::new(),
    }
}

/// A rule outcome named `answer`.
pub(crate) fn rule(verdict: Verdict) -> RuleOutcome {
    RuleOutcome {
        name: "answer".into(),
        answer: None,
        verdict,
    }
}

/// Makes `r` fail with a rule failure of `kind`.
pub(crate) fn fail(mut r: Record, kind: FailureKind, detail: &str) -> Record {
    r.passed = false;
    r.score = 0.0;
    r.detail = detail.into();
    r.rules = vec![rule(Verdict::failed(kind, detail))];
    r.failure = Some(crate::run::record::failure_label(kind).into());
    r
}

/// Makes `r` a request error of `label`.
pub(crate) fn error(mut r: Record, label: &str, message: &str) -> Record {
    r.passed = false;
    r.score = 0.0;
    r.response = None;
    r.answer = None;
    r.rules.clear();
    r.tokens_in = None;
    r.tokens_out = None;
    r.failure = Some(label.into());
    r.error = Some(message.into());
    r
}

fn cell() -> Vec<Record> {
    let ok = record("m", "s", 0);
    let mut partial = fail(
        record("m", "s", 1),
        FailureKind::WrongValue,
        "expected 42, got 41",
    );
    partial.score = 0.5;
    (partial.latency_ms, partial.tokens_in, partial.tokens_out) = (300, Some(20), Some(15));
    let mut cached = record("m", "s", 2);
    (cached.cached, cached.latency_ms, cached.attempts) = (true, 0, 0);
    let mut timeout = error(record("m", "s", 3), "timeout", "timed out after 5s");
    timeout.latency_ms = 5000;
    let mut none = fail(
        record("m", "s", 4),
        FailureKind::NoAnswer,
        "no number found",
    );
    (none.latency_ms, none.tokens_in, none.tokens_out) = (200, Some(30), None);
    vec![ok, partial, cached, timeout, none]
}

#[test]
fn cell_metrics_match_hand_computed_values() {
    let mut acc = Accumulator::default();
    cell().iter().for_each(|r| acc.add(r));
    let m = acc.finish();
    // Scores 1 + 0.5 + 1 + 0 + 0 over 5 records.
    assert_eq!((m.total, m.passed, m.accuracy), (5, 2, 0.5));
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
    let counts: Vec<_> = m
        .failures
        .iter()
        .map(|(k, v)| (k.as_str(), v.count))
        .collect();
    assert_eq!(
        counts,
        [("no_answer", 1), ("timeout", 1), ("wrong_value", 1)]
    );
    let ex = &m.failures["timeout"].example;
    assert_eq!((ex.id.as_str(), ex.response.as_deref()), ("s/3", None));
    assert_eq!(ex.error.as_deref(), Some("timed out after 5s"));
    assert_eq!(
        m.failures["wrong_value"].example.detail,
        "expected 42, got 41"
    );
    let failing: Vec<_> = m.failing.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(failing, ["s/1", "s/3", "s/4"]);
}

#[test]
fn empty_metrics_have_no_averages() {
    let m = Accumulator::default().finish();
    assert_eq!(
        (m.total, m.accuracy, m.latency_ms, m.tokens_per_sec),
        (0, 0.0, None, None)
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
    assert_eq!(m.failures["wrong_value"].count, 25);
    assert_eq!(m.failures["wrong_value"].example.detail, "miss 0");
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
    assert_eq!(s.model("m").unwrap().accuracy, 0.25);
    assert_eq!(s.category_mean("m"), Some(0.5));
    assert_eq!(s.cell("m", "b").unwrap().total, 3);
    assert_eq!(s.cell("run2/m", "a").unwrap().total, 1);
    assert!(s.cell("run2/m", "b").is_none());
    assert_eq!(s.category_mean("nobody"), None);
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
    assert_eq!(excerpt("Привет, мир", 6), "Привет…");
    assert_eq!(excerpt("Привет", 6), "Привет");
    assert_eq!(excerpt("", 0), "");
}
