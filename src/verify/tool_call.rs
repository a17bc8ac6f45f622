//! `tool_call`: the calls of one assistant turn against expected calls in
//! BFCL's possible-answer form, with BFCL's AST checker as the reference:
//! as many calls as expected, each matched (in any order, greedily, or in
//! the written order) by name, required arguments, types and values.

use serde_json::{Map, Value};

use super::call_check::{Comparison, ExpectedCall, Mismatch, find_tool, parse_calls};
use super::expected::Expected;
use super::kind::{Reference, RuleKind};
use super::shared::{show_calls, turn_calls};
use super::{BuildContext, FailureKind, Reads, ReadsReply, Reply, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::{Tool, ToolCall};

/// `tool_call`: the turn's calls are the expected ones (BFCL's AST check):
/// as many calls as expected, each with the expected tool, its required
/// arguments, and arguments of the schema's type with an acceptable value.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolCallKeys {
    /// `any` (default, BFCL's parallel categories: each expected call takes the first
    /// unmatched call that fits) or `exact` (the n-th call is checked against the n-th).
    pub order: Option<CallOrder>,
    /// Numbers within this distance of an acceptable value are equal (default 0, as BFCL).
    pub tolerance: Option<f64>,
    /// Compare strings after BFCL's normalization: spaces and `,./-_*^` removed,
    /// lower case, `'` as `"` (default true, as BFCL).
    pub normalize: Option<bool>,
    /// The assistant turn whose calls are checked, from 1 (default 1: a single-turn answer).
    pub turn: Option<u32>,
}

/// How the turn's calls are matched with the expected ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum CallOrder {
    /// Each expected call takes the first unmatched call that fits (BFCL's parallel categories).
    #[default]
    Any,
    /// The n-th call is checked against the n-th expected call.
    Exact,
}

/// How `tool_call` words its reference keys.
pub(super) const REFERENCE: Reference = Reference {
    expected: "The instance variable holding the expected calls, `[{tool: {argument: [acceptable\nvalues]}}]` (BFCL's `ground_truth`; `\"\"` among the values: the argument may be left out).",
    value: "The expected calls written literally, instead of `expected`.",
};

impl RuleKind for ToolCallKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let comparison = Comparison::from_keys(self.tolerance, self.normalize, false, cx)?;
        if self.turn == Some(0) {
            return Err(cx.error(ErrorKind::Invalid, "turn", "turns count from 1"));
        }
        Ok(Box::new(ToolCallRule {
            expected: cx.expected()?,
            exact_order: self.order == Some(CallOrder::Exact),
            comparison,
            turn: self.turn.unwrap_or(1) as usize - 1,
        }))
    }
}

/// The `tool_call` rule, built.
pub(super) struct ToolCallRule {
    pub(super) expected: Expected,
    pub(super) exact_order: bool,
    pub(super) comparison: Comparison,
    /// 0-based.
    pub(super) turn: usize,
}

/// A failure naming call `index` (0-based) and its tool.
fn at_call(index: usize, call: &ToolCall, m: &Mismatch) -> Verdict {
    Verdict::failed(
        m.kind,
        format!("call {} `{}`: {}", index + 1, call.name, m.describe()),
    )
}

impl ToolCallRule {
    /// The verdict on `calls` against `expected` with `tools`' schemas.
    pub(super) fn decide(
        &self,
        calls: &[ToolCall],
        expected: &[ExpectedCall],
        tools: &[Tool],
    ) -> Verdict {
        let check = |call: &ToolCall, want: &ExpectedCall| {
            self.comparison
                .check(call, want, find_tool(tools, &want.name))
        };
        if calls.len() != expected.len() {
            return count_failure(calls, expected);
        }
        if self.exact_order {
            for (i, (call, want)) in calls.iter().zip(expected).enumerate() {
                if let Err(m) = check(call, want) {
                    return at_call(i, call, &m);
                }
            }
            return Verdict::pass();
        }
        let mut taken = vec![false; calls.len()];
        for (j, want) in expected.iter().enumerate() {
            // Greedy, as BFCL: the first untaken call that fits, never revisited.
            let mut tried = Vec::new();
            let mut found = false;
            for (i, call) in calls.iter().enumerate().filter(|(i, _)| !taken[*i]) {
                match check(call, want) {
                    Ok(()) => {
                        (taken[i], found) = (true, true);
                        break;
                    }
                    Err(m) => tried.push((i, call, m)),
                }
            }
            if found {
                continue;
            }
            if let [(i, call, m)] = tried.as_slice()
                && expected.len() == 1
            {
                return at_call(*i, call, m);
            }
            let kind = tried.first().map_or(FailureKind::MissingCall, |t| t.2.kind);
            let tries: Vec<String> = tried
                .iter()
                .map(|(i, call, m)| format!("call {} `{}`: {}", i + 1, call.name, m.describe()))
                .collect();
            return Verdict::failed(
                kind,
                format!(
                    "expected call {} `{}` matches no call ({})",
                    j + 1,
                    want.name,
                    tries.join("; ")
                ),
            );
        }
        Verdict::pass()
    }
}

/// The failure of a turn with more or fewer calls than expected.
fn count_failure(calls: &[ToolCall], expected: &[ExpectedCall]) -> Verdict {
    let names = |names: Vec<&str>| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let made = names(calls.iter().map(|c| c.name.as_str()).collect());
    let wanted = names(expected.iter().map(|c| c.name.as_str()).collect());
    let plural = |n: usize| if n == 1 { "call" } else { "calls" };
    let (kind, detail) = if calls.len() < expected.len() {
        (FailureKind::MissingCall, "missing calls")
    } else {
        (FailureKind::UnexpectedCall, "unexpected calls")
    };
    Verdict::failed(
        kind,
        format!(
            "{detail}: {} {} made ({}), {} expected ({wanted})",
            calls.len(),
            plural(calls.len()),
            if made.is_empty() {
                "none".to_owned()
            } else {
                made
            },
            expected.len(),
        ),
    )
}

impl Rule for ToolCallRule {
    fn reference(&self) -> Option<&Expected> {
        Some(&self.expected)
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        match self.expected.resolve(vars).map(parse_calls) {
            Some(Err(why)) => vec![("expected", format!("the expected calls: {why}"))],
            _ => Vec::new(),
        }
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Reply(self)
    }
}

impl ReadsReply for ToolCallRule {
    fn verify(&self, reply: &Reply, vars: &Map<String, Value>) -> (String, Verdict) {
        let calls = turn_calls(reply, self.turn);
        let shown = show_calls(calls);
        let verdict = match self.expected.resolve(vars).map(parse_calls) {
            None => Verdict::fail("the expected calls are missing from the instance"),
            Some(Err(why)) => Verdict::fail(format!("the expected calls: {why}")),
            Some(Ok(expected)) => self.decide(calls, &expected, reply.tools),
        };
        (shown, verdict)
    }
}

#[cfg(test)]
#[path = "tool_call_tests.rs"]
mod tests;
