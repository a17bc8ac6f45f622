//! What several rules share: the tool calls a reply made, how a rule over
//! calls shows them as its answer, and how a Rhai rule's `#{passed, score,
//! detail}` becomes a verdict. A helper lives here once a second rule needs
//! it, so rule files never import from one another.

use rhai::Dynamic;
use serde_json::{Map, Value};

use super::call_check::show_call;
use super::{Reads, ReadsReply, Reply, Rule, Verdict};
use crate::format::ToolCall;

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
