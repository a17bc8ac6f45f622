//! Statistics a person decides from: is a gap between two models real, or noise?
//!
//! This module owns confidence intervals for one model's pass rate or mean score,
//! paired comparisons of two models on the same instances, leaderboard tie groups
//! and the power of a category at its size. Everything is a pure function of the
//! numbers passed in; rendering belongs to the reports.
//!
//! It is a leaf: it imports nothing from the rest of the crate, only std, serde,
//! statrs and the rand crates, so any report can call it without a cycle.
//!
//! Methods, each checked against an independent implementation by the unit tests
//! through `tests/fixtures/stats/reference.json` (written by `reference.py` beside
//! it; agreement to 1e-9):
//! - pass rate: Wilson score interval (statsmodels `proportion_confint`, "wilson");
//! - pass/fail of two models: exact McNemar test (statsmodels `mcnemar(exact=True)`,
//!   scipy `binomtest`) and Newcombe's method 10 interval for the paired difference
//!   (R epiR `epi.conf(ctype = "prop.paired")`);
//! - several comparisons at once: Holm's step-down adjustment (statsmodels
//!   `multipletests(method="holm")`);
//! - power: the two-proportion normal approximation with the pooled variance under
//!   the null and the unpooled one under the alternative (statsmodels
//!   `samplesize_proportions_2indep_onetail`, `power_proportions_2indep`).
//!
//! - the seeded bootstraps (mean, paired, stratified): a plain-Python implementation
//!   of the same stream and percentiles (`bootstrap_reference.py`, no shared code).
//!
//! Mean scores (partial credit, several samples per instance) get a percentile
//! bootstrap that resamples instances, keeping each instance's samples together:
//! samples of one instance are not independent, and treating them as such would
//! shrink the interval by about the square root of the samples per instance. A mean
//! over several categories (each weighted as the caller says) resamples inside each
//! category, so every category keeps its size ([`bootstrap_stratified`]).
//! Bootstraps are seeded (see [`Bootstrap`]), so the same input gives the same bytes
//! on every machine.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

mod bootstrap;
mod paired;
mod power;
mod rank;
#[cfg(test)]
mod reference;
mod stratified;
mod wilson;

pub(crate) use bootstrap::bootstrap_mean;
pub(crate) use paired::{compare_passes, compare_scores};
pub(crate) use power::{min_detectable_effect, required_n};
pub(crate) use rank::{Ranked, rank_by};
pub(crate) use stratified::{Stratum, bootstrap_stratified, compare_stratified};
pub(crate) use wilson::{wilson, wilson_share};
#[cfg(test)]
pub(crate) use {
    bootstrap::MeanEstimate,
    paired::{ScoreComparison, mcnemar_p, newcombe_paired},
    rank::holm,
};

/// Confidence level used when a caller has no reason to pick another.
pub(crate) const DEFAULT_LEVEL: f64 = 0.95;
/// Significance level of the tests behind tie groups and power, by default.
pub(crate) const DEFAULT_ALPHA: f64 = 0.05;
/// Power the minimum detectable effect and required sample size aim for, by default.
pub(crate) const DEFAULT_POWER: f64 = 0.8;
/// Bootstrap resamples by default: a 95% endpoint then wanders by about 3% of the
/// estimate's standard error from one seed to another.
pub(crate) const DEFAULT_RESAMPLES: u32 = 10_000;
/// Bootstrap seed by default: arbitrary, but fixed so a report reproduces.
pub(crate) const DEFAULT_SEED: u64 = 17;

/// A two-sided confidence interval, `low <= high`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Interval {
    /// Lower limit.
    pub low: f64,
    /// Upper limit.
    pub high: f64,
}

impl Interval {
    /// Whether `x` lies inside, limits included.
    #[cfg(test)]
    pub(crate) fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }

    /// `high - low`.
    #[cfg(test)]
    pub(crate) fn width(&self) -> f64 {
        self.high - self.low
    }
}

/// How a bootstrap resamples.
///
/// The random stream is ChaCha8 keyed by `seed` as 8 little-endian bytes followed by
/// 24 zero bytes, stream 0; an index below `n` is drawn from one `u64` by Lemire's
/// multiply-and-reject method. Any implementation following that gets the same draws.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Bootstrap {
    /// Number of resamples.
    pub resamples: u32,
    /// Key of the random stream.
    pub seed: u64,
    /// Confidence level of the percentile interval, in (0, 1).
    pub level: f64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
            level: DEFAULT_LEVEL,
        }
    }
}

/// Input the statistics cannot be computed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) enum StatsError {
    /// Two models' results cover different numbers of instances.
    LengthMismatch {
        /// Instances of the first model (or the leader).
        expected: usize,
        /// Instances of the other.
        found: usize,
        /// The other model, when known.
        model: Option<String>,
    },
}

impl std::fmt::Display for StatsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatsError::LengthMismatch {
                expected,
                found,
                model,
            } => {
                let who = model
                    .as_deref()
                    .map(|m| format!(" for {m}"))
                    .unwrap_or_default();
                write!(
                    f,
                    "paired results need the same instances: {found}{who} against {expected}"
                )
            }
        }
    }
}

impl std::error::Error for StatsError {}

/// The standard normal quantile that leaves `tail` above it.
fn z_upper(tail: f64) -> f64 {
    // From the lower tail by symmetry: 1 - tail would round away small tails.
    -Normal::standard().inverse_cdf(tail)
}

/// The two-sided critical value of a `level` interval, or `None` outside (0, 1).
fn z_for_level(level: f64) -> Option<f64> {
    (level > 0.0 && level < 1.0).then(|| z_upper((1.0 - level) / 2.0))
}

/// Fails unless `found` instances match `expected`.
fn same_length(expected: usize, found: usize, model: Option<&str>) -> Result<(), StatsError> {
    if expected == found {
        Ok(())
    } else {
        Err(StatsError::LengthMismatch {
            expected,
            found,
            model: model.map(str::to_owned),
        })
    }
}
