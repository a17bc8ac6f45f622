//! `exact`: the answer equals the expected string after whitespace
//! normalization (the instruction-following check). Case-sensitive by
//! default, because case is often what the instructions asked for.

use serde_json::{Map, Value};

use super::expected::{Expected, as_text_list, text_problem};
use super::{BuildContext, Rule, Verdict};
use crate::error::Diagnostic;
use crate::format::RuleDef;
use crate::text::clip;

struct Exact {
    expected: Expected,
    case_sensitive: bool,
}

/// Builds an `exact` rule.
pub fn build(def: &RuleDef, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
    Ok(Box::new(Exact {
        expected: Expected::from_def(def, cx)?,
        case_sensitive: def.case_sensitive.unwrap_or(true),
    }))
}

/// Collapses whitespace runs to one space and trims.
pub fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Exact {
    fn normalize(&self, text: &str) -> String {
        let text = normalize_whitespace(text);
        if self.case_sensitive {
            text
        } else {
            text.to_lowercase()
        }
    }
}

impl Rule for Exact {
    fn reference(&self) -> Option<&Expected> {
        Some(&self.expected)
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        self.expected
            .resolve(vars)
            .and_then(|v| text_problem(v, false))
            .map(|p| ("expected", format!("the expected value {p}")))
            .into_iter()
            .collect()
    }

    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let Some(expected) = self.expected.resolve(vars) else {
            return Verdict::fail("the expected value is missing from the instance");
        };
        if let Some((_, problem)) = self.value_problems(vars).pop() {
            return Verdict::fail(problem);
        }
        let got = self.normalize(answer);
        let alternatives = as_text_list(expected);
        if alternatives.iter().any(|alt| self.normalize(alt) == got) {
            return Verdict::pass();
        }
        let want = self.normalize(&alternatives[0]);
        let at = got
            .chars()
            .zip(want.chars())
            .position(|(a, b)| a != b)
            .unwrap_or(got.chars().count().min(want.chars().count()));
        Verdict::fail(format!(
            "expected «{}», got «{}» (first difference at character {})",
            clip(&want, 120),
            clip(&got, 120),
            at + 1
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(case_sensitive: bool) -> Exact {
        Exact {
            expected: Expected::Literal(Value::from("<data>АБВ</data>")),
            case_sensitive,
        }
    }

    #[test]
    fn whitespace_is_normalized_but_case_is_kept() {
        let vars = Map::new();
        assert!(rule(true).verify("  <data>АБВ</data>\n", "", &vars).passed);
        let v = rule(true).verify("<data>абв</data>", "", &vars);
        assert!(!v.passed);
        assert!(v.detail.contains("character 7"), "{}", v.detail);
        assert!(rule(false).verify("<data>абв</data>", "", &vars).passed);
    }

    #[test]
    fn an_empty_list_of_alternatives_fails_instead_of_panicking() {
        let rule = Exact {
            expected: Expected::Var("answer".into()),
            case_sensitive: true,
        };
        let vars: Map<String, Value> = serde_json::from_str(r#"{"answer": []}"#).unwrap();
        let v = rule.verify("x", "", &vars);
        assert!(!v.passed && v.detail.contains("empty list"), "{}", v.detail);
        assert_eq!(rule.value_problems(&vars)[0].0, "expected");
    }
}
