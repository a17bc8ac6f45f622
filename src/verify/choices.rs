//! Scoring a multiple-choice answer: which choice the model picked, by the
//! label it wrote (`generate`), by its first token's probabilities
//! (`first_token`) or by each choice's log-likelihood (`loglikelihood`, as
//! lm-evaluation-harness picks: the first greatest, and for `acc_norm` the
//! first greatest per character of the choice's text).

use super::{InstanceVerdict, RuleOutcome, Verdict};
use crate::failure::FailureKind;
use crate::format::{ChoiceMethod, ChoiceOutcome};

/// One instance's choices: labels, texts and the right one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChoiceSet {
    /// One label per choice.
    pub labels: Vec<String>,
    /// One text per choice.
    pub texts: Vec<String>,
    /// The right choice's index.
    pub correct: usize,
}

/// What a model's answer gives the scoring, by method.
pub(crate) enum Picking<'a> {
    /// The answer's text (`generate`).
    Text(&'a str),
    /// The first generated token and its listed alternatives, `(text,
    /// logprob)` (`first_token`); none when nothing was generated.
    FirstToken(Option<(&'a str, f64)>, &'a [(String, f64)]),
    /// Each choice's log-likelihood (`loglikelihood`).
    Loglikelihoods(&'a [f64]),
}

/// Scores one answer: the outcome, and the instance's verdict, one outcome
/// named `choice` whose answer is the picked label.
pub(crate) fn score_pick(
    set: &ChoiceSet,
    picking: Picking<'_>,
) -> (ChoiceOutcome, InstanceVerdict) {
    let (outcome, verdict) = pick(set, picking);
    let instance = InstanceVerdict {
        passed: verdict.passed,
        score: verdict.score,
        rules: vec![RuleOutcome {
            name: "choice".into(),
            answer: outcome.picked.map(|p| set.labels[p].clone()),
            report_only: false,
            verdict,
            judge: None,
        }],
    };
    (outcome, instance)
}

/// Scores one answer: the outcome, and the verdict an instance gets from it.
fn pick(set: &ChoiceSet, picking: Picking<'_>) -> (ChoiceOutcome, Verdict) {
    let mut outcome = match picking {
        Picking::Text(text) => ChoiceOutcome {
            method: ChoiceMethod::Generate,
            correct: set.correct,
            picked: first_label(text, &set.labels),
            picked_norm: None,
            probabilities: Vec::new(),
            loglikelihoods: Vec::new(),
            labels: Vec::new(),
            texts: Vec::new(),
        },
        Picking::FirstToken(token, top) => first_token(set, token, top),
        Picking::Loglikelihoods(lls) => loglikelihood(set, lls),
    };
    outcome.labels = set.labels.clone();
    outcome.texts = set.texts.clone();
    let verdict = verdict(set, &outcome);
    (outcome, verdict)
}

fn verdict(set: &ChoiceSet, outcome: &ChoiceOutcome) -> Verdict {
    let right = &set.labels[set.correct];
    let missing = match outcome.missing() {
        0 => String::new(),
        n => format!(
            " ({n} of {} labels not among the alternatives)",
            set.labels.len()
        ),
    };
    match outcome.picked {
        Some(p) if p == set.correct => Verdict::pass(),
        Some(p) => Verdict::fail(format!(
            "picked {} instead of {right}{missing}",
            set.labels[p]
        )),
        None => {
            let why = match outcome.method {
                ChoiceMethod::Generate => "the answer names no label".to_owned(),
                ChoiceMethod::FirstToken => {
                    "no label is among the first token's alternatives".to_owned()
                }
                ChoiceMethod::Loglikelihood => "no choice was scored".to_owned(),
            };
            Verdict::failed(
                FailureKind::NoAnswer,
                format!("{why}; the answer is {right}"),
            )
        }
    }
}

/// The first label the text names as a word of its own (`Б`, `(Б)`, `Б.`;
/// not the `A` of `Answer`), case-sensitively.
fn first_label(text: &str, labels: &[String]) -> Option<usize> {
    let text = crate::extract::strip_think(text);
    let mut best: Option<(usize, usize)> = None;
    for (i, label) in labels.iter().enumerate() {
        let found = text.match_indices(label.as_str()).find(|&(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + label.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        });
        if let Some((at, _)) = found
            && best.is_none_or(|(b, _)| at < b)
        {
            best = Some((at, i));
        }
    }
    best.map(|(_, i)| i)
}

/// Each label's probability is the sum over the listed alternatives that
/// are the label once trimmed of white space (`А`, ` А`, `А\n`), then the
/// labels' probabilities are renormalised over those found.
fn first_token(
    set: &ChoiceSet,
    token: Option<(&str, f64)>,
    top: &[(String, f64)],
) -> ChoiceOutcome {
    let mut listed: Vec<(&str, f64)> = top.iter().map(|(t, lp)| (t.as_str(), *lp)).collect();
    // The generated token counts even when a server leaves it out of the list.
    if let Some((text, lp)) = token
        && !listed.iter().any(|(t, _)| *t == text)
    {
        listed.push((text, lp));
    }
    let mass: Vec<Option<f64>> = set
        .labels
        .iter()
        .map(|label| {
            let variants: Vec<f64> = listed
                .iter()
                .filter(|(t, _)| t.trim() == label)
                .map(|(_, lp)| lp.exp())
                .collect();
            (!variants.is_empty()).then(|| variants.iter().sum())
        })
        .collect();
    let total: f64 = mass.iter().flatten().sum();
    let probabilities: Vec<Option<f64>> = mass
        .iter()
        .map(|m| m.map(|m| if total > 0.0 { m / total } else { 0.0 }))
        .collect();
    ChoiceOutcome {
        method: ChoiceMethod::FirstToken,
        correct: set.correct,
        picked: argmax(probabilities.iter().map(|p| p.unwrap_or(f64::NEG_INFINITY)))
            .filter(|&i| probabilities[i].is_some()),
        picked_norm: None,
        probabilities,
        loglikelihoods: Vec::new(),
        labels: Vec::new(),
        texts: Vec::new(),
    }
}

/// lm-eval's multiple choice: `acc` picks the greatest log-likelihood,
/// `acc_norm` the greatest per character of the choice's text (its
/// `len(choice)`, without the delimiter), the first on ties as `np.argmax`.
fn loglikelihood(set: &ChoiceSet, lls: &[f64]) -> ChoiceOutcome {
    let picked = argmax(lls.iter().copied());
    let picked_norm = argmax(
        lls.iter()
            .zip(&set.texts)
            .map(|(ll, text)| ll / text.chars().count().max(1) as f64),
    );
    // The choices' probabilities given that one of them is the answer: a
    // softmax of their log-likelihoods (lm-eval's `prob_norm`).
    let top = lls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = lls.iter().map(|ll| (ll - top).exp()).collect();
    let total: f64 = weights.iter().sum();
    ChoiceOutcome {
        method: ChoiceMethod::Loglikelihood,
        correct: set.correct,
        picked,
        picked_norm,
        probabilities: weights.iter().map(|w| Some(w / total)).collect(),
        loglikelihoods: lls.to_vec(),
        labels: Vec::new(),
        texts: Vec::new(),
    }
}

/// The index of the first greatest value (NaN never wins).
fn argmax(values: impl Iterator<Item = f64>) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in values.enumerate() {
        if !v.is_nan() && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(labels: &[&str], texts: &[&str], correct: usize) -> ChoiceSet {
        ChoiceSet {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            texts: texts.iter().map(|s| s.to_string()).collect(),
            correct,
        }
    }

    #[test]
    fn a_written_label_is_the_first_standing_alone() {
        let s = set(&["А", "Б", "В", "Г"], &["1", "2", "3", "4"], 1);
        let cases = [
            ("Б", Some(1)),
            ("Ответ: (Б).", Some(1)),
            ("Правильный вариант — В, не Б", Some(2)),
            ("<think>наверное А</think> Б", Some(1)),
            ("Абрикос", None),
            ("", None),
        ];
        for (text, picked) in cases {
            let (outcome, verdict) = pick(&s, Picking::Text(text));
            assert_eq!(outcome.picked, picked, "{text}");
            assert_eq!(verdict.passed, picked == Some(1), "{text}");
        }
    }

    #[test]
    fn first_token_sums_label_variants_and_renormalises_over_the_labels() {
        let s = set(&["A", "B", "C"], &["x", "y", "z"], 1);
        let top = vec![
            ("B".to_owned(), 0.5_f64.ln()),
            (" B".to_owned(), 0.1_f64.ln()),
            ("A".to_owned(), 0.2_f64.ln()),
            ("The".to_owned(), 0.1_f64.ln()),
        ];
        let (outcome, verdict) = pick(&s, Picking::FirstToken(Some(("B", 0.5_f64.ln())), &top));
        assert!(verdict.passed);
        let p: Vec<_> = outcome
            .probabilities
            .iter()
            .map(|p| p.map(|p| (p * 1e6).round() / 1e6))
            .collect();
        assert_eq!(p, vec![Some(0.25), Some(0.75), None]);
        assert_eq!(outcome.missing(), 1);
    }

    #[test]
    fn first_token_without_any_label_picks_nothing_and_says_so() {
        let s = set(&["A", "B"], &["x", "y"], 0);
        let top = vec![("The".to_owned(), -0.1)];
        let (outcome, verdict) = pick(&s, Picking::FirstToken(Some(("The", -0.1)), &top));
        assert_eq!(outcome.picked, None);
        assert_eq!(verdict.failure, Some(FailureKind::NoAnswer));
        assert!(verdict.detail.contains("no label"), "{}", verdict.detail);
    }

    #[test]
    fn loglikelihood_picks_as_lm_eval_with_acc_norm_per_character() {
        // "yes" is likelier in sum; "absolutely" per character.
        let s = set(&["A", "B"], &["yes", "absolutely"], 1);
        let (outcome, verdict) = pick(&s, Picking::Loglikelihoods(&[-3.0, -5.0]));
        assert_eq!((outcome.picked, outcome.picked_norm), (Some(0), Some(1)));
        assert!(!verdict.passed && outcome.passed_norm());
        let p0 = outcome.probabilities[0].unwrap();
        assert!((p0 - 1.0 / (1.0 + (-2.0_f64).exp())).abs() < 1e-12);
        // Ties go to the first, as np.argmax.
        let (tie, _) = pick(&s, Picking::Loglikelihoods(&[-1.0, -1.0]));
        assert_eq!(tie.picked, Some(0));
    }
}
