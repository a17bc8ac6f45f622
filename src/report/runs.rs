//! Run comparison: `harness report RUN_A RUN_B` lines up each model's instances in
//! the two runs by instance id and says, per category and overall, whether the
//! later run is better, worse, or not significantly different, with the paired
//! difference, its 95% interval and p-value. Flipped instances are listed,
//! regressions (pass → fail) first.
//!
//! The first run is the baseline; every later run is compared with it. A model is
//! paired with the same model in the other run; when the runs share no model but
//! each has exactly one, those two are paired (two models on the same specs).
//!
//! Tests: the exact McNemar test when every instance of the category is one
//! pass/fail sample in both runs, the paired instance bootstrap otherwise, and the
//! stratified bootstrap over categories for the overall line (each category
//! weighted once, as in the reports' total).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::View;
use crate::metrics::stats::{self, Bootstrap, DEFAULT_ALPHA, DEFAULT_LEVEL, Interval};
use crate::metrics::{Outcome, Test};

/// What a paired difference says at alpha 0.05.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Verdict {
    /// The later run scores higher, significantly.
    #[serde(rename = "better")]
    Better,
    /// The later run scores lower, significantly.
    #[serde(rename = "worse")]
    Worse,
    /// The data cannot tell.
    #[serde(rename = "no significant difference")]
    Same,
}

impl Verdict {
    /// The verdict as the reports print it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Same => "no significant difference",
        }
    }
}

/// A paired difference, later run minus baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Delta {
    /// Later minus baseline, on the paired instances.
    pub difference: f64,
    /// 95% interval of `difference`.
    pub interval: Option<Interval>,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Instances paired.
    pub instances: usize,
    /// The test used.
    pub test: Test,
    /// What it says.
    pub verdict: Verdict,
}

/// One category of a pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CategoryDelta {
    /// Spec id.
    pub spec: String,
    /// Its title.
    pub title: String,
    /// The baseline's headline number.
    pub baseline: f64,
    /// The later run's headline number.
    pub candidate: f64,
    /// The paired difference.
    pub delta: Delta,
}

/// An instance whose verdict differs between the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Flip {
    /// Spec id.
    pub spec: String,
    /// Instance index.
    pub instance: u64,
    /// Share of the baseline's samples that passed.
    pub from: f64,
    /// Share of the later run's samples that passed.
    pub to: f64,
}

/// One model in the baseline run against its counterpart in a later run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Pair {
    /// Shown name in the baseline run.
    pub baseline: String,
    /// Shown name in the later run.
    pub candidate: String,
    /// Over every category both answered, each weighted once.
    pub overall: Option<Delta>,
    /// Per category both answered, in report order.
    pub categories: Vec<CategoryDelta>,
    /// Instances that passed in the baseline and fail now (majority of samples).
    pub regressions: Vec<Flip>,
    /// Instances that failed in the baseline and pass now.
    pub fixes: Vec<Flip>,
}

/// The comparison of the report's runs, when it covers several.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunComparison {
    /// The baseline run's id.
    pub baseline_run: String,
    /// Model pairs, later runs in order.
    pub pairs: Vec<Pair>,
}

/// The comparison, when the report covers two or more journals.
pub(crate) fn build(v: &View) -> Option<RunComparison> {
    let journals = v.ctx.journals.len();
    if journals < 2 {
        return None;
    }
    let in_run = |j: usize| -> Vec<usize> {
        (0..v.models.len())
            .filter(|&m| v.origins.get(m).and_then(|o| o.run) == Some(j))
            .collect()
    };
    let first = in_run(0);
    let mut pairs = Vec::new();
    for j in 1..journals {
        let later = in_run(j);
        let mut matched: Vec<(usize, usize)> = first
            .iter()
            .filter_map(|&a| {
                let b = later
                    .iter()
                    .find(|&&b| v.origins[b].model == v.origins[a].model)?;
                Some((a, *b))
            })
            .collect();
        if matched.is_empty() && first.len() == 1 && later.len() == 1 {
            matched.push((first[0], later[0]));
        }
        pairs.extend(matched.into_iter().map(|(a, b)| pair(v, a, b)));
    }
    Some(RunComparison {
        baseline_run: super::journals::run_id(v.ctx, 0),
        pairs,
    })
}

/// Whether every instance is one pass/fail sample.
fn pass_fail(outcomes: &[Outcome]) -> bool {
    outcomes
        .iter()
        .all(|o| o.samples == 1 && o.score == f64::from(o.passed))
}

fn pair(v: &View, a: usize, b: usize) -> Pair {
    let (base, cand) = (&v.models[a], &v.models[b]);
    let none = BTreeMap::new();
    let outcomes = |m: &str| v.summary.outcomes.get(m).unwrap_or(&none);
    let (oa, ob) = (outcomes(base), outcomes(cand));
    let mut out = Pair {
        baseline: base.clone(),
        candidate: cand.clone(),
        overall: None,
        categories: Vec::new(),
        regressions: Vec::new(),
        fixes: Vec::new(),
    };
    let mut strata: Vec<Lined> = Vec::new();
    for spec in v.specs {
        let (Some(x), Some(y)) = (oa.get(&spec.id), ob.get(&spec.id)) else {
            continue;
        };
        let (Some(cx), Some(cy)) = (
            v.summary.cell(base, &spec.id),
            v.summary.cell(cand, &spec.id),
        ) else {
            continue;
        };
        let lined = line_up(x, y);
        flips(&spec.id, &lined, &mut out);
        let delta = if pass_fail(x) && pass_fail(y) {
            let (later, before): (Vec<bool>, Vec<bool>) = lined
                .iter()
                .filter_map(|(_, p, q)| Some(((*q)?.passed == 1, (*p)?.passed == 1)))
                .unzip();
            let c = stats::compare_passes(&later, &before, DEFAULT_LEVEL)
                .expect("paired by construction");
            delta(
                c.difference,
                c.interval,
                c.p_value,
                later.len(),
                Test::Mcnemar,
            )
        } else {
            let (later, before) = means(&lined);
            let c = stats::compare_scores(&later, &before, &Bootstrap::default())
                .expect("lined up by construction");
            delta(
                c.difference,
                c.interval,
                c.p_value,
                c.instances,
                Test::Bootstrap,
            )
        };
        strata.push(means(&lined));
        out.categories.push(CategoryDelta {
            spec: spec.id.clone(),
            title: spec.title.clone(),
            baseline: cx.score(),
            candidate: cy.score(),
            delta,
        });
    }
    // One category: the overall line is that category's own test.
    if let [only] = out.categories.as_slice() {
        out.overall = Some(only.delta.clone());
    } else if !strata.is_empty() {
        let later: Vec<stats::Stratum<'_, Vec<f64>>> =
            strata.iter().map(|s| (1.0, s.0.as_slice())).collect();
        let before: Vec<stats::Stratum<'_, Vec<f64>>> =
            strata.iter().map(|s| (1.0, s.1.as_slice())).collect();
        let c = stats::compare_stratified(&later, &before, &Bootstrap::default())
            .expect("lined up by construction");
        out.overall = Some(delta(
            c.difference,
            c.interval,
            c.p_value,
            c.instances,
            Test::Bootstrap,
        ));
    }
    out
}

/// Both runs' outcomes by instance, over the union of their instances.
fn line_up<'a>(
    x: &'a [Outcome],
    y: &'a [Outcome],
) -> Vec<(u64, Option<&'a Outcome>, Option<&'a Outcome>)> {
    let by = |o: &'a [Outcome]| -> BTreeMap<u64, &'a Outcome> {
        o.iter().map(|o| (o.instance, o)).collect()
    };
    let (bx, by_) = (by(x), by(y));
    let ids: BTreeSet<u64> = bx.keys().chain(by_.keys()).copied().collect();
    ids.into_iter()
        .map(|i| (i, bx.get(&i).copied(), by_.get(&i).copied()))
        .collect()
}

/// (later run, baseline) per-instance scores of one category, lined up.
type Lined = (Vec<Vec<f64>>, Vec<Vec<f64>>);

/// (later, baseline) per-instance mean scores, empty where a run has no sample.
fn means(lined: &[(u64, Option<&Outcome>, Option<&Outcome>)]) -> Lined {
    let one = |o: Option<&Outcome>| o.map(|o| vec![o.score]).unwrap_or_default();
    lined.iter().map(|(_, p, q)| (one(*q), one(*p))).unzip()
}

/// Adds the instances whose majority verdict flipped to `out`.
fn flips(spec: &str, lined: &[(u64, Option<&Outcome>, Option<&Outcome>)], out: &mut Pair) {
    for (instance, p, q) in lined {
        let (Some(p), Some(q)) = (p, q) else {
            continue;
        };
        let (from, to) = (p.rate(), q.rate());
        let flip = Flip {
            spec: spec.to_owned(),
            instance: *instance,
            from,
            to,
        };
        match (from > 0.5, to > 0.5) {
            (true, false) => out.regressions.push(flip),
            (false, true) => out.fixes.push(flip),
            _ => {}
        }
    }
}

fn delta(
    difference: f64,
    interval: Option<Interval>,
    p_value: f64,
    instances: usize,
    test: Test,
) -> Delta {
    let verdict = if p_value >= DEFAULT_ALPHA || difference == 0.0 {
        Verdict::Same
    } else if difference > 0.0 {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    Delta {
        difference,
        interval,
        p_value,
        instances,
        test,
        verdict,
    }
}
