//! Means over several categories at once, each category weighted as the caller says:
//! a model's mean of category scores (the leaderboard's total) and the paired gap in
//! it between two models, by a bootstrap stratified by category.
//!
//! Resampling instances across categories would let a small category's share of a
//! resample wander while each of its instances weighs a lot, and the interval would
//! come out far too wide. Resampling inside each category keeps every category's
//! size fixed, as in the real data; instances stay whole clusters of samples.

use super::bootstrap::{MeanEstimate, instance_means, percentile_interval, resampled_weighted};
use super::paired::{ScoreComparison, bootstrap_p};
use super::{Bootstrap, StatsError, same_length};

/// One category: its relative weight and, per instance, the samples' scores.
pub(crate) type Stratum<'a, S> = (f64, &'a [S]);

/// The weighted mean of the categories' mean scores (weights relative: they are
/// normalized over the categories with data) with a stratified percentile bootstrap
/// interval; `None` when no category has a sample or `cfg` is unusable.
///
/// Each category's mean is the mean over its instances of each instance's mean
/// sample score; instances without samples are skipped.
pub(crate) fn bootstrap_stratified<S: AsRef<[f64]>>(
    strata: &[Stratum<'_, S>],
    cfg: &Bootstrap,
) -> Option<MeanEstimate> {
    let means: Vec<(f64, Vec<f64>)> = strata
        .iter()
        .map(|(w, instances)| (*w, instance_means(instances)))
        .collect();
    let (weighted, point) = normalized(&means)?;
    let draws = resampled_weighted(&weighted, cfg)?;
    Some(MeanEstimate {
        mean: point,
        interval: percentile_interval(&draws, cfg.level),
        instances: weighted.iter().map(|s| s.1.len()).sum(),
        samples: strata
            .iter()
            .flat_map(|s| s.1.iter())
            .map(|s| s.as_ref().len())
            .sum(),
    })
}

/// Compares two models' weighted means of category scores on the same instances
/// (same categories, same instance order in each) by a paired bootstrap stratified
/// by category: within each category, instances where either model has no sample are
/// left out; categories left empty drop out and the weights are normalized over the
/// rest. The p-value is as in [`compare_scores`](super::compare_scores); no interval,
/// and p = 1, when nothing is paired or `cfg` is unusable.
pub(crate) fn compare_stratified<S: AsRef<[f64]>>(
    first: &[Stratum<'_, S>],
    second: &[Stratum<'_, S>],
    cfg: &Bootstrap,
) -> Result<ScoreComparison, StatsError> {
    same_length(first.len(), second.len(), None)?;
    let mut a_means = Vec::new();
    let mut b_means = Vec::new();
    let mut diffs = Vec::new();
    for ((w, a), (_, b)) in first.iter().zip(second) {
        same_length(a.len(), b.len(), None)?;
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for (x, y) in a.iter().zip(b.iter()) {
            if !x.as_ref().is_empty() && !y.as_ref().is_empty() {
                xs.push(x.as_ref());
                ys.push(y.as_ref());
            }
        }
        let (xs, ys) = (instance_means(&xs), instance_means(&ys));
        diffs.push((*w, xs.iter().zip(&ys).map(|(x, y)| x - y).collect()));
        a_means.push((*w, xs));
        b_means.push((*w, ys));
    }
    let Some((weighted, difference)) = normalized(&diffs) else {
        return Ok(ScoreComparison {
            instances: 0,
            first_mean: 0.0,
            second_mean: 0.0,
            difference: 0.0,
            interval: None,
            p_value: 1.0,
        });
    };
    let mean_of = |m: &[(f64, Vec<f64>)]| normalized(m).map_or(0.0, |(_, point)| point);
    let draws = resampled_weighted(&weighted, cfg);
    Ok(ScoreComparison {
        instances: weighted.iter().map(|s| s.1.len()).sum(),
        first_mean: mean_of(&a_means),
        second_mean: mean_of(&b_means),
        difference,
        interval: draws.as_deref().map(|d| percentile_interval(d, cfg.level)),
        p_value: draws.as_deref().map_or(1.0, bootstrap_p),
    })
}

/// Strata as (normalized weight, per-instance values), and their weighted mean.
type Normalized<'a> = (Vec<(f64, &'a [f64])>, f64);

/// The non-empty strata with weights normalized to sum to 1, and the weighted mean
/// of their means; `None` when every stratum is empty or the weights sum to 0.
fn normalized(strata: &[(f64, Vec<f64>)]) -> Option<Normalized<'_>> {
    let kept: Vec<&(f64, Vec<f64>)> = strata.iter().filter(|s| !s.1.is_empty()).collect();
    let total: f64 = kept.iter().map(|s| s.0).sum();
    if kept.is_empty() || total <= 0.0 {
        return None;
    }
    let weighted: Vec<(f64, &[f64])> = kept
        .iter()
        .map(|(w, v)| (w / total, v.as_slice()))
        .collect();
    let point = weighted
        .iter()
        .map(|(w, v)| w * (v.iter().sum::<f64>() / v.len() as f64))
        .sum();
    Some((weighted, point))
}

#[cfg(test)]
mod tests {
    use super::super::{bootstrap_mean, compare_scores};
    use super::*;

    fn cfg() -> Bootstrap {
        Bootstrap {
            resamples: 2000,
            ..Bootstrap::default()
        }
    }

    fn scores(n: usize, shift: usize) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| vec![((i * 7 + shift) % 11) as f64 / 10.0])
            .collect()
    }

    #[test]
    fn one_category_is_the_plain_bootstrap() {
        let data = scores(30, 0);
        let plain = bootstrap_mean(&data, &cfg()).unwrap();
        let one = bootstrap_stratified(&[(3.0, data.as_slice())], &cfg()).unwrap();
        assert_eq!(plain, one);
        let other = scores(30, 4);
        let cmp = compare_scores(&data, &other, &cfg()).unwrap();
        let strat = compare_stratified(
            &[(1.0, data.as_slice())],
            &[(1.0, other.as_slice())],
            &cfg(),
        )
        .unwrap();
        assert_eq!(cmp.interval, strat.interval);
        assert_eq!(cmp.p_value, strat.p_value);
        assert!((cmp.difference - strat.difference).abs() < 1e-15);
    }

    #[test]
    fn categories_weigh_as_told_whatever_their_size() {
        let small = vec![vec![1.0]; 4];
        let large = vec![vec![0.0]; 400];
        let e = bootstrap_stratified(&[(1.0, small.as_slice()), (1.0, large.as_slice())], &cfg())
            .unwrap();
        assert_eq!(e.mean, 0.5);
        // Every category is constant, so stratified resamples cannot move the mean.
        assert_eq!((e.interval.low, e.interval.high), (0.5, 0.5));
        assert_eq!((e.instances, e.samples), (404, 404));
    }

    #[test]
    fn empty_categories_drop_out() {
        let some = scores(10, 1);
        let none: Vec<Vec<f64>> = vec![vec![]; 3];
        let e = bootstrap_stratified(&[(1.0, some.as_slice()), (5.0, none.as_slice())], &cfg());
        assert_eq!(e, bootstrap_mean(&some, &cfg()));
        assert_eq!(
            bootstrap_stratified(&[(1.0, none.as_slice())], &cfg()),
            None
        );
        let cmp = compare_stratified(&[(1.0, none.as_slice())], &[(1.0, none.as_slice())], &cfg())
            .unwrap();
        assert_eq!((cmp.instances, cmp.interval, cmp.p_value), (0, None, 1.0));
    }

    #[test]
    fn a_consistent_gap_across_categories_is_significant() {
        let a1 = scores(20, 0);
        let a2 = scores(50, 3);
        let lower =
            |v: &[Vec<f64>]| -> Vec<Vec<f64>> { v.iter().map(|s| vec![s[0] - 0.2]).collect() };
        let (b1, b2) = (lower(&a1), lower(&a2));
        let cmp = compare_stratified(
            &[(1.0, a1.as_slice()), (1.0, a2.as_slice())],
            &[(1.0, b1.as_slice()), (1.0, b2.as_slice())],
            &cfg(),
        )
        .unwrap();
        assert!((cmp.difference - 0.2).abs() < 1e-12, "{cmp:?}");
        assert!(cmp.interval.unwrap().width() < 1e-12);
        assert_eq!(cmp.instances, 70);
        assert!(cmp.p_value < 0.01);
        let err = compare_stratified(&[(1.0, a1.as_slice())], &[(1.0, a2.as_slice())], &cfg())
            .unwrap_err();
        assert!(err.to_string().contains("50 against 20"), "{err}");
    }
}
