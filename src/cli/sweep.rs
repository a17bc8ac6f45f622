//! `harness run --sweep reasoning.KEY=V1,V2,...`: each model once per value,
//! each run a cell of its own named `MODEL [KEY=V]`, so every report, the
//! paired tests between models and the sweep's own table and chart tell the
//! settings apart. And the check, before any request, that every model's
//! wire carries the reasoning setting each spec would send it.

use std::sync::Arc;

use super::exit::{Exit, diagnostics};
use crate::error::did_you_mean;
use crate::format::{Effort, REASONING_KEYS, ReasoningSetting};
use crate::provider::{ModelSetup, SweepCell};
use crate::spec::Spec;

/// A parsed `--sweep`: one reasoning key and its values, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sweep {
    key: &'static str,
    /// Each value as written, and the setting it stands for.
    values: Vec<(String, ReasoningSetting)>,
}

/// Why a `--sweep` argument is no sweep.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum SweepError {
    /// No `=`.
    #[error("write KEY=V1,V2,..., e.g. reasoning.effort=low,medium,high")]
    NoValues,
    /// A key that is not reasoning's.
    #[error("no sweep key `{key}`: {help}")]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The nearest key, or the keys there are.
        help: String,
    },
    /// A value that is no setting of the key: the key, the value, what it takes.
    #[error("{0} `{1}`: {2}")]
    BadValue(&'static str, String, String),
    /// A value given twice.
    #[error("`{0}` is given twice")]
    Twice(String),
    /// One value: no curve.
    #[error("a sweep needs two values or more, separated by commas")]
    TooFew,
}

/// Parses `reasoning.KEY=V1,V2,...` (or `KEY=...`): a clap value parser,
/// so a bad argument is a usage error (exit 2) that says what is wrong.
pub(super) fn parse(text: &str) -> Result<Sweep, SweepError> {
    let (path, values) = text.split_once('=').ok_or(SweepError::NoValues)?;
    let path = path.trim();
    let name = path.strip_prefix("reasoning.").unwrap_or(path);
    let Some(&key) = REASONING_KEYS.iter().find(|k| **k == name) else {
        let known: Vec<String> = REASONING_KEYS
            .iter()
            .map(|k| format!("reasoning.{k}"))
            .collect();
        let help = match did_you_mean(path, known.iter().map(String::as_str))
            .or_else(|| did_you_mean(name, REASONING_KEYS))
        {
            Some(close) if close.starts_with("reasoning.") => format!("did you mean `{close}`?"),
            Some(close) => format!("did you mean `reasoning.{close}`?"),
            None => format!("the keys a sweep takes: {}", known.join(", ")),
        };
        return Err(SweepError::UnknownKey {
            key: path.to_owned(),
            help,
        });
    };
    let mut parsed: Vec<(String, ReasoningSetting)> = Vec::new();
    for value in values.split(',').map(str::trim) {
        let setting = value_setting(key, value)?;
        if parsed.iter().any(|(v, _)| v == value) {
            return Err(SweepError::Twice(value.to_owned()));
        }
        parsed.push((value.to_owned(), setting));
    }
    if parsed.len() < 2 {
        return Err(SweepError::TooFew);
    }
    Ok(Sweep {
        key,
        values: parsed,
    })
}

/// The setting of `key = value`.
fn value_setting(key: &'static str, value: &str) -> Result<ReasoningSetting, SweepError> {
    let bad = |takes: String| SweepError::BadValue(key, value.to_owned(), takes);
    let mut setting = ReasoningSetting::default();
    match key {
        "effort" => {
            let names = Effort::ALL.map(Effort::name);
            let effort = Effort::parse(value).ok_or_else(|| {
                bad(match did_you_mean(value, names) {
                    Some(close) => format!("did you mean `{close}`?"),
                    None => format!("one of {}", names.join(", ")),
                })
            })?;
            setting.effort = Some(effort);
        }
        "budget_tokens" => {
            let budget = value.parse::<u32>().ok().filter(|b| *b > 0);
            let takes = || bad("a whole number of tokens, 1 or more".to_owned());
            setting.budget_tokens = Some(budget.ok_or_else(takes)?);
        }
        _ => {
            let enabled = value.parse::<bool>().ok();
            setting.enabled = Some(enabled.ok_or_else(|| bad("true or false".to_owned()))?);
        }
    }
    Ok(setting)
}

impl Sweep {
    /// Every model once per value, in the models' order and the values'.
    pub(super) fn expand(&self, models: Vec<ModelSetup>) -> Vec<ModelSetup> {
        let mut cells = Vec::new();
        for model in models {
            for (value, setting) in &self.values {
                let mut cell = model.clone();
                cell.name = format!("{} [{}={value}]", model.name, self.key);
                cell.sweep = Some(SweepCell {
                    base: model.name.clone(),
                    key: self.key.to_owned(),
                    value: value.clone(),
                    setting: *setting,
                });
                cells.push(cell);
            }
        }
        cells
    }
}

/// Fails (exit 2, located) when some model's wire cannot carry the reasoning
/// a spec would send it, or its budget passes the requests' `max_tokens`:
/// every problem printed, none sent.
pub(super) fn check_reasoning(
    specs: &[Arc<Spec>],
    models: &[ModelSetup],
    color: bool,
) -> Result<(), Exit> {
    let problems: Vec<_> = specs
        .iter()
        .flat_map(|spec| {
            models
                .iter()
                .filter_map(|m| crate::check::reasoning_problem(spec, m))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(diagnostics(&problems, color))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_names_its_cells_and_refuses_what_is_no_setting() {
        let sweep = parse("reasoning.effort=low,high").unwrap();
        let cells = sweep.expand(vec![ModelSetup::new(
            crate::provider::ProviderKind::OpenAi,
            "m",
        )]);
        let names: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["m [effort=low]", "m [effort=high]"]);
        assert_eq!(
            cells[1].sweep.as_ref().unwrap().setting.effort,
            Some(Effort::High)
        );
        let budget = parse("budget_tokens=1024, 4096").unwrap();
        assert_eq!(budget.values[1].1.budget_tokens, Some(4096));
        // (argument, what the error says)
        let bad = [
            (
                "reasoning.efort=low,high",
                "did you mean `reasoning.effort`?",
            ),
            (
                "reasoning.budget=1,2",
                "did you mean `reasoning.budget_tokens`?",
            ),
            ("temperature=0,1", "the keys a sweep takes"),
            ("effort=low,hihg", "did you mean `high`?"),
            ("budget_tokens=0,8", "1 or more"),
            ("budget_tokens=-5,8", "1 or more"),
            ("enabled=yes,no", "true or false"),
            ("effort=low", "two values or more"),
            ("effort=low,low", "given twice"),
            ("effort", "KEY=V1,V2"),
        ];
        for (argument, says) in bad {
            let e = parse(argument).unwrap_err().to_string();
            assert!(e.contains(says), "{argument}: {e}");
        }
    }
}
