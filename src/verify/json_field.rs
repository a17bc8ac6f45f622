//! `json_field`: the answer is JSON that satisfies a JSON Schema and whose
//! fields, addressed by JSON pointer, equal instance variables with typed
//! equality (numbers compare by value: `3` equals `3.0`, never `"3"`; with
//! `tolerance` or `relative_tolerance`, within it, as the `numeric` rule).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::expected::lookup;
use super::kind::RuleKind;
use super::numeric::Tolerance;
use super::{BuildContext, FailureKind, Reads, ReadsText, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::text::{clip, quote};

struct JsonField {
    validator: Option<jsonschema::Validator>,
    fields: Vec<(String, String)>,
    /// Numbers compare within this; exact by default.
    tolerance: Tolerance,
}

/// Reads and compiles a JSON Schema file relative to the spec directory.
pub(super) fn load_schema(
    path: &str,
    cx: &BuildContext,
    key: &str,
) -> Result<jsonschema::Validator, Diagnostic> {
    super::read_schema(cx.spec_dir, path)
        .map(|(_, validator)| validator)
        .map_err(|e| cx.error(ErrorKind::Schema, key, e.to_string()))
}

/// `json_field`: the JSON answer satisfies `schema` and each JSON pointer in
/// `fields` equals its variable (numbers by value, within the tolerances if
/// given; types strict).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct JsonFieldKeys {
    /// JSON Schema file the answer must satisfy, relative to the spec.
    pub schema: Option<String>,
    /// JSON pointer -> instance variable to compare.
    pub fields: Option<BTreeMap<String, String>>,
    /// Absolute tolerance for numbers (default 0).
    pub tolerance: Option<f64>,
    /// Relative tolerance for numbers, a fraction of the expected value (default 0).
    pub relative_tolerance: Option<f64>,
}

impl RuleKind for JsonFieldKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let validator = self
            .schema
            .as_deref()
            .map(|p| load_schema(p, cx, "schema"))
            .transpose()?;
        let fields: Vec<(String, String)> = self.fields.unwrap_or_default().into_iter().collect();
        for (pointer, _) in &fields {
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                let at = cx.map.locate_key(crate::format::key_path![
                    "verify",
                    cx.index,
                    "fields",
                    pointer.as_str()
                ]);
                return Err(Diagnostic::new(
                    ErrorKind::Invalid,
                    at,
                    format!("`{pointer}` is not a JSON pointer"),
                )
                .with_help(format!("write \"/{pointer}\"")));
            }
        }
        if validator.is_none() && fields.is_empty() {
            return Err(cx.missing(cx.rule, "fields", "{ \"/route_id\" = \"answer_id\" }"));
        }
        let tolerance = Tolerance::from_keys(self.tolerance, self.relative_tolerance, cx, 0.0)?;
        Ok(Box::new(JsonField {
            validator,
            fields,
            tolerance,
        }))
    }
}

/// Typed equality of `got` and `want`: numbers by value (within
/// `tolerance` of `want`), everything else structurally.
pub(super) fn typed_eq(got: &Value, want: &Value, tolerance: Tolerance) -> bool {
    match (got, want) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => tolerance.allows(x, y),
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| typed_eq(a, b, tolerance))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| typed_eq(v, w, tolerance)))
        }
        _ => got == want,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl JsonField {
    /// `, allowed error E` for a number compared with a tolerance.
    fn allowed(&self, want: &Value) -> String {
        match want.as_f64() {
            Some(w) if self.tolerance.allowed(w) > 0.0 => {
                format!(", allowed error {}", self.tolerance.allowed(w))
            }
            _ => String::new(),
        }
    }
}

impl Rule for JsonField {
    fn variables(&self) -> Vec<(&'static str, &str)> {
        self.fields
            .iter()
            .map(|(_, var)| ("fields", var.as_str()))
            .collect()
    }

    fn expected(&self, vars: &Map<String, Value>) -> Option<Value> {
        Some(Value::Object(
            self.fields
                .iter()
                .map(|(ptr, var)| {
                    (
                        ptr.clone(),
                        lookup(vars, var).cloned().unwrap_or(Value::Null),
                    )
                })
                .collect(),
        ))
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for JsonField {
    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let parsed: Value = match serde_json::from_str(answer) {
            Ok(v) => v,
            Err(e) => {
                return Verdict::failed(
                    FailureKind::InvalidJson,
                    format!("not valid JSON ({e}): «{}»", clip(answer, 80)),
                );
            }
        };
        if let Some(validator) = &self.validator {
            let errors: Vec<String> = validator
                .iter_errors(&parsed)
                .take(3)
                .map(|e| format!("at '{}': {e}", e.instance_path()))
                .collect();
            if !errors.is_empty() {
                return Verdict::failed(
                    FailureKind::SchemaMismatch,
                    format!("schema: {}", errors.join("; ")),
                );
            }
        }
        let mut problems = Vec::new();
        for (pointer, var) in &self.fields {
            let Some(want) = lookup(vars, var) else {
                return Verdict::fail(format!("the instance has no `{var}`"));
            };
            match parsed.pointer(pointer) {
                None => problems.push(format!(
                    "the JSON pointer `{pointer}` finds nothing in the answer (expected {})",
                    quote(want)
                )),
                Some(got) if typed_eq(got, want, self.tolerance) => {}
                Some(got) => problems.push(format!(
                    "{pointer}: expected {} ({}), got {} ({}){}",
                    quote(want),
                    type_name(want),
                    quote(got),
                    type_name(got),
                    self.allowed(want)
                )),
            }
        }
        if problems.is_empty() {
            Verdict::pass()
        } else {
            Verdict::fail(problems.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    const EXACT: Tolerance = Tolerance {
        absolute: 0.0,
        relative: 0.0,
    };

    #[test]
    fn typed_equality_compares_numbers_by_value_only() {
        assert!(typed_eq(&json!(3), &json!(3.0), EXACT));
        assert!(!typed_eq(&json!(3), &json!("3"), EXACT));
        assert!(typed_eq(
            &json!({"a": [1, 2.0]}),
            &json!({"a": [1.0, 2]}),
            EXACT
        ));
    }

    #[test]
    fn numbers_compare_within_the_tolerance() {
        let tolerance = |absolute, relative| Tolerance { absolute, relative };
        // (got, want, absolute, relative, equal?)
        let cases = [
            (json!(12.5), json!(12.5), 0.0, 0.0, true),
            (json!(12.504), json!(12.5), 0.0, 0.0, false),
            (json!(12.504), json!(12.5), 0.01, 0.0, true),
            (json!(12.52), json!(12.5), 0.01, 0.0, false),
            (json!(1001), json!(1000), 0.0, 0.001, true),
            (json!(1002), json!(1000), 0.0, 0.001, false),
            (json!(1002), json!(1000), 5.0, 0.001, true),
            (
                json!([1.001, {"p": 2}]),
                json!([1, {"p": 2.001}]),
                0.01,
                0.0,
                true,
            ),
            (json!("12.5"), json!(12.5), 1.0, 0.0, false),
        ];
        for (got, want, absolute, relative, equal) in cases {
            assert_eq!(
                typed_eq(&got, &want, tolerance(absolute, relative)),
                equal,
                "{got} vs {want} within {absolute} / {relative}"
            );
        }
    }

    /// A rule comparing `pointer` with variable `var`, and vars where `var` is `value`.
    fn rule(
        pointer: &str,
        var: &str,
        value: f64,
        absolute: f64,
    ) -> (JsonField, Map<String, Value>) {
        let rule = JsonField {
            validator: None,
            fields: vec![(pointer.into(), var.into())],
            tolerance: Tolerance {
                absolute,
                relative: 0.0,
            },
        };
        let vars = json!({ var: value }).as_object().unwrap().clone();
        (rule, vars)
    }

    #[test]
    fn a_failure_names_the_allowed_error() {
        let (rule, vars) = rule("/total", "total", 12.5, 0.01);
        assert!(rule.verify(r#"{"total": 12.504}"#, "", &vars).passed);
        let v = rule.verify(r#"{"total": 12.6}"#, "", &vars);
        assert_eq!(
            v.detail,
            "/total: expected 12.5 (a number), got 12.6 (a number), allowed error 0.01"
        );
    }

    #[test]
    fn fields_are_compared_and_explained() {
        let (rule, vars) = rule("/route_id", "answer_id", 3.0, 0.0);
        assert!(rule.verify(r#"{"route_id": 3}"#, "", &vars).passed);
        let v = rule.verify(r#"{"route_id": "3"}"#, "", &vars);
        assert!(v.detail.contains("a string"), "{}", v.detail);
        assert_eq!(
            rule.verify("{oops", "", &vars).failure,
            Some(FailureKind::InvalidJson)
        );
    }

    #[test]
    fn a_pointer_that_finds_nothing_is_named() {
        let (rule, vars) = rule("/route/id", "answer_id", 3.0, 0.0);
        let v = rule.verify(r#"{"route": {"name": "A"}}"#, "", &vars);
        assert_eq!(
            v.detail,
            "the JSON pointer `/route/id` finds nothing in the answer (expected 3.0)"
        );
    }
}
