//! `tool_args`: the arguments of a tool's call in an episode, at a given
//! step or at any call of that tool (promptfoo's `trajectory:tool-args-match`),
//! compared with `tool_call`'s semantics.

use serde_json::{Map, Value};

use super::call_check::{Comparison, ExpectedCall, find_tool, parse_arguments};
use super::kind::RuleKind;
use super::shared::EpisodeCalls;
use super::{BuildContext, FailureKind, Reply, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::ToolCall;

/// `tool_args`: a call of `tool` (the one at `step`, or any) has arguments
/// with acceptable values, typed by the tool's schema; other arguments are
/// allowed unless `exact`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolArgsKeys {
    /// The tool's name.
    pub tool: String,
    /// Each checked argument's acceptable values, `{ city = ["Paris", "paris"] }`
    /// (`""` among them: it may be left out).
    pub arguments: Map<String, Value>,
    /// The call to check, counting every call of the episode from 1 (default: any call of `tool`).
    pub step: Option<u32>,
    /// No arguments besides `arguments`, and the schema's required ones present (default false).
    pub exact: Option<bool>,
    /// Numbers within this distance of an acceptable value are equal (default 0).
    pub tolerance: Option<f64>,
    /// Compare strings after BFCL's normalization (default true).
    pub normalize: Option<bool>,
}

impl RuleKind for ToolArgsKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let arguments = parse_arguments(&Value::Object(self.arguments))
            .map_err(|e| cx.error(ErrorKind::Invalid, "arguments", e.to_string()))?;
        let comparison = Comparison::from_keys(
            self.tolerance,
            self.normalize,
            !self.exact.unwrap_or(false),
            cx,
        )?;
        if self.step == Some(0) {
            return Err(cx.error(ErrorKind::Invalid, "step", "steps count from 1"));
        }
        Ok(Box::new(ToolArgs {
            expected: ExpectedCall {
                name: self.tool,
                arguments,
            },
            step: self.step.map(|s| s as usize - 1),
            comparison,
        }))
    }
}

struct ToolArgs {
    expected: ExpectedCall,
    /// 0-based.
    step: Option<usize>,
    comparison: Comparison,
}

impl ToolArgs {
    fn check_calls(&self, calls: &[ToolCall], tools: &[crate::format::Tool]) -> Verdict {
        let name = &self.expected.name;
        let candidates: Vec<usize> = match self.step {
            Some(step) => match calls.get(step) {
                Some(call) if call.name == *name => vec![step],
                Some(call) => {
                    return Verdict::failed(
                        FailureKind::WrongTool,
                        format!(
                            "step {} `{}`: expected a call of `{name}`",
                            step + 1,
                            call.name
                        ),
                    );
                }
                None => {
                    return Verdict::failed(
                        FailureKind::MissingCall,
                        format!(
                            "step {}: no such call (the episode made {})",
                            step + 1,
                            calls.len()
                        ),
                    );
                }
            },
            None => (0..calls.len())
                .filter(|&i| calls[i].name == *name)
                .collect(),
        };
        let tool = find_tool(tools, name);
        let mut first = None;
        for &i in &candidates {
            match self.comparison.check(&calls[i], &self.expected, tool) {
                Ok(()) => return Verdict::pass(),
                Err(m) => {
                    first.get_or_insert((i, m));
                }
            }
        }
        match first {
            None => Verdict::failed(
                FailureKind::MissingCall,
                format!("`{name}` is never called"),
            ),
            Some((i, m)) => {
                let others = match candidates.len() - 1 {
                    0 => String::new(),
                    n => format!(" (nor do {n} other calls of `{name}` match)"),
                };
                Verdict::failed(
                    m.kind,
                    format!("step {} `{name}`: {}{others}", i + 1, m.describe()),
                )
            }
        }
    }
}

impl EpisodeCalls for ToolArgs {
    fn decide(&self, calls: &[ToolCall], reply: &Reply) -> Verdict {
        self.check_calls(calls, reply.tools)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::shared::call;
    use serde_json::json;

    fn rule(step: Option<usize>, exact: bool) -> ToolArgs {
        let arguments = json!({"city": ["Paris"], "days": ["", 3]});
        ToolArgs {
            expected: ExpectedCall {
                name: "weather".into(),
                arguments: arguments.as_object().cloned().unwrap_or_default(),
            },
            step,
            comparison: Comparison {
                tolerance: 0.0,
                normalize: true,
                partial: !exact,
            },
        }
    }

    #[test]
    fn checks_the_step_or_any_call_of_the_tool() {
        let calls = vec![
            call("search", json!({"q": "x"})),
            call("weather", json!({"city": "Berlin"})),
            call("weather", json!({"city": "paris", "units": "C"})),
        ];
        let cases = [
            (rule(None, false), None),
            (rule(Some(2), false), None),
            (
                rule(Some(1), false),
                Some("step 2 `weather`: argument `city`: \"Berlin\" is not one of [\"Paris\"]"),
            ),
            (
                rule(Some(0), false),
                Some("step 1 `search`: expected a call of `weather`"),
            ),
            (
                rule(Some(5), false),
                Some("step 6: no such call (the episode made 3)"),
            ),
            (
                rule(None, true),
                Some(
                    "step 2 `weather`: argument `city`: \"Berlin\" is not one of [\"Paris\"] (nor do 1 other calls of `weather` match)",
                ),
            ),
        ];
        for (rule, failure) in cases {
            let v = rule.check_calls(&calls, &[]);
            assert_eq!(v.passed, failure.is_none(), "{:?}: {}", rule.step, v.detail);
            assert_eq!(v.detail, failure.unwrap_or_default());
        }
        let v = rule(None, false).check_calls(&calls[..1], &[]);
        assert_eq!(v.detail, "`weather` is never called");
    }
}
