//! `tool_sequence`: the order in which an episode called its tools
//! (promptfoo's `trajectory:tool-sequence`).

use super::kind::RuleKind;
use super::shared::EpisodeCalls;
use super::{BuildContext, FailureKind, Reply, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::ToolCall;

/// `tool_sequence`: the episode's calls, by tool name, follow `tools`:
/// exactly (`exact`), as a subsequence with other calls between (`in_order`,
/// the default), or each name at least as often as listed, in any order (`any_order`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolSequenceKeys {
    /// The tools' names, in the expected order.
    pub tools: Vec<String>,
    /// `in_order` (default), `exact` or `any_order`.
    pub mode: Option<SequenceMode>,
}

/// How the calls must follow the listed tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum SequenceMode {
    /// As a subsequence: other calls may come between.
    #[default]
    InOrder,
    /// Exactly the listed calls, in order, and no others.
    Exact,
    /// Each listed name at least as often as listed, in any order.
    AnyOrder,
}

impl RuleKind for ToolSequenceKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let mode = self.mode.unwrap_or_default();
        if self.tools.is_empty() && mode != SequenceMode::Exact {
            return Err(cx.error(ErrorKind::Invalid, "tools", "`tools` names no tool"));
        }
        Ok(Box::new(ToolSequence {
            tools: self.tools,
            mode,
        }))
    }
}

struct ToolSequence {
    tools: Vec<String>,
    mode: SequenceMode,
}

impl ToolSequence {
    /// The verdict on the called tools' `names`, in order.
    fn follows(&self, names: &[&str]) -> Verdict {
        match self.mode {
            SequenceMode::Exact => self.exact(names),
            SequenceMode::InOrder => self.in_order(names),
            SequenceMode::AnyOrder => self.any_order(names),
        }
    }

    fn exact(&self, names: &[&str]) -> Verdict {
        for (i, want) in self.tools.iter().enumerate() {
            match names.get(i) {
                Some(got) if got == want => {}
                Some(got) => {
                    return Verdict::failed(
                        FailureKind::WrongTool,
                        format!("step {}: called `{got}`, expected `{want}`", i + 1),
                    );
                }
                None => {
                    return Verdict::failed(
                        FailureKind::MissingCall,
                        format!(
                            "step {}: expected `{want}`, but the episode made {} calls",
                            i + 1,
                            names.len()
                        ),
                    );
                }
            }
        }
        match names.get(self.tools.len()) {
            Some(extra) => Verdict::failed(
                FailureKind::UnexpectedCall,
                format!(
                    "step {}: called `{extra}` after the sequence ended",
                    self.tools.len() + 1
                ),
            ),
            None => Verdict::pass(),
        }
    }

    fn in_order(&self, names: &[&str]) -> Verdict {
        let mut next = 0;
        for (k, want) in self.tools.iter().enumerate() {
            match names[next..].iter().position(|n| n == want) {
                Some(offset) => next += offset + 1,
                None => {
                    let after = if next == 0 {
                        String::new()
                    } else {
                        format!(" after step {next}")
                    };
                    return Verdict::failed(
                        FailureKind::MissingCall,
                        format!(
                            "`{want}` (item {} of the sequence) is not called{after}",
                            k + 1
                        ),
                    );
                }
            }
        }
        Verdict::pass()
    }

    fn any_order(&self, names: &[&str]) -> Verdict {
        for want in &self.tools {
            let listed = self.tools.iter().filter(|t| *t == want).count();
            let called = names.iter().filter(|n| *n == want).count();
            if called < listed {
                return Verdict::failed(
                    FailureKind::MissingCall,
                    format!(
                        "`{want}` is called {called} times, the sequence lists it {listed} times"
                    ),
                );
            }
        }
        Verdict::pass()
    }
}

impl EpisodeCalls for ToolSequence {
    fn decide(&self, calls: &[ToolCall], _reply: &Reply) -> Verdict {
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        self.follows(&names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_names_the_step_that_departs() {
        let seq = |mode| ToolSequence {
            tools: vec!["search".into(), "book".into()],
            mode,
        };
        let cases = [
            (SequenceMode::Exact, &["search", "book"][..], None),
            (
                SequenceMode::Exact,
                &["search", "pay"],
                Some("step 2: called `pay`, expected `book`"),
            ),
            (
                SequenceMode::Exact,
                &["search"],
                Some("step 2: expected `book`, but the episode made 1 calls"),
            ),
            (
                SequenceMode::Exact,
                &["search", "book", "pay"],
                Some("step 3: called `pay` after the sequence ended"),
            ),
            (
                SequenceMode::InOrder,
                &["search", "weather", "book", "pay"],
                None,
            ),
            (
                SequenceMode::InOrder,
                &["book", "search"],
                Some("`book` (item 2 of the sequence) is not called after step 2"),
            ),
            (SequenceMode::AnyOrder, &["book", "search"], None),
            (
                SequenceMode::AnyOrder,
                &["book"],
                Some("`search` is called 0 times, the sequence lists it 1 times"),
            ),
        ];
        for (mode, names, failure) in cases {
            let v = seq(mode).follows(names);
            assert_eq!(
                v.passed,
                failure.is_none(),
                "{mode:?} {names:?}: {}",
                v.detail
            );
            assert_eq!(v.detail, failure.unwrap_or_default(), "{mode:?} {names:?}");
        }
    }
}
