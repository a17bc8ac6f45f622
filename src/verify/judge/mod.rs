//! The `judge` rule: an LLM reads an answer, compares it with every level of
//! a rubric and picks one; the level is normalized to 0..1.
//!
//! The rule owns the pure part: the rubric ([`rubric`]), the judge's prompt
//! and answer schema ([`prompt`]), reading its answer ([`parse`]) and combining
//! k judge samples into one verdict ([`combine`]). Whoever asks the judge model
//! (the run layer, through the same cache, retries and journal as any other
//! request; or `harness check`, with fixed answers) hands the samples back.

use serde_json::{Map, Value};

pub(crate) mod combine;
mod error;
pub(crate) mod parse;
pub(crate) mod prompt;
pub(crate) mod rubric;

use super::expected::{Expected, as_text};
use super::kind::{Reference, RuleKind};
use super::{BuildContext, Reads, Rule};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::range::{Bounds, Number};
pub(crate) use combine::{JudgeSample, combine};
pub(crate) use error::JudgeError;
pub(crate) use parse::{JudgeAnswer, parse_answer};
use prompt::PromptInput;
pub(crate) use prompt::task_of;
use rubric::Level;
pub(crate) use rubric::Rubric;

/// A compiled `judge` rule.
pub struct JudgeRule {
    /// The levels.
    pub rubric: Rubric,
    /// [`Rubric::hash`] of the rubric and template.
    pub hash: String,
    /// Minimum normalized score to pass.
    pub threshold: f64,
    /// Judge samples per answer (the median level counts).
    pub samples: u32,
    /// The judge's sampling temperature.
    pub temperature: f64,
    /// The judge's generation limit.
    pub max_tokens: u32,
    /// Asks per sample when the judge's answer does not parse (1 = no re-ask).
    pub attempts: u32,
    reference: Option<Expected>,
    env: minijinja::Environment<'static>,
}

/// `judge`: an LLM judge picks a rubric level; its normalized score ≥
/// `threshold` (`docs/judge.md`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JudgeKeys {
    /// The rubric's levels.
    pub rubric: Option<Vec<Level>>,
    /// A rubric file of `[[level]]` tables, relative to the spec.
    pub rubric_file: Option<String>,
    /// The judge's prompt, a minijinja template over `task`, `reference`, `answer`, `levels`,
    /// `min_level`, `max_level` and `vars` (default: a built-in prompt in `language`).
    pub template: Option<String>,
    /// The built-in prompt's language, `ru` or `en` (default ru).
    pub language: Option<prompt::PromptLanguage>,
    /// Minimum normalized score to pass (default 0.5).
    pub threshold: Option<f64>,
    /// Judge samples per answer; the median level counts and the spread is reported (default 1).
    pub samples: Option<u32>,
    /// The judge's temperature (default 0, or 0.7 with several samples).
    pub temperature: Option<f64>,
    /// The judge's generation limit (default 512).
    pub max_tokens: Option<u32>,
    /// Asks per judge sample when its answer does not parse (default 3).
    pub attempts: Option<u32>,
}

/// How `judge` words its reference keys.
pub(super) const REFERENCE: Reference = Reference {
    expected: "The instance variable holding the reference answer (a dotted path).",
    value: "A literal reference answer, instead of `expected`.",
};

impl RuleKind for JudgeKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let rubric = match (&self.rubric, &self.rubric_file) {
            (Some(levels), None) => Rubric::new(levels.clone())
                .map_err(|e| cx.error(ErrorKind::Invalid, "rubric", e.to_string()))?,
            (None, Some(file)) => Rubric::read(&cx.spec_dir.join(file))
                .map_err(|e| cx.error(ErrorKind::Invalid, "rubric_file", e.to_string()))?,
            (Some(_), Some(_)) => {
                return Err(cx.error(
                    ErrorKind::Invalid,
                    "rubric_file",
                    "give either `rubric` (levels) or `rubric_file`, not both",
                ));
            }
            (None, None) => {
                return Err(cx.missing(
                    "judge",
                    "rubric",
                    "[{ level = 1, name = \"Плохо\", criteria = \"...\" }, { level = 5, name = \"Отлично\", criteria = \"...\" }]",
                ));
            }
        };
        let template = match &self.template {
            Some(t) => t.clone(),
            None => prompt::default_template(self.language.unwrap_or_default()).to_owned(),
        };
        let hash = rubric.hash(&template);
        let env = prompt::environment(template).map_err(|e| {
            let at = match e.line() {
                Some(line) => cx.locate_in("template", line, 1),
                None => cx
                    .map
                    .locate(crate::format::key_path!["verify", cx.index, "template"]),
            };
            Diagnostic::new(ErrorKind::Template, at, format!("judge template: {e}"))
        })?;
        let threshold = cx.threshold(self.threshold, 0.5)?;
        let samples = self.samples.unwrap_or(1);
        if !(1..=25).contains(&samples) {
            return Err(cx.error(ErrorKind::Invalid, "samples", "samples must be 1..=25"));
        }
        // The judge is asked as a model is: its numbers take a spec's ranges.
        let numbers = [
            (
                "temperature",
                self.temperature.map(Number::from),
                Bounds::Within(0.0, 2.0),
            ),
            (
                "max_tokens",
                self.max_tokens.map(Number::from),
                Bounds::Count(1, u64::from(u32::MAX)),
            ),
            (
                "attempts",
                self.attempts.map(Number::from),
                Bounds::Count(1, 100),
            ),
        ];
        for (key, value, bounds) in numbers {
            if let Some(problem) = value.and_then(|v| bounds.problem(key, v)) {
                return Err(cx.error(ErrorKind::Invalid, key, problem));
            }
        }
        let reference = cx.optional_expected()?;
        Ok(Box::new(JudgeRule {
            rubric,
            hash,
            threshold,
            samples,
            // Identical samples would measure nothing, so several samples default to some heat.
            temperature: self
                .temperature
                .unwrap_or(if samples > 1 { 0.7 } else { 0.0 }),
            max_tokens: self.max_tokens.unwrap_or(512),
            attempts: self.attempts.unwrap_or(3).max(1),
            reference,
            env,
        }))
    }
}

impl JudgeRule {
    /// The judge's prompt for one answer to the task `task`.
    pub fn prompt(
        &self,
        task: &str,
        answer: &str,
        vars: &Map<String, Value>,
    ) -> Result<String, JudgeError> {
        let reference = self
            .reference
            .as_ref()
            .and_then(|r| r.resolve(vars))
            .map(as_text);
        prompt::render(
            &self.env,
            &self.rubric,
            &PromptInput {
                task,
                reference: reference.as_deref(),
                answer,
                vars,
            },
        )
    }

    /// Reads one judge response; the error says why it gives no level.
    pub fn read(&self, response: &str) -> Result<JudgeAnswer, JudgeError> {
        parse_answer(response, &self.rubric)
    }

    /// One judge sample from the judge's response.
    pub fn sample(&self, response: String) -> JudgeSample {
        JudgeSample {
            result: self.read(&response),
            response: Some(response),
        }
    }
}

impl Rule for JudgeRule {
    fn reference(&self) -> Option<&Expected> {
        self.reference.as_ref()
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Judge(self)
    }
}
