//! A spec's `[choices]`: checked once when the spec loads (the method
//! against the prompt and the rules, the labels, the limits), then read per
//! instance from its variables into a [`ChoiceSet`] that the templates see
//! as `choice_list` and the scoring reads.

use serde_json::{Map, Value};

use crate::error::{Diagnostic, ErrorKind};
use crate::format::ChoiceOutcome;
use crate::format::locate::SourceMap;
use crate::format::{ChoiceMethod, LabelSet, Labels, MAX_TOP, SpecFile, key_path};
use crate::prompt::Logprobs;
use crate::verify::InstanceVerdict;
use crate::verify::choices::{ChoiceSet, Picking, score_pick};

/// The alternatives asked for the first token when the spec names no number.
const DEFAULT_TOP: u32 = 20;

/// A checked `[choices]` table.
pub(crate) struct ChoicesRuntime {
    /// How a choice is picked.
    pub method: ChoiceMethod,
    /// What joins the context and a choice (`loglikelihood`).
    pub delimiter: String,
    /// Alternatives asked for the first token (`first_token`).
    pub top: u32,
    texts: String,
    correct: String,
    labels: Vec<String>,
}

/// Checks `[choices]` against the rest of the spec; every problem is pushed.
pub(super) fn compile(
    def: &SpecFile,
    map: &SourceMap,
    errors: &mut Vec<Diagnostic>,
) -> Option<ChoicesRuntime> {
    let choices = def.choices.as_ref()?;
    let at = |path: &[crate::format::locate::Key], message: &str| {
        Diagnostic::new(ErrorKind::Invalid, map.locate(path), message)
    };
    let method = choices.method.unwrap_or_default();
    if !def.verify.is_empty() {
        errors.push(at(
            key_path!["verify"],
            "a spec is scored by [choices] or by [[verify]] rules, not both",
        ));
    }
    if def.agent.is_some() {
        errors.push(at(
            key_path!["agent"],
            "[choices] scores one answer, not an [agent] episode",
        ));
    }
    let top = choices.top_logprobs.unwrap_or(DEFAULT_TOP);
    if top as usize > MAX_TOP
        || (choices.top_logprobs.is_some() && method != ChoiceMethod::FirstToken)
    {
        let message = if top as usize > MAX_TOP {
            format!("top_logprobs is {top}; servers list at most {MAX_TOP} alternatives")
        } else {
            "top_logprobs is read by method = \"first_token\" only".to_owned()
        };
        errors.push(at(key_path!["choices", "top_logprobs"], &message));
    }
    if choices.delimiter.is_some() && method != ChoiceMethod::Loglikelihood {
        errors.push(at(
            key_path!["choices", "delimiter"],
            "delimiter is read by method = \"loglikelihood\" only",
        ));
    }
    if method == ChoiceMethod::Loglikelihood {
        let plain = def.prompt.system.is_none()
            && def.prompt.messages.as_ref().is_none_or(Vec::is_empty)
            && def.prompt.history.is_none()
            && def.prompt.user.is_some()
            && def.tools.is_empty();
        if !plain {
            errors.push(at(
                key_path!["prompt"],
                "method = \"loglikelihood\" scores a plain text after one context: \
                 the prompt must be a single `user` template (no system, messages, \
                 history or tools; no chat template is applied)",
            ));
        }
    }
    let labels = match &choices.labels {
        None => LabelSet::Latin.labels(),
        Some(Labels::Set(set)) => set.labels(),
        Some(Labels::List(list)) => list.clone(),
    };
    if let Some(problem) = labels_problem(&labels) {
        errors.push(at(key_path!["choices", "labels"], &problem));
    } else if method == ChoiceMethod::FirstToken
        && let Some(label) = (labels.iter()).find(|l| l.trim().contains(char::is_whitespace))
    {
        let message = format!(
            "label `{label}` has white space inside: method = \"first_token\" reads a \
             label from one token"
        );
        errors.push(at(key_path!["choices", "labels"], &message));
    }
    Some(ChoicesRuntime {
        method,
        delimiter: choices.delimiter.clone().unwrap_or_else(|| " ".to_owned()),
        top,
        texts: choices.texts.clone(),
        correct: choices.correct.clone(),
        labels,
    })
}

/// Why a list of labels cannot label choices: too few, empty, repeated.
fn labels_problem(labels: &[String]) -> Option<String> {
    if labels.len() < 2 {
        return Some("a question needs at least 2 labels".into());
    }
    if let Some(blank) = labels.iter().position(|l| l.trim().is_empty()) {
        return Some(format!("label {} is empty", blank + 1));
    }
    let mut seen = std::collections::HashSet::new();
    labels
        .iter()
        .find(|l| !seen.insert(l.trim()))
        .map(|l| format!("label `{l}` is given twice"))
}

/// Why an instance's variables make no question, or an answer cannot be
/// scored as one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ChoiceProblem {
    /// A variable `[choices]` names is not set.
    #[error("the instance has no variable `{var}` ({key})")]
    Missing {
        /// The variable.
        var: String,
        /// The `[choices]` key naming it.
        key: &'static str,
    },
    /// The texts are not a list.
    #[error("`{var}` is {value}, not a list of texts")]
    NotAList {
        /// The variable.
        var: String,
        /// Its value, as JSON.
        value: String,
    },
    /// A text is neither a string nor a number.
    #[error("`{var}` holds {value}, not a choice's text")]
    NotAText {
        /// The variable.
        var: String,
        /// The item, as JSON.
        value: String,
    },
    /// Fewer than two choices.
    #[error("`{var}` has {count} choice(s); a question needs at least 2")]
    TooFew {
        /// The variable.
        var: String,
        /// Its choices.
        count: usize,
    },
    /// More choices than labels.
    #[error("`{var}` has {count} choices and [choices] labels only {labels}")]
    TooMany {
        /// The variable.
        var: String,
        /// Its choices.
        count: usize,
        /// The labels.
        labels: usize,
    },
    /// The right index is not a non-negative integer.
    #[error("`{var}` is {value}, not a choice's index (0-based)")]
    NotAnIndex {
        /// The variable.
        var: String,
        /// Its value, as JSON.
        value: String,
    },
    /// The right index is past the last choice.
    #[error("`{var}` is {index}, out of range for {count} choices (0-based)")]
    OutOfRange {
        /// The variable.
        var: String,
        /// Its value.
        index: usize,
        /// The choices.
        count: usize,
    },
    /// The answer carries no log-probabilities for `first_token`.
    #[error("the answer carries no log-probabilities")]
    NoLogprobs,
    /// The answer scored another number of continuations than there are choices.
    #[error("{choices} choices and {scored} scored continuations")]
    Unmatched {
        /// The choices.
        choices: usize,
        /// The continuations scored.
        scored: usize,
    },
}

/// The value of instance variable `var`, which the `[choices]` key `key`
/// names, or that the instance has no such variable.
fn variable<'v>(
    vars: &'v Map<String, Value>,
    var: &str,
    key: &'static str,
) -> Result<&'v Value, ChoiceProblem> {
    crate::verify::lookup(vars, var).ok_or_else(|| ChoiceProblem::Missing {
        var: var.to_owned(),
        key,
    })
}

impl ChoicesRuntime {
    /// The labels, one per choice in order (as many as the longest question needs).
    pub(crate) fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The choices of an instance with `vars`, or why its variables do not
    /// make a question.
    pub(crate) fn set(&self, vars: &Map<String, Value>) -> Result<ChoiceSet, ChoiceProblem> {
        let var = || self.texts.clone();
        let texts = match variable(vars, &self.texts, "texts")? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(ChoiceProblem::NotAText {
                        var: var(),
                        value: other.to_string(),
                    }),
                })
                .collect::<Result<Vec<_>, _>>()?,
            other => {
                return Err(ChoiceProblem::NotAList {
                    var: var(),
                    value: other.to_string(),
                });
            }
        };
        let count = texts.len();
        if count < 2 {
            return Err(ChoiceProblem::TooFew { var: var(), count });
        }
        if count > self.labels.len() {
            let labels = self.labels.len();
            return Err(ChoiceProblem::TooMany {
                var: var(),
                count,
                labels,
            });
        }
        let var = || self.correct.clone();
        let correct = variable(vars, &self.correct, "correct")?;
        let correct = correct.as_u64().ok_or_else(|| ChoiceProblem::NotAnIndex {
            var: var(),
            value: correct.to_string(),
        })?;
        let index = usize::try_from(correct).unwrap_or(usize::MAX);
        if index >= count {
            return Err(ChoiceProblem::OutOfRange {
                var: var(),
                index,
                count,
            });
        }
        Ok(ChoiceSet {
            labels: self.labels[..count].to_vec(),
            texts,
            correct: index,
        })
    }

    /// Scores an answer to `set`: its text (`generate`), or the
    /// log-probabilities it carried (`first_token`, `loglikelihood`).
    /// An answer without what the method reads is refused, never scored
    /// as a miss.
    pub(crate) fn score(
        &self,
        set: &ChoiceSet,
        text: &str,
        logprobs: Option<&Logprobs>,
    ) -> Result<(ChoiceOutcome, InstanceVerdict), ChoiceProblem> {
        let picking = match self.method {
            ChoiceMethod::Generate => Picking::Text(text),
            ChoiceMethod::FirstToken => {
                let first = logprobs.and_then(|l| l.tokens.first());
                match first {
                    Some(token) => {
                        Picking::FirstToken(Some((&token.token, token.logprob)), &token.top)
                    }
                    None if logprobs.is_some() => Picking::FirstToken(None, &[]),
                    None => return Err(ChoiceProblem::NoLogprobs),
                }
            }
            ChoiceMethod::Loglikelihood => {
                let scored = logprobs.map_or(&[][..], |l| &l.continuations[..]);
                if scored.len() != set.texts.len() {
                    return Err(ChoiceProblem::Unmatched {
                        choices: set.texts.len(),
                        scored: scored.len(),
                    });
                }
                let lls: Vec<f64> = scored.iter().map(|c| c.logprob).collect();
                return Ok(score_pick(set, Picking::Loglikelihoods(&lls)));
            }
        };
        Ok(score_pick(set, picking))
    }

    /// What a template sees of `set`: `[{label, text}, ...]`.
    pub(crate) fn template_list(set: &ChoiceSet) -> Value {
        set.labels
            .iter()
            .zip(&set.texts)
            .map(|(label, text)| serde_json::json!({"label": label, "text": text}))
            .collect()
    }

    /// The continuations a `loglikelihood` request scores: the delimiter
    /// and each choice's text.
    pub(crate) fn continuations(&self, set: &ChoiceSet) -> Vec<String> {
        set.texts
            .iter()
            .map(|t| format!("{}{t}", self.delimiter))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(labels: Vec<String>) -> ChoicesRuntime {
        ChoicesRuntime {
            method: ChoiceMethod::Generate,
            delimiter: " ".into(),
            top: 20,
            texts: "options".into(),
            correct: "answer".into(),
            labels,
        }
    }

    #[test]
    fn instance_variables_make_a_question_or_say_what_is_wrong() {
        let r = runtime(LabelSet::Cyrillic.labels());
        let vars = |v: serde_json::Value| v.as_object().unwrap().clone();
        let ok = r
            .set(&vars(serde_json::json!({"options": ["2", 3], "answer": 1})))
            .unwrap();
        assert_eq!(ok.labels, ["А", "Б"]);
        assert_eq!(ok.texts, ["2", "3"]);
        let cases = [
            (serde_json::json!({"answer": 0}), "no variable `options`"),
            (
                serde_json::json!({"options": "x", "answer": 0}),
                "not a list",
            ),
            (
                serde_json::json!({"options": ["x"], "answer": 0}),
                "at least 2",
            ),
            (
                serde_json::json!({"options": ["x", "y"], "answer": 2}),
                "out of range",
            ),
            (
                serde_json::json!({"options": ["x", "y"], "answer": "Б"}),
                "not a choice's index",
            ),
            (
                serde_json::json!({"options": ["x", {}], "answer": 0}),
                "not a choice's text",
            ),
        ];
        for (v, expected) in cases {
            let error = r.set(&vars(v.clone())).unwrap_err().to_string();
            assert!(error.contains(expected), "{v}: {error}");
        }
        let two = runtime(vec!["A".into(), "B".into()]);
        let error = two.set(&vars(
            serde_json::json!({"options": ["x", "y", "z"], "answer": 0}),
        ));
        assert!(error.unwrap_err().to_string().contains("labels only 2"));
    }

    #[test]
    fn labels_must_be_distinct_and_enough() {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            labels_problem(&list(&["A"]))
                .unwrap()
                .contains("at least 2")
        );
        assert!(
            labels_problem(&list(&["A", " A"]))
                .unwrap()
                .contains("twice")
        );
        assert!(
            labels_problem(&list(&["A", " "]))
                .unwrap()
                .contains("empty")
        );
        assert_eq!(labels_problem(&list(&["A", "B"])), None);
    }
}
