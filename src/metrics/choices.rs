//! Multiple-choice metrics of a cell, group or model: accuracy and
//! `acc_norm` with Wilson intervals, and how well the choices'
//! probabilities are calibrated: expected calibration error over 15 equal
//! bins of the picked choice's probability, and the multi-class Brier
//! score, each with a bootstrap interval, plus the bins for a reliability
//! diagram.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng as _, SeedableRng};
use serde::Serialize;

use super::stats::{self, Interval};
use crate::prompt::ChoiceOutcome;

/// Equal-width confidence bins of the expected calibration error (the
/// count most papers since Guo et al. 2017 report).
pub(crate) const BINS: usize = 15;

/// Resamples of the calibration error's bootstrap: each recomputes the
/// error over every answer, so fewer than a mean's.
const RESAMPLES: u32 = 1_000;

/// One answer as the metrics keep it: 24 bytes, whatever the question.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scored {
    /// The picked choice's probability, when there was a pick with one.
    confidence: Option<f64>,
    /// The multi-class Brier score, when the answer had probabilities.
    brier: Option<f64>,
    correct: bool,
    correct_norm: bool,
    has_norm: bool,
    missing: u16,
}

/// Running multiple-choice totals.
#[derive(Debug, Default)]
pub(crate) struct ChoiceTotals {
    scored: Vec<Scored>,
}

/// One bin of the reliability diagram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Bin {
    /// The bin's lower edge (its upper one is `low + 1/15`).
    pub low: f64,
    /// Answers whose confidence fell in it.
    pub count: u64,
    /// Their mean confidence.
    pub confidence: f64,
    /// The share of them that were right.
    pub accuracy: f64,
}

/// A number with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Valued {
    /// The estimate.
    pub value: f64,
    /// Its 95% interval.
    pub interval: Option<Interval>,
}

/// The multiple-choice metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ChoiceMetrics {
    /// Answers scored as a choice.
    pub answers: u64,
    /// The share picked right (lm-eval's `acc`).
    pub acc: Valued,
    /// The share picked right by log-likelihood per character (lm-eval's
    /// `acc_norm`); only where choices were scored by log-likelihood.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acc_norm: Option<Valued>,
    /// Expected calibration error over [`BINS`] bins; none without probabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ece: Option<Valued>,
    /// The mean multi-class Brier score (0 best, 2 worst); none without probabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brier: Option<Valued>,
    /// Answers with a label missing from the first token's alternatives.
    #[serde(skip_serializing_if = "is_zero")]
    pub answers_missing_labels: u64,
    /// Labels missing over all answers.
    #[serde(skip_serializing_if = "is_zero")]
    pub missing_labels: u64,
    /// The reliability diagram's bins (empty ones left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bins: Vec<Bin>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ChoiceTotals {
    /// Counts one answer's outcome.
    pub(crate) fn add(&mut self, outcome: &ChoiceOutcome) {
        self.scored.push(Scored {
            confidence: outcome.confidence(),
            brier: outcome.brier(),
            correct: outcome.passed(),
            correct_norm: outcome.passed_norm(),
            has_norm: outcome.picked_norm.is_some(),
            missing: u16::try_from(outcome.missing()).unwrap_or(u16::MAX),
        });
    }

    /// The finished metrics; none when no answer was scored as a choice.
    pub(crate) fn finish(&self) -> Option<ChoiceMetrics> {
        let n = self.scored.len() as u64;
        if n == 0 {
            return None;
        }
        let share = |k: u64| Valued {
            value: k as f64 / n as f64,
            interval: stats::wilson(k, n, stats::DEFAULT_LEVEL),
        };
        let right = self.scored.iter().filter(|s| s.correct).count() as u64;
        let right_norm = self.scored.iter().filter(|s| s.correct_norm).count() as u64;
        let calibrated: Vec<(f64, bool)> = self
            .scored
            .iter()
            .filter_map(|s| s.confidence.map(|c| (c, s.correct)))
            .collect();
        let briers: Vec<[f64; 1]> = self
            .scored
            .iter()
            .filter_map(|s| s.brier.map(|b| [b]))
            .collect();
        let brier = (!briers.is_empty()).then(|| {
            let mean = briers.iter().map(|b| b[0]).sum::<f64>() / briers.len() as f64;
            let interval =
                stats::bootstrap_mean(&briers, &stats::Bootstrap::default()).map(|e| e.interval);
            Valued {
                value: mean,
                interval,
            }
        });
        Some(ChoiceMetrics {
            answers: n,
            acc: share(right),
            acc_norm: self
                .scored
                .iter()
                .any(|s| s.has_norm)
                .then(|| share(right_norm)),
            ece: (!calibrated.is_empty()).then(|| Valued {
                value: ece(&calibrated),
                interval: ece_interval(&calibrated),
            }),
            brier,
            answers_missing_labels: self.scored.iter().filter(|s| s.missing > 0).count() as u64,
            missing_labels: self.scored.iter().map(|s| u64::from(s.missing)).sum(),
            bins: bins(&calibrated),
        })
    }
}

/// The bin of confidence `c`: `[k/15, (k+1)/15)`, 1 in the last.
fn bin_of(c: f64) -> usize {
    ((c * BINS as f64) as usize).min(BINS - 1)
}

fn bins(answers: &[(f64, bool)]) -> Vec<Bin> {
    let mut sums = [(0u64, 0.0f64, 0u64); BINS];
    for &(c, right) in answers {
        let b = &mut sums[bin_of(c)];
        *b = (b.0 + 1, b.1 + c, b.2 + u64::from(right));
    }
    sums.iter()
        .enumerate()
        .filter(|(_, (count, _, _))| *count > 0)
        .map(|(k, &(count, sum, right))| Bin {
            low: k as f64 / BINS as f64,
            count,
            confidence: sum / count as f64,
            accuracy: right as f64 / count as f64,
        })
        .collect()
}

/// Expected calibration error: each bin's gap between accuracy and mean
/// confidence, weighted by its share of the answers.
fn ece(answers: &[(f64, bool)]) -> f64 {
    let n = answers.len() as f64;
    bins(answers)
        .iter()
        .map(|b| b.count as f64 / n * (b.accuracy - b.confidence).abs())
        .sum()
}

/// A percentile bootstrap interval of the calibration error, resampling
/// answers (seeded: a report reproduces).
fn ece_interval(answers: &[(f64, bool)]) -> Option<Interval> {
    if answers.len() < 2 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(stats::DEFAULT_SEED);
    let mut draws: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let sample: Vec<(f64, bool)> = (0..answers.len())
                .map(|_| answers[(rng.next_u64() % answers.len() as u64) as usize])
                .collect();
            ece(&sample)
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws[((q * f64::from(RESAMPLES - 1)).round() as usize).min(draws.len() - 1)];
    Some(Interval {
        low: at(0.025),
        high: at(0.975),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ChoiceMethod;

    fn outcome(p: &[f64], correct: usize) -> ChoiceOutcome {
        let picked = (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b]));
        ChoiceOutcome {
            method: ChoiceMethod::FirstToken,
            correct,
            picked,
            picked_norm: None,
            probabilities: p.iter().map(|&x| Some(x)).collect(),
            loglikelihoods: Vec::new(),
            labels: Vec::new(),
            texts: Vec::new(),
        }
    }

    /// The metrics of answers that all gave the choices probabilities `p`,
    /// one answer per entry of `corrects` (the right choice's index).
    fn metrics(p: &[f64], corrects: &[usize]) -> ChoiceMetrics {
        let mut totals = ChoiceTotals::default();
        for &correct in corrects {
            totals.add(&outcome(p, correct));
        }
        totals.finish().unwrap()
    }

    #[test]
    fn a_perfectly_calibrated_set_has_no_calibration_error() {
        // Confidence 0.75, right three times in four.
        let m = metrics(&[0.75, 0.25], &[0, 0, 0, 1]);
        assert_eq!(m.acc.value, 0.75);
        assert!(m.ece.unwrap().value.abs() < 1e-12);
        assert_eq!(m.bins.len(), 1);
        assert_eq!((m.bins[0].count, m.bins[0].accuracy), (4, 0.75));
        // Brier: right (0.25² + 0.25²) three times, wrong (0.75² + 0.75²) once.
        let brier = (3.0 * 0.125 + 1.125) / 4.0;
        assert!((m.brier.unwrap().value - brier).abs() < 1e-12);
        assert_eq!(m.acc_norm, None);
    }

    #[test]
    fn overconfidence_shows_as_the_gap_in_its_bin() {
        let m = metrics(&[0.95, 0.05], &[0, 1, 1, 1]);
        let ece = m.ece.unwrap();
        assert!((ece.value - 0.7).abs() < 1e-9, "{ece:?}");
        let interval = ece.interval.unwrap();
        assert!(interval.low <= ece.value && ece.value <= interval.high);
    }

    #[test]
    fn bins_are_fifteen_equal_steps_with_one_in_the_last() {
        assert_eq!(bin_of(0.0), 0);
        assert_eq!(bin_of(1.0 / 15.0 - 1e-9), 0);
        assert_eq!(bin_of(1.0 / 15.0 + 1e-9), 1);
        assert_eq!(bin_of(1.0), BINS - 1);
    }

    #[test]
    fn no_choice_answers_make_no_metrics() {
        assert_eq!(ChoiceTotals::default().finish(), None);
    }
}
