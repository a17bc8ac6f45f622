//! The leaderboards' tests: tie groups, paired tests, intervals and headlines.

use super::super::tests::{fail, record};
use super::super::{Headline, Method, MetricsBuilder, Summary};
use super::*;
use crate::verify::FailureKind;

/// `passes[i]` says whether `model` passed instance `i` of `spec`.
fn add(b: &mut MetricsBuilder, model: &str, spec: &str, passes: &[bool]) {
    for (i, &ok) in passes.iter().enumerate() {
        let r = record(model, spec, i as u64);
        let r = if ok {
            r
        } else {
            fail(r, FailureKind::WrongValue, "wrong")
        };
        b.add(model, &r);
    }
}

fn ranks(board: &Board) -> Vec<(&str, u32)> {
    board
        .standings
        .iter()
        .map(|s| (s.model.as_str(), s.rank))
        .collect()
}

fn summary(f: impl FnOnce(&mut MetricsBuilder)) -> Summary {
    let mut b = MetricsBuilder::new();
    f(&mut b);
    b.finish()
}

#[test]
fn pass_fail_cells_rank_by_mcnemar_in_score_order() {
    let s = summary(|b| {
        add(b, "a", "s", &[true; 30]);
        add(b, "b", "s", &[[true; 20].as_slice(), &[false; 10]].concat());
        add(b, "c", "s", &[[false].as_slice(), &[true; 29]].concat());
    });
    let board = &s.boards["s"];
    assert_eq!(board.test, Test::Mcnemar);
    assert_eq!(ranks(board), [("a", 1), ("c", 1), ("b", 2)]);
    let b = board.standing("b").unwrap();
    let vs = b.vs_best.as_ref().unwrap();
    assert_eq!((vs.against.as_str(), vs.instances), ("a", 30));
    assert!((vs.difference + 1.0 / 3.0).abs() < 1e-15);
    assert_eq!(vs.p_value, stats::mcnemar_p(0, 10));
    assert_eq!(vs.interval, stats::newcombe_paired(20, 0, 10, 0, 0.95));
    assert_eq!(b.interval, stats::wilson(20, 30, 0.95));
    assert_eq!(s.cells["b"]["s"].interval.unwrap().method, Method::Wilson);
    // One spec: the overall board is the spec's.
    assert_eq!(s.leaderboard.as_ref(), Some(board));
    assert!(board.mde.is_some_and(|m| m > 0.0 && m < 1.0));
    let gap = board.gap.as_ref().unwrap();
    assert!((gap.difference - 1.0 / 30.0).abs() < 1e-15);
    assert_eq!(
        gap.needed,
        stats::required_n(1.0, 29.0 / 30.0, DEFAULT_ALPHA, DEFAULT_POWER)
    );
}

#[test]
fn partial_credit_ranks_by_the_paired_bootstrap() {
    // Every answer of `half` passes its gates but scores 0.5.
    let records = |b: &mut MetricsBuilder| {
        add(b, "a", "s", &[true; 12]);
        for i in 0..12 {
            let mut r = record("half", "s", i);
            r.scored.score = 0.5;
            b.add("half", &r);
        }
    };
    let mut b = MetricsBuilder::new().headline("s", Headline::MeanScore);
    records(&mut b);
    let s = b.finish();
    let board = &s.boards["s"];
    assert_eq!(board.test, Test::Bootstrap);
    assert_eq!(ranks(board), [("a", 1), ("half", 2)]);
    let vs = board.standing("half").unwrap().vs_best.clone().unwrap();
    assert_eq!(vs.difference, -0.5);
    assert_eq!(
        vs.interval,
        Some(Interval {
            low: -0.5,
            high: -0.5
        })
    );
    // Every instance scoring 0.5: Wilson on the 12 instances, not a zero width.
    let half = s.cells["half"]["s"].interval.unwrap();
    assert_eq!(half.method, Method::Wilson);
    assert_eq!(Some(half.interval()), stats::wilson_share(0.5, 12, 0.95));
    // Under the pass rate (the default headline) both passed every instance.
    let s = summary(records);
    assert_eq!(ranks(&s.boards["s"]), [("a", 1), ("half", 1)]);
    assert_eq!(s.cells["half"]["s"].score(), 1.0);
    assert_eq!(s.cells["half"]["s"].mean_score, 0.5);
}

#[test]
fn no_pass_never_ranks_above_a_pass() {
    // The first-hour bug: partial credit on 0 of 8 passes ranked first.
    let mut b = MetricsBuilder::new();
    for i in 0..8 {
        let mut r = fail(record("partial", "s", i), FailureKind::WrongValue, "gate");
        r.scored.score = 0.9;
        b.add("partial", &r);
    }
    add(
        &mut b,
        "one",
        "s",
        &[[true].as_slice(), &[false; 7]].concat(),
    );
    let s = b.finish();
    let board = &s.boards["s"];
    assert_eq!(board.standings[0].model, "one");
    assert_eq!(s.cells["partial"]["s"].score(), 0.0);
    let interval = s.cells["partial"]["s"].interval.unwrap();
    assert!(interval.high > 0.3, "{interval:?}");
}

#[test]
fn the_overall_board_weighs_each_category_once() {
    // Pooled over records a would score 10/110 and b 100/110; per category both 50%.
    let s = summary(|b| {
        add(b, "a", "x", &[true; 10]);
        add(b, "a", "y", &[false; 100]);
        add(b, "b", "x", &[false; 10]);
        add(b, "b", "y", &[true; 100]);
    });
    let board = s.leaderboard.as_ref().unwrap();
    assert_eq!(board.test, Test::Bootstrap);
    assert_eq!(ranks(board), [("a", 1), ("b", 1)]);
    for st in &board.standings {
        assert_eq!(Some(st.score), s.category_mean(&st.model));
        // Every resample gives 0.5: Wilson on the 110 instances instead.
        assert_eq!(st.interval, stats::wilson_share(0.5, 110, 0.95));
    }
    let vs = board.standings[1].vs_best.as_ref().unwrap();
    assert_eq!((vs.difference, vs.p_value, vs.instances), (0.0, 1.0, 110));
    assert_eq!(board.instances, 110);
}

#[test]
fn replayed_and_cached_answers_are_not_timed() {
    let s = summary(|b| {
        for i in 0..3 {
            let mut r = record("replay", "s", i);
            r.attempts = 0;
            r.latency_ms = u64::from(i == 1);
            b.add("replay", &r);
        }
    });
    let total = &s.models["replay"];
    assert_eq!((total.latency_ms, total.tokens_per_sec), (None, None));
    assert_eq!(total.tokens_out.sum, 15, "token counts still count");
}
