//! `similarity`: a soft text match, chrF (character n-gram F-score, β = 2)
//! or normalized Levenshtein, passing at a threshold (the soft
//! summarization check). The score is the similarity itself.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::expected::{Expected, as_text};
use super::kind::RuleKind;
use super::{BuildContext, Reads, ReadsText, Rule, Verdict};
use crate::error::Diagnostic;

/// How close two texts are.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Metric {
    /// chrF: the character n-gram F-score (β = 2, n-grams 1–6).
    #[default]
    Chrf,
    /// One minus the Levenshtein distance over the longer length.
    Levenshtein,
}

struct Similarity {
    expected: Expected,
    metric: Metric,
    threshold: f64,
}

/// `similarity`: chrF (β = 2, n-grams 1–6) or normalized Levenshtein ≥
/// `threshold`; the score is the similarity.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SimilarityKeys {
    /// `chrf` (default) or `levenshtein`.
    pub metric: Option<Metric>,
    /// Minimum similarity to pass (default 0.5).
    pub threshold: Option<f64>,
}

impl RuleKind for SimilarityKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let metric = self.metric.unwrap_or_default();
        let threshold = cx.threshold(self.threshold, 0.5)?;
        Ok(Box::new(Similarity {
            expected: cx.expected()?,
            metric,
            threshold,
        }))
    }
}

fn char_ngrams(text: &[char], n: usize) -> HashMap<&[char], usize> {
    let mut grams = HashMap::new();
    for window in text.windows(n) {
        *grams.entry(window).or_insert(0) += 1;
    }
    grams
}

/// chrF with n-grams 1..=6 and β = 2, whitespace ignored, as sacrebleu computes it.
pub(super) fn chrf(hypothesis: &str, reference: &str) -> f64 {
    let hyp: Vec<char> = hypothesis.chars().filter(|c| !c.is_whitespace()).collect();
    let reference: Vec<char> = reference.chars().filter(|c| !c.is_whitespace()).collect();
    if hyp.is_empty() || reference.is_empty() {
        return if hyp == reference { 1.0 } else { 0.0 };
    }
    let (mut precision, mut recall, mut orders) = (0.0, 0.0, 0);
    for n in 1..=6 {
        let (h, r) = (char_ngrams(&hyp, n), char_ngrams(&reference, n));
        let (h_total, r_total): (usize, usize) = (h.values().sum(), r.values().sum());
        if h_total == 0 || r_total == 0 {
            continue;
        }
        let matches: usize = h
            .iter()
            .map(|(g, c)| (*c).min(r.get(g).copied().unwrap_or(0)))
            .sum();
        precision += matches as f64 / h_total as f64;
        recall += matches as f64 / r_total as f64;
        orders += 1;
    }
    let (p, r) = (precision / orders as f64, recall / orders as f64);
    let beta2 = 4.0;
    if p + r == 0.0 {
        0.0
    } else {
        (1.0 + beta2) * p * r / (beta2 * p + r)
    }
}

impl Rule for Similarity {
    fn reference(&self) -> Option<&Expected> {
        Some(&self.expected)
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for Similarity {
    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let Some(expected) = self.expected.resolve(vars).map(as_text) else {
            return Verdict::fail("the expected value is missing from the instance");
        };
        let (name, score) = match self.metric {
            Metric::Chrf => ("chrF", chrf(answer, &expected)),
            Metric::Levenshtein => (
                "Levenshtein similarity",
                strsim::normalized_levenshtein(answer, &expected),
            ),
        };
        let passed = score >= self.threshold;
        Verdict::scored(
            passed,
            score,
            format!("{name} {score:.3} (threshold {})", self.threshold),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chrf_orders_texts_by_closeness() {
        let reference = "Компания открыла новый офис в Казани.";
        assert!((chrf(reference, reference) - 1.0).abs() < 1e-12);
        let close = chrf("Компания открыла офис в Казани", reference);
        let far = chrf("Погода была солнечной", reference);
        assert!(close > 0.7 && far < 0.3, "{close} {far}");
    }
}
