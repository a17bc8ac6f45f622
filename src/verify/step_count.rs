//! `step_count`: how long an episode ran, in tool calls or assistant turns
//! (promptfoo's `trajectory:step-count`).

use serde_json::{Map, Value};

use super::kind::RuleKind;
use super::tool_call::show_calls;
use super::tool_used::calls_text;
use super::{BuildContext, FailureKind, Reply, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::ToolCall;

/// `step_count`: the episode has at least `min` and at most `max` steps,
/// counting tool calls (default) or assistant turns.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StepCountKeys {
    /// The most steps allowed.
    pub max: Option<u32>,
    /// The fewest steps needed (default 0).
    pub min: Option<u32>,
    /// What a step is: `calls` (default: each tool call) or `turns` (each assistant message).
    pub count: Option<String>,
}

impl RuleKind for StepCountKeys {
    const NAME: &'static str = "step_count";
    const OVER_CALLS: bool = true;

    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let turns = cx.choice(
            "count",
            self.count.as_deref(),
            &[("calls", false), ("turns", true)],
        )?;
        if self.max.is_none() && self.min.is_none() {
            return Err(cx.missing("step_count", "max", "5"));
        }
        let min = self.min.unwrap_or(0);
        if self.max.is_some_and(|max| max < min) {
            return Err(cx.error(ErrorKind::Invalid, "max", "`max` is below `min`"));
        }
        Ok(Box::new(StepCount {
            min,
            max: self.max,
            turns,
        }))
    }
}

struct StepCount {
    min: u32,
    max: Option<u32>,
    turns: bool,
}

impl StepCount {
    fn judge(&self, steps: usize) -> Verdict {
        let shown = if self.turns {
            format!("{steps} turn{}", if steps == 1 { "" } else { "s" })
        } else {
            calls_text(steps)
        };
        let steps = steps as u64;
        if steps < u64::from(self.min) {
            return Verdict::failed(
                FailureKind::MissingCall,
                format!("{shown}, expected at least {}", self.min),
            );
        }
        match self.max {
            Some(max) if steps > u64::from(max) => Verdict::failed(
                FailureKind::UnexpectedCall,
                format!("{shown}, expected at most {max}"),
            ),
            _ => Verdict::pass(),
        }
    }
}

impl Rule for StepCount {
    fn verify(&self, _answer: &str, _response: &str, _vars: &Map<String, Value>) -> Verdict {
        self.judge(0)
    }

    fn verify_reply(&self, reply: &Reply, _vars: &Map<String, Value>) -> Option<(String, Verdict)> {
        let calls: Vec<ToolCall> = reply.calls().map(|(_, c)| c.clone()).collect();
        let steps = if self.turns {
            reply.turns().count()
        } else {
            calls.len()
        };
        Some((show_calls(&calls), self.judge(steps)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_steps_from_both_sides() {
        let cases = [
            (
                StepCount {
                    min: 0,
                    max: Some(3),
                    turns: false,
                },
                3,
                None,
            ),
            (
                StepCount {
                    min: 0,
                    max: Some(3),
                    turns: false,
                },
                4,
                Some("4 calls, expected at most 3"),
            ),
            (
                StepCount {
                    min: 2,
                    max: None,
                    turns: true,
                },
                1,
                Some("1 turn, expected at least 2"),
            ),
            (
                StepCount {
                    min: 2,
                    max: None,
                    turns: true,
                },
                9,
                None,
            ),
        ];
        for (rule, steps, failure) in cases {
            let v = rule.judge(steps);
            assert_eq!(v.passed, failure.is_none(), "{steps}: {}", v.detail);
            assert_eq!(v.detail, failure.unwrap_or_default());
        }
    }
}
