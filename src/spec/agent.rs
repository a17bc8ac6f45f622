//! A spec's agent: `[agent]` checked against its tools, each tool's Rhai
//! `script` compiled once, and one call of a tool run against an episode's
//! `state` (deterministic: no clock, an RNG seeded per instance, sample and step).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rhai::{AST, Dynamic, Engine, Scope};
use serde_json::{Map, Value};

use super::sizes::{clip_bytes, json_len_within};
use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::depth::{MAX_DEPTH, too_deep_text, value_depth};
use crate::format::locate::SourceMap;
use crate::format::{EpisodeLimits, SpecFile, ToolCall, key_path};
use crate::scripting::rng::ScriptRng;
use crate::scripting::value::{ToJsonError, drop_deep, drop_scope, to_json};
use crate::scripting::{
    self, DEFAULT_MAX_OPERATIONS, ScriptError, max_operations_problem, on_script_stack,
    sandboxed_engine,
};

/// The names a tool script may read.
const SCOPE_NAMES: [&str; 3] = ["args", "state", "rng"];

/// The most tool names an unknown tool's error lists.
const TOOLS_LISTED: usize = 20;

/// A compiled `[agent]`: its limits, end condition and tool scripts.
pub(crate) struct AgentRuntime {
    /// Model turns at most.
    pub max_turns: u32,
    /// The tool whose call ends an episode, if one does.
    pub end_tool: Option<String>,
    /// The instance variable seeding the state.
    pub state_var: String,
    /// Calls, sizes and time an episode may take.
    pub limits: EpisodeLimits,
    /// The simulated user who answers the model's replies, if one does.
    pub user: Option<super::agent_user::UserRuntime>,
    engine: Engine,
    scripts: BTreeMap<String, AST>,
    seed: u64,
}

/// Why a tool call gave the model an error instead of a result: a `throw`,
/// an unknown tool, arguments that are not a JSON object, a script fault,
/// a limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ToolError {
    /// What the model is told.
    pub message: String,
    /// A value nested past the depth limit (the arguments, the result or
    /// the state it would leave): the episode's record fails as `too_deep`.
    pub too_deep: bool,
}

impl ToolError {
    fn said(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            too_deep: false,
        }
    }

    fn deep(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            too_deep: true,
        }
    }
}

/// Why an instance's state variable cannot seed an episode.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct StateError {
    /// What is wrong with it.
    pub message: String,
    /// It nests past the depth limit: the record fails as `too_deep`.
    pub too_deep: bool,
}

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
        let fail = |message: String| StateError {
            message,
            too_deep: false,
        };
        let value = match crate::verify::lookup(vars, var) {
            None => return Ok(Value::Object(Map::new())),
            Some(Value::String(text)) => serde_json::from_str(text)
                .map_err(|e| fail(format!("state `{var}` is a string but not JSON: {e}")))?,
            Some(value) => {
                self.valid_state(value)?;
                return Ok(value.clone());
            }
        };
        self.valid_state(&value)?;
        Ok(value)
    }

    /// Whether an instance with `vars` has a valid initial state, without
    /// copying it (a database of a few hundred kilobytes, in τ²'s specs).
    pub(crate) fn check_state(&self, vars: &Map<String, Value>) -> Result<(), StateError> {
        match crate::verify::lookup(vars, &self.state_var) {
            Some(value) if !value.is_string() => self.valid_state(value),
            _ => self.initial_state(vars).map(drop),
        }
    }

    /// Whether `value` may be the tools' state: a map, not too deep, not too long.
    fn valid_state(&self, value: &Value) -> Result<(), StateError> {
        let var = &self.state_var;
        let fail = |message: String| StateError {
            message,
            too_deep: false,
        };
        let depth = value_depth(value);
        if depth > MAX_DEPTH {
            return Err(StateError {
                message: too_deep_text(&format!("state `{var}` nests"), depth),
                too_deep: true,
            });
        }
        if !value.is_object() {
            return Err(fail(format!("state `{var}` must be a map, not {value}")));
        }
        if json_len_within(value, self.limits.state_bytes).is_none() {
            return Err(fail(format!(
                "state `{var}` is more than max_state_bytes = {} bytes as JSON",
                self.limits.state_bytes
            )));
        }
        Ok(())
    }

    /// Runs `call` against `state`: the tool's value, or the message the
    /// model is shown (a `throw`, an unknown tool, arguments that are not a
    /// JSON object, a limit), cut to `max_error_bytes`. The state changes
    /// only when the call succeeds.
    pub(crate) fn call(
        &self,
        call: &ToolCall,
        state: &mut Value,
        at: CallSite,
    ) -> Result<Value, ToolError> {
        // Rhai walks the values a script builds recursively, however deep.
        let outcome = on_script_stack(|| self.call_unclipped(call, state, at));
        outcome.map_err(|mut e| {
            e.message = clip_bytes(&e.message, self.limits.error_bytes);
            e
        })
    }

    fn call_unclipped(
        &self,
        call: &ToolCall,
        state: &mut Value,
        at: CallSite,
    ) -> Result<Value, ToolError> {
        if let Some(why) = call.invalid_text() {
            return Err(if call.too_deep() {
                ToolError::deep(why)
            } else {
                ToolError::said(why)
            });
        }
        let Some(ast) = self.scripts.get(&call.name) else {
            return Err(ToolError::said(self.unknown_tool(&call.name)));
        };
        if !call.arguments.is_object() {
            return Err(ToolError::said("the arguments must be a JSON object"));
        }
        let (result, after) = self.run_script(ast, call, state, at)?;
        let tool = &call.name;
        let unchanged = "the state is unchanged";
        let result = match to_json(result, MAX_DEPTH) {
            Ok(result) => result,
            Err(e) => {
                drop_deep([after]);
                return Err(converted(e, &format!("the result of `{tool}`")));
            }
        };
        let after = to_json(after, MAX_DEPTH).map_err(|e| {
            let mut e = converted(e, &format!("the state `{tool}` leaves"));
            e.message = format!("{}; {unchanged}", e.message);
            e
        })?;
        let limits = &self.limits;
        if json_len_within(&result, limits.result_bytes).is_none() {
            return Err(ToolError::said(format!(
                "the result of `{tool}` is more than max_result_bytes = {} bytes as JSON; {unchanged}",
                limits.result_bytes
            )));
        }
        if !after.is_object() {
            return Err(ToolError::said(format!(
                "tool `{tool}` left `state` as {}, not a map; {unchanged}",
                clip_bytes(&after.to_string(), 200)
            )));
        }
        if json_len_within(&after, limits.state_bytes).is_none() {
            return Err(ToolError::said(format!(
                "tool `{tool}` would leave the state more than max_state_bytes = {} bytes as JSON; {unchanged}",
                limits.state_bytes
            )));
        }
        *state = after;
        Ok(result)
    }

    /// Runs a tool's script: its value and the state it left, as the
    /// script's own values (converted, with their depth checked, by the caller).
    fn run_script(
        &self,
        ast: &AST,
        call: &ToolCall,
        state: &Value,
        at: CallSite,
    ) -> Result<(Dynamic, Dynamic), ToolError> {
        let fault = |e: ScriptError| ToolError::said(e.message);
        let mut scope = Scope::new();
        // Both were bounded where they came in, so these recursions are shallow.
        let args = rhai::serde::to_dynamic(&call.arguments).map_err(|e| fault(e.into()))?;
        let before = rhai::serde::to_dynamic(state).map_err(|e| fault(e.into()))?;
        scope.push_dynamic("args", args);
        scope.push_dynamic("state", before);
        let stream = (u64::from(at.sample) << 32) | (u64::from(at.turn) << 16) | u64::from(at.call);
        scope.push(
            "rng",
            ScriptRng::for_instance(self.seed ^ stream, at.instance),
        );
        let result = self.engine.eval_ast_with_scope::<Dynamic>(&mut scope, ast);
        let after = scope.remove::<Dynamic>("state").unwrap_or_default();
        drop_scope(scope);
        match result {
            Ok(result) => Ok((result, after)),
            Err(e) => {
                drop_deep([after]);
                Err(fault(ScriptError::from(e)))
            }
        }
    }

    /// The error of a call to `name`, which no tool has: the tools, at most
    /// [`TOOLS_LISTED`] of them, and how many more there are.
    fn unknown_tool(&self, name: &str) -> String {
        let names: Vec<&str> = self
            .scripts
            .keys()
            .take(TOOLS_LISTED)
            .map(String::as_str)
            .collect();
        let more = self.scripts.len().saturating_sub(TOOLS_LISTED);
        let more = if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        };
        format!(
            "there is no tool `{}` (tools: {}{more})",
            clip_bytes(name, 100),
            names.join(", ")
        )
    }
}

/// A script's value (`what`, such as "the result of `f`") that has no JSON
/// form, as the model's error.
fn converted(e: ToJsonError, what: &str) -> ToolError {
    match e {
        ToJsonError::TooDeep { depth } => {
            ToolError::deep(too_deep_text(&format!("{what} would nest"), depth))
        }
        ToJsonError::Unrepresentable(why) => {
            ToolError::said(format!("{what} holds what JSON cannot: {why}"))
        }
    }
}

/// What one tool result says to the model: the value as JSON, or `{"error": why}`.
pub(crate) fn result_text(result: &Result<Value, ToolError>) -> String {
    match result {
        Ok(value) => value.to_string(),
        Err(why) => serde_json::json!({ "error": why.message }).to_string(),
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
        // Its gold actions replay through the episode's tools.
        for (i, rule) in def.verify.iter().enumerate() {
            if rule.rule() == Some("gold_state") {
                let message = "rule `gold_state` replays gold actions through the [agent]'s tools: add an [agent] table";
                errors.push(at(key_path!["verify", i, "rule"], message.to_owned()));
            }
        }
        return None;
    };
    if let Some(message) = agent.turns_problem() {
        errors.push(at(key_path!["agent", "max_turns"], message));
    }
    for (key, message) in agent.limit_problems() {
        errors.push(at(key_path!["agent", key], message));
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
    if def.tools.is_empty() && def.mcp.is_empty() {
        errors.push(at(
            key_path!["agent"],
            "[agent] needs tools: add [[tools]] tables, each with a `script`, or [[mcp]] servers"
                .into(),
        ));
    }
    if let Some(end) = &agent.end
        && !def
            .tools
            .iter()
            .any(|t| t.name.as_deref() == Some(end.tool.as_str()))
        // A server's tool ends an episode too; it is known once the server runs.
        && def.mcp.is_empty()
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
            Ok((source, origin)) => match scripting::compile(&engine, &SCOPE_NAMES, &source) {
                Ok(ast) => {
                    scripts.insert(name.to_owned(), ast);
                }
                Err(e) => errors.push(script_diagnostic(map, i, &origin, &e)),
            },
            Err(d) => errors.push(d),
        }
    }
    let user = agent
        .user
        .as_ref()
        .and_then(|user| super::agent_user::compile(user, map, errors));
    let runtime = AgentRuntime {
        user,
        max_turns: agent.turns(),
        end_tool: agent.end.as_ref().map(|e| e.tool.clone()),
        state_var: agent.state_var().to_owned(),
        limits: agent.limits(),
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
#[path = "agent_tests.rs"]
mod tests;
