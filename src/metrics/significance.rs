//! Leaderboards with their statistics: per spec and over all specs, each model's
//! score with its interval, its tie group, and its paired comparison with the best.
//!
//! A spec whose every record is one pass/fail sample per instance is compared by the
//! exact McNemar test (instances both models answered); any other spec (partial
//! credit, several samples) by the paired instance bootstrap. The overall board ranks
//! the mean of category accuracies (the reports' total), each category weighted once,
//! with a bootstrap stratified by category. Everything comes from [`stats`]; this
//! file only lines the instances up.

use std::collections::BTreeMap;

use serde::Serialize;

use super::problems::Problems;

use super::stats::{
    self, Bootstrap, DEFAULT_ALPHA, DEFAULT_LEVEL, DEFAULT_POWER, Interval, Ranked,
};

/// The paired test behind a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Test {
    /// Exact McNemar test, Newcombe's interval: one pass/fail sample per instance.
    Mcnemar,
    /// Paired percentile bootstrap over instances (stratified by spec over several).
    Bootstrap,
}

/// One model against another on the instances both answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Versus {
    /// The model compared with.
    pub against: String,
    /// This model's score minus the other's on the paired instances.
    pub difference: f64,
    /// 95% interval of `difference`.
    pub interval: Option<Interval>,
    /// Two-sided p-value of "no difference".
    pub p_value: f64,
    /// Instances paired.
    pub instances: usize,
}

/// One model's line on a leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Standing {
    /// The shown model name.
    pub model: String,
    /// Tie group: 1 for the best; models the data cannot tell apart share it.
    pub rank: u32,
    /// Accuracy (a spec) or mean of category accuracies (overall).
    pub score: f64,
    /// 95% interval of `score`.
    pub interval: Option<Interval>,
    /// The leader of the model's tie group.
    pub leader: String,
    /// Holm-adjusted p-value against `leader` (none for a leader).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjusted_p: Option<f64>,
    /// The paired comparison with the board's best model (none for the best).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_best: Option<Versus>,
}

/// The gap between the two best models and the instances needed to establish it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Gap {
    /// The best model's score minus the runner-up's.
    pub difference: f64,
    /// Instances per model a test at alpha 0.05 with power 0.8 needs for that gap
    /// (two-proportion approximation); none when there is no gap.
    pub needed: Option<u64>,
}

/// A leaderboard: models in rank order, and what the category can detect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Board {
    /// The paired test used.
    pub test: Test,
    /// Distinct instances any model answered.
    pub instances: usize,
    /// Models in rank order (score, then name, within a rank).
    pub standings: Vec<Standing>,
    /// The smallest drop below the best score a test at alpha 0.05 detects with power
    /// 0.8 at this many instances (two-proportion approximation; per spec only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mde: Option<f64>,
    /// Between the two best models (per spec, with at least two models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap: Option<Gap>,
}

impl Board {
    /// The standing of `model`, when it is on the board.
    pub(crate) fn standing(&self, model: &str) -> Option<&Standing> {
        self.standings.iter().find(|s| s.model == model)
    }
}

/// One model's instances in one spec: instance → its samples' scores.
#[derive(Debug, Clone, Default)]
pub(super) struct Scores {
    /// The cell's settled problems (taken over, not copied, so boards cost no memory).
    problems: Problems,
    /// Distinct instances.
    count: usize,
    /// Every instance is one pass/fail sample.
    pub pass_fail: bool,
}

impl Scores {
    /// The scores of a cell's settled `problems` (all of one spec).
    pub(super) fn new(problems: Problems) -> Scores {
        let (mut count, mut pass_fail) = (0, true);
        for p in problems.iter() {
            count += 1;
            pass_fail &= p.is_pass_fail();
        }
        Scores {
            problems,
            count,
            pass_fail,
        }
    }

    /// Each instance with its samples' scores, in instance order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &[f64])> {
        self.problems.iter().map(|p| (p.instance, p.scores()))
    }

    /// The instances, ascending.
    pub(super) fn instances(&self) -> impl Iterator<Item = u64> + '_ {
        self.problems.iter().map(|p| p.instance)
    }

    /// The scores of `instance`'s samples, when it was run.
    pub(super) fn get(&self, instance: u64) -> Option<&[f64]> {
        self.problems.scores_of(instance)
    }

    /// A copy of `instance`'s scores, empty when it was not run.
    fn owned(&self, instance: u64) -> Vec<f64> {
        self.get(instance).map(<[f64]>::to_vec).unwrap_or_default()
    }

    /// Instances run.
    pub(super) fn len(&self) -> usize {
        self.count
    }
}

/// The instances any of `scores` ran, ascending (a sorted list, far smaller than a set).
fn union<'a>(scores: impl Iterator<Item = &'a Scores>) -> Vec<u64> {
    let mut all: Vec<u64> = scores.flat_map(Scores::instances).collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// One model's entry in a spec board: its shown score and interval, and its instances.
pub(super) struct Entry<'a> {
    /// Shown score (the cell's accuracy).
    pub score: f64,
    /// The cell's interval.
    pub interval: Option<Interval>,
    /// Its instances.
    pub scores: &'a Scores,
}

/// The board of one spec from each model's entry, keyed by shown model name.
pub(super) fn spec_board(entries: &BTreeMap<&str, Entry>) -> Board {
    let pass_fail = entries.values().all(|e| e.scores.pass_fail);
    // Only pairs line instances up; one model's count needs no list.
    let instances = match entries.len() {
        0 | 1 => Vec::new(),
        _ => union(entries.values().map(|e| e.scores)),
    };
    let count = match entries.values().next() {
        Some(e) if entries.len() == 1 => e.scores.len(),
        _ => instances.len(),
    };
    let names: Vec<&str> = entries.keys().copied().collect();
    let compare = |a: usize, b: usize| -> Versus {
        let (x, y) = (entries[names[a]].scores, entries[names[b]].scores);
        if pass_fail {
            let (mut first, mut second) = (Vec::new(), Vec::new());
            for (i, s) in x.iter() {
                if let Some(t) = y.get(i) {
                    first.push(s.first().is_some_and(|v| *v == 1.0));
                    second.push(t.first().is_some_and(|v| *v == 1.0));
                }
            }
            let c = stats::compare_passes(&first, &second, DEFAULT_LEVEL)
                .expect("paired by construction");
            versus(names[b], c.difference, c.interval, c.p_value, first.len())
        } else {
            let lined = |s: &Scores| -> Vec<Vec<f64>> {
                let at = |i: &u64| s.owned(*i);
                instances.iter().map(at).collect()
            };
            let c = stats::compare_scores(&lined(x), &lined(y), &Bootstrap::default())
                .expect("lined up by construction");
            versus(names[b], c.difference, c.interval, c.p_value, c.instances)
        }
    };
    let rows: Vec<(String, f64, usize)> = names
        .iter()
        .map(|n| {
            let e = &entries[n];
            (n.to_string(), e.score, e.scores.len())
        })
        .collect();
    let intervals = names.iter().map(|n| entries[n].interval).collect();
    let test = if pass_fail {
        Test::Mcnemar
    } else {
        Test::Bootstrap
    };
    let mut board = assemble(&rows, intervals, test, count, compare);
    if let Some(best) = board.standings.first() {
        board.mde =
            stats::min_detectable_effect(count as u64, best.score, DEFAULT_ALPHA, DEFAULT_POWER);
    }
    if let [first, second, ..] = board.standings.as_slice() {
        let difference = first.score - second.score;
        board.gap = Some(Gap {
            difference,
            needed: stats::required_n(first.score, second.score, DEFAULT_ALPHA, DEFAULT_POWER),
        });
    }
    board
}

/// The overall board: each model's mean of category accuracies (`means`, keyed by
/// shown model name) from its instances per spec (`data`: spec → model → scores),
/// every category weighted once, by the stratified bootstrap.
pub(super) fn overall_board(
    means: &BTreeMap<&str, f64>,
    data: &BTreeMap<&str, BTreeMap<&str, &Scores>>,
) -> Board {
    let names: Vec<&str> = means.keys().copied().collect();
    // Per spec, the union of its instances: every model's strata line up on it.
    let lined: Vec<Vec<u64>> = data
        .values()
        .map(|models| union(models.values().copied()))
        .collect();
    let strata_of = |model: &str| -> Vec<Vec<Vec<f64>>> {
        data.values()
            .zip(&lined)
            .map(|(models, instances)| {
                let s = models.get(model);
                let at = |i: &u64| s.map(|s| s.owned(*i)).unwrap_or_default();
                instances.iter().map(at).collect()
            })
            .collect()
    };
    let strata: Vec<Vec<Vec<Vec<f64>>>> = names.iter().map(|n| strata_of(n)).collect();
    fn as_strata(s: &[Vec<Vec<f64>>]) -> Vec<stats::Stratum<'_, Vec<f64>>> {
        s.iter().map(|v| (1.0, v.as_slice())).collect()
    }
    let cfg = Bootstrap::default();
    let compare = |a: usize, b: usize| -> Versus {
        let c = stats::compare_stratified(&as_strata(&strata[a]), &as_strata(&strata[b]), &cfg)
            .expect("lined up by construction");
        versus(names[b], c.difference, c.interval, c.p_value, c.instances)
    };
    // Where every instance of every category scores the same the bootstrap has
    // no width; Wilson on the instances answered says what they can show.
    let intervals: Vec<Option<Interval>> = strata
        .iter()
        .map(|s| {
            let e = stats::bootstrap_stratified(&as_strata(s), &cfg)?;
            if e.interval.high > e.interval.low {
                return Some(e.interval);
            }
            let answered = s.iter().flatten().filter(|v| !v.is_empty()).count();
            stats::wilson_share(e.mean, answered as u64, DEFAULT_LEVEL)
        })
        .collect();
    let rows: Vec<(String, f64, usize)> = names
        .iter()
        .zip(&strata)
        .map(|(n, s)| {
            let answered = s.iter().flatten().filter(|v| !v.is_empty()).count();
            (n.to_string(), means[n], answered)
        })
        .collect();
    let total = lined.iter().map(Vec::len).sum();
    assemble(&rows, intervals, Test::Bootstrap, total, compare)
}

fn versus(
    against: &str,
    difference: f64,
    interval: Option<Interval>,
    p_value: f64,
    instances: usize,
) -> Versus {
    Versus {
        against: against.to_owned(),
        difference,
        interval,
        p_value,
        instances,
    }
}

/// Ranks `rows` (name, score, instances) into tie groups, `compare(a, b)` giving model
/// a against model b; each comparison runs once and also feeds `vs_best`.
fn assemble(
    rows: &[(String, f64, usize)],
    intervals: Vec<Option<Interval>>,
    test: Test,
    instances: usize,
    compare: impl Fn(usize, usize) -> Versus,
) -> Board {
    let memo = std::cell::RefCell::new(BTreeMap::<(usize, usize), Versus>::new());
    let get = |a: usize, b: usize| -> Versus {
        memo.borrow_mut()
            .entry((a, b))
            .or_insert_with(|| compare(a, b))
            .clone()
    };
    // rank_by asks p(leader, other): the comparison is run as other against leader.
    let ranked: Vec<Ranked> = stats::rank_by(rows, DEFAULT_ALPHA, |leader, other| {
        get(other, leader).p_value
    });
    let index = |name: &str| rows.iter().position(|r| r.0 == name).unwrap_or(0);
    let best = ranked.first().map(|r| index(&r.name));
    let standings = ranked
        .into_iter()
        .map(|r| {
            let at = index(&r.name);
            Standing {
                vs_best: best.filter(|b| *b != at).map(|b| get(at, b)),
                interval: intervals[at],
                model: r.name,
                rank: r.rank,
                score: r.score,
                leader: r.leader,
                adjusted_p: r.adjusted_p,
            }
        })
        .collect();
    Board {
        test,
        instances,
        standings,
        mde: None,
        gap: None,
    }
}

#[cfg(test)]
#[path = "significance_tests.rs"]
mod tests;
