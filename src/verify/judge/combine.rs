//! Combining k judge samples into one verdict: the median level counts, the
//! spread is recorded, and too few usable samples make a judge error.

use super::error::JudgeError;
use super::parse::JudgeAnswer;
use super::rubric::Rubric;
use crate::text::clip;
use crate::verify::{FailureKind, JudgeOutcome, Verdict};

/// One judge sample: the raw response (when the request succeeded) and its reading.
#[derive(Debug, Clone)]
pub struct JudgeSample {
    /// What the judge said.
    pub response: Option<String>,
    /// The parsed judgement, or why there is none (request error, bad JSON, level out of range).
    pub result: Result<JudgeAnswer, JudgeError>,
}

/// The median of sorted levels; the mean of the middle two for an even count.
fn median(sorted: &[i64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2] as f64
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0
    }
}

/// Combines a rule's judge samples into its verdict. A majority of samples must
/// give a level; otherwise the answer is a judge error (score 0, never a guess).
pub(crate) fn combine(
    rubric: &Rubric,
    threshold: f64,
    samples: Vec<JudgeSample>,
    mut outcome: JudgeOutcome,
) -> (Verdict, JudgeOutcome) {
    let asked = samples.len();
    for s in samples {
        outcome.responses.push(s.response);
        match s.result {
            Ok(a) => {
                outcome.levels.push(a.level);
                outcome.reasoning.push(a.reasoning);
            }
            Err(e) => outcome.errors.push(e.to_string()),
        }
    }
    if outcome.levels.len() * 2 <= asked {
        let why = outcome.errors.first().cloned().unwrap_or_default();
        let detail = if asked == 1 {
            format!("judge error: {why}")
        } else {
            format!(
                "judge error: {} of {asked} judge samples gave no level; first: {why}",
                asked - outcome.levels.len()
            )
        };
        return (Verdict::failed(FailureKind::JudgeError, detail), outcome);
    }
    let mut sorted = outcome.levels.clone();
    sorted.sort_unstable();
    let level = median(&sorted);
    let spread = sorted[sorted.len() - 1] - sorted[0];
    let score = rubric.normalize(level);
    outcome.level = Some(level);
    outcome.spread = Some(spread);
    // The reasoning shown is that of the first sample at the median (or nearest it).
    let shown = outcome
        .levels
        .iter()
        .enumerate()
        .min_by(|a, b| {
            let d = |l: i64| (l as f64 - level).abs();
            d(*a.1).total_cmp(&d(*b.1))
        })
        .map(|(i, _)| outcome.reasoning[i].as_str())
        .unwrap_or_default();
    let name = rubric
        .get(level.round() as i64)
        .map(|l| format!(" «{}»", l.name))
        .unwrap_or_default();
    let mut detail = format!("level {level}{name} → {score:.2}");
    if asked > 1 {
        detail.push_str(&format!(" (levels {:?}, spread {spread})", outcome.levels));
    }
    if !shown.is_empty() {
        detail.push_str(&format!(": {}", clip(shown, 240)));
    }
    let passed = score + 1e-12 >= threshold;
    (Verdict::scored(passed, score, detail), outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn five() -> Rubric {
        crate::verify::judge::rubric::numbered(1..=5)
    }

    fn sample(level: Option<i64>) -> JudgeSample {
        JudgeSample {
            response: Some(format!("{level:?}")),
            result: level
                .map(|level| JudgeAnswer {
                    level,
                    reasoning: format!("r{level}"),
                })
                .ok_or(JudgeError::NoLevel),
        }
    }

    #[test]
    fn one_sample_scores_its_level_against_the_threshold() {
        let (v, o) = combine(
            &five(),
            0.75,
            vec![sample(Some(4))],
            JudgeOutcome::default(),
        );
        assert_eq!((v.passed, v.score), (true, 0.75));
        assert_eq!((o.level, o.spread), (Some(4.0), Some(0)));
        assert!(
            v.detail.starts_with("level 4 «L4» → 0.75: r4"),
            "{}",
            v.detail
        );
        let (v, _) = combine(&five(), 0.8, vec![sample(Some(4))], JudgeOutcome::default());
        assert!(!v.passed && v.failure == Some(FailureKind::WrongValue));
    }

    #[test]
    fn several_samples_take_the_median_and_report_the_spread() {
        let samples = vec![sample(Some(5)), sample(Some(3)), sample(Some(4))];
        let (v, o) = combine(&five(), 0.5, samples, JudgeOutcome::default());
        assert_eq!((o.level, o.spread, v.score), (Some(4.0), Some(2), 0.75));
        assert!(
            v.detail.contains("levels [5, 3, 4], spread 2): r4"),
            "{}",
            v.detail
        );
        let even = vec![sample(Some(5)), sample(Some(4))];
        let (v, o) = combine(&five(), 0.5, even, JudgeOutcome::default());
        assert_eq!((o.level, v.score), (Some(4.5), 0.875));
    }

    #[test]
    fn without_a_majority_of_levels_it_is_a_judge_error() {
        let (v, o) = combine(&five(), 0.5, vec![sample(None)], JudgeOutcome::default());
        assert_eq!(v.failure, Some(FailureKind::JudgeError));
        assert_eq!((v.score, o.level), (0.0, None));
        assert_eq!(v.detail, "judge error: the judge's JSON has no `level`");
        let split = vec![sample(Some(5)), sample(None)];
        let (v, _) = combine(&five(), 0.5, split, JudgeOutcome::default());
        assert_eq!(v.failure, Some(FailureKind::JudgeError));
        let majority = vec![sample(Some(5)), sample(None), sample(Some(3))];
        let (v, o) = combine(&five(), 0.5, majority, JudgeOutcome::default());
        assert_eq!((v.score, o.errors.len()), (0.75, 1));
    }
}
