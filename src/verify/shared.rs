//! What several rules share: the tool calls a reply made, and how a rule
//! over calls shows them as its answer. A helper lives here once a second
//! rule needs it, so rule files never import from one another.

use super::Reply;
use super::call_check::show_call;
use crate::format::ToolCall;

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
