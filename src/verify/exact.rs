//! `exact`: the answer equals the expected string after whitespace
//! normalization (the instruction-following check). Case-sensitive by
//! default, because case is often what the instructions asked for.

use super::Verdict;
use super::expected::ComparesText;
use crate::text::clip;

/// `exact`: the answer equals the expected string after whitespace
/// normalization; a list means any alternative.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ExactKeys {
    /// Compare case-sensitively (default true).
    pub case_sensitive: Option<bool>,
}

/// Collapses whitespace runs to one space and trims.
pub(super) fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl ExactKeys {
    fn normalize(&self, text: &str) -> String {
        let text = normalize_whitespace(text);
        if self.case_sensitive.unwrap_or(true) {
            text
        } else {
            text.to_lowercase()
        }
    }
}

impl ComparesText for ExactKeys {
    fn compare(&self, answer: &str, alternatives: &[String]) -> Verdict {
        let got = self.normalize(answer);
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
    use serde_json::{Map, Value};

    use super::*;
    use crate::verify::expected::{Expected, TextRule};
    use crate::verify::{ReadsText, Rule};

    fn rule(case_sensitive: bool) -> TextRule<ExactKeys> {
        TextRule {
            expected: Expected::Literal(Value::from("<data>АБВ</data>")),
            compare: ExactKeys {
                case_sensitive: Some(case_sensitive),
            },
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
        let rule = TextRule {
            expected: Expected::Var("answer".into()),
            compare: ExactKeys {
                case_sensitive: None,
            },
        };
        let vars: Map<String, Value> = serde_json::from_str(r#"{"answer": []}"#).unwrap();
        let v = rule.verify("x", "", &vars);
        assert!(!v.passed && v.detail.contains("empty list"), "{}", v.detail);
        assert_eq!(rule.value_problems(&vars)[0].0, "expected");
    }
}
