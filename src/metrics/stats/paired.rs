//! Two models on the same instances: exact McNemar test with Newcombe's interval for
//! pass/fail, a paired instance bootstrap for mean scores.
//!
//! Pairing matters: both models see the same instances, so instances every model
//! passes (or fails) say nothing about the gap; only the discordant ones do.

use serde::Serialize;
use statrs::distribution::{Binomial, DiscreteCDF};

use super::bootstrap::{instance_means, mean, percentile_interval, resampled_means};
use super::{Bootstrap, Interval, StatsError, same_length, wilson};

/// Pass/fail of two models on the same instances.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct PassComparison {
    /// Instances compared.
    pub instances: u64,
    /// Pass rate of the first model (0 without instances).
    pub first_rate: f64,
    /// Pass rate of the second model (0 without instances).
    pub second_rate: f64,
    /// Instances the first model passed and the second failed (McNemar's b).
    pub b: u64,
    /// Instances the second model passed and the first failed (McNemar's c).
    pub c: u64,
    /// `first_rate - second_rate`, computed as `(b - c) / instances`.
    pub difference: f64,
    /// Newcombe's method 10 interval of `difference`; `None` without instances.
    pub interval: Option<Interval>,
    /// Two-sided exact McNemar p-value.
    pub p_value: f64,
}

/// Mean scores of two models on the same instances.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct ScoreComparison {
    /// Instances where both models have at least one sample.
    pub instances: usize,
    /// First model's mean over those instances of its per-instance mean (0 without any).
    pub first_mean: f64,
    /// Second model's mean, likewise.
    pub second_mean: f64,
    /// `first_mean - second_mean`.
    pub difference: f64,
    /// Percentile interval of `difference` from the paired bootstrap; `None` without instances.
    pub interval: Option<Interval>,
    /// Two-sided bootstrap p-value for "no difference" (1 without instances).
    pub p_value: f64,
}

/// Two-sided exact McNemar p-value for `b` and `c` discordant pairs:
/// `min(1, 2 P(X <= min(b, c)))` with `X ~ Bin(b + c, 1/2)`; 1 when `b + c = 0`.
pub(crate) fn mcnemar_p(b: u64, c: u64) -> f64 {
    if b + c == 0 {
        return 1.0;
    }
    (2.0 * half_binomial_cdf(b.min(c), b + c)).min(1.0)
}

/// Trials up to which [`half_binomial_cdf`] sums exact binomial coefficients:
/// C(120, i) (121 - i) still fits a `u128`.
const EXACT_TRIALS: u64 = 120;

/// `P(X <= k)` for `X ~ Bin(m, 1/2)`.
///
/// Small categories are the common case, and there statrs's incomplete beta is off
/// by about 1e-15, enough to print p = 0.9999999999999991 where the answer is 1; the
/// exact sum is rounded once.
fn half_binomial_cdf(k: u64, m: u64) -> f64 {
    if m > EXACT_TRIALS {
        let Ok(x) = Binomial::new(0.5, m) else {
            unreachable!("p = 1/2 is a valid binomial probability")
        };
        return x.cdf(k);
    }
    let (mut term, mut sum) = (1u128, 1u128);
    for i in 1..=u128::from(k.min(m)) {
        term = term * (u128::from(m) + 1 - i) / i;
        sum += term;
    }
    sum as f64 / 2f64.powi(m as i32)
}

/// Newcombe's method 10 interval for the difference of two paired pass rates, from
/// the counts of instances both passed, only the first passed, only the second
/// passed and neither passed; `None` without instances or with `level` outside (0, 1).
///
/// It combines each rate's Wilson limits through the correlation of the pairs
/// (with Newcombe's continuity correction of that correlation), so it keeps a
/// sensible width at 0 of n and n of n, where a Wald interval collapses to a point.
pub(crate) fn newcombe_paired(
    both: u64,
    first_only: u64,
    second_only: u64,
    neither: u64,
    level: f64,
) -> Option<Interval> {
    let n = both + first_only + second_only + neither;
    let first = wilson(both + first_only, n, level)?;
    let second = wilson(both + second_only, n, level)?;
    let nf = n as f64;
    let (r, s, t, u) = (
        both as f64,
        first_only as f64,
        second_only as f64,
        neither as f64,
    );
    let (p1, p2) = ((r + s) / nf, (r + t) / nf);
    let margins = (r + s) * (t + u) * (r + t) * (s + u);
    let cross = r * u - s * t;
    let corrected = if cross > nf / 2.0 {
        cross - nf / 2.0
    } else {
        cross.min(0.0)
    };
    // A zero margin leaves the correlation undefined; Newcombe takes it as 0.
    let phi = if margins == 0.0 {
        0.0
    } else {
        corrected / margins.sqrt()
    };
    let spread = |a: f64, b: f64| (a * a - 2.0 * phi * a * b + b * b).max(0.0).sqrt();
    let d = p1 - p2;
    Some(Interval {
        low: d - spread(p1 - first.low, second.high - p2),
        high: d + spread(p2 - second.low, first.high - p1),
    })
}

/// Compares two models' pass/fail results, instance by instance in the same order:
/// exact McNemar p-value and Newcombe's interval at `level` for the gap in pass rate
/// (no interval when `level` is outside (0, 1)).
pub(crate) fn compare_passes(
    first: &[bool],
    second: &[bool],
    level: f64,
) -> Result<PassComparison, StatsError> {
    same_length(first.len(), second.len(), None)?;
    let count = |f: fn(bool, bool) -> bool| {
        first
            .iter()
            .zip(second)
            .filter(|(a, b)| f(**a, **b))
            .count() as u64
    };
    let (both, b, c) = (
        count(|x, y| x && y),
        count(|x, y| x && !y),
        count(|x, y| !x && y),
    );
    let n = first.len() as u64;
    let rate = |k: u64| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    Ok(PassComparison {
        instances: n,
        first_rate: rate(both + b),
        second_rate: rate(both + c),
        b,
        c,
        difference: rate(b) - rate(c),
        interval: newcombe_paired(both, b, c, n - both - b - c, level),
        p_value: mcnemar_p(b, c),
    })
}

/// Compares two models' mean scores (per instance, the samples' scores, instances in
/// the same order) by a paired bootstrap that resamples instances.
///
/// Instances where either model has no sample are left out. The p-value is
/// `min(1, 2 (1 + m) / (B + 1))`, where `m` is the smaller of the numbers of the `B`
/// resampled differences at or below 0 and at or above 0: about the smallest
/// `1 - level` whose percentile interval would leave 0 out, with the +1 that keeps a
/// finite bootstrap from claiming p = 0. No interval, and p = 1, when `cfg` has no
/// resamples or a level outside (0, 1).
pub(crate) fn compare_scores<S: AsRef<[f64]>>(
    first: &[S],
    second: &[S],
    cfg: &Bootstrap,
) -> Result<ScoreComparison, StatsError> {
    same_length(first.len(), second.len(), None)?;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (x, y) in first.iter().zip(second) {
        if !x.as_ref().is_empty() && !y.as_ref().is_empty() {
            a.push(x.as_ref());
            b.push(y.as_ref());
        }
    }
    let (a, b) = (instance_means(&a), instance_means(&b));
    let diffs: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let or_zero = |v: &[f64]| if v.is_empty() { 0.0 } else { mean(v) };
    let (first_mean, second_mean) = (or_zero(&a), or_zero(&b));
    let draws = resampled_means(&diffs, cfg);
    Ok(ScoreComparison {
        instances: diffs.len(),
        first_mean,
        second_mean,
        difference: or_zero(&diffs),
        interval: draws.as_deref().map(|d| percentile_interval(d, cfg.level)),
        p_value: draws.as_deref().map_or(1.0, bootstrap_p),
    })
}

/// Two-sided p-value of "no difference" from sorted resampled differences.
pub(super) fn bootstrap_p(draws: &[f64]) -> f64 {
    let at_or_below = draws.partition_point(|d| *d <= 0.0);
    let at_or_above = draws.len() - draws.partition_point(|d| *d < 0.0);
    let far = at_or_below.min(at_or_above) as f64;
    (2.0 * (1.0 + far) / (draws.len() as f64 + 1.0)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_discordant_pair_is_no_evidence() {
        assert_eq!(mcnemar_p(0, 0), 1.0);
        assert_eq!(mcnemar_p(4, 4), 1.0);
        assert_eq!(mcnemar_p(0, 1), 1.0);
        assert!((mcnemar_p(0, 6) - 2.0 / 64.0).abs() < 1e-15);
        assert_eq!(mcnemar_p(7, 2), mcnemar_p(2, 7));
    }

    #[test]
    fn compare_passes_counts_the_discordant_pairs() {
        let first = [true, true, false, false, true, true];
        let second = [true, false, true, false, false, false];
        let cmp = compare_passes(&first, &second, 0.95).unwrap();
        assert_eq!((cmp.instances, cmp.b, cmp.c), (6, 3, 1));
        assert_eq!((cmp.first_rate, cmp.second_rate), (4.0 / 6.0, 2.0 / 6.0));
        assert!((cmp.difference - 2.0 / 6.0).abs() < 1e-15);
        assert_eq!(cmp.interval, newcombe_paired(1, 3, 1, 1, 0.95));
        assert!(cmp.interval.unwrap().contains(cmp.difference));
        assert_eq!(cmp.p_value, mcnemar_p(3, 1));
    }

    #[test]
    fn compare_passes_edges() {
        let none = compare_passes(&[], &[], 0.95).unwrap();
        assert_eq!(
            (none.interval, none.p_value, none.difference),
            (None, 1.0, 0.0)
        );
        let tied = compare_passes(&[true, false, true], &[true, false, true], 0.95).unwrap();
        assert_eq!(
            (tied.b, tied.c, tied.p_value, tied.difference),
            (0, 0, 1.0, 0.0)
        );
        assert!(tied.interval.unwrap().contains(0.0));
        let err = compare_passes(&[true], &[true, false], 0.95).unwrap_err();
        assert_eq!(
            err.to_string(),
            "paired results need the same instances: 2 against 1"
        );
    }

    #[test]
    fn compare_scores_is_deterministic_and_paired() {
        let first: Vec<Vec<f64>> = (0..30).map(|i| vec![f64::from(i % 5) / 4.0, 1.0]).collect();
        // The second model is the first minus a constant 0.1 on every instance.
        let second: Vec<Vec<f64>> = first
            .iter()
            .map(|s| s.iter().map(|x| x - 0.1).collect())
            .collect();
        let cfg = Bootstrap {
            resamples: 2000,
            ..Bootstrap::default()
        };
        let cmp = compare_scores(&first, &second, &cfg).unwrap();
        assert_eq!(
            serde_json::to_string(&cmp).unwrap(),
            serde_json::to_string(&compare_scores(&first, &second, &cfg).unwrap()).unwrap()
        );
        // A constant gap is certain when paired, however spread the scores are.
        assert!((cmp.difference - 0.1).abs() < 1e-12);
        assert!(cmp.interval.unwrap().width() < 1e-12);
        assert!((cmp.p_value - 2.0 / 2001.0).abs() < 1e-15);
    }

    #[test]
    fn compare_scores_without_a_gap() {
        let same: Vec<Vec<f64>> = (0..20).map(|i| vec![f64::from(i % 3) / 2.0]).collect();
        let cmp = compare_scores(&same, &same, &Bootstrap::default()).unwrap();
        assert_eq!((cmp.difference, cmp.p_value), (0.0, 1.0));
        assert_eq!(
            cmp.interval,
            Some(Interval {
                low: 0.0,
                high: 0.0
            })
        );
        let sparse = [vec![0.5], vec![]];
        let other = [vec![], vec![1.0]];
        let cmp = compare_scores(&sparse, &other, &Bootstrap::default()).unwrap();
        assert_eq!((cmp.instances, cmp.interval, cmp.p_value), (0, None, 1.0));
    }

    #[test]
    fn a_noisy_gap_has_a_moderate_p() {
        // 12 instances: the first model wins 5 and loses 2; both pass the other 5.
        let first: Vec<Vec<f64>> = (0..12)
            .map(|i| vec![f64::from(u8::from(!(5..7).contains(&i)))])
            .collect();
        let second: Vec<Vec<f64>> = (0..12).map(|i| vec![f64::from(u8::from(i >= 5))]).collect();
        let cmp = compare_scores(&first, &second, &Bootstrap::default()).unwrap();
        assert!((cmp.difference - 0.25).abs() < 1e-15);
        assert!(cmp.p_value > 0.05 && cmp.p_value < 0.6, "{cmp:?}");
        assert!(cmp.interval.unwrap().contains(0.0));
    }
}
