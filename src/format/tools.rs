//! Tool (function) definitions: the spec's `[[tools]]` tables, the JSON
//! lists of `tools_file` and of a dataset field (OpenAI's
//! `{"type": "function", "function": {...}}` form or the bare
//! `{name, description, parameters}` one), `[request] tool_choice`, and the
//! checks every definition passes before a request carries it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool as written in a spec's `[[tools]]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    /// The function's name, unique among the instance's tools.
    pub name: Option<String>,
    /// What the function does, for the model.
    pub description: Option<String>,
    /// Its arguments as a JSON Schema object (BFCL's type names such as
    /// `dict` and `float` are accepted and kept).
    #[schemars(with = "Option<Map<String, Value>>")]
    pub parameters: Option<Value>,
    /// With `[agent]`: the tool's implementation, Rhai seeing `args` (the
    /// call's arguments) and `state` (changes persist); its value is the
    /// result, `throw "why"` an error the model is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// With `[agent]`: the implementation in a `.rhai` file, relative to the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_file: Option<String>,
}

/// A checked tool, as a request carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The function's name.
    pub name: String,
    /// What it does (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The JSON Schema of its arguments, as written.
    pub parameters: Value,
}

impl Tool {
    /// The parameters with BFCL's Python type names replaced by JSON
    /// Schema's, as wire formats that validate schemas need them.
    pub fn standard_parameters(&self) -> Value {
        standard_types(&self.parameters)
    }
}

/// `[request] tool_choice`: whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `auto`, `required` or `none`.
    Mode(ToolMode),
    /// `{ function = "name" }`: this tool and no other.
    Function {
        /// The tool's name.
        function: String,
    },
}

/// The named `tool_choice` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// The model decides (the APIs' default).
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call a tool.
    None,
}

/// What is wrong with one tool definition: which key, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tool {index}{}: {message}", name.as_ref().map(|n| format!(" (`{n}`)")).unwrap_or_default())]
pub(crate) struct ToolProblem {
    /// 0-based position in its list.
    pub index: usize,
    /// The tool's name, when it has one.
    pub name: Option<String>,
    /// The key at fault: `name`, `parameters`, or empty for the whole entry.
    pub key: &'static str,
    /// Why.
    pub message: String,
}

/// Every problem of one list of tools, shown joined with `; `.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub(crate) struct ToolProblems(pub Vec<ToolProblem>);

/// Reads a JSON list of tools in OpenAI's wrapped form or the bare one.
pub(crate) fn parse_tool_list(value: &Value) -> Result<Vec<ToolDef>, ToolProblem> {
    let Value::Array(items) = value else {
        return Err(problem(0, None, "", "tools must be a JSON list of objects"));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| parse_one(index, item))
        .collect()
}

fn parse_one(index: usize, item: &Value) -> Result<ToolDef, ToolProblem> {
    let bad = |message: &str| problem(index, None, "", message);
    let mut object = item.as_object().ok_or_else(|| bad("not an object"))?;
    if let Some(kind) = object.get("type") {
        if kind != "function" {
            return Err(bad("`type` must be \"function\""));
        }
        object = object
            .get("function")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("`type = \"function\"` needs a `function` object"))?;
    }
    let text = |key: &str| -> Result<Option<String>, ToolProblem> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(&format!("`{key}` must be a string"))),
        }
    };
    Ok(ToolDef {
        name: text("name")?,
        description: text("description")?,
        parameters: object.get("parameters").cloned(),
        ..ToolDef::default()
    })
}

fn problem(index: usize, name: Option<&str>, key: &'static str, message: &str) -> ToolProblem {
    ToolProblem {
        index,
        name: name.map(str::to_owned),
        key,
        message: message.to_owned(),
    }
}

/// Checks `defs` (indices start at `offset`, names already taken in `taken`)
/// and returns the tools, or every problem found.
pub(crate) fn check_tools(
    defs: &[ToolDef],
    offset: usize,
    taken: &[Tool],
) -> Result<Vec<Tool>, Vec<ToolProblem>> {
    let mut tools: Vec<Tool> = Vec::new();
    let mut problems = Vec::new();
    for (i, def) in defs.iter().enumerate() {
        let index = offset + i;
        let name = def.name.as_deref().map(str::trim).unwrap_or("");
        if name.is_empty() {
            problems.push(problem(index, None, "", "a tool needs a `name`"));
            continue;
        }
        if taken.iter().chain(&tools).any(|t| t.name == name) {
            let message = format!("the name `{name}` is taken by an earlier tool");
            problems.push(problem(index, Some(name), "name", &message));
            continue;
        }
        let parameters = def
            .parameters
            .clone()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
        if let Some(message) = parameters_problem(&parameters) {
            problems.push(problem(index, Some(name), "parameters", &message));
            continue;
        }
        tools.push(Tool {
            name: name.to_owned(),
            description: def.description.clone().unwrap_or_default(),
            parameters,
        });
    }
    if problems.is_empty() {
        Ok(tools)
    } else {
        Err(problems)
    }
}

/// Why `parameters` is not a JSON Schema object, if it is not.
fn parameters_problem(parameters: &Value) -> Option<String> {
    if !parameters.is_object() {
        return Some("`parameters` must be a JSON Schema object".into());
    }
    let standard = standard_types(parameters);
    if let Some(kind) = standard.get("type")
        && kind != "object"
    {
        return Some(format!(
            "`parameters` must describe an object (`type = \"object\"`), not {kind}"
        ));
    }
    jsonschema::meta::validate(&standard)
        .err()
        .map(|e| format!("`parameters` is not a valid JSON Schema: {e}"))
}

/// `schema` with BFCL's Python type names (`dict`, `float`, `tuple`, `any`,
/// ...) replaced by JSON Schema's, for the meta-check alone: the definition
/// keeps its own names, which BFCL's type semantics need.
fn standard_types(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let value = match (key.as_str(), value) {
                    ("type", Value::String(t)) => Value::String(standard_type(t).to_owned()),
                    _ => standard_types(value),
                };
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(standard_types).collect()),
        other => other.clone(),
    }
}

fn standard_type(name: &str) -> &str {
    match name {
        "dict" | "HashMap" | "Hashtable" => "object",
        "float" | "double" => "number",
        "tuple" | "list" | "ArrayList" | "Array" => "array",
        "any" | "Any" | "char" | "String" => "string",
        "bool" => "boolean",
        "long" | "short" | "byte" | "Bigint" => "integer",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str, parameters: Value) -> ToolDef {
        ToolDef {
            name: Some(name.into()),
            description: None,
            parameters: Some(parameters),
            ..ToolDef::default()
        }
    }

    #[test]
    fn both_list_forms_parse_alike() {
        let params = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let wrapped =
            json!([{"type": "function", "function": {"name": "w", "parameters": params}}]);
        let bare = json!([{"name": "w", "parameters": params}]);
        assert_eq!(
            parse_tool_list(&wrapped).unwrap(),
            parse_tool_list(&bare).unwrap()
        );
        let bad = parse_tool_list(&json!([{"name": "w"}, 3])).unwrap_err();
        assert_eq!(bad.to_string(), "tool 1: not an object");
        assert!(parse_tool_list(&json!({"name": "w"})).is_err());
    }

    #[test]
    fn checks_name_duplicates_and_schema() {
        let ok = json!({"type": "object", "properties": {}});
        let cases: [(Vec<ToolDef>, &str); 5] = [
            (vec![ToolDef::default()], "tool 0: a tool needs a `name`"),
            (
                vec![def("a", ok.clone()), def("a", ok.clone())],
                "tool 1 (`a`): the name `a` is taken",
            ),
            (vec![def("a", json!([]))], "must be a JSON Schema object"),
            (vec![def("a", json!({"type": "string"}))], "not \"string\""),
            (
                vec![def("a", json!({"type": "object", "properties": 3}))],
                "not a valid JSON Schema",
            ),
        ];
        for (defs, want) in cases {
            let problems = check_tools(&defs, 0, &[]).unwrap_err();
            assert!(problems[0].to_string().contains(want), "{problems:?}");
        }
    }

    #[test]
    fn bfcl_type_names_pass_and_are_kept() {
        let bfcl =
            json!({"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]});
        let tools = check_tools(&[def("f", bfcl.clone())], 0, &[]).unwrap();
        assert_eq!(tools[0].parameters, bfcl);
        let none = check_tools(
            &[ToolDef {
                name: Some("g".into()),
                ..ToolDef::default()
            }],
            0,
            &[],
        );
        assert_eq!(none.unwrap()[0].parameters["type"], "object");
    }

    #[test]
    fn tool_choice_reads_modes_and_a_function() {
        let read = |s: &str| toml::from_str::<Map<String, Value>>(s).unwrap()["c"].clone();
        let mode: ToolChoice = serde_json::from_value(read("c = \"required\"")).unwrap();
        assert_eq!(mode, ToolChoice::Mode(ToolMode::Required));
        let named: ToolChoice = serde_json::from_value(read("c = { function = \"f\" }")).unwrap();
        assert_eq!(
            named,
            ToolChoice::Function {
                function: "f".into()
            }
        );
        assert!(serde_json::from_value::<ToolChoice>(read("c = \"maybe\"")).is_err());
    }
}
