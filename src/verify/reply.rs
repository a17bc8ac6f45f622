//! What the rules read: a model's final text and, for tool use, the
//! episode behind it (every assistant turn with its calls, every tool
//! result) and the tools' state when it ended.

use serde_json::{Map, Value};

use crate::format::{ExtractSource, Role, Tool, ToolCall};
use crate::prompt::Message;

/// Runs calls through a spec's own tools from an instance's initial state,
/// for rules that compare the episode's state with the state other calls
/// leave (`gold_state`). The compiled spec implements it; this layer only
/// names it, as it sits below the spec.
pub(crate) trait Replay: Sync {
    /// The state `calls`, run in order from the initial state of the
    /// instance with `vars`, leave. A call that fails (a `throw`, an unknown
    /// tool, a limit) leaves the state as it was, and the next one runs.
    /// `Err` when the instance has no usable initial state.
    fn replay(&self, vars: &Map<String, Value>, calls: &[ToolCall]) -> Result<Value, ReplayError>;
}

/// Why calls could not be replayed: the instance's initial state is unusable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ReplayError(pub String);

/// The tools a [`Reply`] may replay calls through.
#[derive(Clone, Copy)]
pub(crate) struct Replayer<'a>(pub &'a dyn Replay);

impl std::fmt::Debug for Replayer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Replayer")
    }
}

/// What a model did for one instance, as the rules see it.
#[derive(Debug, Clone, Copy)]
#[allow(dead_code, reason = "the tool rules read the episode")]
pub(crate) struct Reply<'a> {
    /// The final text: the last assistant message's content, never its reasoning.
    pub text: &'a str,
    /// What the model reasoned before the final text (empty when none was
    /// kept): read only by a rule whose `extract` has `from = "reasoning"`.
    pub reasoning: &'a str,
    /// The messages the episode added after the prompt: assistant turns
    /// (text and calls) and tool results; empty for an answer of text alone.
    pub trajectory: &'a [Message],
    /// The tools' state after the episode, for a spec with `[agent]`.
    pub state: Option<&'a Value>,
    /// The tools the request offered (their schemas type the arguments).
    pub tools: &'a [Tool],
    /// The spec's tools, to replay other calls through (an `[agent]` spec's).
    pub replay: Option<Replayer<'a>>,
}

#[allow(dead_code, reason = "the tool rules read the episode")]
impl<'a> Reply<'a> {
    /// A reply of text alone.
    pub(crate) fn text(text: &'a str) -> Reply<'a> {
        Reply {
            text,
            reasoning: "",
            trajectory: &[],
            state: None,
            tools: &[],
            replay: None,
        }
    }

    /// The text a rule extracting `from` reads: the answer or the reasoning.
    pub(crate) fn source(text: &'a str, reasoning: &'a str, from: ExtractSource) -> &'a str {
        match from {
            ExtractSource::Answer => text,
            ExtractSource::Reasoning => reasoning,
        }
    }

    /// The assistant turns, in order (a single-turn answer has one).
    pub(crate) fn turns(&self) -> impl Iterator<Item = &'a Message> + 'a {
        self.trajectory.iter().filter(|m| m.role == Role::Assistant)
    }

    /// Every call of the episode, in order, with its 0-based turn.
    pub(crate) fn calls(&self) -> impl Iterator<Item = (usize, &'a ToolCall)> + 'a {
        self.turns()
            .enumerate()
            .flat_map(|(turn, m)| m.tool_calls.iter().map(move |c| (turn, c)))
    }

    /// The calls of the first assistant turn (a single-turn answer's calls).
    pub(crate) fn first_calls(&self) -> &'a [ToolCall] {
        self.turns().next().map_or(&[], |m| m.tool_calls.as_slice())
    }
}
