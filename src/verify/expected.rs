//! Expected values: a typed value taken from the instance variables
//! (`expected = "answer"`) or written literally (`value = 14`).

use serde_json::{Map, Value};

use super::{BuildContext, Reads, ReadsText, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::{field_names, key_path};

/// Where a rule's expected value comes from.
#[derive(Debug, Clone)]
pub(crate) enum Expected {
    /// A dotted path into the instance variables.
    Var(String),
    /// A literal from the spec.
    Literal(Value),
}

/// The keys of a rule's `Reference` (`kind.rs`), as read (their docs come from the rule).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReferenceKeys {
    /// An instance variable (a dotted path), as the rule's `Reference` words it.
    pub expected: Option<String>,
    /// A literal, as the rule's `Reference` words it.
    pub value: Option<Value>,
}

/// A rule comparing the answer with its expected value as text: wrapped in
/// [`TextRule`] with that value, its [`Rule`] and its reading of the
/// instance's expected texts follow from that, the same for each.
pub(super) trait ComparesText: Send + Sync {
    /// Whether the expected texts are looked for inside the answer, where an
    /// empty one would match any (see `text_problem`).
    const NEEDLE: bool = false;
    /// The verdict on `answer` against the instance's expected texts (one or
    /// more alternatives, or needles; never an empty list).
    fn compare(&self, answer: &str, expected: &[String]) -> Verdict;
}

/// The [`Rule`] of a [`ComparesText`] with its expected value.
pub(super) struct TextRule<T> {
    /// The expected value.
    pub expected: Expected,
    /// How the answer is compared with it.
    pub compare: T,
}

impl<T: ComparesText> Rule for TextRule<T> {
    fn reference(&self) -> Option<&Expected> {
        Some(&self.expected)
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        self.expected.text_problems(vars, T::NEEDLE)
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl<T: ComparesText> ReadsText for TextRule<T> {
    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        match self.expected.texts(vars, T::NEEDLE) {
            Ok(texts) => self.compare.compare(answer, &texts),
            Err(verdict) => verdict,
        }
    }
}

impl BuildContext<'_> {
    /// The rule comparing the answer as text, by `compare`, with the rule's
    /// `expected` or `value`.
    pub(super) fn text_rule<T: ComparesText + 'static>(
        &self,
        compare: T,
    ) -> Result<Box<dyn Rule>, Diagnostic> {
        Ok(Box::new(TextRule {
            expected: self.expected()?,
            compare,
        }))
    }

    /// The rule's `expected` or `value` key (exactly one must be given).
    pub(crate) fn expected(&self) -> Result<Expected, Diagnostic> {
        let keys = self.reference_keys()?;
        Expected::from_keys(keys.expected.as_deref(), keys.value.as_ref(), self)
    }

    /// The rule's `expected` or `value` key, or none when it has neither.
    pub(crate) fn optional_expected(&self) -> Result<Option<Expected>, Diagnostic> {
        let keys = self.reference_keys()?;
        match (&keys.expected, &keys.value) {
            (None, None) => Ok(None),
            (expected, value) => {
                Expected::from_keys(expected.as_deref(), value.as_ref(), self).map(Some)
            }
        }
    }

    /// Reads the reference keys alone from the rule's table.
    fn reference_keys(&self) -> Result<ReferenceKeys, Diagnostic> {
        let path = key_path!["verify", self.index];
        let reads = field_names::<ReferenceKeys>();
        let others: Vec<String> = self.map.table_keys(path);
        let skip: Vec<&str> = others
            .iter()
            .map(String::as_str)
            .filter(|k| !reads.contains(k))
            .collect();
        self.map.read_table(path, &skip)
    }
}

impl Expected {
    /// Reads `expected` / `value` of a rule; exactly one must be given.
    pub(crate) fn from_keys(
        expected: Option<&str>,
        value: Option<&Value>,
        cx: &BuildContext,
    ) -> Result<Expected, Diagnostic> {
        match (expected, value) {
            (Some(var), None) => {
                if var.trim().is_empty() {
                    return Err(cx.error(
                        ErrorKind::Invalid,
                        "expected",
                        "`expected` names no variable",
                    ));
                }
                Ok(Expected::Var(var.to_owned()))
            }
            (None, Some(value)) => Ok(Expected::Literal(value.clone())),
            (Some(_), Some(_)) => Err(cx.error(
                ErrorKind::Invalid,
                "value",
                "give either `expected` (a variable) or `value` (a literal), not both",
            )),
            (None, None) => {
                Err(cx.missing(cx.rule, "expected", "\"answer\"  # an instance variable"))
            }
        }
    }

    /// Why this instance's expected value cannot serve as text (see
    /// `text_problem`), as the rule's one `(key, why)`.
    pub(crate) fn text_problems(
        &self,
        vars: &Map<String, Value>,
        needle: bool,
    ) -> Vec<(&'static str, String)> {
        self.resolve(vars)
            .and_then(|v| text_problem(v, needle))
            .map(|p| ("expected", format!("the expected value {p}")))
            .into_iter()
            .collect()
    }

    /// The expected value as text alternatives, or the failing verdict when
    /// the instance lacks it or it is not text.
    pub(crate) fn texts(
        &self,
        vars: &Map<String, Value>,
        needle: bool,
    ) -> Result<Vec<String>, Verdict> {
        let Some(expected) = self.resolve(vars) else {
            return Err(Verdict::fail(
                "the expected value is missing from the instance",
            ));
        };
        match self.text_problems(vars, needle).pop() {
            Some((_, problem)) => Err(Verdict::fail(problem)),
            None => Ok(as_text_list(expected)),
        }
    }

    /// The variable this reads, if any.
    pub(crate) fn variable(&self) -> Option<&str> {
        match self {
            Expected::Var(v) => Some(v),
            Expected::Literal(_) => None,
        }
    }

    /// The value for an instance.
    pub(crate) fn resolve<'a>(&'a self, vars: &'a Map<String, Value>) -> Option<&'a Value> {
        match self {
            Expected::Var(path) => lookup(vars, path),
            Expected::Literal(v) => Some(v),
        }
    }

    /// `variables()` entry for the rule trait.
    pub(crate) fn as_variables(&self) -> Vec<(&'static str, &str)> {
        self.variable()
            .map(|v| ("expected", v))
            .into_iter()
            .collect()
    }
}

/// Looks up a dotted path (`a.b.0`) in instance variables.
pub(crate) fn lookup<'a>(vars: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut current = vars.get(parts.next()?)?;
    for part in parts {
        current = match current {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// A value as text for string comparisons: strings as is, numbers and the rest as JSON.
pub(super) fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A value as a list of strings: a list's items, or the single value.
pub(super) fn as_text_list(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().map(as_text).collect(),
        other => vec![as_text(other)],
    }
}

/// Why `value` cannot serve as text to compare an answer with (one string, or
/// a non-empty list of alternatives), if it cannot; `needle` also refuses empty
/// text, which every answer contains.
pub(super) fn text_problem(value: &Value, needle: bool) -> Option<String> {
    let scalar = |v: &Value| match v {
        Value::Null | Value::Array(_) | Value::Object(_) => Some(format!(
            "holds {}, which cannot be compared with text",
            crate::text::json_kind(v)
        )),
        Value::String(s) if needle && s.trim().is_empty() => {
            Some("holds an empty string: every answer contains it".to_owned())
        }
        _ => None,
    };
    match value {
        Value::Array(items) if items.is_empty() => {
            Some("is an empty list: there is nothing to compare with".to_owned())
        }
        Value::Array(items) => items
            .iter()
            .find_map(scalar)
            .map(|p| format!("{p} (in a list)")),
        other => scalar(other).map(|p| p.replacen("holds", "is", 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_paths_reach_into_maps_and_lists() {
        let vars: Map<String, Value> =
            serde_json::from_str(r#"{"a": {"b": [10, {"c": "x"}]}}"#).unwrap();
        assert_eq!(lookup(&vars, "a.b.0"), Some(&Value::from(10)));
        assert_eq!(lookup(&vars, "a.b.1.c"), Some(&Value::from("x")));
        assert_eq!(lookup(&vars, "a.z"), None);
        assert_eq!(lookup(&vars, "a.b.7"), None);
    }

    #[test]
    fn text_problems_name_empty_and_non_text_values() {
        let p = |v: Value, needle| text_problem(&v, needle);
        assert_eq!(p(Value::from("x"), true), None);
        assert_eq!(p(serde_json::json!(["a", 1]), true), None);
        assert!(
            p(serde_json::json!([]), false)
                .unwrap()
                .contains("empty list")
        );
        assert!(p(Value::from(" "), true).unwrap().contains("empty string"));
        assert_eq!(p(Value::from(""), false), None);
        assert!(
            p(serde_json::json!({"a": 1}), false)
                .unwrap()
                .contains("an object")
        );
        assert!(
            p(serde_json::json!(["a", ""]), true)
                .unwrap()
                .contains("in a list")
        );
    }
}
