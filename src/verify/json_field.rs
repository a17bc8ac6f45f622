//! `json_field`: the answer is JSON that satisfies a JSON Schema and whose
//! fields, addressed by JSON pointer, equal instance variables with typed
//! equality (numbers compare by value: `3` equals `3.0`, never `"3"`).

use serde_json::{Map, Value};

use super::expected::lookup;
use super::{BuildContext, FailureKind, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::RuleDef;
use crate::text::{clip, quote};

struct JsonField {
    validator: Option<jsonschema::Validator>,
    fields: Vec<(String, String)>,
}

/// Reads and compiles a JSON Schema file relative to the spec directory.
pub fn load_schema(
    path: &str,
    cx: &BuildContext,
    key: &str,
) -> Result<jsonschema::Validator, Diagnostic> {
    super::read_schema(cx.spec_dir, path)
        .map(|(_, validator)| validator)
        .map_err(|e| cx.error(ErrorKind::Schema, key, e.to_string()))
}

/// Builds a `json_field` rule.
pub fn build(def: &RuleDef, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
    let validator = def
        .schema
        .as_deref()
        .map(|p| load_schema(p, cx, "schema"))
        .transpose()?;
    let fields: Vec<(String, String)> =
        def.fields.clone().unwrap_or_default().into_iter().collect();
    for (pointer, _) in &fields {
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            let at = cx.map.locate_key(crate::key_path![
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
        return Err(cx.missing(&def.rule, "fields", "{ \"/route_id\" = \"answer_id\" }"));
    }
    Ok(Box::new(JsonField { validator, fields }))
}

/// Typed equality: numbers by value, everything else structurally.
pub fn typed_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| typed_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| typed_eq(v, w)))
        }
        _ => a == b,
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
                None => problems.push(format!("{pointer}: missing, expected {}", quote(want))),
                Some(got) if typed_eq(got, want) => {}
                Some(got) => problems.push(format!(
                    "{pointer}: expected {} ({}), got {} ({})",
                    quote(want),
                    type_name(want),
                    quote(got),
                    type_name(got)
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

    #[test]
    fn typed_equality_compares_numbers_by_value_only() {
        assert!(typed_eq(&serde_json::json!(3), &serde_json::json!(3.0)));
        assert!(!typed_eq(&serde_json::json!(3), &serde_json::json!("3")));
        assert!(typed_eq(
            &serde_json::json!({"a": [1, 2.0]}),
            &serde_json::json!({"a": [1.0, 2]})
        ));
    }

    #[test]
    fn fields_are_compared_and_explained() {
        let rule = JsonField {
            validator: None,
            fields: vec![("/route_id".into(), "answer_id".into())],
        };
        let vars: Map<String, Value> = serde_json::from_str(r#"{"answer_id": 3}"#).unwrap();
        assert!(rule.verify(r#"{"route_id": 3}"#, "", &vars).passed);
        let v = rule.verify(r#"{"route_id": "3"}"#, "", &vars);
        assert!(v.detail.contains("a string"), "{}", v.detail);
        assert_eq!(
            rule.verify("{oops", "", &vars).failure,
            Some(FailureKind::InvalidJson)
        );
    }
}
