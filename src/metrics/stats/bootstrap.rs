//! Percentile bootstrap of a mean score, clustered by instance.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng as _, SeedableRng};
use serde::Serialize;

use super::{Bootstrap, Interval, z_for_level};

/// A mean score over instances, with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct MeanEstimate {
    /// Mean over instances of each instance's mean sample score.
    pub mean: f64,
    /// Percentile bootstrap interval of `mean`.
    pub interval: Interval,
    /// Instances with at least one sample: the clusters resampled.
    pub instances: usize,
    /// Samples over those instances.
    pub samples: usize,
}

/// Mean score of `instances` (per instance, its samples' finite scores, usually in
/// [0, 1]) with a percentile bootstrap interval that resamples whole instances.
///
/// Each instance counts once, whatever its number of samples; instances without
/// samples are skipped. `None` when no instance has a sample, `cfg.resamples` is 0
/// or `cfg.level` is outside (0, 1).
pub(crate) fn bootstrap_mean<S: AsRef<[f64]>>(
    instances: &[S],
    cfg: &Bootstrap,
) -> Option<MeanEstimate> {
    let means = instance_means(instances);
    let draws = resampled_means(&means, cfg)?;
    Some(MeanEstimate {
        mean: mean(&means),
        interval: percentile_interval(&draws, cfg.level),
        instances: means.len(),
        samples: instances.iter().map(|s| s.as_ref().len()).sum(),
    })
}

/// Each instance's mean sample score, skipping instances without samples.
pub(super) fn instance_means<S: AsRef<[f64]>>(instances: &[S]) -> Vec<f64> {
    instances
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| !s.is_empty())
        .map(mean)
        .collect()
}

/// Arithmetic mean in index order (NaN when empty).
pub(super) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The means of `cfg.resamples` resamples of `values` with replacement, sorted;
/// `None` when there is nothing to resample or the level is unusable.
///
/// Every cluster statistic here is a mean of per-instance values, so resampling
/// those values is resampling instances with their samples kept together.
pub(super) fn resampled_means(values: &[f64], cfg: &Bootstrap) -> Option<Vec<f64>> {
    resampled_weighted(&[(1.0, values)], cfg)
}

/// Stratified resampling: each resample draws, stratum by stratum in order, as many
/// values from each stratum as it holds, and keeps `sum(weight * stratum mean)`.
/// Sorted; `None` when a stratum is empty, there is none, or `cfg` is unusable.
///
/// One stratum of weight 1 gives exactly the draws of [`resampled_means`].
pub(super) fn resampled_weighted(strata: &[(f64, &[f64])], cfg: &Bootstrap) -> Option<Vec<f64>> {
    if strata.is_empty() || strata.iter().any(|s| s.1.is_empty()) || cfg.resamples == 0 {
        return None;
    }
    z_for_level(cfg.level)?;
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&cfg.seed.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    let mut draws: Vec<f64> = (0..cfg.resamples)
        .map(|_| {
            strata.iter().fold(0.0, |acc, (weight, values)| {
                let n = values.len() as u64;
                let sum: f64 = (0..n).map(|_| values[below(&mut rng, n) as usize]).sum();
                acc + weight * (sum / n as f64)
            })
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    Some(draws)
}

/// A uniform integer below `n` (> 0): Lemire's multiply-and-reject, so no modulo bias.
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = u128::from(rng.next_u64()) * u128::from(n);
        if m as u64 >= threshold {
            return (m >> 64) as u64;
        }
    }
}

/// The central `level` percentile interval of non-empty sorted `draws`.
pub(super) fn percentile_interval(draws: &[f64], level: f64) -> Interval {
    let tail = (1.0 - level) / 2.0;
    Interval {
        low: quantile(draws, tail),
        high: quantile(draws, 1.0 - tail),
    }
}

/// The `q` quantile of non-empty sorted values, interpolated linearly between
/// order statistics (numpy's default, Hyndman and Fan's type 7).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let i = h.floor() as usize;
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + (h - i as f64) * (next - sorted[i]),
        None => sorted[i],
    }
}

#[cfg(test)]
mod tests {
    use super::super::wilson;
    use super::*;

    fn cfg(resamples: u32) -> Bootstrap {
        Bootstrap {
            resamples,
            ..Bootstrap::default()
        }
    }

    /// `n` instances of `samples` scores each, from a fixed arithmetic pattern.
    fn scores(n: usize, samples: usize) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| {
                (0..samples)
                    .map(|s| ((i * 7 + s * 3) % 11) as f64 / 10.0)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let data = scores(40, 3);
        let json = |c: &Bootstrap| serde_json::to_string(&bootstrap_mean(&data, c)).unwrap();
        assert_eq!(json(&cfg(2000)), json(&cfg(2000)));
        assert_ne!(
            json(&cfg(2000)),
            json(&Bootstrap {
                seed: 18,
                ..cfg(2000)
            })
        );
    }

    #[test]
    fn the_draws_are_pinned() {
        // ChaCha8 keyed as documented on `Bootstrap`: a change here changes every report.
        let e = bootstrap_mean(&scores(10, 1), &cfg(1000)).unwrap();
        let bits = (
            e.mean.to_bits(),
            e.interval.low.to_bits(),
            e.interval.high.to_bits(),
        );
        assert_eq!(
            bits,
            (
                0x3FE0_51EB_851E_B852,
                0x3FD3_2F1A_9FBE_76CC,
                0x3FE7_0A3D_70A3_D70A
            ),
            "{e:?}"
        );
    }

    #[test]
    fn the_interval_holds_the_mean() {
        for (n, samples) in [(5, 1), (10, 4), (37, 2), (200, 1)] {
            let e = bootstrap_mean(&scores(n, samples), &cfg(2000)).unwrap();
            assert!(e.interval.contains(e.mean), "{n}x{samples}: {e:?}");
            assert!(e.interval.width() > 0.0);
        }
    }

    #[test]
    fn equal_scores_give_a_point() {
        for x in [0.0, 0.1, 0.7, 1.0] {
            let e = bootstrap_mean(&vec![vec![x; 3]; 25], &cfg(500)).unwrap();
            assert_eq!(
                e.interval,
                Interval {
                    low: e.mean,
                    high: e.mean
                }
            );
            assert!((e.mean - x).abs() < 1e-15);
        }
    }

    #[test]
    fn nothing_to_resample_gives_none() {
        let empty: Vec<Vec<f64>> = vec![vec![], vec![]];
        assert_eq!(bootstrap_mean(&empty, &cfg(100)), None);
        assert_eq!(bootstrap_mean::<Vec<f64>>(&[], &cfg(100)), None);
        assert_eq!(bootstrap_mean(&scores(5, 1), &cfg(0)), None);
        assert_eq!(
            bootstrap_mean(
                &scores(5, 1),
                &Bootstrap {
                    level: 1.0,
                    ..cfg(10)
                }
            ),
            None
        );
    }

    #[test]
    fn instances_without_samples_are_skipped_and_each_instance_counts_once() {
        let data = vec![vec![1.0, 1.0, 1.0, 1.0], vec![], vec![0.0]];
        let e = bootstrap_mean(&data, &cfg(100)).unwrap();
        assert_eq!((e.mean, e.instances, e.samples), (0.5, 2, 5));
    }

    #[test]
    fn many_pass_fail_instances_agree_with_wilson() {
        let data: Vec<Vec<f64>> = (0..2000)
            .map(|i| vec![f64::from(u8::from(i % 10 < 3))])
            .collect();
        let boot = bootstrap_mean(&data, &cfg(4000)).unwrap().interval;
        let w = wilson(600, 2000, 0.95).unwrap();
        assert!(
            (boot.low - w.low).abs() < 0.003 && (boot.high - w.high).abs() < 0.003,
            "{boot:?} {w:?}"
        );
    }

    #[test]
    fn repeated_samples_do_not_shrink_the_interval() {
        let data = scores(30, 1);
        let doubled: Vec<Vec<f64>> = data.iter().map(|s| [s.as_slice(), s].concat()).collect();
        let (once, twice) = (
            bootstrap_mean(&data, &cfg(2000)),
            bootstrap_mean(&doubled, &cfg(2000)),
        );
        assert_eq!(once.unwrap().interval, twice.unwrap().interval);
        // Taking every sample as its own instance would shrink it by about 1/sqrt(2).
        let flat: Vec<Vec<f64>> = doubled.concat().into_iter().map(|x| vec![x]).collect();
        let naive = bootstrap_mean(&flat, &cfg(2000)).unwrap().interval;
        let ratio = naive.width() / once.unwrap().interval.width();
        assert!((0.6..0.8).contains(&ratio), "{ratio}");
    }

    #[test]
    fn type_7_quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert!((quantile(&v, 0.1) - 1.3).abs() < 1e-15);
        assert_eq!(quantile(&[5.0], 0.975), 5.0);
    }
}
