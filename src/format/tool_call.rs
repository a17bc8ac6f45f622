//! One call of a tool as a model made it, bounded where it comes in:
//! arguments nested past the depth limit or longer than the size limit are
//! kept clipped and marked, so no model can make its record unreadable or huge.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::depth::{MAX_DEPTH, text_depth, too_deep_text, value_depth};

/// One call of a tool, as a model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The id the provider gave the call (`call_...`); empty when it gave none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The called tool's name, as the spec names it.
    pub name: String,
    /// The arguments: a JSON object; when the model's text was not valid
    /// JSON, that text as a string, with `invalid` saying why.
    #[serde(default)]
    #[schemars(with = "Option<Value>")]
    pub arguments: Value,
    /// Why the arguments did not parse as JSON, when they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// The most bytes a call's arguments may take as JSON text. Larger ones are
/// kept clipped, as invalid arguments: a journal line stays small whatever
/// a model sends.
pub(crate) const MAX_ARGUMENT_BYTES: usize = 65_536;

/// How much of refused arguments a record keeps, in bytes.
const KEPT_OF_REFUSED: usize = 256;

impl ToolCall {
    /// The most calls one answer keeps: past them, a last call stands for
    /// the rest (`invalid` says how many), so an answer of 500,000 calls
    /// costs what one of 1,025 does.
    pub const MOST_KEPT: usize = 1_024;

    /// A call from the provider's arguments text: parsed when it is JSON,
    /// kept as text with the parse error when it is not, refused (clipped,
    /// with `invalid` saying why) when it nests past [`MAX_DEPTH`] levels or
    /// is longer than [`MAX_ARGUMENT_BYTES`].
    pub fn from_text(id: impl Into<String>, name: impl Into<String>, text: &str) -> ToolCall {
        let (id, name) = (id.into(), name.into());
        if let Some(why) = text_problem(text) {
            return ToolCall::refused(id, name, text, why);
        }
        let (arguments, invalid) = if text.trim().is_empty() {
            (Value::Object(Map::new()), None)
        } else {
            match serde_json::from_str::<Value>(text) {
                Ok(v) => (v, None),
                Err(e) => (Value::String(text.to_owned()), Some(e.to_string())),
            }
        };
        ToolCall {
            id,
            name,
            arguments,
            invalid,
        }
    }

    /// The call with arguments as the provider parsed them (an object)
    /// refused as [`ToolCall::from_text`] refuses text.
    pub fn bounded(mut self) -> ToolCall {
        if self.name.len() > MAX_NAME_BYTES {
            // Cut and marked: a cut name never names a tool.
            self.name = format!("{}…", clipped(&self.name, MAX_NAME_BYTES));
        }
        if self.invalid.is_some() {
            return self;
        }
        let depth = value_depth(&self.arguments);
        // A parsed value's depth is bounded by its parser (serde_json: 128),
        // so writing it out recurses no deeper than reading it did.
        let text = if depth <= 2 * MAX_DEPTH {
            self.arguments.to_string()
        } else {
            String::new()
        };
        match text_problem(&text)
            .or_else(|| (depth > MAX_DEPTH).then(|| too_deep_text(TOO_DEEP_MARK, depth)))
        {
            Some(why) => ToolCall::refused(self.id, self.name, &text, why),
            None => self,
        }
    }

    /// What the model is told of arguments that cannot be used, if they cannot.
    pub fn invalid_text(&self) -> Option<String> {
        let why = self.invalid.as_deref()?;
        Some(if why.starts_with(REFUSAL_START) {
            why.to_owned()
        } else {
            format!("the arguments are not valid JSON: {why}")
        })
    }

    /// Whether the arguments were refused for nesting past [`MAX_DEPTH`]:
    /// the model's answer then fails as `too_deep`, whatever the rules say.
    pub fn too_deep(&self) -> bool {
        self.invalid
            .as_deref()
            .is_some_and(|why| why.starts_with(TOO_DEEP_MARK))
    }

    /// A call whose arguments are kept as the start of `text`, with `why`.
    fn refused(id: String, name: String, text: &str, why: String) -> ToolCall {
        ToolCall {
            id,
            name,
            arguments: Value::String(clipped(text, KEPT_OF_REFUSED).to_owned()),
            invalid: Some(why),
        }
    }
}

/// The longest tool name a call keeps, in bytes (the OpenAI API allows 64).
const MAX_NAME_BYTES: usize = 256;

/// The start of `text`, at most `max` bytes, cut at a character boundary.
fn clipped(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// How a refusal of arguments begins, and nothing else `invalid` says.
const REFUSAL_START: &str = "the arguments";

/// How `invalid` begins for arguments nested too deep, and for nothing else.
const TOO_DEEP_MARK: &str = "the arguments nest";

/// Why arguments `text` cannot be taken: nested too deep, or too long.
fn text_problem(text: &str) -> Option<String> {
    let depth = text_depth(text.as_bytes());
    if depth > MAX_DEPTH {
        Some(too_deep_text(TOO_DEEP_MARK, depth))
    } else if text.len() > MAX_ARGUMENT_BYTES {
        Some(format!(
            "the arguments are {} bytes long, longer than the {MAX_ARGUMENT_BYTES} a call may send",
            text.len()
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_too_deep_or_too_long_are_refused_clipped() {
        let deep = |n: usize| format!("{{\"a\": {}1{}}}", "[".repeat(n - 1), "]".repeat(n - 1));
        // (arguments text, too deep, invalid says)
        let cases = [
            (deep(64), false, None),
            (
                deep(65),
                true,
                Some("nest 65 levels deep, deeper than the 64"),
            ),
            (deep(126), true, Some("126 levels deep")),
            (deep(100_000), true, Some("100000 levels deep")),
            (
                format!("{{\"a\": \"{}\"}}", "я".repeat(40_000)),
                false,
                Some("longer than the 65536"),
            ),
        ];
        for (text, too_deep, says) in cases {
            let parsed = serde_json::from_str::<Value>(&text).ok();
            let from_text = ToolCall::from_text("c", "f", &text);
            let mut calls = vec![from_text];
            if let Some(arguments) = parsed {
                let call = ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments,
                    invalid: None,
                };
                calls.push(call.bounded());
            }
            for call in calls {
                assert_eq!(call.too_deep(), too_deep, "{:?}", call.invalid);
                match says {
                    None => assert_eq!(call.invalid, None),
                    Some(says) => {
                        let why = call.invalid.as_deref().unwrap();
                        assert!(why.contains(says), "{why}");
                        let kept = call.arguments.as_str().unwrap();
                        assert!(kept.len() <= KEPT_OF_REFUSED, "{}", kept.len());
                    }
                }
            }
        }
        let invalid = ToolCall::from_text("c", "f", "{x:");
        assert!(invalid.invalid.is_some() && !invalid.too_deep());
    }
}
