//! What several rules share: the tool calls a reply made, how a rule over
//! calls shows them as its answer, and how a Rhai rule's script compiles and
//! its `#{passed, score, detail}` becomes a verdict. A helper lives here once a second rule needs
//! it, so rule files never import from one another.

use rhai::{AST, Dynamic, Engine};
use serde_json::{Map, Value};

use super::call_check::show_call;
use super::{BuildContext, Reads, ReadsReply, Reply, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::ToolCall;
use crate::scripting::{DEFAULT_MAX_OPERATIONS, compile, sandboxed_engine};
use crate::text::clip;

/// A rule over every call of the episode, which it shows as its answer:
/// it reads the reply, and says only how it decides.
pub(super) trait EpisodeCalls: Send + Sync {
    /// The verdict on the episode's `calls` (those of `reply`).
    fn decide(&self, calls: &[ToolCall], reply: &Reply) -> Verdict;
}

impl<T: EpisodeCalls> Rule for T {
    fn reads(&self) -> Reads<'_> {
        Reads::Reply(self)
    }
}

impl<T: EpisodeCalls> ReadsReply for T {
    fn verify(&self, reply: &Reply, _vars: &Map<String, Value>) -> (String, Verdict) {
        let calls = episode_calls(reply);
        let verdict = self.decide(&calls, reply);
        (show_calls(&calls), verdict)
    }
}

/// A rule's `min` (else `default_min`) and `max` of a count, or the error
/// at `max` when it is below `min`.
pub(super) fn count_bounds(
    cx: &BuildContext,
    min: Option<u32>,
    max: Option<u32>,
    default_min: u32,
) -> Result<(u32, Option<u32>), Diagnostic> {
    let min = min.unwrap_or(default_min);
    if max.is_some_and(|max| max < min) {
        return Err(cx.error(ErrorKind::Invalid, "max", "`max` is below `min`"));
    }
    Ok((min, max))
}

/// Every call of the episode, in order.
pub(super) fn episode_calls(reply: &Reply) -> Vec<ToolCall> {
    reply.calls().map(|(_, c)| c.clone()).collect()
}

/// The calls of a reply's assistant turn `turn` (none when there is no such turn).
pub(super) fn turn_calls<'a>(reply: &Reply<'a>, turn: usize) -> &'a [ToolCall] {
    reply
        .turns()
        .nth(turn)
        .map_or(&[], |m| m.tool_calls.as_slice())
}

/// The calls as an answer to show: `name(args)` joined, or `no call`.
pub(super) fn show_calls(calls: &[ToolCall]) -> String {
    if calls.is_empty() {
        return "no call".to_owned();
    }
    calls.iter().map(show_call).collect::<Vec<_>>().join("; ")
}

/// `n call(s)`.
pub(super) fn calls_text(n: usize) -> String {
    format!("{n} call{}", if n == 1 { "" } else { "s" })
}

/// A Rhai number as a score.
pub(super) fn as_score(d: &Dynamic) -> Option<f64> {
    d.as_float()
        .ok()
        .or_else(|| d.as_int().ok().map(|i| i as f64))
}

/// The verdict a Rhai map `#{passed, score, detail}` states: `passed`
/// defaults to `score ≥ threshold`, `score` to 1 or 0 by `passed`.
pub(super) fn map_verdict(map: &rhai::Map, threshold: f64) -> Verdict {
    let score = map.get("score").and_then(as_score);
    let passed = map
        .get("passed")
        .and_then(|p| p.as_bool().ok())
        .unwrap_or_else(|| score.unwrap_or(0.0) >= threshold);
    let detail = map.get("detail").map(|d| d.to_string()).unwrap_or_default();
    Verdict::scored(
        passed,
        score.unwrap_or(if passed { 1.0 } else { 0.0 }),
        detail,
    )
}

/// A Rhai rule's script from key `key`, compiled in a new sandboxed engine
/// for a scope of `names`; a syntax error points into the key's string.
pub(super) fn compile_rule_script(
    cx: &BuildContext,
    key: &str,
    names: &[&str],
    source: &str,
) -> Result<(Engine, AST), Diagnostic> {
    let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
    let ast = compile(&engine, names, source).map_err(|e| {
        Diagnostic::new(
            ErrorKind::Script,
            cx.locate_in(key, e.line, e.column),
            e.message,
        )
    })?;
    Ok((engine, ast))
}

/// A call of tool `name` with `arguments`, for the tests of rules over calls.
#[cfg(test)]
pub(super) fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: String::new(),
        name: name.into(),
        arguments,
        invalid: None,
    }
}

/// The most characters of one state value a failure detail shows.
pub(super) const SHOWN: usize = 200;

/// The first place, as a path under `path`, where `got` and `want` differ:
/// `state.cart[2].qty: 3 ≠ 2`; `None` when they are equal.
pub(super) fn first_difference(path: &str, got: &Value, want: &Value) -> Option<String> {
    let show = |v: Option<&Value>| v.map_or("nothing".into(), |v| clip(&v.to_string(), SHOWN));
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let extra = g.keys().filter(|k| !w.contains_key(*k));
            w.keys().chain(extra).find_map(|key| {
                let at = if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    format!("{path}.{key}")
                } else {
                    format!("{path}[{}]", Value::from(key.as_str()))
                };
                match (g.get(key), w.get(key)) {
                    (Some(g), Some(w)) => first_difference(&at, g, w),
                    (g, w) => Some(format!("{at}: {} ≠ {}", show(g), show(w))),
                }
            })
        }
        (Value::Array(g), Value::Array(w)) => g
            .iter()
            .zip(w)
            .enumerate()
            .find_map(|(i, (g, w))| first_difference(&format!("{path}[{i}]"), g, w))
            .or_else(|| {
                (g.len() != w.len()).then(|| format!("{path}.len(): {} ≠ {}", g.len(), w.len()))
            }),
        (Value::Number(g), Value::Number(w)) if g.as_f64() == w.as_f64() => None,
        _ if got == want => None,
        _ => Some(format!(
            "{path}: {} ≠ {}",
            show(Some(got)),
            show(Some(want))
        )),
    }
}

/// The instance variable a rule's `key` names: required, and not blank.
pub(super) fn variable_key(
    cx: &BuildContext,
    value: Option<String>,
    key: &str,
    example: &str,
) -> Result<String, Diagnostic> {
    let name = cx.required(value.as_ref(), cx.rule, key, example)?;
    if name.trim().is_empty() {
        let why = format!("`{key}` names no variable");
        return Err(cx.error(ErrorKind::Invalid, key, why));
    }
    Ok(name.clone())
}

/// Why an instance variable's value cannot be what a rule reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(super) struct ValueProblem(pub String);

/// The variable `var` of `vars` as `read` takes it, or why it cannot be
/// used: the instance lacks it, or `read` refuses it.
pub(super) fn read_variable<'v, T>(
    vars: &'v Map<String, Value>,
    var: &str,
    read: impl FnOnce(&'v Value) -> Result<T, ValueProblem>,
) -> Result<T, ValueProblem> {
    let missing = || Err(ValueProblem(format!("the instance has no `{var}`")));
    super::lookup(vars, var).map_or_else(missing, read)
}

/// `(key, why)` when the variable `var` is set but `read` refuses it (a
/// missing one is `Rule::variables`' to report).
pub(super) fn variable_problems<'v, T>(
    key: &'static str,
    vars: &'v Map<String, Value>,
    var: &str,
    read: impl FnOnce(&'v Value) -> Result<T, ValueProblem>,
) -> Vec<(&'static str, String)> {
    match super::lookup(vars, var).map(read) {
        Some(Err(why)) => vec![(key, why.0)],
        _ => Vec::new(),
    }
}
