//! Verdicts: what a rule concludes about one answer, and what all of a spec's
//! rules conclude about one instance. The leaf every rule file shares.

use serde::{Deserialize, Serialize};

/// Why a rule failed an answer: one vocabulary with a request's errors and
/// an episode's ends, so records and reports hold one type.
pub(crate) use crate::failure::FailureKind;

/// One rule's judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the rule passed.
    pub passed: bool,
    /// A score in [0, 1].
    pub score: f64,
    /// What went wrong (or, for soft rules, how close it was), for a human.
    pub detail: String,
    /// The failure's category, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
    /// Set when the spec, not the answer, caused the failure (a `script` rule
    /// that errs, a test template that does not render): where in the rule.
    #[serde(skip)]
    pub fault: Option<SpecFault>,
    /// A number the rule measured beside its pass and score (CER, WER), which
    /// reports average per cell; absent for rules that measure nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<Measure>,
}

/// A named number a rule measures of one answer: what reports average per
/// cell and group next to the pass rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// What is measured, as reports head its column: `CER`, `WER`.
    pub name: String,
    /// The measured value, unclipped (a CER can exceed 1).
    pub value: f64,
    /// Smaller values are better (error rates).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_is_better: bool,
}

/// A place in a rule's TOML where a failure at verification time comes from:
/// its key, and a 1-based line and column inside that key's string (0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecFault {
    /// The rule's key: `script`, `test_template`, ...
    pub key: &'static str,
    /// Line inside the key's string value.
    pub line: usize,
    /// Column inside the key's string value.
    pub column: usize,
}

impl Verdict {
    /// A full pass.
    pub fn pass() -> Verdict {
        Verdict::scored(true, 1.0, String::new())
    }

    /// A wrong answer, with an explanation.
    pub fn fail(detail: impl Into<String>) -> Verdict {
        Verdict::failed(FailureKind::WrongValue, detail)
    }

    /// A failure of a given kind.
    pub fn failed(kind: FailureKind, detail: impl Into<String>) -> Verdict {
        Verdict {
            passed: false,
            score: 0.0,
            detail: detail.into(),
            failure: Some(kind),
            fault: None,
            measure: None,
        }
    }

    /// A verdict with an explicit score.
    pub fn scored(passed: bool, score: f64, detail: String) -> Verdict {
        Verdict {
            passed,
            score: score.clamp(0.0, 1.0),
            detail,
            failure: (!passed).then_some(FailureKind::WrongValue),
            fault: None,
            measure: None,
        }
    }

    /// This verdict, carrying `measure`.
    pub fn measuring(mut self, measure: Measure) -> Verdict {
        self.measure = Some(measure);
        self
    }

    /// This verdict, marked as caused by the spec at `key` (line and column inside it).
    pub fn at_fault(mut self, key: &'static str, line: usize, column: usize) -> Verdict {
        self.fault = Some(SpecFault { key, line, column });
        self
    }
}

/// One rule's outcome within an instance verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleOutcome {
    /// The rule's name.
    pub name: String,
    /// The extracted answer, if any.
    pub answer: Option<String>,
    /// Reported beside the other rules, outside the instance's pass and score.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub report_only: bool,
    /// The judgement.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// For judge rules: levels, reasoning and who judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeOutcome>,
}

/// The judgement of one response to one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceVerdict {
    /// All rules passed.
    pub passed: bool,
    /// Weighted mean of the rule scores.
    pub score: f64,
    /// Each rule's outcome.
    pub rules: Vec<RuleOutcome>,
}

impl InstanceVerdict {
    /// A verdict of one failed outcome named `choice`: an answer a
    /// `[choices]` spec could not score (what its method reads is missing).
    pub fn failed(kind: FailureKind, detail: impl Into<String>) -> InstanceVerdict {
        InstanceVerdict {
            passed: false,
            score: 0.0,
            rules: vec![RuleOutcome {
                name: "choice".into(),
                answer: None,
                report_only: false,
                verdict: Verdict::failed(kind, detail),
                judge: None,
            }],
        }
    }

    /// The details of failing rules, one line each.
    pub fn failure_details(&self) -> String {
        self.rules
            .iter()
            .filter(|r| !r.verdict.passed && !r.report_only)
            .map(|r| format!("{}: {}", r.name, r.verdict.detail))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Judge rules' verdicts and outcomes by rule index, filled in by whoever asked the judge.
pub(crate) type Judged = std::collections::BTreeMap<usize, (Verdict, JudgeOutcome)>;

/// What a judged rule records beside its verdict: who judged, under which
/// rubric, every sample's level and reasoning, and the judge's own costs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeOutcome {
    /// The judge model's display name.
    pub judge: String,
    /// The hash of the rubric and template used (`Rubric::hash`).
    pub rubric: String,
    /// The median level, when enough samples parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
    /// Each parsed sample's level, in sample order.
    #[serde(default)]
    pub levels: Vec<i64>,
    /// Highest minus lowest sampled level (0: the samples agree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<i64>,
    /// Each parsed sample's reasoning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<String>,
    /// Each sample's raw response (`null` when its request failed): what replay answers with.
    #[serde(default)]
    pub responses: Vec<Option<String>>,
    /// Why samples gave no level, one per failed sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// HTTP attempts the judge made for this answer (0 when all came from the cache).
    #[serde(default)]
    pub attempts: u32,
    /// Samples answered from the cache.
    #[serde(default)]
    pub cached: u32,
    /// The judge's prompt tokens, summed over samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    /// The judge's generated tokens, summed over samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal line keeps a rule's measure, so a report on an old run or a
    /// merge of shards reads it back; a rule without one writes no key.
    #[test]
    fn a_measure_round_trips_through_a_journal_line() {
        let measure = Measure {
            name: "WER".into(),
            value: 1.5,
            lower_is_better: true,
        };
        let outcome = |verdict: Verdict| RuleOutcome {
            name: "cer".into(),
            answer: Some("x".into()),
            report_only: false,
            verdict,
            judge: None,
        };
        let measured = outcome(Verdict::scored(false, 0.0, "WER 1.500".into()).measuring(measure));
        let line = serde_json::to_value(&measured).unwrap();
        assert_eq!(
            line["measure"],
            serde_json::json!({"name": "WER", "value": 1.5, "lower_is_better": true})
        );
        let back: RuleOutcome = serde_json::from_value(line).unwrap();
        assert_eq!(back, measured);
        let plain = serde_json::to_value(outcome(Verdict::pass())).unwrap();
        assert!(plain.get("measure").is_none(), "{plain}");
    }
}
