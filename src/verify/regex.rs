//! `regex`: the answer must match a pattern.

use serde_json::{Map, Value};

use super::kind::RuleKind;
use super::{BuildContext, Reads, ReadsText, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::text::clip;

struct RegexRule {
    pattern: regex::Regex,
}

/// `regex`: the answer matches `pattern`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RegexKeys {
    /// Regular expression the answer must match.
    pub pattern: Option<String>,
}

impl RuleKind for RegexKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let pattern = cx.required(self.pattern.as_ref(), cx.rule, "pattern", "'^\\d+$'")?;
        let pattern = regex::Regex::new(pattern).map_err(|e| {
            cx.error(
                ErrorKind::Regex,
                "pattern",
                format!("the pattern does not compile: {e}"),
            )
        })?;
        Ok(Box::new(RegexRule { pattern }))
    }
}

impl Rule for RegexRule {
    fn expected(&self, _vars: &Map<String, Value>) -> Option<Value> {
        Some(Value::from(format!("/{}/", self.pattern.as_str())))
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for RegexRule {
    fn verify(&self, answer: &str, _response: &str, _vars: &Map<String, Value>) -> Verdict {
        if self.pattern.is_match(answer) {
            Verdict::pass()
        } else {
            Verdict::fail(format!(
                "«{}» does not match /{}/",
                clip(answer, 120),
                self.pattern.as_str()
            ))
        }
    }
}
