//! Power of a category at its size: the smallest gap in pass rate it can detect, and
//! the instances it would need to detect a given one.
//!
//! The normal approximation for two proportions: the test statistic's spread is
//! `sigma0 = sqrt(2 p (1 - p))` under the null (`p` the mean of the two rates) and
//! `sigma1 = sqrt(p1 (1 - p1) + p2 (1 - p2))` under the alternative, and only the near
//! tail of the two-sided test counts (the far one adds under alpha / 2). Power with
//! `n` instances per model is then `Phi((|p1 - p2| sqrt(n) - z_{alpha/2} sigma0) / sigma1)`.
//!
//! It treats the two models as independent samples. Models graded on the same
//! instances are paired and usually agree on the easy ones, so the paired test
//! detects somewhat smaller gaps: the numbers here err toward caution.

use statrs::distribution::{ContinuousCDF, Normal};

use super::z_upper;

/// Power of the two-sided test at `alpha` to tell pass rates `first` and `second` apart
/// with `n` instances per model (near tail only; 0 or 1 when both rates are 0 or 1).
pub(crate) fn power(first: f64, second: f64, n: u64, alpha: f64) -> f64 {
    let (sigma0, sigma1) = spreads(first, second);
    let margin = (first - second).abs() * (n as f64).sqrt() - z_upper(alpha / 2.0) * sigma0;
    if sigma1 == 0.0 {
        return if margin > 0.0 { 1.0 } else { 0.0 };
    }
    Normal::standard().cdf(margin / sigma1)
}

/// Instances per model that a two-sided test at `alpha` needs to tell pass rates
/// `first` and `second` apart with the given `power`; `None` when the rates are
/// equal or outside [0, 1], or `alpha` or `power` is outside (0, 1).
pub(crate) fn required_n(first: f64, second: f64, alpha: f64, power: f64) -> Option<u64> {
    let valid =
        is_rate(first) && is_rate(second) && first != second && is_level(alpha) && is_level(power);
    valid.then(|| (n_per_arm(first, second, alpha, power).ceil() as u64).max(1))
}

/// The smallest drop below the pass rate `baseline` that a two-sided test at `alpha`
/// detects with the given `power` when both models have `n` instances; `None` when
/// no drop does (not even to 0), or an argument is out of range.
///
/// The baseline is the better model's rate, as when asking how far below the
/// leader a model must be before the category can tell.
pub(crate) fn min_detectable_effect(n: u64, baseline: f64, alpha: f64, power: f64) -> Option<f64> {
    if n == 0 || !is_rate(baseline) || baseline == 0.0 || !is_level(alpha) || !is_level(power) {
        return None;
    }
    let reaches = |gap: f64| self::power(baseline, baseline - gap, n, alpha) >= power;
    if !reaches(baseline) {
        return None;
    }
    // Power grows with the gap, so halving the bracket down to adjacent floats finds
    // the crossing.
    let (mut lo, mut hi) = (0.0, baseline);
    loop {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            return Some(hi);
        }
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
}

/// Unrounded instances per model; the inverse of [`power`] in `n`.
pub(super) fn n_per_arm(first: f64, second: f64, alpha: f64, power: f64) -> f64 {
    let (sigma0, sigma1) = spreads(first, second);
    let reach = (z_upper(alpha / 2.0) * sigma0 - z_upper(power) * sigma1).max(0.0);
    (reach / (first - second)).powi(2)
}

/// Spread of the difference under the null (pooled rate) and the alternative.
fn spreads(first: f64, second: f64) -> (f64, f64) {
    let pooled = (first + second) / 2.0;
    let sigma0 = (2.0 * pooled * (1.0 - pooled)).sqrt();
    let sigma1 = (first * (1.0 - first) + second * (1.0 - second)).sqrt();
    (sigma0, sigma1)
}

fn is_rate(p: f64) -> bool {
    (0.0..=1.0).contains(&p)
}

fn is_level(p: f64) -> bool {
    p > 0.0 && p < 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detectable_effect_inverts_the_required_n() {
        for (n, baseline) in [(30, 0.8), (100, 0.5), (1000, 0.055), (250, 0.95)] {
            let gap = min_detectable_effect(n, baseline, 0.05, 0.8).unwrap();
            let back = n_per_arm(baseline, baseline - gap, 0.05, 0.8);
            assert!(
                (back - n as f64).abs() < 1e-6 * n as f64,
                "{n} {baseline}: {gap} -> {back}"
            );
            assert!((power(baseline, baseline - gap, n, 0.05) - 0.8).abs() < 1e-9);
        }
    }

    #[test]
    fn small_categories_cannot_separate_rare_passes() {
        // 5.5% against 0.3% with 10 instances each: no drop from 5.5% is detectable.
        assert_eq!(min_detectable_effect(10, 0.055, 0.05, 0.8), None);
        let needed = required_n(0.055, 0.003, 0.05, 0.8).unwrap();
        assert!((150..200).contains(&needed), "{needed}");
        assert!(power(0.055, 0.003, 10, 0.05) < 0.2);
    }

    #[test]
    fn out_of_range_arguments() {
        assert_eq!(required_n(0.5, 0.5, 0.05, 0.8), None);
        assert_eq!(required_n(1.5, 0.5, 0.05, 0.8), None);
        assert_eq!(required_n(0.6, 0.5, 0.0, 0.8), None);
        assert_eq!(required_n(0.6, 0.5, 0.05, 1.0), None);
        assert_eq!(min_detectable_effect(0, 0.5, 0.05, 0.8), None);
        assert_eq!(min_detectable_effect(100, 0.0, 0.05, 0.8), None);
        assert_eq!(min_detectable_effect(100, f64::NAN, 0.05, 0.8), None);
        assert_eq!(power(1.0, 0.0, 10, 0.05), 1.0);
        assert_eq!(power(0.0, 0.0, 10, 0.05), 0.0);
    }

    #[test]
    fn larger_categories_detect_smaller_gaps() {
        let gaps: Vec<f64> = [30, 100, 300, 1000]
            .iter()
            .map(|n| min_detectable_effect(*n, 0.7, 0.05, 0.8).unwrap())
            .collect();
        assert!(gaps.windows(2).all(|w| w[1] < w[0]), "{gaps:?}");
    }
}
