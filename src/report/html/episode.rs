//! An answer's episode as the HTML page draws it: each assistant turn with
//! its calls (tool name, pretty-printed arguments, why they were not JSON)
//! and each tool result (tool name, content, whether it is an error), plus
//! what the page's filters read: the tools called and the arguments a
//! failing rule names.

use serde::Serialize;
use serde_json::Value;

use crate::format::{Role, ToolCall};
use crate::prompt::Message;
use crate::run::record::Record;
use crate::text::clip;

use super::super::calls::{named_arguments, role_name};

/// Characters of a response, prompt message or expected value kept in the page.
pub(super) const TEXT_CHARS: usize = 20_000;

/// One message of the episode.
#[derive(Serialize)]
pub(super) struct Step {
    /// Role: `assistant`, `tool` (or `user`, `system`).
    pub o: &'static str,
    /// Content.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub c: String,
    /// An assistant turn's calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tc: Vec<Call>,
    /// A tool result's tool name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    /// The call id a tool result answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub i: Option<String>,
    /// The tool result is an error message.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub er: bool,
}

/// One call.
#[derive(Serialize)]
pub(super) struct Call {
    /// Tool name.
    pub n: String,
    /// Arguments: pretty JSON, or the model's text when it was not JSON.
    pub a: String,
    /// Why the arguments were not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iv: Option<String>,
    /// The provider's call id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub i: String,
}

/// What a row adds for an answer with tool calls, under the row's short keys.
#[derive(Default, Serialize)]
pub(super) struct Episode {
    /// The steps.
    #[serde(rename = "tr", skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// With `[agent]`: the tools' final state, pretty JSON.
    #[serde(rename = "st", skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The tools called, sorted, each once.
    #[serde(rename = "tn", skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The arguments failing rules name, in order, each once.
    #[serde(rename = "fa", skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// The episode of `r` (empty for a plain text answer).
pub(super) fn of(r: &Record) -> Episode {
    let mut tools: Vec<String> = (r.scored.trajectory.iter())
        .flat_map(|m| m.tool_calls.iter().map(|c| c.name.clone()))
        .collect();
    tools.sort();
    tools.dedup();
    let mut failed: Vec<String> = Vec::new();
    for rule in r.rules.iter().filter(|u| !u.verdict.passed) {
        for name in named_arguments(&rule.verdict.detail) {
            if !failed.contains(&name) {
                failed.push(name);
            }
        }
    }
    Episode {
        steps: r.scored.trajectory.iter().map(step).collect(),
        state: r
            .scored
            .state
            .as_ref()
            .map(|v| clip(&pretty(v), TEXT_CHARS)),
        tools,
        failed,
    }
}

fn step(m: &Message) -> Step {
    Step {
        o: role_name(m.role),
        c: clip(&shown(m), TEXT_CHARS),
        tc: m.tool_calls.iter().map(call).collect(),
        n: m.tool_name.clone(),
        i: m.tool_call_id.clone().filter(|i| !i.is_empty()),
        er: m.role == Role::Tool && is_error(&m.content),
    }
}

fn call(c: &ToolCall) -> Call {
    let a = match (&c.arguments, &c.invalid) {
        (Value::String(text), Some(_)) => text.clone(),
        (v, _) => pretty(v),
    };
    Call {
        n: c.name.clone(),
        a: clip(&a, TEXT_CHARS),
        iv: c.invalid.clone(),
        i: c.id.clone(),
    }
}

/// A message's text as the page shows it: a tool's structured result (an
/// MCP server's `structuredContent`, a Rhai map) as pretty JSON.
fn shown(m: &Message) -> String {
    if m.role == Role::Tool
        && let Ok(v @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str(&m.content)
    {
        return pretty(&v);
    }
    m.content.clone()
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Whether a tool's result is the error message its script returned: a JSON
/// object with an `error` key, or text that starts with `error`.
fn is_error(content: &str) -> bool {
    let text = content.trim_start();
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) {
        return map.contains_key("error");
    }
    text.get(..5)
        .is_some_and(|w| w.eq_ignore_ascii_case("error"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{RuleOutcome, Verdict};

    #[test]
    fn an_episode_keeps_its_steps_and_what_the_filters_read() {
        let mut r = Record::blank("m", "s", 0, 0);
        r.scored.trajectory = super::super::super::calls::tests::episode();
        r.scored.state = Some(serde_json::json!({"n": 1}));
        r.rules = vec![RuleOutcome {
            name: "tool_call".into(),
            answer: None,
            report_only: false,
            verdict: Verdict::fail(
                "call 1 `math.factorial`: argument `number`: 6 is not one of [5]",
            ),
            judge: None,
        }];
        let e = of(&r);
        let roles: Vec<&str> = e.steps.iter().map(|s| s.o).collect();
        assert_eq!(
            roles,
            ["assistant", "tool", "assistant", "tool", "assistant"]
        );
        assert_eq!(e.steps[0].tc[0].a, "{\n  \"number\": 6\n}");
        assert_eq!(e.steps[2].tc[0].a, "{\"n\": ");
        assert!(e.steps[2].tc[0].iv.is_some());
        assert_eq!((e.steps[1].er, e.steps[3].er), (false, true));
        assert_eq!(e.tools, ["<script>x()</script>", "math.factorial"]);
        assert_eq!(e.failed, ["number"]);
        assert_eq!(e.state.as_deref(), Some("{\n  \"n\": 1\n}"));
    }

    #[test]
    fn tool_errors_are_told_from_results() {
        let cases = [
            ("{\"error\": \"out of stock\"}", true),
            ("Error: no order 7", true),
            ("  error", true),
            ("{\"status\": \"error\"}", false),
            ("720", false),
            ("", false),
            ("err", false),
        ];
        for (content, error) in cases {
            assert_eq!(is_error(content), error, "{content}");
        }
    }
}
