//! Checking one tool call against one expected call, with the semantics of
//! BFCL's AST checker (`datasets/bfcl/README.md` states them): the name, the
//! schema's required arguments, then each argument's type and value in the
//! call's order, then every expected argument not marked optional (`""`).
//! Shared by `tool_call` and `tool_args`.

use serde_json::{Map, Value};

use super::call_types::{PyType, acceptable_type, declared_name, py_type, schema_type, type_check};
use super::{BuildContext, FailureKind};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::{Tool, ToolCall};

/// One expected call: the tool's name and, per argument, its acceptable
/// values (`""` among them: the argument may be left out).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ExpectedCall {
    /// The tool's name.
    pub name: String,
    /// Argument name to its list of acceptable values.
    pub arguments: Map<String, Value>,
}

/// Reads BFCL's possible-answer form `[{name: {arg: [acceptable values]}}]`.
pub(super) fn parse_calls(value: &Value) -> Result<Vec<ExpectedCall>, CallsError> {
    let Value::Array(items) = value else {
        return Err(CallsError(format!(
            "is {}, not a list of calls `[{{name: {{argument: [acceptable values]}}}}]`",
            crate::text::json_kind(value)
        )));
    };
    let mut calls = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let call = match item {
            Value::Object(m) if m.len() == 1 => m.iter().next(),
            // BFCL's irrelevance rows decode to `[{}]`: no call.
            Value::Object(m) if m.is_empty() => continue,
            _ => None,
        };
        let Some((name, arguments)) = call else {
            return Err(CallsError(format!(
                "call {}: is not an object with one key, the tool's name",
                i + 1
            )));
        };
        calls.push(ExpectedCall {
            name: name.clone(),
            arguments: parse_arguments(arguments)
                .map_err(|e| CallsError(format!("call {} `{name}`: {e}", i + 1)))?,
        });
    }
    Ok(calls)
}

/// Reads `{arg: [acceptable values]}`: each argument's value must be a list.
pub(super) fn parse_arguments(value: &Value) -> Result<Map<String, Value>, CallsError> {
    let Value::Object(arguments) = value else {
        return Err(CallsError("the arguments are not an object".to_owned()));
    };
    match arguments.iter().find(|(_, v)| !v.is_array()) {
        Some((arg, _)) => Err(CallsError(format!(
            "argument `{arg}`: give a list of acceptable values (`[\"\"]` marks it optional)"
        ))),
        None => Ok(arguments.clone()),
    }
}

/// Why expected calls cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(super) struct CallsError(String);

/// Why a dict argument matches no acceptable dict.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct DictMismatch(String);

/// Why a call does not match an expected one: the failure's kind, the
/// argument at fault (if one is) and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Mismatch {
    /// The failure's category.
    pub kind: FailureKind,
    /// The argument at fault.
    pub argument: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Mismatch {
    fn new(kind: FailureKind, argument: Option<&str>, message: String) -> Mismatch {
        Mismatch {
            kind,
            argument: argument.map(str::to_owned),
            message,
        }
    }

    /// The mismatch as text: `argument `x`: why`, or the why alone.
    pub(super) fn describe(&self) -> String {
        match &self.argument {
            Some(arg) => format!("argument `{arg}`: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// How values are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Comparison {
    /// Numbers within this distance are equal (BFCL: 0).
    pub tolerance: f64,
    /// Strings are compared after BFCL's normalization.
    pub normalize: bool,
    /// Arguments the expected call does not list are allowed (`tool_args`).
    pub partial: bool,
}

impl Comparison {
    /// Reads a rule's `tolerance` and `normalize` keys (defaults 0 and true, as
    /// BFCL's).
    pub(super) fn from_keys(
        tolerance: Option<f64>,
        normalize: Option<bool>,
        partial: bool,
        cx: &BuildContext,
    ) -> Result<Comparison, Diagnostic> {
        let tolerance = tolerance.unwrap_or(0.0);
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(cx.error(
                ErrorKind::Invalid,
                "tolerance",
                "tolerance must be a non-negative number",
            ));
        }
        Ok(Comparison {
            tolerance,
            normalize: normalize.unwrap_or(true),
            partial,
        })
    }
}

/// BFCL's string normalization: drop spaces and `,./-_*^`, lower-case, `'` as `"`.
pub(super) fn normalize_string(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect();
    kept.to_lowercase().replace('\'', "\"")
}

impl Comparison {
    /// Python's `==`, with numbers within the tolerance equal (a bool equals 0 or 1).
    fn equal(&self, a: &Value, b: &Value) -> bool {
        let number = |v: &Value| match v {
            Value::Number(n) => n.as_f64(),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        };
        match (a, b) {
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| self.equal(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| self.equal(v, w)))
            }
            _ => match (number(a), number(b)) {
                (Some(x), Some(y)) => x == y || (x - y).abs() <= self.tolerance,
                _ => a == b,
            },
        }
    }

    /// A string (or a list's string items, one level) normalized when the rule normalizes.
    fn standard(&self, value: &Value) -> Value {
        match value {
            Value::String(s) if self.normalize => Value::String(normalize_string(s)),
            other => other.clone(),
        }
    }

    /// An acceptable list value, its string items normalized; `""` is an empty list
    /// (and any other string its characters), as Python iterates a string.
    fn standard_list(&self, value: &Value) -> Vec<Value> {
        match value {
            Value::Array(items) => items.iter().map(|v| self.standard(v)).collect(),
            Value::String(s) => s
                .chars()
                .map(|c| self.standard(&Value::from(c.to_string())))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn one_of(&self, value: &Value, acceptable: &[Value]) -> bool {
        acceptable.iter().any(|a| self.equal(value, a))
    }

    /// Checks `call` against `expected`, typing its arguments by `tool`'s schema.
    pub(super) fn check(
        &self,
        call: &ToolCall,
        expected: &ExpectedCall,
        tool: Option<&Tool>,
    ) -> Result<(), Mismatch> {
        if call.name != expected.name {
            return Err(Mismatch::new(
                FailureKind::WrongTool,
                None,
                format!("expected a call of `{}`", expected.name),
            ));
        }
        let arguments = match (&call.invalid, &call.arguments) {
            (Some(why), _) => {
                return Err(Mismatch::new(
                    FailureKind::InvalidToolArguments,
                    None,
                    format!("the arguments are not valid JSON: {why}"),
                ));
            }
            (None, Value::Object(m)) => m,
            (None, other) => {
                return Err(Mismatch::new(
                    FailureKind::InvalidToolArguments,
                    None,
                    format!(
                        "the arguments are {}, not an object",
                        crate::text::json_kind(other)
                    ),
                ));
            }
        };
        let parameters = tool.map(|t| &t.parameters);
        let properties = parameters
            .and_then(|p| p.get("properties"))
            .and_then(Value::as_object);
        let required = parameters
            .and_then(|p| p.get("required"))
            .and_then(Value::as_array);
        let required = required.filter(|_| !self.partial);
        for name in required.into_iter().flatten().filter_map(Value::as_str) {
            if !arguments.contains_key(name) {
                return Err(Mismatch::new(
                    FailureKind::MissingArgument,
                    Some(name),
                    "required, but missing".to_owned(),
                ));
            }
        }
        for (name, value) in arguments {
            let schema = properties.and_then(|p| p.get(name));
            let Some(acceptable) = expected.arguments.get(name).and_then(Value::as_array) else {
                if self.partial {
                    continue;
                }
                return Err(Mismatch::new(
                    FailureKind::UnexpectedArgument,
                    Some(name),
                    "not expected".to_owned(),
                ));
            };
            if properties.is_some() && schema.is_none() {
                return Err(Mismatch::new(
                    FailureKind::UnexpectedArgument,
                    Some(name),
                    "not a parameter of the tool".to_owned(),
                ));
            }
            self.argument(value, acceptable, schema)
                .map_err(|(kind, message)| Mismatch::new(kind, Some(name), message))?;
        }
        for (name, acceptable) in &expected.arguments {
            let optional = acceptable
                .as_array()
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some("")));
            if !arguments.contains_key(name) && !optional {
                return Err(Mismatch::new(
                    FailureKind::MissingArgument,
                    Some(name),
                    "expected, but missing".to_owned(),
                ));
            }
        }
        Ok(())
    }

    /// One argument's type (from `schema`, else from its acceptable values) and value.
    fn argument(
        &self,
        value: &Value,
        acceptable: &[Value],
        schema: Option<&Value>,
    ) -> Result<(), (FailureKind, String)> {
        let declared = schema.map_or_else(|| acceptable_type(acceptable), schema_type);
        let mut value = value.clone();
        if declared == Some(PyType::Float) && py_type(&value) == PyType::Int {
            value = Value::from(value.as_f64().unwrap_or_default());
        }
        let variable = match declared {
            Some(declared) => {
                let items = schema
                    .filter(|_| declared == PyType::List)
                    .and_then(|s| s.get("items"))
                    .and_then(schema_type);
                let named = declared_name(schema, declared);
                type_check(&value, acceptable, (declared, named), items)?
            }
            None => true,
        };
        let wrong = |what: &str| {
            let shown: Vec<String> = acceptable.iter().map(Value::to_string).collect();
            (
                FailureKind::WrongArgument,
                format!("{value} is not one of [{}]{what}", shown.join(", ")),
            )
        };
        if variable {
            return if self.one_of(&value, acceptable) {
                Ok(())
            } else {
                Err(wrong(""))
            };
        }
        let items = schema.and_then(|s| s.get("items")).and_then(schema_type);
        match (declared, &value) {
            (Some(PyType::Dict), Value::Object(m)) => self
                .dict(m, acceptable)
                .map_err(|why| (FailureKind::WrongArgument, why.to_string())),
            (Some(PyType::List), Value::Array(list)) if items == Some(PyType::Dict) => self
                .list_of_dicts(list, acceptable)
                .map_err(|why| (FailureKind::WrongArgument, why.to_string())),
            (Some(PyType::Str), Value::String(_)) => {
                let mine = self.standard(&value);
                let ok = acceptable
                    .iter()
                    .any(|a| a.is_string() && self.standard(a) == mine);
                if ok { Ok(()) } else { Err(wrong("")) }
            }
            (Some(PyType::List), Value::Array(_)) => {
                let mine = Value::Array(self.standard_list(&value));
                let ok = acceptable
                    .iter()
                    .any(|a| self.equal(&mine, &Value::Array(self.standard_list(a))));
                if ok { Ok(()) } else { Err(wrong("")) }
            }
            _ => {
                if self.one_of(&value, acceptable) {
                    Ok(())
                } else {
                    Err(wrong(""))
                }
            }
        }
    }

    /// BFCL's dict check: against each acceptable dict (skipping `""`), every
    /// key acceptable, every value acceptable, every non-optional key present.
    fn dict(&self, value: &Map<String, Value>, acceptable: &[Value]) -> Result<(), DictMismatch> {
        let mut why = DictMismatch("no acceptable dict".to_owned());
        for expected in acceptable.iter().filter(|a| a.as_str() != Some("")) {
            match self.one_dict(value, expected) {
                Ok(()) => return Ok(()),
                Err(e) => why = e,
            }
        }
        Err(why)
    }

    fn one_dict(&self, value: &Map<String, Value>, expected: &Value) -> Result<(), DictMismatch> {
        let empty = Map::new();
        let expected = expected.as_object().unwrap_or(&empty);
        for (key, item) in value {
            let Some(allowed) = expected.get(key) else {
                return Err(DictMismatch(format!("key `{key}` is not expected")));
            };
            let allowed: Vec<Value> = match allowed {
                Value::Array(a) => a.iter().map(|v| self.standard(v)).collect(),
                other => self.standard_list(other),
            };
            if !self.one_of(&self.standard(item), &allowed) {
                return Err(DictMismatch(format!(
                    "key `{key}`: {item} is not one of {}",
                    Value::Array(allowed)
                )));
            }
        }
        for (key, allowed) in expected {
            let optional = allowed
                .as_array()
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some("")));
            if !value.contains_key(key) && !optional {
                return Err(DictMismatch(format!("key `{key}` is missing")));
            }
        }
        Ok(())
    }

    /// BFCL's list-of-dicts check: as many dicts as an acceptable list, the
    /// i-th dict checked against the i-th acceptable one.
    fn list_of_dicts(&self, list: &[Value], acceptable: &[Value]) -> Result<(), DictMismatch> {
        let mut why = DictMismatch("no acceptable list of dicts".to_owned());
        for expected in acceptable {
            let expected: Vec<Value> = match expected {
                Value::Array(a) => a.clone(),
                Value::String(s) => s.chars().map(|c| Value::from(c.to_string())).collect(),
                _ => Vec::new(),
            };
            if expected.len() != list.len() {
                why = DictMismatch(format!("{} dicts, expected {}", list.len(), expected.len()));
                continue;
            }
            let checked =
                list.iter()
                    .zip(&expected)
                    .enumerate()
                    .try_for_each(|(i, (item, want))| {
                        let item = item
                            .as_object()
                            .ok_or_else(|| DictMismatch(format!("item {}: not a dict", i + 1)))?;
                        self.dict(item, std::slice::from_ref(want))
                            .map_err(|e| DictMismatch(format!("item {}: {e}", i + 1)))
                    });
            match checked {
                Ok(()) => return Ok(()),
                Err(e) => why = e,
            }
        }
        Err(why)
    }
}

/// A call as shown in reports: `name({"arg": value})`.
pub(super) fn show_call(call: &ToolCall) -> String {
    match &call.arguments {
        Value::String(text) => format!("{}({text})", call.name),
        arguments => format!("{}({arguments})", call.name),
    }
}

/// The tool named `name` among `tools`.
pub(super) fn find_tool<'a>(tools: &'a [Tool], name: &str) -> Option<&'a Tool> {
    tools.iter().find(|t| t.name == name)
}
