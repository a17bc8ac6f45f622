//! Leaderboard tie groups: which models the data cannot tell apart from the best.
//!
//! Models are ordered by score (ties by name). The first is the leader of group 1;
//! every other model is compared with it by the paired test, and the p-values of
//! those comparisons are Holm-adjusted together. Walking down the score order, each
//! model whose adjusted p-value is at least alpha joins group 1; the walk stops at
//! the first model shown worse than the leader. That model leads group 2, compared
//! (and adjusted) against the models after it, and so on.
//!
//! So ranks always follow the score order: a group is a run of consecutive models,
//! and no model ranks above one that scored higher. A model further down whose gap
//! to the leader happens to be noisy (not significant) still lands in a later group
//! once a better-scoring model between them was shown worse: a leaderboard that
//! ranked it above that model would contradict its own scores.

use serde::Serialize;

/// One model's place on a leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Ranked {
    /// Model name.
    pub name: String,
    /// Tie group, 1 for the best; models of one group share the rank.
    pub rank: u32,
    /// Pass rate or mean score (0 without instances).
    pub score: f64,
    /// Instances the model was scored on.
    pub instances: usize,
    /// Leader of the model's group (the model itself for a leader).
    pub leader: String,
    /// p-value of the paired test against the leader; `None` for a leader.
    pub p_value: Option<f64>,
    /// `p_value` Holm-adjusted over all comparisons with that leader; `None` for a leader.
    pub adjusted_p: Option<f64>,
}

/// Holm's step-down adjustment of `p_values`, in their order: the i-th smallest is
/// multiplied by (m - i + 1), made non-decreasing in that order, and capped at 1.
pub(crate) fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (i, &at) in order.iter().enumerate() {
        running = running.max(((m - i) as f64 * p_values[at]).min(1.0));
        adjusted[at] = running;
    }
    adjusted
}

/// Tie groups of models given as (name, score, instances), with `p(a, b)` the p-value
/// of whatever paired test the caller runs between the models at positions `a` (the
/// group's leader) and `b` of `models`; sorted by rank, score, then name.
///
/// For scores the caller computes itself (a mean over categories, say): `p` is only
/// asked for the pairs the walk needs, so a costly test runs no more than necessary.
pub(crate) fn rank_by(
    models: &[(String, f64, usize)],
    alpha: f64,
    p: impl FnMut(usize, usize) -> f64,
) -> Vec<Ranked> {
    group(models.iter().map(|(n, s, i)| (n, (*s, *i))), alpha, p)
}

/// Groups models given (name, (score, instances)) in a fixed order, with `p(a, b)` the
/// paired test's p-value between the models at those positions of that order.
fn group<'a>(
    models: impl Iterator<Item = (&'a String, (f64, usize))>,
    alpha: f64,
    mut p: impl FnMut(usize, usize) -> f64,
) -> Vec<Ranked> {
    let models: Vec<(&String, f64, usize)> = models.map(|(n, (s, i))| (n, s, i)).collect();
    let mut left: Vec<usize> = (0..models.len()).collect();
    left.sort_by(|&a, &b| {
        models[b]
            .1
            .total_cmp(&models[a].1)
            .then_with(|| models[a].0.cmp(models[b].0))
    });
    let mut ranked = Vec::with_capacity(models.len());
    let mut rank = 0;
    while let Some((&leader, others)) = left.split_first() {
        rank += 1;
        let raw: Vec<f64> = others.iter().map(|&o| p(leader, o)).collect();
        let adjusted = holm(&raw);
        let entry = |i: usize, tested: Option<(f64, f64)>| Ranked {
            name: models[i].0.clone(),
            rank,
            score: models[i].1,
            instances: models[i].2,
            leader: models[leader].0.clone(),
            p_value: tested.map(|t| t.0),
            adjusted_p: tested.map(|t| t.1),
        };
        ranked.push(entry(leader, None));
        // Members follow in score order up to the first model shown worse.
        let members = adjusted.iter().take_while(|&&a| a >= alpha).count();
        for (k, &o) in others[..members].iter().enumerate() {
            ranked.push(entry(o, Some((raw[k], adjusted[k]))));
        }
        left = others[members..].to_vec();
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::stats::bootstrap::{instance_means, mean};
    use crate::metrics::stats::paired::{compare_scores, mcnemar_p};
    use crate::metrics::stats::{Bootstrap, StatsError, same_length};
    use std::collections::BTreeMap;

    // The walk of `group`, driven by the two paired tests the reports use.
    /// Tie groups of models from pass/fail results on the same instances (same order),
    /// compared by the exact McNemar test at `alpha`; sorted by rank, score, then name.
    fn tie_groups(
        models: &BTreeMap<String, Vec<bool>>,
        alpha: f64,
    ) -> Result<Vec<Ranked>, StatsError> {
        let results: Vec<&[bool]> = models.values().map(Vec::as_slice).collect();
        check_lengths(models.keys().zip(results.iter().map(|r| r.len())))?;
        let scores = results.iter().map(|r| {
            let passed = r.iter().filter(|p| **p).count();
            (
                if r.is_empty() {
                    0.0
                } else {
                    passed as f64 / r.len() as f64
                },
                r.len(),
            )
        });
        let discordant =
            |a: &[bool], b: &[bool]| a.iter().zip(b).filter(|(x, y)| x > y).count() as u64;
        Ok(group(models.keys().zip(scores), alpha, |a, b| {
            mcnemar_p(
                discordant(results[a], results[b]),
                discordant(results[b], results[a]),
            )
        }))
    }

    /// Tie groups of models from per-instance sample scores on the same instances (same
    /// order), ranked by mean score and compared by the paired bootstrap ([`compare_scores`]).
    ///
    /// Costs up to one bootstrap per pair of models: m (m - 1) / 2 of them for m models.
    fn tie_groups_scores(
        models: &BTreeMap<String, Vec<Vec<f64>>>,
        alpha: f64,
        cfg: &Bootstrap,
    ) -> Result<Vec<Ranked>, StatsError> {
        let results: Vec<&[Vec<f64>]> = models.values().map(Vec::as_slice).collect();
        check_lengths(models.keys().zip(results.iter().map(|r| r.len())))?;
        let scores = results.iter().map(|r| {
            let means = instance_means(r);
            (
                if means.is_empty() { 0.0 } else { mean(&means) },
                means.len(),
            )
        });
        Ok(group(models.keys().zip(scores), alpha, |a, b| {
            compare_scores(results[a], results[b], cfg).map_or(1.0, |c| c.p_value)
        }))
    }

    /// Fails unless every model has as many instances as the first.
    fn check_lengths<'a>(
        mut lengths: impl Iterator<Item = (&'a String, usize)>,
    ) -> Result<(), StatsError> {
        let Some((_, expected)) = lengths.next() else {
            return Ok(());
        };
        lengths.try_for_each(|(name, found)| same_length(expected, found, Some(name)))
    }

    fn passes(pattern: &[(&str, &str)]) -> BTreeMap<String, Vec<bool>> {
        pattern
            .iter()
            .map(|(name, p)| (name.to_string(), p.chars().map(|c| c == '1').collect()))
            .collect()
    }

    fn ranks(ranked: &[Ranked]) -> Vec<(&str, u32)> {
        ranked.iter().map(|r| (r.name.as_str(), r.rank)).collect()
    }

    #[test]
    fn noise_shares_the_top_rank() {
        // 10 instances: 5.5% against 0.3% is this kind of gap.
        let models = passes(&[
            ("b", "1000000000"),
            ("a", "0000000000"),
            ("c", "1100000000"),
        ]);
        let ranked = tie_groups(&models, 0.05).unwrap();
        assert_eq!(ranks(&ranked), [("c", 1), ("b", 1), ("a", 1)]);
        assert_eq!(ranked[0].p_value, None);
        assert_eq!(ranked[2].p_value, Some(mcnemar_p(0, 2)));
        assert!(ranked.iter().all(|r| r.leader == "c"));
    }

    #[test]
    fn a_clear_gap_splits_the_groups() {
        let strong = "1".repeat(30);
        let weak = format!("{}{}", "1".repeat(5), "0".repeat(25));
        let models = passes(&[("x", &strong), ("y", &strong), ("z", &weak), ("w", &weak)]);
        let ranked = tie_groups(&models, 0.05).unwrap();
        assert_eq!(ranks(&ranked), [("x", 1), ("y", 1), ("w", 2), ("z", 2)]);
        assert_eq!(ranked[2].leader, "w");
        assert_eq!((ranked[1].adjusted_p, ranked[2].p_value), (Some(1.0), None));
        assert_eq!(ranked[3].p_value, Some(1.0));
    }

    #[test]
    fn ranks_follow_the_score_order() {
        // Against the leader: b loses 7 instances and wins none (shown worse); c loses
        // 16 and wins 7 (a bigger gap, but noisy: not shown worse on its own). Were
        // group 1 "every model not shown worse", c (7/50) would share rank 1 while
        // b (9/50) got rank 2. The group stops at b instead, and c follows it.
        let leader = format!("{}{}", "1".repeat(16), "0".repeat(34));
        let b = format!("{}{}", "0".repeat(7), &leader[7..]);
        let c = format!("{}{}{}", "0".repeat(16), "1".repeat(7), "0".repeat(27));
        let ranked =
            tie_groups(&passes(&[("leader", &leader), ("b", &b), ("c", &c)]), 0.05).unwrap();
        assert_eq!(ranks(&ranked), [("leader", 1), ("b", 2), ("c", 2)]);
        assert_eq!(ranked[1].leader, "b");
        assert_eq!(ranked[2].p_value, Some(mcnemar_p(9, 7)));
        let scores: Vec<f64> = ranked.iter().map(|r| r.score).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    }

    #[test]
    fn a_group_stops_at_the_first_model_shown_worse() {
        // Against the leader a: b loses 1 (tied), c loses 8 and wins none (shown
        // worse), d loses 19 and wins 10 (not shown worse: too noisy). d scores
        // below c, so it must not join a's group past c.
        let a = format!("{}{}", "1".repeat(30), "0".repeat(20));
        let b = format!("0{}{}", "1".repeat(29), "0".repeat(20));
        let c = format!("{}{}{}", "0".repeat(8), "1".repeat(22), "0".repeat(20));
        let d = format!(
            "{}{}{}{}",
            "1".repeat(11),
            "0".repeat(19),
            "1".repeat(10),
            "0".repeat(10)
        );
        let ranked =
            tie_groups(&passes(&[("a", &a), ("b", &b), ("c", &c), ("d", &d)]), 0.05).unwrap();
        assert_eq!(ranks(&ranked), [("a", 1), ("b", 1), ("c", 2), ("d", 2)]);
        assert!(holm(&[mcnemar_p(1, 0), mcnemar_p(8, 0), mcnemar_p(19, 10)])[2] >= 0.05);
        assert_eq!(ranked[3].leader, "c");
    }

    #[test]
    fn edges() {
        assert!(tie_groups(&BTreeMap::new(), 0.05).unwrap().is_empty());
        let one = tie_groups(&passes(&[("only", "0101")]), 0.05).unwrap();
        assert_eq!(ranks(&one), [("only", 1)]);
        assert_eq!(one[0].score, 0.5);
        let empty = tie_groups(&passes(&[("a", ""), ("b", "")]), 0.05).unwrap();
        assert_eq!(ranks(&empty), [("a", 1), ("b", 1)]);
        let err = tie_groups(&passes(&[("a", "01"), ("b", "011")]), 0.05).unwrap_err();
        assert_eq!(
            err.to_string(),
            "paired results need the same instances: 3 for b against 2"
        );
    }

    #[test]
    fn equal_scores_break_by_name() {
        let models = passes(&[("beta", "1100"), ("alpha", "0011"), ("gamma", "1010")]);
        let ranked = tie_groups(&models, 0.05).unwrap();
        assert_eq!(ranks(&ranked), [("alpha", 1), ("beta", 1), ("gamma", 1)]);
        assert_eq!(ranked[1].p_value, Some(mcnemar_p(2, 2)));
    }

    #[test]
    fn scores_rank_by_the_paired_bootstrap() {
        let high: Vec<Vec<f64>> = (0..40).map(|i| vec![0.9, f64::from(i % 2)]).collect();
        let low: Vec<Vec<f64>> = high
            .iter()
            .map(|s| s.iter().map(|x| x * 0.5).collect())
            .collect();
        let mut models = BTreeMap::new();
        models.insert("high".to_string(), high.clone());
        models.insert("twin".to_string(), high);
        models.insert("low".to_string(), low);
        let cfg = Bootstrap {
            resamples: 1000,
            ..Bootstrap::default()
        };
        let ranked = tie_groups_scores(&models, 0.05, &cfg).unwrap();
        assert_eq!(ranks(&ranked), [("high", 1), ("twin", 1), ("low", 2)]);
        assert_eq!(ranked[1].p_value, Some(1.0));
        assert_eq!(
            serde_json::to_string(&ranked).unwrap(),
            serde_json::to_string(&tie_groups_scores(&models, 0.05, &cfg).unwrap()).unwrap()
        );
    }
}
