//! A spec's agent: `[agent]` checked against its tools, each tool's Rhai
//! `script` compiled once, and one call of a tool run against an episode's
//! `state` (deterministic: no clock, an RNG seeded per instance, sample and step).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rhai::{AST, Dynamic, Engine, Scope};
use serde_json::{Map, Value};

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::locate::SourceMap;
use crate::format::{SpecFile, ToolCall, key_path};
use crate::scripting::rng::ScriptRng;
use crate::scripting::{
    DEFAULT_MAX_OPERATIONS, ScriptError, max_operations_problem, sandboxed_engine,
};

/// The names a tool script may read.
const SCOPE_NAMES: [&str; 3] = ["args", "state", "rng"];

/// A compiled `[agent]`: its limits, end condition and tool scripts.
pub(crate) struct AgentRuntime {
    /// Model turns at most.
    pub max_turns: u32,
    /// The tool whose call ends an episode, if one does.
    pub end_tool: Option<String>,
    /// The instance variable seeding the state.
    pub state_var: String,
    engine: Engine,
    scripts: BTreeMap<String, AST>,
    seed: u64,
}

/// Why a tool call gave the model an error instead of a result: a `throw`,
/// an unknown tool, arguments that are not a JSON object, a script fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ToolError(pub String);

/// Why an instance's state variable cannot seed an episode.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct StateError(pub String);

/// Where one call happens in a run, for its RNG stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallSite {
    /// Instance index.
    pub instance: u64,
    /// Sample index.
    pub sample: u32,
    /// 0-based model turn.
    pub turn: u32,
    /// The call's position in its turn.
    pub call: u32,
}

impl AgentRuntime {
    /// The tools' initial state of an instance with `vars`: the state
    /// variable's map (or a JSON text holding one, as a CSV column would), else `{}`.
    pub(crate) fn initial_state(&self, vars: &Map<String, Value>) -> Result<Value, StateError> {
        let var = &self.state_var;
        let value = match crate::verify::lookup(vars, var) {
            None => return Ok(Value::Object(Map::new())),
            Some(Value::String(text)) => serde_json::from_str(text)
                .map_err(|e| StateError(format!("state `{var}` is a string but not JSON: {e}")))?,
            Some(value) => value.clone(),
        };
        if value.is_object() {
            Ok(value)
        } else {
            Err(StateError(format!(
                "state `{var}` must be a map, not {value}"
            )))
        }
    }

    /// Runs `call` against `state`: the tool's value, or the message the
    /// model is shown (a `throw`, an unknown tool, arguments that are not a
    /// JSON object). The state changes only when the call succeeds.
    pub(crate) fn call(
        &self,
        call: &ToolCall,
        state: &mut Value,
        at: CallSite,
    ) -> Result<Value, ToolError> {
        let fail = |message: String| Err(ToolError(message));
        if let Some(why) = &call.invalid {
            return fail(format!("the arguments are not valid JSON: {why}"));
        }
        let Some(ast) = self.scripts.get(&call.name) else {
            let names: Vec<&str> = self.scripts.keys().map(String::as_str).collect();
            return fail(format!(
                "there is no tool `{}` (tools: {})",
                call.name,
                names.join(", ")
            ));
        };
        if !call.arguments.is_object() {
            return fail("the arguments must be a JSON object".into());
        }
        let run = || -> Result<(Value, Value), ScriptError> {
            let mut scope = Scope::new();
            scope.push_dynamic("args", rhai::serde::to_dynamic(&call.arguments)?);
            scope.push_dynamic("state", rhai::serde::to_dynamic(&*state)?);
            let stream =
                (u64::from(at.sample) << 32) | (u64::from(at.turn) << 16) | u64::from(at.call);
            let rng = ScriptRng::for_instance(self.seed ^ stream, at.instance);
            scope.push("rng", rng);
            let result: Dynamic = self.engine.eval_ast_with_scope(&mut scope, ast)?;
            let after: Dynamic = scope.get_value("state").unwrap_or_default();
            Ok((
                rhai::serde::from_dynamic(&result)?,
                rhai::serde::from_dynamic(&after)?,
            ))
        };
        let (result, after) = run().map_err(|e| ToolError(e.message))?;
        if !after.is_object() {
            return fail(format!(
                "tool `{}` left `state` as {after}, not a map",
                call.name
            ));
        }
        *state = after;
        Ok(result)
    }
}

/// What one tool result says to the model: the value as JSON, or `{"error": why}`.
pub(crate) fn result_text(result: &Result<Value, ToolError>) -> String {
    match result {
        Ok(value) => value.to_string(),
        Err(why) => serde_json::json!({ "error": why.0 }).to_string(),
    }
}

/// Compiles `[agent]` and the tools' scripts, adding every problem found to `errors`.
pub(super) fn compile(
    def: &SpecFile,
    map: &SourceMap,
    spec_dir: &Path,
    errors: &mut Vec<Diagnostic>,
) -> Option<AgentRuntime> {
    let at = |path: &[crate::format::locate::Key], message: String| {
        Diagnostic::new(ErrorKind::Invalid, map.locate(path), message)
    };
    let Some(agent) = &def.agent else {
        for (i, tool) in def.tools.iter().enumerate() {
            let key = if tool.script.is_some() {
                "script"
            } else {
                "script_file"
            };
            if tool.script.is_some() || tool.script_file.is_some() {
                errors.push(at(
                    key_path!["tools", i, key],
                    format!("`{key}` runs only in an episode: add an [agent] table"),
                ));
            }
        }
        return None;
    };
    if let Some(message) = agent.turns_problem() {
        errors.push(at(key_path!["agent", "max_turns"], message));
    }
    let max_ops = agent.max_operations.unwrap_or(DEFAULT_MAX_OPERATIONS);
    if let Some(message) = max_operations_problem(max_ops) {
        errors.push(at(key_path!["agent", "max_operations"], message));
    }
    for (set, key) in [
        (def.tools_file.is_some(), "tools_file"),
        (def.tools_var.is_some(), "tools_var"),
    ] {
        if set {
            errors.push(at(
                key_path![key],
                format!("`{key}` tools have no scripts: with [agent], write each tool as [[tools]] with a `script`"),
            ));
        }
    }
    if def.tools.is_empty() {
        errors.push(at(
            key_path!["agent"],
            "[agent] needs tools: add [[tools]] tables, each with a `script`".into(),
        ));
    }
    if let Some(end) = &agent.end
        && !def
            .tools
            .iter()
            .any(|t| t.name.as_deref() == Some(end.tool.as_str()))
    {
        let names: Vec<&str> = def.tools.iter().filter_map(|t| t.name.as_deref()).collect();
        errors.push(at(
            key_path!["agent", "end", "tool"],
            format!(
                "end tool `{}` is not one of the [[tools]] ({})",
                end.tool,
                names.join(", ")
            ),
        ));
    }
    let engine = sandboxed_engine(max_ops);
    let mut scripts = BTreeMap::new();
    for (i, tool) in def.tools.iter().enumerate() {
        let Some(name) = tool.name.as_deref() else {
            continue; // check_tools reports the missing name
        };
        match script_source(tool, i, map, spec_dir) {
            Ok((source, origin)) => match compile_one(&engine, &source) {
                Ok(ast) => {
                    scripts.insert(name.to_owned(), ast);
                }
                Err(e) => errors.push(script_diagnostic(map, i, &origin, &e)),
            },
            Err(d) => errors.push(d),
        }
    }
    let runtime = AgentRuntime {
        max_turns: agent.turns(),
        end_tool: agent.end.as_ref().map(|e| e.tool.clone()),
        state_var: agent.state_var().to_owned(),
        engine,
        scripts,
        seed: def.seed.unwrap_or(0),
    };
    Some(runtime)
}

/// Where a tool's script came from.
enum Origin {
    Inline,
    File(PathBuf),
}

/// A tool's script text: inline or read from `script_file`.
fn script_source(
    tool: &crate::format::ToolDef,
    i: usize,
    map: &SourceMap,
    spec_dir: &Path,
) -> Result<(String, Origin), Diagnostic> {
    let name = tool.name.as_deref().unwrap_or_default();
    match (&tool.script, &tool.script_file) {
        (Some(script), None) => Ok((script.clone(), Origin::Inline)),
        (None, Some(rel)) => {
            let path = spec_dir.join(rel);
            crate::files::read_text(&path, crate::files::FileKind::Script)
                .map(|text| (text, Origin::File(path.clone())))
                .map_err(|e| {
                    Diagnostic::new(
                        ErrorKind::Io,
                        map.locate(key_path!["tools", i, "script_file"]),
                        format!("tool `{name}`: cannot read {}: {e}", path.display()),
                    )
                })
        }
        (Some(_), Some(_)) => Err(Diagnostic::new(
            ErrorKind::Invalid,
            map.locate(key_path!["tools", i, "script_file"]),
            format!("tool `{name}` has both `script` and `script_file`: keep one"),
        )),
        (None, None) => Err(Diagnostic::new(
            ErrorKind::Invalid,
            map.locate(key_path!["tools", i]),
            format!(
                "tool `{name}` has no `script`: with [agent], every tool needs one (or `script_file`)"
            ),
        )),
    }
}

fn compile_one(engine: &Engine, source: &str) -> Result<AST, ScriptError> {
    // Names only: constants in a compile-time scope would be folded into the AST.
    let mut scope = Scope::new();
    for name in SCOPE_NAMES {
        scope.push_dynamic(name, Dynamic::UNIT);
    }
    Ok(engine.compile_with_scope(&scope, source)?)
}

fn script_diagnostic(map: &SourceMap, i: usize, origin: &Origin, e: &ScriptError) -> Diagnostic {
    match origin {
        Origin::Inline => Diagnostic::new(
            ErrorKind::Script,
            map.locate_in_string(key_path!["tools", i, "script"], e.line, e.column),
            e.message.clone(),
        ),
        Origin::File(path) => Diagnostic::new(
            ErrorKind::Script,
            Location {
                file: path.clone(),
                line: e.line.max(1),
                column: e.column.max(1),
            },
            // No line of it is shown: `script_file` may name any file on the machine.
            super::load::script_file_message(path, &e.message),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Message;
    use serde_json::json;

    fn runtime(scripts: &[(&str, &str)]) -> AgentRuntime {
        let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
        let scripts = scripts
            .iter()
            .map(|(n, s)| ((*n).to_owned(), compile_one(&engine, s).unwrap()))
            .collect();
        AgentRuntime {
            max_turns: 4,
            end_tool: None,
            state_var: "state".into(),
            engine,
            scripts,
            seed: 7,
        }
    }

    const AT: CallSite = CallSite {
        instance: 0,
        sample: 0,
        turn: 0,
        call: 0,
    };

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
            invalid: None,
        }
    }

    #[test]
    fn a_call_changes_the_state_and_a_throw_leaves_it() {
        let agent = runtime(&[(
            "cancel",
            r#"let o = state.orders[args.id]; if o.status == "shipped" { throw "already shipped" } o.status = "cancelled"; state.orders[args.id] = o; #{ ok: true }"#,
        )]);
        let mut state = json!({"orders": [{"status": "new"}, {"status": "shipped"}]});
        let done = agent.call(&call("cancel", json!({"id": 0})), &mut state, AT);
        assert_eq!(done, Ok(json!({"ok": true})));
        assert_eq!(state["orders"][0]["status"], "cancelled");
        let refused = agent.call(&call("cancel", json!({"id": 1})), &mut state, AT);
        assert_eq!(refused, Err(ToolError("already shipped".into())));
        assert_eq!(result_text(&refused), r#"{"error":"already shipped"}"#);
        assert_eq!(state["orders"][1]["status"], "shipped");
    }

    #[test]
    fn bad_calls_become_messages_not_crashes() {
        let agent = runtime(&[("f", "args.x + 1"), ("spin", "loop {}")]);
        let mut state = json!({});
        let cases = [
            (
                call("g", json!({})),
                "there is no tool `g` (tools: f, spin)",
            ),
            (call("f", json!([1])), "must be a JSON object"),
            (ToolCall::from_text("c", "f", "{x:"), "not valid JSON"),
            (call("spin", json!({})), "operation budget"),
        ];
        for (c, want) in cases {
            let got = agent.call(&c, &mut state, AT).unwrap_err().0;
            assert!(got.contains(want), "{got}");
        }
        assert_eq!(
            agent.call(&call("f", json!({"x": 1})), &mut state, AT),
            Ok(json!(2))
        );
    }

    #[test]
    fn initial_state_comes_from_the_variable() {
        let agent = runtime(&[]);
        let vars = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(agent.initial_state(&vars(json!({}))), Ok(json!({})));
        let from_text = agent.initial_state(&vars(json!({"state": "{\"a\": 1}"})));
        assert_eq!(from_text, Ok(json!({"a": 1})));
        assert!(agent.initial_state(&vars(json!({"state": 3}))).is_err());
    }

    #[test]
    fn the_rng_is_seeded_per_step() {
        let agent = runtime(&[("r", "rng.int(1, 1000000)")]);
        let roll = |turn| {
            agent.call(
                &call("r", json!({})),
                &mut json!({}),
                CallSite { turn, ..AT },
            )
        };
        assert_eq!(roll(0), roll(0));
        assert_ne!(roll(0), roll(1));
    }

    /// The shipped shop spec's tools, run as a model would call them: the
    /// state they leave passes `final_state` exactly when the right orders changed.
    #[test]
    fn the_shop_spec_tools_keep_their_promises() {
        let spec = crate::spec::Spec::load(Path::new("specs/shop_agent.toml")).unwrap();
        let agent = spec.agent().unwrap();
        // (instance, the calls as (tool, order), what the last result says, passes)
        type Case<'a> = (u64, &'a [(&'a str, &'a str)], &'a str, bool);
        let cases: [Case; 5] = [
            (0, &[("cancel_order", "A-1002")], "отменён", true),
            (0, &[("cancel_order", "A-1003")], "нельзя отменить", false),
            (
                1,
                &[("get_order", "B-2001"), ("refund_order", "B-2001")],
                "возврат",
                true,
            ),
            (
                5,
                &[("cancel_order", "F-6001"), ("cancel_order", "F-6003")],
                "отменён",
                true,
            ),
            (7, &[("cancel_order", "H-8009")], "не найден", true),
        ];
        for (instance, calls, said, passes) in cases {
            let inst = spec.instance(instance).unwrap();
            let mut state = agent.initial_state(&inst.vars).unwrap();
            let (mut last, mut steps) = (String::new(), Vec::new());
            for (tool, id) in calls {
                let asked = call(tool, json!({"order_id": id}));
                last = result_text(&agent.call(&asked, &mut state, AT));
                steps.push(Message::assistant("", vec![asked.clone()]));
                steps.push(Message::tool_result(&asked, last.clone()));
            }
            let end = call("submit", json!({"answer": "ок"}));
            let submit = agent.call(&end, &mut state, AT);
            assert_eq!(submit, Ok(json!({"ok": true})));
            steps.push(Message::assistant("", vec![end]));
            assert!(last.contains(said), "{instance}: {last}");
            let reply = crate::verify::Reply {
                state: Some(&state),
                trajectory: &steps,
                ..crate::verify::Reply::text("")
            };
            let verdict = spec.verify_judged(&reply, &inst.vars, &Default::default());
            assert_eq!(
                verdict.passed,
                passes,
                "{instance}: {}",
                verdict.failure_details()
            );
        }
    }
}
