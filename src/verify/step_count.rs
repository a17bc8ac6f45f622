//! `step_count`: how long an episode ran, in tool calls or assistant turns
//! (promptfoo's `trajectory:step-count`).

use super::kind::RuleKind;
use super::shared::{EpisodeCalls, calls_text, count_bounds};
use super::{BuildContext, FailureKind, Reply, Rule, Verdict};
use crate::error::Diagnostic;
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
    pub count: Option<StepUnit>,
}

/// What one step of an episode is.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum StepUnit {
    /// Each tool call.
    #[default]
    Calls,
    /// Each assistant message.
    Turns,
}

impl RuleKind for StepCountKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        if self.max.is_none() && self.min.is_none() {
            return Err(cx.missing("step_count", "max", "5"));
        }
        let (min, max) = count_bounds(cx, self.min, self.max, 0)?;
        Ok(Box::new(StepCount {
            min,
            max,
            turns: self.count == Some(StepUnit::Turns),
        }))
    }
}

struct StepCount {
    min: u32,
    max: Option<u32>,
    turns: bool,
}

impl StepCount {
    /// The verdict on an episode of `steps` steps.
    fn bound(&self, steps: usize) -> Verdict {
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

impl EpisodeCalls for StepCount {
    fn decide(&self, calls: &[ToolCall], reply: &Reply) -> Verdict {
        let steps = if self.turns {
            reply.turns().count()
        } else {
            calls.len()
        };
        self.bound(steps)
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
            let v = rule.bound(steps);
            assert_eq!(v.passed, failure.is_none(), "{steps}: {}", v.detail);
            assert_eq!(v.detail, failure.unwrap_or_default());
        }
    }
}
