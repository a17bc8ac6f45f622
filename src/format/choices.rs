//! The `[choices]` table: a multiple-choice question, scored by the label
//! the model writes, by its first token's probabilities, or by each
//! choice's log-likelihood as lm-evaluation-harness scores it; and what
//! scoring one answer found ([`ChoiceOutcome`]), as records keep it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `[choices]` table.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Choices {
    /// How a choice is picked: `generate` (default), `first_token` or `loglikelihood`.
    pub method: Option<ChoiceMethod>,
    /// The instance variable holding the choices' texts (a list of strings,
    /// from a dataset column or the generation script).
    pub texts: String,
    /// The instance variable holding the right choice's index (0-based).
    pub correct: String,
    /// The labels: `latin` (A, B, C, ...; default), `cyrillic` (А, Б, В, ...),
    /// `digits` (1, 2, 3, ...), or a list of one label per choice.
    pub labels: Option<Labels>,
    /// `loglikelihood`: what joins the context and a choice (lm-eval's
    /// `target_delimiter`; default one space).
    pub delimiter: Option<String>,
    /// `first_token`: how many alternatives the server lists for the first
    /// token (default 20, at most 20).
    pub top_logprobs: Option<u32>,
}

/// How a choice is picked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChoiceMethod {
    /// The model writes the label; the first label in its answer is its pick.
    #[default]
    Generate,
    /// One chat request for one token: each choice's probability is its
    /// label's in the first token's alternatives, renormalised over the choices.
    FirstToken,
    /// For each choice, the log-probability of `delimiter + text` after the
    /// context, from `/v1/completions` with `echo`: lm-eval's method.
    Loglikelihood,
}

impl ChoiceMethod {
    /// The method's name in specs and reports.
    pub fn name(self) -> &'static str {
        match self {
            ChoiceMethod::Generate => "generate",
            ChoiceMethod::FirstToken => "first_token",
            ChoiceMethod::Loglikelihood => "loglikelihood",
        }
    }
}

/// The labels of the choices: a named alphabet or one label per choice.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Labels {
    /// A named alphabet.
    Set(LabelSet),
    /// One label per choice, in order.
    List(Vec<String>),
}

/// A named alphabet of labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LabelSet {
    /// A, B, C, ... (26).
    Latin,
    /// А, Б, В, Г, Д, Е, Ж, З, И, К, ... (the Russian alphabet without Ё, Й, Ъ, Ы, Ь).
    Cyrillic,
    /// 1, 2, 3, ... (9).
    Digits,
}

impl LabelSet {
    /// The alphabet's labels, in order.
    pub fn labels(self) -> Vec<String> {
        let letters: &str = match self {
            LabelSet::Latin => "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            LabelSet::Cyrillic => "АБВГДЕЖЗИКЛМНОПРСТУФХЦЧШЩЭЮЯ",
            LabelSet::Digits => "123456789",
        };
        letters.chars().map(String::from).collect()
    }
}

/// What scoring one answer to a multiple-choice question found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChoiceOutcome {
    /// How the choice was picked.
    pub method: ChoiceMethod,
    /// The right choice's index.
    pub correct: usize,
    /// The picked choice's index; none when no choice could be picked.
    pub picked: Option<usize>,
    /// `loglikelihood`: the pick by log-likelihood per character of the
    /// choice's text (lm-eval's `acc_norm`); the other methods: `picked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked_norm: Option<usize>,
    /// Each choice's probability, renormalised over the choices; `null` for
    /// a `first_token` label missing from the listed alternatives. Empty for
    /// `generate`, which sees no probabilities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probabilities: Vec<Option<f64>>,
    /// `loglikelihood`: each choice's summed log-probability.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loglikelihoods: Vec<f64>,
    /// The choices' labels, as the question showed them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// The choices' texts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub texts: Vec<String>,
}

impl ChoiceOutcome {
    /// The pick was right.
    pub(crate) fn passed(&self) -> bool {
        self.picked == Some(self.correct)
    }

    /// The pick by normalised log-likelihood was right (`acc_norm`).
    pub(crate) fn passed_norm(&self) -> bool {
        self.picked_norm.or(self.picked) == Some(self.correct)
    }

    /// How many labels had no probability (missing from the alternatives).
    pub(crate) fn missing(&self) -> usize {
        self.probabilities.iter().filter(|p| p.is_none()).count()
    }

    /// The probability given to the picked choice: the confidence that
    /// calibration bins (none without probabilities or a pick).
    pub(crate) fn confidence(&self) -> Option<f64> {
        self.probabilities.get(self.picked?).copied().flatten()
    }

    /// The multi-class Brier score of this answer: the squared distance of
    /// the probabilities from the one-hot truth (a missing label counts as
    /// 0); none without probabilities.
    pub(crate) fn brier(&self) -> Option<f64> {
        if self.probabilities.is_empty() {
            return None;
        }
        Some(
            self.probabilities
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let truth = if i == self.correct { 1.0 } else { 0.0 };
                    (p.unwrap_or(0.0) - truth).powi(2)
                })
                .sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabets_have_the_labels_a_russian_or_latin_test_uses() {
        assert_eq!(LabelSet::Cyrillic.labels()[..4], ["А", "Б", "В", "Г"]);
        assert_eq!(LabelSet::Latin.labels()[..4], ["A", "B", "C", "D"]);
        assert_eq!(LabelSet::Digits.labels()[..3], ["1", "2", "3"]);
    }

    #[test]
    fn an_outcome_scores_its_pick_and_its_probabilities() {
        let outcome = ChoiceOutcome {
            method: ChoiceMethod::FirstToken,
            correct: 1,
            picked: Some(1),
            picked_norm: None,
            probabilities: vec![Some(0.25), Some(0.75), None],
            loglikelihoods: Vec::new(),
            labels: Vec::new(),
            texts: Vec::new(),
        };
        assert!(outcome.passed() && outcome.passed_norm());
        assert_eq!(outcome.missing(), 1);
        assert_eq!(outcome.confidence(), Some(0.75));
        assert!((outcome.brier().unwrap() - (0.0625 + 0.0625)).abs() < 1e-12);
    }
}
