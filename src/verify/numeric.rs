//! `numeric`: the answer is a number within tolerance of the expected one
//! (the arithmetic category). `14.0` equals `14`.

use serde_json::{Map, Value};

use super::expected::Expected;
use super::kind::RuleKind;
use super::{BuildContext, FailureKind, Reads, ReadsText, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::extract::last_number;
use crate::text::clip;

struct Numeric {
    expected: Expected,
    tolerance: Tolerance,
}

/// How far a number may be from the expected one: `abs(got - want) <=
/// max(absolute, relative * abs(want))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tolerance {
    /// The absolute error allowed (`tolerance`).
    pub absolute: f64,
    /// The error allowed as a fraction of the expected value (`relative_tolerance`).
    pub relative: f64,
}

impl Tolerance {
    /// A rule's `tolerance` and `relative_tolerance`, each a non-negative
    /// number; `absolute` when the rule sets no `tolerance`.
    pub(super) fn from_keys(
        tolerance: Option<f64>,
        relative_tolerance: Option<f64>,
        cx: &BuildContext,
        absolute: f64,
    ) -> Result<Self, Diagnostic> {
        for (key, value) in [
            ("tolerance", tolerance),
            ("relative_tolerance", relative_tolerance),
        ] {
            if value.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                return Err(cx.error(
                    ErrorKind::Invalid,
                    key,
                    format!("`{key}` must be a non-negative number"),
                ));
            }
        }
        Ok(Tolerance {
            absolute: tolerance.unwrap_or(absolute),
            relative: relative_tolerance.unwrap_or(0.0),
        })
    }

    /// The error allowed around `want`.
    pub(super) fn allowed(&self, want: f64) -> f64 {
        self.absolute.max(self.relative * want.abs())
    }

    /// Whether `got` is close enough to `want`.
    pub(super) fn allows(&self, got: f64, want: f64) -> bool {
        (got - want).abs() <= self.allowed(want)
    }
}

/// `numeric`: the number is within tolerance: `abs(got - want) <=
/// max(tolerance, relative_tolerance * abs(want))`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NumericKeys {
    /// Absolute tolerance (default 1e-9).
    pub tolerance: Option<f64>,
    /// Relative tolerance, a fraction of the expected value (default 0).
    pub relative_tolerance: Option<f64>,
}

impl RuleKind for NumericKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let tolerance = Tolerance::from_keys(self.tolerance, self.relative_tolerance, cx, 1e-9)?;
        Ok(Box::new(Numeric {
            expected: cx.expected()?,
            tolerance,
        }))
    }
}

/// A value as a number: numbers, and strings holding exactly one number.
pub(super) fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_number(s),
        _ => None,
    }
}

fn parse_number(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    trimmed
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .or_else(|| {
            last_number(trimmed)
                .filter(|n| n.len() + 2 >= trimmed.len())?
                .parse()
                .ok()
        })
}

impl Rule for Numeric {
    fn reference(&self) -> Option<&Expected> {
        Some(&self.expected)
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        match self.expected.resolve(vars) {
            Some(v) if as_number(v).is_none() => vec![(
                "expected",
                format!(
                    "the expected value is {}, not a number: {}",
                    crate::text::json_kind(v),
                    clip(&v.to_string(), 60)
                ),
            )],
            _ => Vec::new(),
        }
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for Numeric {
    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let Some(expected) = self.expected.resolve(vars).and_then(as_number) else {
            return Verdict::fail("the expected value is missing or not a number");
        };
        let Some(got) = parse_number(answer) else {
            return Verdict::failed(
                FailureKind::NoAnswer,
                format!("«{}» is not a number", clip(answer, 80)),
            );
        };
        let allowed = self.tolerance.allowed(expected);
        if self.tolerance.allows(got, expected) {
            Verdict::pass()
        } else {
            Verdict::fail(format!(
                "expected {expected}, got {got} (allowed error {allowed})"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(absolute: f64, relative: f64) -> Numeric {
        Numeric {
            expected: Expected::Var("answer".into()),
            tolerance: Tolerance { absolute, relative },
        }
    }

    #[test]
    fn tolerances_apply() {
        let vars: Map<String, Value> = serde_json::from_str(r#"{"answer": 14}"#).unwrap();
        assert!(rule(1e-9, 0.0).verify("14.0", "", &vars).passed);
        assert!(!rule(1e-9, 0.0).verify("14.5", "", &vars).passed);
        assert!(rule(0.0, 0.05).verify("14.5", "", &vars).passed);
        assert_eq!(
            rule(0.0, 0.0).verify("x", "", &vars).failure,
            Some(FailureKind::NoAnswer)
        );
    }

    #[test]
    fn expected_numbers_may_be_strings() {
        assert_eq!(as_number(&Value::from("025")), Some(25.0));
        assert_eq!(as_number(&Value::from("-3,5")), Some(-3.5));
        assert_eq!(as_number(&Value::from("a 1 b 2")), None);
    }
}
