//! `cer`: the character (or word) error rate of an answer against a
//! reference text, the usual measure of OCR and speech transcripts. The rate
//! is the edit distance (insertions, deletions, substitutions) over the
//! reference's length; the score is `1 - rate`, so a near miss still earns
//! most of the credit.

use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

use super::expected::ComparesText;
use super::kind::{Reference, RuleKind};
use super::{BuildContext, Measure, Rule, Verdict};
use crate::error::Diagnostic;

/// `cer`: the character error rate (or, with `unit = "word"`, the word error
/// rate) of the answer against the expected text is at most `threshold`; the
/// score is `1 - rate`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CerKeys {
    /// `char` (default: CER) or `word` (WER, over whitespace-separated words).
    pub unit: Option<ErrorUnit>,
    /// Maximum error rate to pass, within 0..1 (default 0: only a transcript equal to
    /// the reference, after `normalize`, passes; the score still gives partial credit).
    pub threshold: Option<f64>,
    /// Normalizations of both texts before comparing, applied in this order whatever
    /// the list's: `nfkc`, `case`, `yo`, `punctuation`, `whitespace`.
    #[serde(default)]
    pub normalize: Vec<Normalization>,
}

/// A normalization of both texts before the error rate is computed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub(super) enum Normalization {
    /// Unicode NFKC: ligatures, full-width and compatibility forms to their plain letters.
    Nfkc,
    /// Lower-case.
    Case,
    /// `ё` as `е` and `Ё` as `Е`, as Russian print often omits the dots.
    Yo,
    /// Drop Unicode punctuation.
    Punctuation,
    /// Collapse whitespace runs to one space and trim.
    Whitespace,
}

/// How `cer` words its reference keys.
pub(super) const REFERENCE: Reference = Reference {
    expected: "The instance variable holding the reference text (a dotted path); a list means\nalternatives, and the closest counts.",
    value: "A literal reference text, instead of `expected`.",
};

impl RuleKind for CerKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let unit = self.unit.unwrap_or_default();
        let threshold = cx.threshold(self.threshold, 0.0)?;
        let mut normalize = self.normalize;
        normalize.sort();
        normalize.dedup();
        cx.text_rule(Cer {
            unit,
            threshold,
            normalize,
        })
    }
}

/// What the error rate counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum ErrorUnit {
    /// Characters: the character error rate (CER).
    #[default]
    Char,
    /// Whitespace-separated words: the word error rate (WER).
    Word,
}

struct Cer {
    unit: ErrorUnit,
    threshold: f64,
    normalize: Vec<Normalization>,
}

static PUNCTUATION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\p{P}").expect("valid"));

/// `text` after each normalization in `steps`, in order.
fn normalized(text: &str, steps: &[Normalization]) -> String {
    steps.iter().fold(text.to_owned(), |text, step| match step {
        Normalization::Nfkc => text.nfkc().collect(),
        Normalization::Case => text.to_lowercase(),
        Normalization::Yo => text.replace('ё', "е").replace('Ё', "Е"),
        Normalization::Punctuation => PUNCTUATION.replace_all(&text, "").into_owned(),
        Normalization::Whitespace => text.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}

/// `(edits, reference length)`: the Levenshtein distance from `answer` to
/// `reference` in `unit`s, and how many units the reference has.
fn edits(answer: &str, reference: &str, unit: ErrorUnit) -> (usize, usize) {
    match unit {
        ErrorUnit::Char => {
            let (a, r): (Vec<char>, Vec<char>) =
                (answer.chars().collect(), reference.chars().collect());
            (strsim::generic_levenshtein(&a, &r), r.len())
        }
        ErrorUnit::Word => {
            let a: Vec<&str> = answer.split_whitespace().collect();
            let r: Vec<&str> = reference.split_whitespace().collect();
            (strsim::generic_levenshtein(&a, &r), r.len())
        }
    }
}

/// The error rate: edits over the reference's length; an empty reference
/// scores 0 against an empty answer and 1 against anything else.
fn rate(edits: usize, length: usize) -> f64 {
    match (edits, length) {
        (0, 0) => 0.0,
        (_, 0) => 1.0,
        (e, n) => e as f64 / n as f64,
    }
}

impl ComparesText for Cer {
    fn compare(&self, answer: &str, references: &[String]) -> Verdict {
        let answer = normalized(answer, &self.normalize);
        let (edits, length) = references
            .iter()
            .map(|r| edits(&answer, &normalized(r, &self.normalize), self.unit))
            .min_by(|a, b| rate(a.0, a.1).total_cmp(&rate(b.0, b.1)))
            .unwrap_or((0, 0));
        let rate = rate(edits, length);
        let (name, units) = match self.unit {
            ErrorUnit::Char => ("CER", "chars"),
            ErrorUnit::Word => ("WER", "words"),
        };
        let passed = rate <= self.threshold;
        let sign = if passed { "<=" } else { ">" };
        let plural = if edits == 1 { "" } else { "s" };
        let detail = format!(
            "{name} {rate:.3} {sign} {} ({edits} edit{plural} / {length} {units})",
            self.threshold
        );
        // The measure keeps the rate unclipped: the score floors at 0, but a
        // transcript twice the reference's length is worse than one that is empty.
        Verdict::scored(passed, (1.0 - rate).max(0.0), detail).measuring(Measure {
            name: name.to_owned(),
            value: rate,
            lower_is_better: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value};

    use super::*;
    use crate::verify::ReadsText;
    use crate::verify::expected::{Expected, TextRule};

    fn rule(unit: ErrorUnit, threshold: f64, normalize: &[Normalization]) -> TextRule<Cer> {
        TextRule {
            expected: Expected::Var("text".into()),
            compare: Cer {
                unit,
                threshold,
                normalize: normalize.to_vec(),
            },
        }
    }

    fn vars(text: &str) -> Map<String, Value> {
        let mut vars = Map::new();
        vars.insert("text".into(), Value::from(text));
        vars
    }

    /// Reference values computed by hand (and checked with a plain
    /// dynamic-programming Levenshtein): (answer, reference, unit, edits, length).
    #[test]
    fn edit_distances_and_lengths_match_hand_counts() {
        let cases = [
            ("kitten", "sitting", ErrorUnit::Char, 3, 7),
            ("sitting", "kitten", ErrorUnit::Char, 3, 6),
            ("", "abc", ErrorUnit::Char, 3, 3),
            ("abc", "", ErrorUnit::Char, 3, 0),
            ("молоко", "малако", ErrorUnit::Char, 2, 6),
            (
                "the cat sit on mat",
                "the cat sat on the mat",
                ErrorUnit::Word,
                2,
                6,
            ),
            ("a b c", "a b c", ErrorUnit::Word, 0, 3),
            ("x y", "", ErrorUnit::Word, 2, 0),
        ];
        for (answer, reference, unit, want_edits, want_length) in cases {
            assert_eq!(
                edits(answer, reference, unit),
                (want_edits, want_length),
                "{answer:?} -> {reference:?}"
            );
        }
    }

    #[test]
    fn rates_scores_and_details() {
        let cases: [(&str, &str, ErrorUnit, f64, bool, f64, &str); 6] = [
            (
                "kitten",
                "sitting",
                ErrorUnit::Char,
                0.5,
                true,
                4.0 / 7.0,
                "CER 0.429 <= 0.5 (3 edits / 7 chars)",
            ),
            (
                "kitten",
                "sitting",
                ErrorUnit::Char,
                0.05,
                false,
                4.0 / 7.0,
                "CER 0.429 > 0.05",
            ),
            (
                "abcdefgX",
                "abcdefgh",
                ErrorUnit::Char,
                0.05,
                false,
                0.875,
                "CER 0.125 > 0.05 (1 edit / 8 chars)",
            ),
            (
                "the cat sit on mat",
                "the cat sat on the mat",
                ErrorUnit::Word,
                0.0,
                false,
                2.0 / 3.0,
                "WER 0.333 > 0",
            ),
            ("", "", ErrorUnit::Char, 0.0, true, 1.0, "CER 0.000 <= 0"),
            (
                "much longer answer",
                "ab",
                ErrorUnit::Char,
                0.2,
                false,
                0.0,
                "CER 8.500 > 0.2 (17 edits / 2 chars)",
            ),
        ];
        for (answer, reference, unit, threshold, passed, score, detail) in cases {
            let v = rule(unit, threshold, &[]).verify(answer, "", &vars(reference));
            assert_eq!(v.passed, passed, "{answer:?}: {}", v.detail);
            assert!((v.score - score).abs() < 1e-12, "{answer:?}: {}", v.score);
            assert!(v.detail.starts_with(detail), "{answer:?}: {}", v.detail);
        }
    }

    /// The measure is the unclipped rate, named by unit: 17 edits over 2 chars
    /// is 8.5 although the score floors at 0.
    #[test]
    fn the_measure_is_the_unclipped_rate() {
        let cases = [
            ("kitten", "sitting", ErrorUnit::Char, "CER", 3.0 / 7.0),
            ("much longer answer", "ab", ErrorUnit::Char, "CER", 8.5),
            (
                "the cat sit on mat",
                "the cat sat on the mat",
                ErrorUnit::Word,
                "WER",
                1.0 / 3.0,
            ),
        ];
        for (answer, reference, unit, name, value) in cases {
            let m = rule(unit, 0.0, &[])
                .verify(answer, "", &vars(reference))
                .measure;
            let m = m.expect("cer measures");
            assert_eq!((m.name.as_str(), m.lower_is_better), (name, true));
            assert!((m.value - value).abs() < 1e-12, "{answer:?}: {}", m.value);
        }
    }

    #[test]
    fn an_empty_reference_rates_any_answer_one() {
        let v = rule(ErrorUnit::Char, 0.5, &[]).verify("x", "", &vars(""));
        assert_eq!((v.passed, v.score), (false, 0.0));
        assert!(v.detail.starts_with("CER 1.000 > 0.5"), "{}", v.detail);
    }

    #[test]
    fn each_normalization_removes_its_difference() {
        use Normalization::*;
        let cases = [
            ("Hello World", "hello world", Case),
            ("  a   b\n", "a b", Whitespace),
            ("Привет, мир!", "Привет мир", Punctuation),
            ("«Да» — сказал он…", "Да  сказал он", Punctuation),
            ("\u{FB01}ne \u{FF21}", "fine A", Nfkc),
            ("Ёлка и ёж", "Елка и еж", Yo),
        ];
        for (answer, reference, step) in cases {
            assert!(
                !rule(ErrorUnit::Char, 0.0, &[])
                    .verify(answer, "", &vars(reference))
                    .passed,
                "{answer:?} differs without {step:?}"
            );
            let v = rule(ErrorUnit::Char, 0.0, &[step]).verify(answer, "", &vars(reference));
            assert!(v.passed, "{answer:?} with {step:?}: {}", v.detail);
        }
    }

    #[test]
    fn the_closest_alternative_counts() {
        let mut vars = Map::new();
        vars.insert("text".into(), serde_json::json!(["sitting", "kitten"]));
        let v = rule(ErrorUnit::Char, 0.0, &[]).verify("kitten", "", &vars);
        assert!(v.passed, "{}", v.detail);
    }
}
