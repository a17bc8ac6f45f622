//! `tool_used`: which tools an episode called, and how often (promptfoo's
//! `trajectory:tool-used`; with `max = 0`, its negation).

use super::kind::RuleKind;
use super::shared::{EpisodeCalls, calls_text, count_bounds};
use super::{BuildContext, FailureKind, Reply, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::ToolCall;

/// `tool_used`: each tool of `tools` is called, over the whole episode, at
/// least `min` (default 1) and at most `max` times (`max = 0`: never).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolUsedKeys {
    /// The tools' names.
    pub tools: Vec<String>,
    /// The fewest calls of each (default 1; 0 when `max = 0`).
    pub min: Option<u32>,
    /// The most calls of each (default: no limit; 0: the tools must not be called).
    pub max: Option<u32>,
}

impl RuleKind for ToolUsedKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        if self.tools.is_empty() {
            return Err(cx.error(ErrorKind::Invalid, "tools", "`tools` names no tool"));
        }
        let default_min = if self.max == Some(0) { 0 } else { 1 };
        let (min, max) = count_bounds(cx, self.min, self.max, default_min)?;
        Ok(Box::new(ToolUsed {
            tools: self.tools,
            min,
            max,
        }))
    }
}

struct ToolUsed {
    tools: Vec<String>,
    min: u32,
    max: Option<u32>,
}

impl EpisodeCalls for ToolUsed {
    fn decide(&self, calls: &[ToolCall], _reply: &Reply) -> Verdict {
        for tool in &self.tools {
            let steps: Vec<usize> = (0..calls.len())
                .filter(|&i| calls[i].name == *tool)
                .collect();
            let count = steps.len() as u32;
            if count < self.min {
                return Verdict::failed(
                    FailureKind::MissingCall,
                    format!(
                        "`{tool}`: {}, expected at least {}",
                        calls_text(steps.len()),
                        self.min
                    ),
                );
            }
            if let Some(max) = self.max
                && count > max
            {
                let at: Vec<String> = steps.iter().map(|s| (s + 1).to_string()).collect();
                let detail = if max == 0 {
                    format!(
                        "`{tool}` must not be called, but is at step {}",
                        at.join(", ")
                    )
                } else {
                    format!(
                        "`{tool}`: {} (steps {}), expected at most {max}",
                        calls_text(steps.len()),
                        at.join(", ")
                    )
                };
                return Verdict::failed(FailureKind::UnexpectedCall, detail);
            }
        }
        Verdict::pass()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(names: &[&str]) -> Vec<ToolCall> {
        names
            .iter()
            .map(|n| ToolCall::from_text("", *n, "{}"))
            .collect()
    }

    #[test]
    fn counts_each_tool_within_min_and_max() {
        let rule = |tools: &[&str], min, max| ToolUsed {
            tools: tools.iter().map(|t| t.to_string()).collect(),
            min,
            max,
        };
        let cases = [
            (rule(&["search"], 1, None), &["search", "book"][..], None),
            (
                rule(&["search", "pay"], 1, None),
                &["search", "book"],
                Some("`pay`: 0 calls, expected at least 1"),
            ),
            (rule(&["delete"], 0, Some(0)), &["search"], None),
            (
                rule(&["delete"], 0, Some(0)),
                &["search", "delete"],
                Some("`delete` must not be called, but is at step 2"),
            ),
            (
                rule(&["search"], 1, Some(1)),
                &["search", "search"],
                Some("`search`: 2 calls (steps 1, 2), expected at most 1"),
            ),
        ];
        for (rule, names, failure) in cases {
            let v = rule.decide(&calls(names), &Reply::text(""));
            assert_eq!(v.passed, failure.is_none(), "{names:?}: {}", v.detail);
            assert_eq!(v.detail, failure.unwrap_or_default(), "{names:?}");
        }
    }
}
