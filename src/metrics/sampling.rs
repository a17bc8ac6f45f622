//! Metrics over several samples per instance: pass@k, pass^k, mean accuracy,
//! maj@n and per-problem counts.
//!
//! pass@k is the unbiased estimator of Chen et al. 2021: for a problem with
//! `n` samples of which `c` pass, `1 - C(n-c, k) / C(n, k)`, computed as the
//! product `prod_{i=n-c+1}^{n} (1 - k / i)` so no binomial ever overflows.
//! pass^k (all k samples pass) is `C(c, k) / C(n, k)`, the same way: the
//! estimator of τ-bench (Yao et al. 2024), which reports an agent's
//! reliability over repeated trials. Each mean over problems comes with a
//! percentile bootstrap interval that resamples problems (seeded, so a
//! report reproduces).

use std::collections::BTreeMap;

use serde::Serialize;

use super::problems::{Problem, Problems};
use super::stats::{self, Interval};

/// Unbiased pass@k of one problem with `n` samples, `c` of them passing (`k <= n`).
pub(crate) fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    if n < k || n - c < k {
        // Fewer than k failures: every k-subset holds a pass.
        return if c == 0 { 0.0 } else { 1.0 };
    }
    let product: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    1.0 - product
}

/// pass^k of one problem: the chance that k samples drawn without replacement all pass.
pub(crate) fn pass_hat_k(n: u64, c: u64, k: u64) -> f64 {
    if c < k || n < k {
        return 0.0;
    }
    // C(c, k) / C(n, k) = prod_{i=0}^{k-1} (c - i) / (n - i).
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

/// One problem's line in reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ProblemStat {
    /// `<spec>/<instance>`.
    pub id: String,
    /// Samples that passed.
    pub n_correct: u64,
    /// Samples drawn.
    pub n_total: u64,
    /// Extracted answers in sample order (null when none was found).
    pub answers: Vec<Option<String>>,
}

/// The numbers of sampled answers that reports show of a cell, model or
/// group, and a comparison line repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct PassRates {
    /// Mean over problems of the fraction of their samples that passed (the
    /// expected pass@1).
    pub pass_rate: f64,
    /// k → mean over problems of unbiased pass@k (problems with fewer than k samples skipped).
    pub pass_at_k: BTreeMap<u32, f64>,
    /// k → mean over problems of pass^k: all k samples pass (how reliably,
    /// where pass@k says how possibly).
    pub pass_hat_k: BTreeMap<u32, f64>,
    /// k → the bootstrap interval of `pass_at_k`'s mean.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pass_at_k_interval: BTreeMap<u32, Interval>,
    /// k → the bootstrap interval of `pass_hat_k`'s mean.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pass_hat_k_interval: BTreeMap<u32, Interval>,
    /// maj@n: the fraction of problems whose majority answer passed, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maj: Option<f64>,
}

/// The sampled metrics of one cell, model or group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SampledMetrics {
    /// Problems (instances) seen.
    pub problems: u64,
    /// The largest number of samples of any problem.
    pub n: u64,
    /// Pass rate, pass@k, pass^k and maj@n.
    #[serde(flatten)]
    pub rates: PassRates,
    /// Report-only rules (`report_only = true`, e.g. a flexible extraction beside a strict
    /// one): the same metrics by that rule's verdicts alone.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub alongside: BTreeMap<String, SampledMetrics>,
    /// Per problem, in (spec, instance) order; only kept for single-spec cells.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_problem: Vec<ProblemStat>,
}

/// What a spec asks of sampled metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplingPlan {
    /// The k values of pass@k and pass^k.
    pub ks: Vec<u32>,
    /// Whether maj@n is reported.
    pub maj: bool,
}

/// Sampled metrics of `problems`, keyed by (spec, instance).
pub(super) fn sampled(
    problems: &Problems,
    plan: &SamplingPlan,
    keep_problems: bool,
) -> SampledMetrics {
    let count = problems.iter().count() as u64;
    let mean = |f: &dyn Fn(&Problem) -> Option<f64>| {
        let values: Vec<f64> = problems.iter().filter_map(|p| f(&p)).collect();
        if values.is_empty() {
            0.0
        } else {
            values.iter().sum::<f64>() / values.len() as f64
        }
    };
    let at_k = per_k(problems, &plan.ks, pass_at_k);
    let hat_k = per_k(problems, &plan.ks, pass_hat_k);
    SampledMetrics {
        problems: count,
        n: problems.iter().map(|p| p.n_total()).max().unwrap_or(0),
        rates: PassRates {
            pass_rate: mean(&|p| Some(p.n_correct() as f64 / p.n_total().max(1) as f64)),
            pass_at_k: means(&at_k),
            pass_hat_k: means(&hat_k),
            pass_at_k_interval: intervals(&at_k),
            pass_hat_k_interval: intervals(&hat_k),
            maj: plan
                .maj
                .then(|| mean(&|p| Some(f64::from(u8::from(p.majority_passed()))))),
        },
        alongside: BTreeMap::new(),
        per_problem: if keep_problems {
            problems
                .iter()
                .map(|p| ProblemStat {
                    id: format!("{}/{}", p.spec, p.instance),
                    n_correct: p.n_correct(),
                    n_total: p.n_total(),
                    answers: p.answers(),
                })
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// k → each problem's value of `estimate(n, c, k)`, for the problems with
/// at least k samples.
fn per_k(
    problems: &Problems,
    ks: &[u32],
    estimate: fn(u64, u64, u64) -> f64,
) -> BTreeMap<u32, Vec<f64>> {
    ks.iter()
        .map(|&k| {
            let values = (problems.iter())
                .filter(|p| p.n_total() >= u64::from(k))
                .map(|p| estimate(p.n_total(), p.n_correct(), u64::from(k)))
                .collect();
            (k, values)
        })
        .collect()
}

/// k → the mean of its problems' values (0 with none).
fn means(values: &BTreeMap<u32, Vec<f64>>) -> BTreeMap<u32, f64> {
    (values.iter())
        .map(|(&k, v)| {
            let mean = if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            };
            (k, mean)
        })
        .collect()
}

/// k → the percentile bootstrap interval of its mean, resampling problems.
fn intervals(values: &BTreeMap<u32, Vec<f64>>) -> BTreeMap<u32, Interval> {
    let bootstrap = stats::Bootstrap::default();
    (values.iter())
        .filter_map(|(&k, v)| {
            let clusters: Vec<[f64; 1]> = v.iter().map(|&x| [x]).collect();
            stats::bootstrap_mean(&clusters, &bootstrap).map(|e| (k, e.interval))
        })
        .collect()
}
