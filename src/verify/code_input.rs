//! What a `code` rule needs before it runs anything: the runtime its spec
//! names (and whether that program exists), the test template, and an
//! instance's tests — a list, each rendered to source — with errors that say
//! which key of the rule is at fault.

use std::path::PathBuf;

use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Map, Value};

use super::BuildContext;
use crate::error::{Diagnostic, ErrorKind};
use crate::sandbox;

/// Where the program comes from.
pub(super) enum Runtime {
    /// The built-in Python runner and the resolved interpreter.
    Python,
    /// A spec-provided runner file and command line.
    Custom {
        command: Vec<String>,
        runner_name: String,
        runner: Vec<u8>,
    },
}

/// Why an instance's tests cannot be made: the rule key at fault, and where inside it.
pub(super) struct TestsError {
    pub key: &'static str,
    pub message: String,
    pub line: usize,
    pub column: usize,
}

/// The compiled `test_template`, if the rule has one.
pub(super) fn test_template(
    template: Option<&String>,
    cx: &BuildContext,
) -> Result<Option<Environment<'static>>, Diagnostic> {
    Ok(match template {
        Some(source) => {
            let mut env = Environment::new();
            env.set_undefined_behavior(UndefinedBehavior::Strict);
            env.add_filter("py", python_literal);
            env.add_template_owned("test", source.clone())
                .map_err(|e| {
                    let e = crate::prompt::template_error("test_template", source, &e);
                    Diagnostic::new(
                        ErrorKind::Template,
                        cx.locate_in("test_template", e.line, e.column),
                        e.message,
                    )
                })?;
            Some(env)
        }
        None => None,
    })
}

/// The runtime of a rule: the built-in Python one, or a `command` and `runner` the spec brings.
pub(super) fn runtime(
    command: Option<&Vec<String>>,
    runner: Option<&String>,
    cx: &BuildContext,
    language: &str,
) -> Result<Runtime, Diagnostic> {
    Ok(match (command, runner) {
        (None, None) if language == "python" => Runtime::Python,
        (Some(command), Some(runner)) if !command.is_empty() => {
            command_problem(&command[0], runner).map_err(|why| {
                Diagnostic::new(
                    ErrorKind::Invalid,
                    cx.map
                        .locate(crate::format::key_path!["verify", cx.index, "command", 0]),
                    why.to_string(),
                )
            })?;
            let path = cx.spec_dir.join(runner);
            let bytes =
                crate::files::read_bounded(&path, crate::files::FileKind::Runner).map_err(|e| {
                    cx.error(
                        ErrorKind::Io,
                        "runner",
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?;
            let runner_name = PathBuf::from(runner)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "main".into());
            Runtime::Custom {
                command: command.clone(),
                runner_name,
                runner: bytes,
            }
        }
        (Some(command), _) if command.is_empty() => {
            return Err(cx.error(
                ErrorKind::Invalid,
                "command",
                "`command` is empty: name the program that runs `runner`",
            ));
        }
        (Some(_), None) => {
            return Err(cx.error(
                ErrorKind::Invalid,
                "command",
                "`command` needs `runner`: the file that runs the tests and reports each one",
            ));
        }
        (None, Some(_)) => {
            return Err(cx.error(
                ErrorKind::Invalid,
                "runner",
                "`runner` needs `command`: the command line that runs it",
            ));
        }
        _ => {
            return Err(cx
                .error(
                    ErrorKind::Invalid,
                    "language",
                    format!("no built-in runtime for `{language}`"),
                )
                .with_help(
                    "give both `command` (e.g. [\"/usr/bin/node\", \"main.js\"]) and `runner` \
                     (a file that runs the tests and reports each one)",
                ));
        }
    })
}

/// Why a `command`'s program cannot start in the sandbox.
#[derive(Debug, thiserror::Error)]
enum MissingProgram {
    /// A path that names no file here.
    #[error("`{0}` does not exist on this machine")]
    NoFile(String),
    /// A bare name the sandbox's `PATH` does not hold.
    #[error("`{0}` is not on the sandbox's PATH ({path})", path = sandbox::PATH)]
    NotOnPath(String),
}

/// Why `program` (a `command`'s first word) cannot start in the sandbox, if
/// it cannot: a bare name must be on the sandbox's `PATH`, a path must exist;
/// `./<runner>` names the runner file the rule brings.
fn command_problem(program: &str, runner: &str) -> Result<(), MissingProgram> {
    let bundled = std::path::Path::new(runner).file_name();
    if program.strip_prefix("./").map(std::path::Path::new) == bundled.map(std::path::Path::new) {
        return Ok(());
    }
    if program.contains('/') {
        return match std::fs::metadata(program) {
            Ok(m) if m.is_file() => Ok(()),
            _ => Err(MissingProgram::NoFile(program.to_owned())),
        };
    }
    match sandbox::find_program(program) {
        Some(_) => Ok(()),
        None => Err(MissingProgram::NotOnPath(program.to_owned())),
    }
}

/// The test snippets of an instance (the list in variable `tests`), each
/// rendered through the test template if the rule has one.
pub(super) fn test_sources(
    tests: &str,
    template: Option<&Environment<'static>>,
    vars: &Map<String, Value>,
) -> Result<Vec<String>, TestsError> {
    let at = |key, message| TestsError {
        key,
        message,
        line: 0,
        column: 0,
    };
    let items = match super::lookup(vars, tests) {
        None => return Err(at("variable", format!("variable `{tests}` is not set"))),
        Some(Value::Array(items)) if items.is_empty() => {
            let why = format!("`{tests}` is an empty list: there is no test to run");
            return Err(at("tests", why));
        }
        Some(Value::Array(items)) => items,
        Some(other) => {
            let kind = crate::text::json_kind(other);
            let why = format!("`{tests}` must be a list of tests, but it is {kind}");
            return Err(at("tests", why));
        }
    };
    items
        .iter()
        .map(|item| match (template, item) {
            (Some(env), item) => {
                let template = env.get_template("test").expect("compiled at build");
                template
                    .render(minijinja::context! {
                        test => minijinja::Value::from(minijinja::value::Serde(item)),
                        vars => minijinja::Value::from(minijinja::value::Serde(vars)),
                    })
                    .map_err(|e| {
                        let e = crate::prompt::template_error("test", template.source(), &e);
                        TestsError {
                            key: "test_template",
                            message: format!("test_template: {}", e.message),
                            line: e.line,
                            column: e.column,
                        }
                    })
            }
            (None, Value::String(s)) => Ok(s.clone()),
            (None, other) => Err(at(
                "tests",
                format!("tests must be strings without a test_template, found {other}"),
            )),
        })
        .collect()
}

/// `{{ value | py }}`: a JSON value as a Python literal.
fn python_literal(value: minijinja::Value) -> Result<String, minijinja::Error> {
    let json: Value = serde_json::to_value(&value).map_err(|e| {
        minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
    })?;
    Ok(to_python(&json))
}

fn to_python(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(to_python).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", to_python(&Value::String(k.clone())), to_python(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals() {
        let v = serde_json::json!([1, 2.5, "a\"b", true, null, {"k": [false]}]);
        assert_eq!(
            to_python(&v),
            r#"[1, 2.5, "a\"b", True, None, {"k": [False]}]"#
        );
    }
}
