//! `no_tool_call`: BFCL's irrelevance check. The tools offered do not fit
//! the question, so the right answer calls none of them; text is fine.

use super::kind::RuleKind;
use super::shared::EpisodeCalls;
use super::{BuildContext, FailureKind, Reply, Rule, Verdict};
use crate::error::Diagnostic;
use crate::format::ToolCall;

/// `no_tool_call`: the reply calls no tool, in any turn (BFCL's irrelevance
/// category: an answer of `[]` or `[{}]` is right, any call is wrong).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NoToolCallKeys {}

impl RuleKind for NoToolCallKeys {
    fn build(self, _cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        Ok(Box::new(NoToolCall))
    }
}

struct NoToolCall;

impl EpisodeCalls for NoToolCall {
    fn decide(&self, _calls: &[ToolCall], reply: &Reply) -> Verdict {
        match reply.calls().next() {
            None => Verdict::pass(),
            Some((turn, call)) => Verdict::failed(
                FailureKind::UnexpectedCall,
                format!(
                    "call 1 `{}` (turn {}): no tool should be called",
                    call.name,
                    turn + 1
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ToolCall;
    use crate::prompt::Message;
    use crate::verify::ReadsReply;
    use serde_json::Map;

    #[test]
    fn passes_without_calls_and_fails_on_any_call() {
        let text = [Message::assistant("I cannot help with that.", Vec::new())];
        let call = ToolCall::from_text("", "f", r#"{"a": 1}"#);
        let called = [Message::assistant("", vec![call])];
        for (trajectory, passes) in [(&[][..], true), (&text[..], true), (&called[..], false)] {
            let reply = Reply {
                text: "",
                reasoning: "",
                trajectory,
                state: None,
                tools: &[],
                replay: None,
            };
            let (_, v) = ReadsReply::verify(&NoToolCall, &reply, &Map::new());
            assert_eq!(v.passed, passes, "{trajectory:?}: {}", v.detail);
        }
        let reply = Reply {
            text: "",
            reasoning: "",
            trajectory: &called,
            state: None,
            tools: &[],
            replay: None,
        };
        let (shown, v) = ReadsReply::verify(&NoToolCall, &reply, &Map::new());
        assert_eq!(shown, r#"f({"a":1})"#);
        assert_eq!(v.detail, "call 1 `f` (turn 1): no tool should be called");
        assert_eq!(v.failure, Some(FailureKind::UnexpectedCall));
    }
}
