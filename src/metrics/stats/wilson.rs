//! Wilson score interval for a pass rate.

use super::{Interval, z_for_level};

/// Wilson score interval for `k` passes of `n` at confidence `level`; `None` when
/// `n = 0`, `k > n` or `level` is outside (0, 1).
///
/// Unlike the Wald interval it stays inside [0, 1] and keeps its width at 0 of n
/// and n of n, where a small category most often sits.
pub(crate) fn wilson(k: u64, n: u64, level: f64) -> Option<Interval> {
    if k > n {
        return None;
    }
    wilson_share(k as f64 / n.max(1) as f64, n, level)
}

/// Wilson score interval for an observed share `q` in [0, 1] of `n` instances at
/// confidence `level`: [`wilson`] with `q` for `k / n`, for a mean score that
/// every instance shares (then `n` instances are all the data says); `None`
/// when `n = 0`, `q` is outside [0, 1] or `level` is outside (0, 1).
pub(crate) fn wilson_share(q: f64, n: u64, level: f64) -> Option<Interval> {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let z = z_for_level(level)?;
    let (n_f, z2) = (n as f64, z * z);
    let denom = 1.0 + z2 / n_f;
    let center = (q + z2 / (2.0 * n_f)) / denom;
    let dist = z * (q * (1.0 - q) / n_f + z2 / (4.0 * n_f * n_f)).sqrt() / denom;
    // The limits at 0 of n and n of n are exactly 0 and 1; rounding would leave ±1e-17.
    let low = if q == 0.0 {
        0.0
    } else {
        (center - dist).max(0.0)
    };
    let high = if q == 1.0 {
        1.0
    } else {
        (center + dist).min(1.0)
    };
    Some(Interval { low, high })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_interval_without_instances_or_with_a_bad_level() {
        assert_eq!(wilson(0, 0, 0.95), None);
        assert_eq!(wilson(3, 2, 0.95), None);
        assert_eq!(wilson(1, 2, 1.0), None);
        assert_eq!(wilson(1, 2, 0.0), None);
        assert_eq!(wilson(1, 2, f64::NAN), None);
    }

    #[test]
    fn all_or_nothing_reach_the_bound_exactly() {
        let none = wilson(0, 10, 0.95).unwrap();
        let all = wilson(10, 10, 0.95).unwrap();
        assert_eq!(none.low, 0.0);
        assert_eq!(all.high, 1.0);
        assert!((none.high - (1.0 - all.low)).abs() < 1e-15);
    }

    #[test]
    fn a_share_that_every_instance_scores_keeps_its_width() {
        // 0 of 16 problems: the upper limit is z^2 / (16 + z^2), near 19.4%.
        let none = wilson_share(0.0, 16, 0.95).unwrap();
        assert_eq!(none.low, 0.0);
        assert!((none.high - 0.193_608).abs() < 1e-6, "{none:?}");
        assert_eq!(wilson_share(0.25, 8, 0.95), wilson(2, 8, 0.95));
        let half = wilson_share(0.5, 10, 0.95).unwrap();
        assert!(half.low > 0.2 && half.high < 0.8 && half.contains(0.5));
        assert_eq!(wilson_share(1.5, 10, 0.95), None);
        assert_eq!(wilson_share(0.5, 0, 0.95), None);
    }

    #[test]
    fn a_higher_level_is_wider_and_holds_the_lower_one() {
        let (i90, i99) = (wilson(3, 10, 0.90).unwrap(), wilson(3, 10, 0.99).unwrap());
        assert!(i99.low < i90.low && i90.high < i99.high);
        assert!(i90.contains(0.3) && i99.contains(0.3));
    }
}
