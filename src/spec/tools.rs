//! A spec's tools: the inline `[[tools]]` and `tools_file`'s list, checked
//! when the spec loads, and a dataset field's list (`tools_var`), checked per
//! instance; `[request] tool_choice` must name a tool the request carries.

use std::path::Path;

use serde_json::{Map, Value};

use super::Spec;
use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::locate::{Key, SourceMap};
use crate::format::{
    SpecFile, Tool, ToolChoice, ToolDef, ToolProblem, ToolProblems, check_tools, key_path,
    parse_tool_list,
};

/// The spec's own tools (inline, then `tools_file`'s), and a diagnostic per problem.
pub(super) fn static_tools(
    def: &SpecFile,
    map: &SourceMap,
    spec_dir: &Path,
) -> (Vec<Tool>, Vec<Diagnostic>) {
    let mut errors = Vec::new();
    let mut tools = check_tools(&def.tools, 0, &[]).unwrap_or_else(|problems| {
        errors.extend(problems.iter().map(|p| inline_diagnostic(map, p)));
        Vec::new()
    });
    if let Some(rel) = &def.tools_file {
        match file_tools(spec_dir, rel, &tools) {
            Ok(more) => tools.extend(more),
            Err(FileProblem::Parse(d)) => errors.push(d),
            Err(FileProblem::Tools(message)) => errors.push(Diagnostic::new(
                ErrorKind::Invalid,
                map.locate(key_path!["tools_file"]),
                format!("{rel}: {message}"),
            )),
        }
    }
    let any = !def.tools.is_empty() || def.tools_file.is_some() || def.tools_var.is_some();
    let request = &def.request;
    for (set, key) in [
        (request.tool_choice.is_some(), "tool_choice"),
        (request.parallel_tool_calls.is_some(), "parallel_tool_calls"),
    ] {
        if set && !any {
            errors.push(Diagnostic::new(
                ErrorKind::Invalid,
                map.locate(key_path!["request", key]),
                format!("`{key}` needs tools: add [[tools]], `tools_file` or `tools_var`"),
            ));
        }
    }
    if def.tools_var.is_none()
        && errors.is_empty()
        && let Some(message) = choice_problem(request.tool_choice.as_ref(), &tools)
    {
        errors.push(Diagnostic::new(
            ErrorKind::Invalid,
            map.locate(key_path!["request", "tool_choice"]),
            message,
        ));
    }
    (tools, errors)
}

/// An inline tool's problem at its key.
fn inline_diagnostic(map: &SourceMap, p: &ToolProblem) -> Diagnostic {
    let mut path = vec![Key::Name("tools"), Key::Index(p.index)];
    if !p.key.is_empty() {
        path.push(Key::Name(p.key));
    }
    Diagnostic::new(ErrorKind::Invalid, map.locate(&path), p.to_string())
}

/// Why a `tools_file` could not give its tools.
enum FileProblem {
    /// Unreadable or not JSON: located in that file when the parser says where.
    Parse(Diagnostic),
    /// The definitions' problems.
    Tools(ToolProblems),
}

fn file_tools(spec_dir: &Path, rel: &str, taken: &[Tool]) -> Result<Vec<Tool>, FileProblem> {
    let path = spec_dir.join(rel);
    let text = crate::files::read_text(&path, crate::files::FileKind::Tools).map_err(|e| {
        FileProblem::Parse(Diagnostic::io(&path, format!("cannot read tools: {e}")))
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        let location = Location {
            file: path.clone(),
            line: e.line().max(1),
            column: e.column().max(1),
        };
        // No line of the file is shown: `tools_file` may name any file on the machine.
        FileProblem::Parse(Diagnostic::new(
            ErrorKind::Invalid,
            location,
            format!("not JSON: {e}"),
        ))
    })?;
    list_tools(&value, taken).map_err(FileProblem::Tools)
}

/// A JSON list's tools, or every problem of its definitions.
fn list_tools(value: &Value, taken: &[Tool]) -> Result<Vec<Tool>, ToolProblems> {
    let defs: Vec<ToolDef> = parse_tool_list(value).map_err(|p| ToolProblems(vec![p]))?;
    check_tools(&defs, 0, taken).map_err(ToolProblems)
}

/// Why `choice` names no tool of `tools`, if it does not.
fn choice_problem(choice: Option<&ToolChoice>, tools: &[Tool]) -> Option<String> {
    let Some(ToolChoice::Function { function }) = choice else {
        return None;
    };
    (!tools.iter().any(|t| &t.name == function)).then(|| {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        format!(
            "tool_choice names `{function}`, which is not a defined tool (defined: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )
    })
}

impl Spec {
    /// The tools of the instance with `vars`: the spec's own, then those of
    /// its `tools_var` (a JSON list, or a string holding one), checked.
    pub(crate) fn instance_tools(
        &self,
        index: u64,
        vars: &Map<String, Value>,
    ) -> Result<Vec<Tool>, Diagnostic> {
        let Some(var) = &self.def.tools_var else {
            return Ok(self.tools.clone());
        };
        let more = match crate::verify::lookup(vars, var) {
            None => Err(format!("the instance has no variable `{var}`")),
            Some(Value::String(text)) => serde_json::from_str(text)
                .map_err(|e| format!("not a JSON list of tools: {e}"))
                .and_then(|v| list_tools(&v, &self.tools).map_err(|p| p.to_string())),
            Some(value) => list_tools(value, &self.tools).map_err(|p| p.to_string()),
        };
        let mut tools = self.tools.clone();
        let checked = more.and_then(|more| {
            tools.extend(more);
            choice_problem(self.def.request.tool_choice.as_ref(), &tools).map_or(Ok(()), Err)
        });
        match checked {
            Ok(()) => Ok(tools),
            Err(message) => {
                Err(self.var_diagnostic(index, ("tools", var), &message, key_path!["tools_var"]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn tool_choice_must_name_a_tool() {
        let named = ToolChoice::Function {
            function: "b".into(),
        };
        assert_eq!(choice_problem(Some(&named), &[tool("b")]), None);
        let problem = choice_problem(Some(&named), &[tool("a")]).unwrap();
        assert!(problem.contains("(defined: a)"), "{problem}");
        assert_eq!(choice_problem(None, &[]), None);
    }

    #[test]
    fn a_list_may_not_reuse_a_spec_tool_name() {
        let list = json!([{"name": "a"}, {"name": "c"}]);
        let problem = list_tools(&list, &[tool("a")]).unwrap_err().to_string();
        assert!(
            problem.starts_with("tool 0 (`a`): the name `a` is taken"),
            "{problem}"
        );
        assert_eq!(list_tools(&list, &[tool("b")]).unwrap().len(), 2);
    }
}
