//! BFCL's type checks of a call's arguments: Python's types as
//! `json.loads` gives them, the schema's type names, and the "variable"
//! rule (a value typed like the acceptable values, not like the schema).

use serde_json::Value;

use super::FailureKind;

/// Python's types, as `json.loads` gives them: what BFCL's type checks see.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PyType {
    Str,
    Int,
    Float,
    Bool,
    List,
    Dict,
    None,
}

pub(super) fn py_type(value: &Value) -> PyType {
    match value {
        Value::String(_) => PyType::Str,
        Value::Number(n) if n.is_f64() => PyType::Float,
        Value::Number(_) => PyType::Int,
        Value::Bool(_) => PyType::Bool,
        Value::Array(_) => PyType::List,
        Value::Object(_) => PyType::Dict,
        Value::Null => PyType::None,
    }
}

/// The Python type a schema's type name stands for (BFCL's and JSON Schema's names).
pub(super) fn schema_type(schema: &Value) -> Option<PyType> {
    Some(match schema.get("type")?.as_str()? {
        "string" | "any" => PyType::Str,
        "integer" => PyType::Int,
        "float" | "number" => PyType::Float,
        "boolean" => PyType::Bool,
        "array" | "tuple" => PyType::List,
        "dict" | "object" => PyType::Dict,
        _ => return None,
    })
}

/// The type of the first acceptable value that is not `""`.
pub(super) fn acceptable_type(acceptable: &[Value]) -> Option<PyType> {
    acceptable
        .iter()
        .find(|v| v.as_str() != Some(""))
        .map(py_type)
}

/// BFCL's type check of `value` against the `declared` type (with `items`,
/// the declared item type of a list): `Ok(true)` when the value is a
/// "variable" (typed like the acceptable values, not like the schema), which
/// is then compared exactly. `named` is how a failure names the declared
/// type ([`declared_name`]).
pub(super) fn type_check(
    value: &Value,
    acceptable: &[Value],
    (declared, named): (PyType, &str),
    items: Option<PyType>,
) -> Result<bool, (FailureKind, String)> {
    let listed = acceptable_type(acceptable);
    let variable = listed.is_some_and(|t| t != declared);
    let actual = py_type(value);
    let mut nested_failed = false;
    if actual == declared {
        let Some(items) = items else {
            return Ok(variable);
        };
        let item_ok = |item: &Value, allowed: &[Value]| {
            let t = py_type(item);
            t == items || acceptable_type(allowed).is_some_and(|a| a == t)
        };
        let list = value.as_array().map_or(&[][..], Vec::as_slice);
        let fits = acceptable.iter().any(|a| match a {
            Value::Array(allowed) => list.iter().all(|item| item_ok(item, allowed)),
            _ => true,
        });
        if fits {
            return Ok(variable);
        }
        nested_failed = true;
    }
    if nested_failed {
        return Err((
            FailureKind::WrongArgumentType,
            format!("{value} has items that are not {}", type_name(items)),
        ));
    }
    if listed == Some(actual) {
        return Ok(true);
    }
    Err((
        FailureKind::WrongArgumentType,
        format!("{value} is {}, expected {named}", type_name(Some(actual)),),
    ))
}

/// How a failure names the type `schema` declares: JSON Schema's `number`
/// takes integers and floats alike, so it is "a number", not "a float".
pub(super) fn declared_name(schema: Option<&Value>, declared: PyType) -> &'static str {
    match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("number") => "a number",
        _ => type_name(Some(declared)),
    }
}

fn type_name(t: Option<PyType>) -> &'static str {
    match t {
        Some(PyType::Str) => "a string",
        Some(PyType::Int) => "an integer",
        Some(PyType::Float) => "a float",
        Some(PyType::Bool) => "a boolean",
        Some(PyType::List) => "a list",
        Some(PyType::Dict) => "a dict",
        Some(PyType::None) => "null",
        None => "of the declared type",
    }
}
